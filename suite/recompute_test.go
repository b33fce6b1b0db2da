package suite

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"slices"
	"testing"

	"github.com/goldset/goldset/internal/detmath"
	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/npy"
)

// recomputeRecipe holds the attention cases whose goldens
// TestAttentionBundleRecompute recomputes: hostile NaN (past L, in
// unreferenced and poison blocks), needles at every placement, shared
// blocks, G = 5 and G = 4, drawn lengths, pad 0, negative q, and Quest
// planted, with needle "exclude", without anchors, tied, with
// kv_group_sum, and with nb <= K (sparse = dense).
const recomputeRecipe = `{"name": "recompute", "version": "0.1.0", "spec_version": 1, "seed": 5150, "cases": [
  {"id": "pa-hostile-last-shared-g5-bf16", "op": "paged_attention", "split": "public", "params": {"hq": 10, "hkv": 2, "d": 32, "bs": 16,
    "dtype": "bfloat16", "context_lens": [40, 33, 1, 129], "shared_blocks": 1, "hostile": true, "needle": "last", "extra_blocks": 1}},
  {"id": "pa-first-pad0-negq-f16", "op": "paged_attention", "split": "public", "params": {"hq": 8, "hkv": 2, "d": 64, "bs": 16,
    "dtype": "float16", "context_lens": [513, 200], "needle": "first", "pad_value": 0, "negative_q": true}},
  {"id": "pa-boundary512-hostile-g4-f32", "op": "paged_attention", "split": "public", "params": {"hq": 8, "hkv": 2, "d": 16, "bs": 32,
    "dtype": "float32", "context_lens": [600, 700], "needle": "boundary512", "hostile": true, "scale": 0.3}},
  {"id": "pa-drawn-g5-f16", "op": "paged_attention", "split": "public", "params": {"hq": 5, "hkv": 1, "d": 16, "bs": 8,
    "dtype": "float16", "b": 4, "len_mean": 100, "len_sigma": 1, "len_max": 300, "min_block": 7}},
  {"id": "quest-planted-hostile-shared-g5-bf16", "op": "quest", "split": "public", "params": {"hq": 10, "hkv": 2, "d": 64, "bs": 16,
    "dtype": "bfloat16", "context_lens": [300, 161, 16], "k": 4, "hostile": true, "shared_blocks": 1}},
  {"id": "quest-exclude-kvsum-f16", "op": "quest", "split": "public", "params": {"hq": 8, "hkv": 2, "d": 64, "bs": 16,
    "dtype": "float16", "context_lens": [200, 130, 9], "k": 4, "needle": "exclude", "granularity": "kv_group_sum"}},
  {"id": "quest-noanchor-negq-g5-kvsum-bf16", "op": "quest", "split": "public", "params": {"hq": 5, "hkv": 1, "d": 32, "bs": 8,
    "dtype": "bfloat16", "context_lens": [90, 64], "k": 3, "anchor_first": false, "anchor_last": false, "negative_q": true, "granularity": "kv_group_sum"}},
  {"id": "quest-tie-f32", "op": "quest", "split": "public", "params": {"hq": 4, "hkv": 2, "d": 8, "bs": 4,
    "dtype": "float32", "context_lens": [17, 30], "k": 3, "tie": true}},
  {"id": "quest-dense-f16", "op": "quest", "split": "public", "params": {"hq": 4, "hkv": 1, "d": 16, "bs": 8,
    "dtype": "float16", "context_lens": [30, 64], "k": 8}}]}`

// bundleCase reads one case's tensors back from a built bundle.
type bundleCase struct {
	t   *testing.T
	dir string
	c   *manifests.Case
}

func (bc bundleCase) tensor(name string) (*manifests.Tensor, []byte) {
	bc.t.Helper()
	for i := range bc.c.Tensors {
		if ts := &bc.c.Tensors[i]; ts.Name == name {
			_, data, err := manifests.LoadTensor(bc.dir, ts)
			if err != nil {
				bc.t.Fatal(err)
			}
			return ts, data
		}
	}
	bc.t.Fatalf("case %s has no tensor %s", bc.c.ID, name)
	return nil, nil
}

// floats decodes a float tensor to its exact values.
func (bc bundleCase) floats(name string) []float64 {
	ts, data := bc.tensor(name)
	switch ts.DType {
	case "float16", "bfloat16":
		v := make([]float64, len(data)/2)
		for i := range v {
			h := binary.LittleEndian.Uint16(data[2*i:])
			if ts.DType == "float16" {
				v[i] = npy.F16ToF64(h)
			} else {
				v[i] = float64(npy.BF16ToF32(h))
			}
		}
		return v
	case "float32":
		v := make([]float64, len(data)/4)
		for i := range v {
			v[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:])))
		}
		return v
	}
	bc.t.Fatalf("%s: %s is not a float tensor", name, ts.DType)
	return nil
}

