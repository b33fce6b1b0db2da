package golden_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/goldset/goldset/golden"
)

// Tolerance for golden vs naive (both float64; they differ only in
// rounding order and exp/log implementation).
const naiveTol = 1e-12

func TestMatmulHand(t *testing.T) {
	// A = [[1 2 3] [4 5 6]], B = [[1 0] [0 1] [1 -1]]:
	// C = [[1+0+3, 0+2-3] [4+0+6, 0+5-6]] = [[4 -1] [10 -1]].
	a := []float32{1, 2, 3, 4, 5, 6}
	b := []float32{1, 0, 0, 1, 1, -1}
	bt := []float32{1, 0, 1, 0, 1, -1} // B transposed, [N, K]
	want := []float64{4, -1, 10, -1}
	for _, nk := range []bool{false, true} {
		got := make([]float64, 4)
		in := b
		if nk {
			in = bt
		}
		golden.Matmul(got, a, in, 2, 3, 2, nk)
		if !bitsEqual(got, want) {
			t.Errorf("bNK=%v: got %v, want %v", nk, got, want)
		}
	}
}

func TestMatmulVsNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, s := range [][3]int{{1, 1, 1}, {1, 7, 129}, {3, 64, 300}, {7, 129, 5}, {8, 33, 257}, {2, 0, 3}} {
		m, k, n := s[0], s[1], s[2]
		a, b := randF32(r, m*k, 1), randF32(r, k*n, 1/math.Sqrt(float64(max(k, 1))))
		for _, nk := range []bool{false, true} {
			bb := b
			if nk { // same matrix stored [N, K]
				bb = make([]float32, k*n)
				for p := range k {
					for j := range n {
						bb[j*k+p] = b[p*n+j]
					}
				}
			}
			got := make([]float64, m*n)
			golden.Matmul(got, a, bb, m, k, n, nk)
			// Same summation order as the naive triple loop: identical bits.
			if want := naiveMatmul(a, b, m, k, n, false); !bitsEqual(got, want) {
				t.Errorf("%v bNK=%v: differs from naive, max rel %g", s, nk, maxRelDiff(got, want))
			}
		}
	}
}

func TestSoftmaxHand(t *testing.T) {
	inf := float32(math.Inf(-1))
	// Row 0: x = [0, ln 3] -> e = [1, 3], sum 4 -> y = [0.25, 0.75]; max ln 3
	// (as float32). Row 1: -inf entries contribute exactly 0: [-inf, 5, 5]
	// -> [0, 0.5, 0.5], max 5, sum 2. Row 2: fully masked -> 0, -inf, 0.
	ln3 := float32(math.Log(3))
	x := []float32{0, ln3, 0, inf, 5, 5, inf, inf, inf}
	x[2] = inf // row 0 third entry masked too
	y := make([]float64, 9)
	mx, sm := make([]float64, 3), make([]float64, 3)
	golden.Softmax(y, mx, sm, x, 3, 3)
	e := math.Exp(-float64(ln3)) // exp(0 - max)
	want := []float64{e / (1 + e), 1 / (1 + e), 0, 0, 0.5, 0.5, 0, 0, 0}
	for i := range want {
		if math.Abs(y[i]-want[i]) > 1e-15 {
			t.Errorf("y[%d] = %v, want %v", i, y[i], want[i])
		}
	}
	if mx[0] != float64(ln3) || mx[1] != 5 || !math.IsInf(mx[2], -1) {
		t.Errorf("rowMax = %v", mx)
	}
	if math.Abs(sm[0]-(1+e)) > 1e-15 || sm[1] != 2 || sm[2] != 0 {
		t.Errorf("rowSum = %v", sm)
	}
}

func TestSoftmaxVsNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	for _, n := range []int{1, 781, 4096} {
		for _, kind := range []string{"normal", "1e4", "fp16max", "firstTileMasked"} {
			m := 3
			x := randF32(r, m*n, 3)
			switch kind {
			case "1e4":
				for i := range x {
					x[i] = float32(r.Float64()*2e4 - 1e4)
				}
			case "fp16max":
				for i := range x {
					x[i] = float32(65504 - r.Float64()*40)
				}
			case "firstTileMasked":
				for i := 0; i < m*n; i++ {
					if i%n < n/2 {
						x[i] = float32(math.Inf(-1))
					}
				}
			}
			y := make([]float64, m*n)
			mx, sm := make([]float64, m), make([]float64, m)
			golden.Softmax(y, mx, sm, x, m, n)
			wy, wm, ws := naiveSoftmax(x, m, n)
			if d := maxRelDiff(y, wy); d > naiveTol || !bitsEqual(mx, wm) || maxRelDiff(sm, ws) > naiveTol {
				t.Errorf("n=%d %s: y rel diff %g, max %v vs %v, sum %v vs %v", n, kind, d, mx, wm, sm, ws)
			}
			for i := range m {
				var s float64
				for _, v := range y[i*n : (i+1)*n] {
					s += v
				}
				if math.Abs(s-1) > 1e-12 {
					t.Errorf("n=%d %s row %d sums to %v", n, kind, i, s)
				}
			}
		}
	}
}

func TestReshapeAndCacheHand(t *testing.T) {
	// T=3, Hkv=1, D=2, NB=2, BS=2: slots [3, -1, 0] write key[0] to slot 3
	// (block 1, offset 1), skip token 1, write key[2] to slot 0.
	dims := golden.CacheDims{T: 3, Hkv: 1, D: 2, NB: 2, BS: 2}
	key := []float32{1, 2, 3, 4, 5, 6}
	val := []float32{-1, -2, -3, -4, -5, -6}
	kc := []float32{9, 9, 9, 9, 9, 9, 9, 9}
	vc := []float32{8, 8, 8, 8, 8, 8, 8, 8}
	dk, dv := make([]float32, 8), make([]float32, 8)
	if err := golden.ReshapeAndCache(dk, dv, key, val, kc, vc, []int32{3, -1, 0}, dims); err != nil {
		t.Fatal(err)
	}
	wk := []float32{5, 6, 9, 9, 9, 9, 1, 2}
	wv := []float32{-5, -6, 8, 8, 8, 8, -1, -2}
	if fmt.Sprint(dk) != fmt.Sprint(wk) || fmt.Sprint(dv) != fmt.Sprint(wv) {
		t.Errorf("got %v %v, want %v %v", dk, dv, wk, wv)
	}
}

func TestReshapeAndCacheRaw(t *testing.T) {
	// uint16 raw bits with NaN sentinels (distinct payloads) in the cache:
	// untouched elements must keep their exact bits.
	r := rand.New(rand.NewPCG(3, 3))
	dims := golden.CacheDims{T: 40, Hkv: 2, D: 8, NB: 5, BS: 16}
	row := dims.Hkv * dims.D
	n := dims.NB * dims.BS * row
	kc, vc := make([]uint16, n), make([]uint16, n)
	for i := range kc {
		kc[i] = 0x7c01 + uint16(i%500) // fp16 NaNs with payloads
		vc[i] = 0xff81 + uint16(i%100) // bf16 NaNs with payloads
	}
	key, val := make([]uint16, dims.T*row), make([]uint16, dims.T*row)
	for i := range key {
		key[i], val[i] = uint16(r.Uint32()), uint16(r.Uint32())
	}
	for _, slots := range [][]int32{
		{-1, -7, math.MinInt32},     // all negative: caches unchanged
		{0},                         // slot 0 is real
		{79, 0, -1, 17, 16, 15, 64}, // block boundaries, last slot
		make([]int32, 40),           // random permutation, filled below
	} {
		if len(slots) == 40 {
			perm := r.Perm(dims.NB * dims.BS)
			for i := range slots {
				slots[i] = int32(perm[i])
				if i%5 == 0 {
					slots[i] = -1
				}
			}
		}
		sum := checksum(kc, vc, key, val)
		dk, dv := make([]uint16, n), make([]uint16, n)
		if err := golden.ReshapeAndCache(dk, dv, key, val, kc, vc, slots, dims); err != nil {
			t.Fatal(err)
		}
		if checksum(kc, vc, key, val) != sum {
			t.Fatal("inputs modified")
		}
		k32 := func(x []uint16) []float32 { // bits as float32 values for the naive
			f := make([]float32, len(x))
			for i, v := range x {
				f[i] = float32(v)
			}
			return f
		}
		wk, wv := naiveReshapeAndCache(k32(key), k32(val), k32(kc), k32(vc), slots, dims)
		for i := range dk {
			if float32(dk[i]) != wk[i] || float32(dv[i]) != wv[i] {
				t.Fatalf("slots %v: element %d: got %#x %#x, want %#x %#x", slots, i, dk[i], dv[i], uint16(wk[i]), uint16(wv[i]))
			}
		}
	}
}

