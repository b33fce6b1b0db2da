package suite

import (
	"github.com/goldset/goldset/golden"
	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/schedule"
)

// attendUnified writes step k's unified_attention stage: every row of the
// step, graph-padded as unified_attention pads, over the updated caches.
func attendUnified(c *caseCtx, pl *pipelinePlan, k int, kc, vc []uint16, keyCache, valueCache manifests.Tensor) error {
	p, st := pl.p, &pl.steps[k]
	T, padSeqs := stepPadding(st, p.GraphMode)
	bt, sl, qsl, maxb := stepTables(st, pl.bs, func(schedule.Row) bool { return true }, -1)
	S := len(sl) + padSeqs
	for range padSeqs {
		// vLLM's zero-length padded requests: seq_lens 0, query_start_loc
		// repeated, table rows of the pad value.
		sl = append(sl, 0)
		qsl = append(qsl, qsl[len(qsl)-1])
		for range maxb {
			bt = append(bt, -1)
		}
	}
	up := unifiedParams{Hq: p.Hq, Hkv: p.Hkv, D: p.D, BS: pl.bs, DType: p.DType, GraphPad: p.GraphMode, MaxBlocks: maxb, PadValue: -1, Scale: p.Scale}
	for _, r := range st.Rows {
		up.Rows = append(up.Rows, unifiedRowParam{QLen: r.QLen, Context: r.Context + r.QLen})
	}
	if err := up.fill(); err != nil {
		return err
	}
	if err := c.beginStage(stageID(c.id, st.Index, "unified_attention"), "unified_attention", canonical(up), manifests.ChainRef{ID: c.id, Step: st.Index, Stage: 1}, p.DType); err != nil {
		return err
	}
	stepInfo(c, st, T)
	// For the work formula (unified_attention's facts): the real tokens,
	// the rows' pages and tokens, the causal (query, key) pairs.
	seqFacts(c, sl[:len(st.Rows)], pl.bs)
	for _, r := range st.Rows {
		q, ctx := int64(r.QLen), int64(r.Context)
		c.addFact("query_tokens", q)
		c.addFact("attended", q*ctx+q*(q+1)/2)
	}
	q := normalTensor(c.stream(stageStream("query", st.Index)), p.DType, T*p.Hq*p.D, 0, 1)
	if err := c.writeFloat(tensorSpec{name: "query", role: roleInput, dtype: p.DType, shape: []int64{int64(T), int64(p.Hq), int64(p.D)}}, &q); err != nil {
		return err
	}
	c.ref("key_cache", keyCache)
	c.ref("value_cache", valueCache)
	for _, t := range []struct {
		name  string
		shape []int64
		v     []int32
	}{{"block_table", []int64{int64(S), int64(maxb)}, bt}, {"seq_lens", []int64{int64(S)}, sl}, {"query_start_loc", []int64{int64(S + 1)}, qsl}} {
		if err := c.writeInts(tensorSpec{name: t.name, role: roleInput, dtype: "int32", shape: t.shape}, t.v); err != nil {
			return err
		}
	}
	out := make([]float64, T*p.Hq*p.D)
	lse := make([]float64, T*p.Hq)
	dims := golden.UnifiedDims{T: T, S: S, Hq: p.Hq, Hkv: p.Hkv, D: p.D, NB: pl.nb, BS: pl.bs, MAXB: maxb}
	if err := golden.UnifiedAttentionHalf(out, lse, q.vals, kc, vc, halfType(p.DType), bt, sl, qsl, dims, p.Scale); err != nil {
		return err
	}
	if err := c.writeOutput("out", p.DType, []int64{int64(T), int64(p.Hq), int64(p.D)}, out); err != nil {
		return err
	}
	return c.writeRounded(tensorSpec{name: "lse", role: roleGolden, dtype: "float32", shape: []int64{int64(T), int64(p.Hq)}}, lse)
}

