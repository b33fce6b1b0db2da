package suite

import (
	"errors"
	"math"
	"slices"

	"github.com/goldset/goldset/gen"
	"github.com/goldset/goldset/golden"
	"github.com/goldset/goldset/internal/hugemem"
)

// pagedParams are the inputs shared by paged_attention and quest (docs/spec.md §4).
type pagedParams struct {
	Hq    int    `json:"hq"`
	Hkv   int    `json:"hkv"`
	D     int    `json:"d"`
	BS    int    `json:"bs"`
	DType string `json:"dtype"`
	// ContextLens lists L per sequence; or draw B lengths from a lognormal
	// (LenMean, LenSigma, clipped to [1, LenMax]) as the NumPy peer does.
	ContextLens []int   `json:"context_lens,omitempty"`
	B           int     `json:"b,omitempty"`
	LenMean     float64 `json:"len_mean,omitempty"`
	LenSigma    float64 `json:"len_sigma,omitempty"`
	LenMax      int     `json:"len_max,omitempty"`
	// MaxBlocks is the block-table width MAXB (default: longest + 1, so
	// every table has padding past ceil(L/BS)).
	MaxBlocks int `json:"max_blocks"`
	// PadValue fills block-table entries past ceil(L/BS) (-1 default, or 0);
	// hostile cases point them at a NaN block instead.
	PadValue int `json:"pad_value"`
	// Hostile puts NaN in every cache slot no kernel may read: slots past L
	// in last blocks, unreferenced blocks, and the block padding points at.
	Hostile bool `json:"hostile,omitempty"`
	// SharedBlocks pairs of sequences (2s, 2s+1) share their first, full block.
	SharedBlocks int `json:"shared_blocks,omitempty"`
	// ExtraBlocks unreferenced physical blocks are added; MinBlock puts the
	// referenced blocks at ids >= MinBlock (large-index cases).
	ExtraBlocks int `json:"extra_blocks,omitempty"`
	MinBlock    int `json:"min_block,omitempty"`
	// Needle makes one key dominate its queries: "first" (token 3 of the
	// first block), "last" (token L-1, in the last partial block) or
	// "boundary512" (token 512).
	Needle string `json:"needle,omitempty"`
	// Scale is the softmax scale (default 1/sqrt(D), float64).
	Scale float64 `json:"scale"`
	// NegativeQ makes every query element negative (the min bound carries
	// Quest's signal).
	NegativeQ bool `json:"negative_q,omitempty"`
}

func (p *pagedParams) fill() error {
	if p.Scale == 0 && p.D > 0 {
		p.Scale = 1 / math.Sqrt(float64(p.D))
	}
	for _, e := range []error{checkRange("hq", p.Hq, 1, 1024), checkRange("hkv", p.Hkv, 1, 1024), checkRange("d", p.D, 1, maxHeadDim),
		checkRange("bs", p.BS, 1, maxBlockSize), checkHalfOrF32(p.DType), finitePositive("scale", p.Scale),
		checkRange("shared_blocks", p.SharedBlocks, 0, maxBatch), checkRange("extra_blocks", p.ExtraBlocks, 0, 1<<24),
		checkRange("min_block", p.MinBlock, 0, 1<<24), checkRange("max_blocks", p.MaxBlocks, 0, 1<<20)} {
		if e != nil {
			return e
		}
	}
	if p.Hq%p.Hkv != 0 {
		return errParams("hq = %d is not a multiple of hkv = %d", p.Hq, p.Hkv)
	}
	if p.PadValue != -1 && p.PadValue != 0 {
		return errParams("pad_value = %d: want -1 or 0", p.PadValue)
	}
	if len(p.ContextLens) == 0 {
		if err := checkRange("b", p.B, 1, maxBatch); err != nil {
			return errParams("give context_lens, or b with len_mean, len_sigma and len_max")
		}
		if err := finitePositive("len_mean", p.LenMean); err != nil {
			return err
		}
		if err := finitePositive("len_sigma", p.LenSigma); err != nil {
			return err
		}
		if err := checkRange("len_max", p.LenMax, 1, maxContext); err != nil {
			return err
		}
		if p.LenMean > float64(p.LenMax) {
			return errParams("len_mean %v exceeds len_max %d", p.LenMean, p.LenMax)
		}
	} else {
		if p.B != 0 && p.B != len(p.ContextLens) {
			return errParams("b = %d but context_lens has %d entries", p.B, len(p.ContextLens))
		}
		if p.LenMean != 0 || p.LenSigma != 0 || p.LenMax != 0 {
			return errParams("context_lens and len_mean/len_sigma/len_max exclude each other")
		}
		if len(p.ContextLens) > maxBatch {
			return errParams("more than %d sequences", maxBatch)
		}
		for _, l := range p.ContextLens {
			if err := checkRange("context length", l, 1, maxContext); err != nil {
				return err
			}
		}
	}
	switch p.Needle {
	case "", "first", "last", "boundary512", "exclude":
	default:
		return errParams("needle %q: want first, last, boundary512 (or exclude, quest only)", p.Needle)
	}
	return nil
}

