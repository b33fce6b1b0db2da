package suite

import (
	"encoding/json"
	"math"
	"runtime/trace"
	"slices"

	"github.com/goldset/goldset/compare"
	"github.com/goldset/goldset/gen"
	"github.com/goldset/goldset/golden"
	"github.com/goldset/goldset/internal/detmath"
	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/npy"
)

// ---- dsa_sparse_attention (docs/spec.md §8c) ----

var _ = register(&op{
	name:   "dsa_sparse_attention",
	export: exportSpec{flashinfer: "dsa_paged", ascend: "DsaSparseAttention", axes: map[string][]string{"q_nope": {"T", "H", "DC"}, "q_pe": {"T", "H", "DR"}, "ckv_cache": {"NB", "BS", "DC"}, "kpe_cache": {"NB", "BS", "DR"}, "sparse_indices": {"T", "K"}, "block_table": {"B", "MB"}, "seq_lens": {"B"}, "out": {"T", "H", "DC"}, "lse": {"T", "H"}}},
	inputs: []string{"q_nope", "q_pe", "ckv_cache", "kpe_cache", "sparse_indices", "block_table", "seq_lens"},
	outputs: []output{
		{name: "out", dtype: "bfloat16", tol: compare.DSAAttention},
		{name: "lse", dtype: "float32", tol: compare.DSALSE},
		{name: "block_header", dtype: "int32", tol: compare.Exact.WithBasis("exact/block_header")},
	},
	aux:       []string{"row_stats"},
	plan:      planDSAAttention,
	controls:  dsaAttentionControls,
	work:      dsaAttentionWork,
	judgeData: dsaAttentionJudgeData,
})

type dsaAttnParams struct {
	dsaLayoutParams
	NN int `json:"next_n"`
	H  int `json:"h"`
	DC int `json:"dc"`
	DR int `json:"dr"`
	K  int `json:"k"`
	// The selection is the golden indexer's topk_physical over a seeded
	// indexer problem of IndexHI heads of IndexDI dims on the same pages.
	IndexHI int `json:"index_hi"`
	IndexDI int `json:"index_di"`
	// EmptyRows are emptied (all -1); SingleRows keep one valid index.
	EmptyRows  []int `json:"empty_rows,omitempty"`
	SingleRows []int `json:"single_rows,omitempty"`
	// SMScale defaults to 1/sqrt(192).
	SMScale float64 `json:"sm_scale"`
}

func planDSAAttention(raw json.RawMessage) (*casePlan, error) {
	p := dsaAttnParams{NN: 1, DC: 512, DR: 64, K: 2048, IndexHI: 64, IndexDI: 128, SMScale: golden.DSADefaultSMScale}
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	for _, e := range []error{checkRange("next_n", p.NN, 1, 2), checkRange("h", p.H, 1, 256), checkRange("dc", p.DC, 1, 1024),
		checkRange("dr", p.DR, 0, 256), checkRange("k", p.K, 1, 1<<16), checkRange("index_hi", p.IndexHI, 1, 256),
		checkRange("index_di", p.IndexDI, 1, 1024), finitePositive("sm_scale", p.SMScale)} {
		if e != nil {
			return nil, e
		}
	}
	if err := p.dsaLayoutParams.check(p.NN); err != nil {
		return nil, err
	}
	rows := len(p.SeqLens) * p.NN
	for _, r := range append(slices.Clone(p.EmptyRows), p.SingleRows...) {
		if r < 0 || r >= rows {
			return nil, errParams("empty/single row %d not in [0, %d)", r, rows)
		}
	}
	_, nb := p.blocks()
	if _, err := checkElems("ckv_cache", nb, dsaPS, p.DC); err != nil {
		return nil, err
	}
	bytes := int64(nb*dsaPS*(p.DC+p.DR))*2 + int64(rows*p.H*(p.DC+p.DR))*2*2 + int64(rows*p.K*4) + int64(rows*p.H*4)
	// Its head start lasts until the ckv cache opens: that writer's sha256
	// is the case's longest stage, and the tensors before it are small.
	lead := int64(nb*dsaPS*p.DC) * 2
	return &casePlan{params: canonical(p), dtype: "bfloat16", bytes: bytes, lead: lead, build: func(c *caseCtx) error { return buildDSAAttention(c, &p) }}, nil
}

