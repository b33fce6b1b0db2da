package suite

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"runtime/trace"
	"slices"
	"sync"

	"github.com/goldset/goldset/compare"
	"github.com/goldset/goldset/gen"
	"github.com/goldset/goldset/golden"
	"github.com/goldset/goldset/internal/cpuslots"
	"github.com/goldset/goldset/internal/dtype"
	"github.com/goldset/goldset/internal/hugemem"
	"github.com/goldset/goldset/manifests"
)

// ---- dsa_index_cache (docs/spec.md §8a) ----

var _ = register(&op{
	name:      "dsa_index_cache",
	export:    exportSpec{flashinfer: "dsa_paged", ascend: "DsaIndexCache", axes: map[string][]string{"k": {"T", "DI"}, "slot_mapping": {"T"}, "index_cache": {"NB", "B_bytes"}, "index_cache_out": {"NB", "B_bytes"}, dsaCacheAlt: {"NB", "B_bytes"}}},
	inputs:    []string{"k", "slot_mapping", "index_cache"},
	outputs:   []output{{name: "index_cache_out", dtype: "uint8", tol: compare.Exact.WithBasis("exact/index_cache")}},
	aux:       []string{dsaCacheAlt},
	plan:      planDSAIndexCache,
	controls:  dsaIndexCacheControls,
	tensorsOf: dsaIndexCacheTensors,
	work:      dsaIndexCacheWork,
})

// dsaCacheAlt is the aux tensor of an fp32-scale index cache: the cache
// with every code rounded once from the exact quotient k/sc
// (golden.DSAIndexCacheOneRounding), which compare accepts code by code
// beside the golden's float32-division codes (docs/spec.md §8a).
const dsaCacheAlt = "index_cache_alt"

// dsaCacheFP32 is the family of an fp32-scale index cache: bit-exact, or
// the one-rounding code where the two conventions differ.
var dsaCacheFP32 = compare.Exact.WithBasis("exact/index_cache/fp32_either_rounding").WithAlt(dsaCacheAlt, 1)

// dsaIndexCacheTensors: fp32-scale cases add the alternative codes.
func dsaIndexCacheTensors(raw json.RawMessage) (in, out, aux []string) {
	var p struct {
		ScaleFmt string `json:"scale_fmt"`
	}
	json.Unmarshal(raw, &p)
	in, out = []string{"k", "slot_mapping", "index_cache"}, []string{"index_cache_out"}
	if p.ScaleFmt == "fp32" {
		aux = []string{dsaCacheAlt}
	}
	return in, out, aux
}

type dsaCacheParams struct {
	T        int     `json:"t"`
	DI       int     `json:"di"`
	NB       int     `json:"nb"`
	ScaleFmt string  `json:"scale_fmt"`
	SkipFrac float64 `json:"skip_frac"`
}

func planDSAIndexCache(raw json.RawMessage) (*casePlan, error) {
	p := dsaCacheParams{DI: 128, ScaleFmt: "ue8m0"}
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if _, err := dsaScaleFmt(p.ScaleFmt); err != nil {
		return nil, err
	}
	for _, e := range []error{checkRange("t", p.T, 1, 1<<20), checkRange("di", p.DI, 1, 1024), checkRange("nb", p.NB, 1, 1<<16)} {
		if e != nil {
			return nil, e
		}
	}
	if !(p.SkipFrac >= 0 && p.SkipFrac <= 1) {
		return nil, errParams("skip_frac = %v, want 0..1", p.SkipFrac)
	}
	if p.T > p.NB*dsaPS {
		return nil, errParams("t = %d tokens do not fit nb*64 = %d slots", p.T, p.NB*dsaPS)
	}
	bytes := int64(2*p.NB*golden.DSABlockBytes(p.DI)) + int64(p.T*(2*p.DI+4))
	pl := &casePlan{params: canonical(p), dtype: "uint8", bytes: bytes, build: func(c *caseCtx) error { return buildDSAIndexCache(c, &p) }}
	if p.ScaleFmt == "fp32" {
		pl.bytes += int64(p.NB * golden.DSABlockBytes(p.DI))
		pl.family = func(out string) (compare.Family, bool) { return dsaCacheFP32, out == "index_cache_out" }
	}
	return pl, nil
}

func buildDSAIndexCache(c *caseCtx, p *dsaCacheParams) error {
	f, _ := dsaScaleFmt(p.ScaleFmt)
	k := normalTensor(c.stream("k"), "bfloat16", p.T*p.DI, 0, 1)
	if err := c.writeFloat(tensorSpec{name: "k", role: roleInput, dtype: "bfloat16", shape: []int64{int64(p.T), int64(p.DI)}}, &k); err != nil {
		return err
	}
	sm, err := gen.SlotMapping(c.stream("slot_mapping"), gen.SlotSpec{Tokens: p.T, NumSlots: p.NB * dsaPS, NegFrac: p.SkipFrac})
	if err != nil {
		return err
	}
	if err := c.writeInts(tensorSpec{name: "slot_mapping", role: roleInput, dtype: "int32", shape: []int64{int64(p.T)}}, sm); err != nil {
		return err
	}
	c.addFact("slots_written", int64(countValid(sm)))
	cache := dsaCanaryCache(p.NB, p.DI)
	shape := []int64{int64(p.NB), int64(golden.DSABlockBytes(p.DI))}
	if err := c.writeBytes(tensorSpec{name: "index_cache", role: roleInput, dtype: "uint8", shape: shape}, cache); err != nil {
		return err
	}
	dims := golden.DSACacheDims{T: p.T, DI: p.DI, NB: p.NB}
	var alt []byte
	if f == golden.DSAScaleFP32 {
		alt = make([]byte, len(cache))
		if err := golden.DSAIndexCacheOneRounding(alt, k.vals, sm, cache, dims, f); err != nil {
			return err
		}
	}
	if err := golden.DSAIndexCache(cache, k.vals, sm, cache, dims, f); err != nil {
		return err
	}
	if alt != nil {
		n := 0
		for i := range alt {
			if alt[i] != cache[i] {
				n++
			}
		}
		c.setInfo("one_rounding_codes", n) // codes where the alternative differs
	}
	if err := c.writeBytes(tensorSpec{name: "index_cache_out", role: roleGolden, dtype: "uint8", shape: shape}, cache); err != nil {
		return err
	}
	if alt == nil {
		return nil
	}
	return c.writeBytes(tensorSpec{name: dsaCacheAlt, role: roleAux, dtype: "uint8", shape: shape}, alt)
}