func checkHalfOrF32(d string) error { return checkFloatDType("dtype", d) }

// lens returns the context lengths (explicit, or drawn like the NumPy
// peer's lognormal with gen.DrawLens).
func (p *pagedParams) lens(c *caseCtx) ([]int, error) {
	if len(p.ContextLens) > 0 {
		return p.ContextLens, nil
	}
	drawn, _, err := gen.DrawLens(c.stream("context_lens"), p.B, gen.LenDraw{Mean: p.LenMean, Sigma: p.LenSigma, Max: p.LenMax})
	if err != nil {
		return nil, err
	}
	lens := make([]int, len(drawn))
	for i, l := range drawn {
		lens[i] = int(l)
	}
	return lens, nil
}

// layout is a paged-KV layout with its per-physical-block roles.
type layout struct {
	p       *pagedParams
	lens    []int
	nb      []int   // logical blocks per sequence
	maxb    int     // block-table width
	numBlk  int     // physical blocks NB
	bt      []int32 // [B, MAXB]
	owner   []int32 // physical block -> owning sequence, -1 unreferenced
	logical []int32 // physical block -> logical index in its owner
	poison  int     // NaN block for hostile padding, -1 if none
	needle  []int   // needle token per sequence, -1 for none
	// shared lists the physical blocks read by two sequences.
	shared []int
}

func (l *layout) blockElems() int { return l.p.BS * l.p.Hkv * l.p.D }

// newLayout builds the block tables: every referenced block is distinct
// (except deliberate sharing), ids are a seeded permutation, padding past
// ceil(L/BS) is pad_value or the poison block.
func newLayout(c *caseCtx, p *pagedParams) (*layout, error) {
	lens, err := p.lens(c)
	if err != nil {
		return nil, err
	}
	l := &layout{p: p, lens: lens, nb: make([]int, len(lens)), poison: -1}
	maxNB, total := 0, 0
	for b, L := range lens {
		l.nb[b] = (L + p.BS - 1) / p.BS
		maxNB = max(maxNB, l.nb[b])
		total += l.nb[b]
	}
	l.maxb = p.MaxBlocks
	if l.maxb == 0 {
		l.maxb = maxNB + 1
	}
	if l.maxb < maxNB {
		return nil, errParams("max_blocks = %d but a sequence needs %d blocks", l.maxb, maxNB)
	}
	if err := checkHeld("block_tables", len(lens), l.maxb); err != nil {
		return nil, err
	}
	if err := checkHeld("query", len(lens), p.Hq, p.D); err != nil {
		return nil, err
	}
	if 2*p.SharedBlocks > len(lens) {
		return nil, errParams("shared_blocks = %d needs %d sequences", p.SharedBlocks, 2*p.SharedBlocks)
	}
	for s := 0; s < p.SharedBlocks; s++ {
		if lens[2*s] < p.BS || lens[2*s+1] < p.BS {
			return nil, errParams("shared_blocks: sequences %d and %d need L >= bs so their first block is full", 2*s, 2*s+1)
		}
	}
	distinct := total - p.SharedBlocks
	l.numBlk = p.MinBlock + distinct + p.ExtraBlocks
	if p.Hostile {
		l.poison = l.numBlk
		l.numBlk++
	}
	if int64(l.numBlk)*int64(l.blockElems()) > maxElems {
		return nil, errParams("the cache would hold more than %d elements", int64(maxElems))
	}
	r := c.stream("block_tables").Rand()
	perm := r.Perm(distinct + p.ExtraBlocks)
	l.bt = make([]int32, len(lens)*l.maxb)
	l.owner = slices.Repeat([]int32{-1}, l.numBlk)
	l.logical = make([]int32, l.numBlk)
	next := 0
	for b := range lens {
		for i := 0; i < l.maxb; i++ {
			var id int
			switch {
			case i >= l.nb[b]:
				id = p.PadValue
				if p.Hostile {
					id = l.poison
				}
			case i == 0 && b%2 == 1 && b/2 < p.SharedBlocks:
				id = int(l.bt[(b-1)*l.maxb])
				l.shared = append(l.shared, id)
			default:
				id = p.MinBlock + perm[next]
				next++
				l.owner[id] = int32(b)
				l.logical[id] = int32(i)
			}
			l.bt[b*l.maxb+i] = int32(id)
		}
	}
	l.placeNeedles()
	return l, nil
}

