package gen

import (
	"fmt"
	"math"
)

// Outlier row kinds for softmax (the peer's three kinds).
const (
	OutlierUniform = iota // uniform(-big, big)
	OutlierHigh           // +big + N(0, 1)
	OutlierLow            // -big + N(0, 1)
)

// OutlierMagnitude is the default `big` of an outlier row per dtype:
// float32 1e4 (exp overflows without max subtraction, differences stay
// finely resolved); float16 6e4 (near the fp16 max 65504, so x - max of a
// uniform row overflows fp16); bfloat16 1e38 (near its max ~3.39e38, so
// x - max of a uniform row overflows even fp32). float64: 1e4.
func OutlierMagnitude(dt DType) float64 {
	switch dt {
	case F16:
		return 6e4
	case BF16:
		return 1e38
	}
	return 1e4
}

// OutlierRow fills dst (one row, or several rows of the same kind) with big
// values: element i is computed from element at+i of the stream (its
// uniform value for OutlierUniform, its normal value for High/Low) in
// float64 and rounded once to dt. It panics on an unknown kind.
func OutlierRow[E Elem](s Stream, dst []E, at int64, dt DType, kind int, big float64) {
	switch kind {
	case OutlierUniform:
		Uniform(s, dst, at, dt, -big, big)
		return
	case OutlierHigh, OutlierLow:
	default:
		panic("gen: unknown outlier kind")
	}
	if kind == OutlierLow {
		big = -big
	}
	var buf [ChunkElems]float64
	for off := 0; off < len(dst); off += ChunkElems {
		n := min(ChunkElems, len(dst)-off)
		z := buf[:n]
		Normal(s, z, at+int64(off), F64, 1)
		for i := range z {
			z[i] += big
		}
		Store(dst[off:off+n], dt, z)
	}
}

// MaskLeading sets the first n entries of every row of dst (rows of `cols`
// elements) to -Inf. n < cols leaves finite values after the masked tile
// (the "first tile entirely -inf" case); n == cols masks whole rows (kept
// out of graded cases).
func MaskLeading[E Elem](dst []E, dt DType, cols, n int) {
	if cols < 1 || n < 0 || n > cols || len(dst)%cols != 0 {
		panic("gen: MaskLeading shape")
	}
	for r := 0; r < len(dst); r += cols {
		Fill(dst[r:r+n], dt, math.Inf(-1))
	}
}

// PoisonCache writes NaN into every cache slot that no sequence of l reads:
// slots [Live[p], BS) of each physical block p (the tail of a last partial
// block, and all of an unreferenced, extra or poison block). cache is
// [NumBlocks, BS, Hkv, D] flat with slotElems = Hkv*D. A streaming builder
// can instead call Fill(block[Live[p]*slotElems:], dt, NaN) per block.
func PoisonCache[E Elem](cache []E, dt DType, l *PagedLayout, slotElems int) {
	blockElems := l.BlockSize * slotElems
	if slotElems < 1 || len(cache) != l.NumBlocks*blockElems {
		panic("gen: PoisonCache cache size does not match the layout")
	}
	for p, live := range l.Live {
		blk := cache[p*blockElems : (p+1)*blockElems]
		Fill(blk[int(live)*slotElems:], dt, math.NaN())
	}
}

// Heads are the attention head dimensions: Hq query heads, Hkv KV heads
// (Hq a multiple of Hkv, G = Hq/Hkv), head size D.
type Heads struct{ Q, KV, D int }

func (h Heads) check() {
	if h.Q < 1 || h.KV < 1 || h.D < 1 || h.Q%h.KV != 0 {
		panic("gen: invalid head dimensions")
	}
}

// groupDirection returns u = sum of the G query rows q (G*D values) divided
// by its Euclidean norm, and min over the rows of q_h . u (0 if degenerate).
func groupDirection(u, q []float64, d int) float64 {
	clear(u)
	for h := 0; h < len(q); h += d {
		for i := range u {
			u[i] += q[h+i]
		}
	}
	n2 := 0.0
	for _, v := range u {
		n2 += float64(v * v)
	}
	if !(n2 > 0) || math.IsInf(n2, 0) {
		return 0
	}
	n := math.Sqrt(n2)
	for i := range u {
		u[i] /= n
	}
	lo := math.Inf(1)
	for h := 0; h < len(q); h += d {
		dot := 0.0
		for i, v := range u {
			dot += float64(q[h+i] * v)
		}
		lo = min(lo, dot)
	}
	return lo
}

