package golden

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Granularity says which heads share one Quest selection (docs/spec.md §5b).
type Granularity int

const (
	// QHead selects per query head: Hsel = Hq.
	QHead Granularity = iota
	// KVGroupSum sums the scores of the G query heads of a KV head and
	// selects once per KV head: Hsel = Hkv.
	KVGroupSum
)

// Hsel returns the number of selection rows per sequence.
func (g Granularity) Hsel(dims AttentionDims) int {
	if g == KVGroupSum {
		return dims.Hkv
	}
	return dims.Hq
}

// selRow returns the selection row that query head h uses.
func (g Granularity) selRow(h int, dims AttentionDims) int {
	if g == KVGroupSum {
		return h / dims.G()
	}
	return h
}

func (g Granularity) check() error {
	if g != QHead && g != KVGroupSum {
		return fmt.Errorf("golden: granularity %d: %w", g, ErrInvalidParams)
	}
	return nil
}

// QuestParams are the selection parameters of docs/spec.md §5.
type QuestParams struct {
	K           int  // blocks kept per selection row, anchors included
	AnchorFirst bool // always keep logical block 0
	AnchorLast  bool // always keep logical block nb-1
	Granularity Granularity
}

// Anchors returns the number of enabled anchors (0, 1 or 2).
func (p QuestParams) Anchors() int {
	n := 0
	if p.AnchorFirst {
		n++
	}
	if p.AnchorLast {
		n++
	}
	return n
}

// BlockMetadata computes Quest block metadata (docs/spec.md §5a): for sequence
// b, logical block i < nb = ceil(L/BS), KV head h and element d, kmax and
// kmin [B, MAXB, Hkv, D] hold the max and min of kCache over the block's
// valid tokens (j < L only). Entries for i >= nb are 0. The values are
// exact (copies of cache values); +0 counts as larger than -0, so the
// result does not depend on token order, and a NaN among valid tokens
// propagates.
func BlockMetadata(kmax, kmin []float64, kCache []float32, blockTables, contextLens []int32, dims AttentionDims) error {
	if err := checkMeta(kmax, kmin, len(kCache), blockTables, contextLens, dims); err != nil {
		return err
	}
	row := dims.Hkv * dims.D
	metaBlocks(kmax, kmin, blockTables, contextLens, dims, func(_ int, mx, mn []float64, base, cnt int) {
		for off := range cnt {
			src := kCache[base+off*row : base+(off+1)*row]
			if off == 0 {
				for e, x := range src {
					mx[e], mn[e] = float64(x), float64(x)
				}
				continue
			}
			for e, x := range src {
				mx[e] = math.Max(mx[e], float64(x))
				mn[e] = math.Min(mn[e], float64(x))
			}
		}
	})
	return nil
}

// checkMeta validates BlockMetadata's arguments (nCache: the cache length).
func checkMeta(kmax, kmin []float64, nCache int, blockTables, contextLens []int32, dims AttentionDims) error {
	if err := dims.check(); err != nil {
		return err
	}
	if nCache != dims.NB*dims.BS*dims.Hkv*dims.D {
		panic(badLenCache)
	}
	if len(blockTables) != dims.B*dims.MAXB {
		panic(badLenBT)
	}
	if len(contextLens) != dims.B {
		panic(badLenCL)
	}
	if len(kmax) != dims.B*dims.MAXB*dims.Hkv*dims.D || len(kmin) != len(kmax) {
		panic(badLenMeta)
	}
	return dims.checkSeqs(blockTables, contextLens)
}