func TestReshapeAndCacheErrors(t *testing.T) {
	dims := golden.CacheDims{T: 2, Hkv: 1, D: 1, NB: 2, BS: 2}
	kc := []float32{1, 2, 3, 4}
	dk := []float32{7, 7, 7, 7}
	for _, c := range []struct {
		slots []int32
		want  error
	}{
		{[]int32{4}, golden.ErrOutOfRange},
		{[]int32{1, 1}, golden.ErrInvalidParams},
	} {
		err := golden.ReshapeAndCache(dk, dk[:4:4], []float32{5, 6}, []float32{5, 6}, kc, kc, c.slots, dims)
		if !errors.Is(err, c.want) {
			t.Errorf("slots %v: err %v, want %v", c.slots, err, c.want)
		}
		if dk[0] != 7 {
			t.Errorf("slots %v: dst written on error", c.slots)
		}
	}
}

func TestPagedAttentionHand(t *testing.T) {
	// B=1, Hq=2, Hkv=1 (G=2), D=2, BS=2, L=3 over physical blocks [1, 0].
	// Keys k0=(1,0) k1=(0,1) k2=(1,1), values v0=(1,0) v1=(0,2) v2=(3,3).
	// scale=1. Head 0: q=(ln2, 0): s=(ln2, 0, ln2), p ∝ (2, 1, 2), den 5:
	// out = (2*(1,0) + (0,2) + 2*(3,3))/5 = (8/5, 8/5), lse = ln 5 (max ln 2
	// plus ln(1 + 1/2 + 1)). Head 1: q=(0,0): uniform: out = (4/3, 5/3),
	// lse = ln 3. Block 0 slot 1 (token 3, past L) holds NaN.
	nan := float32(math.NaN())
	dims := golden.AttentionDims{B: 1, Hq: 2, Hkv: 1, D: 2, NB: 2, BS: 2, MAXB: 2}
	kc := []float32{1, 1, nan, nan, 1, 0, 0, 1} // phys 0 = tokens 2,3; phys 1 = tokens 0,1
	vc := []float32{3, 3, nan, nan, 1, 0, 0, 2}
	ln2 := float32(math.Ln2)
	q := []float32{ln2, 0, 0, 0}
	out, lse := make([]float64, 4), make([]float64, 2)
	if err := golden.PagedAttention(out, lse, q, kc, vc, []int32{1, 0}, []int32{3}, dims, 1); err != nil {
		t.Fatal(err)
	}
	// ln2 is rounded to float32, so p = (2', 1, 2') with 2' = exp(float32(ln2)).
	two := math.Exp(float64(ln2))
	den := 2*two + 1
	want := []float64{(two + 3*two) / den, (2 + 3*two) / den, 4.0 / 3, 5.0 / 3}
	for i := range want {
		if math.Abs(out[i]-want[i]) > 1e-15 {
			t.Errorf("out[%d] = %v, want %v", i, out[i], want[i])
		}
	}
	if math.Abs(lse[0]-(float64(ln2)+math.Log(den/two))) > 1e-15 || math.Abs(lse[1]-math.Log(3)) > 1e-15 {
		t.Errorf("lse = %v, want [%v %v]", lse, float64(ln2)+math.Log(den/two), math.Log(3))
	}
}

