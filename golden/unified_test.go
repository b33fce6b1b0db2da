package golden_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/goldset/goldset/golden"
	"github.com/goldset/goldset/npy"
)

// uniCase is a unified-attention case: rows (q_len, seq_len), padTok graph
// padding tokens and padSeq zero-length requests at the end, the cache's
// unread slots and table entries NaN / -1.
type uniCase struct {
	dims         golden.UnifiedDims
	q, kc, vc    []float32
	bt, sl, qsl  []int32
	scale        float64
	qlens, lens  []int
	actualTokens int
}

func newUniCase(seed uint64, hq, hkv, d, bs int, rows [][2]int, padTok, padSeq int) *uniCase {
	r := rand.New(rand.NewPCG(seed, 7))
	c := &uniCase{scale: 1 / math.Sqrt(float64(d))}
	total, maxNB := 0, 1
	for _, row := range rows {
		c.qlens = append(c.qlens, row[0])
		c.lens = append(c.lens, row[1])
		total += (row[1] + bs - 1) / bs
		maxNB = max(maxNB, (row[1]+bs-1)/bs)
	}
	for range padSeq {
		c.qlens = append(c.qlens, 0)
		c.lens = append(c.lens, 0)
	}
	S := len(c.qlens)
	c.qsl = make([]int32, S+1)
	for s, q := range c.qlens {
		c.qsl[s+1] = c.qsl[s] + int32(q)
	}
	c.actualTokens = int(c.qsl[S])
	T := c.actualTokens + padTok
	NB := total + 2 // two unreferenced blocks
	c.dims = golden.UnifiedDims{T: T, S: S, Hq: hq, Hkv: hkv, D: d, NB: NB, BS: bs, MAXB: maxNB + 1}
	c.q = make([]float32, T*hq*d)
	for i := range c.q {
		c.q[i] = bf16(r.NormFloat64())
	}
	for i := c.actualTokens * hq * d; i < len(c.q); i++ {
		c.q[i] = float32(math.NaN()) // padded tokens' queries are never read
	}
	n := NB * bs * hkv * d
	c.kc, c.vc = make([]float32, n), make([]float32, n)
	for i := range c.kc {
		c.kc[i], c.vc[i] = float32(math.NaN()), float32(math.NaN())
	}
	perm := r.Perm(NB)
	c.bt = make([]int32, S*c.dims.MAXB)
	for i := range c.bt {
		c.bt[i] = -1
	}
	next, row := 0, bs*hkv*d
	for s, L := range c.lens {
		c.sl = append(c.sl, int32(L))
		for i := 0; i*bs < L; i++ {
			p := perm[next]
			next++
			c.bt[s*c.dims.MAXB+i] = int32(p)
			for j := 0; j < min(bs, L-i*bs); j++ {
				for e := range hkv * d {
					c.kc[p*row+j*hkv*d+e] = bf16(r.NormFloat64())
					c.vc[p*row+j*hkv*d+e] = bf16(r.NormFloat64())
				}
			}
		}
	}
	return c
}

func (c *uniCase) golden() (out, lse []float64, err error) {
	out = make([]float64, c.dims.T*c.dims.Hq*c.dims.D)
	lse = make([]float64, c.dims.T*c.dims.Hq)
	err = golden.UnifiedAttention(out, lse, c.q, c.kc, c.vc, c.bt, c.sl, c.qsl, c.dims, c.scale)
	return
}

// naiveUnified is vLLM's ref_paged_attn (tests/kernels/attention/
// test_triton_unified_attention.py) in float64: per sequence, gather its
// kv_len keys, mask with triu(diagonal = kv_len - query_len + 1), softmax
// with math.Exp, weight the values. Padded tokens stay 0.
func naiveUnified(c *uniCase) (out, lse []float64) {
	dm := c.dims
	out = make([]float64, dm.T*dm.Hq*dm.D)
	lse = make([]float64, dm.T*dm.Hq)
	g := dm.Hq / dm.Hkv
	for s := range dm.S {
		Q, L := c.qlens[s], c.lens[s]
		for i := range Q {
			t := int(c.qsl[s]) + i
			for h := range dm.Hq {
				sc := make([]float64, L)
				m := math.Inf(-1)
				for j := range L {
					if j >= L-Q+i+1 { // triu mask
						sc[j] = math.Inf(-1)
						continue
					}
					p := int(c.bt[s*dm.MAXB+j/dm.BS])
					k := c.kc[((p*dm.BS+j%dm.BS)*dm.Hkv+h/g)*dm.D:]
					var dot float64
					for e := range dm.D {
						dot += float64(c.q[(t*dm.Hq+h)*dm.D+e]) * float64(k[e])
					}
					sc[j] = dot * c.scale
					m = math.Max(m, sc[j])
				}
				var den float64
				acc := make([]float64, dm.D)
				for j := range L {
					w := math.Exp(sc[j] - m)
					if w == 0 {
						continue
					}
					den += w
					p := int(c.bt[s*dm.MAXB+j/dm.BS])
					v := c.vc[((p*dm.BS+j%dm.BS)*dm.Hkv+h/g)*dm.D:]
					for e := range dm.D {
						acc[e] += w * float64(v[e])
					}
				}
				for e := range dm.D {
					out[(t*dm.Hq+h)*dm.D+e] = acc[e] / den
				}
				lse[t*dm.Hq+h] = m + math.Log(den)
			}
		}
	}
	return
}