// BlockMetadataHalf is BlockMetadata with kCache given as float16 or
// bfloat16 bits (ht); the results are identical. The max and min are taken
// on the bit patterns mapped to integers of the same order (+0 above -0),
// which needs no widening; an element whose tokens hold a NaN is redone
// in float64 so NaN propagates exactly as in BlockMetadata.
func BlockMetadataHalf(kmax, kmin []float64, kCache []uint16, ht HalfType, blockTables, contextLens []int32, dims AttentionDims) error {
	if err := checkMeta(kmax, kmin, len(kCache), blockTables, contextLens, dims); err != nil {
		return err
	}
	kc := halfView(kCache, ht)
	inf := int16(0x7c00)
	if ht == BF16 {
		inf = 0x7f80
	}
	row := dims.Hkv * dims.D
	keys := make([][]int16, numWorkers(dims.B))
	metaBlocks(kmax, kmin, blockTables, contextLens, dims, func(w int, mx, mn []float64, base, cnt int) {
		if keys[w] == nil {
			keys[w] = make([]int16, 2*row)
		}
		hi, lo := keys[w][:row], keys[w][row:]
		for e, h := range kCache[base : base+row] {
			hi[e], lo[e] = orderedHalf(h), orderedHalf(h)
		}
		orderedMinMax(hi, lo, kCache[base:base+cnt*row], row, cnt)
		for e := range row {
			if hi[e] > inf || lo[e] < -inf-1 { // a NaN of either sign
				mx[e], mn[e] = metaNaN(kc, base+e, row, cnt)
				continue
			}
			mx[e] = kc.value(uint16(orderedHalf(uint16(hi[e]))))
			mn[e] = kc.value(uint16(orderedHalf(uint16(lo[e]))))
		}
	})
	return nil
}

// metaBlocks runs block(w, mx, mn, base, cnt) on worker w for every
// block-table entry (b, i) below ceil(L/BS), with mx and mn the entry's
// rows of kmax and kmin, base the block's offset in the cache and cnt its
// tokens below L; the rows of entries past ceil(L/BS) are zeroed.
func metaBlocks(kmax, kmin []float64, blockTables, contextLens []int32, dims AttentionDims, block func(w int, mx, mn []float64, base, cnt int)) {
	row := dims.Hkv * dims.D
	parallelFor(numWorkers(dims.B), dims.B, func(w, b int) {
		l := int(contextLens[b])
		nb := numBlocks(l, dims.BS)
		for i := range dims.MAXB {
			mx := kmax[(b*dims.MAXB+i)*row : (b*dims.MAXB+i+1)*row]
			mn := kmin[(b*dims.MAXB+i)*row : (b*dims.MAXB+i+1)*row]
			if i >= nb {
				clear(mx)
				clear(mn)
				continue
			}
			block(w, mx, mn, int(blockTables[b*dims.MAXB+i])*dims.BS*row, blockTokens(i, l, dims.BS, false))
		}
	})
}

// orderedHalf maps float16 or bfloat16 bits to an int16 in the order of
// the values (-0 just below +0, NaNs beyond the infinities). Applied to
// the result's bits it gives back the pattern.
func orderedHalf(h uint16) int16 { return int16(h ^ uint16(int16(h)>>15)&0x7fff) }

// orderedMinMaxGo is orderedMinMax's portable loop.
func orderedMinMaxGo(hi, lo []int16, src []uint16, row, cnt int) {
	for off := 1; off < cnt; off++ {
		for e, h := range src[off*row : (off+1)*row] {
			k := orderedHalf(h)
			hi[e] = max(hi[e], k)
			lo[e] = min(lo[e], k)
		}
	}
}

// metaNaN is BlockMetadata's float64 max and min over cnt tokens of one
// element (offset o, token stride row), for elements holding a NaN.
func metaNaN(c kvView, o, row, cnt int) (mx, mn float64) {
	mx = c.value(c.h[o])
	mn = mx
	for t := 1; t < cnt; t++ {
		x := c.value(c.h[o+t*row])
		mx, mn = math.Max(mx, x), math.Min(mn, x)
	}
	return mx, mn
}