func dsaIndexCacheControls(d caseData) ([]Control, error) {
	var p dsaCacheParams
	if err := json.Unmarshal(d.c.Params, &p); err != nil {
		return nil, err
	}
	k, err := d.f32("k")
	if err != nil {
		return nil, err
	}
	sm, err := d.i32("slot_mapping")
	if err != nil {
		return nil, err
	}
	in, _, err := d.floats("index_cache")
	if err != nil {
		return nil, err
	}
	f, _ := dsaScaleFmt(p.ScaleFmt)
	dims := golden.DSACacheDims{T: p.T, DI: p.DI, NB: p.NB}
	run := func(f golden.DSAScaleFmt, sm []int32, cleared bool) ([]float64, error) {
		cache := make([]byte, len(in))
		for i, x := range in {
			cache[i] = byte(x)
		}
		if cleared {
			clear(cache)
		}
		if err := golden.DSAIndexCache(cache, k, sm, cache, dims, f); err != nil {
			return nil, err
		}
		out := make([]float64, len(cache))
		for i, x := range cache {
			out[i] = float64(x)
		}
		return out, nil
	}
	var ctl []Control
	add := func(name, note string, pass bool, f golden.DSAScaleFmt, sm []int32, cleared bool) error {
		v, err := run(f, sm, cleared)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		ctl = append(ctl, Control{Name: name, Pass: pass, Note: note, Outputs: []ControlOutput{d.output("index_cache_out", v)}})
		return nil
	}
	// An honest kernel writing the tokens in reverse order: slots are
	// distinct, so the cache is the same.
	rev := slices.Clone(sm)
	slices.Reverse(rev)
	revK := make([]float32, len(k))
	for t := range p.T {
		copy(revK[(p.T-1-t)*p.DI:(p.T-t)*p.DI], k[t*p.DI:(t+1)*p.DI])
	}
	kSave := k
	k = revK
	if err := add("reverse_order", "tokens written in reverse order", true, f, rev, false); err != nil {
		return nil, err
	}
	k = kSave
	other := golden.DSAScaleFP32
	if f == golden.DSAScaleFP32 {
		other = golden.DSAScaleUE8M0
	}
	if err := add("wrong_scale_fmt", "the other scale format (ue8m0 <-> fp32)", false, other, sm, false); err != nil {
		return nil, err
	}
	if slices.ContainsFunc(sm, func(s int32) bool { return s >= 0 }) && slices.Index(sm, -1) >= 0 || len(sm) < p.NB*dsaPS {
		if err := add("cleared_cache", "untouched slots cleared instead of kept", false, f, sm, true); err != nil {
			return nil, err
		}
	}
	ctl = append(ctl, zeros(d, "index_cache_out"))
	gold, _, err := d.floats("index_cache_out")
	if err != nil {
		return nil, err
	}
	if wb := dsaWrongBlock(d, sm, in, gold, p.DI, p.NB); wb != nil {
		ctl = append(ctl, *wb)
	}
	return dsaCacheCodeControls(d, f, in, gold, ctl)
}

// dsaWrongBlock is reshape_and_cache's wrong_block for the index cache:
// the first written token's codes and scale land one block over, its own
// slot keeping the input's bytes (nil when there is one block or no
// written token). in and gold are the case's index_cache and
// index_cache_out.
func dsaWrongBlock(d caseData, sm []int32, in, gold []float64, di, nb int) *Control {
	t := slices.IndexFunc(sm, func(s int32) bool { return s >= 0 })
	if t < 0 || nb < 2 {
		return nil
	}
	bb := golden.DSABlockBytes(di)
	s := int(sm[t])
	wrong := ((s/dsaPS+1)%nb)*dsaPS + s%dsaPS
	// The byte ranges of a slot: its codes, then its scale.
	spans := func(slot int) [2][2]int {
		b, o := slot/dsaPS*bb, slot%dsaPS
		return [2][2]int{{b + o*di, b + (o+1)*di}, {b + dsaPS*di + 4*o, b + dsaPS*di + 4*(o+1)}}
	}
	bad := slices.Clone(gold)
	from, to := spans(s), spans(wrong)
	for i := range 2 {
		copy(bad[from[i][0]:from[i][1]], in[from[i][0]:from[i][1]])
		copy(bad[to[i][0]:to[i][1]], gold[from[i][0]:from[i][1]])
	}
	if slices.Equal(bad, gold) {
		return nil
	}
	return &Control{Name: "wrong_block", Note: fmt.Sprintf("token %d written to slot %d instead of %d", t, wrong, s), Outputs: []ControlOutput{d.output("index_cache_out", bad)}}
}

// dsaCacheCodeControls adds the rounding-convention controls: a written
// code off by one where both conventions agree must fail; on fp32-scale
// caches the one-rounding cache (the alternative) must pass, and a code
// where the conventions differ set to neither must fail. in and want are
// the case's index_cache and index_cache_out.
func dsaCacheCodeControls(d caseData, f golden.DSAScaleFmt, in, want []float64, ctl []Control) ([]Control, error) {
	alt := want
	var err error
	if f == golden.DSAScaleFP32 {
		if alt, _, err = d.floats(dsaCacheAlt); err != nil {
			return nil, err
		}
	}
	// bump moves byte i one code away from the golden (0x7e for a NaN
	// canary, so the result stays a finite code).
	bump := func(v []float64, i int) []float64 {
		v = slices.Clone(v)
		if v[i] >= 0x7e && v[i] != 0x80 {
			v[i]--
		} else {
			v[i]++
		}
		return v
	}
	agree, differ := -1, -1
	for i := range want {
		switch {
		case alt[i] != want[i] && differ < 0:
			differ = i
		case alt[i] == want[i] && want[i] != in[i] && agree < 0:
			agree = i // a written byte both conventions share
		}
	}
	if agree >= 0 {
		ctl = append(ctl, Control{Name: "one_code_off", Note: "one written byte off by one code where both roundings agree", Outputs: []ControlOutput{d.output("index_cache_out", bump(want, agree))}})
	}
	if f != golden.DSAScaleFP32 {
		return ctl, nil
	}
	ctl = append(ctl, Control{Name: "one_rounding", Pass: true, Note: "codes rounded once from the exact k/sc (ops.md's literal form), not from fl32(k/sc)", Outputs: []ControlOutput{d.output("index_cache_out", slices.Clone(alt))}})
	if differ >= 0 {
		v := slices.Clone(alt)
		v[differ] = 2*alt[differ] - want[differ] // the code beyond the one-rounding one
		ctl = append(ctl, Control{Name: "neither_rounding", Note: "one code that differs between the roundings set to neither", Outputs: []ControlOutput{d.output("index_cache_out", v)}})
	}
	return ctl, nil
}

// ---- dsa_indexer (docs/spec.md §8b) ----

var _ = register(&op{
	name:   "dsa_indexer",
	export: exportSpec{flashinfer: "dsa_paged", ascend: "DsaIndexer"},
	// The paged form's tensors; the ragged form (layout "ragged") has q,
	// weights, kv, kv_scale, ks, ke and logits, topk, index_scores, row_info.
	inputs: []string{"q", "weights", "index_cache", "block_table", "seq_lens", "kv", "kv_scale", "ks", "ke"},
	outputs: []output{
		{name: "logits", tol: compare.DSALogits},
		{name: "topk_logical", dtype: "int32", tol: compare.DSASelection},
		{name: "topk_physical", dtype: "int32", tol: compare.DSASelection},
		{name: "topk", dtype: "int32", tol: compare.DSASelection},
		{name: "block_header", dtype: "int32", tol: compare.Exact.WithBasis("exact/block_header")},
	},
	aux:       []string{"index_scores", "row_info"},
	plan:      planDSAIndexer,
	controls:  dsaIndexerControls,
	judgeData: dsaIndexerJudgeData,
	tensorsOf: dsaIndexerTensors,
	work:      dsaIndexerWork,
})