// needlePos returns the needle token of sequence b, or -1.
func (l *layout) needlePos(b int) int {
	if l.needle == nil {
		return -1
	}
	return l.needle[b]
}

// placeNeedles sets the needle positions of the "first", "last" and
// "boundary512" placements.
func (l *layout) placeNeedles() {
	if l.p.Needle == "" || l.p.Needle == "exclude" {
		return
	}
	l.needle = make([]int, len(l.lens))
	for b, L := range l.lens {
		l.needle[b] = -1
		switch l.p.Needle {
		case "first":
			l.needle[b] = min(3, L-1)
		case "last":
			l.needle[b] = L - 1
		case "boundary512":
			if L > 512 {
				l.needle[b] = 512
			}
		}
	}
}

// kvSource produces physical cache blocks with every transform applied
// (hostile NaN, needles, Quest planting), as a pure function of the block
// id: the cache file and the per-sequence golden gathers see the same bits.
type kvSource struct {
	l      *layout
	dtype  string
	key    bool
	stream gen.Stream
	// needle[b] holds the needle key for sequence b, [Hkv*D], when planted.
	needle [][]float64
	// hot[b][i*Hkv+g] scales keys of logical block i, KV head g (Quest).
	hot     [][]bool
	hotGain float64
	// tie makes every block's keys equal to block 0's stream values.
	tie bool
	// visit, when set, sees every block as writeCache produces it (bits
	// exact, values exact for float32), on the worker w that made it: a
	// golden that needs one pass over each block (Quest's metadata) takes
	// it here instead of regenerating the block later.
	visit func(w, p int, ft *floatTensor)
}

// block fills ft (blockElems values) with physical block p. Without
// needVals only the stored bits are exact on return (enough for writing
// the cache file); ft.vals is filled as the transforms need it.
func (s *kvSource) block(ft *floatTensor, p int, needVals bool) { s.blockHeads(ft, p, needVals, nil) }

// blockHeads is block producing only the rows of the KV heads g with
// heads[g] set (all rows when heads is nil); the other rows keep stale
// data, except where they share a generator chunk with a wanted row
// (those get their true values: producing whole chunks keeps the vector
// kernel's speed).
func (s *kvSource) blockHeads(ft *floatTensor, p int, needVals bool, heads []bool) {
	l := s.l
	be := l.blockElems()
	at := int64(p) * int64(be)
	if s.tie {
		at = 0
	}
	b := int(l.owner[p])
	if b < 0 && l.p.Hostile {
		// Unreferenced blocks are all NaN: no need to draw them first.
		ft.set(0, math.NaN())
		for i := 1; i < be; i++ {
			ft.vals[i] = ft.vals[0]
		}
		if ft.bits != nil {
			for i := 1; i < be; i++ {
				ft.bits[i] = ft.bits[0]
			}
		}
		return
	}
	if heads == nil {
		fillValues(ft, s.stream, at, needVals || s.hot != nil)
	} else {
		s.fillHeads(ft, at, needVals || s.hot != nil, heads)
	}
	if b < 0 {
		return
	}
	i := int(l.logical[p])
	L := l.lens[b]
	hd := l.p.Hkv * l.p.D
	if s.key && s.hot != nil {
		for g := 0; g < l.p.Hkv; g++ {
			if !s.hot[b][i*l.p.Hkv+g] {
				continue
			}
			for t := 0; t < l.p.BS; t++ {
				row := t*hd + g*l.p.D
				for d := 0; d < l.p.D; d++ {
					ft.set(row+d, float64(ft.vals[row+d])*s.hotGain)
				}
			}
		}
	}
	if s.key && s.needle != nil && s.needle[b] != nil {
		if j := l.needlePos(b); j/l.p.BS == i {
			row := (j % l.p.BS) * hd
			for e, v := range s.needle[b] {
				ft.set(row+e, v)
			}
		}
	}
	if l.p.Hostile && i == l.nb[b]-1 {
		for t := L - i*l.p.BS; t < l.p.BS; t++ {
			for e := 0; e < hd; e++ {
				ft.set(t*hd+e, math.NaN())
			}
		}
	}
}

