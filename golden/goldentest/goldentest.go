package goldentest

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"unsafe"

	"github.com/goldset/goldset/golden"
)

// Tol is the tolerance relative to the reference RMS for float outputs.
const Tol = 1e-12

// Implementation signatures (those of package golden).
type (
	MatmulFunc          func(dst []float64, a, b []float32, m, k, n int, bNK bool)
	SoftmaxFunc         func(dst, rowMax, rowSum []float64, x []float32, m, n int)
	ReshapeAndCacheFunc func(dstK, dstV, key, value, keyCache, valueCache []float32, slotMapping []int32, dims golden.CacheDims) error
	PagedAttentionFunc  func(out, lse []float64, q, kCache, vCache []float32, blockTables, contextLens []int32, dims golden.AttentionDims, scale float64) error
	SparseAttentionFunc func(out, lse []float64, q, kCache, vCache []float32, blockTables, contextLens, selected []int32, dims golden.AttentionDims, p golden.QuestParams, scale float64) error
	SelectBlocksFunc    func(selected []int32, scores []float64, contextLens []int32, dims golden.AttentionDims, p golden.QuestParams) (float64, bool, error)
)

const guard = 7

// guarded returns a slice of n elements inside NaN pads, and a check that
// the pads are untouched.
func guarded(n int) ([]float64, func() bool) {
	buf := make([]float64, n+2*guard)
	for i := range buf {
		buf[i] = math.Float64frombits(0x7ff8_dead_0000_0000 | uint64(i))
	}
	return buf[guard : guard+n : guard+n], func() bool {
		for i := range guard {
			j := len(buf) - 1 - i
			if math.Float64bits(buf[i]) != 0x7ff8_dead_0000_0000|uint64(i) ||
				math.Float64bits(buf[j]) != 0x7ff8_dead_0000_0000|uint64(j) {
				return false
			}
		}
		return true
	}
}

func guarded32(n int) ([]float32, func() bool) {
	buf := make([]float32, n+2*guard)
	for i := range buf {
		buf[i] = math.Float32frombits(0x7fc0_de00 | uint32(i))
	}
	return buf[guard : guard+n : guard+n], func() bool {
		for i := range guard {
			j := len(buf) - 1 - i
			if math.Float32bits(buf[i]) != 0x7fc0_de00|uint32(i) || math.Float32bits(buf[j]) != 0x7fc0_de00|uint32(j) {
				return false
			}
		}
		return true
	}
}

func checksum[E any](xs ...[]E) uint64 {
	h := fnv.New64a()
	for _, x := range xs {
		if len(x) > 0 {
			h.Write(unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), len(x)*int(unsafe.Sizeof(x[0]))))
		}
	}
	return h.Sum64()
}

// closeTo reports the first index where got and want differ by more than
// Tol times the RMS of want (NaN matches only NaN), or -1.
func closeTo(got, want []float64) int {
	var ss float64
	for _, w := range want {
		if !math.IsInf(w, 0) && w == w {
			ss += w * w
		}
	}
	rms := math.Max(math.Sqrt(ss/float64(max(1, len(want)))), 1e-300)
	for i := range want {
		g, w := got[i], want[i]
		switch {
		case w != w || g != g:
			if (w != w) != (g != g) {
				return i
			}
		case math.IsInf(w, 0):
			if g != w {
				return i
			}
		case !(math.Abs(g-w) <= Tol*rms):
			return i
		}
	}
	return -1
}

func randF32(r *rand.Rand, n int, sd float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * sd)
	}
	return x
}

