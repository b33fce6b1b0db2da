package suite

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sync/atomic"

	"github.com/goldset/goldset/compare"
	"github.com/goldset/goldset/golden"
	"github.com/goldset/goldset/internal/hugemem"
	"github.com/goldset/goldset/manifests"
)

// ---- quest (docs/spec.md §5) ----

// quest: Quest sparse decode attention (docs/spec.md §5): per-block key
// metadata, block scores, top-k selection with anchors, attention over the
// selected blocks; dense_out is the dense attention, for reference.
var questAxes = func() map[string][]string {
	m := map[string][]string{"kmax": {"B", "MB", "HKV", "D"}, "kmin": {"B", "MB", "HKV", "D"}, "scores": {"B", "HQ", "MB"}, "selected": {"B", "HQ", "K"}}
	for k, v := range pagedAxes {
		m[k] = v
	}
	return m
}()

var _ = register(&op{
	name:   "quest",
	export: exportSpec{flashinfer: "gqa_paged_sparse", ascend: "Quest", axes: questAxes},
	inputs: pagedInputNames,
	outputs: append([]output{
		{name: "kmax", tol: compare.Exact.WithBasis("exact/block_metadata")},
		{name: "kmin", tol: compare.Exact.WithBasis("exact/block_metadata")},
		{name: "scores", dtype: "float32", tol: compare.Scores.WithBasis("quest_scores")},
		{name: "selected", dtype: "int32", tol: compare.SetWithPadding(-1).WithBasis("set/selection")},
	}, attentionOutputs...),
	aux:      []string{"dense_out"},
	plan:     planQuest,
	controls: attentionControls,
	work:     questWork,
	mask:     questMetaMask,
})

type questParams struct {
	pagedParams
	// K blocks are kept per selection row, anchors included.
	K           int    `json:"k"`
	AnchorFirst *bool  `json:"anchor_first"`
	AnchorLast  *bool  `json:"anchor_last"`
	Granularity string `json:"granularity"` // "q_head" (default) or "kv_group_sum"
	// Plant scales the keys of K-anchors chosen non-anchor blocks per
	// (sequence, KV head) by PlantGain, so those blocks' Quest scores
	// (about PlantGain times the others') win with a wide margin; each KV
	// head gets its own blocks. Default on, except for ties.
	Plant     *bool   `json:"plant"`
	PlantGain float64 `json:"plant_gain"`
	// Tie gives every block the same keys: all scores tie exactly and the
	// lowest indices must win.
	Tie bool `json:"tie,omitempty"`
	// NoDense skips the dense attention (dense_out and the
	// sparse_dense_rel_l2 info) that docs/spec.md §5 asks contest cases to
	// record: for benchmark cases that must do the same work as a tool
	// without it (the NumPy peer); the dense pass costs about as much as
	// a paged_attention golden.
	NoDense bool `json:"no_dense,omitempty"`
}

func (p *questParams) anchors() int {
	n := 0
	if *p.AnchorFirst {
		n++
	}
	if *p.AnchorLast {
		n++
	}
	return n
}

func (p *questParams) golden() golden.QuestParams {
	g := golden.QHead
	if p.Granularity == "kv_group_sum" {
		g = golden.KVGroupSum
	}
	return golden.QuestParams{K: p.K, AnchorFirst: *p.AnchorFirst, AnchorLast: *p.AnchorLast, Granularity: g}
}