func buildDSAAttention(c *caseCtx, p *dsaAttnParams) error {
	reg := trace.StartRegion(c.ctx, "dsa problem")
	pr, err := newDSAProblem(c, &p.dsaLayoutParams, p.NN, p.IndexHI, p.IndexDI, p.K, "ue8m0", 0, false)
	reg.End()
	if err != nil {
		return err
	}
	if err := pr.solve(c); err != nil {
		return err
	}
	reg = trace.StartRegion(c.ctx, "dsa draw")
	l := pr.l
	rows := len(l.lens) * p.NN
	idx := pr.tp
	// -1 padding anywhere: each row's entries in a seeded order.
	rnd := c.stream("sparse_indices").Rand()
	for r := range rows {
		row := idx[r*p.K : (r+1)*p.K]
		if slices.Contains(p.EmptyRows, r) {
			for i := range row {
				row[i] = -1
			}
		}
		if slices.Contains(p.SingleRows, r) {
			for i := 1; i < len(row); i++ {
				row[i] = -1
			}
		}
		for i := len(row) - 1; i > 0; i-- { // Fisher-Yates
			j := rnd.IntN(i + 1)
			row[i], row[j] = row[j], row[i]
		}
	}
	// The selected slots, numbered in slot order; their values are drawn
	// once, up front: the golden reads them while the cache writers store
	// their bits.
	keptAt := slices.Repeat([]int32{-1}, l.nb*dsaPS)
	for _, x := range idx {
		if x >= 0 {
			keptAt[x] = 0
		}
	}
	var selSlots []int
	for s, v := range keptAt {
		if v == 0 {
			keptAt[s] = int32(len(selSlots))
			selSlots = append(selSlots, s)
		}
	}
	c.addFact("slots", int64(len(selSlots)))
	c.addFact("selected", int64(countValid(idx)))
	parts := []*dsaCachePart{{name: "ckv_cache", d: p.DC}, {name: "kpe_cache", d: p.DR}}
	for _, pt := range parts {
		pt.draw(c, selSlots)
	}
	T, H := int64(rows), int64(p.H)
	qn := normalTensor(c.stream("q_nope"), "bfloat16", rows*p.H*p.DC, 0, 1)
	qp := normalTensor(c.stream("q_pe"), "bfloat16", rows*p.H*p.DR, 0, 1)
	reg.End()
	if err := c.writeFloat(tensorSpec{name: "q_nope", role: roleInput, dtype: "bfloat16", shape: []int64{T, H, int64(p.DC)}}, &qn); err != nil {
		return err
	}
	if err := c.writeFloat(tensorSpec{name: "q_pe", role: roleInput, dtype: "bfloat16", shape: []int64{T, H, int64(p.DR)}}, &qp); err != nil {
		return err
	}
	// The caches stream page by page, both at once and beside the golden
	// (their entries keep the creation order); every slot no row selects
	// is NaN.
	var caches []*tensorOut
	var waits []func() error
	defer func() { // every fill ends before the builder returns
		for _, w := range waits {
			w()
		}
	}()
	for _, pt := range parts {
		t, err := c.create(tensorSpec{name: pt.name, role: roleInput, dtype: "bfloat16", shape: []int64{int64(l.nb), dsaPS, int64(pt.d)}})
		if err != nil {
			return err
		}
		caches = append(caches, t)
		waits = append(waits, fillAsync(t, func(t *tensorOut) error { return pt.fill(t, keptAt) }))
	}
	if err := c.writeInts(tensorSpec{name: "sparse_indices", role: roleInput, dtype: "int32", shape: []int64{T, int64(p.K)}}, idx); err != nil {
		return err
	}
	if err := l.write(c); err != nil {
		return err
	}
	// The golden, one row at a time over a compact copy of its selected
	// slots in row order (peak memory: the selected slots, not the cache).
	reg = trace.StartRegion(c.ctx, "dsa attention")
	out, lse, stats, err := dsaAttendRows(c, idx, qn.vals, qp.vals, rows, p.H, p.DC, p.DR, p.K, p.SMScale, func(s int32, ckv, kpe []float32) {
		g := int(keptAt[s])
		copy(ckv, parts[0].vals[g*p.DC:(g+1)*p.DC])
		copy(kpe, parts[1].vals[g*p.DR:(g+1)*p.DR])
	})
	reg.End()
	if err != nil {
		return err
	}
	for i, t := range caches {
		if err := waits[i](); err != nil {
			return err
		}
		if err := t.close(); err != nil {
			return err
		}
	}
	if err := c.writeRounded(tensorSpec{name: "out", role: roleGolden, dtype: "bfloat16", shape: []int64{T, H, int64(p.DC)}}, out); err != nil {
		return err
	}
	if err := c.writeRounded(tensorSpec{name: "lse", role: roleGolden, dtype: "float32", shape: []int64{T, H}}, lse); err != nil {
		return err
	}
	if err := l.writeHeader(c); err != nil {
		return err
	}
	return dsaRowStats(c, stats)
}

