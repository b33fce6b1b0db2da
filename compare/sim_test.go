package compare

// Reference computations and simulated kernels for the tests: goldens
// accumulate in float64 and round once (spec §0); "kernels" compute the
// way a correct GPU/NPU kernel does (fp32 accumulation, fp32 exp with a
// few ulps of error, attention probabilities rounded to the input dtype
// before P@V as flash attention does), then round to the output dtype.

import (
	"math"
	"math/rand/v2"

	"github.com/goldset/goldset/internal/detmath"
	"github.com/goldset/goldset/npy"
)

// roundTo rounds x to dtype (nearest even) and returns the value as float64.
func roundTo(dtype string, x float64) float64 {
	switch dtype {
	case Float16:
		return npy.F16ToF64(npy.F16FromF64(x))
	case BFloat16:
		return npy.BF16ToF64(npy.BF16FromF64(x))
	case Float32:
		return float64(float32(x))
	}
	return x
}

func roundAll(dtype string, xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = roundTo(dtype, x)
	}
	return out
}

// randn returns n normal values scaled by sigma, rounded to dtype.
func randn(rng *rand.Rand, n int, sigma float64, dtype string) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = roundTo(dtype, float64(sigma*rng.NormFloat64()))
	}
	return v
}

// exp32 is an fp32 exp with up to 4 ulps of error, like a fast hardware exp.
func exp32(rng *rand.Rand, x float32) float32 {
	e := float32(detmath.Exp(float64(x)))
	k := rng.IntN(9) - 4
	if e == 0 || math.IsInf(float64(e), 0) {
		return e
	}
	for ; k > 0; k-- {
		e = math.Nextafter32(e, float32(math.Inf(1)))
	}
	for ; k < 0; k++ {
		e = math.Nextafter32(e, 0)
	}
	return e
}

// matmulSim returns truth (float64) and an fp32-accumulating kernel's
// result for A [M,K] @ B [K,N], inputs already in dtype.
func matmulSim(a, b []float64, m, k, n int) (truth, kernel []float64) {
	truth, kernel = make([]float64, m*n), make([]float64, m*n)
	for i := range m {
		for j := range n {
			var t float64
			var acc float32
			for p := range k {
				x, y := a[i*k+p], b[p*n+j]
				t += float64(x * y)
				acc += float32(float32(x) * float32(y))
			}
			truth[i*n+j], kernel[i*n+j] = t, float64(acc)
		}
	}
	return truth, kernel
}

// softmaxSim returns truth and an online (tiled) fp32 kernel's softmax of
// rows of x [m, n]. Within a tile, 32 lanes sum their strided elements and
// a tree combines them, as a GPU block reduction does; naive instead adds
// every element to one fp32 accumulator (one thread per row), whose
// stagnation loses up to ~2e-4 of the sum on long peaked rows.
func softmaxSim(rng *rand.Rand, x []float64, m, n, tile int, naive bool) (truth, kernel []float64) {
	truth, kernel = make([]float64, m*n), make([]float64, m*n)
	var lanes [32]float32
	for r := range m {
		row := x[r*n : (r+1)*n]
		mx := math.Inf(-1)
		for _, v := range row {
			mx = max(mx, v)
		}
		var s float64
		for j, v := range row {
			truth[r*n+j] = detmath.Exp(v - mx)
			s += truth[r*n+j]
		}
		for j := range row {
			truth[r*n+j] /= s
		}
		// kernel: running max and sum over tiles, rescaled in fp32
		km, ks := float32(math.Inf(-1)), float32(0)
		for t0 := 0; t0 < n; t0 += tile {
			t1 := min(n, t0+tile)
			tm := km
			for _, v := range row[t0:t1] {
				tm = max(tm, float32(v))
			}
			if km != tm {
				ks = float32(ks * exp32(rng, km-tm))
				km = tm
			}
			if naive {
				for _, v := range row[t0:t1] {
					ks += exp32(rng, float32(v)-km)
				}
				continue
			}
			clear(lanes[:])
			for j, v := range row[t0:t1] {
				lanes[j%32] += exp32(rng, float32(v)-km)
			}
			for w := 16; w > 0; w /= 2 {
				for i := range w {
					lanes[i] += lanes[i+w]
				}
			}
			ks += lanes[0]
		}
		inv := 1 / ks
		for j, v := range row {
			kernel[r*n+j] = float64(float32(exp32(rng, float32(v)-km) * inv))
		}
	}
	return truth, kernel
}