// BlockScores computes Quest upper-bound scores (docs/spec.md §5b):
// score[b,h,i] = sum_d max(q[b,h,d]*kmax[b,i,h/G,d], q[b,h,d]*kmin[b,i,h/G,d])
// for i < nb (no scale; exact products summed sequentially over d), -Inf
// for i >= nb. scores is [B, Hsel, MAXB]; with KVGroupSum the row of KV head
// g is the sum, over its heads h = g*G .. g*G+G-1 in order, of the
// per-head scores. kmax and kmin are BlockMetadata's outputs.
func BlockScores(scores []float64, q []float32, kmax, kmin []float64, contextLens []int32, dims AttentionDims, gran Granularity) error {
	if err := dims.check(); err != nil {
		return err
	}
	if err := gran.check(); err != nil {
		return err
	}
	if len(q) != dims.B*dims.Hq*dims.D {
		panic(badLenQ)
	}
	if len(kmax) != dims.B*dims.MAXB*dims.Hkv*dims.D || len(kmin) != len(kmax) {
		panic(badLenMeta)
	}
	if len(contextLens) != dims.B {
		panic(badLenCL)
	}
	hsel := gran.Hsel(dims)
	if len(scores) != dims.B*hsel*dims.MAXB {
		panic(badLenScores)
	}
	for b, l := range contextLens {
		if l < 1 || int(l) > dims.MAXB*dims.BS {
			return fmt.Errorf("golden: context_lens[%d] = %d not in [1, %d]: %w", b, l, dims.MAXB*dims.BS, ErrContextLen)
		}
	}
	d := dims.D
	parallelFor(numWorkers(dims.B), dims.B, func(_, b int) {
		nb := numBlocks(int(contextLens[b]), dims.BS)
		row := scores[b*hsel*dims.MAXB : (b+1)*hsel*dims.MAXB]
		for r := range hsel {
			for i := nb; i < dims.MAXB; i++ {
				row[r*dims.MAXB+i] = math.Inf(-1)
			}
		}
		if gran == KVGroupSum {
			for r := range hsel {
				for i := range nb {
					row[r*dims.MAXB+i] = 0
				}
			}
		}
		for h := range dims.Hq {
			qh := q[(b*dims.Hq+h)*d : (b*dims.Hq+h+1)*d]
			kvh := h / dims.G()
			r := gran.selRow(h, dims)
			for i := range nb {
				o := ((b*dims.MAXB+i)*dims.Hkv + kvh) * d
				mx, mn := kmax[o:o+d], kmin[o:o+d]
				var s float64
				for e, x := range qh {
					x := float64(x)
					s += max(float64(x*mx[e]), float64(x*mn[e]))
				}
				if gran == KVGroupSum {
					row[r*dims.MAXB+i] += s
				} else {
					row[r*dims.MAXB+i] = s
				}
			}
		}
	})
	return nil
}

// SelectBlocks computes the Quest selection (docs/spec.md §5c). For each
// sequence b and selection row r with nb = ceil(L/BS): if K >= nb all of
// [0, nb) is selected; otherwise the anchors (block 0, block nb-1; one
// block when nb = 1) and then the other blocks by score descending, block
// index ascending, until K are chosen. selected [B, Hsel, K] lists them
// ascending, padded with -1. scores is [B, Hsel, MAXB] (BlockScores).
//
// margin is the smallest, over rows where the choice depends on the
// scores, of (score of the last selected non-anchor block) - (score of the
// best rejected block), in float64; hasMargin is false when no row depends
// on scores (every row selects all its blocks, or only anchors).
//
// K < 1 or K below the number of enabled anchors returns ErrInvalidParams,
// a NaN score below nb too.
func SelectBlocks(selected []int32, scores []float64, contextLens []int32, dims AttentionDims, p QuestParams) (margin float64, hasMargin bool, err error) {
	if err := dims.check(); err != nil {
		return 0, false, err
	}
	if err := p.Granularity.check(); err != nil {
		return 0, false, err
	}
	if p.K < 1 || p.K < p.Anchors() {
		return 0, false, fmt.Errorf("golden: K = %d with %d anchors: %w", p.K, p.Anchors(), ErrInvalidParams)
	}
	hsel := p.Granularity.Hsel(dims)
	if len(scores) != dims.B*hsel*dims.MAXB {
		panic(badLenScores)
	}
	if len(contextLens) != dims.B {
		panic(badLenCL)
	}
	if len(selected) != dims.B*hsel*p.K {
		panic(badLenSel)
	}
	for b, l := range contextLens {
		if l < 1 || int(l) > dims.MAXB*dims.BS {
			return 0, false, fmt.Errorf("golden: context_lens[%d] = %d not in [1, %d]: %w", b, l, dims.MAXB*dims.BS, ErrContextLen)
		}
		nb := numBlocks(int(l), dims.BS)
		for r := range hsel {
			for i, s := range scores[(b*hsel+r)*dims.MAXB:][:nb] {
				if s != s {
					return 0, false, fmt.Errorf("golden: scores[%d, %d, %d] is NaN: %w", b, r, i, ErrInvalidParams)
				}
			}
		}
	}
	margin = math.Inf(1)
	var cand []int
	for b, l := range contextLens {
		nb := numBlocks(int(l), dims.BS)
		for r := range hsel {
			out := selected[(b*hsel+r)*p.K : (b*hsel+r+1)*p.K]
			sc := scores[(b*hsel+r)*dims.MAXB:][:nb]
			for j := range out {
				out[j] = -1
			}
			if p.K >= nb {
				for i := range nb {
					out[i] = int32(i)
				}
				continue
			}
			chosen := out[:0]
			cand = cand[:0]
			for i := range nb {
				if (p.AnchorFirst && i == 0) || (p.AnchorLast && i == nb-1) {
					chosen = append(chosen, int32(i))
				} else {
					cand = append(cand, i)
				}
			}
			slices.SortFunc(cand, func(x, y int) int {
				if c := cmp.Compare(sc[y], sc[x]); c != 0 {
					return c
				}
				return cmp.Compare(x, y)
			})
			free := p.K - len(chosen)
			for _, i := range cand[:free] {
				chosen = append(chosen, int32(i))
			}
			slices.Sort(chosen)
			if free > 0 && free < len(cand) {
				hasMargin = true
				margin = min(margin, sc[cand[free-1]]-sc[cand[free]])
			}
		}
	}
	if !hasMargin {
		margin = 0
	}
	return margin, hasMargin, nil
}

