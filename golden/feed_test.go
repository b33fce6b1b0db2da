package golden_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/goldset/goldset/golden"
)

// testFeed serves sequence s of an attnCase block by block from one
// reused buffer (NaN-poisoned before each fill, so a block read after the
// next call shows), and checks the KVFeed call contract.
type testFeed struct {
	t      *testing.T
	c      *attnCase
	s      int
	kb, vb []uint16 // half bits, nil for float32
	f      []float32
	h      []uint16
	value  bool
	list   []int
	n      int // the next n expected
	blocks int // blocks produced
}

func (f *testFeed) Block(value bool, list []int, n int) ([]float32, []uint16) {
	if n == 0 {
		if !slices.IsSorted(list) || len(slices.Compact(slices.Clone(list))) != len(list) {
			f.t.Fatalf("feed list %v is not ascending and distinct", list)
		}
		f.value, f.list, f.n = value, list, 0
	}
	if value != f.value || !slices.Equal(list, f.list) || n != f.n {
		f.t.Fatalf("feed asked for (%v, %v, %d), want (%v, %v, %d)", value, list, n, f.value, f.list, f.n)
	}
	f.n++
	f.blocks++
	dm := f.c.dims
	be := dm.BS * dm.Hkv * dm.D
	p := int(f.c.bt[f.s*dm.MAXB+list[n]])
	if f.kb == nil {
		src := f.c.kc
		if value {
			src = f.c.vc
		}
		f.f = slices.Grow(f.f[:0], be)[:be]
		for i := range f.f {
			f.f[i] = float32(math.NaN())
		}
		copy(f.f, src[p*be:(p+1)*be])
		return f.f, nil
	}
	src := f.kb
	if value {
		src = f.vb
	}
	f.h = slices.Grow(f.h[:0], be)[:be]
	for i := range f.h {
		f.h[i] = 0x7e00
	}
	copy(f.h, src[p*be:(p+1)*be])
	return nil, f.h
}

// feedCases are the shapes of the feed tests: odd head pairings, a head
// size off the vector tiles' multiple, tails, one-block sequences.
var feedCases = []struct{ hq, hkv, d, bs int }{{8, 2, 32, 16}, {5, 1, 20, 8}, {12, 4, 128, 16}, {16, 2, 16, 4}}

// TestPagedAttentionFeed checks that PagedAttentionFeed gives, per
// sequence, the bits of PagedAttention (float32 and half) on the whole
// cache, with one scratch reused across sequences of varied lengths.
func TestPagedAttentionFeed(t *testing.T) {
	for _, ht := range []golden.HalfType{0, golden.F16, golden.BF16} {
		for i, sh := range feedCases {
			c := newAttnCase(uint64(90+i), 4, sh.hq, sh.hkv, sh.d, sh.bs, []int{3*sh.bs + 5, 1, 37, 2 * sh.bs})
			dm := c.dims
			want, wl := make([]float64, len(c.q)), make([]float64, dm.B*dm.Hq)
			f := &testFeed{t: t, c: c}
			if ht == 0 {
				if err := golden.PagedAttention(want, wl, c.q, c.kc, c.vc, c.bt, c.cl, dm, c.scale); err != nil {
					t.Fatal(err)
				}
			} else {
				f.kb, f.vb, _, _ = halfCase(c, ht)
				if err := golden.PagedAttentionHalf(want, wl, c.q, f.kb, f.vb, ht, c.bt, c.cl, dm, c.scale); err != nil {
					t.Fatal(err)
				}
			}
			var sc golden.AttentionScratch
			sc.Reserve(dm.Hq, 2*sh.bs)
			one := dm
			one.B = 1
			hd := dm.Hq * dm.D
			for s := range dm.B {
				f.s, f.blocks = s, 0
				out, lse := make([]float64, hd), make([]float64, dm.Hq)
				l := int(c.cl[s])
				if err := golden.PagedAttentionFeed(out, lse, c.q[s*hd:(s+1)*hd], f, ht, l, one, c.scale, &sc); err != nil {
					t.Fatal(err)
				}
				if !bitsEqual(out, want[s*hd:(s+1)*hd]) || !bitsEqual(lse, wl[s*dm.Hq:(s+1)*dm.Hq]) {
					t.Fatalf("ht %d shape %v seq %d: feed differs from PagedAttention", ht, sh, s)
				}
				if nb := (l + dm.BS - 1) / dm.BS; f.blocks != 2*nb {
					t.Errorf("ht %d shape %v seq %d: %d blocks fed, want %d (K and V once)", ht, sh, s, f.blocks, 2*nb)
				}
			}
		}
	}
}

