package goldentest

import (
	"encoding/binary"
	"math"
	"sort"

	"github.com/goldset/goldset/golden"
	"github.com/goldset/goldset/internal/detmath"
)

// Reference implementations of the DSA goldens for the conformance suite,
// written from ops.md §8 independently of package golden's code paths:
// plain loops, a nearest-value e4m3 encoder, a log2-based scale, a
// sort-based top-k.

// naiveE4M3 is the value of an e4m3 code from its bit fields.
func naiveE4M3(c uint8) float64 {
	sign := 1.0
	if c&0x80 != 0 {
		sign = -1
	}
	e, m := int(c>>3)&15, float64(c&7)
	if e == 15 && m == 7 {
		return math.NaN()
	}
	if e == 0 {
		return sign * m / 8 * math.Pow(2, -6)
	}
	return sign * (1 + m/8) * math.Pow(2, float64(e-7))
}

// naiveE4M3Encode returns the finite code nearest to x, ties to the code
// with an even mantissa, so |x| > 448 gives 448 (saturation).
func naiveE4M3Encode(x float64) uint8 {
	var sign uint8
	if math.Signbit(x) {
		sign = 0x80
	}
	a := math.Abs(x)
	best, bestD := uint8(0), math.Inf(1)
	for c := 0; c < 0x7f; c++ { // 0x00..0x7e: the finite non-negative codes
		d := math.Abs(naiveE4M3(uint8(c)) - a)
		if d < bestD || (d == bestD && c&1 == 0) {
			best, bestD = uint8(c), d
		}
	}
	return sign | best
}

// naiveScale is the index-cache scale: q = fl32(max(amax, fl32(1e-4))/448)
// and, for ue8m0, 2^ceil(log2(q)).
func naiveScale(amax float32, ue8m0 bool) float32 {
	m := amax
	if m < float32(1e-4) {
		m = float32(1e-4)
	}
	q := m / float32(448)
	if !ue8m0 {
		return q
	}
	return float32(math.Exp2(math.Ceil(math.Log2(float64(q)))))
}

// naiveIndexCache writes the cache of ops.md §8a slot by slot.
func naiveIndexCache(cache []byte, k []float32, slots []int32, di int, ue8m0 bool) []byte {
	out := append([]byte(nil), cache...)
	blk := 64 * (di + 4)
	for t, s := range slots {
		if s < 0 {
			continue
		}
		var amax float32
		for d := 0; d < di; d++ {
			if a := float32(math.Abs(float64(k[t*di+d]))); a > amax {
				amax = a
			}
		}
		sc := naiveScale(amax, ue8m0)
		b, o := int(s)/64, int(s)%64
		for d := 0; d < di; d++ {
			out[b*blk+o*di+d] = naiveE4M3Encode(float64(k[t*di+d] / sc))
		}
		binary.LittleEndian.PutUint32(out[b*blk+64*di+4*o:], math.Float32bits(sc))
	}
	return out
}

// naiveKey reads the values and scale of slot s.
func naiveKey(cache []byte, s, di int) ([]float64, float64) {
	blk := 64 * (di + 4)
	b, o := s/64, s%64
	v := make([]float64, di)
	for d := range v {
		v[d] = naiveE4M3(cache[b*blk+o*di+d])
	}
	return v, float64(math.Float32frombits(binary.LittleEndian.Uint32(cache[b*blk+64*di+4*o:])))
}

// naiveValues decodes e4m3 codes.
func naiveValues(codes []uint8) []float64 {
	v := make([]float64, len(codes))
	for i, c := range codes {
		v[i] = naiveE4M3(c)
	}
	return v
}

// naiveScore is I of one key for one query row (q values [hi*di]).
func naiveScore(q []float64, w []float32, key []float64, sc float64, hi, di int) (score, abs float64) {
	var sum, sa float64
	for h := 0; h < hi; h++ {
		var dot float64
		for d := 0; d < di; d++ {
			dot += float64(q[h*di+d] * key[d])
		}
		r := math.Max(0, dot)
		sum += float64(float64(w[h]) * r)
		sa += float64(math.Abs(float64(w[h])) * r)
	}
	return float64(sc * sum), float64(sc * sa)
}

// naiveTopK sorts positions by (score descending, position ascending).
func naiveTopK(scores []float64, k int) (sel []int32, info golden.DSARowInfo) {
	idx := make([]int, len(scores))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return scores[idx[a]] > scores[idx[b]] })
	sel = make([]int32, k)
	for i := range sel {
		sel[i] = -1
		if i < len(idx) {
			sel[i] = int32(idx[i])
		}
	}
	info.Visible = len(scores)
	info.Gap = math.Inf(1)
	if n := min(k, len(idx)); n > 0 {
		info.Kth = scores[idx[n-1]]
	}
	if len(idx) > k {
		info.Gap = info.Kth - scores[idx[k]]
	}
	return sel, info
}

