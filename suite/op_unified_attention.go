package suite

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/goldset/goldset/golden"
)

// unified_attention: vLLM V1's mixed-batch paged attention (decode rows,
// speculative verify rows and prefill chunks over a cached prefix in one
// call), optionally padded the way CUDA graph capture pads a batch
// (docs/spec.md §12).
var _ = register(&op{
	name:     "unified_attention",
	inputs:   []string{"query", "key_cache", "value_cache", "block_table", "seq_lens", "query_start_loc"},
	outputs:  attentionOutputs,
	plan:     planUnified,
	controls: unifiedControls,
	mask:     unifiedMask,
})

// unifiedRowParam is one sequence of a batch: q_len new tokens, context
// tokens in the cache after the write (vLLM's seq_lens: the prefix plus
// the q_len new ones).
type unifiedRowParam struct {
	QLen    int `json:"q_len"`
	Context int `json:"context"`
}

// unifiedMix draws a batch: Decode rows of q_len 1, Spec rows of q_len
// SpecLen (2..4: a speculative verify), Chunks prefill chunks of q_len
// ChunkLen; every row's context is drawn uniformly in [q_len + MinPrefix,
// ContextMax] (a chunk of ChunkLen with at least MinPrefix cached tokens
// before it). Rows are in the order decode, spec, chunk, then shuffled.
type unifiedMix struct {
	Decode     int `json:"decode,omitempty"`
	Spec       int `json:"spec,omitempty"`
	SpecLen    int `json:"spec_len,omitempty"`
	Chunks     int `json:"chunks,omitempty"`
	ChunkLen   int `json:"chunk_len,omitempty"`
	MinPrefix  int `json:"min_prefix,omitempty"`
	ContextMax int `json:"context_max"`
}

// captureSizes are the batch sizes graph padding rounds num_tokens up to
// (powers of two to 512; above the largest, vLLM runs eagerly: no padding).
var captureSizes = []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512}

type unifiedParams struct {
	Hq    int    `json:"hq"`
	Hkv   int    `json:"hkv"`
	D     int    `json:"d"`
	BS    int    `json:"bs"`
	DType string `json:"dtype"`
	// Rows lists the sequences, or Mix draws them (exactly one).
	Rows []unifiedRowParam `json:"rows,omitempty"`
	Mix  *unifiedMix       `json:"mix,omitempty"`
	// GraphPad pads num_tokens to the next capture size (PadTokens, the
	// padded total, is then recorded) and, for a uniform batch (every
	// q_len u), num_seqs to PadTokens/u with zero-length requests; PadSeqs
	// gives the padded requests explicitly.
	GraphPad  bool `json:"graph_pad,omitempty"`
	PadTokens int  `json:"pad_tokens,omitempty"`
	PadSeqs   int  `json:"pad_seqs,omitempty"`
	// MaxBlocks, PadValue, Hostile, SharedBlocks, ExtraBlocks, Scale: as
	// paged_attention's (Hostile also makes the padded tokens' queries NaN
	// and points the padded requests' tables at the NaN block).
	MaxBlocks    int     `json:"max_blocks"`
	PadValue     int     `json:"pad_value"`
	Hostile      bool    `json:"hostile,omitempty"`
	SharedBlocks int     `json:"shared_blocks,omitempty"`
	ExtraBlocks  int     `json:"extra_blocks,omitempty"`
	Scale        float64 `json:"scale"`
}

