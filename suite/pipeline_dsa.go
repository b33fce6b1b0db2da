package suite

import (
	"cmp"
	"fmt"
	"math"

	"github.com/goldset/goldset/gen"
	"github.com/goldset/goldset/golden"
	"github.com/goldset/goldset/internal/dtype"
	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/npy"
	"github.com/goldset/goldset/schedule"
)

// ---- the DSA decode chain (docs/spec.md §14) ----
//
// Per step: dsa_index_cache writes every new token's index key (all rows
// of the step, prefill chunks included, as vLLM's
// indexer_k_quant_and_cache does) into the paged index cache;
// dsa_indexer (paged decode form) scores the step's decode rows over that
// cache and selects their top-k tokens; dsa_sparse_attention attends over
// the selected slots of the MLA cache (ckv, kpe) after the step's writes.
// The index cache written at step s is the indexer's input at step s and
// the write's input at step s+1 (the same file). The MLA cache write
// (concat_and_cache_mla, a copy) is not a stage: the attention stage's
// ckv_cache and kpe_cache are the caches after the step's writes.
//
// Values: request r's position p written at step s has index key
// "index_k/s<s>/r<r>" at element p*di, latent "ckv/s<s>/r<r>" at p*dc and
// rope key "kpe/s<s>/r<r>" at p*dr (bf16); a slot never written holds the
// DSA ops' NaN canaries (index cache: codes 0x7f, scale NaN; MLA caches:
// bf16 NaN), so a kernel that reads past a sequence or through block 0
// (vLLM's null block) sees NaN. Queries: "index_q/s<s>" (e4m3),
// "index_weights/s<s>" (float32, std 1/sqrt(hi)), "q_nope/s<s>",
// "q_pe/s<s>" (bf16).

