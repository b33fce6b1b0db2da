package suite

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/goldset/goldset/compare"
	"github.com/goldset/goldset/gen"
	"github.com/goldset/goldset/golden"
	"github.com/goldset/goldset/internal/dtype"
	"github.com/goldset/goldset/manifests"
)

// Shared pieces of the DSA ops (docs/spec.md §8): the paged layout with
// its block header, the quantized index cache with NaN canaries, byte
// tensors, and the judge data compare's DSA families need.

// dsaPS is the page (block) size of every DSA cache.
const dsaPS = golden.DSABlockSize

// dsaLayoutParams are the paged-layout params shared by the DSA ops.
type dsaLayoutParams struct {
	SeqLens []int `json:"seq_lens"`
	// ExtraBlocks unreferenced physical blocks (NaN canaries) are added.
	ExtraBlocks int `json:"extra_blocks"`
	// Shuffle draws the physical block ids as a seeded permutation.
	Shuffle bool `json:"shuffle,omitempty"`
	// SharedPages: every sequence b > 0 maps its first SharedPages logical
	// blocks to sequence 0's (a shared prefix; each needs L >= 64*SharedPages).
	SharedPages int `json:"shared_pages,omitempty"`
}

func (p *dsaLayoutParams) check(nn int) error {
	if len(p.SeqLens) == 0 || len(p.SeqLens) > maxBatch {
		return errParams("seq_lens: %d sequences, want 1..%d", len(p.SeqLens), maxBatch)
	}
	for b, l := range p.SeqLens {
		if err := checkRange(fmt.Sprintf("seq_lens[%d]", b), l, max(nn, 1), 1<<20); err != nil {
			return err
		}
		if b > 0 && l < p.SharedPages*dsaPS {
			return errParams("shared_pages = %d needs seq_lens[%d] >= %d", p.SharedPages, b, p.SharedPages*dsaPS)
		}
	}
	if p.SharedPages > 0 && p.SeqLens[0] < p.SharedPages*dsaPS {
		return errParams("shared_pages = %d needs seq_lens[0] >= %d", p.SharedPages, p.SharedPages*dsaPS)
	}
	return checkRange("extra_blocks", p.ExtraBlocks, 0, 1<<16)
}

// dsaLayout is a built paged layout.
type dsaLayout struct {
	lens     []int32
	maxb, nb int
	bt       []int32 // [B, MAXB], -1 past ceil(L/64)
	read     []bool  // [nb*64] slots some row reads (position < L of a sequence)
}

func (p *dsaLayoutParams) blocks() (maxb, nb int) {
	for b, l := range p.SeqLens {
		n := (l + dsaPS - 1) / dsaPS
		maxb = max(maxb, n)
		nb += n
		if b > 0 {
			nb -= p.SharedPages
		}
	}
	return maxb, nb + p.ExtraBlocks
}

func newDSALayout(c *caseCtx, p *dsaLayoutParams) *dsaLayout {
	maxb, nb := p.blocks()
	l := &dsaLayout{maxb: maxb, nb: nb, bt: make([]int32, len(p.SeqLens)*maxb), read: make([]bool, nb*dsaPS)}
	ids := make([]int, nb)
	for i := range ids {
		ids[i] = i
	}
	if p.Shuffle {
		ids = c.stream("block_table").Rand().Perm(nb)
	}
	next := 0
	for b, L := range p.SeqLens {
		l.lens = append(l.lens, int32(L))
		n := (L + dsaPS - 1) / dsaPS
		for i := range maxb {
			id := int32(-1)
			switch {
			case i >= n:
			case b > 0 && i < p.SharedPages:
				id = l.bt[i]
			default:
				id = int32(ids[next])
				next++
			}
			l.bt[b*maxb+i] = id
		}
		for pos := range L {
			l.read[l.slot(b, pos)] = true
		}
	}
	return l
}

func (l *dsaLayout) slot(b, pos int) int {
	return int(l.bt[b*l.maxb+pos/dsaPS])*dsaPS + pos%dsaPS
}

// writeLayout writes block_table and seq_lens.
func (l *dsaLayout) write(c *caseCtx) error {
	B := int64(len(l.lens))
	if err := c.writeInts(tensorSpec{name: "block_table", role: roleInput, dtype: "int32", shape: []int64{B, int64(l.maxb)}}, l.bt); err != nil {
		return err
	}
	return c.writeInts(tensorSpec{name: "seq_lens", role: roleInput, dtype: "int32", shape: []int64{B}}, l.lens)
}