func planQuest(raw json.RawMessage) (*casePlan, error) {
	var p questParams
	p.PadValue = -1
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if err := p.fill(); err != nil {
		return nil, err
	}
	t := true
	if p.AnchorFirst == nil {
		p.AnchorFirst = &t
	}
	if p.AnchorLast == nil {
		p.AnchorLast = &t
	}
	if p.Plant == nil {
		plant := !p.Tie
		p.Plant = &plant
	}
	if p.PlantGain == 0 {
		p.PlantGain = 2
		if p.Needle == "exclude" {
			p.PlantGain = 3
		}
	}
	if p.Granularity == "" {
		p.Granularity = "q_head"
	}
	if p.Granularity != "q_head" && p.Granularity != "kv_group_sum" {
		return nil, errParams("granularity %q: want q_head or kv_group_sum", p.Granularity)
	}
	if err := checkRange("k", p.K, 1, 1<<16); err != nil {
		return nil, err
	}
	if p.K < p.anchors() {
		return nil, errParams("k = %d is smaller than the number of anchors (%d)", p.K, p.anchors())
	}
	if !(p.PlantGain >= 1) || math.IsInf(p.PlantGain, 0) {
		return nil, errParams("plant_gain = %v, want >= 1", p.PlantGain)
	}
	if p.Tie && (*p.Plant || p.Needle != "") {
		return nil, errParams("tie excludes plant and needle")
	}
	if p.Needle != "" && p.Needle != "exclude" {
		return nil, errParams("quest supports needle \"exclude\" only (paged_attention has the other placements)")
	}
	if p.Needle == "exclude" && !*p.Plant {
		return nil, errParams("needle \"exclude\" needs plant")
	}
	// Inputs and out as paged attention, plus kmax/kmin (about one key
	// row per block per sequence), scores, selection and dense_out.
	b := int64(max(len(p.ContextLens), p.B))
	maxb := int64(p.MaxBlocks)
	if maxb == 0 {
		maxb = int64(p.LenMax+p.BS-1) / int64(p.BS)
		for _, l := range p.ContextLens {
			maxb = max(maxb, int64(l+p.BS-1)/int64(p.BS)+1)
		}
	}
	meta := 2*b*maxb*int64(p.Hkv*p.D)*dtypeSize(p.DType) + b*int64(p.Hq)*(maxb+int64(p.K))*4 + b*int64(p.Hq*p.D)*4
	return &casePlan{params: canonical(p), dtype: p.DType, bytes: p.estimateBytes() + meta, build: func(c *caseCtx) error { return buildQuest(c, &p) }}, nil
}

// plantQuest picks each (sequence, KV head)'s planted blocks and, for
// needle "exclude", a needle block outside every planted set.
func plantQuest(c *caseCtx, p *questParams, l *layout, ks *kvSource) map[string]any {
	info := map[string]any{}
	if !*p.Plant {
		return info
	}
	r := c.stream("plant").Rand()
	ks.hot = make([][]bool, len(l.lens))
	ks.hotGain = p.PlantGain
	planted := make([][][]int, len(l.lens))
	if p.Needle == "exclude" {
		l.needle = slices.Repeat([]int{-1}, len(l.lens))
	}
	for b := range l.lens {
		nb := l.nb[b]
		ks.hot[b] = make([]bool, nb*p.Hkv)
		if nb <= p.K {
			continue
		}
		var free []int
		for i := 0; i < nb; i++ {
			if (i == 0 && *p.AnchorFirst) || (i == nb-1 && *p.AnchorLast) {
				continue
			}
			free = append(free, i)
		}
		want := p.K - p.anchors()
		hotAny := make([]bool, nb)
		planted[b] = make([][]int, p.Hkv)
		for g := 0; g < p.Hkv; g++ {
			pick := r.Choice(len(free), want)
			for _, j := range pick {
				i := free[j]
				ks.hot[b][i*p.Hkv+g] = true
				hotAny[i] = true
				planted[b][g] = append(planted[b][g], i)
			}
			slices.Sort(planted[b][g])
		}
		if p.Needle == "exclude" {
			// The needle goes into the first block from the middle on that
			// no head planted and no anchor holds.
			for k := 0; k < nb; k++ {
				i := (nb/2 + k) % nb
				if !hotAny[i] && slices.Contains(free, i) {
					l.needle[b] = i * p.BS
					break
				}
			}
		}
	}
	info["planted_blocks"] = planted
	info["plant_gain"] = p.PlantGain
	return info
}