// TestMatmul checks impl on GEMV, odd and tile-straddling shapes, both
// layouts.
func TestMatmul(t testing.TB, impl MatmulFunc) {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 11))
	for _, s := range [][3]int{{1, 1, 1}, {1, 64, 781}, {7, 129, 5}, {3, 1000, 33}, {2, 0, 3}, {0, 4, 4}} {
		m, k, n := s[0], s[1], s[2]
		a := randF32(r, m*k, 1)
		b := randF32(r, k*n, 1/math.Sqrt(float64(max(k, 1))))
		want := make([]float64, m*n)
		for i := range m {
			for j := range n {
				var acc float64
				for p := range k {
					acc += float64(a[i*k+p]) * float64(b[p*n+j])
				}
				want[i*n+j] = acc
			}
		}
		for _, nk := range []bool{false, true} {
			bb := b
			if nk {
				bb = make([]float32, k*n)
				for p := range k {
					for j := range n {
						bb[j*k+p] = b[p*n+j]
					}
				}
			}
			sum := checksum(a, bb)
			dst, pads := guarded(m * n)
			impl(dst, a, bb, m, k, n, nk)
			if checksum(a, bb) != sum {
				t.Errorf("matmul %v bNK=%v: inputs modified", s, nk)
			}
			if !pads() {
				t.Errorf("matmul %v bNK=%v: wrote outside dst", s, nk)
			}
			if i := closeTo(dst, want); i >= 0 {
				t.Errorf("matmul %v bNK=%v: dst[%d] = %v, want %v", s, nk, i, dst[i], want[i])
			}
		}
	}
}

// TestSoftmax checks impl on normal rows, +-1e4 logits, near-fp16-max
// logits, a masked first half and a fully masked row.
func TestSoftmax(t testing.TB, impl SoftmaxFunc) {
	t.Helper()
	r := rand.New(rand.NewPCG(2, 22))
	for _, n := range []int{1, 5, 781, 4096} {
		m := 5
		x := randF32(r, m*n, 2)
		for j := range n {
			x[n+j] = float32(r.Float64()*2e4 - 1e4)
			x[2*n+j] = float32(65504 - r.Float64()*30)
			if j < n/2 || n == 1 {
				x[3*n+j] = float32(math.Inf(-1))
			}
			x[4*n+j] = float32(math.Inf(-1))
		}
		want := make([]float64, m*n)
		wmax, wsum := make([]float64, m), make([]float64, m)
		for i := range m {
			mx := math.Inf(-1)
			for _, v := range x[i*n : (i+1)*n] {
				mx = math.Max(mx, float64(v))
			}
			wmax[i] = mx
			if math.IsInf(mx, -1) {
				continue
			}
			for _, v := range x[i*n : (i+1)*n] {
				wsum[i] += math.Exp(float64(v) - mx)
			}
			for j, v := range x[i*n : (i+1)*n] {
				want[i*n+j] = math.Exp(float64(v)-mx) / wsum[i]
			}
		}
		sum := checksum(x)
		dst, p1 := guarded(m * n)
		rmax, p2 := guarded(m)
		rsum, p3 := guarded(m)
		impl(dst, rmax, rsum, x, m, n)
		if checksum(x) != sum {
			t.Errorf("softmax n=%d: input modified", n)
		}
		if !p1() || !p2() || !p3() {
			t.Errorf("softmax n=%d: wrote outside an output", n)
		}
		for _, c := range []struct {
			name      string
			got, want []float64
		}{{"y", dst, want}, {"rowMax", rmax, wmax}, {"rowSum", rsum, wsum}} {
			// Rows have very different scales: compare row by row for y.
			if c.name == "y" {
				for i := range m {
					if j := closeTo(c.got[i*n:(i+1)*n], c.want[i*n:(i+1)*n]); j >= 0 {
						t.Errorf("softmax n=%d row %d: y[%d] = %v, want %v", n, i, j, c.got[i*n+j], c.want[i*n+j])
					}
				}
				continue
			}
			for i := range m {
				if j := closeTo(c.got[i:i+1], c.want[i:i+1]); j >= 0 {
					t.Errorf("softmax n=%d: %s[%d] = %v, want %v", n, c.name, i, c.got[i], c.want[i])
				}
			}
		}
	}
}