// SparseAttention computes Quest sparse attention on a given selection
// (docs/spec.md §5d): PagedAttention's math over the tokens (j < L) of the
// logical blocks listed in selected [B, Hsel, K] for the head's selection
// row (row h for QHead, h/G for KVGroupSum). -1 entries are padding; the
// blocks are attended in ascending order whatever their order in the row,
// so with every block of [0, nb) selected the result is bit-identical to
// PagedAttention.
//
// Errors, besides PagedAttention's: an entry other than -1 outside
// [0, nb), a duplicate entry, or a row with no block (ErrOutOfRange,
// ErrInvalidParams).
func SparseAttention(out, lse []float64, q, kCache, vCache []float32, blockTables, contextLens, selected []int32, dims AttentionDims, p QuestParams, scale float64) error {
	return sparseAttention(out, lse, q, f32View(kCache), f32View(vCache), blockTables, contextLens, selected, dims, p, scale, attnOpts{}, nil)
}

// SparseAttentionHalf is SparseAttention with kCache and vCache given as
// float16 or bfloat16 bits (ht), bit-identical to SparseAttention on the
// widened caches (see PagedAttentionHalf).
func SparseAttentionHalf(out, lse []float64, q []float32, kCache, vCache []uint16, ht HalfType, blockTables, contextLens, selected []int32, dims AttentionDims, p QuestParams, scale float64) error {
	return sparseAttention(out, lse, q, halfView(kCache, ht), halfView(vCache, ht), blockTables, contextLens, selected, dims, p, scale, attnOpts{}, nil)
}

// sparseAttention optionally drops, per (b, h), the block that skip
// returns (-1 for none), for the negative controls.
func sparseAttention(out, lse []float64, q []float32, kCache, vCache kvView, blockTables, contextLens, selected []int32, dims AttentionDims, p QuestParams, scale float64, o attnOpts, skip func(b, h int, blocks []int) int) error {
	if err := dims.check(); err != nil {
		return err
	}
	if err := p.Granularity.check(); err != nil {
		return err
	}
	if p.K < 1 {
		return fmt.Errorf("golden: K = %d: %w", p.K, ErrInvalidParams)
	}
	dims.checkCaseLens(q, kCache.len(), vCache.len(), blockTables, contextLens)
	checkAttnOut(out, lse, dims)
	hsel := p.Granularity.Hsel(dims)
	if len(selected) != dims.B*hsel*p.K {
		panic(badLenSel)
	}
	if err := dims.checkSeqs(blockTables, contextLens); err != nil {
		return err
	}
	if err := checkSelection(selected, contextLens, dims, p); err != nil {
		return err
	}
	// One unit per (sequence, KV head): the query heads reading that KV
	// head are attended together where their block lists agree (the usual
	// case: a group's heads select alike), so the vector tiles, which take
	// four heads at a time, apply; a head's sums do not depend on which
	// heads share its pass (see attend).
	units := dims.B * dims.Hkv
	workers := numWorkers(units)
	scratch := make([]attnScratch, workers)
	lists := make([][][]int, workers) // per worker: each head's block list
	parallelFor(workers, units, func(w, u int) {
		b, kvh := u/dims.Hkv, u%dims.Hkv
		ws := &scratch[w]
		if lists[w] == nil {
			lists[w] = make([][]int, dims.Hq)
		}
		src := ws.fromCache(kCache, vCache, blockTables[b*dims.MAXB:(b+1)*dims.MAXB], dims)
		ws.cls = headClasses(lists[w], ws.cls, selected, b, kvh, dims, p, o, skip, func(heads, blocks []int) {
			ws.setUnit(heads, kvh, blocks)
			attend(ws, out, lse, q, src, int(contextLens[b]), dims, b, scale, o.tailUnmasked)
		})
	})
	return nil
}

