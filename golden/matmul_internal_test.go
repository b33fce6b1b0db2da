package golden

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMatmulTileMatchesScalar compares the tiled vector path with the
// scalar kernels bit for bit, on shapes that leave row and column
// remainders (and an A of several row blocks), for both B layouts, float32
// and float64 A, and with signed zeros and huge values in the inputs.
func TestMatmulTileMatchesScalar(t *testing.T) {
	if !hasMatmulTile {
		t.Skip("no AVX-512 on this CPU: the scalar kernels are the only path")
	}
	rng := rand.New(rand.NewPCG(8, 9))
	for _, sh := range [][3]int{{4, 1, 16}, {5, 7, 17}, {8, 64, 48}, {13, 33, 31}, {4, 300, 16}, {7, 129, 70}, {9, 40, 33}, {18, 20000, 17}} {
		m, k, n := sh[0], sh[1], sh[2]
		a := make([]float32, m*k)
		b := make([]float32, k*n)
		for i := range a {
			a[i] = float32(rng.NormFloat64())
		}
		for i := range b {
			b[i] = float32(rng.NormFloat64())
		}
		a[0], b[0] = float32(math.Copysign(0, -1)), 0 // -0 * 0: the first sum term is -0
		if len(a) > 3 {
			a[3] = 6e4
		}
		a64 := make([]float64, len(a)) // float64 A: inexact products, one rounding in both paths
		for i, v := range a {
			a64[i] = float64(v) * (1 + 0x1p-30)
		}
		for _, nk := range []bool{false, true} {
			for _, a64A := range []bool{false, true} {
				want := make([]float64, m*n)
				got := make([]float64, m*n)
				for _, tile := range []bool{false, true} {
					hasMatmulTile = tile
					dst := want
					if tile {
						dst = got
					}
					if a64A {
						matmul(dst, a64, b, m, k, n, nk)
					} else {
						Matmul(dst, a, b, m, k, n, nk)
					}
				}
				for i := range got {
					if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
						t.Fatalf("%v nk=%v float64 A=%v: element %d: tiled %v, scalar %v", sh, nk, a64A, i, got[i], want[i])
					}
				}
			}
		}
	}
}