// dsaRowStats records the empty and single-index rows and writes the aux
// row_stats [T, 2].
func dsaRowStats(c *caseCtx, stats []float64) error {
	empty, single := 0, 0
	for r := range len(stats) / 2 {
		switch stats[2*r+1] {
		case 0:
			empty++
		case 1:
			single++
		}
	}
	c.setInfo("empty_rows", empty)
	c.setInfo("single_index_rows", single)
	return c.writeRounded(tensorSpec{name: "row_stats", role: roleAux, dtype: "float64", shape: []int64{int64(len(stats) / 2), 2}}, stats)
}

// dsaAttendRows runs the golden MLA attention one row at a time over a
// compact copy of the row's selected slots in row order (slot fills a
// slot's ckv and kpe values): out [rows, h, dc], lse [rows, h] and
// row_stats [rows, 2] = (max|v_sel|, valid count).
func dsaAttendRows(c *caseCtx, idx []int32, qn, qp []float32, rows, h, dc, dr, k int, scale float64, slot func(s int32, ckv, kpe []float32)) (out, lse, stats []float64, err error) {
	out, lse, stats = make([]float64, rows*h*dc), make([]float64, rows*h), make([]float64, 2*rows)
	for r := range rows {
		row := idx[r*k : (r+1)*k]
		n := max(countValid(row), 1)
		ckv, kpe := make([]float32, n*dc), make([]float32, n*dr)
		local := slices.Repeat([]int32{-1}, k)
		vmax := 0.0
		j := 0
		for i, x := range row {
			if x < 0 {
				continue
			}
			slot(x, ckv[j*dc:(j+1)*dc], kpe[j*dr:(j+1)*dr])
			for _, v := range ckv[j*dc : (j+1)*dc] {
				vmax = max(vmax, math.Abs(float64(v)))
			}
			local[i] = int32(j)
			j++
		}
		dims := golden.DSAAttentionDims{T: 1, H: h, DC: dc, DR: dr, P: n, PS: 1, K: k}
		if err := golden.DSASparseAttention(out[r*h*dc:(r+1)*h*dc], lse[r*h:(r+1)*h], qn[r*h*dc:(r+1)*h*dc], qp[r*h*dr:(r+1)*h*dr], ckv, kpe, local, dims, scale); err != nil {
			return nil, nil, nil, err
		}
		stats[2*r], stats[2*r+1] = vmax, float64(j)
		c.tick()
	}
	return out, lse, stats, nil
}

// dsaCachePart is one of the MLA caches (ckv, kpe): d values per slot,
// and the bits and values of the selected slots (in slot order).
type dsaCachePart struct {
	name string
	d    int
	bits []uint16
	vals []float32
}

// dsaMinSlots is the fewest selected slots worth a goroutine of draws.
const dsaMinSlots = 256

// draw draws the values of the selected slots: those of stream name from
// element slot*d, as a slot-by-slot draw gives them.
func (pt *dsaCachePart) draw(c *caseCtx, slots []int) {
	d, st := pt.d, c.stream(pt.name)
	pt.bits, pt.vals = make([]uint16, len(slots)*d), make([]float32, len(slots)*d)
	workers := min(defaultJobs(), 1+len(slots)/dsaMinSlots)
	parallelChunks(workers, len(slots), func(_, lo, hi int) {
		for j := lo; j < hi; j++ {
			gen.Normal(st, pt.bits[j*d:(j+1)*d], int64(slots[j])*int64(d), gen.BF16, 1)
		}
		halfToF32(pt.vals[lo*d:hi*d], pt.bits[lo*d:hi*d], "bfloat16")
	})
}

