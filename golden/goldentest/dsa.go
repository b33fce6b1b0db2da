package goldentest

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/goldset/goldset/golden"
)

// DSA implementation signatures (those of package golden).
type (
	DSAIndexCacheFunc      func(dst []byte, k []float32, slotMapping []int32, cache []byte, dims golden.DSACacheDims, f golden.DSAScaleFmt) error
	DSAIndexerFunc         func(logits []float64, topkLogical, topkPhysical []int32, info []golden.DSARowInfo, q []uint8, weights []float32, cache []byte, blockTable, seqLens []int32, dims golden.DSAIndexerDims) error
	DSAIndexerRaggedFunc   func(logits []float64, topk []int32, info []golden.DSARowInfo, q []uint8, weights []float32, kv []uint8, kvScale []float32, ks, ke []int32, dims golden.DSARaggedDims) error
	DSASparseAttentionFunc func(out, lse []float64, qNope, qPe, ckv, kpe []float32, indices []int32, dims golden.DSAAttentionDims, smScale float64) error
	DSABlockHeaderFunc     func(dst []int32, blockTable, seqLens []int32, b, maxb, nb, ps int) error
)

// sameBits returns the first index where got and want differ in their
// bits, or -1: the DSA suites compare bit for bit, since ops.md §8 fixes
// every summation order (and the indexer's dots are exact in any order).
func sameBits(got, want []float64) int {
	for i := range want {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			return i
		}
	}
	return -1
}

// bf16 rounds x to a bfloat16 value (to nearest even; inputs are finite).
func bf16(x float64) float32 {
	b := math.Float32bits(float32(x))
	b += 0x7fff + (b>>16)&1
	return math.Float32frombits(b &^ 0xffff)
}

// e4m3Code draws a random finite e4m3 code near N(0, sd) by the reference
// encoder.
func e4m3Code(r *rand.Rand, sd float64) uint8 { return naiveE4M3Encode(r.NormFloat64() * sd) }

// TestDSAIndexCache checks impl against the reference writer: both scale
// formats, rows below the 1e-4 floor, zero rows, saturating rows, skipped
// negative slots, random canary bytes that must survive, and the errors.
func TestDSAIndexCache(t testing.TB, impl DSAIndexCacheFunc) {
	t.Helper()
	r := rand.New(rand.NewPCG(3, 4))
	const di, nb = 128, 5
	tn := 200
	k := make([]float32, tn*di)
	for i := range tn {
		sd := math.Exp2(float64(r.IntN(40) - 20))
		switch i % 7 {
		case 0:
			sd = 1e-7 // below the floor
		case 1:
			sd = 0
		}
		for d := range di {
			k[i*di+d] = bf16(r.NormFloat64() * sd)
		}
		if i%7 == 2 { // fp32 scale: x/sc rounds above 448 and saturates
			k[i*di] = bf16(3.0078125)
		}
	}
	slots := make([]int32, tn)
	perm := r.Perm(nb * 64)
	for i := range slots {
		slots[i] = int32(perm[i])
		if i%11 == 3 {
			slots[i] = -1 - int32(i)
		}
	}
	canary := make([]byte, nb*golden.DSABlockBytes(di))
	for i := range canary {
		canary[i] = byte(r.Uint32())
	}
	d := golden.DSACacheDims{T: tn, DI: di, NB: nb}
	for _, f := range []golden.DSAScaleFmt{golden.DSAScaleUE8M0, golden.DSAScaleFP32} {
		sum := checksum(k) ^ checksum(slots) ^ checksum(canary)
		dst := make([]byte, len(canary))
		if err := impl(dst, k, slots, canary, d, f); err != nil {
			t.Errorf("dsa_index_cache fmt %d: %v", f, err)
			continue
		}
		if checksum(k)^checksum(slots)^checksum(canary) != sum {
			t.Errorf("dsa_index_cache fmt %d: inputs modified", f)
		}
		if want := naiveIndexCache(canary, k, slots, di, f == golden.DSAScaleUE8M0); !bytes.Equal(dst, want) {
			t.Errorf("dsa_index_cache fmt %d: bytes differ from the reference", f)
		}
	}
	small := golden.DSACacheDims{T: 2, DI: 4, NB: 1}
	cache := make([]byte, golden.DSABlockBytes(4))
	for _, e := range []struct {
		slots []int32
		want  error
	}{{[]int32{64, 0}, golden.ErrOutOfRange}, {[]int32{3, 3}, golden.ErrInvalidParams}} {
		dst := bytes.Repeat([]byte{7}, len(cache))
		if err := impl(dst, k[:8], e.slots, cache, small, golden.DSAScaleUE8M0); !errors.Is(err, e.want) {
			t.Errorf("dsa_index_cache slots %v: err %v, want %v", e.slots, err, e.want)
		}
		if !bytes.Equal(dst, bytes.Repeat([]byte{7}, len(cache))) {
			t.Errorf("dsa_index_cache slots %v: dst written on error", e.slots)
		}
	}
}