func (bc bundleCase) ints(name string) []int {
	_, data := bc.tensor(name)
	v := make([]int, len(data)/4)
	for i := range v {
		v[i] = int(int32(binary.LittleEndian.Uint32(data[4*i:])))
	}
	return v
}

// encode rounds exact float64 results once (RNE) to dtype, as .npy data.
func encode(dtype string, v []float64) []byte {
	var b []byte
	for _, x := range v {
		switch dtype {
		case "float16":
			b = binary.LittleEndian.AppendUint16(b, npy.F16FromF64(x))
		case "bfloat16":
			b = binary.LittleEndian.AppendUint16(b, npy.BF16FromF64(x))
		case "float32":
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(x)))
		}
	}
	return b
}

func encodeInts(v []int) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, uint32(int32(x)))
	}
	return b
}

// expect compares a stored tensor with the recomputed bytes.
func (bc bundleCase) expect(name string, want []byte) {
	bc.t.Helper()
	ts, got := bc.tensor(name)
	if !bytes.Equal(got, want) {
		bc.t.Errorf("%s (%s %v): stored bytes differ from the recomputation, first at byte %d of %d", name, ts.DType, ts.Shape, firstDiff(got, want), len(want))
	}
}

// expectOutput compares a floating output with its golden (output dtype)
// and, for half dtypes, its float32 truth.
func (bc bundleCase) expectOutput(name, dtype string, v []float64) {
	bc.t.Helper()
	bc.expect(name, encode(dtype, v))
	if dtype != "float32" {
		bc.expect(name+"_truth", encode("float32", v))
	}
}

// attnInputs are a paged case's inputs, as exact float64 values.
type attnInputs struct {
	p struct {
		Hq, Hkv, D, BS int
		Scale          float64
	}
	q, kc, vc    []float64
	bt, lens     []int
	b, maxb, g   int
	hasNaNUnread bool
}

func readAttnInputs(bc bundleCase) *attnInputs {
	in := &attnInputs{}
	var p struct {
		Hq    int     `json:"hq"`
		Hkv   int     `json:"hkv"`
		D     int     `json:"d"`
		BS    int     `json:"bs"`
		Scale float64 `json:"scale"`
	}
	if err := json.Unmarshal(bc.c.Params, &p); err != nil {
		bc.t.Fatal(err)
	}
	in.p.Hq, in.p.Hkv, in.p.D, in.p.BS, in.p.Scale = p.Hq, p.Hkv, p.D, p.BS, p.Scale
	in.q, in.kc, in.vc = bc.floats("query"), bc.floats("key_cache"), bc.floats("value_cache")
	in.bt, in.lens = bc.ints("block_tables"), bc.ints("context_lens")
	in.b = len(in.lens)
	in.maxb = len(in.bt) / in.b
	in.g = p.Hq / p.Hkv
	for _, v := range in.kc {
		in.hasNaNUnread = in.hasNaNUnread || v != v
	}
	return in
}

// row returns the offset of token j of sequence b, KV head g, in the caches.
func (in *attnInputs) row(b, j, g int) int {
	p := in.bt[b*in.maxb+j/in.p.BS]
	return ((p*in.p.BS+j%in.p.BS)*in.p.Hkv + g) * in.p.D
}

// attend is the naive float64 decode attention of docs/spec.md §4 for
// query head h of sequence b over the given tokens (logical positions, in
// order): scores scale*(q.k) with d-ordered sums of exact products, the
// max, exp(s - max) from detmath, the denominator and every output
// element summed in token order (each product rounded before its add).
func (in *attnInputs) attend(out []float64, b, h int, tokens []int) (lse float64) {
	D, g := in.p.D, h/in.g
	q := in.q[(b*in.p.Hq+h)*D : (b*in.p.Hq+h+1)*D]
	s := make([]float64, len(tokens))
	m := math.Inf(-1)
	for t, j := range tokens {
		k := in.kc[in.row(b, j, g):][:D]
		var dot float64
		for e := range D {
			dot += float64(q[e] * k[e])
		}
		s[t] = in.p.Scale * dot
		m = math.Max(m, s[t])
	}
	clear(out)
	var den float64
	for t, j := range tokens {
		pj := detmath.Exp(s[t] - m)
		den += pj
		v := in.vc[in.row(b, j, g):][:D]
		for e := range D {
			out[e] += float64(pj * v[e])
		}
	}
	for e := range out {
		out[e] /= den
	}
	return m + detmath.Log(den)
}

