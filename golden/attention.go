package golden

import (
	"fmt"
	"math"

	"github.com/goldset/goldset/internal/detmath"
	"github.com/goldset/goldset/npy"
)

// PagedAttention computes GQA paged decode attention (docs/spec.md §4) in float64.
//
// q is [B, Hq, D]; kCache and vCache are [NB, BS, Hkv, D]; blockTables is
// [B, MAXB]; contextLens is [B]. out is [B, Hq, D] and lse is [B, Hq]. Query
// head h reads KV head h/G. For token j < L = contextLens[b] the key and
// value rows are kCache/vCache[blockTables[b, j/BS], j%BS, h/G]; nothing
// else is read, so block-table entries past ceil(L/BS) and the slots past L
// in the last block may hold anything (NaN, -1).
//
// With s_j = scale * (q · k_j), m = max_j s_j and p_j = exp(s_j - m):
// out = (sum_j p_j v_j) / (sum_j p_j) and lse = m + log(sum_j p_j).
// Each q·k is the sequential float64 sum over d of exact products; s_j is
// that sum times scale; sum_j p_j and every element of sum_j p_j v_j (p_j*v
// rounded, then added) run in token order. See doc.go.
//
// Errors: ErrInvalidParams (sizes, Hq not a multiple of Hkv), ErrContextLen,
// ErrOutOfRange (a block-table entry that is read is outside [0, NB)).
func PagedAttention(out, lse []float64, q, kCache, vCache []float32, blockTables, contextLens []int32, dims AttentionDims, scale float64) error {
	return pagedAttention(out, lse, q, f32View(kCache), f32View(vCache), blockTables, contextLens, dims, scale, attnOpts{})
}

// PagedAttentionHalf is PagedAttention with kCache and vCache given as
// float16 or bfloat16 bits (ht). Rows are widened exactly to float32 as
// they are read, so the result is bit-identical to PagedAttention on the
// widened caches, without a float32 copy of them (half the memory traffic
// and none of the footprint).
func PagedAttentionHalf(out, lse []float64, q []float32, kCache, vCache []uint16, ht HalfType, blockTables, contextLens []int32, dims AttentionDims, scale float64) error {
	return pagedAttention(out, lse, q, halfView(kCache, ht), halfView(vCache, ht), blockTables, contextLens, dims, scale, attnOpts{})
}

// HalfType is the storage format of a cache passed as raw 16-bit patterns.
type HalfType uint8

// Half-precision storage formats.
const (
	F16  HalfType = iota + 1 // IEEE binary16
	BF16                     // bfloat16
)

// kvView is a paged cache held as float32 values or as half-precision bits.
// Half rows are widened (exactly) into a caller's scratch as they are read.
type kvView struct {
	f    []float32
	h    []uint16
	half bool
	bf   bool
}

func f32View(c []float32) kvView { return kvView{f: c} }

func halfView(c []uint16, ht HalfType) kvView {
	if ht != F16 && ht != BF16 {
		panic("golden: unknown HalfType")
	}
	return kvView{h: c, half: true, bf: ht == BF16}
}

func (c kvView) len() int {
	if c.half {
		return len(c.h)
	}
	return len(c.f)
}

// value widens one half pattern of a half view.
func (c kvView) value(h uint16) float64 {
	if c.bf {
		return float64(npy.BF16ToF32(h))
	}
	return float64(npy.F16ToF32(h))
}

// row returns the d values at offset o, widened into buf when half.
func (c kvView) row(buf []float32, o, d int) []float32 {
	if !c.half {
		return c.f[o : o+d]
	}
	buf = buf[:d]
	if c.bf {
		npy.BF16sToF32s(buf, c.h[o:o+d])
	} else {
		npy.F16sToF32s(buf, c.h[o:o+d])
	}
	return buf
}

// attnOpts selects the deliberately broken variants of negatives.go.
type attnOpts struct {
	wrongGQA     bool // query head h reads KV head h % Hkv
	tailUnmasked bool // the last block contributes all BS slots
}

