package compare

import (
	"math/rand/v2"
	"testing"
)

const benchN = 16 << 20 // 16M elements

var benchData struct{ g, c, sel, selC []float64 }

// benchInputs returns a 16M-element golden and a candidate that differs
// from it almost everywhere (a kernel judged against the float32 truth),
// so every metric, ulps included, is computed for every element.
func benchInputs() (g, c []float64) {
	if benchData.g == nil {
		rng := rand.New(rand.NewPCG(5, 5))
		benchData.g, benchData.c = make([]float64, benchN), make([]float64, benchN)
		for i := range benchData.g {
			x := 0.05 * rng.NormFloat64()
			benchData.g[i] = float64(float32(x))
			benchData.c[i] = roundTo(Float16, x)
		}
	}
	return benchData.g, benchData.c
}

func BenchmarkCompare(b *testing.B) {
	shape := []int64{4096, 32, 128}
	for _, bc := range []struct {
		name  string
		f     Family
		dtype string
	}{
		{"allclose-fp16", AttentionLike, Float16},
		{"allclose-bf16", AttentionLike, BFloat16},
		{"allclose-fp32", MatmulLike, Float32},
		{"exact", Exact, Float16},
	} {
		b.Run(bc.name, func(b *testing.B) {
			g, c := benchInputs()
			if bc.name == "exact" {
				c = g // all equal: the common case for caches
			}
			tol := tolOf(bc.f, bc.dtype)
			b.SetBytes(int64(16 * len(g))) // two float64 slices
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Compare(g, c, shape, tol, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("set", func(b *testing.B) {
		// Quest selected: 16M ids in rows of 64, candidate rows reversed
		if benchData.sel == nil {
			benchData.sel, benchData.selC = make([]float64, benchN), make([]float64, benchN)
			for i := range benchData.sel {
				benchData.sel[i] = float64(i % 64 * 3)
				benchData.selC[i] = float64((63 - i%64) * 3)
			}
		}
		tol := tolOf(SetWithPadding(-1), Int32)
		b.SetBytes(int64(16 * benchN))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Compare(benchData.sel, benchData.selC, []int64{benchN / 64, 64}, tol, Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
