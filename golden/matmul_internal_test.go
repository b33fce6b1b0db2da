package golden

import (
	"fmt"
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
	for _, sh := range [][3]int{{4, 1, 16}, {5, 7, 17}, {8, 64, 48}, {13, 33, 31}, {4, 300, 16}, {7, 129, 70}, {9, 40, 33}, {18, 20000, 17}, {37, 70000, 18}} {
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

// TestMXFP4TilesMatchScalar: the GEMM's y and S and an MoE expert's
// outputs and bound (both fused on the vector tiles: S from the same
// panels) have the scalar path's bits, with scale bytes 0, 253, 254 and
// 255 (±Inf, NaN) in W and row counts that leave 1-3 rows.
func TestMXFP4TilesMatchScalar(t *testing.T) {
	if !hasMatmulTile {
		t.Skip("no AVX-512 on this CPU: the scalar kernels are the only path")
	}
	defer func() { hasMatmulTile = true }()
	rng := rand.New(rand.NewPCG(10, 11))
	codes := func(rows, k int, edge bool) ([]uint8, []uint8) {
		c, s := make([]uint8, rows*k/2), make([]uint8, rows*k/MXBlock)
		for i := range c {
			c[i] = uint8(rng.IntN(256))
		}
		for i := range s {
			s[i] = uint8(118 + rng.IntN(10))
			if edge && rng.IntN(8) == 0 {
				s[i] = []uint8{0, 253, 254, 255}[rng.IntN(4)]
			}
		}
		return c, s
	}
	bf16 := func(n int) []uint16 {
		x := make([]uint16, n)
		for i := range x {
			x[i] = uint16(math.Float32bits(float32(rng.NormFloat64())) >> 16)
		}
		return x
	}
	same := func(what string, got, want []float64) {
		t.Helper()
		for i := range got {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("%s: element %d: tiled %v (%#x), scalar %v (%#x)", what, i, got[i], math.Float64bits(got[i]), want[i], math.Float64bits(want[i]))
			}
		}
	}
	for _, sh := range [][3]int{{4, 16, 32}, {6, 40, 64}, {7, 33, 96}, {9, 17, 128}} {
		m, n, k := sh[0], sh[1], sh[2]
		for _, edge := range []bool{false, true} {
			x := bf16(m * k)
			wc, ws := codes(n, k, edge)
			var out [2][2][]float64
			for i, tiles := range []bool{false, true} {
				hasMatmulTile = tiles
				y, s := make([]float64, m*n), make([]float64, m*n)
				if err := MXFP4GEMM(y, s, x, wc, ws, m, n, k); err != nil {
					t.Fatal(err)
				}
				out[i] = [2][]float64{y, s}
			}
			same(fmt.Sprintf("gemm %v edge=%v y", sh, edge), out[1][0], out[0][0])
			same(fmt.Sprintf("gemm %v edge=%v s", sh, edge), out[1][1], out[0][1])
		}
		// One expert, Hd = k, I = 32*(n%3+1), on m tokens.
		hd, in := k, 32*(n%3+1)
		w1c, w1s := codes(2*in, hd, false)
		w2c, w2s := codes(hd, in, false)
		b1, b2, x := bf16(2*in), bf16(hd), bf16(m*hd)
		var out [2][2][]float64
		for i, tiles := range []bool{false, true} {
			hasMatmulTile = tiles
			o, s := make([]float64, m*hd), make([]float64, m*hd)
			if err := MXFP4MoEExpert(o, s, x, m, w1c, w1s, b1, w2c, w2s, b2, hd, in, n%2 == 0, nil); err != nil { // both act_round conventions across the shapes
				t.Fatal(err)
			}
			out[i] = [2][]float64{o, s}
		}
		same(fmt.Sprintf("moe expert %v o", sh), out[1][0], out[0][0])
		same(fmt.Sprintf("moe expert %v s", sh), out[1][1], out[0][1])
	}
}