// handUnified is the hand-computed case of TestUnifiedAttentionHand and
// ExampleUnifiedAttention: one head, D = 1, block size 2. Sequence 0 is a
// chunk of 2 new tokens over a 1-token prefix (keys all 0: uniform
// weights), sequence 1 a decode row, then a zero-length padded request
// and a padded token.
func handUnified() *uniCase {
	nan := float32(math.NaN())
	// blocks: 0 = seq 0 tokens 0-1, 1 = seq 0 token 2 + NaN slot, 2 = seq 1 token 0 + NaN
	return &uniCase{
		kc: []float32{0, 0, 0, nan, 2, nan}, vc: []float32{1, 2, 4, nan, 5, nan},
		q: []float32{3, 7, 1.5, nan}, bt: []int32{0, 1, 2, -1, -1, -1},
		sl: []int32{3, 1, 0}, qsl: []int32{0, 2, 3, 3}, scale: 1,
		dims: golden.UnifiedDims{T: 4, S: 3, Hq: 1, Hkv: 1, D: 1, NB: 3, BS: 2, MAXB: 2},
	}
}

// TestUnifiedAttentionHand: token 0 (i = 0, ctx = 1) attends keys 0, 1:
// out (1+2)/2, lse log 2; token 1 keys 0..2: 7/3, log 3; token 2 (decode,
// k = 2, q = 1.5): v = 5, lse 3; the padded token 0 (ExampleUnifiedAttention
// prints these), and the negatives move the values the bug says.
func TestUnifiedAttentionHand(t *testing.T) {
	c := handUnified()
	q, kc, vc, bt, sl, qsl, dims := c.q, c.kc, c.vc, c.bt, c.sl, c.qsl, c.dims
	// The negatives on this case: the off-by-one mask lets token 0 see key
	// 2 (out 7/3); ignoring the prefix makes token 0 see key 0 only (out 1).
	neg := func(bug golden.UnifiedBug) []float64 {
		o, l := make([]float64, 4), make([]float64, 4)
		if err := golden.UnifiedAttentionNegative(o, l, q, kc, vc, bt, sl, qsl, dims, 1, bug); err != nil {
			t.Fatal(err)
		}
		return o
	}
	if o := neg(golden.CausalOffByOne); math.Abs(o[0]-7.0/3) > 1e-15 {
		t.Errorf("causal off by one: token 0 out %v, want 7/3", o[0])
	}
	if o := neg(golden.PrefixIgnored); o[0] != 1 || math.Abs(o[1]-1.5) > 1e-15 {
		t.Errorf("prefix ignored: %v, want [1 1.5 ...]", o)
	}
	// WrongStart gives token 2 (first of sequence 1) sequence 0's whole context: 7/3.
	if o := neg(golden.WrongStart); math.Abs(o[2]-7.0/3) > 1e-15 {
		t.Errorf("wrong start: token 2 out %v, want 7/3", o[2])
	}
}