// firstN is 0, 1, ..., n-1.
func firstN(n int) []int {
	v := make([]int, n)
	for i := range v {
		v[i] = i
	}
	return v
}

// dense computes out [B,Hq,D] and lse [B,Hq] over every token j < L.
func (in *attnInputs) dense() (out, lse []float64) {
	out = make([]float64, in.b*in.p.Hq*in.p.D)
	lse = make([]float64, in.b*in.p.Hq)
	for b, L := range in.lens {
		for h := range in.p.Hq {
			lse[b*in.p.Hq+h] = in.attend(out[(b*in.p.Hq+h)*in.p.D:][:in.p.D], b, h, firstN(L))
		}
	}
	return out, lse
}

// TestAttentionBundleRecompute builds paged_attention and quest bundles,
// reads them back and recomputes every golden (out, out_truth, lse; Quest
// kmax, kmin, scores, selected, dense_out and the recorded margin and
// sparse-vs-dense difference) with naive float64 loops from the bundle's
// own inputs, without package golden: the stored bytes must match bit for
// bit. Hostile NaN slots are never read (a NaN golden would show it).
func TestAttentionBundleRecompute(t *testing.T) {
	r, err := manifests.ParseRecipe("recompute", []byte(recomputeRecipe))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	m := buildTo(t, r, root, Options{})
	dir := root + "/" + r.Name
	for i := range m.Cases {
		c := &m.Cases[i]
		t.Run(c.ID, func(t *testing.T) {
			bc := bundleCase{t: t, dir: dir, c: c}
			in := readAttnInputs(bc)
			var hostile struct {
				Hostile bool   `json:"hostile"`
				DType   string `json:"dtype"`
			}
			if err := json.Unmarshal(c.Params, &hostile); err != nil {
				t.Fatal(err)
			}
			if hostile.Hostile && !in.hasNaNUnread {
				t.Fatal("a hostile case without NaN in its key cache")
			}
			dense, denseLSE := in.dense()
			for _, v := range denseLSE {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("recomputed lse %v: the reference read a NaN slot", v)
				}
			}
			switch c.Op {
			case "paged_attention":
				bc.expectOutput("out", hostile.DType, dense)
				bc.expect("lse", encode("float32", denseLSE))
			case "quest":
				recomputeQuest(bc, in, hostile.DType, dense)
			}
		})
	}
}