// TestSparseAttentionFeed checks SparseAttentionFeed against
// SparseAttention (and its dense pass against PagedAttention) on random
// selections, unordered and -1 padded (q_head rows of one group differ, so
// a KV head has several classes of heads), and that each block is fed
// once per pass.
func TestSparseAttentionFeed(t *testing.T) {
	for _, ht := range []golden.HalfType{0, golden.F16, golden.BF16} {
		for i, sh := range feedCases {
			for _, gran := range []golden.Granularity{golden.QHead, golden.KVGroupSum} {
				c := newAttnCase(uint64(110+i), 3, sh.hq, sh.hkv, sh.d, sh.bs, []int{9*sh.bs + 3, sh.bs, 5*sh.bs + 1})
				dm := c.dims
				p := golden.QuestParams{K: 3, AnchorLast: true, Granularity: gran}
				hsel := gran.Hsel(dm)
				sel := make([]int32, dm.B*hsel*p.K)
				r := rand.New(rand.NewPCG(uint64(i), 5))
				for s := range dm.B {
					nb := (int(c.cl[s]) + dm.BS - 1) / dm.BS
					for row := range hsel {
						dst := sel[(s*hsel+row)*p.K : (s*hsel+row+1)*p.K]
						for j := range dst {
							dst[j] = -1
						}
						// Unordered, -1 padded when the row takes fewer.
						for j, b := range r.Perm(nb)[:min(nb, 1+r.IntN(p.K))] {
							dst[p.K-1-j] = int32(b)
						}
					}
				}
				want, wl := make([]float64, len(c.q)), make([]float64, dm.B*dm.Hq)
				f := &testFeed{t: t, c: c}
				if ht == 0 {
					if err := golden.SparseAttention(want, wl, c.q, c.kc, c.vc, c.bt, c.cl, sel, dm, p, c.scale); err != nil {
						t.Fatal(err)
					}
				} else {
					f.kb, f.vb, _, _ = halfCase(c, ht)
					if err := golden.SparseAttentionHalf(want, wl, c.q, f.kb, f.vb, ht, c.bt, c.cl, sel, dm, p, c.scale); err != nil {
						t.Fatal(err)
					}
				}
				dense, dl := make([]float64, len(c.q)), make([]float64, dm.B*dm.Hq)
				if ht == 0 {
					if err := golden.PagedAttention(dense, dl, c.q, c.kc, c.vc, c.bt, c.cl, dm, c.scale); err != nil {
						t.Fatal(err)
					}
				} else if err := golden.PagedAttentionHalf(dense, dl, c.q, f.kb, f.vb, ht, c.bt, c.cl, dm, c.scale); err != nil {
					t.Fatal(err)
				}
				var sc golden.AttentionScratch
				one := dm
				one.B = 1
				hd := dm.Hq * dm.D
				for s := range dm.B {
					ss := sel[s*hsel*p.K : (s+1)*hsel*p.K]
					// With the dense pass: both results from one feed pass.
					f.s, f.blocks = s, 0
					out, lse := make([]float64, hd), make([]float64, dm.Hq)
					do, dol := make([]float64, hd), make([]float64, dm.Hq)
					if err := golden.SparseAttentionFeed(out, lse, do, dol, c.q[s*hd:(s+1)*hd], f, ht, int(c.cl[s]), ss, one, p, c.scale, &sc); err != nil {
						t.Fatal(err)
					}
					if !bitsEqual(out, want[s*hd:(s+1)*hd]) || !bitsEqual(lse, wl[s*dm.Hq:(s+1)*dm.Hq]) {
						t.Fatalf("ht %d shape %v %v seq %d: feed (with dense) differs from SparseAttention", ht, sh, gran, s)
					}
					if !bitsEqual(do, dense[s*hd:(s+1)*hd]) || !bitsEqual(dol, dl[s*dm.Hq:(s+1)*dm.Hq]) {
						t.Fatalf("ht %d shape %v %v seq %d: feed's dense pass differs from PagedAttention", ht, sh, gran, s)
					}
					if nb := (int(c.cl[s]) + dm.BS - 1) / dm.BS; f.blocks != 2*nb {
						t.Errorf("ht %d shape %v seq %d: %d blocks fed with the dense pass, want %d", ht, sh, s, f.blocks, 2*nb)
					}
					f.s, f.blocks = s, 0
					out, lse = make([]float64, hd), make([]float64, dm.Hq)
					if err := golden.SparseAttentionFeed(out, lse, nil, nil, c.q[s*hd:(s+1)*hd], f, ht, int(c.cl[s]), ss, one, p, c.scale, &sc); err != nil {
						t.Fatal(err)
					}
					if !bitsEqual(out, want[s*hd:(s+1)*hd]) || !bitsEqual(lse, wl[s*dm.Hq:(s+1)*dm.Hq]) {
						t.Fatalf("ht %d shape %v %v seq %d: feed differs from SparseAttention", ht, sh, gran, s)
					}
					var union []int32
					for _, b := range ss {
						if b >= 0 && !slices.Contains(union, b) {
							union = append(union, b)
						}
					}
					if f.blocks != 2*len(union) {
						t.Errorf("ht %d shape %v seq %d: %d blocks fed, want %d", ht, sh, s, f.blocks, 2*len(union))
					}
				}
			}
		}
	}
}