// naiveRow scores the width tokens of one query row (qv [hi*di] values);
// key(s) gives token s's values and scale, or ok false outside the window.
// It returns the logits row (-Inf outside), the top-k of the visible
// tokens as indices into them, and the row info.
func naiveRow(qv []float64, w []float32, hi, di, width, k int, key func(s int) ([]float64, float64, bool)) (row []float64, sel []int32, ri golden.DSARowInfo) {
	row = make([]float64, width)
	var scores []float64
	var a float64
	for s := range row {
		row[s] = math.Inf(-1)
		kv, sc, ok := key(s)
		if !ok {
			continue
		}
		x, ab := naiveScore(qv, w, kv, sc, hi, di)
		row[s] = x
		scores = append(scores, x)
		a = math.Max(a, ab)
	}
	sel, ri = naiveTopK(scores, k)
	ri.A = a
	return row, sel, ri
}

// naiveIndexer is the paged decode indexer of ops.md §8b.
func naiveIndexer(q []uint8, w []float32, cache []byte, bt, lens []int32, d golden.DSAIndexerDims) (logits []float64, tl, tp []int32, info []golden.DSARowInfo) {
	qv := naiveValues(q)
	for b := 0; b < d.B; b++ {
		for j := 0; j < d.NN; j++ {
			r := b*d.NN + j
			vis := int(lens[b]) - d.NN + j + 1
			row, sel, ri := naiveRow(qv[r*d.HI*d.DI:(r+1)*d.HI*d.DI], w[r*d.HI:(r+1)*d.HI], d.HI, d.DI, d.MAXB*64, d.K, func(s int) ([]float64, float64, bool) {
				if s >= vis {
					return nil, 0, false
				}
				kv, sc := naiveKey(cache, int(bt[b*d.MAXB+s/64])*64+s%64, d.DI)
				return kv, sc, true
			})
			logits = append(logits, row...)
			info = append(info, ri)
			tl = append(tl, sel...)
			for _, p := range sel {
				if p < 0 {
					tp = append(tp, -1)
				} else {
					tp = append(tp, bt[b*d.MAXB+int(p)/64]*64+p%64)
				}
			}
		}
	}
	return
}

// naiveRagged is the ragged (prefill) indexer.
func naiveRagged(q []uint8, w []float32, kv []uint8, kvScale []float32, ks, ke []int32, d golden.DSARaggedDims) (logits []float64, topk []int32, info []golden.DSARowInfo) {
	qv := naiveValues(q)
	for t := 0; t < d.T; t++ {
		row, sel, ri := naiveRow(qv[t*d.HI*d.DI:(t+1)*d.HI*d.DI], w[t*d.HI:(t+1)*d.HI], d.HI, d.DI, d.S, d.K, func(s int) ([]float64, float64, bool) {
			if s < int(ks[t]) || s >= int(ke[t]) {
				return nil, 0, false
			}
			return naiveValues(kv[s*d.DI : (s+1)*d.DI]), float64(kvScale[s]), true
		})
		for i, p := range sel {
			if p >= 0 {
				sel[i] = p + ks[t]
			}
		}
		logits = append(logits, row...)
		topk = append(topk, sel...)
		info = append(info, ri)
	}
	return
}

// naiveSparseAttention is ops.md §8c with plain loops.
func naiveSparseAttention(qn, qp, ckv, kpe []float32, idx []int32, d golden.DSAAttentionDims, scale float64) (out, lse []float64) {
	out = make([]float64, d.T*d.H*d.DC)
	lse = make([]float64, d.T*d.H)
	for t := 0; t < d.T; t++ {
		var sel []int
		for _, x := range idx[t*d.K : (t+1)*d.K] {
			if x >= 0 {
				sel = append(sel, int(x))
			}
		}
		sort.Ints(sel)
		for h := 0; h < d.H; h++ {
			if len(sel) == 0 {
				lse[t*d.H+h] = math.Inf(-1)
				continue
			}
			qnh := qn[(t*d.H+h)*d.DC : (t*d.H+h+1)*d.DC]
			qph := qp[(t*d.H+h)*d.DR : (t*d.H+h+1)*d.DR]
			x := make([]float64, len(sel))
			m := math.Inf(-1)
			for i, s := range sel {
				var dn, dp float64
				for e := 0; e < d.DC; e++ {
					dn += float64(float64(qnh[e]) * float64(ckv[s*d.DC+e]))
				}
				for e := 0; e < d.DR; e++ {
					dp += float64(float64(qph[e]) * float64(kpe[s*d.DR+e]))
				}
				x[i] = float64(scale * (dn + dp))
				m = math.Max(m, x[i])
			}
			var den float64
			for i := range x {
				x[i] = detmath.Exp(x[i] - m)
				den += x[i]
			}
			for e := 0; e < d.DC; e++ {
				var acc float64
				for i, s := range sel {
					acc += float64(x[i] * float64(ckv[s*d.DC+e]))
				}
				out[(t*d.H+h)*d.DC+e] = acc / den
			}
			lse[t*d.H+h] = m + detmath.Log(den)
		}
	}
	return
}