// NeedleKey computes the needle key for one KV head from its G query rows
// q [G*D] (float64 values): key = c*u with u the unit direction of the sum of
// the rows and c = logit / (scale * min_h q_h.u), so that every query head of
// the group gives this key the logit scale*q_h.key >= logit (before the key
// is rounded to the cache dtype). It returns ErrDegen if some q_h.u <= 0.
func NeedleKey(key, q []float64, d int, scale, logit float64) error {
	if d < 1 || len(key) != d || len(q) == 0 || len(q)%d != 0 {
		panic("gen: NeedleKey shape")
	}
	lo := groupDirection(key, q, d)
	if !(lo > 0) {
		return fmt.Errorf("gen: needle: a query head is orthogonal or opposite to its group direction: %w", ErrDegen)
	}
	c := logit / float64(scale*lo)
	for i := range key {
		key[i] *= c
	}
	return nil
}

// PlantNeedle overwrites, for every KV head g, the key of token pos of
// sequence seq with NeedleKey of the query rows of group g (query is
// [B, Hq, D], keyCache [NumBlocks, BS, Hkv, D], both of dtype dt). It
// returns the smallest logit scale*q_h.k over the query heads of the
// sequence, computed from the stored (rounded) key. ErrShared if another
// sequence reads the block holding the position, ErrDegen as NeedleKey.
func PlantNeedle[E Elem](keyCache, query []E, dt DType, l *PagedLayout, h Heads, seq, pos int, scale, logit float64) (float64, error) {
	h.check()
	if len(query) != l.Seqs*h.Q*h.D || len(keyCache) != l.NumBlocks*l.BlockSize*h.KV*h.D {
		panic("gen: PlantNeedle tensor sizes do not match the layout")
	}
	blk, off := l.Slot(seq, pos)
	if readByOther(l, seq, int32(blk)) {
		return 0, fmt.Errorf("gen: needle at sequence %d position %d: physical block %d: %w", seq, pos, blk, ErrShared)
	}
	g, d := h.Q/h.KV, h.D
	q := make([]float64, g*d)
	key := make([]float64, d)
	lo := math.Inf(1)
	for kv := range h.KV {
		Load(q, query[(seq*h.Q+kv*g)*d:(seq*h.Q+(kv+1)*g)*d], dt)
		if err := NeedleKey(key, q, d, scale, logit); err != nil {
			return 0, fmt.Errorf("gen: needle at sequence %d position %d KV head %d: %w", seq, pos, kv, err)
		}
		dst := keyCache[((blk*l.BlockSize+off)*h.KV+kv)*d:][:d]
		Store(dst, dt, key)
		Load(key, dst, dt)
		for hh := 0; hh < g; hh++ {
			dot := 0.0
			for i, v := range key {
				dot += float64(q[hh*d+i] * v)
			}
			lo = min(lo, float64(scale*dot))
		}
	}
	return lo, nil
}

// readByOther reports whether a sequence other than seq reads physical
// block p.
func readByOther(l *PagedLayout, seq int, p int32) bool {
	for b := range l.Seqs {
		if b == seq {
			continue
		}
		for j := range l.NumLogical(b) {
			if l.Tables[b*l.MaxBlocks+j] == p {
				return true
			}
		}
	}
	return false
}

// QuestScores computes the Quest block scores of one sequence and one KV
// head: out[hh*nb+i] = sum_d max(q*kmax_i, q*kmin_i) for the G query heads
// hh of group kvHead and logical blocks i < nb = ceil(L/BS), kmax/kmin over
// the valid tokens of block i. float64, exactly the golden's definition.
func QuestScores[E Elem](out []float64, keyCache, query []E, dt DType, l *PagedLayout, h Heads, seq, kvHead int) {
	h.check()
	g, d, nb := h.Q/h.KV, h.D, l.NumLogical(seq)
	if len(out) != g*nb {
		panic("gen: QuestScores output size")
	}
	q := make([]float64, g*d)
	Load(q, query[(seq*h.Q+kvHead*g)*d:(seq*h.Q+(kvHead+1)*g)*d], dt)
	kmax := make([]float64, d)
	kmin := make([]float64, d)
	k := make([]float64, d)
	L := int(l.Lens[seq])
	for i := range nb {
		p := int(l.Tables[seq*l.MaxBlocks+i])
		for j := range min(l.BlockSize, L-i*l.BlockSize) {
			Load(k, keyCache[((p*l.BlockSize+j)*h.KV+kvHead)*d:][:d], dt)
			if j == 0 {
				copy(kmax, k)
				copy(kmin, k)
				continue
			}
			for e, v := range k {
				kmax[e] = max(kmax[e], v)
				kmin[e] = min(kmin[e], v)
			}
		}
		for hh := range g {
			s := 0.0
			for e := range d {
				qv := q[hh*d+e]
				s += max(float64(qv*kmax[e]), float64(qv*kmin[e]))
			}
			out[hh*nb+i] = s
		}
	}
}