func (o attnOpts) kvHead(h int, dims AttentionDims) int {
	if o.wrongGQA {
		return h % dims.Hkv
	}
	return h / dims.G()
}

func checkAttnOut(out, lse []float64, dims AttentionDims) {
	if len(out) != dims.B*dims.Hq*dims.D {
		panic(badLenOut)
	}
	if len(lse) != dims.B*dims.Hq {
		panic(badLenLSE)
	}
}

func pagedAttention(out, lse []float64, q []float32, kCache, vCache kvView, blockTables, contextLens []int32, dims AttentionDims, scale float64, o attnOpts) error {
	if err := dims.check(); err != nil {
		return err
	}
	dims.checkCaseLens(q, kCache.len(), vCache.len(), blockTables, contextLens)
	checkAttnOut(out, lse, dims)
	if err := dims.checkSeqs(blockTables, contextLens); err != nil {
		return err
	}
	// One unit per sequence: all heads at once, so the K/V rows of one
	// token (all KV heads, contiguous) stream through memory in order.
	units := dims.B
	workers := numWorkers(units)
	scratch := make([]attnScratch, workers)
	parallelFor(workers, units, func(w, b int) {
		ws := &scratch[w]
		ws.setHeads(dims, o)
		l := int(contextLens[b])
		ws.logical = ws.logical[:0]
		for i := range numBlocks(l, dims.BS) {
			ws.logical = append(ws.logical, i)
		}
		attend(ws, out, lse, q, ws.fromCache(kCache, vCache, blockTables[b*dims.MAXB:(b+1)*dims.MAXB], dims), l, dims, b, scale, o.tailUnmasked)
	})
	return nil
}

// attnScratch is one worker's reusable memory.
type attnScratch struct {
	heads   []int       // query heads of the unit, grouped by KV head
	groups  []headGroup // ranges of heads that read one KV head
	logical []int       // logical blocks to attend, ascending
	q       []float64   // [len(heads), D] query in float64
	s       []float64   // [len(heads), T] scores, then probabilities
	acc     []float64   // [len(heads), D] sum of p_j v_j
	m, sum  []float64   // [len(heads)]
	rows    []float32   // [4, D] half rows widened for one token quad
	qt      []float64   // [len(heads), D, 2] the quads' queries laid out for qkQuad
	cache   cacheBlocks // the block source of the cache paths
	cls     []int       // sparse attention: a class of heads

	// attend's per-unit state between its phases.
	d, bs, l, rowStride int
	tokens, t           int // the unit's tokens; the next one's index
	scale               float64
	tailUnmasked, vec   bool
}

// setHeads lists every query head, grouped by the KV head it reads.
func (ws *attnScratch) setHeads(dims AttentionDims, o attnOpts) {
	ws.heads, ws.groups = ws.heads[:0], ws.groups[:0]
	for kvh := range dims.Hkv {
		start := len(ws.heads)
		for h := range dims.Hq {
			if o.kvHead(h, dims) == kvh {
				ws.heads = append(ws.heads, h)
			}
		}
		ws.groups = append(ws.groups, headGroup{kvh: kvh, start: start, end: len(ws.heads)})
	}
}

// headGroup is heads[start:end], all reading KV head kvh.
type headGroup struct{ kvh, start, end int }

// quadEnd returns where the group's head quads end when the vector tiles
// run (the Go loops take the heads from there on), else start.
func (g headGroup) quadEnd(vec bool) int {
	if !vec {
		return g.start
	}
	return g.start + (g.end-g.start)&^3
}

func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// blockSource gives attend the rows of the logical blocks it reads.
type blockSource interface {
	// block returns the view holding logical block list[n] of the keys
	// (value false) or the values (value true) and the offset of its
	// first row. attend asks for n = 0, 1, ... in each pass.
	block(value bool, list []int, n int) (kvView, int)
}

// cacheBlocks is the blockSource of a whole paged cache: logical block i
// of the sequence is physical block bt[i].
type cacheBlocks struct {
	k, v   kvView
	bt     []int32 // the sequence's block-table row
	stride int     // elements per block: BS*Hkv*D
}

