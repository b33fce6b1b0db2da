package golden_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/goldset/goldset/golden"
	"github.com/goldset/goldset/internal/dtype"
	"github.com/goldset/goldset/npy"
)

// dsaCase is a random paged DSA decode case. Every slot no visible token
// uses holds NaN canaries (codes 0xff, scale NaN bits), and so do the
// unused blocks; block-table entries past ceil(L/64) are -1 or NB+7.
type dsaCase struct {
	d        golden.DSAIndexerDims
	f        golden.DSAScaleFmt
	k        []float32 // [T, DI] source keys, one per written slot
	slots    []int32   // slot mapping
	cache    []byte    // after DSAIndexCache
	q        []uint8
	w        []float32
	bt, lens []int32
}

func dsaBF16(x float64) float32 { return npy.BF16ToF32(npy.BF16FromF64(x)) }

// newDSACase builds a case; shared makes sequence 1 share sequence 0's
// first block (prefix caching); nonNeg draws non-negative weights.
func newDSACase(t testing.TB, seed uint64, nn, hi, di, k int, lens []int, shared, nonNeg bool, f golden.DSAScaleFmt) *dsaCase {
	r := rand.New(rand.NewPCG(seed, 14))
	maxb := 0
	used := 0
	for _, l := range lens {
		maxb = max(maxb, (l+63)/64)
		used += (l + 63) / 64
	}
	maxb++
	nb := used + 3
	c := &dsaCase{d: golden.DSAIndexerDims{B: len(lens), NN: nn, HI: hi, DI: di, NB: nb, MAXB: maxb, K: k}, f: f}
	perm := r.Perm(nb)
	c.bt = make([]int32, len(lens)*maxb)
	c.lens = make([]int32, len(lens))
	next := 0
	written := map[int32]bool{}
	for b, l := range lens {
		c.lens[b] = int32(l)
		for i := range maxb {
			if i >= (l+63)/64 {
				c.bt[b*maxb+i] = []int32{-1, int32(nb + 7)}[i%2]
				continue
			}
			if shared && b == 1 && i == 0 && lens[0] >= 64 {
				c.bt[b*maxb] = c.bt[0]
				continue
			}
			c.bt[b*maxb+i] = int32(perm[next])
			next++
		}
		for pos := range l {
			s := c.bt[b*maxb+pos/64]*64 + int32(pos%64)
			if written[s] {
				continue
			}
			written[s] = true
			c.slots = append(c.slots, s)
			sd := math.Exp2(float64(r.IntN(12) - 6)) // per-token magnitudes 2^-6 .. 2^5
			for range di {
				c.k = append(c.k, dsaBF16(r.NormFloat64()*sd))
			}
		}
	}
	canary := bytes.Repeat([]byte{0xff}, nb*golden.DSABlockBytes(di))
	c.cache = make([]byte, len(canary))
	cd := golden.DSACacheDims{T: len(c.slots), DI: di, NB: nb}
	if err := golden.DSAIndexCache(c.cache, c.k, c.slots, canary, cd, f); err != nil {
		t.Fatal(err)
	}
	rows := len(lens) * nn
	c.q = make([]uint8, rows*hi*di)
	for i := range c.q {
		c.q[i] = dtype.E4M3FromF64(r.NormFloat64() * 4)
	}
	c.w = make([]float32, rows*hi)
	for i := range c.w {
		x := r.NormFloat64() / 8
		if nonNeg {
			x = math.Abs(x)
		}
		c.w[i] = float32(x)
	}
	return c
}

func (c *dsaCase) cacheDims() golden.DSACacheDims {
	return golden.DSACacheDims{T: len(c.slots), DI: c.d.DI, NB: c.d.NB}
}

func (c *dsaCase) run(t testing.TB, f func([]float64, []int32, []int32, []golden.DSARowInfo, []uint8, []float32, []byte, []int32, []int32, golden.DSAIndexerDims) error) (logits []float64, tl, tp []int32, info []golden.DSARowInfo) {
	rows := c.d.B * c.d.NN
	logits = make([]float64, rows*c.d.MAXB*64)
	tl, tp = make([]int32, rows*c.d.K), make([]int32, rows*c.d.K)
	info = make([]golden.DSARowInfo, rows)
	if err := f(logits, tl, tp, info, c.q, c.w, c.cache, c.bt, c.lens, c.d); err != nil {
		t.Fatal(err)
	}
	return
}

func dsaSameF64(a, b []float64) int {
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return i
		}
	}
	return -1
}

func TestDSAIndexScaleHand(t *testing.T) {
	for _, c := range []struct {
		amax float32
		f    golden.DSAScaleFmt
		want float32
	}{
		{448, golden.DSAScaleUE8M0, 1},
		{224, golden.DSAScaleUE8M0, 0.5}, // exactly a power of two: not rounded up
		{225, golden.DSAScaleUE8M0, 1},
		{1, golden.DSAScaleUE8M0, 0x1p-8},  // 1/448 = 2^-8.8
		{0, golden.DSAScaleUE8M0, 0x1p-22}, // floor: fl32(1e-4)/448 = 2.2e-7, 2^-22 = 2.4e-7
		{3, golden.DSAScaleUE8M0, 0x1p-7},
		{448, golden.DSAScaleFP32, 1},
		{1, golden.DSAScaleFP32, float32(1) / 448},
		{0, golden.DSAScaleFP32, float32(1e-4) / 448},
	} {
		if got := golden.DSAIndexScale(c.amax, c.f); got != c.want {
			t.Errorf("DSAIndexScale(%g, %d) = %g, want %g", c.amax, c.f, got, c.want)
		}
	}
}