// dsaIndexerTensors names the tensors of each layout, in manifest order.
func dsaIndexerTensors(raw json.RawMessage) (in, out, aux []string) {
	var p struct {
		Layout string `json:"layout"`
	}
	json.Unmarshal(raw, &p)
	aux = []string{"index_scores", "row_info"}
	if p.Layout == "ragged" {
		return []string{"q", "weights", "kv", "kv_scale", "ks", "ke"}, []string{"logits", "topk"}, aux
	}
	return []string{"q", "weights", "index_cache", "block_table", "seq_lens"}, []string{"logits", "topk_logical", "topk_physical", "block_header"}, aux
}

type dsaIndexerParams struct {
	Layout string `json:"layout"` // "paged" (decode, default) or "ragged" (prefill)
	dsaLayoutParams
	NN       int    `json:"next_n,omitempty"`
	HI       int    `json:"hi"`
	DI       int    `json:"di"`
	K        int    `json:"k"`
	ScaleFmt string `json:"scale_fmt"`
	// LogitsDType is the dtype of the stored logits (the kernel's): float32
	// (default) or bfloat16; it picks the selection band eps_rel.
	LogitsDType string `json:"logits_dtype"`
	// Margin tau > 0 plants a selection margin (NN = 1, weights >= 0).
	Margin float64 `json:"margin,omitempty"`
	// Tied: every key of sequence 0 is the same row (an all-tied row).
	Tied bool `json:"tied,omitempty"`
	// Ragged: sequence b has CtxLens[b] cached tokens and QueryLens[b] new.
	CtxLens   []int `json:"ctx_lens,omitempty"`
	QueryLens []int `json:"query_lens,omitempty"`
}

const dsaRaggedCanaries = 64 // NaN kv rows after the last sequence's window (docs/spec.md §8b)

func planDSAIndexer(raw json.RawMessage) (*casePlan, error) {
	p := dsaIndexerParams{Layout: "paged", HI: 64, DI: 128, K: 2048, ScaleFmt: "ue8m0", LogitsDType: "float32"}
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if _, err := dsaScaleFmt(p.ScaleFmt); err != nil {
		return nil, err
	}
	if p.LogitsDType != "float32" && p.LogitsDType != "bfloat16" {
		return nil, errParams("logits_dtype %q, want float32 or bfloat16", p.LogitsDType)
	}
	for _, e := range []error{checkRange("hi", p.HI, 1, 256), checkRange("di", p.DI, 1, 1024), checkRange("k", p.K, 1, 1<<16)} {
		if e != nil {
			return nil, e
		}
	}
	if !(p.Margin >= 0) || math.IsInf(p.Margin, 0) {
		return nil, errParams("margin = %v must be finite and >= 0", p.Margin)
	}
	var bytes int64
	switch p.Layout {
	case "paged":
		if p.NN == 0 {
			p.NN = 1
		}
		if err := checkRange("next_n", p.NN, 1, 2); err != nil {
			return nil, err
		}
		if p.CtxLens != nil || p.QueryLens != nil {
			return nil, errParams("ctx_lens/query_lens are ragged params")
		}
		if err := p.dsaLayoutParams.check(p.NN); err != nil {
			return nil, err
		}
		if p.Margin > 0 && p.NN != 1 {
			return nil, errParams("margin needs next_n 1")
		}
		maxb, nb := p.blocks()
		rows := int64(len(p.SeqLens) * p.NN)
		if _, err := checkElems("logits", len(p.SeqLens)*p.NN, maxb*dsaPS); err != nil {
			return nil, err
		}
		bytes = int64(nb*golden.DSABlockBytes(p.DI)) + rows*int64(p.HI*(p.DI+4)) + rows*int64(maxb*dsaPS)*(4+8) + rows*int64(8*p.K+32)
	case "ragged":
		if len(p.CtxLens) == 0 || len(p.CtxLens) != len(p.QueryLens) || p.SeqLens != nil || p.NN != 0 || p.Margin > 0 || p.SharedPages > 0 || p.Shuffle || p.ExtraBlocks > 0 {
			return nil, errParams("ragged: ctx_lens and query_lens of equal length, and none of seq_lens, next_n, margin, paging params")
		}
		t, s := 0, 0
		for b := range p.CtxLens {
			if p.CtxLens[b] < 0 || p.QueryLens[b] < 1 || p.CtxLens[b] > 1<<20 || p.QueryLens[b] > 1<<16 {
				return nil, errParams("ctx_lens[%d] = %d, query_lens[%d] = %d out of range", b, p.CtxLens[b], b, p.QueryLens[b])
			}
			t += p.QueryLens[b]
			s += p.CtxLens[b] + p.QueryLens[b]
		}
		if _, err := checkElems("logits", t, s+dsaRaggedCanaries); err != nil {
			return nil, err
		}
		bytes = int64(t)*int64(p.HI*(p.DI+4)) + int64(s)*int64(p.DI+4) + int64(t)*int64(s)*12 + int64(t)*int64(4*p.K+40)
	default:
		return nil, errParams("layout %q, want \"paged\" or \"ragged\"", p.Layout)
	}
	return &casePlan{params: canonical(p), dtype: p.LogitsDType, bytes: bytes, build: func(c *caseCtx) error {
		if p.Layout == "ragged" {
			return buildDSARagged(c, &p)
		}
		return buildDSAPaged(c, &p)
	}}, nil
}

// dsaProblem is a built paged indexer problem. It holds no index cache:
// every key is a pure function of its slot (dsaKeys), so the cache is
// regenerated block by block as it is written (writeCache) and the golden
// runs one sequence at a time over a compact copy of that sequence's
// pages; peak memory is one sequence's keys, not the cache.
type dsaProblem struct {
	l       *dsaLayout
	dims    golden.DSAIndexerDims
	keys    *dsaKeys
	q       []byte
	w       []float32
	logits  []float64
	tl, tp  []int32
	info    []golden.DSARowInfo
	demoted []golden.DSADemotion
	margin  float64 // > 0: demote keys near each row's boundary (solve)
	refs    []int   // [nb] sequences that read each block
}

// dsaKeys draws the paged indexer's keys: the key of slot s is the di bf16
// values of stream "k" from element s*di (tied: every slot of sequence 0's
// blocks, shared ones included, takes elements 0..di-1), so a key depends
// on its slot alone and a run of a block's slots is one span (whole chunks
// on gen's vector path, the same values as slot by slot). A demoted slot
// (margin) has its key divided by 2^halvings before quantization, which
// changes only its scale.
type dsaKeys struct {
	ks    gen.Stream
	di    int
	f     golden.DSAScaleFmt
	tied0 []bool      // [nb] blocks whose keys are all elements 0..di-1
	halve map[int]int // slot -> halvings of the margin's demoted keys (written only between parallel phases)
}

// dsaKeyScratch is one worker's scratch for drawing a block's keys.
type dsaKeyScratch struct {
	run []uint16  // [64*di] drawn bits
	kf  []float32 // [64*di] the block's float32 keys
}