func (c *cacheBlocks) block(value bool, list []int, n int) (kvView, int) {
	base := int(c.bt[list[n]]) * c.stride
	if value {
		return c.v, base
	}
	return c.k, base
}

// fromCache points ws.cache at sequence bt's blocks of the caches.
func (ws *attnScratch) fromCache(kCache, vCache kvView, bt []int32, dims AttentionDims) *cacheBlocks {
	ws.cache = cacheBlocks{k: kCache, v: vCache, bt: bt, stride: dims.BS * dims.Hkv * dims.D}
	return &ws.cache
}

// attend computes out and lse for the query heads ws.heads of sequence b,
// each group reading its KV head, over the tokens of logical blocks
// ws.logical (valid tokens only unless tailUnmasked), taken from src.
// Each head's result depends only on its own query, kvh and the token
// list: pairing heads, and where the rows of a block live, change no bits.
//
// The phases (start, scoreBlock per block, probs, valueBlock per block,
// finish) are separate so that a streaming caller can feed several units'
// passes from one produced block (see sparseFeed).
func attend(ws *attnScratch, out, lse []float64, q []float32, src blockSource, l int, dims AttentionDims, b int, scale float64, tailUnmasked bool) {
	ws.start(q, l, dims, b, scale, tailUnmasked)
	for n, i := range ws.logical {
		c, base := src.block(false, ws.logical, n)
		ws.scoreBlock(c, base, i)
	}
	ws.probs()
	for n, i := range ws.logical {
		c, base := src.block(true, ws.logical, n)
		ws.valueBlock(c, base, i)
	}
	ws.finish(out, lse, dims.Hq, b)
}

// start sizes the scratch for the unit's tokens, loads its queries and
// resets the token cursor.
func (ws *attnScratch) start(q []float32, l int, dims AttentionDims, b int, scale float64, tailUnmasked bool) {
	d, bs := dims.D, dims.BS
	nh := len(ws.heads)
	tokens := 0
	for _, i := range ws.logical {
		tokens += blockTokens(i, l, bs, tailUnmasked)
	}
	ws.d, ws.bs, ws.l, ws.rowStride = d, bs, l, dims.Hkv*d
	ws.tokens, ws.t, ws.scale, ws.tailUnmasked = tokens, 0, scale, tailUnmasked
	ws.q = grow(ws.q, nh*d)
	ws.s = grow(ws.s, nh*tokens)
	ws.acc = grow(ws.acc, nh*d)
	ws.m = grow(ws.m, nh)
	ws.sum = grow(ws.sum, nh)
	if cap(ws.rows) < 4*d {
		ws.rows = make([]float32, 4*d)
	}
	for i, h := range ws.heads {
		qh := q[(b*dims.Hq+h)*d : (b*dims.Hq+h+1)*d]
		for e, x := range qh {
			ws.q[i*d+e] = float64(x)
		}
	}

	// The AVX-512 tiles (attn_amd64.s) take the heads of each group four
	// at a time when d%8 == 0; the heads left over, and the odd last token
	// of a block in the score pass, go through the Go loops. Both give
	// every score and accumulator element the same bits.
	ws.vec = false
	if hasAttnVec && d%8 == 0 {
		ws.qt = grow(ws.qt, 2*nh*d)
		for _, g := range ws.groups {
			for hi := g.start; hi < g.quadEnd(true); hi += 4 {
				fillQT(ws.qt[2*hi*d:2*(hi+4)*d], ws.q[hi*d:(hi+4)*d], d)
				ws.vec = true
			}
		}
	}
}