// fillHeads draws the rows of the wanted KV heads of a block starting at
// stream offset at, widened to whole generator chunks and merged into runs.
func (s *kvSource) fillHeads(ft *floatTensor, at int64, needVals bool, heads []bool) {
	D, hd, be := s.l.p.D, s.l.p.Hkv*s.l.p.D, int64(s.l.blockElems())
	const ch = gen.ChunkElems
	var lo, hi int64 = -1, -1 // the pending run, block-relative
	flush := func() {
		if lo < hi {
			sub := floatTensor{dtype: ft.dtype, dt: ft.dt, vals: ft.vals[lo:hi]}
			if ft.bits != nil {
				sub.bits = ft.bits[lo:hi]
			}
			fillValues(&sub, s.stream, at+lo, needVals)
		}
	}
	for t := 0; t < s.l.p.BS; t++ {
		for g := 0; g < len(heads); g++ {
			if !heads[g] {
				continue
			}
			g1 := g + 1
			for g1 < len(heads) && heads[g1] {
				g1++
			}
			a := int64(t*hd + g*D)
			e := int64(t*hd + g1*D)
			a = max(0, (at+a)/ch*ch-at)
			e = min(be, (at+e+ch-1)/ch*ch-at)
			if a <= hi {
				hi = max(hi, e)
			} else {
				flush()
				lo, hi = a, e
			}
			g = g1
		}
	}
	flush()
}

// fillNormal draws len(ft.vals) standard normals at offset at into ft.
func fillNormal(ft *floatTensor, s gen.Stream, at int64) { fillValues(ft, s, at, true) }

// fillValues draws standard normals into ft's storage; the exact float32
// values of half-precision storage are decoded only when needVals.
func fillValues(ft *floatTensor, s gen.Stream, at int64, needVals bool) {
	if ft.bits == nil {
		gen.Normal(s, ft.vals, at, gen.F32, 1)
		return
	}
	gen.Normal(s, ft.bits, at, genDType(ft.dtype), 1)
	if needVals {
		halfToF32(ft.vals, ft.bits, ft.dtype)
	}
}

func newBlockBuf(dtype string, n int) *floatTensor {
	ft := &floatTensor{dtype: dtype, dt: dtypeOf(dtype), vals: make([]float32, n)}
	hugemem.Advise(ft.vals) // a no-op below 4 MiB
	if !isFloat32(dtype) {
		ft.bits = make([]uint16, n)
		hugemem.Advise(ft.bits)
	}
	return ft
}

// writeCache streams the whole physical cache into t, blocks in parallel
// batches (the output is the same for any worker count). The blocks are
// produced straight into the tensor's queued buffers (their bytes are the
// .npy data, once in little-endian order), saving a copy of the cache.
func (s *kvSource) writeCache(t *tensorOut) error {
	return writeCaches([]*tensorOut{t}, []*kvSource{s})
}