var attnLens = []int{1, 127, 128, 129, 511, 512, 513, 2011}

func TestPagedAttentionVsNaive(t *testing.T) {
	seed := uint64(10)
	for _, g := range []int{1, 4, 5, 8} {
		hkv := 2
		for _, d := range []int{7, 64} {
			seed++
			c := newAttnCase(seed, len(attnLens), g*hkv, hkv, d, 128, attnLens)
			sum := checksum(c.q, c.kc, c.vc) ^ checksum(c.bt, c.cl)
			out, lse, err := c.paged()
			if err != nil {
				t.Fatal(err)
			}
			if checksum(c.q, c.kc, c.vc)^checksum(c.bt, c.cl) != sum {
				t.Fatal("inputs modified")
			}
			if hasNaN(out) || hasNaN(lse) {
				t.Fatalf("G=%d D=%d: NaN leaked from unused slots", g, d)
			}
			wo, wl := naivePaged(c.q, c.kc, c.vc, c.bt, c.cl, c.dims, c.scale)
			if e := maxRelDiff(out, wo); e > naiveTol {
				t.Errorf("G=%d D=%d: out rel diff %g", g, d, e)
			}
			if e := maxRelDiff(lse, wl); e > naiveTol {
				t.Errorf("G=%d D=%d: lse rel diff %g", g, d, e)
			}
		}
	}
}

func TestPagedAttentionLong(t *testing.T) {
	if testing.Short() {
		t.Skip("L=40960 case skipped in -short")
	}
	c := newAttnCase(77, 1, 8, 2, 128, 128, []int{40960})
	out, lse, err := c.paged()
	if err != nil {
		t.Fatal(err)
	}
	wo, wl := naivePaged(c.q, c.kc, c.vc, c.bt, c.cl, c.dims, c.scale)
	if e, f := maxRelDiff(out, wo), maxRelDiff(lse, wl); e > naiveTol || f > naiveTol {
		t.Errorf("L=40960: out rel diff %g, lse rel diff %g", e, f)
	}
}

func TestPagedAttentionSharedBlocks(t *testing.T) {
	// Two sequences share physical blocks: results must equal attending
	// each sequence on its own.
	c := newAttnCase(5, 2, 4, 2, 16, 8, []int{20, 20})
	copy(c.bt[c.dims.MAXB:c.dims.MAXB+3], c.bt[:3])
	c.cl[1] = 17
	out, _, err := c.paged()
	if err != nil {
		t.Fatal(err)
	}
	wo, _ := naivePaged(c.q, c.kc, c.vc, c.bt, c.cl, c.dims, c.scale)
	if e := maxRelDiff(out, wo); e > naiveTol {
		t.Errorf("shared blocks: rel diff %g", e)
	}
}

