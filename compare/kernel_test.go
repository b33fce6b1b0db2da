package compare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// These tests are the executable form of the argument in doc.go: a correct
// fp32-accumulating kernel rounded to the output dtype passes the default
// tolerance, while zeros and typical bugs fail it.

var floatDTypes = []string{Float16, BFloat16, Float32}

func mustCompare(t *testing.T, g, c []float64, shape []int64, tol Tolerance, name string) Report {
	t.Helper()
	r, err := Compare(g, c, shape, tol, Options{Name: name})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

func expectStatus(t *testing.T, r Report, want string) {
	t.Helper()
	if r.Status == Pass {
		// margins, for the record: how much of each allowance was used
		t.Logf("%s: worst elementwise %.3g of allowance, worst row rel_l2 %.3g (limit %.3g)",
			r.Name, float64(r.WorstRatio), float64(r.WorstRowRelL2), r.Tol.RowRelL2)
	}
	if r.Status != want {
		var b stringsBuilder
		r.WriteText(&b)
		t.Errorf("%s: status %s, want %s\n%s", r.Name, r.Status, want, b.String())
	}
}

type stringsBuilder struct{ s []byte }

func (b *stringsBuilder) Write(p []byte) (int, error) { b.s = append(b.s, p...); return len(p), nil }
func (b *stringsBuilder) String() string              { return string(b.s) }

func TestKernelMatmul(t *testing.T) {
	const m, k, n = 4, 4096, 192
	for _, dt := range floatDTypes {
		t.Run(dt, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(len(dt))))
			a := randn(rng, m*k, 1, dt)
			b := randn(rng, k*n, 1/math.Sqrt(k), dt)
			truth, kern := matmulSim(a, b, m, k, n)
			shape := []int64{m, n}
			tol := tolOf(MatmulLike, dt)
			golden, cand := roundAll(dt, truth), roundAll(dt, kern)

			expectStatus(t, mustCompare(t, golden, cand, shape, tol, "kernel vs golden"), Pass)
			expectStatus(t, mustCompare(t, roundAll(Float32, truth), cand, shape, tol, "kernel vs truth"), Pass)
			expectStatus(t, mustCompare(t, golden, golden, shape, tol, "golden vs itself"), Pass)
			expectStatus(t, mustCompare(t, golden, make([]float64, m*n), shape, tol, "zeros"), Fail)

			// one K tile of 64 skipped
			_, skipped := matmulSim(a[:], zeroRange(b, 64*n, 128*n), m, k, n)
			expectStatus(t, mustCompare(t, golden, roundAll(dt, skipped), shape, tol, "skipped K tile"), Fail)
			if dt != BFloat16 { // bf16 round trip of an fp32 result
				expectStatus(t, mustCompare(t, golden, roundAll(dt, roundAll(BFloat16, kern)), shape, tol, "bf16 round trip"), Fail)
			}
		})
	}
}

// zeroRange returns a copy of x with x[lo:hi] zeroed.
func zeroRange(x []float64, lo, hi int) []float64 {
	y := append([]float64(nil), x...)
	clear(y[lo:hi])
	return y
}

func TestKernelSoftmax(t *testing.T) {
	const m, tile = 3, 1024
	for _, dt := range floatDTypes {
		// sigma 0.5 at the vocabulary size: fp16 outputs ~6.6e-6, subnormal
		for _, sc := range []struct {
			n     int
			sigma float64
		}{{40960, 1}, {40960, 4}, {151936, 0.5}, {151936, 3}} {
			n, sigma := sc.n, sc.sigma
			if testing.Short() && n > 40960 {
				continue
			}
			// fp32 outputs assume a tiled reduction; fp16/bf16 pass even
			// with one naive fp32 accumulator per row (see doc.go)
			naives := []bool{false, true}
			if dt == Float32 {
				naives = naives[:1]
			}
			for _, naive := range naives {
				t.Run(fmt.Sprintf("%s/n=%d/sigma=%g/naive=%v", dt, n, sigma, naive), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(2, uint64(sigma)))
					x := randn(rng, m*n, sigma, dt)
					truth, kern := softmaxSim(rng, x, m, n, tile, naive)
					shape := []int64{m, int64(n)}
					tol := tolOf(SoftmaxLike, dt)
					golden, cand := roundAll(dt, truth), roundAll(dt, kern)

					r := mustCompare(t, golden, cand, shape, tol, "kernel vs golden")
					expectStatus(t, r, Pass)
					if r.RowSumMaxErr == nil {
						t.Errorf("softmax tolerance did not check row sums")
					}
					expectStatus(t, mustCompare(t, roundAll(Float32, truth), cand, shape, tol, "kernel vs truth"), Pass)
					expectStatus(t, mustCompare(t, golden, make([]float64, m*n), shape, tol, "zeros"), Fail)

					// the denominator misses one tile: every value too large
					bad := make([]float64, m*n)
					for r := range m {
						var s, skip float64
						for j := range n {
							s += truth[r*n+j]
							if j >= tile && j < 2*tile {
								skip += truth[r*n+j]
							}
						}
						for j := range n {
							bad[r*n+j] = truth[r*n+j] * s / (s - skip)
						}
					}
					expectStatus(t, mustCompare(t, golden, roundAll(dt, bad), shape, tol, "tile missing from sum"), Fail)
					if dt == Float32 { // fp16 intermediate probabilities
						expectStatus(t, mustCompare(t, golden, roundAll(Float16, kern), shape, tol, "fp16 intermediate"), Fail)
					}
				})
			}
		}
	}
}