func buildQuest(c *caseCtx, p *questParams) error {
	l, err := newLayout(c, &p.pagedParams)
	if err != nil {
		return err
	}
	q, ks, vs := pagedInputs(c, &p.pagedParams, l)
	ks.tie = p.Tie
	for k, v := range plantQuest(c, p, l, ks) {
		c.setInfo(k, v)
	}
	if l.needle != nil {
		ks.needle = needleKeys(l, q.vals, p.DType)
	}
	layoutInfo(c, l)
	qp := p.golden()
	B, Hq, Hkv, D := len(l.lens), p.Hq, p.Hkv, p.D
	hsel := qp.Granularity.Hsel(golden.AttentionDims{Hq: Hq, Hkv: Hkv})
	maxb := l.maxb
	specs := []tensorSpec{
		{name: "kmax", role: roleGolden, dtype: p.DType, shape: []int64{int64(B), int64(maxb), int64(Hkv), int64(D)}},
		{name: "kmin", role: roleGolden, dtype: p.DType, shape: []int64{int64(B), int64(maxb), int64(Hkv), int64(D)}},
		{name: "scores", role: roleGolden, dtype: "float32", shape: []int64{int64(B), int64(hsel), int64(maxb)}},
		{name: "selected", role: roleGolden, dtype: "int32", shape: []int64{int64(B), int64(hsel), int64(p.K)}},
	}
	// The per-sequence goldens are computed and written while the inputs
	// are written; their manifest entries follow the inputs' (deferred).
	outs := make([]*tensorOut, len(specs))
	for i, ts := range specs {
		if outs[i], err = c.deferred(ts); err != nil {
			return err
		}
	}
	out := make([]float64, B*Hq*D)
	lse := make([]float64, B*Hq)
	var dense, denseLSE []float64 // nil without the dense pass
	if !p.NoDense {
		dense, denseLSE = make([]float64, B*Hq*D), make([]float64, B*Hq)
	}
	W := seqWorkers()
	feeds := make([]*seqFeed, W)
	type seqResult struct {
		kmax, kmin, scores []float64
		sel                []int32
		margin             float64
		hasMargin          bool
	}
	// Results wait for in-order emission in a ring of window slots: item b
	// starts only after item b-window was emitted (see forOrdered).
	window := 2 * W
	res := make([]seqResult, window)
	for i := range res {
		res[i].sel = make([]int32, hsel*p.K)
	}
	for w := range feeds {
		feeds[w] = newSeqFeed(l, ks, vs)
		feeds[w].keepKeys = !p.NoDense
	}
	meta := make([]float64, maxb*Hkv*D)
	scoreRow := make([]float64, hsel*maxb)
	margin, hasMargin := math.Inf(1), false
	var stopped func() bool
	// The metadata of each block is also taken as the key cache is
	// written (see blockMeta). Sequences started before the keys are out
	// regenerate all their keys for it, a block at a time (the writing
	// leaves the CPU idle part of the time); those started after read it.
	// Both give the same bits. Attention then regenerates only the rows it
	// reads, as it reads them (seqFeed).
	bm := newBlockMeta(l, defaultJobs())
	ks.visit = bm.visit
	keys := make(chan struct{})
	var keysOK atomic.Bool
	keysDone := func() { keysOK.Store(true); close(keys) }
	work := func(b, w int) error {
		if err := c.ctx.Err(); err != nil {
			return err
		}
		if stopped() {
			return errWriteFailed
		}
		f, r, nb := feeds[w], &res[b%window], l.nb[b]
		dims := seqDims(&p.pagedParams, nb)
		cl := []int32{int32(l.lens[b])}
		r.kmax = make([]float64, nb*Hkv*D)
		r.kmin = make([]float64, nb*Hkv*D)
		ready := keys
		switch questMeta {
		case "writer":
			<-keys
		case "regen":
			ready = nil // never ready
		}
		select {
		case <-ready:
			if !keysOK.Load() {
				return errWriteFailed
			}
			if err := bm.sequence(r.kmax, r.kmin, b); err != nil {
				return err
			}
		default:
			bm.claimed[b].Store(true)
			if err := f.keyMetadata(r.kmax, r.kmin, b); err != nil {
				return err
			}
		}
		r.scores = make([]float64, hsel*nb)
		qb := q.vals[b*Hq*D : (b+1)*Hq*D]
		if err := golden.BlockScores(r.scores, qb, r.kmax, r.kmin, cl, dims, qp.Granularity); err != nil {
			return err
		}
		var err error
		if r.margin, r.hasMargin, err = golden.SelectBlocks(r.sel, r.scores, cl, dims, qp); err != nil {
			return err
		}
		if pos := l.needlePos(b); p.Needle == "exclude" && pos >= 0 {
			if slices.Contains(r.sel, int32(pos/p.BS)) {
				return errParams("sequence %d: the needle block %d was selected; raise plant_gain", b, pos/p.BS)
			}
		}
		// Sparse attention reads the rows of the selected blocks' KV heads
		// only; the dense pass, if any, runs on the same produced blocks
		// (all rows of all of them).
		if !p.NoDense {
			return f.sparseAttention(out[b*Hq*D:(b+1)*Hq*D], lse[b*Hq:(b+1)*Hq], dense[b*Hq*D:(b+1)*Hq*D], denseLSE[b*Hq:(b+1)*Hq], qb, b, r.sel, nil, dims, qp, p.Scale)
		}
		G := Hq / Hkv
		heads := make([]bool, nb*Hkv) // [logical block, KV head]
		for row := range hsel {
			g := row // kv_group_sum: a row per KV head
			if hsel == Hq {
				g = row / G
			}
			for _, i := range r.sel[row*p.K : (row+1)*p.K] {
				if i >= 0 {
					heads[int(i)*Hkv+g] = true
				}
			}
		}
		want := func(i int) []bool { return heads[i*Hkv : (i+1)*Hkv] }
		return f.sparseAttention(out[b*Hq*D:(b+1)*Hq*D], lse[b*Hq:(b+1)*Hq], nil, nil, qb, b, r.sel, want, dims, qp, p.Scale)
	}
	emit := func(b int) error {
		r, nb := &res[b%window], l.nb[b]
		if r.hasMargin {
			hasMargin = true
			margin = min(margin, r.margin)
		}
		// Widen the per-sequence results to the case's MAXB.
		for k, v := range [][]float64{r.kmax, r.kmin} {
			clear(meta)
			copy(meta, v)
			if err := outs[k].rounded(p.DType, meta); err != nil {
				return err
			}
		}
		for h := 0; h < hsel; h++ {
			row := scoreRow[h*maxb : (h+1)*maxb]
			copy(row, r.scores[h*nb:(h+1)*nb])
			for i := nb; i < maxb; i++ {
				row[i] = math.Inf(-1)
			}
		}
		if err := outs[2].rounded("float32", scoreRow); err != nil {
			return err
		}
		if err := outs[3].i32(r.sel); err != nil {
			return err
		}
		questSelFacts(c, r.sel, l.lens[b], p.BS, hsel, Hq, Hkv, p.K)
		c.tick()
		return nil
	}
	err = whileWriting(func(gate func(int), s func() bool) error {
		stopped = s
		return forOrdered(W, window, B, gate, work, emit)
	}, func() error {
		defer func() {
			if !keysOK.Load() {
				close(keys)
			}
		}()
		return writePagedInputs(c, &p.pagedParams, l, &q, ks, vs, keysDone)
	})
	if err != nil {
		return err
	}
	for _, t := range outs {
		if err := t.commit(); err != nil {
			return err
		}
	}
	return writeQuestOutputs(c, p.DType, B, Hq, D, out, lse, dense, margin, hasMargin)
}