// fill writes the cache [nb, 64, d] in batches of about dsaFillBatch produced
// straight into t's queued buffers: slot s holds selected slot keptAt[s]'s
// bits, or NaN.
func (pt *dsaCachePart) fill(t *tensorOut, keptAt []int32) error {
	d := pt.d
	nanRow := slices.Repeat([]uint16{npy.BF16FromF64(math.NaN())}, d)
	slots := len(keptAt)
	batch := max(dsaPS, dsaFillBatch/(2*max(d, 1))/dsaPS*dsaPS) // whole pages
	for s0 := 0; s0 < slots; s0 += batch {
		s1 := min(slots, s0+batch)
		raw, err := t.reserve((s1 - s0) * d * 2)
		if err != nil {
			return err
		}
		// One goroutine: a batch is a 1 MiB copy (a parallel loop's
		// allocations here would make this, the critical path of the
		// largest case, assist the collector).
		v := viewFloats("bfloat16", raw).bits
		for s := s0; s < s1; s++ {
			row := v[(s-s0)*d : (s-s0+1)*d]
			if j := keptAt[s]; j >= 0 {
				copy(row, pt.bits[int(j)*d:(int(j)+1)*d])
			} else {
				copy(row, nanRow)
			}
		}
		toLittleEndian(raw, 2)
		if err := t.submit(raw); err != nil {
			return err
		}
	}
	return nil
}

// dsaAttentionJudgeData: max|v_sel| per out row and the rows with one
// valid index.
func dsaAttentionJudgeData(d caseData, name string) (*compare.DSAData, error) {
	if name != "out" {
		return nil, nil
	}
	st, _, err := d.floats("row_stats")
	if err != nil {
		return nil, err
	}
	h := int(d.c.Tensor("out").Shape[1])
	rows := len(st) / 2
	data := &compare.DSAData{RowScale: make([]float64, rows*h), Exact: make([]bool, rows*h)}
	for r := range rows {
		for i := range h {
			data.RowScale[r*h+i] = st[2*r]
			data.Exact[r*h+i] = st[2*r+1] == 1
		}
	}
	return data, nil
}

// dsaAttnF32 is an honest low-precision MLA row: fp32 dot products, an
// fp32 online softmax and fp32 accumulation.
func dsaAttnF32(out, lse []float64, qn, qp, ckv, kpe []float32, sel []int32, h, dc, dr int, scale float32) {
	acc := make([]float32, dc)
	for hh := range h {
		m, den := float32(math.Inf(-1)), float32(0)
		clear(acc)
		for _, s := range sel {
			var dot float32
			for d := range dc {
				dot += float32(qn[hh*dc+d] * ckv[int(s)*dc+d])
			}
			for d := range dr {
				dot += float32(qp[hh*dr+d] * kpe[int(s)*dr+d])
			}
			x := float32(dot * scale)
			if x > m {
				f := float32(detmath.Exp(float64(m - x)))
				den = float32(den * f)
				for d := range acc {
					acc[d] = float32(acc[d] * f)
				}
				m = x
			}
			e := float32(detmath.Exp(float64(x - m)))
			den += e
			for d := range acc {
				acc[d] += float32(e * ckv[int(s)*dc+d])
			}
		}
		for d := range acc {
			if len(sel) == 0 {
				out[hh*dc+d] = 0
			} else {
				out[hh*dc+d] = float64(acc[d] / den)
			}
		}
		if len(sel) == 0 {
			lse[hh] = math.Inf(1) // FlashMLA's convention for an empty row
		} else {
			lse[hh] = float64(m) + detmath.Log(float64(den))
		}
	}
}