// attnCase is one decode step of GQA attention: q [hq, d], k and v [hkv, l, d].
type attnCase struct {
	hq, hkv, d, l int
	q, k, v       []float64
	scale         float64
	dtype         string
}

func newAttnCase(rng *rand.Rand, hq, hkv, d, l int, dtype string) attnCase {
	return attnCase{
		hq: hq, hkv: hkv, d: d, l: l, dtype: dtype, scale: 1 / math.Sqrt(float64(d)),
		q: randn(rng, hq*d, 1, dtype), k: randn(rng, hkv*l*d, 1, dtype), v: randn(rng, hkv*l*d, 1, dtype),
	}
}

// truth returns out [hq, d] and lse [hq] in float64, over the tokens keep
// allows (nil: all).
func (c attnCase) truth(keep func(j int) bool) (out, lse []float64) {
	out, lse = make([]float64, c.hq*c.d), make([]float64, c.hq)
	g := c.hq / c.hkv
	s := make([]float64, c.l)
	for h := range c.hq {
		kv := h / g
		q := c.q[h*c.d : (h+1)*c.d]
		mx := math.Inf(-1)
		for j := range c.l {
			if keep != nil && !keep(j) {
				s[j] = math.Inf(-1)
				continue
			}
			var dot float64
			for i, kv := range c.k[(kv*c.l+j)*c.d : (kv*c.l+j+1)*c.d] {
				dot += float64(q[i] * kv)
			}
			s[j] = float64(dot * c.scale)
			mx = max(mx, s[j])
		}
		var den float64
		o := out[h*c.d : (h+1)*c.d]
		for j := range c.l {
			p := detmath.Exp(s[j] - mx)
			den += p
			for i, vv := range c.v[(kv*c.l+j)*c.d : (kv*c.l+j+1)*c.d] {
				o[i] += float64(p * vv)
			}
		}
		for i := range o {
			o[i] /= den
		}
		lse[h] = mx + detmath.Log(den)
	}
	return out, lse
}

// kernel runs flash-decoding style: fp32 scores, online softmax over
// tiles with fp32 exp, P rounded to the input dtype before P@V, fp32
// accumulators.
func (c attnCase) kernel(rng *rand.Rand, tile int) (out, lse []float64) {
	out, lse = make([]float64, c.hq*c.d), make([]float64, c.hq)
	g := c.hq / c.hkv
	acc := make([]float32, c.d)
	s := make([]float32, tile)
	scale := float32(c.scale)
	for h := range c.hq {
		kv := h / g
		q := c.q[h*c.d : (h+1)*c.d]
		clear(acc)
		m, den := float32(math.Inf(-1)), float32(0)
		for t0 := 0; t0 < c.l; t0 += tile {
			t1 := min(c.l, t0+tile)
			tm := m
			for j := t0; j < t1; j++ {
				var dot float32
				for i, kk := range c.k[(kv*c.l+j)*c.d : (kv*c.l+j+1)*c.d] {
					dot += float32(float32(q[i]) * float32(kk))
				}
				s[j-t0] = float32(dot * scale)
				tm = max(tm, s[j-t0])
			}
			if tm != m {
				alpha := exp32(rng, m-tm)
				den = float32(den * alpha)
				for i := range acc {
					acc[i] = float32(acc[i] * alpha)
				}
				m = tm
			}
			for j := t0; j < t1; j++ {
				p := exp32(rng, s[j-t0]-m)
				den += p
				pr := float32(roundTo(c.dtype, float64(p)))
				for i, vv := range c.v[(kv*c.l+j)*c.d : (kv*c.l+j+1)*c.d] {
					acc[i] += float32(pr * float32(vv))
				}
			}
		}
		for i := range acc {
			out[h*c.d+i] = float64(acc[i] / den)
		}
		lse[h] = float64(m + float32(detmath.Log(float64(den))))
	}
	return out, lse
}