// writeCaches is writeCache for several sources of one layout, batch by
// batch in lockstep (a batch of the key cache, then of the value cache):
// their files' pieces then reach the hashing workers together and are
// hashed in pairs (manifests: two messages keep the SHA unit busy, one
// leaves it waiting), where one file after the other would hash alone.
func writeCaches(ts []*tensorOut, srcs []*kvSource) error {
	l, dt := srcs[0].l, srcs[0].dtype
	be := l.blockElems()
	batch := max(1, (1<<22)/be)
	workers := defaultJobs()
	sz := int(dtypeSize(dt))
	// Per-worker float32 scratch for the half dtypes' generator.
	scratch := make([][]float32, workers)
	for w := range scratch {
		scratch[w] = make([]float32, be)
	}
	for p0 := 0; p0 < l.numBlk; p0 += batch {
		p1 := min(l.numBlk, p0+batch)
		for k, s := range srcs {
			raw, err := ts[k].reserve((p1 - p0) * be * sz)
			if err != nil {
				return err
			}
			view := viewFloats(dt, raw)
			parallelChunks(workers, p1-p0, func(w, lo, hi int) {
				for i := lo; i < hi; i++ {
					ft := view.slice(i*be, (i+1)*be)
					if ft.bits != nil {
						ft.vals = scratch[w]
					}
					s.block(ft, p0+i, false)
					if s.visit != nil {
						s.visit(w, p0+i, ft)
					}
				}
			})
			toLittleEndian(raw, sz)
			if err := ts[k].submit(raw); err != nil {
				return err
			}
		}
	}
	return nil
}

// gather assembles sequence b's logical blocks into dst, [nb, BS, Hkv, D]
// (unified_attention, whose query rows each read the sequence: see
// seqFeed for the goldens that stream): the stored bits for half dtypes
// (the kernels widen rows as they read them, which halves the memory
// traffic of a float32 copy), the values for float32. Blocks are
// regenerated, not read back from the written file: the same pure
// function of the block id gives the same bits, regenerating (about
// 1.5 GB/s per core with the vector kernel) is cheaper than the page
// cache a read-back needs, and the goldens can run while the caches are
// still being written.
func (s *kvSource) gather(dst *floatTensor, b int, bufs []*floatTensor) {
	be := s.l.blockElems()
	nb := s.l.nb[b]
	// Blocks are independent: split them over the buffers' workers, each
	// block produced straight into its place in dst (no copy).
	parallelChunks(len(bufs), nb, func(w, lo, hi int) {
		for i := lo; i < hi; i++ {
			p := int(s.l.bt[b*s.l.maxb+i])
			if dst.bits != nil {
				s.block(&floatTensor{dtype: s.dtype, dt: dtypeOf(s.dtype), vals: bufs[w].vals, bits: dst.bits[i*be : (i+1)*be]}, p, false)
				continue
			}
			s.block(&floatTensor{dtype: s.dtype, dt: dtypeOf(s.dtype), vals: dst.vals[i*be : (i+1)*be]}, p, true)
		}
	})
}

// needleKeys computes each sequence's needle key: per KV head g, a times
// the mean of the group's query rows, so scale*q.k is large (~+10) for
// every query head of the group.
func needleKeys(l *layout, q []float32, dtype string) [][]float64 {
	p := l.p
	G := p.Hq / p.Hkv
	a := 4 * math.Sqrt(float64(G))
	out := make([][]float64, len(l.lens))
	for b := range l.lens {
		if l.needlePos(b) < 0 {
			continue
		}
		k := make([]float64, p.Hkv*p.D)
		for g := 0; g < p.Hkv; g++ {
			for d := 0; d < p.D; d++ {
				var sum float64
				for h := g * G; h < (g+1)*G; h++ {
					sum += float64(q[(b*p.Hq+h)*p.D+d])
				}
				k[g*p.D+d] = roundTo(dtype, a*sum/float64(G))
			}
		}
		out[b] = k
	}
	return out
}

func roundTo(name string, v float64) float64 {
	dt := dtypeOf(name)
	return dt.Widen(dt.Round(v))
}

// pagedInputs generates the query (with NegativeQ applied) and the KV sources.
func pagedInputs(c *caseCtx, p *pagedParams, l *layout) (floatTensor, *kvSource, *kvSource) {
	B := len(l.lens)
	q := normalTensor(c.stream("query"), p.DType, B*p.Hq*p.D, 0, 1)
	if p.NegativeQ {
		for i, v := range q.vals {
			if v > 0 {
				q.set(i, -float64(v))
			}
		}
	}
	ks := &kvSource{l: l, dtype: p.DType, key: true, stream: c.stream("key_cache")}
	vs := &kvSource{l: l, dtype: p.DType, stream: c.stream("value_cache")}
	if l.needle != nil {
		ks.needle = needleKeys(l, q.vals, p.DType)
	}
	return q, ks, vs
}