// A hand-computed cache write: DI 4, slot 65 (block 1, token 1), slot -1
// skipped, every other byte the canary.
func TestDSAIndexCacheHand(t *testing.T) {
	d := golden.DSACacheDims{T: 2, DI: 4, NB: 2}
	k := []float32{1, -0.5, 0.25, 3, 9, 9, 9, 9}
	canary := bytes.Repeat([]byte{0xa5}, 2*golden.DSABlockBytes(4))
	dst := make([]byte, len(canary))
	if err := golden.DSAIndexCache(dst, k, []int32{65, -1}, canary, d, golden.DSAScaleUE8M0); err != nil {
		t.Fatal(err)
	}
	// amax 3: sc = 2^ceil(log2(3/448)) = 2^-7; k/sc = 128, -64, 32, 384.
	want := append([]byte(nil), canary...)
	copy(want[512+4:], []byte{0x70, 0xe8, 0x60, 0x7c})
	copy(want[512+256+4:], []byte{0x00, 0x00, 0x00, 0x3c}) // 2^-7 little-endian
	if !bytes.Equal(dst, want) {
		t.Fatalf("cache differs at %d", dsaFirstDiffByte(dst, want))
	}
}

func dsaFirstDiffByte(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestDSAIndexCacheErrors(t *testing.T) {
	d := golden.DSACacheDims{T: 2, DI: 4, NB: 1}
	k := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	cache := make([]byte, golden.DSABlockBytes(4))
	dst := bytes.Repeat([]byte{7}, len(cache))
	for _, c := range []struct {
		slots []int32
		k     []float32
		want  error
	}{
		{[]int32{64, 0}, k, golden.ErrOutOfRange},
		{[]int32{3, 3}, k, golden.ErrInvalidParams},
		{[]int32{3, 4}, []float32{1, float32(math.NaN()), 3, 4, 5, 6, 7, 8}, golden.ErrInvalidParams},
		{[]int32{3, 4}, []float32{1, 2, 3, 4, 5, 6, float32(math.Inf(-1)), 8}, golden.ErrInvalidParams},
	} {
		err := golden.DSAIndexCache(dst, c.k, c.slots, cache, d, golden.DSAScaleUE8M0)
		if !errors.Is(err, c.want) {
			t.Errorf("slots %v: err %v, want %v", c.slots, err, c.want)
		}
		if !bytes.Equal(dst, bytes.Repeat([]byte{7}, len(cache))) {
			t.Errorf("slots %v: dst written on error", c.slots)
		}
	}
}

// Hand-computed scores: HI 2, DI 2; q heads (1,0) and (0,1); weights
// (1, -0.5); keys (448,0) sc 1, (2,4) sc 2^-6, (-1,2) sc 2^-7, so I =
// 448, 2^-6*(128 - 0.5*256) = 0, 2^-7*(-0.5*256) = -1 and A = 448.
func TestDSAIndexerHand(t *testing.T) {
	cd := golden.DSACacheDims{T: 3, DI: 2, NB: 1}
	cache := make([]byte, golden.DSABlockBytes(2))
	k := []float32{448, 0, 2, 4, -1, 2}
	if err := golden.DSAIndexCache(cache, k, []int32{0, 1, 2}, cache, cd, golden.DSAScaleUE8M0); err != nil {
		t.Fatal(err)
	}
	one := dtype.E4M3FromF64(1)
	d := golden.DSAIndexerDims{B: 1, NN: 2, HI: 2, DI: 2, NB: 1, MAXB: 1, K: 2}
	q := []uint8{one, 0, 0, one, one, 0, 0, one}
	w := []float32{1, -0.5, 1, -0.5}
	logits := make([]float64, 2*64)
	tl, tp := make([]int32, 4), make([]int32, 4)
	info := make([]golden.DSARowInfo, 2)
	if err := golden.DSAIndexer(logits, tl, tp, info, q, w, cache, []int32{0}, []int32{3}, d); err != nil {
		t.Fatal(err)
	}
	inf := math.Inf(-1)
	if got := logits[:3]; !slices.Equal(got, []float64{448, 0, inf}) {
		t.Errorf("row 0 logits %v, want [448 0 -Inf]", got)
	}
	if got := logits[64:67]; !slices.Equal(got, []float64{448, 0, -1}) {
		t.Errorf("row 1 logits %v, want [448 0 -1]", got)
	}
	if !slices.Equal(tl, []int32{0, 1, 0, 1}) || !slices.Equal(tp, tl) {
		t.Errorf("topk %v %v, want [0 1 0 1]", tl, tp)
	}
	want := []golden.DSARowInfo{{Visible: 2, Kth: 0, Gap: math.Inf(1), A: 448}, {Visible: 3, Kth: 0, Gap: 1, A: 448}}
	if !slices.Equal(info, want) {
		t.Errorf("info %+v, want %+v", info, want)
	}
}

func TestDSAIndexerErrors(t *testing.T) {
	dc := newDSACase(t, 5, 2, 4, 16, 8, []int{70, 10}, false, false, golden.DSAScaleUE8M0)
	rows := dc.d.B * dc.d.NN
	logits := make([]float64, rows*dc.d.MAXB*64)
	call := func(bt, lens []int32, cache []byte) error {
		return golden.DSAIndexer(logits, nil, nil, nil, dc.q, dc.w, cache, bt, lens, dc.d)
	}
	if err := call(dc.bt, []int32{70, 1}, dc.cache); !errors.Is(err, golden.ErrContextLen) {
		t.Errorf("seq_len 1 < next_n 2: %v", err)
	}
	bt := slices.Clone(dc.bt)
	bt[1] = int32(dc.d.NB)
	if err := call(bt, dc.lens, dc.cache); !errors.Is(err, golden.ErrOutOfRange) {
		t.Errorf("block table out of range: %v", err)
	}
	// Point sequence 1 at an unused (canary) block: the NaN scale shows.
	bt = slices.Clone(dc.bt)
	used := map[int32]bool{}
	for b, l := range dc.lens {
		for i := range (int(l) + 63) / 64 {
			used[dc.bt[b*dc.d.MAXB+i]] = true
		}
	}
	for p := range int32(dc.d.NB) {
		if !used[p] {
			bt[dc.d.MAXB] = p
			break
		}
	}
	if err := call(bt, dc.lens, dc.cache); !errors.Is(err, golden.ErrInvalidParams) {
		t.Errorf("canary block read: %v", err)
	}
}

// All keys and queries equal: every score ties, the selection is the
// first K positions and the gap is 0; the tie band accepts any K tokens.
func TestDSAIndexerAllTied(t *testing.T) {
	dc := newDSACase(t, 6, 1, 4, 16, 32, []int{100}, false, false, golden.DSAScaleUE8M0)
	for i := range dc.k {
		dc.k[i] = dsaBF16(float64(1 + i%16))
	}
	for i := range dc.q {
		dc.q[i] = dtype.E4M3FromF64(1)
	}
	for i := range dc.w {
		dc.w[i] = 0.25
	}
	if err := golden.DSAIndexCache(dc.cache, dc.k, dc.slots, dc.cache, dc.cacheDims(), dc.f); err != nil {
		t.Fatal(err)
	}
	logits, tl, tp, info := dc.run(t, golden.DSAIndexer)
	for i := range 32 {
		if tl[i] != int32(i) {
			t.Fatalf("tied row selection %v, want 0..31", tl)
		}
	}
	if info[0].Gap != 0 || info[0].Kth != logits[0] {
		t.Fatalf("info %+v", info[0])
	}
	other := make([]int32, 32)
	for i := range other {
		other[i] = int32(99 - i) // the last 32 tokens: also within the band
	}
	row := golden.DSASelectionRow{Got: other, Want: tl, Scores: logits[:100], Info: info[0], Space: golden.DSALogical}
	if err := golden.DSASelectionCheck(row, 0); err != nil {
		t.Errorf("tie band rejected another tied subset: %v", err)
	}
	_ = tp
}

func TestDSAMargin(t *testing.T) {
	dc := newDSACase(t, 8, 1, 8, 32, 16, []int{300, 64, 150}, false, true, golden.DSAScaleUE8M0)
	before, tl0, _, info0 := dc.run(t, golden.DSAIndexer)
	oldCache := slices.Clone(dc.cache)
	const tau = 1.0 / 64
	dem, err := golden.DSAIndexerMargin(dc.k, dc.slots, dc.cache, dc.cacheDims(), dc.f, dc.q, dc.w, dc.bt, dc.lens, dc.d, tau)
	if err != nil {
		t.Fatal(err)
	}
	if len(dem) == 0 {
		t.Fatal("no demotions: the case plants no margin")
	}
	after, tl, _, info := dc.run(t, golden.DSAIndexer)
	if !slices.Equal(tl, tl0) {
		t.Fatal("margin changed the selection")
	}
	width := dc.d.MAXB * 64
	for r := range info {
		if info[r].Kth != info0[r].Kth || info[r].A != info0[r].A {
			t.Errorf("row %d: kth/A changed %+v -> %+v", r, info0[r], info[r])
		}
		if info[r].Visible > dc.d.K && !(info[r].Gap > tau*info[r].A) {
			t.Errorf("row %d: gap %g not above tau*A = %g", r, info[r].Gap, tau*info[r].A)
		}
	}
	for _, d := range dem {
		i := d.Seq*width + d.Pos
		if before[i] != d.Before || after[i] != d.After || d.After != math.Ldexp(d.Before, -d.Halvings) {
			t.Errorf("demotion %+v: scores %g -> %g", d, before[i], after[i])
		}
		oc, os := golden.DSACacheSlot(oldCache, d.Slot, dc.d.DI)
		nc, ns := golden.DSACacheSlot(dc.cache, d.Slot, dc.d.DI)
		if !bytes.Equal(oc, nc) || ns != float32(math.Ldexp(float64(os), -d.Halvings)) {
			t.Errorf("demotion %+v: codes changed or scale %g -> %g", d, os, ns)
		}
	}
	// The demoted cache is what DSAIndexCache writes from the demoted keys.
	fresh := make([]byte, len(dc.cache))
	canary := bytes.Repeat([]byte{0xff}, len(dc.cache))
	if err := golden.DSAIndexCache(fresh, dc.k, dc.slots, canary, dc.cacheDims(), dc.f); err != nil || !bytes.Equal(fresh, dc.cache) {
		t.Fatalf("demoted cache is not the cache of the demoted keys (%v)", err)
	}
	t.Logf("%d demotions, first %+v", len(dem), dem[0])

	nn2 := newDSACase(t, 8, 2, 8, 32, 16, []int{300}, false, true, golden.DSAScaleUE8M0)
	if _, err := golden.DSAIndexerMargin(nn2.k, nn2.slots, nn2.cache, nn2.cacheDims(), nn2.f, nn2.q, nn2.w, nn2.bt, nn2.lens, nn2.d, tau); !errors.Is(err, golden.ErrInvalidParams) {
		t.Errorf("next_n 2: %v", err)
	}
	neg := newDSACase(t, 8, 1, 8, 32, 16, []int{300}, false, false, golden.DSAScaleUE8M0)
	k0 := slices.Clone(neg.k)
	if _, err := golden.DSAIndexerMargin(neg.k, neg.slots, neg.cache, neg.cacheDims(), neg.f, neg.q, neg.w, neg.bt, neg.lens, neg.d, tau); !errors.Is(err, golden.ErrInvalidParams) || !slices.Equal(k0, neg.k) {
		t.Errorf("negative weights: %v (keys modified: %v)", err, !slices.Equal(k0, neg.k))
	}
}

func TestDSABlockHeaderHand(t *testing.T) {
	// Sequence 0: 130 tokens on blocks 4, 1, 3; sequence 1 shares block 4
	// (its first 64 tokens) and has 70 tokens: blocks 4, 0. Block 2 unused.
	bt := []int32{4, 1, 3, 4, 0, -1}
	dst := make([]int32, 10)
	if err := golden.DSABlockHeader(dst, bt, []int32{130, 70}, 2, 3, 5, 64); err != nil {
		t.Fatal(err)
	}
	want := []int32{6, 64, 64, 64, 0, -1, 2, 128, 64, 0}
	if !slices.Equal(dst, want) {
		t.Errorf("header %v, want %v", dst, want)
	}
	if err := golden.DSABlockHeader(dst, []int32{4, 1, 5, 4, 0, -1}, []int32{130, 70}, 2, 3, 5, 64); !errors.Is(err, golden.ErrOutOfRange) {
		t.Errorf("block 5 of 5: %v", err)
	}
}

// attnCase builds a sparse-attention case whose unselected slots hold NaN.
type dsaAttnCase struct {
	d                golden.DSAAttentionDims
	qn, qp, ckv, kpe []float32
	idx              []int32
}

func newDSAAttnCase(seed uint64, t, h, dc, dr, p, k int) *dsaAttnCase {
	r := rand.New(rand.NewPCG(seed, 8))
	c := &dsaAttnCase{d: golden.DSAAttentionDims{T: t, H: h, DC: dc, DR: dr, P: p, PS: 64, K: k}}
	fill := func(n int, sd float64) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = dsaBF16(r.NormFloat64() * sd)
		}
		return x
	}
	c.qn, c.qp = fill(t*h*dc, 1), fill(t*h*dr, 1)
	c.ckv, c.kpe = fill(p*64*dc, 1), fill(p*64*dr, 1)
	c.idx = make([]int32, t*k)
	selected := map[int32]bool{}
	for row := range t {
		perm := r.Perm(p * 64)
		n := k - row%3 // some padding
		switch row % 5 {
		case 3:
			n = 0 // an empty row
		case 4:
			n = 1 // one valid index
		}
		for i := range k {
			c.idx[row*k+i] = -1
		}
		pos := r.Perm(k)[:n] // -1 padding anywhere in the row
		for i, at := range pos {
			c.idx[row*k+at] = int32(perm[i])
			selected[int32(perm[i])] = true
		}
	}
	nan := float32(math.NaN())
	for s := range int32(p * 64) {
		if selected[s] {
			continue
		}
		for e := range dc {
			c.ckv[int(s)*dc+e] = nan
		}
		for e := range dr {
			c.kpe[int(s)*dr+e] = nan
		}
	}
	return c
}