// writeHeader writes the golden block_header [NB, 2].
func (l *dsaLayout) writeHeader(c *caseCtx) error {
	h := make([]int32, 2*l.nb)
	if err := golden.DSABlockHeader(h, l.bt, l.lens, len(l.lens), l.maxb, l.nb, dsaPS); err != nil {
		return err
	}
	return c.writeInts(tensorSpec{name: "block_header", role: roleGolden, dtype: "int32", shape: []int64{int64(l.nb), 2}}, h)
}

// dsaCanaryCache returns an index cache of nb blocks whose every code is
// the e4m3 NaN 0x7f and every scale a NaN: a kernel reading a slot no row
// may read sees NaN.
func dsaCanaryCache(nb, di int) []byte {
	out := make([]byte, nb*golden.DSABlockBytes(di))
	dsaFillCanary(out, di)
	return out
}

// dsaFillCanary fills whole index-cache blocks with dsaCanaryCache's NaNs.
func dsaFillCanary(cache []byte, di int) {
	bb := golden.DSABlockBytes(di)
	for p := range len(cache) / bb {
		dsaFillCanarySlots(cache[p*bb:(p+1)*bb], di, 0, dsaPS)
	}
}

// dsaCanaryScale is the little-endian float32 NaN of a canary slot's scale.
var dsaCanaryScale = binary.LittleEndian.AppendUint32(nil, 0x7fc00000)

// dsaFillCanarySlots sets the codes and scales of slots o0..o1-1 of one
// cache block to the canary NaNs.
func dsaFillCanarySlots(blk []byte, di, o0, o1 int) {
	fillPattern(blk[o0*di:o1*di], []byte{0x7f})
	fillPattern(blk[dsaPS*di+4*o0:dsaPS*di+4*o1], dsaCanaryScale)
}

// fillPattern fills dst with repeats of pat by doubling copies (a byte
// loop is several times slower for the index caches' megabytes).
func fillPattern(dst, pat []byte) {
	n := copy(dst, pat)
	for n < len(dst) {
		n += copy(dst[n:], dst[:n])
	}
}

// dsaScaleFmt parses scale_fmt.
func dsaScaleFmt(s string) (golden.DSAScaleFmt, error) {
	switch s {
	case "ue8m0":
		return golden.DSAScaleUE8M0, nil
	case "fp32":
		return golden.DSAScaleFP32, nil
	}
	return 0, errParams("scale_fmt %q, want \"ue8m0\" or \"fp32\"", s)
}

// dsaE4M3Tensor draws n normal values of scale from s and stores their
// e4m3 codes (RNE, saturating).
func dsaE4M3Tensor(s gen.Stream, n int, scale float64) []byte {
	v := make([]float32, n)
	gen.Normal(s, v, 0, gen.F32, scale)
	out := make([]byte, n)
	for i, x := range v {
		out[i] = dtype.E4M3FromF64(float64(x))
	}
	return out
}

// dsaRowInfo writes the aux row_info [rows, 4] (visible, kth, gap, A) and
// puts a summary (and, for up to 32 rows, every row) in the case's info.
func dsaRowInfo(c *caseCtx, info []golden.DSARowInfo, lead []int64, eps float64) error {
	v := make([]float64, 4*len(info))
	var rows []map[string]any
	tieRows, minGap := 0, math.Inf(1)
	for i, ri := range info {
		v[4*i], v[4*i+1], v[4*i+2], v[4*i+3] = float64(ri.Visible), ri.Kth, ri.Gap, ri.A
		if ri.Gap <= 2*eps*ri.A {
			tieRows++
		}
		if ri.A > 0 && ri.Visible > 0 {
			minGap = min(minGap, ri.Gap/ri.A)
		}
		if len(info) <= 32 {
			rows = append(rows, map[string]any{"visible": ri.Visible, "kth": jsonFloat(ri.Kth), "gap": jsonFloat(ri.Gap), "a": jsonFloat(ri.A)})
		}
	}
	c.setInfo("rows_in_tie_band", tieRows)
	c.setInfo("min_gap_over_a", jsonFloat(minGap))
	if rows != nil {
		c.setInfo("row_info", rows)
	}
	return c.writeRounded(tensorSpec{name: "row_info", role: roleAux, dtype: "float64", shape: append(append([]int64{}, lead...), 4)}, v)
}

// jsonFloat keeps infinities JSON-encodable in info.
func jsonFloat(x float64) any {
	if math.IsInf(x, 0) || x != x {
		return fmt.Sprint(x)
	}
	return x
}

// dsaReadRowInfo loads row_info back.
func dsaReadRowInfo(d caseData) ([]golden.DSARowInfo, error) {
	v, _, err := d.floats("row_info")
	if err != nil {
		return nil, err
	}
	out := make([]golden.DSARowInfo, len(v)/4)
	for i := range out {
		out[i] = golden.DSARowInfo{Visible: int(v[4*i]), Kth: v[4*i+1], Gap: v[4*i+2], A: v[4*i+3]}
	}
	return out, nil
}