func (p *unifiedParams) fill() error {
	if (len(p.Rows) == 0) == (p.Mix == nil) {
		return errParams("give rows or mix (exactly one)")
	}
	if len(p.Rows) > maxBatch {
		return errParams("more than %d rows", maxBatch)
	}
	for i, r := range p.Rows {
		if err := checkRange(fmt.Sprintf("rows[%d].q_len", i), r.QLen, 1, maxContext); err != nil {
			return err
		}
		if err := checkRange(fmt.Sprintf("rows[%d].context", i), r.Context, r.QLen, maxContext); err != nil {
			return err
		}
	}
	if m := p.Mix; m != nil {
		if m.Spec > 0 && m.SpecLen == 0 {
			m.SpecLen = 3
		}
		for _, e := range []error{checkRange("mix.decode", m.Decode, 0, maxBatch), checkRange("mix.spec", m.Spec, 0, maxBatch),
			checkRange("mix.chunks", m.Chunks, 0, maxBatch), checkRange("mix.spec_len", m.SpecLen, 0, 4),
			checkRange("mix.chunk_len", m.ChunkLen, 0, maxContext), checkRange("mix.min_prefix", m.MinPrefix, 0, maxContext),
			checkRange("mix.context_max", m.ContextMax, 1, maxContext)} {
			if e != nil {
				return e
			}
		}
		if n := m.Decode + m.Spec + m.Chunks; n < 1 || n > maxBatch {
			return errParams("mix: %d rows, want 1..%d", n, maxBatch)
		}
		if m.Spec > 0 && m.SpecLen < 2 {
			return errParams("mix.spec_len = %d, want 2..4", m.SpecLen)
		}
		if m.Chunks > 0 && m.ChunkLen < 1 {
			return errParams("mix: chunks need chunk_len >= 1")
		}
		if longest := max(1, m.SpecLen, m.ChunkLen) + m.MinPrefix; longest > m.ContextMax {
			return errParams("mix.context_max = %d is below a row's q_len + min_prefix = %d", m.ContextMax, longest)
		}
	}
	base := pagedParams{Hq: p.Hq, Hkv: p.Hkv, D: p.D, BS: p.BS, DType: p.DType, ContextLens: []int{1}, MaxBlocks: p.MaxBlocks,
		PadValue: p.PadValue, SharedBlocks: p.SharedBlocks, ExtraBlocks: p.ExtraBlocks, Scale: p.Scale}
	if err := base.fill(); err != nil {
		return err
	}
	p.Scale = base.Scale
	if err := checkRange("pad_seqs", p.PadSeqs, 0, maxBatch); err != nil {
		return err
	}
	if p.PadValue != -1 && p.PadValue != 0 {
		return errParams("pad_value = %d: want -1 or 0", p.PadValue)
	}
	if len(p.Rows) > 0 {
		return p.fillPadding(p.Rows)
	}
	return nil
}

// fillPadding checks (or, with graph_pad, computes) the padded num_tokens
// and requests of a batch with the given rows.
func (p *unifiedParams) fillPadding(rows []unifiedRowParam) error {
	tokens, uniform := 0, true
	for _, r := range rows {
		tokens += r.QLen
		uniform = uniform && r.QLen == rows[0].QLen
	}
	if p.GraphPad {
		i, _ := slices.BinarySearch(captureSizes, tokens)
		want := tokens // above the largest capture size: eager, unpadded
		if i < len(captureSizes) {
			want = captureSizes[i]
		}
		if p.PadTokens != 0 && p.PadTokens != want {
			return errParams("pad_tokens = %d, but graph padding of %d tokens gives %d", p.PadTokens, tokens, want)
		}
		p.PadTokens = want
		if p.PadSeqs == 0 && uniform && want%rows[0].QLen == 0 {
			p.PadSeqs = want/rows[0].QLen - len(rows)
		}
	}
	if p.PadTokens == 0 {
		p.PadTokens = tokens
	}
	if p.PadTokens < tokens || p.PadTokens > maxContext {
		return errParams("pad_tokens = %d: want %d..%d (the batch has %d tokens)", p.PadTokens, tokens, maxContext, tokens)
	}
	return nil
}

func planUnified(raw json.RawMessage) (*casePlan, error) {
	var p unifiedParams
	p.PadValue = -1
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if err := p.fill(); err != nil {
		return nil, err
	}
	var tokens, ctx int64
	if len(p.Rows) > 0 {
		for _, r := range p.Rows {
			ctx += int64(r.Context)
		}
		tokens = int64(p.PadTokens)
	} else {
		m := p.Mix
		n := int64(m.Decode + m.Spec + m.Chunks)
		tokens = int64(m.Decode + m.Spec*m.SpecLen + m.Chunks*m.ChunkLen)
		ctx = n * int64(m.ContextMax)
	}
	if err := checkHeld("query", int(tokens), p.Hq, p.D); err != nil {
		return nil, err
	}
	es := dtypeSize(p.DType)
	bytes := 2*ctx*int64(p.Hkv*p.D)*es + tokens*int64(p.Hq*p.D)*(2*es+4)
	return &casePlan{params: canonical(p), dtype: p.DType, bytes: bytes, build: func(c *caseCtx) error { return buildUnified(c, &p) }}, nil
}