// checkSelection validates selected [B, Hsel, K] against the sequences'
// block counts: every entry -1 or in [0, nb), no duplicate, no empty row.
func checkSelection(selected, contextLens []int32, dims AttentionDims, p QuestParams) error {
	hsel := p.Granularity.Hsel(dims)
	for b, l := range contextLens {
		nb := numBlocks(int(l), dims.BS)
		for r := range hsel {
			row := selected[(b*hsel+r)*p.K : (b*hsel+r+1)*p.K]
			n := 0
			for j, i := range row {
				if i == -1 {
					continue
				}
				if i < 0 || int(i) >= nb {
					return fmt.Errorf("golden: selected[%d, %d, %d] = %d not in [0, %d): %w", b, r, j, i, nb, ErrOutOfRange)
				}
				if slices.Contains(row[:j], i) {
					return fmt.Errorf("golden: selected[%d, %d, %d] = %d is a duplicate: %w", b, r, j, i, ErrInvalidParams)
				}
				n++
			}
			if n == 0 {
				return fmt.Errorf("golden: selected[%d, %d] selects no block: %w", b, r, ErrInvalidParams)
			}
		}
	}
	return nil
}

// headClasses calls fn(heads, blocks) for each class of the query heads
// of sequence b reading KV head kvh that attend the same blocks
// (ascending), so each class is attended in one pass. lists ([Hq]) and cls
// are scratch; headClasses returns cls for reuse. skip optionally drops,
// per (b, h), the block it returns (-1 for none), for the negatives.
func headClasses(lists [][]int, cls []int, selected []int32, b, kvh int, dims AttentionDims, p QuestParams, o attnOpts, skip func(b, h int, blocks []int) int, fn func(heads, blocks []int)) []int {
	hsel := p.Granularity.Hsel(dims)
	var mine []int
	for h := range dims.Hq {
		if o.kvHead(h, dims) != kvh {
			continue
		}
		mine = append(mine, h)
		r := p.Granularity.selRow(h, dims)
		l := lists[h][:0]
		for _, i := range selected[(b*hsel+r)*p.K : (b*hsel+r+1)*p.K] {
			if i >= 0 {
				l = append(l, int(i))
			}
		}
		slices.Sort(l)
		if skip != nil {
			if s := skip(b, h, l); s >= 0 {
				l = slices.DeleteFunc(l, func(i int) bool { return i == s })
			}
		}
		lists[h] = l
	}
	for len(mine) > 0 {
		first := mine[0]
		cls = cls[:0]
		rest := mine[:0]
		for _, h := range mine {
			if slices.Equal(lists[h], lists[first]) {
				cls = append(cls, h)
			} else {
				rest = append(rest, h)
			}
		}
		mine = rest
		fn(cls, lists[first])
	}
	return cls
}

// setUnit makes ws attend query heads heads, all reading KV head kvh,
// over the logical blocks blocks.
func (ws *attnScratch) setUnit(heads []int, kvh int, blocks []int) {
	ws.heads = append(ws.heads[:0], heads...)
	ws.groups = append(ws.groups[:0], headGroup{kvh: kvh, start: 0, end: len(heads)})
	ws.logical = append(ws.logical[:0], blocks...)
}