// writeQuestOutputs writes a Quest case's out, lse and (dense not nil) its
// dense_out aux, with the selection margin and the sparse/dense distance
// in the case info.
func writeQuestOutputs(c *caseCtx, dt string, B, Hq, D int, out, lse, dense []float64, margin float64, hasMargin bool) error {
	shape := []int64{int64(B), int64(Hq), int64(D)}
	if err := c.writeOutput("out", dt, shape, out); err != nil {
		return err
	}
	if err := c.writeRounded(tensorSpec{name: "lse", role: roleGolden, dtype: "float32", shape: []int64{int64(B), int64(Hq)}}, lse); err != nil {
		return err
	}
	if hasMargin {
		c.setInfo("selection_margin", margin)
	}
	if dense == nil {
		return nil
	}
	if err := c.writeRounded(tensorSpec{name: "dense_out", role: roleAux, dtype: "float32", shape: shape}, dense); err != nil {
		return err
	}
	c.setInfo("sparse_dense_rel_l2", relL2(out, dense))
	return nil
}

// relL2 returns ||a-b|| / ||b|| in float64.
func relL2(a, b []float64) float64 {
	var num, den float64
	for i := range a {
		d := a[i] - b[i]
		num += float64(d * d)
		den += float64(b[i] * b[i])
	}
	if den == 0 {
		return 0
	}
	return math.Sqrt(num / den)
}