// dsaDefaults fills in and checks the DSA chain's shapes.
func (p *pipelineParams) dsaDefaults() error {
	if p.Hq != 0 || p.Hkv != 0 || p.D != 0 || p.DType != "" {
		return errParams("the dsa chain takes h, dc, dr, hi, di (not hq, hkv, d, dtype)")
	}
	if p.GraphMode {
		return errParams("graph_mode: the dsa chain has no graph padding")
	}
	if p.Schedule.BlockSize != dsaPS {
		return errParams("schedule.block_size %d: the dsa chain's pages are %d tokens", p.Schedule.BlockSize, dsaPS)
	}
	for _, d := range []struct {
		v   *int
		def int
	}{{&p.DC, 512}, {&p.DR, 64}, {&p.HI, 64}, {&p.DI, 128}, {&p.NextN, 1}, {&p.K, 2048}} {
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if p.ScaleFmt == "" {
		p.ScaleFmt = "ue8m0"
	}
	if p.Scale == 0 {
		p.Scale = golden.DSADefaultSMScale
	}
	if p.ScaleFmt != "ue8m0" {
		// fp32 scales need the index cache's either-rounding family on
		// every write stage; DeepSeek-V3.2 runs ue8m0.
		return errParams("scale_fmt %q: the dsa chain's index cache is ue8m0", p.ScaleFmt)
	}
	for _, e := range []error{checkRange("h", p.H, 1, 256), checkRange("dc", p.DC, 1, 1024), checkRange("dr", p.DR, 0, 256),
		checkRange("hi", p.HI, 1, 256), checkRange("di", p.DI, 1, 1024), checkRange("next_n", p.NextN, 1, 2), checkRange("k", p.K, 1, 1<<16)} {
		if e != nil {
			return e
		}
	}
	return nil
}

// dsaRow says whether a row is one of the DSA stages' decode rows: a
// decode or verify row of next_n tokens.
func (p *pipelineParams) dsaRow(r schedule.Row) bool {
	return (r.Kind == schedule.KindDecode || r.Kind == schedule.KindVerify) && r.QLen == p.NextN
}

func planDSAChain(p *pipelineParams, kind *chainKind) (*casePlan, error) {
	nb := p.Schedule.NumBlocks
	icBytes, err := checkElems("index cache", nb, golden.DSABlockBytes(p.DI))
	if err != nil {
		return nil, err
	}
	mlaElems, err := checkElems("ckv cache", nb, dsaPS, p.DC+p.DR)
	if err != nil {
		return nil, err
	}
	if icBytes > maxPipelineCache || mlaElems > maxPipelineCache {
		return nil, errParams("caches of %d bytes (index) and %d elements (MLA): at most %d each", icBytes, mlaElems, maxPipelineCache)
	}
	// The query rows are the decode rows: at most max_num_seqs of next_n.
	seqs := cmp.Or(p.Schedule.MaxNumSeqs, schedule.DefaultMaxNumSeqs)
	if err := checkHeld("q_nope", seqs, p.NextN, p.H, p.DC+p.DR); err != nil {
		return nil, err
	}
	pl, err := newPipelinePlan(p, kind)
	if err != nil {
		return nil, err
	}
	var bytes int64
	for _, st := range pl.steps {
		rows := int64(0)
		maxb := 0
		for _, r := range st.Rows {
			if p.dsaRow(r) {
				rows += int64(p.NextN)
				maxb = max(maxb, numBlocksDSA(r.Context+r.QLen))
			}
		}
		// The golden holds the step's logits and index scores whole.
		if err := checkHeld("logits", int(rows), maxb*dsaPS); err != nil {
			return nil, err
		}
		t := int64(st.Tokens)
		bytes += icBytes + t*int64(2*p.DI+4) + 2*mlaElems + rows*int64(p.HI*(p.DI+4)) + rows*int64(maxb*dsaPS)*12 +
			rows*int64(p.H*(p.DC+p.DR))*4 + rows*int64(12*p.K) + rows*int64(p.H*(2*p.DC+4)) + int64(8*nb)*2
	}
	return pl.casePlan("bfloat16", bytes+icBytes), nil
}

// dsaChainState is the caches a DSA chain carries from step to step.
type dsaChainState struct {
	pl       *pipelinePlan
	p        *pipelineParams
	ic       []byte   // index cache [nb, 64*di+256]
	ckv, kpe []uint16 // MLA caches [nb*64, dc], [nb*64, dr], bf16 bits
	icPrev   *manifests.Tensor
}

// write stores request r's positions [p0, p0+n) as written at step s at
// slots: latent and rope keys into the MLA caches. It returns the bf16
// index keys, for quantize.
func (ds *dsaChainState) write(c *caseCtx, s, r, p0 int, slots []int32) []uint16 {
	p, n := ds.p, len(slots)
	k := make([]uint16, n*p.DI)
	tokenRows(c, "index_k", s, r, p0, k, p.DI, "bfloat16")
	ckv, kpe := make([]uint16, n*p.DC), make([]uint16, n*p.DR)
	tokenRows(c, "ckv", s, r, p0, ckv, p.DC, "bfloat16")
	tokenRows(c, "kpe", s, r, p0, kpe, p.DR, "bfloat16")
	for j, slot := range slots {
		copy(ds.ckv[int(slot)*p.DC:], ckv[j*p.DC:(j+1)*p.DC])
		copy(ds.kpe[int(slot)*p.DR:], kpe[j*p.DR:(j+1)*p.DR])
	}
	return k
}

// quantize writes index keys (bf16 bits) at slots into the index cache.
func (ds *dsaChainState) quantize(k []uint16, slots []int32) error {
	dims := golden.DSACacheDims{T: len(slots), DI: ds.p.DI, NB: ds.pl.nb}
	return golden.DSAIndexCache(ds.ic, widen(k, "bfloat16"), slots, ds.ic, dims, golden.DSAScaleUE8M0)
}

func buildDSAChain(c *caseCtx, pl *pipelinePlan) error {
	p := pl.p
	nslots := pl.nb * dsaPS
	nan := npy.BF16FromF64(math.NaN())
	ds := &dsaChainState{pl: pl, p: p, ic: dsaCanaryCache(pl.nb, p.DI), ckv: make([]uint16, nslots*p.DC), kpe: make([]uint16, nslots*p.DR)}
	fillPattern16(ds.ckv, nan)
	fillPattern16(ds.kpe, nan)
	// The caches before the first step: every alive request's positions,
	// each with the values of the step that wrote it last.
	for _, rc := range pl.init {
		for p0 := 0; p0 < len(rc.wrote); {
			p1 := p0 + 1
			for p1 < len(rc.wrote) && rc.wrote[p1] == rc.wrote[p0] {
				p1++
			}
			slots := make([]int32, p1-p0)
			for i := range slots {
				pos := p0 + i
				slots[i] = rc.blocks[pos/dsaPS]*dsaPS + int32(pos%dsaPS)
			}
			if err := ds.quantize(ds.write(c, int(rc.wrote[p0]), rc.req, p0, slots), slots); err != nil {
				return err
			}
			p0 = p1
		}
	}
	for k := range pl.steps {
		if err := c.ctx.Err(); err != nil {
			return err
		}
		if err := ds.step(c, k); err != nil {
			return err
		}
		c.tick()
	}
	return nil
}

// fillPattern16 fills dst with v.
func fillPattern16(dst []uint16, v uint16) {
	for i := range dst {
		dst[i] = v
	}
}

// step writes step k's three stage cases.
func (ds *dsaChainState) step(c *caseCtx, k int) error {
	pl, p, st := ds.pl, ds.p, &ds.pl.steps[k]
	T := st.Tokens
	kb := make([]uint16, 0, T*p.DI)
	slots := make([]int32, 0, T)
	for _, r := range st.Rows {
		rs := make([]int32, r.QLen)
		for j := range rs {
			rs[j] = int32(r.Slot(j, dsaPS))
		}
		kb = append(kb, ds.write(c, st.Index, r.Request, r.Context, rs)...)
		slots = append(slots, rs...)
	}
	// Stage 0: the index-cache write.
	cp := dsaCacheParams{T: T, DI: p.DI, NB: pl.nb, ScaleFmt: p.ScaleFmt}
	if err := c.beginStage(stageID(c.id, st.Index, "dsa_index_cache"), "dsa_index_cache", canonical(cp), manifests.ChainRef{ID: c.id, Step: st.Index, Stage: 0}, "uint8"); err != nil {
		return err
	}
	stepInfo(c, st, T)
	c.addFact("slots_written", int64(T))
	if err := c.write(tensorSpec{name: "k", role: roleInput, dtype: "bfloat16", shape: []int64{int64(T), int64(p.DI)}}, func(o *tensorOut) error { return o.u16(kb) }); err != nil {
		return err
	}
	if err := c.writeInts(tensorSpec{name: "slot_mapping", role: roleInput, dtype: "int32", shape: []int64{int64(T)}}, slots); err != nil {
		return err
	}
	icShape := []int64{int64(pl.nb), int64(golden.DSABlockBytes(p.DI))}
	if ds.icPrev != nil {
		c.ref("index_cache", *ds.icPrev)
	} else if err := c.writeBytes(tensorSpec{name: "index_cache", role: roleInput, dtype: "uint8", shape: icShape}, ds.ic); err != nil {
		return err
	}
	if err := ds.quantize(kb, slots); err != nil {
		return err
	}
	if err := c.writeBytes(tensorSpec{name: "index_cache_out", role: roleGolden, dtype: "uint8", shape: icShape}, ds.ic); err != nil {
		return err
	}
	icOut := c.last()
	ds.icPrev = &icOut

	// Stage 1: the indexer over the step's decode rows.
	l := ds.layout(st)
	B, NN := len(l.lens), p.NextN
	ip := dsaIndexerParams{Layout: "paged", dsaLayoutParams: dsaLayoutParams{SeqLens: int32s(l.lens), ExtraBlocks: l.nb - l.used()},
		NN: NN, HI: p.HI, DI: p.DI, K: p.K, ScaleFmt: p.ScaleFmt, LogitsDType: "float32"}
	if err := c.beginStage(stageID(c.id, st.Index, "dsa_indexer"), "dsa_indexer", canonical(ip), manifests.ChainRef{ID: c.id, Step: st.Index, Stage: 1}, "float32"); err != nil {
		return err
	}
	stepInfo(c, st, T)
	c.setInfo("decode_rows", B)
	l.facts(c, NN)
	rows := B * NN
	q := dsaE4M3Tensor(c.stream(stageStream("index_q", st.Index)), rows*p.HI*p.DI, 1)
	w := make([]float32, rows*p.HI)
	gen.Normal(c.stream(stageStream("index_weights", st.Index)), w, 0, gen.F32, 1/math.Sqrt(float64(p.HI)))
	W := l.maxb * dsaPS
	logits := make([]float64, rows*W)
	tl, tp := make([]int32, rows*p.K), make([]int32, rows*p.K)
	info := make([]golden.DSARowInfo, rows)
	dims := golden.DSAIndexerDims{B: B, NN: NN, HI: p.HI, DI: p.DI, NB: pl.nb, MAXB: l.maxb, K: p.K}
	if err := golden.DSAIndexer(logits, tl, tp, info, q, w, ds.ic, l.bt, l.lens, dims); err != nil {
		return fmt.Errorf("step %d: %w", st.Index, err)
	}
	lead := []int64{int64(B), int64(NN)}
	if err := c.writeBytes(tensorSpec{name: "q", role: roleInput, dtype: "float8_e4m3fn", shape: append(lead, int64(p.HI), int64(p.DI))}, q); err != nil {
		return err
	}
	if err := c.writeFloat(tensorSpec{name: "weights", role: roleInput, dtype: "float32", shape: append(lead, int64(p.HI))}, &floatTensor{dtype: "float32", dt: dtype.Float32, vals: w}); err != nil {
		return err
	}
	c.ref("index_cache", icOut)
	if err := l.write(c); err != nil {
		return err
	}
	bt, lens := c.tensors[len(c.tensors)-2], c.tensors[len(c.tensors)-1]
	if err := c.writeRounded(tensorSpec{name: "logits", role: roleGolden, dtype: "float32", shape: append(lead, int64(W))}, logits); err != nil {
		return err
	}
	for _, t := range []struct {
		name string
		v    []int32
	}{{"topk_logical", tl}, {"topk_physical", tp}} {
		if err := c.writeInts(tensorSpec{name: t.name, role: roleGolden, dtype: "int32", shape: append(lead, int64(p.K))}, t.v); err != nil {
			return err
		}
	}
	if err := l.writeHeader(c); err != nil {
		return err
	}
	if err := c.writeRounded(tensorSpec{name: "index_scores", role: roleAux, dtype: "float64", shape: append(lead, int64(W))}, logits); err != nil {
		return err
	}
	if err := dsaRowInfo(c, info, lead, dsaEps("float32")); err != nil {
		return err
	}

	// Stage 2: sparse MLA over the indexer's selection (its
	// topk_physical, [rows, k]) on the MLA caches after the step's writes.
	ap := dsaAttnParams{dsaLayoutParams: ip.dsaLayoutParams, NN: NN, H: p.H, DC: p.DC, DR: p.DR, K: p.K, IndexHI: p.HI, IndexDI: p.DI, SMScale: p.Scale}
	if err := c.beginStage(stageID(c.id, st.Index, "dsa_sparse_attention"), "dsa_sparse_attention", canonical(ap), manifests.ChainRef{ID: c.id, Step: st.Index, Stage: 2}, "bfloat16"); err != nil {
		return err
	}
	stepInfo(c, st, T)
	c.setInfo("decode_rows", B)
	selected := map[int32]bool{}
	for _, x := range tp {
		if x >= 0 {
			selected[x] = true
		}
	}
	c.addFact("slots", int64(len(selected)))
	c.addFact("selected", int64(countValid(tp)))
	qn := normalTensor(c.stream(stageStream("q_nope", st.Index)), "bfloat16", rows*p.H*p.DC, 0, 1)
	qp := normalTensor(c.stream(stageStream("q_pe", st.Index)), "bfloat16", rows*p.H*p.DR, 0, 1)
	R, H := int64(rows), int64(p.H)
	if err := c.writeFloat(tensorSpec{name: "q_nope", role: roleInput, dtype: "bfloat16", shape: []int64{R, H, int64(p.DC)}}, &qn); err != nil {
		return err
	}
	if err := c.writeFloat(tensorSpec{name: "q_pe", role: roleInput, dtype: "bfloat16", shape: []int64{R, H, int64(p.DR)}}, &qp); err != nil {
		return err
	}
	for _, m := range []struct {
		name string
		bits []uint16
		d    int
	}{{"ckv_cache", ds.ckv, p.DC}, {"kpe_cache", ds.kpe, p.DR}} {
		if err := c.write(tensorSpec{name: m.name, role: roleInput, dtype: "bfloat16", shape: []int64{int64(pl.nb), dsaPS, int64(m.d)}}, func(o *tensorOut) error { return o.u16(m.bits) }); err != nil {
			return err
		}
	}
	if err := c.writeInts(tensorSpec{name: "sparse_indices", role: roleInput, dtype: "int32", shape: []int64{R, int64(p.K)}}, tp); err != nil {
		return err
	}
	c.ref("block_table", bt)
	c.ref("seq_lens", lens)
	out, lse, stats, err := dsaAttendRows(c, tp, qn.vals, qp.vals, rows, p.H, p.DC, p.DR, p.K, p.Scale, func(s int32, ckv, kpe []float32) {
		halfToF32(ckv, ds.ckv[int(s)*p.DC:(int(s)+1)*p.DC], "bfloat16")
		halfToF32(kpe, ds.kpe[int(s)*p.DR:(int(s)+1)*p.DR], "bfloat16")
	})
	if err != nil {
		return fmt.Errorf("step %d: %w", st.Index, err)
	}
	if err := c.writeRounded(tensorSpec{name: "out", role: roleGolden, dtype: "bfloat16", shape: []int64{R, H, int64(p.DC)}}, out); err != nil {
		return err
	}
	if err := c.writeRounded(tensorSpec{name: "lse", role: roleGolden, dtype: "float32", shape: []int64{R, H}}, lse); err != nil {
		return err
	}
	if err := l.writeHeader(c); err != nil {
		return err
	}
	return dsaRowStats(c, stats)
}

// layout returns the paged layout of a step's decode rows on the whole
// cache: their block tables (-1 past ceil(L/64)) and seq_lens after the
// step's writes, and the slots they read.
func (ds *dsaChainState) layout(st *schedule.Step) *dsaLayout {
	bt, lens, _, maxb := stepTables(st, dsaPS, ds.p.dsaRow, -1)
	l := &dsaLayout{lens: lens, maxb: maxb, nb: ds.pl.nb, bt: bt, read: make([]bool, ds.pl.nb*dsaPS)}
	for b, L := range lens {
		for pos := range int(L) {
			l.read[l.slot(b, pos)] = true
		}
	}
	return l
}

// used is the blocks the layout's sequences reference (none is shared).
func (l *dsaLayout) used() int {
	n := 0
	for _, L := range l.lens {
		n += numBlocksDSA(int(L))
	}
	return n
}

// int32s widens lens to ints.
func int32s(v []int32) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}