// SparseAttentionFeed is SparseAttention for one sequence (dims.B = 1) of
// context length l whose blocks come from feed, as PagedAttentionFeed:
// bit-identical to SparseAttention on a cache made of the feed's blocks.
// The feed is asked, per pass, for the blocks that any selection row of
// the sequence lists, ascending, each once: a block's rows of a KV head
// are read only where a selection row of that head lists the block.
//
// With denseOut and denseLSE not nil, the dense attention of the sequence
// (PagedAttentionFeed's out and lse, the same bits) is computed from the
// same blocks: the feed is then asked for every block once per pass, all
// its rows read, instead of twice for the two attentions. sc may be nil.
func SparseAttentionFeed(out, lse, denseOut, denseLSE []float64, q []float32, feed KVFeed, ht HalfType, l int, selected []int32, dims AttentionDims, p QuestParams, scale float64, sc *AttentionScratch) error {
	if sc == nil {
		sc = new(AttentionScratch)
	}
	src, err := sc.feedFrom(out, lse, q, feed, ht, l, dims)
	if err != nil {
		return err
	}
	dense := denseOut != nil || denseLSE != nil
	if dense {
		checkAttnOut(denseOut, denseLSE, dims)
	}
	if err := p.Granularity.check(); err != nil {
		return err
	}
	if p.K < 1 {
		return fmt.Errorf("golden: K = %d: %w", p.K, ErrInvalidParams)
	}
	if len(selected) != p.Granularity.Hsel(dims)*p.K {
		panic(badLenSel)
	}
	if err := checkSelection(selected, []int32{int32(l)}, dims, p); err != nil {
		return err
	}
	if len(sc.lists) < dims.Hq {
		sc.lists = make([][]int, dims.Hq)
	}
	// The units (KV head, class of heads) of SparseAttention, their passes
	// interleaved: each block the feed produces serves every unit that
	// reads it, in each unit's token order, so no unit's bits change.
	// The dense pass, if any, is one more unit: every head, every block.
	var units []*attnScratch
	if dense {
		ws := sc.unit(0)
		ws.setHeads(dims, attnOpts{})
		ws.logical = ws.logical[:0]
		for i := range numBlocks(l, dims.BS) {
			ws.logical = append(ws.logical, i)
		}
		units = append(units, ws)
	}
	for kvh := range dims.Hkv {
		sc.cls = headClasses(sc.lists, sc.cls, selected, 0, kvh, dims, p, attnOpts{}, nil, func(heads, blocks []int) {
			ws := sc.unit(len(units))
			ws.setUnit(heads, kvh, blocks)
			units = append(units, ws)
		})
	}
	sc.union = sc.union[:0]
	for _, ws := range units {
		sc.union = append(sc.union, ws.logical...)
	}
	slices.Sort(sc.union)
	sc.union = slices.Compact(sc.union)
	for _, ws := range units {
		ws.start(q, l, dims, 0, scale, false)
	}
	sc.feedPass(src, false, units)
	for _, ws := range units {
		ws.probs()
	}
	sc.feedPass(src, true, units)
	for k, ws := range units {
		if dense && k == 0 {
			ws.finish(denseOut, denseLSE, dims.Hq, 0)
			continue
		}
		ws.finish(out, lse, dims.Hq, 0)
	}
	return nil
}

// feedPass runs one pass (scores, or values when value) of every unit
// over the blocks of sc.union, each produced once.
func (sc *AttentionScratch) feedPass(src *feedBlocks, value bool, units []*attnScratch) {
	sc.next = slices.Grow(sc.next[:0], len(units))[:len(units)]
	clear(sc.next)
	for n, i := range sc.union {
		c, base := src.block(value, sc.union, n)
		for k, ws := range units {
			if sc.next[k] == len(ws.logical) || ws.logical[sc.next[k]] != i {
				continue
			}
			sc.next[k]++
			if value {
				ws.valueBlock(c, base, i)
			} else {
				ws.scoreBlock(c, base, i)
			}
		}
	}
}

// String returns the manifest spelling: "q_head" or "kv_group_sum".
func (g Granularity) String() string {
	switch g {
	case QHead:
		return "q_head"
	case KVGroupSum:
		return "kv_group_sum"
	}
	return fmt.Sprintf("Granularity(%d)", int(g))
}