// dsaCase is a paged indexer case: unused slots and blocks hold NaN
// canaries (codes 0xff, scale NaN), table entries past ceil(L/64) are -1
// or NB+7, and with shared set sequence 1 shares sequence 0's first block.
type dsaCase struct {
	label    string
	d        golden.DSAIndexerDims
	q        []uint8
	w        []float32
	cache    []byte
	bt, lens []int32
}

func newDSACase(r *rand.Rand, label string, nn, hi, di, k int, lens []int, shared, allCodes bool) *dsaCase {
	maxb, used := 0, 0
	for _, l := range lens {
		maxb = max(maxb, (l+63)/64)
		used += (l + 63) / 64
	}
	maxb++
	nb := used + 3
	c := &dsaCase{label: label, d: golden.DSAIndexerDims{B: len(lens), NN: nn, HI: hi, DI: di, NB: nb, MAXB: maxb, K: k}}
	c.cache = bytes.Repeat([]byte{0xff}, nb*golden.DSABlockBytes(di))
	perm := r.Perm(nb)
	c.bt = make([]int32, len(lens)*maxb)
	c.lens = make([]int32, len(lens))
	next := 0
	var kRows []float32
	var slots []int32
	seen := map[int32]bool{}
	for b, l := range lens {
		c.lens[b] = int32(l)
		for i := range maxb {
			switch {
			case i >= (l+63)/64:
				c.bt[b*maxb+i] = []int32{-1, int32(nb + 7)}[i%2]
			case shared && b == 1 && i == 0 && lens[0] >= 64:
				c.bt[b*maxb] = c.bt[0]
			default:
				c.bt[b*maxb+i] = int32(perm[next])
				next++
			}
		}
		for pos := range l {
			s := c.bt[b*maxb+pos/64]*64 + int32(pos%64)
			if seen[s] {
				continue
			}
			seen[s] = true
			slots = append(slots, s)
			sd := math.Exp2(float64(r.IntN(12) - 6))
			for range di {
				kRows = append(kRows, bf16(r.NormFloat64()*sd))
			}
		}
	}
	c.cache = naiveIndexCache(c.cache, kRows, slots, di, true)
	if allCodes { // every finite code, +-448 and subnormals included
		blk := golden.DSABlockBytes(di)
		for _, s := range slots {
			for e := range di {
				x := uint8(r.Uint32())
				if x&0x7f == 0x7f {
					x = 0x7e
				}
				c.cache[int(s)/64*blk+int(s)%64*di+e] = x
			}
		}
	}
	rows := len(lens) * nn
	c.q = make([]uint8, rows*hi*di)
	for i := range c.q {
		c.q[i] = e4m3Code(r, 4)
		if allCodes {
			if c.q[i] = uint8(r.Uint32()); c.q[i]&0x7f == 0x7f {
				c.q[i] = 0xfe
			}
		}
	}
	c.w = make([]float32, rows*hi)
	for i := range c.w {
		c.w[i] = float32(r.NormFloat64() / 8)
	}
	return c
}