func (c *dsaAttnCase) run(t testing.TB, f func(out, lse []float64, qn, qp, ckv, kpe []float32, idx []int32, d golden.DSAAttentionDims, s float64) error, scale float64) (out, lse []float64) {
	out, lse = make([]float64, c.d.T*c.d.H*c.d.DC), make([]float64, c.d.T*c.d.H)
	if err := f(out, lse, c.qn, c.qp, c.ckv, c.kpe, c.idx, c.d, scale); err != nil {
		t.Fatal(err)
	}
	return
}

// Empty rows, one-index rows, any row order; the comparison with the
// reference is goldentest.TestDSASparseAttention (dsa_conformance_test.go).
func TestDSASparseAttentionRows(t *testing.T) {
	c := newDSAAttnCase(11, 10, 4, 64, 16, 6, 40)
	out, lse := c.run(t, golden.DSASparseAttention, golden.DSADefaultSMScale)
	d := c.d
	for row := range d.T {
		switch row % 5 {
		case 3:
			for h := range d.H {
				if !math.IsInf(lse[row*d.H+h], -1) || slices.ContainsFunc(out[(row*d.H+h)*d.DC:(row*d.H+h+1)*d.DC], func(x float64) bool { return x != 0 }) {
					t.Errorf("empty row %d: lse %v, out not 0", row, lse[row*d.H+h])
				}
			}
		case 4:
			var s int32
			for _, x := range c.idx[row*d.K : (row+1)*d.K] {
				if x >= 0 {
					s = x
				}
			}
			for h := range d.H {
				for e := range d.DC {
					if out[(row*d.H+h)*d.DC+e] != float64(c.ckv[int(s)*d.DC+e]) {
						t.Fatalf("one-index row %d: out is not the V row", row)
					}
				}
			}
		}
	}
	// The order of a row does not matter.
	for row := range d.T {
		slices.Reverse(c.idx[row*d.K : (row+1)*d.K])
	}
	out2, lse2 := c.run(t, golden.DSASparseAttention, golden.DSADefaultSMScale)
	if dsaSameF64(out2, out) >= 0 || dsaSameF64(lse2, lse) >= 0 {
		t.Error("reversing the rows changed the result")
	}
	// Errors: a repeated slot, an index past the cache, -2.
	for _, bad := range []int32{c.idx[0], int32(d.P * 64), -2} {
		idx := slices.Clone(c.idx)
		at := slices.IndexFunc(idx[:d.K], func(x int32) bool { return x >= 0 && x != bad })
		idx[at] = bad
		if bad == c.idx[0] && c.idx[0] < 0 {
			continue
		}
		err := golden.DSASparseAttention(out, lse, c.qn, c.qp, c.ckv, c.kpe, idx, d, golden.DSADefaultSMScale)
		if err == nil {
			t.Errorf("index %d accepted", bad)
		}
	}
}