// TestAttentionFeedErrors checks the feed entry points' argument errors.
func TestAttentionFeedErrors(t *testing.T) {
	c := newAttnCase(7, 1, 4, 2, 8, 4, []int{10})
	dm := c.dims
	f := &testFeed{t: t, c: c}
	out, lse := make([]float64, dm.Hq*dm.D), make([]float64, dm.Hq)
	two := dm
	two.B = 2
	p := golden.QuestParams{K: 2, Granularity: golden.KVGroupSum}
	sel := []int32{0, 2, 1, -1}
	for _, tc := range []struct {
		name string
		err  error
		call func() error
	}{
		{"context 0", golden.ErrContextLen, func() error {
			return golden.PagedAttentionFeed(out, lse, c.q, f, 0, 0, dm, c.scale, nil)
		}},
		{"context past MAXB*BS", golden.ErrContextLen, func() error {
			return golden.PagedAttentionFeed(out, lse, c.q, f, 0, dm.MAXB*dm.BS+1, dm, c.scale, nil)
		}},
		{"two sequences", golden.ErrInvalidParams, func() error {
			return golden.PagedAttentionFeed(out, lse, c.q, f, 0, 10, two, c.scale, nil)
		}},
		{"bad HalfType", golden.ErrInvalidParams, func() error {
			return golden.PagedAttentionFeed(out, lse, c.q, f, 9, 10, dm, c.scale, nil)
		}},
		{"selection past nb", golden.ErrOutOfRange, func() error {
			return golden.SparseAttentionFeed(out, lse, nil, nil, c.q, f, 0, 10, []int32{0, 3, 1, -1}, dm, p, c.scale, nil)
		}},
		{"empty selection row", golden.ErrInvalidParams, func() error {
			return golden.SparseAttentionFeed(out, lse, nil, nil, c.q, f, 0, 10, []int32{0, 2, -1, -1}, dm, p, c.scale, nil)
		}},
		{"K 0", golden.ErrInvalidParams, func() error {
			return golden.SparseAttentionFeed(out, lse, nil, nil, c.q, f, 0, 10, sel, dm, golden.QuestParams{}, c.scale, nil)
		}},
	} {
		if err := tc.call(); !errors.Is(err, tc.err) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.err)
		}
	}
	if err := golden.SparseAttentionFeed(out, lse, nil, nil, c.q, f, 0, 10, sel, dm, p, c.scale, nil); err != nil {
		t.Errorf("valid sparse feed call: %v", err)
	}
}