// TestDSAIndexer checks impl on next_n 1 and 2, L in {1, 63, 64, 65, ...},
// K above and below L, shuffled and shared pages, the fp32-free e4m3 code
// range at 64 x 128, canary slots, an all-tied row, the errors and (unless
// testing.Short) L = 40960. Selections must equal the reference exactly.
func TestDSAIndexer(t testing.TB, impl DSAIndexerFunc) {
	t.Helper()
	r := rand.New(rand.NewPCG(14, 8))
	cases := []*dsaCase{
		newDSACase(r, "nn1", 1, 8, 32, 16, []int{1, 63, 64, 65, 130}, false, false),
		newDSACase(r, "nn2 shared", 2, 8, 32, 16, []int{2, 63, 64, 65, 200}, true, false),
		newDSACase(r, "K above L", 1, 8, 32, 300, []int{100, 299, 300, 301}, false, false),
		newDSACase(r, "64x128 all codes", 2, 64, 128, 64, []int{200, 129}, false, true),
	}
	tied := newDSACase(r, "all tied", 1, 4, 16, 32, []int{100}, false, false)
	for s := range tied.d.NB * 64 {
		blk := golden.DSABlockBytes(16)
		for e := range 16 {
			if tied.cache[s/64*blk+s%64*16+e] != 0xff {
				tied.cache[s/64*blk+s%64*16+e] = 0x38 // 1.0
			}
		}
	}
	for i := range tied.q {
		tied.q[i] = 0x38
	}
	for i := range tied.w {
		tied.w[i] = 0.25
	}
	// Tied keys share one scale so that every score is equal.
	for s := range 100 {
		slot := int(tied.bt[s/64])*64 + s%64
		off := slot/64*golden.DSABlockBytes(16) + 64*16 + 4*(slot%64)
		copy(tied.cache[off:off+4], []byte{0, 0, 0x80, 0x3b}) // 2^-8
	}
	cases = append(cases, tied)
	// One sequence of several key chunks (an implementation may score its
	// chunks in parallel).
	cases = append(cases, newDSACase(r, "L5000 nn2", 2, 8, 32, 128, []int{5000}, false, false))
	if !testing.Short() {
		cases = append(cases, newDSACase(r, "L40960", 1, 64, 128, 2048, []int{40960}, false, false))
	}
	for _, c := range cases {
		d := c.d
		rows := d.B * d.NN
		width := d.MAXB * 64
		wl, wtl, wtp, winfo := naiveIndexer(c.q, c.w, c.cache, c.bt, c.lens, d)
		sum := checksum(c.q) ^ checksum(c.w) ^ checksum(c.cache) ^ checksum(c.bt, c.lens)
		logits, p1 := guarded(rows * width)
		tl, tp := make([]int32, rows*d.K), make([]int32, rows*d.K)
		info := make([]golden.DSARowInfo, rows)
		if err := impl(logits, tl, tp, info, c.q, c.w, c.cache, c.bt, c.lens, d); err != nil {
			t.Errorf("dsa_indexer %s: %v", c.label, err)
			continue
		}
		if checksum(c.q)^checksum(c.w)^checksum(c.cache)^checksum(c.bt, c.lens) != sum {
			t.Errorf("dsa_indexer %s: inputs modified", c.label)
		}
		if !p1() {
			t.Errorf("dsa_indexer %s: wrote outside logits", c.label)
		}
		if i := sameBits(logits, wl); i >= 0 {
			t.Errorf("dsa_indexer %s: logits[%d] = %v, want %v", c.label, i, logits[i], wl[i])
		}
		if !slices.Equal(tl, wtl) || !slices.Equal(tp, wtp) {
			t.Errorf("dsa_indexer %s: top-k differs from the reference", c.label)
		}
		for i := range info {
			g, w := info[i], winfo[i]
			if g.Visible != w.Visible || sameBits([]float64{g.Kth, g.Gap, g.A}, []float64{w.Kth, w.Gap, w.A}) >= 0 {
				t.Errorf("dsa_indexer %s: row %d info %+v, want %+v", c.label, i, g, w)
				break
			}
		}
	}
	c := cases[1]
	logits := make([]float64, c.d.B*c.d.NN*c.d.MAXB*64)
	for _, e := range []struct {
		mod  func(bt, lens []int32)
		want error
	}{
		{func(_, lens []int32) { lens[0] = 1 }, golden.ErrContextLen},
		{func(_, lens []int32) { lens[0] = int32(c.d.MAXB*64 + 1) }, golden.ErrContextLen},
		{func(bt, _ []int32) { bt[0] = int32(c.d.NB) }, golden.ErrOutOfRange},
	} {
		bt, lens := slices.Clone(c.bt), slices.Clone(c.lens)
		e.mod(bt, lens)
		if err := impl(logits, nil, nil, nil, c.q, c.w, c.cache, bt, lens, c.d); !errors.Is(err, e.want) {
			t.Errorf("dsa_indexer: err %v, want %v", err, e.want)
		}
	}
}