func TestKernelAttention(t *testing.T) {
	const hq, hkv, d, l, tile = 8, 2, 128, 2000, 128
	for _, dt := range floatDTypes {
		t.Run(dt, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, uint64(len(dt))))
			c := newAttnCase(rng, hq, hkv, d, l, dt)
			out, lse := c.truth(nil)
			kOut, kLse := c.kernel(rng, tile)
			oShape, lShape := []int64{1, hq, d}, []int64{1, hq}
			oTol := tolOf(AttentionLike, dt)
			lTol := tolOf(LSE, Float32)
			golden, lGolden := roundAll(dt, out), roundAll(Float32, lse)

			expectStatus(t, mustCompare(t, golden, roundAll(dt, kOut), oShape, oTol, "out kernel"), Pass)
			expectStatus(t, mustCompare(t, roundAll(Float32, out), roundAll(dt, kOut), oShape, oTol, "out kernel vs truth"), Pass)
			expectStatus(t, mustCompare(t, lGolden, roundAll(Float32, kLse), lShape, lTol, "lse kernel"), Pass)
			expectStatus(t, mustCompare(t, golden, make([]float64, len(golden)), oShape, oTol, "out zeros"), Fail)
			expectStatus(t, mustCompare(t, lGolden, make([]float64, hq), lShape, lTol, "lse zeros"), Fail)

			// one block of 16 tokens skipped
			sOut, sLse := c.truth(func(j int) bool { return j < 512 || j >= 528 })
			expectStatus(t, mustCompare(t, golden, roundAll(dt, sOut), oShape, oTol, "out skipped block"), Fail)
			expectStatus(t, mustCompare(t, lGolden, roundAll(Float32, sLse), lShape, lTol, "lse skipped block"), Fail)

			// wrong GQA mapping: query head h reads kv head h % hkv
			w := c
			w.q = append([]float64(nil), c.q...)
			for h := range hq {
				copy(w.q[h*d:(h+1)*d], c.q[(h%hkv*(hq/hkv)+h/hkv)*d:][:d])
			}
			wOut, _ := w.truth(nil)
			expectStatus(t, mustCompare(t, golden, roundAll(dt, wOut), oShape, oTol, "out wrong GQA mapping"), Fail)
		})
	}
}

func TestKernelQuestScores(t *testing.T) {
	// kmax/kmin of 16-token blocks, scores with fp32 accumulation against
	// the float64 golden; blocks past nb are -inf on both sides.
	const h, d, bs, maxb, nb = 4, 128, 16, 12, 9
	rng := rand.New(rand.NewPCG(4, 4))
	q := randn(rng, h*d, 1, Float16)
	keys := randn(rng, maxb*bs*d, 1, Float16)
	kmax, kmin := make([]float64, maxb*d), make([]float64, maxb*d)
	for i := range maxb {
		for e := range d {
			kmax[i*d+e], kmin[i*d+e] = math.Inf(-1), math.Inf(1)
			for t := range bs {
				v := keys[(i*bs+t)*d+e]
				kmax[i*d+e], kmin[i*d+e] = max(kmax[i*d+e], v), min(kmin[i*d+e], v)
			}
		}
	}
	golden, cand := make([]float64, h*maxb), make([]float64, h*maxb)
	for hh := range h {
		for i := range maxb {
			if i >= nb {
				golden[hh*maxb+i], cand[hh*maxb+i] = math.Inf(-1), math.Inf(-1)
				continue
			}
			var s float64
			var s32 float32
			for e := range d {
				a, b := float64(q[hh*d+e]*kmax[i*d+e]), float64(q[hh*d+e]*kmin[i*d+e])
				s += max(a, b)
				s32 += max(float32(a), float32(b))
			}
			golden[hh*maxb+i], cand[hh*maxb+i] = float64(float32(s)), float64(s32)
		}
	}
	shape := []int64{1, h, maxb}
	tol := tolOf(Scores, Float32)
	expectStatus(t, mustCompare(t, golden, cand, shape, tol, "scores kernel"), Pass)
	zeros := make([]float64, len(golden))
	expectStatus(t, mustCompare(t, golden, zeros, shape, tol, "scores zeros"), Fail)
	// bf16-rounded scores are not fp32 scores
	expectStatus(t, mustCompare(t, golden, roundAll(BFloat16, cand), shape, tol, "scores bf16"), Fail)
	// a finite value where the golden has -inf (block past nb) fails
	leak := append([]float64(nil), cand...)
	leak[nb] = 0
	r := mustCompare(t, golden, leak, shape, tol, "scores past nb")
	expectStatus(t, r, Fail)
	if r.InfMismatch != 1 {
		t.Errorf("scores past nb: inf_mismatch %d, want 1", r.InfMismatch)
	}
}