// The golden selections pass the check, and each negative control of
// ops.md §8 is rejected by it or differs from the golden.
func TestDSANegatives(t *testing.T) {
	// Sequence 3 (10 tokens, fewer than K) shows the causal window.
	dc := newDSACase(t, 12, 2, 8, 32, 16, []int{150, 70, 300, 10}, true, false, golden.DSAScaleUE8M0)
	logits, tl, tp, info := dc.run(t, golden.DSAIndexer)
	width := dc.d.MAXB * 64
	k := dc.d.K
	rowOf := func(r int, got, want []int32, space golden.DSASpace) golden.DSASelectionRow {
		b := r / dc.d.NN
		return golden.DSASelectionRow{
			Got: got, Want: want, Scores: logits[r*width : r*width+info[r].Visible], Info: info[r], Space: space,
			BlockTable: dc.bt[b*dc.d.MAXB : (b+1)*dc.d.MAXB], PS: 64,
		}
	}
	const eps = 0x1p-12
	rows := dc.d.B * dc.d.NN
	for r := range rows {
		for _, sp := range []struct {
			sel   []int32
			space golden.DSASpace
		}{{tl, golden.DSALogical}, {tp, golden.DSAPhysical}} {
			row := slices.Clone(sp.sel[r*k : (r+1)*k])
			slices.Reverse(row)
			if err := golden.DSASelectionCheck(rowOf(r, row, sp.sel[r*k:(r+1)*k], sp.space), eps); err != nil {
				t.Fatalf("row %d %v: golden selection rejected: %v", r, sp.space, err)
			}
		}
	}
	reject := func(name string, r int, got []int32, space golden.DSASpace) {
		t.Helper()
		want := tl
		if space == golden.DSAPhysical {
			want = tp
		}
		err := golden.DSASelectionCheck(rowOf(r, got, want[r*k:(r+1)*k], space), eps)
		if !errors.Is(err, golden.ErrSelection) {
			t.Errorf("%s (row %d): accepted (%v)", name, r, err)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	r := 5 // sequence 2, row 1: 300 visible, shuffled pages
	reject("drop one index", r, golden.DSANegDropIndex(tl[r*k:(r+1)*k]), golden.DSALogical)
	reject("duplicate an index", r, golden.DSANegDuplicateIndex(tl[r*k:(r+1)*k]), golden.DSALogical)
	reject("off by one", r, golden.DSANegOffByOne(tl[r*k:(r+1)*k]), golden.DSALogical)
	reject("off by one (physical)", r, golden.DSANegOffByOne(tp[r*k:(r+1)*k]), golden.DSAPhysical)
	reject("logical where physical is expected", r, tl[r*k:(r+1)*k], golden.DSAPhysical)

	for _, neg := range []struct {
		name string
		f    func([]float64, []int32, []int32, []golden.DSARowInfo, []uint8, []float32, []byte, []int32, []int32, golden.DSAIndexerDims) error
	}{
		{"ignore the causal window", golden.DSAIndexerIgnoreCausal},
		{"ReLU after the weight", golden.DSAIndexerReLUAfterWeight},
		{"omit the k scale", golden.DSAIndexerNoKScale},
	} {
		nl, ntl, _, _ := dc.run(t, neg.f)
		if dsaSameF64(nl, logits) < 0 {
			t.Errorf("%s: logits equal the golden", neg.name)
		}
		rejected := 0
		for r := range rows {
			err := golden.DSASelectionCheck(rowOf(r, ntl[r*k:(r+1)*k], tl[r*k:(r+1)*k], golden.DSALogical), eps)
			if errors.Is(err, golden.ErrSelection) {
				rejected++
			}
		}
		t.Logf("%s: %d of %d rows rejected", neg.name, rejected, rows)
		if rejected == 0 {
			t.Errorf("%s: no row rejected", neg.name)
		}
	}

	c := newDSAAttnCase(13, 10, 4, 64, 16, 6, 40)
	out, lse := c.run(t, golden.DSASparseAttention, golden.DSADefaultSMScale)
	for _, neg := range []struct {
		name string
		f    func(out, lse []float64, qn, qp, ckv, kpe []float32, idx []int32, d golden.DSAAttentionDims, s float64) error
	}{
		{"-1 as slot 0", golden.DSASparseAttentionMinusOneAsSlot0},
		{"lse in base 2", golden.DSASparseAttentionLSEBase2},
		{"sm_scale 1/sqrt(576)", golden.DSASparseAttentionScale576},
		{"read a canary page", func(out, lse []float64, qn, qp, ckv, kpe []float32, idx []int32, d golden.DSAAttentionDims, s float64) error {
			canary := int32(-1)
			for s := range d.P * d.PS {
				if x := ckv[s*d.DC]; x != x {
					canary = int32(s)
					break
				}
			}
			return golden.DSASparseAttentionReadCanary(out, lse, qn, qp, ckv, kpe, idx, d, s, canary)
		}},
	} {
		no, nl := c.run(t, neg.f, golden.DSADefaultSMScale)
		if e, f := dsaMaxDiff(no, out), dsaMaxDiff(nl, lse); !(e > 1e-3 || f > 1e-3) {
			t.Errorf("%s: out diff %g, lse diff %g: not distinguishable", neg.name, e, f)
		} else {
			t.Logf("%s: out diff %g, lse diff %g", neg.name, e, f)
		}
	}
}

func BenchmarkDSAIndexerDecode(b *testing.B) {
	for _, l := range []int{8192, 40960} {
		b.Run(map[int]string{8192: "L8192", 40960: "L40960"}[l], func(b *testing.B) {
			dc := newDSACase(b, 1, 1, 64, 128, 2048, []int{l}, false, false, golden.DSAScaleUE8M0)
			logits, tl, tp, info := make([]float64, dc.d.MAXB*64), make([]int32, 2048), make([]int32, 2048), make([]golden.DSARowInfo, 1)
			b.SetBytes(int64(l * (128 + 4))) // index-cache bytes scored
			b.ReportAllocs()
			cpu0 := cpuSeconds()
			for b.Loop() {
				if err := golden.DSAIndexer(logits, tl, tp, info, dc.q, dc.w, dc.cache, dc.bt, dc.lens, dc.d); err != nil {
					b.Fatal(err)
				}
			}
			reportDSARates(b, float64(l), cpu0)
		})
	}
}

// BenchmarkDSAIndexCache quantizes 40960 key rows of 128 bf16 values
// (ue8m0) into a 640-block index cache, as the suite's 40960-token
// indexer cases do; the bytes are the bf16 keys read.
func BenchmarkDSAIndexCache(b *testing.B) {
	const t, di = 40960, 128
	r := rand.New(rand.NewPCG(14, 3))
	k := make([]float32, t*di)
	for i := range k {
		k[i] = dsaBF16(r.NormFloat64())
	}
	slots := make([]int32, t)
	for i, s := range r.Perm(t) {
		slots[i] = int32(s)
	}
	dims := golden.DSACacheDims{T: t, DI: di, NB: t / golden.DSABlockSize}
	cache := make([]byte, dims.NB*golden.DSABlockBytes(di))
	b.SetBytes(int64(t * di * 2))
	b.ReportAllocs()
	for b.Loop() {
		if err := golden.DSAIndexCache(cache, k, slots, cache, dims, golden.DSAScaleUE8M0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDSASparseAttention runs full rows of 2048 selected slots (512 +
// 64 dims) at the TP-8 rank's 16 heads (4 rows) and the whole model's 128
// heads (the suite's sa-h128 case: 2 rows).
func BenchmarkDSASparseAttention(b *testing.B) {
	for _, s := range []struct{ t, h int }{{4, 16}, {2, 128}} {
		b.Run(fmt.Sprintf("T%dxH%d", s.t, s.h), func(b *testing.B) {
			const k = 2048
			c := newDSAAttnCase(2, s.t, s.h, 512, 64, 40, k)
			for i := range c.idx { // full rows, no NaN reads: every slot distinct and valid
				c.idx[i] = int32(i % k)
			}
			for i := range c.ckv {
				if c.ckv[i] != c.ckv[i] {
					c.ckv[i] = 0.5
				}
			}
			for i := range c.kpe {
				if c.kpe[i] != c.kpe[i] {
					c.kpe[i] = 0.5
				}
			}
			out, lse := make([]float64, s.t*s.h*512), make([]float64, s.t*s.h)
			b.SetBytes(int64(s.t * k * (512 + 64) * 2)) // bf16 ckv+kpe rows read
			b.ReportAllocs()
			cpu0 := cpuSeconds()
			for b.Loop() {
				if err := golden.DSASparseAttention(out, lse, c.qn, c.qp, c.ckv, c.kpe, c.idx, c.d, golden.DSADefaultSMScale); err != nil {
					b.Fatal(err)
				}
			}
			reportDSARates(b, float64(s.t*k), cpu0)
		})
	}
}

// dsaMaxDiff is the largest |a-b| over elements whose bits differ (+Inf
// where one is NaN or the infinities differ).
func dsaMaxDiff(a, b []float64) float64 {
	var m float64
	for i := range a {
		if math.Float64bits(a[i]) == math.Float64bits(b[i]) {
			continue
		}
		d := math.Abs(a[i] - b[i])
		if d != d {
			d = math.Inf(1)
		}
		m = max(m, d)
	}
	return m
}

// reportDSARates reports tokens per wall second and, where the CPU time is
// known, per CPU second and CPU ms per op (the per-core figures: run with
// -cpu 1 on a shared machine).
func reportDSARates(b *testing.B, tokensPerOp, cpu0 float64) {
	n := float64(b.N)
	b.ReportMetric(tokensPerOp*n/b.Elapsed().Seconds(), "tokens/s")
	if cpu := cpuSeconds() - cpu0; cpu > 0 {
		b.ReportMetric(tokensPerOp*n/cpu, "tokens/cpu-s")
		b.ReportMetric(cpu*1e3/n, "cpu-ms/op")
	}
}

func TestDSACausalPrefillSpansHand(t *testing.T) {
	ks := make([]int32, 6)
	ke := make([]int32, 6)
	s, err := golden.DSACausalPrefillSpans(ks, ke, []int32{3, 0, 70}, []int32{2, 3, 1})
	if err != nil {
		t.Fatal(err)
	}
	if s != 79 || !slices.Equal(ks, []int32{0, 0, 5, 5, 5, 8}) || !slices.Equal(ke, []int32{4, 5, 6, 7, 8, 79}) {
		t.Fatalf("spans S=%d ks=%v ke=%v", s, ks, ke)
	}
	if _, err := golden.DSACausalPrefillSpans(ks, ke, []int32{-1, 0, 0}, []int32{2, 3, 1}); !errors.Is(err, golden.ErrInvalidParams) {
		t.Errorf("negative ctx: %v", err)
	}
}

// The goldens do not depend on the worker count.
func TestDSAWorkers(t *testing.T) {
	dc := newDSACase(t, 41, 2, 16, 64, 32, []int{3000, 64, 700, 2}, true, false, golden.DSAScaleUE8M0)
	// One long sequence: its key chunks are scored in parallel.
	long := newDSACase(t, 43, 1, 8, 32, 64, []int{9000}, true, false, golden.DSAScaleUE8M0)
	c := newDSAAttnCase(42, 12, 8, 128, 32, 8, 96)
	run := func() (uint64, uint64) {
		l, tl, tp, info := dc.run(t, golden.DSAIndexer)
		ll, ltl, ltp, linfo := long.run(t, golden.DSAIndexer)
		out, lse := c.run(t, golden.DSASparseAttention, golden.DSADefaultSMScale)
		return checksum(l, out, lse, ll) ^ checksum(tl, tp, ltl, ltp), checksum(info) ^ checksum(linfo)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	a1, b1 := run()
	runtime.GOMAXPROCS(7)
	a7, b7 := run()
	if a1 != a7 || b1 != b7 {
		t.Error("results differ between GOMAXPROCS 1 and 7")
	}
}

func TestDSAMarginRefusals(t *testing.T) {
	// A shared page: sequence 1's first block is sequence 0's; with tau =
	// 0.5 most non-selected tokens need demoting, those of the shared block
	// included.
	sh := newDSACase(t, 43, 1, 8, 32, 8, []int{300, 200}, true, true, golden.DSAScaleUE8M0)
	k0, c0 := slices.Clone(sh.k), slices.Clone(sh.cache)
	_, err := golden.DSAIndexerMargin(sh.k, sh.slots, sh.cache, sh.cacheDims(), sh.f, sh.q, sh.w, sh.bt, sh.lens, sh.d, 0.5)
	if !errors.Is(err, golden.ErrInvalidParams) || !strings.Contains(err.Error(), "another row") {
		t.Errorf("shared page: %v", err)
	}
	if !slices.Equal(k0, sh.k) || !bytes.Equal(c0, sh.cache) {
		t.Error("shared page: inputs modified on error")
	}
	// tau = 1 puts kth - tau*A <= 0, below every score: impossible.
	z := newDSACase(t, 44, 1, 8, 32, 8, []int{100}, false, true, golden.DSAScaleUE8M0)
	if _, err := golden.DSAIndexerMargin(z.k, z.slots, z.cache, z.cacheDims(), z.f, z.q, z.w, z.bt, z.lens, z.d, 1); !errors.Is(err, golden.ErrInvalidParams) || !strings.Contains(err.Error(), "cannot lower") {
		t.Errorf("zero score: %v", err)
	}
	// Keys near the 1e-4 floor cannot be halved without changing codes.
	f := newDSACase(t, 45, 1, 8, 32, 8, []int{100}, false, true, golden.DSAScaleUE8M0)
	for i := range f.k {
		f.k[i] = dsaBF16(float64(f.k[i]) * 1e-4 / 64)
	}
	if err := golden.DSAIndexCache(f.cache, f.k, f.slots, f.cache, f.cacheDims(), f.f); err != nil {
		t.Fatal(err)
	}
	if _, err := golden.DSAIndexerMargin(f.k, f.slots, f.cache, f.cacheDims(), f.f, f.q, f.w, f.bt, f.lens, f.d, 1.0/64); !errors.Is(err, golden.ErrInvalidParams) {
		t.Errorf("floor: %v", err)
	}
}

// TestDSAIndexCacheOneRounding: the issue-24 example (k = 1.03125 in a
// row of amax 2.75, fp32 scale: fl32(k/sc) = 168 is an e4m3 midpoint, k/sc
// = 168.0000036 is not) gives code 0x72 (160) by float32 division and
// 0x73 (176) rounded once; ue8m0 caches never differ; fp32 caches differ
// only in codes, never in scales or untouched bytes.
func TestDSAIndexCacheOneRounding(t *testing.T) {
	dims := golden.DSACacheDims{T: 1, DI: 2, NB: 1}
	k := []float32{2.75, 1.03125}
	sm := []int32{5}
	cache := make([]byte, golden.DSABlockBytes(dims.DI))
	div, once := make([]byte, len(cache)), make([]byte, len(cache))
	if err := golden.DSAIndexCache(div, k, sm, cache, dims, golden.DSAScaleFP32); err != nil {
		t.Fatal(err)
	}
	if err := golden.DSAIndexCacheOneRounding(once, k, sm, cache, dims, golden.DSAScaleFP32); err != nil {
		t.Fatal(err)
	}
	cd, sc := golden.DSACacheSlot(div, 5, dims.DI)
	co, _ := golden.DSACacheSlot(once, 5, dims.DI)
	if q := float64(k[1]) / float64(sc); !(q > 168 && k[1]/sc == 168) {
		t.Fatalf("k/sc = %.9g, fl32 %v: not the midpoint case", q, k[1]/sc)
	}
	if cd[1] != 0x72 || co[1] != 0x73 || cd[0] != co[0] {
		t.Errorf("codes: division % x, one rounding % x; want [x 72] and [x 73]", cd, co)
	}

	// A larger random cache: ue8m0 identical, fp32 differing in a few codes.
	dims = golden.DSACacheDims{T: 400, DI: 64, NB: 8}
	r := rand.New(rand.NewPCG(24, 1))
	k = make([]float32, dims.T*dims.DI)
	for i := range k {
		k[i] = bf16(r.NormFloat64())
	}
	sm = make([]int32, dims.T)
	for i := range sm {
		sm[i] = int32(i + 30)
	}
	cache = make([]byte, dims.NB*golden.DSABlockBytes(dims.DI))
	div, once = make([]byte, len(cache)), make([]byte, len(cache))
	for _, f := range []golden.DSAScaleFmt{golden.DSAScaleUE8M0, golden.DSAScaleFP32} {
		if err := golden.DSAIndexCache(div, k, sm, cache, dims, f); err != nil {
			t.Fatal(err)
		}
		if err := golden.DSAIndexCacheOneRounding(once, k, sm, cache, dims, f); err != nil {
			t.Fatal(err)
		}
		n := 0
		for i := range div {
			if div[i] == once[i] {
				continue
			}
			n++
			o := i % golden.DSABlockBytes(dims.DI)
			if o >= golden.DSABlockSize*dims.DI || int(div[i])-int(once[i]) != 1 && int(once[i])-int(div[i]) != 1 {
				t.Errorf("fmt %d: byte %d differs by more than one code or outside the codes: %#x vs %#x", f, i, div[i], once[i])
			}
		}
		t.Logf("fmt %d: %d of %d codes differ", f, n, dims.T*dims.DI)
		if f == golden.DSAScaleUE8M0 && n != 0 || f == golden.DSAScaleFP32 && n == 0 {
			t.Errorf("fmt %d: %d codes differ", f, n)
		}
	}
}