// TestDSAIndexerRagged checks impl on causal chunked-prefill windows
// (DSACausalPrefillSpans), an empty window and a bad one.
func TestDSAIndexerRagged(t testing.TB, impl DSAIndexerRaggedFunc) {
	t.Helper()
	r := rand.New(rand.NewPCG(9, 9))
	ctx, ql := []int32{3, 0, 70, 5}, []int32{2, 3, 1, 0}
	ks, ke := make([]int32, 6), make([]int32, 6)
	s, err := golden.DSACausalPrefillSpans(ks, ke, ctx, ql)
	if err != nil {
		t.Fatal(err)
	}
	ks = append(ks, 10) // an empty window
	ke = append(ke, 10)
	d := golden.DSARaggedDims{T: len(ks), HI: 8, DI: 32, S: s, K: 4}
	q := make([]uint8, d.T*d.HI*d.DI)
	for i := range q {
		q[i] = e4m3Code(r, 3)
	}
	w := make([]float32, d.T*d.HI)
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	kv := make([]uint8, d.S*d.DI)
	for i := range kv {
		kv[i] = e4m3Code(r, 50)
	}
	sc := make([]float32, d.S)
	for i := range sc {
		sc[i] = float32(math.Exp2(float64(r.IntN(10) - 12)))
	}
	wl, wt, wi := naiveRagged(q, w, kv, sc, ks, ke, d)
	logits, p := guarded(d.T * d.S)
	topk := make([]int32, d.T*d.K)
	info := make([]golden.DSARowInfo, d.T)
	if err := impl(logits, topk, info, q, w, kv, sc, ks, ke, d); err != nil {
		t.Fatalf("dsa_indexer ragged: %v", err)
	}
	if !p() {
		t.Error("dsa_indexer ragged: wrote outside logits")
	}
	if i := sameBits(logits, wl); i >= 0 {
		t.Errorf("dsa_indexer ragged: logits[%d] = %v, want %v", i, logits[i], wl[i])
	}
	if !slices.Equal(topk, wt) || !slices.Equal(info, wi) {
		t.Errorf("dsa_indexer ragged: top-k %v info %+v, want %v %+v", topk, info, wt, wi)
	}
	bad := slices.Clone(ks)
	bad[0] = ke[0] + 1
	if err := impl(logits, topk, info, q, w, kv, sc, bad, ke, d); !errors.Is(err, golden.ErrOutOfRange) {
		t.Errorf("dsa_indexer ragged ks > ke: err %v", err)
	}
}