func TestUnifiedAttentionVsNaive(t *testing.T) {
	for i, tc := range []struct {
		hq, hkv, d, bs int
		rows           [][2]int
		padTok, padSeq int
	}{
		{4, 4, 16, 16, [][2]int{{1, 40}, {3, 19}, {37, 70}}, 0, 0},          // G=1: decode, verify, chunk with prefix
		{8, 2, 32, 16, [][2]int{{1, 1}, {1, 33}, {4, 64}}, 2, 1},            // G=4, graph padding
		{5, 1, 8, 4, [][2]int{{9, 9}, {2, 11}, {1, 5}}, 3, 2},               // G=5, fresh prefill
		{16, 2, 24, 8, [][2]int{{17, 130}, {1, 200}, {2, 3}, {1, 8}}, 0, 0}, // G=8
	} {
		c := newUniCase(uint64(i+1), tc.hq, tc.hkv, tc.d, tc.bs, tc.rows, tc.padTok, tc.padSeq)
		out, lse, err := c.golden()
		if err != nil {
			t.Fatal(err)
		}
		if hasNaN(out) || hasNaN(lse) {
			t.Fatalf("case %d: NaN in the golden (an unread slot was read)", i)
		}
		nout, nlse := naiveUnified(c)
		if d := maxRelDiff(out, nout); d > 1e-12 {
			t.Errorf("case %d: out differs from the naive twin by %g", i, d)
		}
		if d := maxRelDiff(lse, nlse); d > 1e-12 {
			t.Errorf("case %d: lse differs from the naive twin by %g", i, d)
		}
		// Half caches give the same bits.
		kh, vh := make([]uint16, len(c.kc)), make([]uint16, len(c.vc))
		for j := range kh {
			kh[j], vh[j] = npy.BF16FromF64(float64(c.kc[j])), npy.BF16FromF64(float64(c.vc[j]))
		}
		hout, hlse := make([]float64, len(out)), make([]float64, len(lse))
		if err := golden.UnifiedAttentionHalf(hout, hlse, c.q, kh, vh, golden.BF16, c.bt, c.sl, c.qsl, c.dims, c.scale); err != nil {
			t.Fatal(err)
		}
		if !bitsEqual(out, hout) || !bitsEqual(lse, hlse) {
			t.Errorf("case %d: the half path differs from the float32 path", i)
		}
		// The reduction the spec states: token i of a sequence is
		// PagedAttention's decode row with context ctx+i+1, bit for bit.
		var pbt, pcl []int32
		var pq []float32
		hd := c.dims.Hq * c.dims.D
		for s := range c.dims.S {
			for j := range c.qlens[s] {
				pbt = append(pbt, c.bt[s*c.dims.MAXB:(s+1)*c.dims.MAXB]...)
				pcl = append(pcl, int32(c.lens[s]-c.qlens[s]+j+1))
				tok := int(c.qsl[s]) + j
				pq = append(pq, c.q[tok*hd:(tok+1)*hd]...)
			}
		}
		ad := golden.AttentionDims{B: len(pcl), Hq: c.dims.Hq, Hkv: c.dims.Hkv, D: c.dims.D, NB: c.dims.NB, BS: c.dims.BS, MAXB: c.dims.MAXB}
		pout, plse := make([]float64, ad.B*hd), make([]float64, ad.B*ad.Hq)
		if err := golden.PagedAttention(pout, plse, pq, c.kc, c.vc, pbt, pcl, ad, c.scale); err != nil {
			t.Fatal(err)
		}
		if !bitsEqual(out[:len(pout)], pout) || !bitsEqual(lse[:len(plse)], plse) {
			t.Errorf("case %d: not PagedAttention's rows bit for bit", i)
		}
		// The honest float32 kernel is close; every negative that applies differs.
		fout, flse := make([]float64, len(out)), make([]float64, len(lse))
		if err := golden.UnifiedAttentionF32(fout, flse, c.q, c.kc, c.vc, c.bt, c.sl, c.qsl, c.dims, c.scale); err != nil {
			t.Fatal(err)
		}
		if d := maxRelDiff(fout, out); d > 1e-3 || hasNaN(fout) {
			t.Errorf("case %d: the float32 kernel differs by %g", i, d)
		}
		for _, bug := range []golden.UnifiedBug{golden.CausalOffByOne, golden.PrefixIgnored, golden.WrongStart, golden.WrongGQA, golden.PadAsTokens} {
			if bug == golden.WrongGQA && (tc.hkv == 1 || tc.hq == tc.hkv) || bug == golden.PadAsTokens && tc.padTok == 0 {
				continue
			}
			nout, nlse := make([]float64, len(out)), make([]float64, len(lse))
			if err := golden.UnifiedAttentionNegative(nout, nlse, c.q, c.kc, c.vc, c.bt, c.sl, c.qsl, c.dims, c.scale, bug); err != nil {
				t.Fatal(err)
			}
			if maxRelDiff(nout[:c.actualTokens*hd], out[:c.actualTokens*hd]) < 1e-3 {
				t.Errorf("case %d: negative %d is indistinguishable from the golden", i, bug)
			}
		}
	}
}

func TestUnifiedAttentionErrors(t *testing.T) {
	c := newUniCase(9, 4, 2, 8, 4, [][2]int{{2, 9}, {1, 5}}, 1, 1)
	run := func(mut func(c *uniCase)) error {
		d := *c
		d.bt, d.sl, d.qsl = append([]int32(nil), c.bt...), append([]int32(nil), c.sl...), append([]int32(nil), c.qsl...)
		mut(&d)
		_, _, err := d.golden()
		return err
	}
	for _, tc := range []struct {
		name string
		mut  func(c *uniCase)
		want error
	}{
		{"qsl0", func(c *uniCase) { c.qsl[0] = 1 }, golden.ErrInvalidParams},
		{"decreasing", func(c *uniCase) { c.qsl[1] = 3; c.qsl[2] = 2 }, golden.ErrInvalidParams},
		{"past T", func(c *uniCase) { c.qsl[3] = int32(c.dims.T + 1) }, golden.ErrInvalidParams},
		{"L < Q", func(c *uniCase) { c.sl[0] = 1 }, golden.ErrContextLen},
		{"L negative", func(c *uniCase) { c.sl[2] = -1 }, golden.ErrContextLen},
		{"bt", func(c *uniCase) { c.bt[0] = int32(c.dims.NB) }, golden.ErrOutOfRange},
		{"dims", func(c *uniCase) { c.dims.S = 0 }, golden.ErrInvalidParams},
	} {
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = errors.New("panic")
				}
			}()
			return run(tc.mut)
		}()
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
		}
	}
	if err := run(func(*uniCase) {}); err != nil {
		t.Errorf("unmodified case: %v", err)
	}
	// A zero-length row may have any table row and seq_len: nothing is read.
	if err := run(func(c *uniCase) { c.sl[2] = 5; c.bt[2*c.dims.MAXB] = 1 << 20 }); err != nil {
		t.Errorf("zero-length row with a bad table: %v", err)
	}
}