func TestAttentionErrors(t *testing.T) {
	base := newAttnCase(6, 2, 4, 2, 8, 4, []int{5, 9})
	for _, tc := range []struct {
		name string
		mod  func(c *attnCase)
		want error
	}{
		{"G not integer", func(c *attnCase) {
			c.dims.Hq, c.dims.Hkv = 3, 2
			c.q = make([]float32, 2*3*8)
			c.kc = c.kc[:0]
			c.vc = c.vc[:0]
		}, golden.ErrInvalidParams},
		{"zero D", func(c *attnCase) { c.dims.D = 0 }, golden.ErrInvalidParams},
		{"L=0", func(c *attnCase) { c.cl[0] = 0 }, golden.ErrContextLen},
		{"L>MAXB*BS", func(c *attnCase) { c.cl[1] = int32(c.dims.MAXB*c.dims.BS + 1) }, golden.ErrContextLen},
		{"block -1", func(c *attnCase) { c.bt[1] = -1 }, golden.ErrOutOfRange},
		{"block NB", func(c *attnCase) { c.bt[c.dims.MAXB] = int32(c.dims.NB) }, golden.ErrOutOfRange},
	} {
		c := *base
		c.cl = append([]int32(nil), base.cl...)
		c.bt = append([]int32(nil), base.bt...)
		tc.mod(&c)
		out, lse := make([]float64, c.dims.B*c.dims.Hq*c.dims.D), make([]float64, c.dims.B*c.dims.Hq)
		err := golden.PagedAttention(out, lse, c.q, c.kc, c.vc, c.bt, c.cl, c.dims, 1)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestPagedAttentionPanics(t *testing.T) {
	c := newAttnCase(6, 1, 2, 1, 4, 4, []int{5})
	defer func() {
		if recover() == nil {
			t.Error("no panic for short out")
		}
	}()
	golden.PagedAttention(make([]float64, 1), make([]float64, 2), c.q, c.kc, c.vc, c.bt, c.cl, c.dims, 1)
}

// questCase runs metadata, scores and selection for c.
func questCase(t *testing.T, c *attnCase, p golden.QuestParams) (scores []float64, sel []int32) {
	t.Helper()
	dm := c.dims
	kmax := make([]float64, dm.B*dm.MAXB*dm.Hkv*dm.D)
	kmin := make([]float64, len(kmax))
	if err := golden.BlockMetadata(kmax, kmin, c.kc, c.bt, c.cl, dm); err != nil {
		t.Fatal(err)
	}
	wmax, wmin := naiveMeta(c.kc, c.bt, c.cl, dm)
	if !bitsEqual(kmax, wmax) || !bitsEqual(kmin, wmin) {
		t.Fatal("block metadata differs from naive")
	}
	scores = make([]float64, dm.B*p.Granularity.Hsel(dm)*dm.MAXB)
	if err := golden.BlockScores(scores, c.q, kmax, kmin, c.cl, dm, p.Granularity); err != nil {
		t.Fatal(err)
	}
	// Same per-head sequential sums as the naive: identical bits.
	if !bitsEqual(scores, naiveScores(c.q, kmax, kmin, c.cl, dm, p.Granularity)) {
		t.Fatal("scores differ from naive")
	}
	sel = make([]int32, dm.B*p.Granularity.Hsel(dm)*p.K)
	if _, _, err := golden.SelectBlocks(sel, scores, c.cl, dm, p); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(sel) != fmt.Sprint(naiveSelect(scores, c.cl, dm, p)) {
		t.Fatalf("selection %v differs from naive %v", sel, naiveSelect(scores, c.cl, dm, p))
	}
	return scores, sel
}

func TestQuestVsNaive(t *testing.T) {
	seed := uint64(40)
	for _, g := range []int{1, 4, 5} {
		for _, gran := range []golden.Granularity{golden.QHead, golden.KVGroupSum} {
			for _, k := range []int{1, 2, 3, 5, 16} {
				for _, anchors := range [][2]bool{{true, true}, {true, false}, {false, false}} {
					p := golden.QuestParams{K: k, AnchorFirst: anchors[0], AnchorLast: anchors[1], Granularity: gran}
					if k < p.Anchors() {
						continue
					}
					seed++
					c := newAttnCase(seed, 4, 2*g, 2, 16, 16, []int{1, 33, 200, 129})
					if seed%2 == 0 { // negative q: the min bound carries the signal
						for i := range c.q {
							c.q[i] = -float32(math.Abs(float64(c.q[i])))
						}
					}
					_, sel := questCase(t, c, p)
					out := make([]float64, len(c.q))
					lse := make([]float64, c.dims.B*c.dims.Hq)
					if err := golden.SparseAttention(out, lse, c.q, c.kc, c.vc, c.bt, c.cl, sel, c.dims, p, c.scale); err != nil {
						t.Fatal(err)
					}
					if hasNaN(out) {
						t.Fatal("NaN leaked into sparse attention")
					}
					wo, wl := naiveSparse(c.q, c.kc, c.vc, c.bt, c.cl, sel, c.dims, p, c.scale)
					if e, f := maxRelDiff(out, wo), maxRelDiff(lse, wl); e > naiveTol || f > naiveTol {
						t.Errorf("G=%d %v K=%d: sparse rel diff %g / lse %g", g, gran, k, e, f)
					}
				}
			}
		}
	}
}

func TestSparseAllSelectedEqualsDense(t *testing.T) {
	for _, gran := range []golden.Granularity{golden.QHead, golden.KVGroupSum} {
		c := newAttnCase(50, 3, 8, 2, 32, 16, []int{1, 40, 64})
		p := golden.QuestParams{K: 4, AnchorFirst: true, AnchorLast: true, Granularity: gran} // nb <= 4 everywhere
		_, sel := questCase(t, c, p)
		out := make([]float64, len(c.q))
		lse := make([]float64, c.dims.B*c.dims.Hq)
		if err := golden.SparseAttention(out, lse, c.q, c.kc, c.vc, c.bt, c.cl, sel, c.dims, p, c.scale); err != nil {
			t.Fatal(err)
		}
		do, dl, _ := c.paged()
		if !bitsEqual(out, do) || !bitsEqual(lse, dl) {
			t.Errorf("%v: nb <= K sparse differs from dense (rel %g)", gran, maxRelDiff(out, do))
		}
	}
}

func TestSelectBlocksRules(t *testing.T) {
	inf := math.Inf(-1)
	dims := golden.AttentionDims{B: 1, Hq: 1, Hkv: 1, D: 1, NB: 8, BS: 4, MAXB: 6}
	for _, tc := range []struct {
		name      string
		l         int32
		scores    []float64
		p         golden.QuestParams
		want      []int32
		margin    float64
		hasMargin bool
	}{
		// nb = 6, anchors 0 and 5; all tied: lowest indices 1, 2 win.
		{"ties", 24, []float64{1, 1, 1, 1, 1, 1}, golden.QuestParams{K: 4, AnchorFirst: true, AnchorLast: true}, []int32{0, 1, 2, 5}, 0, true},
		// Scores 9 (anchor), 3, 7, 5, 6, 0 (anchor): pick 2 (7), 4 (6); next best 3 (5): margin 1.
		{"ranked", 24, []float64{9, 3, 7, 5, 6, 0}, golden.QuestParams{K: 4, AnchorFirst: true, AnchorLast: true}, []int32{0, 2, 4, 5}, 1, true},
		// No anchors: top 2 of the same scores are 0 (9) and 2 (7); margin 7-6.
		{"noAnchors", 24, []float64{9, 3, 7, 5, 6, 0}, golden.QuestParams{K: 2}, []int32{0, 2}, 1, true},
		// nb = 1 with both anchors: one block, counted once, -1 padded.
		{"nb1", 3, []float64{2, inf, inf, inf, inf, inf}, golden.QuestParams{K: 2, AnchorFirst: true, AnchorLast: true}, []int32{0, -1}, 0, false},
		// nb = 2, both anchors, K = 2: all selected, no margin.
		{"nb2", 5, []float64{2, 1, inf, inf, inf, inf}, golden.QuestParams{K: 2, AnchorFirst: true, AnchorLast: true}, []int32{0, 1}, 0, false},
		// K = anchors < nb: selection independent of scores, no margin.
		{"onlyAnchors", 24, []float64{0, 9, 9, 9, 9, 0}, golden.QuestParams{K: 2, AnchorFirst: true, AnchorLast: true}, []int32{0, 5}, 0, false},
		// nb <= K: everything, -1 padded.
		{"nbLEK", 9, []float64{5, 1, 3, inf, inf, inf}, golden.QuestParams{K: 5, AnchorFirst: true, AnchorLast: true}, []int32{0, 1, 2, -1, -1}, 0, false},
	} {
		sel := make([]int32, tc.p.K)
		m, has, err := golden.SelectBlocks(sel, tc.scores, []int32{tc.l}, dims, tc.p)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if fmt.Sprint(sel) != fmt.Sprint(tc.want) || m != tc.margin || has != tc.hasMargin {
			t.Errorf("%s: got %v margin %v %v, want %v margin %v %v", tc.name, sel, m, has, tc.want, tc.margin, tc.hasMargin)
		}
	}
	sel := make([]int32, 1)
	_, _, err := golden.SelectBlocks(sel, make([]float64, 6), []int32{24}, dims, golden.QuestParams{K: 1, AnchorFirst: true, AnchorLast: true})
	if !errors.Is(err, golden.ErrInvalidParams) {
		t.Errorf("K < anchors: err %v, want ErrInvalidParams", err)
	}
}

func TestSparseSelectionErrors(t *testing.T) {
	c := newAttnCase(8, 1, 2, 1, 4, 4, []int{10}) // nb = 3
	p := golden.QuestParams{K: 2}
	for _, tc := range []struct {
		sel  []int32
		want error
	}{
		{[]int32{0, 3, 0, 1}, golden.ErrOutOfRange},
		{[]int32{1, 1, 0, 1}, golden.ErrInvalidParams},
		{[]int32{-1, -1, 0, 1}, golden.ErrInvalidParams},
		{[]int32{-2, 0, 0, 1}, golden.ErrOutOfRange},
	} {
		out, lse := make([]float64, 8), make([]float64, 2)
		err := golden.SparseAttention(out, lse, c.q, c.kc, c.vc, c.bt, c.cl, tc.sel, c.dims, p, 1)
		if !errors.Is(err, tc.want) {
			t.Errorf("sel %v: err %v, want %v", tc.sel, err, tc.want)
		}
	}
}

func TestDeterminismAcrossGOMAXPROCS(t *testing.T) {
	c := newAttnCase(9, 5, 8, 2, 64, 32, []int{1, 100, 333, 64, 700})
	r := rand.New(rand.NewPCG(9, 9))
	a, b := randF32(r, 9*300, 1), randF32(r, 300*70, 0.05)
	x := randF32(r, 7*1000, 5)
	p := golden.QuestParams{K: 4, AnchorFirst: true, AnchorLast: true}
	run := func() []float64 {
		out, lse, err := c.paged()
		if err != nil {
			t.Fatal(err)
		}
		mm := make([]float64, 9*70)
		golden.Matmul(mm, a, b, 9, 300, 70, false)
		sm := make([]float64, len(x))
		golden.Softmax(sm, nil, nil, x, 7, 1000)
		scores, sel := questCase(t, c, p)
		so := make([]float64, len(out))
		sl := make([]float64, len(lse))
		if err := golden.SparseAttention(so, sl, c.q, c.kc, c.vc, c.bt, c.cl, sel, c.dims, p, c.scale); err != nil {
			t.Fatal(err)
		}
		var all []float64
		for _, s := range [][]float64{out, lse, mm, sm, scores, so, sl} {
			all = append(all, s...)
		}
		return all
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	one := run()
	for _, n := range []int{2, 3} {
		runtime.GOMAXPROCS(n)
		if !bitsEqual(one, run()) {
			t.Errorf("GOMAXPROCS=%d differs from GOMAXPROCS=1", n)
		}
	}
}

// TestMatmulLayoutsAgree pins what the suite relies on to run KN cases
// through the faster NK kernel: both layouts give the same bits.
func TestMatmulLayoutsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, d := range [][3]int{{1, 4096, 33}, {17, 301, 129}, {7, 129, 781}} {
		m, k, n := d[0], d[1], d[2]
		a := make([]float32, m*k)
		b := make([]float32, k*n)
		bt := make([]float32, n*k)
		for i := range a {
			a[i] = float32(r.NormFloat64())
		}
		for i := range b {
			b[i] = float32(r.NormFloat64())
		}
		for i := 0; i < k; i++ {
			for j := 0; j < n; j++ {
				bt[j*k+i] = b[i*n+j]
			}
		}
		kn := make([]float64, m*n)
		nk := make([]float64, m*n)
		golden.Matmul(kn, a, b, m, k, n, false)
		golden.Matmul(nk, a, bt, m, k, n, true)
		for i := range kn {
			if kn[i] != nk[i] {
				t.Fatalf("%v: element %d: KN %v, NK %v", d, i, kn[i], nk[i])
			}
		}
	}
}