// TestDSASparseAttention checks impl on rows with -1 padding anywhere,
// empty rows (out 0, lse -Inf), one-index rows (out is the V row), NaN in
// every unselected slot, and the index errors.
func TestDSASparseAttention(t testing.TB, impl DSASparseAttentionFunc) {
	t.Helper()
	r := rand.New(rand.NewPCG(11, 8))
	for _, sh := range []struct{ t, h, dc, dr, p, k int }{{10, 4, 64, 16, 6, 40}, {6, 16, 512, 64, 3, 128}} {
		d := golden.DSAAttentionDims{T: sh.t, H: sh.h, DC: sh.dc, DR: sh.dr, P: sh.p, PS: 64, K: sh.k}
		fill := func(n int) []float32 {
			x := make([]float32, n)
			for i := range x {
				x[i] = bf16(r.NormFloat64())
			}
			return x
		}
		qn, qp, ckv, kpe := fill(d.T*d.H*d.DC), fill(d.T*d.H*d.DR), fill(d.P*64*d.DC), fill(d.P*64*d.DR)
		idx := make([]int32, d.T*d.K)
		selected := map[int32]bool{}
		for row := range d.T {
			n := d.K - row%3
			switch row % 5 {
			case 3:
				n = 0
			case 4:
				n = 1
			}
			for i := range d.K {
				idx[row*d.K+i] = -1
			}
			slotPerm := r.Perm(d.P * 64)
			for i, at := range r.Perm(d.K)[:n] {
				idx[row*d.K+at] = int32(slotPerm[i])
				selected[int32(slotPerm[i])] = true
			}
		}
		nan := float32(math.NaN())
		for s := range d.P * 64 {
			if !selected[int32(s)] {
				for e := range d.DC {
					ckv[s*d.DC+e] = nan
				}
				for e := range d.DR {
					kpe[s*d.DR+e] = nan
				}
			}
		}
		wo, wl := naiveSparseAttention(qn, qp, ckv, kpe, idx, d, golden.DSADefaultSMScale)
		sum := checksum(qn, qp, ckv, kpe) ^ checksum(idx)
		out, p1 := guarded(len(wo))
		lse, p2 := guarded(len(wl))
		if err := impl(out, lse, qn, qp, ckv, kpe, idx, d, golden.DSADefaultSMScale); err != nil {
			t.Errorf("dsa_sparse_attention: %v", err)
			continue
		}
		if checksum(qn, qp, ckv, kpe)^checksum(idx) != sum {
			t.Error("dsa_sparse_attention: inputs modified")
		}
		if !p1() || !p2() {
			t.Error("dsa_sparse_attention: wrote outside out or lse")
		}
		if i := sameBits(out, wo); i >= 0 {
			t.Errorf("dsa_sparse_attention: out[%d] = %v, want %v", i, out[i], wo[i])
		}
		if i := sameBits(lse, wl); i >= 0 {
			t.Errorf("dsa_sparse_attention: lse[%d] = %v, want %v", i, lse[i], wl[i])
		}
		for row := 4; row < d.T; row += 5 { // one index: out is that V row bit for bit
			var s int32
			for _, x := range idx[row*d.K : (row+1)*d.K] {
				if x >= 0 {
					s = x
				}
			}
			for e := range d.H * d.DC {
				if out[row*d.H*d.DC+e] != float64(ckv[int(s)*d.DC+e%d.DC]) {
					t.Errorf("dsa_sparse_attention: one-index row %d is not the V row", row)
					break
				}
			}
		}
		for _, bad := range []int32{int32(d.P * 64), -2} {
			b := slices.Clone(idx)
			b[slices.IndexFunc(b, func(x int32) bool { return x >= 0 })] = bad
			if err := impl(out, lse, qn, qp, ckv, kpe, b, d, golden.DSADefaultSMScale); !errors.Is(err, golden.ErrOutOfRange) {
				t.Errorf("dsa_sparse_attention: index %d: err %v", bad, err)
			}
		}
		b := slices.Clone(idx)
		first := slices.IndexFunc(b, func(x int32) bool { return x >= 0 })
		second := first + 1 + slices.IndexFunc(b[first+1:d.K], func(x int32) bool { return x >= 0 })
		b[second] = b[first]
		if err := impl(out, lse, qn, qp, ckv, kpe, b, d, golden.DSADefaultSMScale); !errors.Is(err, golden.ErrInvalidParams) {
			t.Errorf("dsa_sparse_attention: repeated slot: err %v", err)
		}
	}
}

// TestDSABlockHeader checks impl on a hand case with a shared and an
// unreferenced block, and an out-of-range table entry.
func TestDSABlockHeader(t testing.TB, impl DSABlockHeaderFunc) {
	t.Helper()
	bt := []int32{4, 1, 3, 4, 0, -1}
	dst := make([]int32, 10)
	if err := impl(dst, bt, []int32{130, 70}, 2, 3, 5, 64); err != nil {
		t.Fatalf("block_header: %v", err)
	}
	if want := []int32{6, 64, 64, 64, 0, -1, 2, 128, 64, 0}; !slices.Equal(dst, want) {
		t.Errorf("block_header: %v, want %v", dst, want)
	}
	if err := impl(dst, []int32{4, 1, 5, 4, 0, -1}, []int32{130, 70}, 2, 3, 5, 64); !errors.Is(err, golden.ErrOutOfRange) {
		t.Errorf("block_header: table entry 5 of 5: err %v", err)
	}
}