func dsaAttentionControls(d caseData) ([]Control, error) {
	var p dsaAttnParams
	if err := json.Unmarshal(d.c.Params, &p); err != nil {
		return nil, err
	}
	qn, err := d.f32("q_nope")
	if err != nil {
		return nil, err
	}
	qp, err := d.f32("q_pe")
	if err != nil {
		return nil, err
	}
	ckv, err := d.f32("ckv_cache")
	if err != nil {
		return nil, err
	}
	kpe, err := d.f32("kpe_cache")
	if err != nil {
		return nil, err
	}
	idx, err := d.i32("sparse_indices")
	if err != nil {
		return nil, err
	}
	T := len(idx) / p.K
	slots := len(ckv) / p.DC
	dims := golden.DSAAttentionDims{T: T, H: p.H, DC: p.DC, DR: p.DR, P: slots / dsaPS, PS: dsaPS, K: p.K}
	variant := func(name, note string, f func(out, lse []float64) error) (Control, error) {
		out, lse := make([]float64, T*p.H*p.DC), make([]float64, T*p.H)
		if err := f(out, lse); err != nil {
			return Control{}, err
		}
		return Control{Name: name, Note: note, Outputs: []ControlOutput{d.output("out", out), d.output("lse", lse)}}, nil
	}
	golden4 := func(g func(out, lse []float64, qn, qp, ckv, kpe []float32, idx []int32, dims golden.DSAAttentionDims, s float64) error) func(out, lse []float64) error {
		return func(out, lse []float64) error { return g(out, lse, qn, qp, ckv, kpe, idx, dims, p.SMScale) }
	}
	ctl := []Control{zeros(d, "out")}
	pos, err := variant("fp32_accumulate", "an honest kernel: fp32 dots, online softmax and accumulation; +inf lse on an empty row", func(out, lse []float64) error {
		for r := range T {
			var sel []int32
			for _, x := range idx[r*p.K : (r+1)*p.K] {
				if x >= 0 {
					sel = append(sel, x)
				}
			}
			slices.Sort(sel)
			dsaAttnF32(out[r*p.H*p.DC:(r+1)*p.H*p.DC], lse[r*p.H:(r+1)*p.H], qn[r*p.H*p.DC:(r+1)*p.H*p.DC], qp[r*p.H*p.DR:(r+1)*p.H*p.DR], ckv, kpe, sel, p.H, p.DC, p.DR, float32(p.SMScale))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	pos.Pass = true
	ctl = append(ctl, pos)
	specs := []struct {
		name, note string
		when       bool
		f          func(out, lse []float64) error
	}{
		{"minus_one_as_slot0", "-1 entries read as slot 0", slices.Contains(idx, -1), golden4(golden.DSASparseAttentionMinusOneAsSlot0)},
		{"lse_base2", "lse in base 2", true, golden4(golden.DSASparseAttentionLSEBase2)},
		{"sm_scale_576", "sm_scale 1/sqrt(576)", true, golden4(golden.DSASparseAttentionScale576)},
	}
	// A canary: the first slot no row selects that is NaN in the cache
	// (every unselected slot of an op case; a never-written one in a
	// pipeline's cache, where unselected slots hold real keys).
	used := make([]bool, slots)
	for _, x := range idx {
		if x >= 0 {
			used[x] = true
		}
	}
	canary := -1
	for s := range slots {
		if !used[s] && ckv[s*p.DC] != ckv[s*p.DC] {
			canary = s
			break
		}
	}
	if canary >= 0 {
		specs = append(specs, struct {
			name, note string
			when       bool
			f          func(out, lse []float64) error
		}{"read_canary", "the first valid entry of every row replaced by an unselected (NaN) slot", true, func(out, lse []float64) error {
			return golden.DSASparseAttentionReadCanary(out, lse, qn, qp, ckv, kpe, idx, dims, p.SMScale, int32(canary))
		}})
	}
	for _, s := range specs {
		if !s.when {
			continue
		}
		c, err := variant(s.name, s.note, s.f)
		if err != nil {
			return nil, err
		}
		ctl = append(ctl, c)
	}
	hc, err := headerControls(d)
	if err != nil {
		return nil, err
	}
	return append(ctl, hc...), nil
}

// dsaAttentionWork: the queries, indices, block table and seq_lens read
// whole; the ckv and kpe rows of the distinct selected slots read once;
// out, lse and the header written. Every valid index of a row costs each
// head a QK product over dc+dr and a PV product over dc.
func dsaAttentionWork(w workIn) (manifests.Work, error) {
	p, err := decodeWork[dsaAttnParams](w)
	if err != nil {
		return manifests.Work{}, err
	}
	var s sumErr
	s.add(w.bytes("q_nope", "q_pe", "sparse_indices", "block_table", "seq_lens"))
	slots, err := w.fact("slots")
	s.add(slots*int64(p.DC+p.DR)*2, err)
	sel, err := w.fact("selected")
	s.add(0, err)
	wr, err := w.bytes("out", "lse", "block_header")
	s.add(0, err)
	if s.err != nil {
		return manifests.Work{}, s.err
	}
	return manifests.Work{BytesRead: s.v, BytesWritten: wr, Flops: sel * int64(p.H) * int64(4*p.DC+2*p.DR), FlopDType: "bfloat16"}, nil
}