// rows returns the batch's sequences (drawn for a mix, whose padding it
// then fills in: p is the build's copy).
func (p *unifiedParams) rows(c *caseCtx) ([]unifiedRowParam, error) {
	if len(p.Rows) > 0 {
		return p.Rows, nil
	}
	m := p.Mix
	r := c.stream("rows").Rand()
	var rows []unifiedRowParam
	add := func(n, q int) {
		for range n {
			lo := q + m.MinPrefix
			rows = append(rows, unifiedRowParam{QLen: q, Context: lo + r.IntN(m.ContextMax-lo+1)})
		}
	}
	add(m.Decode, 1)
	add(m.Spec, m.SpecLen)
	add(m.Chunks, m.ChunkLen)
	shuffled := make([]unifiedRowParam, len(rows))
	for i, j := range r.Perm(len(rows)) {
		shuffled[i] = rows[j]
	}
	rows = shuffled
	if err := p.fillPadding(rows); err != nil {
		return nil, err
	}
	return rows, nil
}

// unifiedBatch is a planned batch: the real rows' layout plus the padding.
type unifiedBatch struct {
	rows []unifiedRowParam
	l    *layout // the real sequences
	T, S int     // padded num_tokens and num_seqs
	qsl  []int32 // [S+1]
	sl   []int32 // [S]
	bt   []int32 // [S, MAXB]
}

func newUnifiedBatch(c *caseCtx, plan *unifiedParams) (*unifiedBatch, error) {
	p := *plan // the padding of a mix is filled in here, not in the plan
	rows, err := p.rows(c)
	if err != nil {
		return nil, err
	}
	pp := &pagedParams{Hq: p.Hq, Hkv: p.Hkv, D: p.D, BS: p.BS, DType: p.DType, MaxBlocks: p.MaxBlocks, PadValue: p.PadValue,
		Hostile: p.Hostile, SharedBlocks: p.SharedBlocks, ExtraBlocks: p.ExtraBlocks, Scale: p.Scale}
	for _, r := range rows {
		pp.ContextLens = append(pp.ContextLens, r.Context)
	}
	l, err := newLayout(c, pp)
	if err != nil {
		return nil, err
	}
	b := &unifiedBatch{rows: rows, l: l, T: p.PadTokens, S: len(rows) + p.PadSeqs}
	if err := checkHeld("block_table", b.S, l.maxb); err != nil {
		return nil, err
	}
	b.qsl = make([]int32, b.S+1)
	b.sl = make([]int32, b.S)
	for s := range b.S {
		q := 0
		if s < len(rows) {
			q = rows[s].QLen
			b.sl[s] = int32(rows[s].Context)
		}
		b.qsl[s+1] = b.qsl[s] + int32(q)
	}
	// Padded requests: vLLM fills seq_lens 0 and repeats query_start_loc;
	// their table rows hold the pad value (or the NaN block when hostile).
	pad := int32(p.PadValue)
	if l.poison >= 0 {
		pad = int32(l.poison)
	}
	b.bt = append(slices.Clone(l.bt), slices.Repeat([]int32{pad}, p.PadSeqs*l.maxb)...)
	return b, nil
}

func buildUnified(c *caseCtx, p *unifiedParams) error {
	b, err := newUnifiedBatch(c, p)
	if err != nil {
		return err
	}
	l := b.l
	layoutInfo(c, l)
	actual := int(b.qsl[b.S])
	c.setInfo("num_actual_tokens", actual)
	c.setInfo("num_reqs", len(b.rows))
	if len(p.Rows) == 0 {
		c.setInfo("rows", b.rows)
	}
	hd := p.Hq * p.D
	q := normalTensor(c.stream("query"), p.DType, b.T*hd, 0, 1)
	if p.Hostile {
		for i := actual * hd; i < b.T*hd; i++ {
			q.set(i, math.NaN())
		}
	}
	ks := &kvSource{l: l, dtype: p.DType, key: true, stream: c.stream("key_cache")}
	vs := &kvSource{l: l, dtype: p.DType, stream: c.stream("value_cache")}
	out := make([]float64, b.T*hd)
	lse := make([]float64, b.T*p.Hq)
	W := seqWorkers()
	scs := make([]*seqScratch, W)
	for w := range scs {
		scs[w] = newSeqScratch(l, p.DType)
	}
	err = whileWriting(func(gate func(int), stopped func() bool) error {
		return forOrdered(W, 2*W, len(b.rows), gate, func(s, w int) error {
			if err := c.ctx.Err(); err != nil {
				return err
			}
			if stopped() {
				return errWriteFailed
			}
			sc, nb := scs[w], l.nb[s]
			sc.gather(ks, vs, s)
			t0, t1 := int(b.qsl[s]), int(b.qsl[s+1])
			return sc.unifiedAttention(out[t0*hd:t1*hd], lse[t0*p.Hq:t1*p.Hq], q.vals[t0*hd:t1*hd], b.rows[s], p, nb)
		}, func(int) error { c.tick(); return nil })
	}, func() error { return b.writeInputs(c, &q, ks, vs) })
	if err != nil {
		return err
	}
	if err := c.writeOutput("out", p.DType, []int64{int64(b.T), int64(p.Hq), int64(p.D)}, out); err != nil {
		return err
	}
	return c.writeRounded(tensorSpec{name: "lse", role: roleGolden, dtype: "float32", shape: []int64{int64(b.T), int64(p.Hq)}}, lse)
}