// scoreBlock is pass 1 for logical block i, its K rows at base of kCache:
// the scores of its tokens, the next ones of the unit's token list.
// Tokens go four at a time and heads two at a time so each loaded K
// element feeds several products; every (head, token) score is the same
// sequential sum whatever the grouping.
func (ws *attnScratch) scoreBlock(kCache kvView, base, i int) {
	d, rowStride, tokens, scale, vec := ws.d, ws.rowStride, ws.tokens, ws.scale, ws.vec
	r0, r1, r2, r3 := ws.rows[:d], ws.rows[d:2*d], ws.rows[2*d:3*d], ws.rows[3*d:4*d]
	t := ws.t
	cnt := blockTokens(i, ws.l, ws.bs, ws.tailUnmasked)
	if vec {
		scoreQuads(ws, kCache, base, rowStride, cnt, t, tokens, d, scale)
	}
	off := 0
	for ; off+4 <= cnt; off += 4 {
		for _, g := range ws.groups {
			if g.quadEnd(vec) == g.end {
				continue
			}
			o := base + off*rowStride + g.kvh*d
			k0 := kCache.row(r0, o, d)
			k1 := kCache.row(r1, o+rowStride, d)
			k2 := kCache.row(r2, o+2*rowStride, d)
			k3 := kCache.row(r3, o+3*rowStride, d)
			hi := g.quadEnd(vec)
			for ; hi+2 <= g.end; hi += 2 {
				s0 := ws.s[hi*tokens+t : hi*tokens+t+4]
				s1 := ws.s[(hi+1)*tokens+t : (hi+1)*tokens+t+4]
				qk2x2(s0[:2], s1[:2], ws.q[hi*d:(hi+1)*d], ws.q[(hi+1)*d:(hi+2)*d], k0, k1, scale)
				qk2x2(s0[2:], s1[2:], ws.q[hi*d:(hi+1)*d], ws.q[(hi+1)*d:(hi+2)*d], k2, k3, scale)
			}
			if hi < g.end {
				qk1x4(ws.s[hi*tokens+t:hi*tokens+t+4], ws.q[hi*d:(hi+1)*d], k0, k1, k2, k3, scale)
			}
		}
		t += 4
	}
	for ; off < cnt; off++ {
		for _, g := range ws.groups {
			if g.quadEnd(vec) == g.end {
				continue
			}
			o := base + off*rowStride + g.kvh*d
			k := kCache.row(r0, o, d)
			for hi := g.quadEnd(vec); hi < g.end; hi++ {
				ws.s[hi*tokens+t] = scale * dot(ws.q[hi*d:(hi+1)*d], k)
			}
		}
		t++
	}
	ws.t = t
}

// probs turns the scores into probabilities and their sums, token order,
// and readies pass 2.
func (ws *attnScratch) probs() {
	tokens := ws.tokens
	for hi := range len(ws.heads) {
		s := ws.s[hi*tokens : (hi+1)*tokens]
		m := math.Inf(-1)
		for _, x := range s {
			if x > m || x != x {
				m = x
			}
		}
		var sum float64
		for j, x := range s {
			p := detmath.Exp(x - m)
			s[j] = p
			sum += p
		}
		ws.m[hi], ws.sum[hi] = m, sum
	}
	clear(ws.acc)
	ws.t = 0
}

// valueBlock is pass 2 for logical block i, its V rows at base of vCache:
// acc += p_j v_j over its tokens, each element summed in token order;
// tokens four at a time, heads two at a time.
func (ws *attnScratch) valueBlock(vCache kvView, base, i int) {
	d, rowStride, tokens, vec := ws.d, ws.rowStride, ws.tokens, ws.vec
	r0, r1, r2, r3 := ws.rows[:d], ws.rows[d:2*d], ws.rows[2*d:3*d], ws.rows[3*d:4*d]
	t := ws.t
	cnt := blockTokens(i, ws.l, ws.bs, ws.tailUnmasked)
	if vec {
		valueQuads(ws, vCache, base, rowStride, cnt, t, tokens, d)
	}
	off := 0
	for ; off+4 <= cnt; off += 4 {
		for _, g := range ws.groups {
			if g.quadEnd(vec) == g.end {
				continue
			}
			o := base + off*rowStride + g.kvh*d
			v0 := vCache.row(r0, o, d)
			v1 := vCache.row(r1, o+rowStride, d)
			v2 := vCache.row(r2, o+2*rowStride, d)
			v3 := vCache.row(r3, o+3*rowStride, d)
			hi := g.quadEnd(vec)
			for ; hi+2 <= g.end; hi += 2 {
				pv2x4(ws.acc[hi*d:(hi+1)*d], ws.acc[(hi+1)*d:(hi+2)*d],
					ws.s[hi*tokens+t:hi*tokens+t+4], ws.s[(hi+1)*tokens+t:(hi+1)*tokens+t+4], v0, v1, v2, v3)
			}
			if hi < g.end {
				pv1x4(ws.acc[hi*d:(hi+1)*d], ws.s[hi*tokens+t:hi*tokens+t+4], v0, v1, v2, v3)
			}
		}
		t += 4
	}
	for ; off < cnt; off++ {
		for _, g := range ws.groups {
			if g.quadEnd(vec) == g.end {
				continue
			}
			o := base + off*rowStride + g.kvh*d
			v := vCache.row(r0, o, d)
			for hi := g.quadEnd(vec); hi < g.end; hi++ {
				axpy(ws.acc[hi*d:(hi+1)*d], ws.s[hi*tokens+t], v)
			}
		}
		t++
	}
	ws.t = t
}