// writePagedInputs writes query, caches, block tables and context lengths;
// keysDone, when not nil, runs once the key cache is written.
func writePagedInputs(c *caseCtx, p *pagedParams, l *layout, q *floatTensor, ks, vs *kvSource, keysDone func()) error {
	B := len(l.lens)
	if err := writeQueryCaches(c, l, B, q, ks, vs, keysDone); err != nil {
		return err
	}
	if err := c.writeInts(tensorSpec{name: "block_tables", role: roleInput, dtype: "int32", shape: []int64{int64(B), int64(l.maxb)}}, l.bt); err != nil {
		return err
	}
	cl := make([]int32, B)
	for b, L := range l.lens {
		cl[b] = int32(L)
	}
	return c.writeInts(tensorSpec{name: "context_lens", role: roleInput, dtype: "int32", shape: []int64{int64(B)}}, cl)
}

// writeQueryCaches writes query [rows, Hq, D] and the two caches of
// layout l; keysDone, when not nil, runs once the key cache is written.
func writeQueryCaches(c *caseCtx, l *layout, rows int, q *floatTensor, ks, vs *kvSource, keysDone func()) error {
	p := l.p
	if err := c.writeFloat(tensorSpec{name: "query", role: roleInput, dtype: p.DType, shape: []int64{int64(rows), int64(p.Hq), int64(p.D)}}, q); err != nil {
		return err
	}
	cshape := []int64{int64(l.numBlk), int64(p.BS), int64(p.Hkv), int64(p.D)}
	kt, err := c.create(tensorSpec{name: "key_cache", role: roleInput, dtype: p.DType, shape: cshape})
	if err != nil {
		return err
	}
	vt, err := c.create(tensorSpec{name: "value_cache", role: roleInput, dtype: p.DType, shape: cshape})
	if err != nil {
		kt.abort()
		return err
	}
	// Both caches at once, so their hashes pair (writeCaches); the keys are
	// complete (keysDone) when both are.
	if err := writeCaches([]*tensorOut{kt, vt}, []*kvSource{ks, vs}); err != nil {
		kt.abort()
		vt.abort()
		return err
	}
	if err := kt.close(); err != nil {
		vt.abort()
		return err
	}
	if keysDone != nil {
		keysDone()
	}
	return vt.close()
}

// layoutInfo records the layout facts a reader of the manifest wants.
func layoutInfo(c *caseCtx, l *layout) {
	sum, mx := 0, 0
	for _, L := range l.lens {
		sum += L
		mx = max(mx, L)
	}
	c.setInfo("num_blocks", l.numBlk)
	c.setInfo("max_blocks", l.maxb)
	c.setInfo("context_len_mean", float64(sum)/float64(len(l.lens)))
	c.setInfo("context_len_max", mx)
	c.setInfo("kv_bytes", 2*int64(sum)*int64(l.p.Hkv*l.p.D)*dtypeSize(l.p.DType))
	// For the work formulas: valid tokens, distinct ones (a shared block
	// is full and read once) and the referenced pages.
	c.addFact("tokens", int64(sum))
	c.addFact("kv_tokens", int64(sum-len(l.shared)*l.p.BS))
	for _, n := range l.nb {
		c.addFact("pages", int64(n))
	}
	if l.poison >= 0 {
		c.setInfo("poison_block", l.poison)
	}
	if len(l.shared) > 0 {
		c.setInfo("shared_blocks", l.shared)
	}
	if len(l.p.ContextLens) == 0 {
		c.setInfo("context_lens", l.lens)
	}
	if l.needle != nil {
		c.setInfo("needle_positions", l.needle)
	}
}

// seqFeed streams one sequence's K and V blocks to the golden attention
// (golden.KVFeed) as the kernel reads them: each block is regenerated
// (kvSource.blockHeads, as gather does) into a window of block buffers
// that stays in cache, instead of gathering the whole sequence into
// scratch sized for the longest one (84 MB per cache at 320 blocks of
// 128x8x128 fp16), which is cleared by the kernel on first touch, round
// trips through DRAM before attention reads it, and sets the peak RSS.
// The kernel asks for each block once per pass (K in pass 1, V in pass
// 2), so the draw work is gather's. The window holds as many blocks as
// gather had workers, produced in parallel; on 2 cores it is one block.
type seqFeed struct {
	ks, vs *kvSource
	b      int
	want   func(i int) []bool // nil: every KV head's rows
	bufs   []*floatTensor
	ht     golden.HalfType // 0 for float32
	sc     golden.AttentionScratch
	// The window: blocks list[lo:hi] of the keys (or the values, value)
	// are in bufs[:hi-lo].
	value  bool
	list   []int
	lo, hi int
	// keepKeys makes keyMetadata keep sequence kept's keys in keys,
	// [nb, BS, Hkv, D], for the attention to read: Quest's dense pass
	// reads them all again, and a second draw costs more than the
	// scratch.
	keepKeys bool
	keys     *floatTensor
	kept     int
}