// TestReshapeAndCache checks impl with all-negative slots, slot 0, the
// last slot, random permutations, NaN sentinels with payloads in the
// caches (compared bit for bit) and an out-of-range slot.
func TestReshapeAndCache(t testing.TB, impl ReshapeAndCacheFunc) {
	t.Helper()
	r := rand.New(rand.NewPCG(3, 33))
	dims := golden.CacheDims{T: 24, Hkv: 2, D: 5, NB: 4, BS: 8}
	row := dims.Hkv * dims.D
	n := dims.NB * dims.BS * row
	kc, vc := make([]float32, n), make([]float32, n)
	for i := range kc {
		kc[i] = math.Float32frombits(0x7fa0_0000 | uint32(i))
		vc[i] = math.Float32frombits(0xffa0_0000 | uint32(i))
	}
	key, val := randF32(r, dims.T*row, 1), randF32(r, dims.T*row, 1)
	perm := r.Perm(dims.NB * dims.BS)
	random := make([]int32, dims.T)
	for i := range random {
		random[i] = int32(perm[i])
		if i%4 == 1 {
			random[i] = []int32{-1, -7, math.MinInt32}[i%3]
		}
	}
	for _, slots := range [][]int32{{}, {-1, -7, math.MinInt32}, {0}, {int32(dims.NB*dims.BS - 1), 0, 8, 7}, random} {
		wk, wv := slices.Clone(kc), slices.Clone(vc)
		for t, s := range slots {
			if s >= 0 {
				copy(wk[int(s)*row:(int(s)+1)*row], key[t*row:(t+1)*row])
				copy(wv[int(s)*row:(int(s)+1)*row], val[t*row:(t+1)*row])
			}
		}
		sum := checksum(key, val, kc, vc) ^ checksum(slots)
		dk, pk := guarded32(n)
		dv, pv := guarded32(n)
		if err := impl(dk, dv, key, val, kc, vc, slots, dims); err != nil {
			t.Errorf("reshape_and_cache %v: %v", slots, err)
			continue
		}
		if checksum(key, val, kc, vc)^checksum(slots) != sum {
			t.Errorf("reshape_and_cache %v: inputs modified", slots)
		}
		if !pk() || !pv() {
			t.Errorf("reshape_and_cache %v: wrote outside dst", slots)
		}
		if checksum(dk) != checksum(wk) || checksum(dv) != checksum(wv) {
			t.Errorf("reshape_and_cache %v: caches differ bitwise from the reference", slots)
		}
	}
	dk, dv := make([]float32, n), make([]float32, n)
	if err := impl(dk, dv, key, val, kc, vc, []int32{int32(dims.NB * dims.BS)}, dims); !errors.Is(err, golden.ErrOutOfRange) {
		t.Errorf("reshape_and_cache: slot NB*BS: err %v, want ErrOutOfRange", err)
	}
}

// attnCase is a hostile random case: NaN in all non-token slots and in
// unused blocks, -1 / NB+3 in unused table columns, shuffled and shared
// physical blocks.
type attnCase struct {
	dims      golden.AttentionDims
	q, kc, vc []float32
	bt, cl    []int32
	scale     float64
	nbs       []int
	label     string
}

func newCase(r *rand.Rand, hq, hkv, d, bs int, lens []int, share bool) *attnCase {
	maxb := 1
	used := 0
	nbs := make([]int, len(lens))
	for i, l := range lens {
		nbs[i] = (l + bs - 1) / bs
		maxb = max(maxb, nbs[i])
		used += nbs[i]
	}
	maxb++
	c := &attnCase{nbs: nbs, scale: 1 / math.Sqrt(float64(d)),
		label: fmt.Sprintf("Hq=%d Hkv=%d D=%d BS=%d L=%v", hq, hkv, d, bs, lens)}
	c.dims = golden.AttentionDims{B: len(lens), Hq: hq, Hkv: hkv, D: d, NB: used + 2, BS: bs, MAXB: maxb}
	c.q = randF32(r, len(lens)*hq*d, 1)
	n := c.dims.NB * bs * hkv * d
	c.kc, c.vc = make([]float32, n), make([]float32, n)
	for i := range c.kc {
		c.kc[i], c.vc[i] = float32(math.NaN()), float32(math.NaN())
	}
	perm := r.Perm(c.dims.NB)
	c.bt = make([]int32, len(lens)*maxb)
	c.cl = make([]int32, len(lens))
	row := hkv * d
	next := 0
	for s, l := range lens {
		c.cl[s] = int32(l)
		for i := range maxb {
			if i >= nbs[s] {
				c.bt[s*maxb+i] = []int32{-1, int32(c.dims.NB + 3)}[i%2]
				continue
			}
			if share && s > 0 && i < nbs[0]-1 && i < nbs[s]-1 { // share full blocks with sequence 0
				c.bt[s*maxb+i] = c.bt[i]
				continue
			}
			p := perm[next]
			next++
			c.bt[s*maxb+i] = int32(p)
			for off := 0; off < bs && i*bs+off < l; off++ {
				for e := range row {
					c.kc[(p*bs+off)*row+e] = float32(r.NormFloat64())
					c.vc[(p*bs+off)*row+e] = float32(r.NormFloat64())
				}
			}
		}
	}
	return c
}

