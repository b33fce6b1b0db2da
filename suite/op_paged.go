package suite

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/goldset/goldset/compare"
	"github.com/goldset/goldset/golden"
	"github.com/goldset/goldset/manifests"
)

// paged_attention: decode attention over a paged KV cache, one query
// token per sequence, GQA (docs/spec.md §4).
var _ = register(&op{
	name:     "paged_attention",
	export:   exportSpec{flashinfer: "gqa_paged", ascend: "PagedAttention", axes: pagedAxes},
	inputs:   pagedInputNames,
	outputs:  attentionOutputs,
	plan:     planPagedAttention,
	controls: attentionControls,
	work:     pagedWork,
})

// pagedAxes names the dimensions of paged_attention's tensors for the
// exporters; questAxes adds quest's block metadata and selection.
var pagedAxes = map[string][]string{
	"query": {"B", "HQ", "D"}, "key_cache": {"NB", "BS", "HKV", "D"}, "value_cache": {"NB", "BS", "HKV", "D"},
	"block_tables": {"B", "MB"}, "context_lens": {"B"}, "out": {"B", "HQ", "D"}, "lse": {"B", "HQ"},
}

// pagedInputNames are the inputs of paged_attention and quest.
var pagedInputNames = []string{"query", "key_cache", "value_cache", "block_tables", "context_lens"}

// attentionOutputs are paged_attention's outputs, which quest has too.
var attentionOutputs = []output{
	{name: "out", truth: true, tol: compare.AttentionLike},
	{name: "lse", dtype: "float32", tol: compare.LSE},
}

// ---- paged_attention (docs/spec.md §4) ----

func planPagedAttention(raw json.RawMessage) (*casePlan, error) {
	var p pagedParams
	p.PadValue = -1
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if err := p.fill(); err != nil {
		return nil, err
	}
	if p.Needle == "exclude" {
		return nil, errParams("needle \"exclude\" is a quest placement")
	}
	return &casePlan{params: canonical(p), dtype: p.DType, bytes: p.estimateBytes(), build: func(c *caseCtx) error { return buildPagedAttention(c, &p) }}, nil
}

// estimateBytes approximates the tensor bytes (for progress only).
func (p *pagedParams) estimateBytes() int64 {
	var tokens int64
	B := len(p.ContextLens)
	if B > 0 {
		for _, l := range p.ContextLens {
			tokens += int64((l+p.BS-1)/p.BS) * int64(p.BS)
		}
	} else {
		B = p.B
		tokens = int64(float64(p.B) * p.LenMean)
	}
	tokens += int64(p.MinBlock+p.ExtraBlocks) * int64(p.BS)
	return 2*tokens*int64(p.Hkv*p.D)*dtypeSize(p.DType) + int64(B*p.Hq*p.D)*(dtypeSize(p.DType)+4)
}

func buildPagedAttention(c *caseCtx, p *pagedParams) error {
	l, err := newLayout(c, p)
	if err != nil {
		return err
	}
	layoutInfo(c, l)
	q, ks, vs := pagedInputs(c, p, l)
	B := len(l.lens)
	out := make([]float64, B*p.Hq*p.D)
	lse := make([]float64, B*p.Hq)
	W := seqWorkers()
	feeds := make([]*seqFeed, W)
	for w := range feeds {
		feeds[w] = newSeqFeed(l, ks, vs)
	}
	err = whileWriting(func(gate func(int), stopped func() bool) error {
		return forOrdered(W, 2*W, B, gate, func(b, w int) error {
			if err := c.ctx.Err(); err != nil {
				return err
			}
			if stopped() {
				return errWriteFailed
			}
			return feeds[w].pagedAttention(out[b*p.Hq*p.D:(b+1)*p.Hq*p.D], lse[b*p.Hq:(b+1)*p.Hq],
				q.vals[b*p.Hq*p.D:(b+1)*p.Hq*p.D], b, seqDims(p, l.nb[b]), p.Scale)
		}, func(int) error { c.tick(); return nil })
	}, func() error { return writePagedInputs(c, p, l, &q, ks, vs, nil) })
	if err != nil {
		return err
	}
	shape := []int64{int64(B), int64(p.Hq), int64(p.D)}
	if err := c.writeOutput("out", p.DType, shape, out); err != nil {
		return err
	}
	return c.writeRounded(tensorSpec{name: "lse", role: roleGolden, dtype: "float32", shape: []int64{int64(B), int64(p.Hq)}}, lse)
}