// finish writes out and lse of the unit's heads (hq query heads a sequence).
func (ws *attnScratch) finish(out, lse []float64, hq, b int) {
	d := ws.d
	for hi, h := range ws.heads {
		row := (b*hq + h) * d
		o := out[row : row+d]
		sum := ws.sum[hi]
		if sum == 0 { // no token: only reachable from negatives (empty selection)
			clear(o)
			lse[b*hq+h] = math.Inf(-1)
			continue
		}
		for e, a := range ws.acc[hi*d : (hi+1)*d] {
			o[e] = a / sum
		}
		lse[b*hq+h] = ws.m[hi] + detmath.Log(sum)
	}
}

// scoreQuads sets the scores of the head quads of every group for the cnt
// tokens of a block (K rows at base + j*rs + kvh*d), tokens t.. of the
// sequence: the token pairs through qkQuad, an odd last token through dot.
func scoreQuads(ws *attnScratch, kCache kvView, base, rs, cnt, t, tokens, d int, scale float64) {
	for _, g := range ws.groups {
		o := base + g.kvh*d
		for hi := g.start; hi < g.quadEnd(true); hi += 4 {
			qkQuad(ws.s[hi*tokens+t:], tokens, ws.qt[2*hi*d:2*(hi+4)*d], kCache, o, rs, d, cnt&^1, scale)
		}
	}
	if cnt%2 == 0 {
		return
	}
	j := cnt - 1
	for _, g := range ws.groups {
		k := kCache.row(ws.rows[:d], base+j*rs+g.kvh*d, d)
		for hi := g.start; hi < g.quadEnd(true); hi++ {
			ws.s[hi*tokens+t+j] = scale * dot(ws.q[hi*d:(hi+1)*d], k)
		}
	}
}

// valueQuads adds p_j v_j into the accumulators of the head quads of every
// group for the cnt tokens of a block (V rows at base + j*rs + kvh*d),
// tokens t.. of the sequence.
func valueQuads(ws *attnScratch, vCache kvView, base, rs, cnt, t, tokens, d int) {
	for _, g := range ws.groups {
		o := base + g.kvh*d
		for hi := g.start; hi < g.quadEnd(true); hi += 4 {
			pvQuad(ws.acc[hi*d:(hi+4)*d], ws.s[hi*tokens+t:], tokens, vCache, o, rs, d, cnt)
		}
	}
}

// fillQT lays out the queries q ([4][d]) of a head quad for qkQuad:
// dst[(e*4+h)*2+u] = q[h*d+e] for u = 0, 1, a lane per head and token of
// a token pair.
func fillQT(dst, q []float64, d int) {
	dst = dst[:8*d]
	for e := range d {
		for h := range 4 {
			x := q[h*d+e]
			dst[(e*4+h)*2] = x
			dst[(e*4+h)*2+1] = x
		}
	}
}

// blockTokens is the number of tokens of logical block i below l.
func blockTokens(i, l, bs int, tailUnmasked bool) int {
	if tailUnmasked {
		return bs
	}
	return min(bs, l-i*bs)
}