// recomputeQuest checks a quest case's goldens against docs/spec.md §5.
func recomputeQuest(bc bundleCase, in *attnInputs, dtype string, dense []float64) {
	t := bc.t
	var qp struct {
		K           int    `json:"k"`
		AnchorFirst bool   `json:"anchor_first"`
		AnchorLast  bool   `json:"anchor_last"`
		Granularity string `json:"granularity"`
	}
	if err := json.Unmarshal(bc.c.Params, &qp); err != nil {
		t.Fatal(err)
	}
	Hq, Hkv, D, BS, B, maxb := in.p.Hq, in.p.Hkv, in.p.D, in.p.BS, in.b, in.maxb
	// 5a: element-wise max/min over the valid tokens of each logical block
	// (+0 above -0, as math.Max/Min order them); 0 past nb.
	kmax := make([]float64, B*maxb*Hkv*D)
	kmin := make([]float64, len(kmax))
	for b, L := range in.lens {
		for j := range L {
			i := j / BS
			for g := range Hkv {
				k := in.kc[in.row(b, j, g):][:D]
				o := ((b*maxb+i)*Hkv + g) * D
				for e, v := range k {
					if j%BS == 0 {
						kmax[o+e], kmin[o+e] = v, v
					} else {
						kmax[o+e], kmin[o+e] = math.Max(kmax[o+e], v), math.Min(kmin[o+e], v)
					}
				}
			}
		}
	}
	bc.expect("kmax", encode(dtype, kmax))
	bc.expect("kmin", encode(dtype, kmin))
	// 5b: per query head sum_d max(q*kmax, q*kmin); kv_group_sum adds the
	// G head scores in head order; -inf past nb.
	hsel := Hq
	if qp.Granularity == "kv_group_sum" {
		hsel = Hkv
	}
	scores := make([]float64, B*hsel*maxb)
	for i := range scores {
		scores[i] = math.Inf(-1)
	}
	for b, L := range in.lens {
		nb := (L + BS - 1) / BS
		for h := range Hq {
			r := h
			if hsel == Hkv {
				r = h / in.g
			}
			q := in.q[(b*Hq+h)*D:][:D]
			for i := range nb {
				o := ((b*maxb+i)*Hkv + h/in.g) * D
				var s float64
				for e := range D {
					s += math.Max(float64(q[e]*kmax[o+e]), float64(q[e]*kmin[o+e]))
				}
				at := (b*hsel+r)*maxb + i
				if hsel == Hkv && h%in.g != 0 {
					scores[at] += s
				} else {
					scores[at] = s
				}
			}
		}
	}
	bc.expect("scores", encode("float32", scores))
	// 5c: anchors, then score descending, index ascending; ascending, -1
	// padded; the margin is the smallest gap between the last chosen and
	// the best rejected non-anchor block over rows that depend on scores.
	sel := make([]int, B*hsel*qp.K)
	margin, hasMargin := math.Inf(1), false
	for b, L := range in.lens {
		nb := (L + BS - 1) / BS
		for r := range hsel {
			row := sel[(b*hsel+r)*qp.K:][:qp.K]
			for j := range row {
				row[j] = -1
			}
			if qp.K >= nb {
				copy(row, firstN(nb))
				continue
			}
			sc := scores[(b*hsel+r)*maxb:][:nb]
			var chosen, rest []int
			for i := range nb {
				if (qp.AnchorFirst && i == 0) || (qp.AnchorLast && i == nb-1) {
					chosen = append(chosen, i)
				} else {
					rest = append(rest, i)
				}
			}
			// A naive selection: repeatedly take the best remaining block.
			free := qp.K - len(chosen)
			for range free {
				best := 0
				for x := 1; x < len(rest); x++ {
					if sc[rest[x]] > sc[rest[best]] {
						best = x
					}
				}
				chosen = append(chosen, rest[best])
				last := sc[rest[best]]
				rest = slices.Delete(rest, best, best+1)
				if len(chosen) == qp.K && len(rest) > 0 {
					top := math.Inf(-1)
					for _, x := range rest {
						top = math.Max(top, sc[x])
					}
					margin, hasMargin = min(margin, last-top), true
				}
			}
			slices.Sort(chosen)
			copy(row, chosen)
		}
	}
	bc.expect("selected", encodeInts(sel))
	// 5d: attention over the valid tokens of the selected blocks, in
	// ascending block order.
	out := make([]float64, B*Hq*D)
	lse := make([]float64, B*Hq)
	for b, L := range in.lens {
		for h := range Hq {
			r := h
			if hsel == Hkv {
				r = h / in.g
			}
			var tokens []int
			for _, i := range sel[(b*hsel+r)*qp.K:][:qp.K] {
				for j := i * BS; i >= 0 && j < min(L, (i+1)*BS); j++ {
					tokens = append(tokens, j)
				}
			}
			lse[b*Hq+h] = in.attend(out[(b*Hq+h)*D:][:D], b, h, tokens)
		}
	}
	bc.expectOutput("out", dtype, out)
	bc.expect("lse", encode("float32", lse))
	bc.expect("dense_out", encode("float32", dense))
	var info struct {
		Margin    *float64 `json:"selection_margin"`
		RelL2     float64  `json:"sparse_dense_rel_l2"`
		NeedlePos []int    `json:"needle_positions"`
	}
	if err := json.Unmarshal(bc.c.Info, &info); err != nil {
		t.Fatal(err)
	}
	switch {
	case hasMargin != (info.Margin != nil):
		t.Errorf("info.selection_margin present = %v, recomputation has a margin = %v", info.Margin != nil, hasMargin)
	case hasMargin && *info.Margin != margin:
		t.Errorf("info.selection_margin = %v, recomputed %v", *info.Margin, margin)
	}
	var num, den float64
	for i := range out {
		d := out[i] - dense[i]
		num += float64(d * d)
		den += float64(dense[i] * dense[i])
	}
	if rel := math.Sqrt(num / den); rel != info.RelL2 {
		t.Errorf("info.sparse_dense_rel_l2 = %v, recomputed %v", info.RelL2, rel)
	}
	if qp.K >= (slices.Max(in.lens)+BS-1)/BS && !slices.Equal(out, dense) {
		t.Error("every block selected, but the sparse output differs from the dense one")
	}
	if info.NeedlePos != nil && info.RelL2 == 0 {
		t.Error("needle exclude: the sparse output equals the dense one")
	}
}