func (k *dsaKeys) scratch() *dsaKeyScratch {
	return &dsaKeyScratch{run: make([]uint16, dsaPS*k.di), kf: make([]float32, dsaPS*k.di)}
}

// draw writes the float32 keys of the n slots from s (one block) into dst;
// run is scratch for n*di bits.
func (k *dsaKeys) draw(dst []float32, run []uint16, s, n int) {
	di := k.di
	if k.tied0[s/dsaPS] {
		gen.Normal(k.ks, run[:di], 0, gen.BF16, 1)
		halfToF32(dst[:di], run[:di], "bfloat16")
		for i := 1; i < n; i++ {
			copy(dst[i*di:(i+1)*di], dst[:di])
		}
	} else {
		gen.Normal(k.ks, run[:n*di], int64(s)*int64(di), gen.BF16, 1)
		halfToF32(dst[:n*di], run[:n*di], "bfloat16")
	}
	for i := range n {
		if h, ok := k.halve[s+i]; ok {
			div := float32(math.Ldexp(1, h))
			for d := range dst[i*di : (i+1)*di] {
				dst[i*di+d] /= div // exact: DSAIndexerMargin checked that no value underflows
			}
		}
	}
}

// quantize draws the keys of the n slots from s (one block) and writes
// them into slots o..o+n-1 of blk, one cache block; kbuf holds n*di floats
// and keeps the drawn keys, run is scratch for as many bits.
func (k *dsaKeys) quantize(blk []byte, o, s, n int, kbuf []float32, run []uint16) error {
	k.draw(kbuf, run, s, n)
	var slots [dsaPS]int32
	for i := range n {
		slots[i] = int32(o + i)
	}
	return golden.DSAIndexCache(blk, kbuf[:n*k.di], slots[:n], blk, golden.DSACacheDims{T: n, DI: k.di, NB: 1}, k.f)
}

// newDSAProblem draws a paged decode problem (solve runs its golden indexer):
// keys (bf16, drawn by slot so that shared pages hold one key) quantized
// into a cache of NaN canaries, q as e4m3 codes, weights of std
// 1/sqrt(HI) (non-negative with a margin). The golden runs sequence by
// sequence over that sequence's pages alone, drawn into a local cache
// whose block i is the sequence's logical block i: its scores, selection
// and row info are those over the whole cache, bit for bit (each row reads
// its own sequence's slots only). So does the margin's planting: a
// demoted key must lie in a page no other sequence reads (checked against
// the whole block table), so demoting it changes no other sequence.
func newDSAProblem(c *caseCtx, p *dsaLayoutParams, nn, hi, di, k int, scaleFmt string, margin float64, tied bool) (*dsaProblem, error) {
	f, err := dsaScaleFmt(scaleFmt)
	if err != nil {
		return nil, err
	}
	l := newDSALayout(c, p)
	B := len(l.lens)
	pr := &dsaProblem{l: l, dims: golden.DSAIndexerDims{B: B, NN: nn, HI: hi, DI: di, NB: l.nb, MAXB: l.maxb, K: k}}
	pr.keys = &dsaKeys{ks: c.stream("k"), di: di, f: f, tied0: make([]bool, l.nb), halve: map[int]int{}}
	refs := make([]int, l.nb)
	for b, L := range l.lens {
		for i := range numBlocksDSA(int(L)) {
			refs[l.bt[b*l.maxb+i]]++
			if tied && b == 0 {
				pr.keys.tied0[l.bt[i]] = true
			}
		}
	}
	rows := B * nn
	pr.q = dsaE4M3Tensor(c.stream("q"), rows*hi*di, 1)
	pr.w = make([]float32, rows*hi)
	gen.Normal(c.stream("weights"), pr.w, 0, gen.F32, 1/math.Sqrt(float64(hi)))
	if margin > 0 {
		for i, x := range pr.w {
			pr.w[i] = float32(math.Abs(float64(x)))
		}
	}
	pr.margin, pr.refs = margin, refs
	return pr, nil
}

// solve runs the golden indexer, sequence by sequence (and plants the
// margin's demotions). Only the margin writes keys' state (halve), so
// without one the index cache may be written while solve runs.
func (pr *dsaProblem) solve(c *caseCtx) error {
	l, nn, hi, di, k, margin := pr.l, pr.dims.NN, pr.dims.HI, pr.dims.DI, pr.dims.K, pr.margin
	f := pr.keys.f
	rows := len(l.lens) * nn
	W := l.maxb * dsaPS
	pr.logits = make([]float64, rows*W)
	pr.tl, pr.tp = make([]int32, rows*k), make([]int32, rows*k)
	pr.info = make([]golden.DSARowInfo, rows)
	bb := golden.DSABlockBytes(di)
	var cache []byte
	var kf []float32
	var lg []float64
	scratch := make([]*dsaKeyScratch, dsaKeyWorkers())
	for w := range scratch {
		scratch[w] = pr.keys.scratch()
	}
	for b, L32 := range l.lens {
		L, nblk := int(L32), numBlocksDSA(int(L32))
		if cap(cache) < nblk*bb {
			cache = make([]byte, nblk*bb)
			hugemem.Advise(cache) // fresh pages fault in far fewer steps
		}
		cache = cache[:nblk*bb]
		// The margin keeps the sequence's keys (row = position); else each
		// worker one block's keys at a time.
		if margin > 0 && len(kf) < nblk*dsaPS*di {
			kf = make([]float32, nblk*dsaPS*di)
		}
		bt := make([]int32, nblk)
		for i := range nblk {
			bt[i] = int32(i)
		}
		// Blocks are independent: they are quantized in parallel.
		reg := trace.StartRegion(c.ctx, "dsa keys")
		err := eachBlock(nblk, scratch, func(i int, sc *dsaKeyScratch) error {
			n := min(dsaPS, L-i*dsaPS)
			kb := sc.kf[:n*di]
			if margin > 0 {
				kb = kf[i*dsaPS*di : (i*dsaPS+n)*di]
			}
			blk := cache[i*bb : (i+1)*bb]
			dsaFillCanarySlots(blk, di, n, dsaPS) // the slots past the sequence's end
			return pr.keys.quantize(blk, 0, l.slot(b, i*dsaPS), n, kb, sc.run)
		})
		reg.End()
		if err != nil {
			return fmt.Errorf("sequence %d: %w", b, err)
		}
		d := golden.DSAIndexerDims{B: 1, NN: nn, HI: hi, DI: di, NB: nblk, MAXB: nblk, K: k}
		qb, wb := pr.q[b*nn*hi*di:(b+1)*nn*hi*di], pr.w[b*nn*hi:(b+1)*nn*hi]
		if margin > 0 {
			// Local slot = logical position = row of kf.
			pos := make([]int32, L)
			for i := range pos {
				pos[i] = int32(i)
			}
			dem, err := golden.DSAIndexerMargin(kf[:L*di], pos, cache, golden.DSACacheDims{T: L, DI: di, NB: nblk}, f, qb, wb, bt, l.lens[b:b+1], d, margin)
			if err != nil {
				return fmt.Errorf("sequence %d: %w", b, err)
			}
			for _, x := range dem {
				x.Seq, x.Slot = b, l.slot(b, x.Pos)
				if pr.refs[x.Slot/dsaPS] > 1 {
					return fmt.Errorf("golden: dsa margin: sequence %d position %d lives in slot %d, which another row also sees: %w", b, x.Pos, x.Slot, golden.ErrInvalidParams)
				}
				pr.keys.halve[x.Slot] = x.Halvings
				pr.demoted = append(pr.demoted, x)
			}
		}
		lg = slices.Grow(lg[:0], nn*nblk*dsaPS)[:nn*nblk*dsaPS]
		tl, info := pr.tl[b*nn*k:(b+1)*nn*k], pr.info[b*nn:(b+1)*nn]
		reg = trace.StartRegion(c.ctx, "dsa indexer")
		err = golden.DSAIndexer(lg, tl, nil, info, qb, wb, cache, bt, l.lens[b:b+1], d)
		reg.End()
		if err != nil {
			return fmt.Errorf("sequence %d: %w", b, err)
		}
		for j := range nn {
			row := pr.logits[(b*nn+j)*W : (b*nn+j+1)*W]
			copy(row, lg[j*nblk*dsaPS:(j+1)*nblk*dsaPS])
			for i := nblk * dsaPS; i < W; i++ {
				row[i] = math.Inf(-1)
			}
		}
		for i, x := range tl {
			pr.tp[b*nn*k+i] = x
			if x >= 0 {
				pr.tp[b*nn*k+i] = int32(l.slot(b, int(x)))
			}
		}
		c.tick()
	}
	return nil
}