// dot returns q·k as the sequential float64 sum over e of the exact
// products q[e]*k[e]. qk1x4 (four keys, one query) and qk2x2 (two keys,
// two queries) compute the same sums, times scale, with the same bits.
func dot(q []float64, k []float32) float64 {
	q = q[:len(k)]
	var s float64
	for e, x := range k {
		s += float64(q[e] * float64(x))
	}
	return s
}

func qk1x4(dst []float64, q []float64, k0, k1, k2, k3 []float32, scale float64) {
	n := len(q)
	k0, k1, k2, k3 = k0[:n], k1[:n], k2[:n], k3[:n]
	var s0, s1, s2, s3 float64
	for e, x := range q {
		s0 += float64(x * float64(k0[e]))
		s1 += float64(x * float64(k1[e]))
		s2 += float64(x * float64(k2[e]))
		s3 += float64(x * float64(k3[e]))
	}
	dst = dst[:4]
	dst[0], dst[1], dst[2], dst[3] = scale*s0, scale*s1, scale*s2, scale*s3
}

// axpy does acc += p*v elementwise (one rounding per product and one per
// add). pv1x4 and pv2x4 apply four tokens in token order to one or two
// heads with the same bits.
func axpy(acc []float64, p float64, v []float32) {
	v = v[:len(acc)]
	for e, x := range v {
		acc[e] += float64(p * float64(x))
	}
}

func pv1x4(acc []float64, p []float64, v0, v1, v2, v3 []float32) {
	n := len(acc)
	v0, v1, v2, v3 = v0[:n], v1[:n], v2[:n], v3[:n]
	p = p[:4]
	p0, p1, p2, p3 := p[0], p[1], p[2], p[3]
	for e, a := range acc {
		a += float64(p0 * float64(v0[e]))
		a += float64(p1 * float64(v1[e]))
		a += float64(p2 * float64(v2[e]))
		a += float64(p3 * float64(v3[e]))
		acc[e] = a
	}
}

func pv2x4(acc0, acc1 []float64, p, r []float64, v0, v1, v2, v3 []float32) {
	n := len(acc0)
	acc1 = acc1[:n]
	v0, v1, v2, v3 = v0[:n], v1[:n], v2[:n], v3[:n]
	p, r = p[:4], r[:4]
	p0, p1, p2, p3 := p[0], p[1], p[2], p[3]
	r0, r1, r2, r3 := r[0], r[1], r[2], r[3]
	for e, a := range acc0 {
		b := acc1[e]
		c0, c1, c2, c3 := float64(v0[e]), float64(v1[e]), float64(v2[e]), float64(v3[e])
		a += float64(p0 * c0)
		b += float64(r0 * c0)
		a += float64(p1 * c1)
		b += float64(r1 * c1)
		a += float64(p2 * c2)
		b += float64(r2 * c2)
		a += float64(p3 * c3)
		b += float64(r3 * c3)
		acc0[e] = a
		acc1[e] = b
	}
}

func qk2x2(dst0, dst1 []float64, qa, qb []float64, k0, k1 []float32, scale float64) {
	n := len(qa)
	qb = qb[:n]
	k0, k1 = k0[:n], k1[:n]
	var a0, a1, b0, b1 float64
	for e, x := range qa {
		y := qb[e]
		c0, c1 := float64(k0[e]), float64(k1[e])
		a0 += float64(x * c0)
		b0 += float64(y * c0)
		a1 += float64(x * c1)
		b1 += float64(y * c1)
	}
	dst0 = dst0[:2]
	dst1 = dst1[:2]
	dst0[0], dst0[1] = scale*a0, scale*a1
	dst1[0], dst1[1] = scale*b0, scale*b1
}

// KVFeed supplies one sequence's key and value blocks to
// PagedAttentionFeed and SparseAttentionFeed as they are needed, so a
// caller that produces its cache block by block (the suite regenerates
// blocks from their seeds) need not assemble the sequence in memory.
type KVFeed interface {
	// Block returns logical block list[n] of the keys (value false) or of
	// the values (value true), [BS, Hkv, D] row-major: float32 values (f)
	// for a float32 feed, else half bits (h). The slice is read only until
	// the next call. Each pass asks for n = 0, 1, ... of one ascending
	// list, every block once, so a feed may produce list[n:] ahead.
	Block(value bool, list []int, n int) (f []float32, h []uint16)
}

