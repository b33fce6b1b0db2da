package suite

import (
	"math"

	"github.com/goldset/goldset/gen"
	"github.com/goldset/goldset/internal/detmath"
)

// drawLognormalLens draws n context lengths the way the NumPy peer does:
// raw ~ lognormal(mu, sigma) with mu = ln(mean) - sigma^2/2, rescaled by 20
// fixed-point steps f *= mean / mean(clip(raw*f, 1, max)) so the clipped
// mean lands on the target, then lens = clip(rint(raw*f), 1, max). The
// normals come from the case's "context_lens" stream (not numpy's PCG64, so
// the lengths differ from the peer's while their distribution matches).
func drawLognormalLens(s gen.Stream, n int, mean, sigma float64, maxLen int) []int {
	z := make([]float64, n)
	gen.Normal(s, z, 0, gen.F64, 1)
	mu := detmath.Log(mean) - float64(sigma*sigma)/2
	raw := make([]float64, n)
	for i, v := range z {
		raw[i] = detmath.Exp(mu + float64(sigma*v))
	}
	clip := func(v float64) float64 { return math.Min(math.Max(v, 1), float64(maxLen)) }
	f := 1.0
	for range 20 {
		var sum float64
		for _, r := range raw {
			sum += clip(float64(r * f))
		}
		f *= mean / (sum / float64(n))
	}
	lens := make([]int, n)
	for i, r := range raw {
		lens[i] = int(clip(math.RoundToEven(float64(r * f))))
	}
	return lens
}