// attendQuest writes step k's quest stage over the step's decode rows:
// block metadata of the updated cache, scores, selection, sparse and
// dense attention (docs/spec.md §5), as the quest op records them.
func attendQuest(c *caseCtx, pl *pipelinePlan, k int, kc, vc []uint16, keyCache, valueCache manifests.Tensor) error {
	p, st := pl.p, &pl.steps[k]
	bt, cl, _, maxb := stepTables(st, pl.bs, func(r schedule.Row) bool { return r.QLen == 1 }, -1)
	B := len(cl)
	t, f := true, false
	qp := questParams{pagedParams: pagedParams{Hq: p.Hq, Hkv: p.Hkv, D: p.D, BS: pl.bs, DType: p.DType, MaxBlocks: maxb, PadValue: -1, Scale: p.Scale},
		K: p.K, AnchorFirst: &t, AnchorLast: &t, Granularity: "q_head", Plant: &f, PlantGain: 1}
	for _, l := range cl {
		qp.ContextLens = append(qp.ContextLens, int(l))
	}
	if err := c.beginStage(stageID(c.id, st.Index, "quest"), "quest", canonical(qp), manifests.ChainRef{ID: c.id, Step: st.Index, Stage: 1}, p.DType); err != nil {
		return err
	}
	stepInfo(c, st, st.Tokens)
	c.setInfo("decode_rows", B)
	seqFacts(c, cl, pl.bs)
	Hq, Hkv, D := p.Hq, p.Hkv, p.D
	q := normalTensor(c.stream(stageStream("quest_query", st.Index)), p.DType, B*Hq*D, 0, 1)
	if err := c.writeFloat(tensorSpec{name: "query", role: roleInput, dtype: p.DType, shape: []int64{int64(B), int64(Hq), int64(D)}}, &q); err != nil {
		return err
	}
	c.ref("key_cache", keyCache)
	c.ref("value_cache", valueCache)
	if err := c.writeInts(tensorSpec{name: "block_tables", role: roleInput, dtype: "int32", shape: []int64{int64(B), int64(maxb)}}, bt); err != nil {
		return err
	}
	if err := c.writeInts(tensorSpec{name: "context_lens", role: roleInput, dtype: "int32", shape: []int64{int64(B)}}, cl); err != nil {
		return err
	}
	g := qp.golden()
	dims := golden.AttentionDims{B: B, Hq: Hq, Hkv: Hkv, D: D, NB: pl.nb, BS: pl.bs, MAXB: maxb}
	hsel := g.Granularity.Hsel(dims)
	ht := halfType(p.DType)
	kmax, kmin := make([]float64, B*maxb*Hkv*D), make([]float64, B*maxb*Hkv*D)
	if err := golden.BlockMetadataHalf(kmax, kmin, kc, ht, bt, cl, dims); err != nil {
		return err
	}
	// Quest scores the stored metadata (the kernel's kmax/kmin tensors).
	scores := make([]float64, B*hsel*maxb)
	if err := golden.BlockScores(scores, q.vals, kmax, kmin, cl, dims, g.Granularity); err != nil {
		return err
	}
	sel := make([]int32, B*hsel*p.K)
	margin, hasMargin, err := golden.SelectBlocks(sel, scores, cl, dims, g)
	if err != nil {
		return err
	}
	for b := range B {
		questSelFacts(c, sel[b*hsel*p.K:(b+1)*hsel*p.K], int(cl[b]), pl.bs, hsel, Hq, Hkv, p.K)
	}
	out, lse := make([]float64, B*Hq*D), make([]float64, B*Hq)
	if err := golden.SparseAttentionHalf(out, lse, q.vals, kc, vc, ht, bt, cl, sel, dims, g, p.Scale); err != nil {
		return err
	}
	dense, denseLSE := make([]float64, B*Hq*D), make([]float64, B*Hq)
	if err := golden.PagedAttentionHalf(dense, denseLSE, q.vals, kc, vc, ht, bt, cl, dims, p.Scale); err != nil {
		return err
	}
	metaShape := []int64{int64(B), int64(maxb), int64(Hkv), int64(D)}
	for _, w := range []struct {
		name string
		v    []float64
	}{{"kmax", kmax}, {"kmin", kmin}} {
		if err := c.writeRounded(tensorSpec{name: w.name, role: roleGolden, dtype: p.DType, shape: metaShape}, w.v); err != nil {
			return err
		}
	}
	if err := c.writeRounded(tensorSpec{name: "scores", role: roleGolden, dtype: "float32", shape: []int64{int64(B), int64(hsel), int64(maxb)}}, scores); err != nil {
		return err
	}
	if err := c.writeInts(tensorSpec{name: "selected", role: roleGolden, dtype: "int32", shape: []int64{int64(B), int64(hsel), int64(p.K)}}, sel); err != nil {
		return err
	}
	return writeQuestOutputs(c, p.DType, B, Hq, D, out, lse, dense, margin, hasMargin)
}