// feedBlocks is the blockSource of a KVFeed: every block at offset 0.
type feedBlocks struct {
	feed KVFeed
	ht   HalfType // 0: float32
	n    int      // elements per block
}

func (f *feedBlocks) block(value bool, list []int, n int) (kvView, int) {
	fv, hv := f.feed.Block(value, list, n)
	c := f32View(fv)
	if f.ht != 0 {
		c = halfView(hv, f.ht)
	}
	if c.len() != f.n {
		panic("golden: KVFeed.Block returned a block of the wrong length")
	}
	return c, 0
}

// AttentionScratch is memory that PagedAttentionFeed and
// SparseAttentionFeed reuse from call to call (one call at a time); the
// zero value is ready, nil allocates afresh.
type AttentionScratch struct {
	units []*attnScratch // one per unit of a call, kept for reuse
	feed  feedBlocks
	union []int   // SparseAttentionFeed: the blocks any unit reads
	next  []int   // per unit: the index of its next block in its list
	lists [][]int // per query head: its block list
	cls   []int
}

// Reserve sizes the scratch for PagedAttentionFeed on sequences of up to
// tokens tokens with hq query heads, so that the calls do not allocate
// their scores as longer sequences arrive.
func (s *AttentionScratch) Reserve(hq, tokens int) {
	ws := s.unit(0)
	ws.s = grow(ws.s, hq*tokens)
}

// unit returns the k-th unit's scratch.
func (s *AttentionScratch) unit(k int) *attnScratch {
	for len(s.units) <= k {
		s.units = append(s.units, new(attnScratch))
	}
	return s.units[k]
}

// feedFrom validates what the Feed entry points share (one sequence of
// length l, ht) and points sc.feed at feed.
func (s *AttentionScratch) feedFrom(out, lse []float64, q []float32, feed KVFeed, ht HalfType, l int, dims AttentionDims) (*feedBlocks, error) {
	if err := dims.check(); err != nil {
		return nil, err
	}
	if dims.B != 1 {
		return nil, fmt.Errorf("golden: a feed holds one sequence, dims.B = %d: %w", dims.B, ErrInvalidParams)
	}
	if ht != 0 && ht != F16 && ht != BF16 {
		return nil, fmt.Errorf("golden: HalfType %d: %w", ht, ErrInvalidParams)
	}
	if len(q) != dims.Hq*dims.D {
		panic(badLenQ)
	}
	checkAttnOut(out, lse, dims)
	if l < 1 || l > dims.MAXB*dims.BS {
		return nil, fmt.Errorf("golden: context length %d not in [1, %d]: %w", l, dims.MAXB*dims.BS, ErrContextLen)
	}
	s.feed = feedBlocks{feed: feed, ht: ht, n: dims.BS * dims.Hkv * dims.D}
	return &s.feed, nil
}

// PagedAttentionFeed is PagedAttention for one sequence (dims.B = 1) of
// context length l (at most MAXB*BS; dims.NB is not used) whose blocks
// come from feed, ht 0 for float32 blocks, else F16 or BF16. Its result is
// bit-identical to PagedAttention (PagedAttentionHalf) on a cache made of
// the feed's blocks: the sums run over the same tokens in the same order.
// sc may be nil.
func PagedAttentionFeed(out, lse []float64, q []float32, feed KVFeed, ht HalfType, l int, dims AttentionDims, scale float64, sc *AttentionScratch) error {
	if sc == nil {
		sc = new(AttentionScratch)
	}
	src, err := sc.feedFrom(out, lse, q, feed, ht, l, dims)
	if err != nil {
		return err
	}
	ws := sc.unit(0)
	ws.setHeads(dims, attnOpts{})
	ws.logical = ws.logical[:0]
	for i := range numBlocks(l, dims.BS) {
		ws.logical = append(ws.logical, i)
	}
	attend(ws, out, lse, q, src, l, dims, 0, scale, false)
	return nil
}