func attentionControls(d caseData) ([]Control, error) {
	var p questParams
	if err := json.Unmarshal(d.c.Params, &p); err != nil {
		return nil, err
	}
	q, err := d.f32("query")
	if err != nil {
		return nil, err
	}
	kc, err := d.f32("key_cache")
	if err != nil {
		return nil, err
	}
	vc, err := d.f32("value_cache")
	if err != nil {
		return nil, err
	}
	bt, err := d.i32("block_tables")
	if err != nil {
		return nil, err
	}
	cl, err := d.i32("context_lens")
	if err != nil {
		return nil, err
	}
	btT := d.c.Tensor("block_tables")
	kT := d.c.Tensor("key_cache")
	dims := golden.AttentionDims{B: len(cl), Hq: p.Hq, Hkv: p.Hkv, D: p.D, NB: int(kT.Shape[0]), BS: p.BS, MAXB: int(btT.Shape[1])}
	B, Hq, D := dims.B, p.Hq, p.D
	quest := d.c.Op == "quest"
	var sel []int32
	var qp golden.QuestParams
	if quest {
		if sel, err = d.i32("selected"); err != nil {
			return nil, err
		}
		qp = p.golden()
	}
	type attnFn func(out, lse []float64) error
	run := func(dense, sparse func(out, lse []float64, q, k, v []float32, bt, cl, sel []int32) error) attnFn {
		return func(out, lse []float64) error {
			if quest {
				return sparse(out, lse, q, kc, vc, bt, cl, sel)
			}
			return dense(out, lse, q, kc, vc, bt, cl, nil)
		}
	}
	variant := func(name, note string, pass bool, f attnFn) (Control, error) {
		out, lse := make([]float64, B*Hq*D), make([]float64, B*Hq)
		if err := f(out, lse); err != nil {
			return Control{}, fmt.Errorf("%s: %w", name, err)
		}
		outs := []ControlOutput{d.output("out", out)}
		if pass {
			outs = append(outs, d.output("lse", lse))
		}
		return Control{Name: name, Pass: pass, Note: note, Outputs: outs}, nil
	}
	wrap := func(f func(out, lse []float64, q, k, v []float32, bt, cl []int32, dims golden.AttentionDims, scale float64) error) func(out, lse []float64, q, k, v []float32, bt, cl, sel []int32) error {
		return func(out, lse []float64, q, k, v []float32, bt, cl, _ []int32) error {
			return f(out, lse, q, k, v, bt, cl, dims, p.Scale)
		}
	}
	wrapS := func(f func(out, lse []float64, q, k, v []float32, bt, cl, sel []int32, dims golden.AttentionDims, p golden.QuestParams, scale float64) error) func(out, lse []float64, q, k, v []float32, bt, cl, sel []int32) error {
		return func(out, lse []float64, q, k, v []float32, bt, cl, sel []int32) error {
			return f(out, lse, q, k, v, bt, cl, sel, dims, qp, p.Scale)
		}
	}
	ctl := []Control{zeros(d, "out")}
	type spec struct {
		name, note string
		pass, when bool
		f          attnFn
	}
	tail := false
	for _, L := range cl {
		tail = tail || int(L)%p.BS != 0
	}
	specs := []spec{
		{"wrong_gqa", "query head h reads KV head h % Hkv instead of h / G", false, p.Hkv > 1 && p.Hq > p.Hkv,
			run(wrap(golden.PagedAttentionWrongGQA), wrapS(golden.SparseAttentionWrongGQA))},
		{"unmasked_tail", "the slots past L in the last block are attended", false, tail,
			run(wrap(golden.PagedAttentionTailUnmasked), wrapS(golden.SparseAttentionTailUnmasked))},
		{"skip_block", "the selected block with the largest softmax mass is left out", false, quest,
			run(nil, wrapS(golden.SparseAttentionSkipBlock))},
		{"fp32_accumulate", "an honest kernel: fp32 dot products, online softmax and accumulation", true, true,
			run(wrap(golden.PagedAttentionF32), wrapS(golden.SparseAttentionF32))},
	}
	for _, s := range specs {
		if !s.when {
			continue
		}
		c, err := variant(s.name, s.note, s.pass, s.f)
		if err != nil {
			return nil, err
		}
		ctl = append(ctl, c)
	}
	// lse is float32: a bf16 round trip of it must fail.
	lseT, _, err := d.floats("lse")
	if err != nil {
		return nil, err
	}
	ctl = append(ctl, Control{Name: "bf16_roundtrip", Note: "the float32 lse rounded through bfloat16", Outputs: []ControlOutput{d.output("lse", bf16RoundTrip(lseT))}})
	if quest {
		if bad, ok := wrongSelection(sel, cl, p.BS, p.K); ok {
			ctl = append(ctl, Control{Name: "wrong_selection", Note: "one selected block replaced by an unselected one", Outputs: []ControlOutput{d.output("selected", bad)}})
		}
	}
	return ctl, nil
}

// wrongSelection swaps the first selected block of the first row that
// leaves a block out for the lowest unselected one.
func wrongSelection(sel, cl []int32, bs, k int) ([]float64, bool) {
	rows := len(sel) / k
	perSeq := rows / len(cl)
	out := make([]float64, len(sel))
	for i, s := range sel {
		out[i] = float64(s)
	}
	for r := 0; r < rows; r++ {
		nb := (int(cl[r/perSeq]) + bs - 1) / bs
		row := sel[r*k : (r+1)*k]
		if nb <= k {
			continue
		}
		for cand := 0; cand < nb; cand++ {
			if !slices.Contains(row, int32(cand)) {
				out[r*k] = float64(cand)
				return out, true
			}
		}
	}
	return nil, false
}

// pagedWork: query and context_lens read whole, the block-table entries
// of the referenced pages, and K and V of every distinct valid token once
// (padding past L and unreferenced blocks are not read); out and lse
// written. Each (query head, valid token) pair costs a QK and a PV
// product of length d.
func pagedWork(w workIn) (manifests.Work, error) {
	p, err := decodeWork[pagedParams](w)
	if err != nil {
		return manifests.Work{}, err
	}
	tok := int64(p.Hkv*p.D) * dtypeSize(p.DType)
	var s sumErr
	s.add(w.bytes("query", "context_lens"))
	pages, err := w.fact("pages")
	s.add(4*pages, err)
	kv, err := w.fact("kv_tokens")
	s.add(2*kv*tok, err)
	tokens, err := w.fact("tokens")
	s.add(0, err)
	wr, err := w.bytes("out", "lse")
	s.add(0, err)
	if s.err != nil {
		return manifests.Work{}, s.err
	}
	return manifests.Work{BytesRead: s.v, BytesWritten: wr, Flops: 4 * tokens * int64(p.Hq*p.D), FlopDType: p.DType}, nil
}