// refAttend is gather-then-attend for head h of sequence b over blocks.
func (c *attnCase) refAttend(b, h int, blocks []int) ([]float64, float64) {
	dm := c.dims
	kvh := h / (dm.Hq / dm.Hkv)
	var s []float64
	var rowsV [][]float32
	for _, i := range blocks {
		p := int(c.bt[b*dm.MAXB+i])
		for off := 0; off < dm.BS && i*dm.BS+off < int(c.cl[b]); off++ {
			o := ((p*dm.BS+off)*dm.Hkv + kvh) * dm.D
			var dot float64
			for e := range dm.D {
				dot += float64(c.q[(b*dm.Hq+h)*dm.D+e]) * float64(c.kc[o+e])
			}
			s = append(s, c.scale*dot)
			rowsV = append(rowsV, c.vc[o:o+dm.D])
		}
	}
	mx := slices.Max(s)
	var den float64
	for j := range s {
		s[j] = math.Exp(s[j] - mx)
		den += s[j]
	}
	out := make([]float64, dm.D)
	for j, v := range rowsV {
		for e := range out {
			out[e] += s[j] * float64(v[e]) / den
		}
	}
	return out, mx + math.Log(den)
}

func attnCases(r *rand.Rand, long bool) []*attnCase {
	var cs []*attnCase
	for _, g := range []int{1, 4, 5, 8} {
		cs = append(cs, newCase(r, 2*g, 2, 16, 16, []int{1, 15, 16, 17, 63, 64, 65, 201}, false))
	}
	cs = append(cs, newCase(r, 4, 1, 3, 4, []int{9, 8}, true))         // tiny D, shared blocks
	cs = append(cs, newCase(r, 8, 2, 128, 128, []int{129, 513}, true)) // Qwen-like head
	// Needle: one key dominates, in the first block and in the last partial one.
	nd := newCase(r, 4, 1, 32, 16, []int{40, 40}, false)
	for s, tok := range []int{3, 37} {
		p := int(nd.bt[s*nd.dims.MAXB+tok/16])
		o := (p*16 + tok%16) * 32
		for e := range 32 {
			nd.kc[o+e] = nd.q[s*4*32+e] * 8
		}
	}
	cs = append(cs, nd)
	if long {
		cs = append(cs, newCase(r, 4, 1, 64, 128, []int{40960}, false))
	}
	return cs
}

func (c *attnCase) refPaged() (out, lse []float64) {
	dm := c.dims
	out = make([]float64, dm.B*dm.Hq*dm.D)
	lse = make([]float64, dm.B*dm.Hq)
	for b := range dm.B {
		blocks := make([]int, c.nbs[b])
		for i := range blocks {
			blocks[i] = i
		}
		for h := range dm.Hq {
			o, l := c.refAttend(b, h, blocks)
			copy(out[(b*dm.Hq+h)*dm.D:], o)
			lse[b*dm.Hq+h] = l
		}
	}
	return
}

func (c *attnCase) checkOut(t testing.TB, name string, run func(out, lse []float64) error, wantOut, wantLSE []float64) {
	t.Helper()
	sum := checksum(c.q, c.kc, c.vc) ^ checksum(c.bt, c.cl)
	out, p1 := guarded(len(wantOut))
	lse, p2 := guarded(len(wantLSE))
	if err := run(out, lse); err != nil {
		t.Errorf("%s %s: %v", name, c.label, err)
		return
	}
	if checksum(c.q, c.kc, c.vc)^checksum(c.bt, c.cl) != sum {
		t.Errorf("%s %s: inputs modified", name, c.label)
	}
	if !p1() || !p2() {
		t.Errorf("%s %s: wrote outside out or lse", name, c.label)
	}
	if i := closeTo(out, wantOut); i >= 0 {
		t.Errorf("%s %s: out[%d] = %v, want %v", name, c.label, i, out[i], wantOut[i])
	}
	if i := closeTo(lse, wantLSE); i >= 0 {
		t.Errorf("%s %s: lse[%d] = %v, want %v", name, c.label, i, lse[i], wantLSE[i])
	}
}