// headerControls are block_header's controls, for every paged DSA case.
func headerControls(d caseData) ([]Control, error) {
	bt, err := d.i32("block_table")
	if err != nil {
		return nil, err
	}
	lens, err := d.i32("seq_lens")
	if err != nil {
		return nil, err
	}
	h := d.c.Tensor("block_header")
	nb, maxb := int(h.Shape[0]), int(d.c.Tensor("block_table").Shape[1])
	// An honest second builder: sequences in reverse order, each
	// overwriting, which leaves the first reference in the end.
	honest := make([]float64, 2*nb)
	last := make([]float64, 2*nb)
	refs := make([]int, nb)
	for p := range nb {
		honest[2*p], honest[2*p+1] = 0, -1
		last[2*p], last[2*p+1] = 0, -1
	}
	for s := len(lens) - 1; s >= 0; s-- {
		for i := numBlocksDSA(int(lens[s])) - 1; i >= 0; i-- {
			p := bt[s*maxb+i]
			honest[2*p], honest[2*p+1] = float64(min(dsaPS, int(lens[s])-i*dsaPS)), float64(i*dsaPS)
		}
	}
	for s := range lens {
		for i := range numBlocksDSA(int(lens[s])) {
			p := bt[s*maxb+i]
			refs[p]++
			last[2*p], last[2*p+1] = float64(min(dsaPS, int(lens[s])-i*dsaPS)), float64(i*dsaPS)
		}
	}
	z := zeros(d, "block_header")
	z.Name = "header_zeros"
	ctl := []Control{z,
		{Name: "header_reverse_builder", Pass: true, Note: "built in reverse (sequence, position) order, overwriting", Outputs: []ControlOutput{d.output("block_header", honest)}}}
	shared, unref := false, false
	for p := range nb {
		shared = shared || refs[p] > 1
		unref = unref || refs[p] == 0
	}
	if shared && !slices.Equal(last, honest) {
		ctl = append(ctl, Control{Name: "header_last_reference", Note: "a shared block takes its last reference", Outputs: []ControlOutput{d.output("block_header", last)}})
	}
	if unref {
		bad := append([]float64(nil), honest...)
		for p := range nb {
			if refs[p] == 0 {
				bad[2*p+1] = 0
			}
		}
		ctl = append(ctl, Control{Name: "header_unreferenced_start0", Note: "an unreferenced block gets start 0 instead of -1", Outputs: []ControlOutput{d.output("block_header", bad)}})
	}
	return ctl, nil
}

func numBlocksDSA(l int) int { return (l + dsaPS - 1) / dsaPS }

// ---- block_header (docs/spec.md §8d) ----

var _ = register(&op{
	name:     "block_header",
	export:   exportSpec{flashinfer: "dsa_paged", ascend: "BlockHeader", axes: map[string][]string{"block_table": {"B", "MB"}, "seq_lens": {"B"}}},
	inputs:   []string{"block_table", "seq_lens"},
	outputs:  []output{{name: "block_header", dtype: "int32", tol: compare.Exact.WithBasis("exact/block_header")}},
	plan:     planBlockHeader,
	controls: headerControls,
	work:     headerWork,
})

func planBlockHeader(raw json.RawMessage) (*casePlan, error) {
	var p dsaLayoutParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if err := p.check(1); err != nil {
		return nil, err
	}
	maxb, nb := p.blocks()
	return &casePlan{params: canonical(p), dtype: "int32", bytes: int64(4 * (len(p.SeqLens)*(maxb+1) + 2*nb)), build: func(c *caseCtx) error {
		l := newDSALayout(c, &p)
		if err := l.write(c); err != nil {
			return err
		}
		return l.writeHeader(c)
	}}, nil
}

// headerWork: block_table and seq_lens read whole, the header written.
func headerWork(w workIn) (manifests.Work, error) {
	return wholeWork(w, []string{"block_table", "seq_lens"}, []string{"block_header"}, 0, "int32")
}

// facts records a paged indexer's counts for its work formula: the
// distinct slots some row reads, the referenced pages and the (row, key)
// pairs scored (row j of sequence b sees L_b - nn + j + 1 keys).
func (l *dsaLayout) facts(c *caseCtx, nn int) {
	var keys int64
	for _, r := range l.read {
		if r {
			keys++
		}
	}
	c.addFact("kv_tokens", keys)
	var pages, scored int64
	for _, L := range l.lens {
		pages += int64(numBlocksDSA(int(L)))
		for j := range nn {
			scored += int64(int(L) - nn + j + 1)
		}
	}
	c.addFact("pages", pages)
	c.addFact("scored", scored)
}