// writeCache writes the index_cache tensor [NB, 64*DI+256] block by block
// in physical order: NaN canaries, and the quantized key of every slot
// some row reads (demoted keys halved).
func (pr *dsaProblem) writeCache(c *caseCtx) error {
	return c.write(pr.cacheSpec(), pr.fillCache)
}

func (pr *dsaProblem) cacheSpec() tensorSpec {
	bb := golden.DSABlockBytes(pr.dims.DI)
	return tensorSpec{name: "index_cache", role: roleInput, dtype: "uint8", shape: []int64{int64(pr.l.nb), int64(bb)}}
}

// fillCache produces the cache in batches of about dsaFillBatch, each straight
// into a queued buffer of t, its blocks in parallel (the bytes do not
// depend on the worker count).
func (pr *dsaProblem) fillCache(t *tensorOut) error {
	l, di := pr.l, pr.dims.DI
	bb := golden.DSABlockBytes(di)
	scratch := make([]*dsaKeyScratch, dsaKeyWorkers())
	for w := range scratch {
		scratch[w] = pr.keys.scratch()
	}
	batch := max(1, dsaFillBatch/bb)
	for p0 := 0; p0 < l.nb; p0 += batch {
		p1 := min(l.nb, p0+batch)
		raw, err := t.reserve((p1 - p0) * bb)
		if err != nil {
			return err
		}
		err = eachBlock(p1-p0, scratch, func(i int, sc *dsaKeyScratch) error {
			p, blk := p0+i, raw[i*bb:(i+1)*bb]
			// Runs of slots some row reads (quantized keys) or none does
			// (canaries).
			for o := 0; o < dsaPS; {
				read, n := l.read[p*dsaPS+o], 1
				for o+n < dsaPS && l.read[p*dsaPS+o+n] == read {
					n++
				}
				if !read {
					dsaFillCanarySlots(blk, di, o, o+n)
				} else if err := pr.keys.quantize(blk, o, p*dsaPS+o, n, sc.kf, sc.run); err != nil {
					return err
				}
				o += n
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := t.submit(raw); err != nil {
			return err
		}
	}
	return nil
}

// dsaFillBatch is the bytes a cache fill produces per queued buffer: large
// enough for whole direct writes, small enough that the dozen caches a
// build streams at once hold little memory (their buffers wait in queues).
const dsaFillBatch = 1 << 20

// dsaKeyWorkers is how many workers draw and quantize keys.
func dsaKeyWorkers() int { return defaultJobs() }

// eachBlock calls fn(i, scratch) for the n blocks i in [0, n), in
// parallel over the workers' scratch, and returns the error of the lowest
// failing block. Blocks go out dsaMinBlocks at a time to whichever worker
// is free (small sequences stay on the calling goroutine): one contiguous
// share per worker would leave the last share running alone whenever a
// helper joins late on a busy machine.
func eachBlock(n int, scratch []*dsaKeyScratch, fn func(i int, sc *dsaKeyScratch) error) error {
	units := (n + dsaMinBlocks - 1) / dsaMinBlocks
	var mu sync.Mutex
	first, firstAt := error(nil), n
	cpuslots.For(len(scratch), units, func(w, u int) {
		for i := u * dsaMinBlocks; i < min(n, (u+1)*dsaMinBlocks); i++ {
			if err := fn(i, scratch[w]); err != nil {
				mu.Lock()
				if i < firstAt {
					first, firstAt = err, i
				}
				mu.Unlock()
				return
			}
		}
	})
	return first
}

// dsaMinBlocks is the key blocks eachBlock hands out at a time, the
// fewest worth a goroutine (one block is 8192 keys' values: about 10 µs
// of drawing and quantizing).
const dsaMinBlocks = 8

func buildDSAPaged(c *caseCtx, p *dsaIndexerParams) error {
	pr, err := newDSAProblem(c, &p.dsaLayoutParams, p.NN, p.HI, p.DI, p.K, p.ScaleFmt, p.Margin, p.Tied)
	if err != nil {
		return err
	}
	B, NN, W := int64(pr.dims.B), int64(p.NN), int64(pr.l.maxb*dsaPS)
	pr.l.facts(c, p.NN)
	if err := c.writeBytes(tensorSpec{name: "q", role: roleInput, dtype: "float8_e4m3fn", shape: []int64{B, NN, int64(p.HI), int64(p.DI)}}, pr.q); err != nil {
		return err
	}
	if err := c.writeFloat(tensorSpec{name: "weights", role: roleInput, dtype: "float32", shape: []int64{B, NN, int64(p.HI)}}, &floatTensor{dtype: "float32", dt: dtype.Float32, vals: pr.w}); err != nil {
		return err
	}
	if p.Margin > 0 {
		// The demotions change keys: the cache follows the golden.
		if err := pr.solve(c); err != nil {
			return err
		}
		if err := pr.writeCache(c); err != nil {
			return err
		}
	} else {
		// The cache streams while the golden runs (the device is busy
		// from the start).
		t, err := c.create(pr.cacheSpec())
		if err != nil {
			return err
		}
		wait := fillAsync(t, pr.fillCache)
		defer wait() // the fill ends before the builder returns
		if err := pr.solve(c); err != nil {
			return err
		}
		if err := wait(); err != nil {
			return err
		}
		if err := t.close(); err != nil {
			return err
		}
	}
	if err := pr.l.write(c); err != nil {
		return err
	}
	if err := c.writeRounded(tensorSpec{name: "logits", role: roleGolden, dtype: p.LogitsDType, shape: []int64{B, NN, W}}, pr.logits); err != nil {
		return err
	}
	kshape := []int64{B, NN, int64(p.K)}
	if err := c.writeInts(tensorSpec{name: "topk_logical", role: roleGolden, dtype: "int32", shape: kshape}, pr.tl); err != nil {
		return err
	}
	if err := c.writeInts(tensorSpec{name: "topk_physical", role: roleGolden, dtype: "int32", shape: kshape}, pr.tp); err != nil {
		return err
	}
	if err := pr.l.writeHeader(c); err != nil {
		return err
	}
	if err := c.writeRounded(tensorSpec{name: "index_scores", role: roleAux, dtype: "float64", shape: []int64{B, NN, W}}, pr.logits); err != nil {
		return err
	}
	if p.Margin > 0 {
		var dem []map[string]any
		for _, d := range pr.demoted {
			dem = append(dem, map[string]any{"seq": d.Seq, "pos": d.Pos, "slot": d.Slot, "halvings": d.Halvings, "before": d.Before, "after": d.After})
		}
		c.setInfo("margin_tau", p.Margin)
		c.setInfo("demotions", len(pr.demoted))
		if len(dem) <= 64 {
			c.setInfo("demoted", dem)
		}
	}
	return dsaRowInfo(c, pr.info, []int64{B, NN}, dsaEps(p.LogitsDType))
}

// dsaEps is the selection band of the logits dtype.
func dsaEps(logitsDType string) float64 {
	t, _ := compare.DSASelection.Tolerance("int32")
	return t.DSA.EpsRel[logitsDType]
}

func buildDSARagged(c *caseCtx, p *dsaIndexerParams) error {
	f, _ := dsaScaleFmt(p.ScaleFmt)
	ctx, ql := make([]int32, len(p.CtxLens)), make([]int32, len(p.QueryLens))
	T := 0
	for b := range ctx {
		ctx[b], ql[b] = int32(p.CtxLens[b]), int32(p.QueryLens[b])
		T += p.QueryLens[b]
	}
	ks, ke := make([]int32, T), make([]int32, T)
	S0, err := golden.DSACausalPrefillSpans(ks, ke, ctx, ql)
	if err != nil {
		return err
	}
	S := S0 + dsaRaggedCanaries
	c.addFact("kv_tokens", int64(S0))
	var scored int64
	for t := range ks {
		scored += int64(ke[t] - ks[t])
	}
	c.addFact("scored", scored)
	c.addFact("pages", 0)
	// Quantize the kv rows through the golden index-cache writer (one
	// slot per row), then read codes and scales back; the canary rows
	// past S0 stay NaN.
	nb := numBlocksDSA(S)
	cache := dsaCanaryCache(nb, p.DI)
	key := normalTensor(c.stream("kv"), "bfloat16", S0*p.DI, 0, 1)
	slots := make([]int32, S0)
	for i := range slots {
		slots[i] = int32(i)
	}
	if err := golden.DSAIndexCache(cache, key.vals, slots, cache, golden.DSACacheDims{T: S0, DI: p.DI, NB: nb}, f); err != nil {
		return err
	}
	kv := make([]byte, S*p.DI)
	kvScale := make([]float32, S)
	for s := range S {
		codes, sc := golden.DSACacheSlot(cache, s, p.DI)
		copy(kv[s*p.DI:], codes)
		kvScale[s] = sc
	}
	q := dsaE4M3Tensor(c.stream("q"), T*p.HI*p.DI, 1)
	w := make([]float32, T*p.HI)
	gen.Normal(c.stream("weights"), w, 0, gen.F32, 1/math.Sqrt(float64(p.HI)))
	logits := make([]float64, T*S)
	topk := make([]int32, T*p.K)
	info := make([]golden.DSARowInfo, T)
	dims := golden.DSARaggedDims{T: T, HI: p.HI, DI: p.DI, S: S, K: p.K}
	if err := golden.DSAIndexerRagged(logits, topk, info, q, w, kv, kvScale, ks, ke, dims); err != nil {
		return err
	}
	tt := int64(T)
	if err := c.writeBytes(tensorSpec{name: "q", role: roleInput, dtype: "float8_e4m3fn", shape: []int64{tt, int64(p.HI), int64(p.DI)}}, q); err != nil {
		return err
	}
	if err := c.writeFloat(tensorSpec{name: "weights", role: roleInput, dtype: "float32", shape: []int64{tt, int64(p.HI)}}, &floatTensor{dtype: "float32", dt: dtype.Float32, vals: w}); err != nil {
		return err
	}
	if err := c.writeBytes(tensorSpec{name: "kv", role: roleInput, dtype: "float8_e4m3fn", shape: []int64{int64(S), int64(p.DI)}}, kv); err != nil {
		return err
	}
	if err := c.writeFloat(tensorSpec{name: "kv_scale", role: roleInput, dtype: "float32", shape: []int64{int64(S)}}, &floatTensor{dtype: "float32", dt: dtype.Float32, vals: kvScale}); err != nil {
		return err
	}
	if err := c.writeInts(tensorSpec{name: "ks", role: roleInput, dtype: "int32", shape: []int64{tt}}, ks); err != nil {
		return err
	}
	if err := c.writeInts(tensorSpec{name: "ke", role: roleInput, dtype: "int32", shape: []int64{tt}}, ke); err != nil {
		return err
	}
	if err := c.writeRounded(tensorSpec{name: "logits", role: roleGolden, dtype: p.LogitsDType, shape: []int64{tt, int64(S)}}, logits); err != nil {
		return err
	}
	if err := c.writeInts(tensorSpec{name: "topk", role: roleGolden, dtype: "int32", shape: []int64{tt, int64(p.K)}}, topk); err != nil {
		return err
	}
	if err := c.writeRounded(tensorSpec{name: "index_scores", role: roleAux, dtype: "float64", shape: []int64{tt, int64(S)}}, logits); err != nil {
		return err
	}
	return dsaRowInfo(c, info, []int64{tt}, dsaEps(p.LogitsDType))
}

// dsaIndexerJudgeData gives compare the rows' golden scores, row info,
// block table and offsets.
func dsaIndexerJudgeData(d caseData, name string) (*compare.DSAData, error) {
	if name == "block_header" {
		return nil, nil
	}
	info, err := dsaReadRowInfo(d)
	if err != nil {
		return nil, err
	}
	lt := d.c.Tensor("logits").DType
	if name == "logits" {
		data := &compare.DSAData{RowScale: make([]float64, len(info))}
		for i, ri := range info {
			data.RowScale[i] = ri.A
		}
		return data, nil
	}
	scores, st, err := d.floats("index_scores")
	if err != nil {
		return nil, err
	}
	w := int(st.Shape[len(st.Shape)-1])
	data := &compare.DSAData{LogitsDType: lt, Rows: make([]golden.DSASelectionRow, len(info))}
	if name == "topk" { // ragged: kv-row indices, window [ks, ke)
		ks, err := d.i32("ks")
		if err != nil {
			return nil, err
		}
		data.Offsets = ks
		for r, ri := range info {
			lo := int(ks[r])
			data.Rows[r] = golden.DSASelectionRow{Scores: scores[r*w+lo : r*w+lo+ri.Visible], Info: ri}
		}
		return data, nil
	}
	var bt []int32
	maxb, nn := 0, int(d.c.Tensor("logits").Shape[1])
	if name == "topk_physical" {
		if bt, err = d.i32("block_table"); err != nil {
			return nil, err
		}
		maxb = int(d.c.Tensor("block_table").Shape[1])
	}
	for r, ri := range info {
		row := golden.DSASelectionRow{Scores: scores[r*w : r*w+ri.Visible], Info: ri}
		if bt != nil {
			b := r / nn
			row.Space, row.BlockTable, row.PS = golden.DSAPhysical, bt[b*maxb:(b+1)*maxb], dsaPS
		}
		data.Rows[r] = row
	}
	return data, nil
}

// dsaF32Opts are the faults of the fp32 scorer's negative variants.
type dsaF32Opts struct {
	reluAfter, noScale bool
}

// dsaF32Score is an honest low-precision indexer row: float32 dot
// products, float32 ReLU*weight sums and a float32 scale multiply.
func dsaF32Score(q []float32, w []float32, key func(pos int) ([]byte, float32), n, hi, di int, o dsaF32Opts) []float64 {
	out := make([]float64, n)
	kf := make([]float32, di)
	for pos := range n {
		codes, sc := key(pos)
		for d, c := range codes {
			kf[d] = float32(dtype.Float8E4M3FN.Widen(uint64(c)))
		}
		var sum float32
		for h := range hi {
			var dot float32
			for d := range di {
				dot += float32(q[h*di+d] * kf[d])
			}
			if o.reluAfter {
				sum += max(0, float32(w[h]*dot))
			} else {
				sum += float32(w[h] * max(0, dot))
			}
		}
		if !o.noScale {
			sum = float32(sum * sc)
		}
		out[pos] = float64(sum)
	}
	return out
}

// dsaTopK returns the min(k, n) best positions by (score descending,
// position ascending), then -1.
func dsaTopK(scores []float64, k int) []int32 {
	idx := make([]int32, len(scores))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int {
		if c := cmp.Compare(scores[b], scores[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	out := slices.Repeat([]int32{-1}, k)
	copy(out, idx[:min(k, len(idx))])
	return out
}

func toF64(v []int32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func dsaIndexerControls(d caseData) ([]Control, error) {
	var p dsaIndexerParams
	if err := json.Unmarshal(d.c.Params, &p); err != nil {
		return nil, err
	}
	if p.Layout == "ragged" {
		return dsaRaggedControls(d, &p)
	}
	qc, _, err := d.floats("q")
	if err != nil {
		return nil, err
	}
	q, qf := dsaCodes(qc)
	w, err := d.f32("weights")
	if err != nil {
		return nil, err
	}
	cv, _, err := d.floats("index_cache")
	if err != nil {
		return nil, err
	}
	cache := make([]byte, len(cv))
	for i, x := range cv {
		cache[i] = byte(x)
	}
	bt, err := d.i32("block_table")
	if err != nil {
		return nil, err
	}
	lens, err := d.i32("seq_lens")
	if err != nil {
		return nil, err
	}
	lt := d.c.Tensor("logits")
	B, NN, W := int(lt.Shape[0]), int(lt.Shape[1]), int(lt.Shape[2])
	maxb := int(d.c.Tensor("block_table").Shape[1])
	dims := golden.DSAIndexerDims{B: B, NN: NN, HI: p.HI, DI: p.DI, NB: int(d.c.Tensor("index_cache").Shape[0]), MAXB: maxb, K: p.K}
	rows := B * NN
	slotOf := func(b, pos int) int { return int(bt[b*maxb+pos/dsaPS])*dsaPS + pos%dsaPS }
	// kernel runs a golden-arithmetic variant and returns its outputs.
	kernel := func(f func([]float64, []int32, []int32, []golden.DSARowInfo, []uint8, []float32, []byte, []int32, []int32, golden.DSAIndexerDims) error) ([]ControlOutput, error) {
		logits, tl, tp := make([]float64, rows*W), make([]int32, rows*p.K), make([]int32, rows*p.K)
		if err := f(logits, tl, tp, nil, q, w, cache, bt, lens, dims); err != nil {
			return nil, err
		}
		return []ControlOutput{d.output("logits", logits), d.output("topk_logical", toF64(tl)), d.output("topk_physical", toF64(tp))}, nil
	}
	// The fp32 kernel, honest or with a fault.
	f32 := func(o dsaF32Opts) []ControlOutput {
		logits := slices.Repeat([]float64{math.Inf(-1)}, rows*W)
		tl, tp := make([]int32, 0, rows*p.K), make([]int32, 0, rows*p.K)
		for b := range B {
			for j := range NN {
				r := b*NN + j
				vis := int(lens[b]) - NN + j + 1
				sc := dsaF32Score(qf[r*p.HI*p.DI:(r+1)*p.HI*p.DI], w[r*p.HI:(r+1)*p.HI], func(pos int) ([]byte, float32) {
					return golden.DSACacheSlot(cache, slotOf(b, pos), p.DI)
				}, vis, p.HI, p.DI, o)
				copy(logits[r*W:], sc)
				top := dsaTopK(sc, p.K)
				tl = append(tl, top...)
				for _, x := range top {
					if x >= 0 {
						x = int32(slotOf(b, int(x)))
					}
					tp = append(tp, x)
				}
			}
		}
		return []ControlOutput{d.output("logits", logits), d.output("topk_logical", toF64(tl)), d.output("topk_physical", toF64(tp))}
	}
	ctl := []Control{zeros(d, "logits"),
		{Name: "fp32_accumulate", Pass: true, Note: "an honest kernel: fp32 dots, fp32 weighted ReLU sum and scale, top-k of the fp32 scores", Outputs: f32(dsaF32Opts{})}}
	if NN > 1 {
		outs, err := kernel(golden.DSAIndexerIgnoreCausal)
		if err != nil {
			return nil, err
		}
		ctl = append(ctl, Control{Name: "ignore_causal", Note: "every query row of a sequence sees all L tokens", Outputs: outs})
	}
	if slices.ContainsFunc(w, func(x float32) bool { return x < 0 }) {
		outs, err := kernel(golden.DSAIndexerReLUAfterWeight)
		if err != nil {
			return nil, err
		}
		ctl = append(ctl, Control{Name: "relu_after_weight", Note: "max(0, w*dot) instead of w*max(0, dot)", Outputs: outs})
	}
	outs, err := kernel(golden.DSAIndexerNoKScale)
	if err != nil {
		return nil, err
	}
	ctl = append(ctl, Control{Name: "no_k_scale", Note: "the per-token key scale left out", Outputs: outs})
	ctl = append(ctl, dsaRowNegatives(d, "topk_logical", p.K)...)
	ctl = append(ctl, dsaRowNegatives(d, "topk_physical", p.K)...)
	// Logical positions where physical slots are expected: wrong unless
	// the table is the identity over the selected tokens.
	tl, err := d.i32("topk_logical")
	if err != nil {
		return nil, err
	}
	tp, err := d.i32("topk_physical")
	if err != nil {
		return nil, err
	}
	if !slices.Equal(tl, tp) {
		ctl = append(ctl, Control{Name: "logical_as_physical", Note: "topk_physical holds the logical positions", Outputs: []ControlOutput{d.output("topk_physical", toF64(tl))}})
	}
	hc, err := headerControls(d)
	if err != nil {
		return nil, err
	}
	return append(ctl, hc...), nil
}

// dsaRowNegatives drops one selected index, duplicates one and shifts
// every index by one, in every row that has a valid entry.
func dsaRowNegatives(d caseData, name string, k int) []Control {
	v, err := d.i32(name)
	if err != nil {
		return nil
	}
	var ctl []Control
	for _, n := range []struct {
		name, note string
		f          func([]int32) []int32
		dupOnly    bool
	}{
		{"drop_index", "one selected index replaced by -1", golden.DSANegDropIndex, false},
		{"duplicate_index", "the last selected index replaced by the first", golden.DSANegDuplicateIndex, true},
		{"off_by_one", "every index + 1", golden.DSANegOffByOne, false},
	} {
		out := make([]int32, 0, len(v))
		changed := false
		for r := 0; r < len(v)/k; r++ {
			row := v[r*k : (r+1)*k]
			bad := n.f(row)
			changed = changed || !slices.Equal(bad, row)
			out = append(out, bad...)
		}
		if changed {
			ctl = append(ctl, Control{Name: name + "_" + n.name, Note: n.note, Outputs: []ControlOutput{d.output(name, toF64(out))}})
		}
	}
	return ctl
}

func dsaRaggedControls(d caseData, p *dsaIndexerParams) ([]Control, error) {
	qc, _, err := d.floats("q")
	if err != nil {
		return nil, err
	}
	_, qf := dsaCodes(qc)
	w, err := d.f32("weights")
	if err != nil {
		return nil, err
	}
	kvv, _, err := d.floats("kv")
	if err != nil {
		return nil, err
	}
	kv, _ := dsaCodes(kvv)
	kvScale, err := d.f32("kv_scale")
	if err != nil {
		return nil, err
	}
	ks, err := d.i32("ks")
	if err != nil {
		return nil, err
	}
	ke, err := d.i32("ke")
	if err != nil {
		return nil, err
	}
	T, S := len(ks), len(kvScale)
	// The fp32 kernel; ignoreCausal: every row sees its whole sequence
	// (ke of the sequence's last row).
	run := func(o dsaF32Opts, ignoreCausal bool) []ControlOutput {
		logits := slices.Repeat([]float64{math.Inf(-1)}, T*S)
		topk := make([]int32, 0, T*p.K)
		for r := range T {
			lo, hi := int(ks[r]), int(ke[r])
			if ignoreCausal {
				for j := r; j < T && ks[j] == ks[r]; j++ {
					hi = int(ke[j])
				}
			}
			sc := dsaF32Score(qf[r*p.HI*p.DI:(r+1)*p.HI*p.DI], w[r*p.HI:(r+1)*p.HI], func(pos int) ([]byte, float32) {
				return kv[(lo+pos)*p.DI : (lo+pos+1)*p.DI], kvScale[lo+pos]
			}, hi-lo, p.HI, p.DI, o)
			copy(logits[r*S+lo:], sc)
			for _, x := range dsaTopK(sc, p.K) {
				if x >= 0 {
					x += int32(lo)
				}
				topk = append(topk, x)
			}
		}
		return []ControlOutput{d.output("logits", logits), d.output("topk", toF64(topk))}
	}
	ctl := []Control{zeros(d, "logits"),
		{Name: "fp32_accumulate", Pass: true, Note: "an honest kernel: fp32 dots, fp32 weighted ReLU sum and scale", Outputs: run(dsaF32Opts{}, false)},
		{Name: "ignore_causal", Note: "every row sees its whole chunk (ke of the sequence's last row)", Outputs: run(dsaF32Opts{}, true)},
		{Name: "no_k_scale", Note: "the per-row kv scale left out", Outputs: run(dsaF32Opts{noScale: true}, false)},
	}
	if slices.ContainsFunc(w, func(x float32) bool { return x < 0 }) {
		ctl = append(ctl, Control{Name: "relu_after_weight", Note: "max(0, w*dot) instead of w*max(0, dot)", Outputs: run(dsaF32Opts{reluAfter: true}, false)})
	}
	return append(ctl, dsaRowNegatives(d, "topk", p.K)...), nil
}

// dsaCodes turns decoded e4m3 values (exact) back into their codes, with
// their float32 values.
func dsaCodes(v []float64) ([]byte, []float32) {
	codes, f := make([]byte, len(v)), make([]float32, len(v))
	for i, x := range v {
		codes[i] = dtype.E4M3FromF64(x)
		f[i] = float32(x)
	}
	return codes, f
}

// dsaIndexCacheWork: slot_mapping read whole; the bf16 key rows of the
// slots_written non-negative slots read, their fp8 codes and scale
// written in place; quantizing costs an abs-max and a scale an element.
func dsaIndexCacheWork(w workIn) (manifests.Work, error) {
	p, err := decodeWork[dsaCacheParams](w)
	if err != nil {
		return manifests.Work{}, err
	}
	n, err := w.fact("slots_written")
	if err != nil {
		return manifests.Work{}, err
	}
	sm, err := w.bytes("slot_mapping")
	if err != nil {
		return manifests.Work{}, err
	}
	return manifests.Work{BytesRead: sm + n*int64(p.DI)*2, BytesWritten: n * int64(golden.DSABlockBytes(p.DI)/dsaPS),
		Flops: 2 * n * int64(p.DI), FlopDType: "bfloat16"}, nil
}

// dsaIndexerWork: q, weights and the sequence metadata read whole, the
// block-table entries of referenced pages (paged) and each distinct key a
// row sees once (codes and scale); every (row, key) pair scored costs each
// indexer head a di-long fp8 product and its ReLU-weighted sum. The
// outputs are written whole.
func dsaIndexerWork(w workIn) (manifests.Work, error) {
	p, err := decodeWork[dsaIndexerParams](w)
	if err != nil {
		return manifests.Work{}, err
	}
	_, out, _ := dsaIndexerTensors(w.params)
	whole := []string{"q", "weights", "seq_lens"}
	if p.Layout == "ragged" {
		whole = []string{"q", "weights", "ks", "ke"}
	}
	var s sumErr
	s.add(w.bytes(whole...))
	keys, err := w.fact("kv_tokens")
	s.add(keys*int64(p.DI+4), err)
	pages, err := w.fact("pages")
	s.add(4*pages, err)
	scored, err := w.fact("scored")
	s.add(0, err)
	wr, err := w.bytes(out...)
	s.add(0, err)
	if s.err != nil {
		return manifests.Work{}, s.err
	}
	return manifests.Work{BytesRead: s.v, BytesWritten: wr, Flops: scored * int64(p.HI) * int64(2*p.DI+2), FlopDType: "float8_e4m3fn"}, nil
}