// TestPagedAttention checks impl on G in {1,4,5,8}, L around block
// boundaries, tiny D, shared blocks, needles, hostile NaN padding, the
// error cases, and (unless testing.Short) L = 40960.
func TestPagedAttention(t testing.TB, impl PagedAttentionFunc) {
	t.Helper()
	r := rand.New(rand.NewPCG(4, 44))
	for _, c := range attnCases(r, !testing.Short()) {
		wo, wl := c.refPaged()
		c.checkOut(t, "paged_attention", func(out, lse []float64) error {
			return impl(out, lse, c.q, c.kc, c.vc, c.bt, c.cl, c.dims, c.scale)
		}, wo, wl)
	}
	c := newCase(r, 4, 2, 8, 4, []int{5, 9}, false)
	out, lse := make([]float64, len(c.q)), make([]float64, 2*4)
	for _, e := range []struct {
		mod  func()
		want error
	}{
		{func() { c.cl[0] = 0 }, golden.ErrContextLen},
		{func() { c.cl[0] = int32(c.dims.MAXB*c.dims.BS + 1) }, golden.ErrContextLen},
		{func() { c.bt[0] = int32(c.dims.NB) }, golden.ErrOutOfRange},
	} {
		bt, cl := slices.Clone(c.bt), slices.Clone(c.cl)
		e.mod()
		if err := impl(out, lse, c.q, c.kc, c.vc, c.bt, c.cl, c.dims, 1); !errors.Is(err, e.want) {
			t.Errorf("paged_attention: err %v, want %v", err, e.want)
		}
		c.bt, c.cl = bt, cl
	}
}

// refSelect ranks anchors first, then score descending, index ascending.
func refSelect(scores []float64, nb int, p golden.QuestParams) []int32 {
	idx := make([]int, nb)
	for i := range idx {
		idx[i] = i
	}
	pri := func(i int) float64 {
		if (p.AnchorFirst && i == 0) || (p.AnchorLast && i == nb-1) {
			return math.Inf(1)
		}
		return scores[i]
	}
	sort.SliceStable(idx, func(a, b int) bool { return pri(idx[a]) > pri(idx[b]) })
	idx = idx[:min(nb, p.K)]
	sort.Ints(idx)
	out := make([]int32, p.K)
	for j := range out {
		out[j] = -1
		if j < len(idx) {
			out[j] = int32(idx[j])
		}
	}
	return out
}