// questMargin returns min over heads of (min planted score - max other score).
func questMargin(sc []float64, g, nb int, planted []bool) float64 {
	m := math.Inf(1)
	for hh := range g {
		lo, hi := math.Inf(1), math.Inf(-1)
		for i := range nb {
			if planted[i] {
				lo = min(lo, sc[hh*nb+i])
			} else {
				hi = max(hi, sc[hh*nb+i])
			}
		}
		m = min(m, lo-hi)
	}
	return m
}

// PlantQuest makes the logical blocks `blocks` of sequence seq outrank all
// its other blocks in the Quest scores of every query head of KV group
// kvHead, by at least `margin`. It adds beta*u to every valid key (of this
// KV head) in the chosen blocks, u the unit direction of the group's summed
// query rows: that shifts kmax and kmin by beta*u, so each such block's
// score for head h rises by exactly beta*(q_h.u) (before rounding).
// beta = (margin + max rest - min planted) / min_h q_h.u, measured on the
// current keys; after rounding to dt the margin is re-measured and beta
// grown by the shortfall (up to 8 times). It returns the achieved margin
// (min over heads of min planted - max other score, from the stored keys);
// +Inf when every block is planted. Per KV group, kv_group_sum scores then
// have a margin of at least G times that. Errors: ErrSpec for bad blocks,
// ErrShared if a chosen physical block is read by another sequence,
// ErrDegen if some q_h.u <= 0 or the margin cannot be reached.
func PlantQuest[E Elem](keyCache, query []E, dt DType, l *PagedLayout, h Heads, seq, kvHead int, blocks []int, margin float64) (float64, error) {
	h.check()
	g, d, nb := h.Q/h.KV, h.D, l.NumLogical(seq)
	planted := make([]bool, nb)
	for _, i := range blocks {
		if i < 0 || i >= nb || planted[i] {
			return 0, fmt.Errorf("gen: quest plant: block %d of sequence %d (nb=%d) out of range or repeated: %w", i, seq, nb, ErrSpec)
		}
		planted[i] = true
	}
	if !(margin > 0) {
		return 0, fmt.Errorf("gen: quest plant: margin %v: %w", margin, ErrSpec)
	}
	for _, i := range blocks {
		if p := l.Tables[seq*l.MaxBlocks+i]; readByOther(l, seq, p) {
			return 0, fmt.Errorf("gen: quest plant: physical block %d: %w", p, ErrShared)
		}
	}
	q := make([]float64, g*d)
	Load(q, query[(seq*h.Q+kvHead*g)*d:(seq*h.Q+(kvHead+1)*g)*d], dt)
	u := make([]float64, d)
	lo := groupDirection(u, q, d)
	if !(lo > 0) {
		return 0, fmt.Errorf("gen: quest plant: a query head is orthogonal or opposite to its group direction: %w", ErrDegen)
	}
	sc := make([]float64, g*nb)
	QuestScores(sc, keyCache, query, dt, l, h, seq, kvHead)
	if len(blocks) == nb {
		return math.Inf(1), nil
	}
	// Keep the original keys so every attempt starts from them.
	L := int(l.Lens[seq])
	type tok struct{ at int }
	var toks []tok
	for _, i := range blocks {
		p := int(l.Tables[seq*l.MaxBlocks+i])
		for j := range min(l.BlockSize, L-i*l.BlockSize) {
			toks = append(toks, tok{((p*l.BlockSize+j)*h.KV + kvHead) * d})
		}
	}
	orig := make([]float64, len(toks)*d)
	for t, tk := range toks {
		Load(orig[t*d:(t+1)*d], keyCache[tk.at:tk.at+d], dt)
	}
	beta := (margin - questMargin(sc, g, nb, planted)) / lo
	if beta < 0 {
		beta = 0
	}
	k := make([]float64, d)
	got := 0.0
	for range 8 {
		for t, tk := range toks {
			for e := range k {
				k[e] = orig[t*d+e] + float64(beta*u[e])
			}
			Store(keyCache[tk.at:tk.at+d], dt, k)
		}
		QuestScores(sc, keyCache, query, dt, l, h, seq, kvHead)
		got = questMargin(sc, g, nb, planted)
		if got >= margin {
			return got, nil
		}
		beta += (margin - got) / lo * 1.5
	}
	return got, fmt.Errorf("gen: quest plant: margin %v not reached (got %v): %w", margin, got, ErrDegen)
}