func newSeqFeed(l *layout, ks, vs *kvSource) *seqFeed {
	f := &seqFeed{ks: ks, vs: vs, kept: -1}
	if !isFloat32(l.p.DType) {
		f.ht = halfType(l.p.DType)
	}
	for range max(1, defaultJobs()/seqWorkers()) {
		f.bufs = append(f.bufs, newBlockBuf(l.p.DType, l.blockElems()))
	}
	// The scores of the longest sequence, once (not regrown as longer
	// sequences arrive).
	f.sc.Reserve(l.p.Hq, slices.Max(l.lens))
	return f
}

// start points the feed at sequence b; with want set, only the rows of
// the KV heads want(i) marks in logical block i are produced.
func (f *seqFeed) start(b int, want func(i int) []bool) {
	f.b, f.want, f.list, f.lo, f.hi = b, want, nil, 0, 0
}

// Block implements golden.KVFeed.
func (f *seqFeed) Block(value bool, list []int, n int) ([]float32, []uint16) {
	if !value && f.kept == f.b {
		be := f.ks.l.blockElems()
		if f.keys.bits != nil {
			return nil, f.keys.bits[list[n]*be : (list[n]+1)*be]
		}
		return f.keys.vals[list[n]*be : (list[n]+1)*be], nil
	}
	same := len(list) == len(f.list) && len(list) > 0 && &list[0] == &f.list[0]
	if value != f.value || !same || n < f.lo || n >= f.hi {
		f.fill(value, list, n)
	}
	ft := f.bufs[n-f.lo]
	if ft.bits != nil {
		return nil, ft.bits
	}
	return ft.vals, nil
}

// fill produces blocks list[n:] of the window's size, each in its own
// buffer, in parallel.
func (f *seqFeed) fill(value bool, list []int, n int) {
	src := f.ks
	if value {
		src = f.vs
	}
	l := src.l
	f.value, f.list, f.lo, f.hi = value, list, n, min(len(list), n+len(f.bufs))
	parallelChunks(len(f.bufs), f.hi-f.lo, func(_, lo, hi int) {
		for j := lo; j < hi; j++ {
			i := list[f.lo+j]
			var heads []bool
			if f.want != nil {
				heads = f.want(i)
			}
			ft := f.bufs[j]
			src.blockHeads(ft, int(l.bt[f.b*l.maxb+i]), ft.bits == nil, heads)
		}
	})
}

// pagedAttention runs the paged-attention golden of sequence b over the feed.
func (f *seqFeed) pagedAttention(out, lse []float64, q []float32, b int, dims golden.AttentionDims, scale float64) error {
	f.start(b, nil)
	return golden.PagedAttentionFeed(out, lse, q, f, f.ht, f.ks.l.lens[b], dims, scale, &f.sc)
}

// sparseAttention runs Quest's sparse attention of sequence b over the
// feed, producing only the rows of the KV heads want(i) marks; with dense
// and denseLSE not nil (want nil) also the dense attention, from the same
// blocks.
func (f *seqFeed) sparseAttention(out, lse, dense, denseLSE []float64, q []float32, b int, sel []int32, want func(int) []bool, dims golden.AttentionDims, qp golden.QuestParams, scale float64) error {
	f.start(b, want)
	return golden.SparseAttentionFeed(out, lse, dense, denseLSE, q, f, f.ht, f.ks.l.lens[b], sel, dims, qp, scale, &f.sc)
}

