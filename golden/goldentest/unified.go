package goldentest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/goldset/goldset/golden"
)

// UnifiedAttentionFunc is golden.UnifiedAttention's signature.
type UnifiedAttentionFunc func(out, lse []float64, query, keyCache, valueCache []float32, blockTable, seqLens, queryStartLoc []int32, dims golden.UnifiedDims, scale float64) error

// uniCase is an attnCase (its cache, tables and context lengths) with
// q_len new tokens per sequence, padSeq zero-length requests and padTok
// graph-padding tokens (NaN queries) at the end.
type uniCase struct {
	*attnCase
	qlens       []int
	q           []float32
	bt, sl, qsl []int32
	dims        golden.UnifiedDims
	actual      int
}

func newUniCase(r *rand.Rand, hq, hkv, d, bs int, lens, qlens []int, share bool, padTok, padSeq int) *uniCase {
	c := &uniCase{attnCase: newCase(r, hq, hkv, d, bs, lens, share), qlens: qlens}
	c.label += fmt.Sprintf(" q_len=%v pad=%d/%d", qlens, padTok, padSeq)
	S := len(lens) + padSeq
	c.qsl = make([]int32, S+1)
	c.sl = make([]int32, S)
	for s := range S {
		q := 0
		if s < len(lens) {
			q = qlens[s]
			c.sl[s] = int32(lens[s])
		}
		c.qsl[s+1] = c.qsl[s] + int32(q)
	}
	c.actual = int(c.qsl[len(lens)])
	T := c.actual + padTok
	c.bt = slices.Clone(c.attnCase.bt)
	for range padSeq * c.attnCase.dims.MAXB {
		c.bt = append(c.bt, int32(c.attnCase.dims.NB+5)) // never read
	}
	c.q = randF32(r, T*hq*d, 1)
	for i := c.actual * hq * d; i < len(c.q); i++ {
		c.q[i] = float32(math.NaN())
	}
	ad := c.attnCase.dims
	c.dims = golden.UnifiedDims{T: T, S: S, Hq: hq, Hkv: hkv, D: d, NB: ad.NB, BS: bs, MAXB: ad.MAXB}
	return c
}

// ref is vLLM's ref_paged_attn: token i of sequence s attends keys
// 0..L-Q+i (gather, then a plain softmax with math.Exp).
func (c *uniCase) ref() (out, lse []float64) {
	dm := c.dims
	out = make([]float64, dm.T*dm.Hq*dm.D)
	lse = make([]float64, dm.T*dm.Hq)
	G := dm.Hq / dm.Hkv
	for s, Q := range c.qlens {
		L := int(c.sl[s])
		for i := range Q {
			t := int(c.qsl[s]) + i
			n := L - Q + i + 1
			for h := range dm.Hq {
				sc := make([]float64, n)
				for j := range sc {
					p := int(c.bt[s*dm.MAXB+j/dm.BS])
					o := ((p*dm.BS+j%dm.BS)*dm.Hkv + h/G) * dm.D
					var dot float64
					for e := range dm.D {
						dot += float64(c.q[(t*dm.Hq+h)*dm.D+e]) * float64(c.kc[o+e])
					}
					sc[j] = c.scale * dot
				}
				mx := slices.Max(sc)
				var den float64
				acc := make([]float64, dm.D)
				for j, x := range sc {
					w := math.Exp(x - mx)
					den += w
					p := int(c.bt[s*dm.MAXB+j/dm.BS])
					o := ((p*dm.BS+j%dm.BS)*dm.Hkv + h/G) * dm.D
					for e := range acc {
						acc[e] += w * float64(c.vc[o+e])
					}
				}
				for e := range acc {
					out[(t*dm.Hq+h)*dm.D+e] = acc[e] / den
				}
				lse[t*dm.Hq+h] = mx + math.Log(den)
			}
		}
	}
	return
}