// questMeta forces where Quest goldens take the block metadata from:
// "writer" (wait for the key cache), "regen" (regenerate the keys), or
// "" (whichever is ready). Tests set it to check that both agree.
var questMeta = ""

// blockMeta holds Quest's per-block key metadata (docs/spec.md §5: the
// elementwise max and min over a block's tokens below L), taken from each
// referenced physical block as the key cache is written. The values are
// half or float32 values, so float32 storage is exact and halves the
// footprint of float64 (8 KiB per block at Hkv*D = 1024).
type blockMeta struct {
	l       *layout
	row     int         // Hkv*D
	mx, mn  []float32   // [numBlk, row]
	scratch [][]float64 // per writer worker: [2*row]
	err     []error     // per writer worker: the first error
	// claimed[b] is set when sequence b computes its own metadata (it
	// started before the keys were out): the writer skips its blocks,
	// unless another sequence shares them.
	claimed []atomic.Bool
	shared  map[int]bool
}

func newBlockMeta(l *layout, workers int) *blockMeta {
	row := l.p.Hkv * l.p.D
	m := &blockMeta{l: l, row: row, mx: make([]float32, l.numBlk*row), mn: make([]float32, l.numBlk*row),
		scratch: make([][]float64, workers), err: make([]error, workers), claimed: make([]atomic.Bool, len(l.lens)), shared: map[int]bool{}}
	for _, p := range l.shared {
		m.shared[p] = true
	}
	hugemem.Advise(m.mx)
	hugemem.Advise(m.mn)
	for w := range m.scratch {
		m.scratch[w] = make([]float64, 2*row)
	}
	return m
}

// visit computes physical block p's metadata with the golden kernel on a
// one-block sequence holding the owner's tokens of that block. A shared
// block is a full first block of both its readers, so the owner's view is
// theirs too. Unreferenced blocks, and those of claimed sequences, are
// skipped.
func (m *blockMeta) visit(w, p int, ft *floatTensor) {
	b := int(m.l.owner[p])
	if b < 0 || m.err[w] != nil || (m.claimed[b].Load() && !m.shared[p]) {
		return
	}
	i := int(m.l.logical[p])
	tokens := min(m.l.p.BS, m.l.lens[b]-i*m.l.p.BS)
	mx, mn := m.scratch[w][:m.row], m.scratch[w][m.row:]
	if err := blockMetadata(mx, mn, ft, m.l.p, tokens); err != nil {
		m.err[w] = err
		return
	}
	for e := range m.row {
		m.mx[p*m.row+e] = float32(mx[e])
		m.mn[p*m.row+e] = float32(mn[e])
	}
}

// sequence fills kmax and kmin, [nb, Hkv, D], for sequence b.
func (m *blockMeta) sequence(kmax, kmin []float64, b int) error {
	for _, err := range m.err {
		if err != nil {
			return err
		}
	}
	for i := range m.l.nb[b] {
		p := int(m.l.bt[b*m.l.maxb+i])
		for e := range m.row {
			kmax[i*m.row+e] = float64(m.mx[p*m.row+e])
			kmin[i*m.row+e] = float64(m.mn[p*m.row+e])
		}
	}
	return nil
}