// TestSelectBlocks checks impl on random scores, all-tied scores, nb <= K,
// nb = 1 and 2 with both anchors, the margin, and K < anchors.
func TestSelectBlocks(t testing.TB, impl SelectBlocksFunc) {
	t.Helper()
	r := rand.New(rand.NewPCG(5, 55))
	dims := golden.AttentionDims{B: 6, Hq: 4, Hkv: 2, D: 1, NB: 64, BS: 8, MAXB: 10}
	lens := []int32{1, 9, 80, 33, 79, 64}
	for _, gran := range []golden.Granularity{golden.QHead, golden.KVGroupSum} {
		hsel := gran.Hsel(dims)
		for _, tied := range []bool{false, true} {
			for _, p := range []golden.QuestParams{{K: 3, AnchorFirst: true, AnchorLast: true}, {K: 1}, {K: 4, AnchorFirst: true}, {K: 12, AnchorLast: true}} {
				p.Granularity = gran
				scores := make([]float64, dims.B*hsel*dims.MAXB)
				for i := range scores {
					scores[i] = math.Round(r.NormFloat64() * 4) // rounding plants ties
					if tied {
						scores[i] = 1
					}
				}
				want := make([]int32, dims.B*hsel*p.K)
				margin, has := math.Inf(1), false
				for b, l := range lens {
					nb := (int(l) + dims.BS - 1) / dims.BS
					for h := range hsel {
						row := scores[(b*hsel+h)*dims.MAXB:][:nb]
						for i := nb; i < dims.MAXB; i++ {
							scores[(b*hsel+h)*dims.MAXB+i] = math.Inf(-1)
						}
						copy(want[(b*hsel+h)*p.K:], refSelect(row, nb, p))
						var rest []float64
						for i, s := range row {
							if !((p.AnchorFirst && i == 0) || (p.AnchorLast && i == nb-1)) {
								rest = append(rest, s)
							}
						}
						free := p.K - p.Anchors()
						if nb > p.K && free > 0 && free < len(rest) {
							slices.Sort(rest)
							slices.Reverse(rest)
							margin, has = math.Min(margin, rest[free-1]-rest[free]), true
						}
					}
				}
				sum := checksum(scores)
				sel := make([]int32, len(want))
				m, h, err := impl(sel, scores, lens, dims, p)
				if err != nil {
					t.Errorf("select %+v: %v", p, err)
					continue
				}
				if checksum(scores) != sum {
					t.Errorf("select %+v: scores modified", p)
				}
				if !slices.Equal(sel, want) {
					t.Errorf("select %+v tied=%v: got %v, want %v", p, tied, sel, want)
				}
				if h != has || (has && m != margin) {
					t.Errorf("select %+v tied=%v: margin %v %v, want %v %v", p, tied, m, h, margin, has)
				}
			}
		}
	}
	sel := make([]int32, dims.B*dims.Hq)
	if _, _, err := impl(sel, make([]float64, dims.B*dims.Hq*dims.MAXB), lens, dims, golden.QuestParams{K: 1, AnchorFirst: true, AnchorLast: true}); !errors.Is(err, golden.ErrInvalidParams) {
		t.Errorf("select K < anchors: err %v, want ErrInvalidParams", err)
	}
}

// TestSparseAttention checks impl on random selections (unsorted rows, -1
// padding, partial last blocks) of the attention cases, both
// granularities, and that selecting every block equals dense attention.
func TestSparseAttention(t testing.TB, impl SparseAttentionFunc) {
	t.Helper()
	r := rand.New(rand.NewPCG(6, 66))
	for _, c := range attnCases(r, false) {
		for _, gran := range []golden.Granularity{golden.QHead, golden.KVGroupSum} {
			dm := c.dims
			p := golden.QuestParams{K: 3, Granularity: gran}
			hsel := gran.Hsel(dm)
			sel := make([]int32, dm.B*hsel*p.K)
			wo, wl := make([]float64, len(c.q)), make([]float64, dm.B*dm.Hq)
			for b := range dm.B {
				for h := range hsel {
					row := sel[(b*hsel+h)*p.K : (b*hsel+h+1)*p.K]
					perm := r.Perm(c.nbs[b])
					for j := range row {
						row[j] = -1
						if j < len(perm) {
							row[j] = int32(perm[j])
						}
					}
					r.Shuffle(len(row), func(i, j int) { row[i], row[j] = row[j], row[i] })
				}
				for h := range dm.Hq {
					rr := h
					if gran == golden.KVGroupSum {
						rr = h / (dm.Hq / dm.Hkv)
					}
					var blocks []int
					for _, i := range sel[(b*hsel+rr)*p.K : (b*hsel+rr+1)*p.K] {
						if i >= 0 {
							blocks = append(blocks, int(i))
						}
					}
					slices.Sort(blocks)
					o, l := c.refAttend(b, h, blocks)
					copy(wo[(b*dm.Hq+h)*dm.D:], o)
					wl[b*dm.Hq+h] = l
				}
			}
			sum := checksum(sel)
			c.checkOut(t, "sparse_attention "+fmt.Sprint(gran), func(out, lse []float64) error {
				return impl(out, lse, c.q, c.kc, c.vc, c.bt, c.cl, sel, dm, p, c.scale)
			}, wo, wl)
			if checksum(sel) != sum {
				t.Errorf("sparse_attention %s: selection modified", c.label)
			}
		}
	}
}