// unifiedAttention runs the golden on one gathered sequence (identity
// block table) and its q_len tokens.
func (sc *seqScratch) unifiedAttention(out, lse []float64, q []float32, r unifiedRowParam, p *unifiedParams, nb int) error {
	dims := golden.UnifiedDims{T: r.QLen, S: 1, Hq: p.Hq, Hkv: p.Hkv, D: p.D, NB: nb, BS: p.BS, MAXB: nb}
	n, bt := nb*p.BS*p.Hkv*p.D, sc.bt[:nb]
	sl, qsl := []int32{int32(r.Context)}, []int32{0, int32(r.QLen)}
	if sc.k.bits != nil {
		return golden.UnifiedAttentionHalf(out, lse, q, sc.k.bits[:n], sc.v.bits[:n], halfType(sc.k.dtype), bt, sl, qsl, dims, p.Scale)
	}
	return golden.UnifiedAttention(out, lse, q, sc.k.vals[:n], sc.v.vals[:n], bt, sl, qsl, dims, p.Scale)
}

func (b *unifiedBatch) writeInputs(c *caseCtx, q *floatTensor, ks, vs *kvSource) error {
	if err := writeQueryCaches(c, b.l, b.T, q, ks, vs, nil); err != nil {
		return err
	}
	l := b.l
	for _, t := range []struct {
		name  string
		shape []int64
		v     []int32
	}{{"block_table", []int64{int64(b.S), int64(l.maxb)}, b.bt}, {"seq_lens", []int64{int64(b.S)}, b.sl}, {"query_start_loc", []int64{int64(b.S + 1)}, b.qsl}} {
		if err := c.writeInts(tensorSpec{name: t.name, role: roleInput, dtype: "int32", shape: t.shape}, t.v); err != nil {
			return err
		}
	}
	return nil
}

// unifiedMask grades out and lse only for the tokens of real sequences
// (t < query_start_loc[num_seqs]); graph padding is not graded.
func unifiedMask(d caseData, output string, shape []int64) ([]bool, error) {
	if output != "out" && output != "lse" {
		return nil, nil
	}
	qsl, err := d.i32("query_start_loc")
	if err != nil {
		return nil, err
	}
	if len(shape) < 2 || len(qsl) == 0 || int64(qsl[len(qsl)-1]) > shape[0] || qsl[len(qsl)-1] < 0 {
		return nil, fmt.Errorf("case %s: query_start_loc %v does not fit %s %v", d.c.ID, qsl[len(qsl)-1:], output, shape)
	}
	inner := int64(1)
	for _, s := range shape[1:] {
		inner *= s
	}
	mask := make([]bool, shape[0]*inner)
	for i := range int64(qsl[len(qsl)-1]) * inner {
		mask[i] = true
	}
	return mask, nil
}

// unifiedInputs are a built case's inputs, caches widened to float32.
type unifiedInputs struct {
	q, kc, vc   []float32
	bt, sl, qsl []int32
	dims        golden.UnifiedDims
	scale       float64
}