// questMetaMask grades kmax/kmin [B, MAXB, Hkv, D] only for logical blocks
// i < ceil(L/BS) (docs/spec.md §5a); every other output whole.
func questMetaMask(d caseData, output string, shape []int64) ([]bool, error) {
	if output != "kmax" && output != "kmin" {
		return nil, nil
	}
	lens, err := d.i32("context_lens")
	if err != nil {
		return nil, err
	}
	var p questParams
	if err := json.Unmarshal(d.c.Params, &p); err != nil || p.BS <= 0 || len(shape) != 4 {
		return nil, fmt.Errorf("case %s: params or kmax shape do not describe a quest case", d.c.ID)
	}
	B, maxb, inner := int(shape[0]), int(shape[1]), int(shape[2]*shape[3])
	if len(lens) != B {
		return nil, fmt.Errorf("case %s: context_lens has %d entries, kmax %d sequences", d.c.ID, len(lens), B)
	}
	mask := make([]bool, B*maxb*inner)
	for b, l := range lens {
		nb := min((int(l)+p.BS-1)/p.BS, maxb)
		for i := range mask[b*maxb*inner : (b*maxb+nb)*inner] {
			mask[b*maxb*inner+i] = true
		}
	}
	return mask, nil
}

// questSelFacts records what sparse attention over a sequence's selection
// reads: sel_tokens, the valid tokens each query head attends (a row of a
// kv_group_sum selection serves its group's heads), and sel_kv_tokens,
// the distinct (KV head, token) pairs whose values are read.
func questSelFacts(c *caseCtx, sel []int32, L, bs, hsel, hq, hkv, k int) {
	g := hq / hkv
	blockTokens := func(i int32) int64 { return int64(min(bs, L-int(i)*bs)) }
	var attended, kv int64
	seen := make(map[[2]int32]bool)
	for row := range hsel {
		kvh, heads := row, g // kv_group_sum: a row per KV head
		if hsel == hq {
			kvh, heads = row/g, 1
		}
		for _, i := range sel[row*k : (row+1)*k] {
			if i < 0 {
				continue
			}
			attended += int64(heads) * blockTokens(i)
			if key := [2]int32{int32(kvh), i}; !seen[key] {
				seen[key] = true
				kv += blockTokens(i)
			}
		}
	}
	c.addFact("sel_tokens", attended)
	c.addFact("sel_kv_tokens", kv)
}

// questWork: query and context_lens read whole, the referenced pages'
// block-table entries, every distinct valid key once (the block metadata
// needs them all) and the values of the selected blocks' KV heads once;
// the graded kmax/kmin blocks, scores, selected, out and lse written.
// Flops: a max and a min per key element (metadata), the score of every
// (query head, block) (two products, a max and a sum a dim), and a QK and
// a PV product per attended (query head, token).
func questWork(w workIn) (manifests.Work, error) {
	p, err := decodeWork[questParams](w)
	if err != nil {
		return manifests.Work{}, err
	}
	es, hd := dtypeSize(p.DType), int64(p.Hkv*p.D)
	var r, wr sumErr
	var f = map[string]int64{}
	for _, k := range []string{"pages", "kv_tokens", "sel_tokens", "sel_kv_tokens"} {
		v, err := w.fact(k)
		r.add(0, err)
		f[k] = v
	}
	r.add(w.bytes("query", "context_lens"))
	r.add(4*f["pages"]+f["kv_tokens"]*hd*es+f["sel_kv_tokens"]*int64(p.D)*es, nil)
	wr.add(w.bytes("scores", "selected", "out", "lse"))
	wr.add(2*f["pages"]*hd*es, nil)
	if err := cmp.Or(r.err, wr.err); err != nil {
		return manifests.Work{}, err
	}
	D := int64(p.D)
	flops := 2*f["kv_tokens"]*hd + 4*D*int64(p.Hq)*f["pages"] + 4*D*f["sel_tokens"]
	return manifests.Work{BytesRead: r.v, BytesWritten: wr.v, Flops: flops, FlopDType: p.DType}, nil
}
