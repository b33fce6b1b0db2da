package golden

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/goldset/goldset/internal/dtype"
)

// TestDSAVecMatchesGo compares the AVX-512 kernels of the DSA goldens with
// their Go twins bit for bit: the index-cache codes on float32 rows with
// zeros of both signs, subnormals, ties, values past 448, infinities and
// NaNs under power-of-two and arbitrary scales; the row maxima; and the
// weighted head sums with NaN, -0 and negative dots and weights, on key
// counts that leave a remainder to Go.
func TestDSAVecMatchesGo(t *testing.T) {
	if !hasDSAVec {
		t.Skip("no AVX-512 on this CPU: the Go loops are the only path")
	}
	defer func() { hasDSAVec, hasMXVec = true, true }()
	rng := rand.New(rand.NewPCG(14, 5))
	special := []float32{0, float32(math.Copysign(0, -1)), 0x1p-149, 0x1p-9, 0x1p-10, 0x1.8p-9, 0x1p-6, 0x1.1p-6, 448, 464, 465, 480, 1e38,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), -float32(math.NaN()), 1.0625, 1.1875}
	for _, n := range []int{16, 31, 128, 200} {
		row := make([]float32, n)
		for i := range row {
			switch rng.IntN(3) {
			case 0:
				row[i] = special[rng.IntN(len(special))]
			case 1:
				row[i] = math.Float32frombits(rng.Uint32())
			default:
				row[i] = float32(rng.NormFloat64() * 100)
			}
		}
		for _, sc := range []float32{1, 0x1p-7, 0x1p5, 3.7e-3, 0.2232} {
			got, want := make([]uint8, n), make([]uint8, n)
			codes := func(dst []uint8) {
				for d := dsaE4M3CodesVec(dst, row, sc); d < n; d++ {
					dst[d] = dtype.E4M3FromF32(row[d] / sc)
				}
			}
			codes(got)
			hasDSAVec = false
			codes(want)
			hasDSAVec = true
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("n %d sc %g: code %d of %g: kernel %#02x, Go %#02x", n, sc, i, row[i], got[i], want[i])
				}
			}
		}
		got := dsaAbsMaxBits(row)
		hasMXVec = false
		want := dsaAbsMaxBits(row)
		hasMXVec = true
		if got != want {
			t.Fatalf("n %d: abs max bits: kernel %#08x, Go %#08x", n, got, want)
		}
	}
	for _, sh := range [][2]int{{1, 32}, {3, 33}, {64, 100}, {5, 64}, {2, 7}} {
		hi, cn := sh[0], sh[1]
		w := make([]float32, hi)
		for h := range w {
			w[h] = float32(rng.NormFloat64())
		}
		dots := make([]float64, hi*cn)
		for i := range dots {
			switch rng.IntN(8) {
			case 0:
				dots[i] = math.Copysign(0, -1)
			case 1:
				dots[i] = 0
			default:
				dots[i] = rng.NormFloat64() * 1e3
			}
		}
		dots[len(dots)/2] = math.NaN()
		gs, ga := make([]float64, cn), make([]float64, cn)
		ws, wa := make([]float64, cn), make([]float64, cn)
		dsaHeadSums(gs, ga, w, dots, cn, false)
		hasDSAVec = false
		dsaHeadSums(ws, wa, w, dots, cn, false)
		hasDSAVec = true
		for i := range gs {
			if math.Float64bits(gs[i]) != math.Float64bits(ws[i]) || math.Float64bits(ga[i]) != math.Float64bits(wa[i]) {
				t.Fatalf("%v: key %d: kernel (%v, %v), Go (%v, %v)", sh, i, gs[i], ga[i], ws[i], wa[i])
			}
		}
	}
}

// TestDSAIndexerPathsAgree runs the ragged indexer with the tile kernel
// and the AVX-512 head sums, and with neither (Matmul's scalar kernels on
// widened float32 keys, the Go head sums), over windows that cross
// dsaChunk and leave partial panels and rows: logits, selections and row
// info must agree bit for bit.
func TestDSAIndexerPathsAgree(t *testing.T) {
	if !hasMatmulTile || !hasDSAVec {
		t.Skip("no AVX-512 on this CPU: the Go paths are the only ones")
	}
	defer func() { hasMatmulTile, hasDSAVec = true, true }()
	rng := rand.New(rand.NewPCG(14, 6))
	const T, hi, di, S, k = 3, 6, 32, 2100, 100
	code := func() uint8 {
		for {
			if c := uint8(rng.Uint32()); c&0x7f != 0x7f {
				return c
			}
		}
	}
	q, kv := make([]uint8, T*hi*di), make([]uint8, S*di)
	for i := range q {
		q[i] = code()
	}
	for i := range kv {
		kv[i] = code()
	}
	w, sc := make([]float32, T*hi), make([]float32, S)
	for i := range w {
		w[i] = float32(rng.NormFloat64())
	}
	for i := range sc {
		sc[i] = float32(rng.ExpFloat64())
	}
	ks, ke := []int32{0, 5, 17}, []int32{S, 2070, 40}
	dims := DSARaggedDims{T: T, HI: hi, DI: di, S: S, K: k}
	run := func() ([]float64, []int32, []DSARowInfo) {
		logits, topk, info := make([]float64, T*S), make([]int32, T*k), make([]DSARowInfo, T)
		if err := DSAIndexerRagged(logits, topk, info, q, w, kv, sc, ks, ke, dims); err != nil {
			t.Fatal(err)
		}
		return logits, topk, info
	}
	gl, gt, gi := run()
	hasMatmulTile, hasDSAVec = false, false
	wl, wt, wi := run()
	for i := range gl {
		if math.Float64bits(gl[i]) != math.Float64bits(wl[i]) {
			t.Fatalf("logit %d: vector paths %v, Go paths %v", i, gl[i], wl[i])
		}
	}
	for i := range gt {
		if gt[i] != wt[i] {
			t.Fatalf("topk %d: vector paths %d, Go paths %d", i, gt[i], wt[i])
		}
	}
	for i := range gi {
		if gi[i] != wi[i] {
			t.Fatalf("row info %d: vector paths %+v, Go paths %+v", i, gi[i], wi[i])
		}
	}
}