func loadUnified(d caseData) (*unifiedInputs, error) {
	var p unifiedParams
	if err := json.Unmarshal(d.c.Params, &p); err != nil {
		return nil, err
	}
	in := &unifiedInputs{scale: p.Scale}
	var err error
	for _, f := range []struct {
		name string
		dst  *[]float32
	}{{"query", &in.q}, {"key_cache", &in.kc}, {"value_cache", &in.vc}} {
		if *f.dst, err = d.f32(f.name); err != nil {
			return nil, err
		}
	}
	for _, f := range []struct {
		name string
		dst  *[]int32
	}{{"block_table", &in.bt}, {"seq_lens", &in.sl}, {"query_start_loc", &in.qsl}} {
		if *f.dst, err = d.i32(f.name); err != nil {
			return nil, err
		}
	}
	kT, btT, qT := d.c.Tensor("key_cache"), d.c.Tensor("block_table"), d.c.Tensor("query")
	in.dims = golden.UnifiedDims{T: int(qT.Shape[0]), S: len(in.sl), Hq: p.Hq, Hkv: p.Hkv, D: p.D, NB: int(kT.Shape[0]), BS: p.BS, MAXB: int(btT.Shape[1])}
	return in, nil
}

func unifiedControls(d caseData) ([]Control, error) {
	in, err := loadUnified(d)
	if err != nil {
		return nil, err
	}
	dm := in.dims
	actual := int(in.qsl[dm.S])
	var chunk, prefix, lastPrefix bool
	seqs := 0
	for s := range dm.S {
		Q, L := int(in.qsl[s+1]-in.qsl[s]), int(in.sl[s])
		if Q == 0 {
			continue
		}
		seqs++
		chunk = chunk || Q >= 2
		prefix = prefix || L > Q
		lastPrefix = L > Q // the last non-empty row's context can shrink
	}
	run := func(bug golden.UnifiedBug) func(out, lse []float64) error {
		return func(out, lse []float64) error {
			if bug == 0 {
				return golden.UnifiedAttentionF32(out, lse, in.q, in.kc, in.vc, in.bt, in.sl, in.qsl, dm, in.scale)
			}
			return golden.UnifiedAttentionNegative(out, lse, in.q, in.kc, in.vc, in.bt, in.sl, in.qsl, dm, in.scale, bug)
		}
	}
	specs := []struct {
		name, note string
		pass, when bool
		f          func(out, lse []float64) error
	}{
		{"causal_off_by_one", "query token i also attends key ctx+i+1 (<= for <)", false, chunk, run(golden.CausalOffByOne)},
		{"prefix_ignored", "the causal mask forgets the cached prefix: token i attends keys 0..i", false, prefix, run(golden.PrefixIgnored)},
		{"wrong_query_start_loc", "a sequence's first token is taken for the sequence before (qsl[s] < t for <=)", false, seqs >= 2, run(golden.WrongStart)},
		{"wrong_gqa", "query head h reads KV head h % Hkv instead of h / G", false, dm.Hkv > 1 && dm.Hq > dm.Hkv, run(golden.WrongGQA)},
		{"pad_as_tokens", "the graph padding counted as the last sequence's queries (its context shrinks)", false, actual < dm.T && lastPrefix, run(golden.PadAsTokens)},
		{"fp32_accumulate", "an honest kernel: fp32 dot products, online softmax and accumulation", true, true, run(0)},
	}
	ctl := []Control{zeros(d, "out")}
	for _, s := range specs {
		if !s.when {
			continue
		}
		out, lse := make([]float64, dm.T*dm.Hq*dm.D), make([]float64, dm.T*dm.Hq)
		if err := s.f(out, lse); err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		outs := []ControlOutput{d.output("out", out)}
		if s.pass {
			outs = append(outs, d.output("lse", lse))
		}
		ctl = append(ctl, Control{Name: s.name, Pass: s.pass, Note: s.note, Outputs: outs})
	}
	outG, _, err := d.floats("out")
	if err != nil {
		return nil, err
	}
	lseG, _, err := d.floats("lse")
	if err != nil {
		return nil, err
	}
	if actual < dm.T {
		// Garbage in the padded tokens is not graded: a kernel that runs the
		// padding (or reads past a zero-length row into it) passes.
		o, l := slices.Clone(outG), slices.Clone(lseG)
		for i := actual * dm.Hq * dm.D; i < len(o); i++ {
			o[i] = math.NaN()
		}
		for i := actual * dm.Hq; i < len(l); i++ {
			l[i] = 1e30
		}
		ctl = append(ctl, Control{Name: "pad_garbage", Pass: true, Note: "NaN and huge values in the padded tokens' out and lse (not graded)",
			Outputs: []ControlOutput{d.output("out", o), d.output("lse", l)}})
	}
	ctl = append(ctl, Control{Name: "bf16_roundtrip", Note: "the float32 lse rounded through bfloat16", Outputs: []ControlOutput{d.output("lse", bf16RoundTrip(lseG))}})
	return ctl, nil
}