// keyMetadata computes Quest's block metadata, kmax and kmin [nb, Hkv, D],
// of sequence b, regenerating its key blocks one at a time per buffer
// (the metadata of a block depends on that block alone), or into f.keys
// with keepKeys.
func (f *seqFeed) keyMetadata(kmax, kmin []float64, b int) error {
	l := f.ks.l
	row, be := l.p.Hkv*l.p.D, l.blockElems()
	if f.keepKeys && f.keys == nil {
		f.keys = &floatTensor{dtype: l.p.DType, dt: dtypeOf(l.p.DType)}
		if isFloat32(l.p.DType) {
			f.keys.vals = make([]float32, slices.Max(l.nb)*be)
			hugemem.Advise(f.keys.vals)
		} else {
			f.keys.bits = make([]uint16, slices.Max(l.nb)*be)
			hugemem.Advise(f.keys.bits)
		}
	}
	if f.keepKeys {
		f.kept = b
	}
	errs := make([]error, len(f.bufs))
	parallelChunks(len(f.bufs), l.nb[b], func(w, lo, hi int) {
		for i := lo; i < hi && errs[w] == nil; i++ {
			ft := f.bufs[w]
			if f.keepKeys { // the block in place, the buffer's values as scratch
				ft = f.keys.slice(i*be, (i+1)*be)
				if ft.bits != nil {
					ft.vals = f.bufs[w].vals
				}
			}
			f.ks.blockHeads(ft, int(l.bt[b*l.maxb+i]), ft.bits == nil, nil)
			tokens := min(l.p.BS, l.lens[b]-i*l.p.BS)
			errs[w] = blockMetadata(kmax[i*row:(i+1)*row], kmin[i*row:(i+1)*row], ft, l.p, tokens)
		}
	})
	return errors.Join(errs...)
}

// blockMetadata computes the Quest metadata (docs/spec.md §5a) of the one
// block in ft, its first tokens tokens, into mx and mn ([Hkv*D]) with the
// golden kernel: the same per-block max and min it takes in a sequence.
func blockMetadata(mx, mn []float64, ft *floatTensor, p *pagedParams, tokens int) error {
	dims := golden.AttentionDims{B: 1, Hq: p.Hq, Hkv: p.Hkv, D: p.D, NB: 1, BS: p.BS, MAXB: 1}
	bt, cl := []int32{0}, []int32{int32(tokens)}
	if ft.bits != nil {
		return golden.BlockMetadataHalf(mx, mn, ft.bits, halfType(p.DType), bt, cl, dims)
	}
	return golden.BlockMetadata(mx, mn, ft.vals, bt, cl, dims)
}

// seqScratch holds one sequence's gathered K/V and a compact block table
// (unified_attention: each of its query rows reads the sequence).
type seqScratch struct {
	k, v *floatTensor // bits for half dtypes, vals for float32
	bt   []int32
	bufs []*floatTensor
}

func newSeqScratch(l *layout, dtype string) *seqScratch {
	maxNB := slices.Max(l.nb)
	be := l.blockElems()
	s := &seqScratch{k: &floatTensor{dtype: dtype, dt: dtypeOf(dtype)}, v: &floatTensor{dtype: dtype, dt: dtypeOf(dtype)}, bt: make([]int32, maxNB)}
	for _, ft := range []*floatTensor{s.k, s.v} {
		// The largest buffers of a paged case: fresh memory, huge pages.
		if isFloat32(dtype) {
			ft.vals = make([]float32, maxNB*be)
			hugemem.Advise(ft.vals)
		} else {
			ft.bits = make([]uint16, maxNB*be)
			hugemem.Advise(ft.bits)
		}
	}
	for i := range s.bt {
		s.bt[i] = int32(i)
	}
	for w := 0; w < max(1, defaultJobs()/seqWorkers()); w++ {
		s.bufs = append(s.bufs, newBlockBuf(dtype, be))
	}
	return s
}

// gather loads sequence b's keys and values.
func (sc *seqScratch) gather(ks, vs *kvSource, b int) {
	ks.gather(sc.k, b, sc.bufs)
	vs.gather(sc.v, b, sc.bufs)
}

// halfType is the golden kernels' name for a half dtype.
func halfType(dtype string) golden.HalfType {
	if isBF16(dtype) {
		return golden.BF16
	}
	return golden.F16
}

// seqDims are the dims of one sequence alone (a gathered one's block
// table is the identity; a fed one's is not used).
func seqDims(p *pagedParams, nb int) golden.AttentionDims {
	return golden.AttentionDims{B: 1, Hq: p.Hq, Hkv: p.Hkv, D: p.D, NB: nb, BS: p.BS, MAXB: nb}
}