// TestUnifiedAttention checks impl on mixed batches (decode, speculative
// verify and prefill-chunk rows over a cached prefix, fresh prefills) for
// G in {1,4,5,8}, tiny D, shared blocks, a Qwen-like head, graph padding
// (padded tokens with NaN queries and zero-length requests whose table
// rows are out of range: never read; the padded tokens' outputs are not
// checked), the error cases and (unless testing.Short) a 64-token chunk
// at context 40960.
func TestUnifiedAttention(t testing.TB, impl UnifiedAttentionFunc) {
	t.Helper()
	r := rand.New(rand.NewPCG(6, 66))
	var cs []*uniCase
	for _, g := range []int{1, 4, 5, 8} {
		cs = append(cs, newUniCase(r, 2*g, 2, 16, 16, []int{1, 15, 17, 64, 65, 201}, []int{1, 3, 17, 1, 65, 40}, false, 0, 0))
	}
	cs = append(cs, newUniCase(r, 4, 1, 3, 4, []int{9, 8}, []int{4, 2}, true, 0, 0))
	cs = append(cs, newUniCase(r, 8, 2, 128, 128, []int{129, 513}, []int{129, 7}, true, 0, 0))
	cs = append(cs, newUniCase(r, 8, 2, 16, 8, []int{30, 7, 12}, []int{1, 1, 2}, false, 4, 2))
	if !testing.Short() {
		cs = append(cs, newUniCase(r, 4, 1, 64, 128, []int{40960}, []int{64}, false, 0, 0))
	}
	for _, c := range cs {
		wo, wl := c.ref()
		sum := checksum(c.q, c.kc, c.vc) ^ checksum(c.bt, c.sl, c.qsl)
		out, p1 := guarded(len(wo))
		lse, p2 := guarded(len(wl))
		if err := impl(out, lse, c.q, c.kc, c.vc, c.bt, c.sl, c.qsl, c.dims, c.scale); err != nil {
			t.Errorf("unified_attention %s: %v", c.label, err)
			continue
		}
		if checksum(c.q, c.kc, c.vc)^checksum(c.bt, c.sl, c.qsl) != sum {
			t.Errorf("unified_attention %s: inputs modified", c.label)
		}
		if !p1() || !p2() {
			t.Errorf("unified_attention %s: wrote outside out or lse", c.label)
		}
		n := c.actual * c.dims.Hq
		if i := closeTo(out[:n*c.dims.D], wo[:n*c.dims.D]); i >= 0 {
			t.Errorf("unified_attention %s: out[%d] = %v, want %v", c.label, i, out[i], wo[i])
		}
		if i := closeTo(lse[:n], wl[:n]); i >= 0 {
			t.Errorf("unified_attention %s: lse[%d] = %v, want %v", c.label, i, lse[i], wl[i])
		}
	}
	c := newUniCase(r, 4, 2, 8, 4, []int{5, 9}, []int{2, 1}, false, 1, 1)
	out, lse := make([]float64, len(c.q)), make([]float64, c.dims.T*c.dims.Hq)
	for _, e := range []struct {
		mod  func()
		want error
	}{
		{func() { c.qsl[0] = 1 }, golden.ErrInvalidParams},
		{func() { c.qsl[1], c.qsl[2] = 3, 2 }, golden.ErrInvalidParams},
		{func() { c.qsl[3] = int32(c.dims.T + 1) }, golden.ErrInvalidParams},
		{func() { c.sl[0] = 1 }, golden.ErrContextLen},
		{func() { c.sl[1] = int32(c.dims.MAXB*c.dims.BS + 1) }, golden.ErrContextLen},
		{func() { c.bt[0] = int32(c.dims.NB) }, golden.ErrOutOfRange},
	} {
		bt, sl, qsl := slices.Clone(c.bt), slices.Clone(c.sl), slices.Clone(c.qsl)
		e.mod()
		if err := impl(out, lse, c.q, c.kc, c.vc, c.bt, c.sl, c.qsl, c.dims, 1); !errors.Is(err, e.want) {
			t.Errorf("unified_attention: err %v, want %v", err, e.want)
		}
		c.bt, c.sl, c.qsl = bt, sl, qsl
	}
}
