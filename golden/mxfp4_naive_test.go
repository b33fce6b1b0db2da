package golden_test

// Naive twins of the MXFP4 kernels, written from ops.md §9's text alone:
// float64 loops, exact big.Float distances, brute-force searches over the
// 16 E2M1 codes and the 254 finite e4m3 bytes. They share no code with
// golden or internal/dtype.

import (
	"math"
	"math/big"
	"sort"

	"github.com/goldset/goldset/golden"
	"github.com/goldset/goldset/internal/detmath"
	"github.com/goldset/goldset/npy"
)

// handE2M1 is the OCP E2M1 table written out by hand, -0 included.
var handE2M1 = [16]float64{0, 0.5, 1, 1.5, 2, 3, 4, 6, math.Copysign(0, -1), -0.5, -1, -1.5, -2, -3, -4, -6}

// naiveScaleExp is §9a's exponent by search over e (not by bits).
func naiveScaleExp(amax float64, mode golden.ScaleMode) (byteVal uint8) {
	if amax == 0 {
		return 0
	}
	var e int
	largestPow := func() int { // largest E with 2^E <= amax
		for E := 200; E > -200; E-- {
			if math.Ldexp(1, E) <= amax {
				return E
			}
		}
		panic("unreachable")
	}
	switch mode {
	case golden.ScaleRceil:
		for e = -200; math.Ldexp(6, e) < amax; e++ {
		}
	case golden.ScaleFloor:
		e = largestPow() - 2
	case golden.ScaleCeil:
		c := -200
		for math.Ldexp(1, c) < amax {
			c++
		}
		e = c - 2
	case golden.ScaleEven:
		E := largestPow()
		if amax >= math.Ldexp(1.75, E) {
			E++
		}
		e = E - 2
	}
	return uint8(min(max(e+127, 0), 254))
}

var bigPrec uint = 600

// nearestCode is the E2M1 code nearest to x*2^(127-b) by exact distance,
// ties to the even code, keeping x's sign.
func nearestCode(x float64, b uint8) uint8 {
	if x == 0 { // +-0 is code 0 or 8 under any scale
		if math.Signbit(x) {
			return 8
		}
		return 0
	}
	s := math.Ldexp(1, int(b)-127)
	ax := new(big.Float).SetPrec(bigPrec).SetFloat64(math.Abs(x))
	best, bestD := -1, new(big.Float)
	for c := range 8 {
		v := new(big.Float).SetPrec(bigPrec).SetFloat64(handE2M1[c] * s)
		d := new(big.Float).SetPrec(bigPrec).Sub(ax, v)
		d.Abs(d)
		if best < 0 || d.Cmp(bestD) < 0 || (d.Cmp(bestD) == 0 && c%2 == 0) {
			best, bestD = c, d
		}
	}
	if math.Signbit(x) {
		best |= 8
	}
	return uint8(best)
}

// naiveQuantize is §9a on float64 values of x [rows, k].
func naiveQuantize(x []float64, rows, k int, mode golden.ScaleMode) (codes, scales []uint8) {
	codes = make([]uint8, rows*k/2)
	scales = make([]uint8, rows*k/32)
	for blk := range scales {
		amax := 0.0
		for _, v := range x[blk*32 : (blk+1)*32] {
			amax = math.Max(amax, math.Abs(v))
		}
		b := naiveScaleExp(amax, mode)
		scales[blk] = b
		for i, v := range x[blk*32 : (blk+1)*32] {
			c := nearestCode(v, b)
			j := blk*32 + i
			if j%2 == 0 {
				codes[j/2] |= c
			} else {
				codes[j/2] |= c << 4
			}
		}
	}
	return
}

// naiveScale is the E8M0 value of b from a decimal-free hex float literal.
func naiveScale(b uint8) float64 {
	if b == 255 {
		return math.NaN()
	}
	// 2^(b-127) by repeated doubling/halving from 1.
	v := 1.0
	for i := 127; i < int(b); i++ {
		v *= 2
	}
	for i := int(b); i < 127; i++ {
		v /= 2
	}
	return v
}

func naiveCode(codes []uint8, i int) uint8 {
	if i%2 == 0 {
		return codes[i/2] & 15
	}
	return codes[i/2] >> 4
}

// naiveDequant is §9b in float64 (exact; NaN for byte 255).
func naiveDequant(codes, scales []uint8, rows, k int) []float64 {
	out := make([]float64, rows*k)
	for i := range out {
		out[i] = handE2M1[naiveCode(codes, i)] * naiveScale(scales[i/32])
	}
	return out
}

// naiveF32 is v in float32 with overflow to +-Inf (v exact otherwise).
func naiveF32(v float64) float32 {
	if v > math.MaxFloat32 {
		return float32(math.Inf(1))
	}
	if v < -math.MaxFloat32 {
		return float32(math.Inf(-1))
	}
	return float32(v)
}

// e4m3Table lists the finite float8_e4m3fn values by byte (NaN for 0x7F, 0xFF).
var e4m3Table = func() (t [256]float64) {
	for b := range 256 {
		e, m := (b>>3)&15, b&7
		var v float64
		switch {
		case b&0x7f == 0x7f:
			v = math.NaN()
		case e == 0:
			v = float64(m) / 512
		default:
			v = float64(8+m) / 8 * math.Pow(2, float64(e-7))
		}
		if b&0x80 != 0 {
			v = -v
		}
		t[b] = v
	}
	return
}()

// naiveE4M3 is the nearest finite e4m3 byte by exact distance, ties to the
// even byte, saturating, sign kept.
func naiveE4M3(x float64) uint8 {
	if math.IsNaN(x) {
		return 0x7f
	}
	ax := new(big.Float).SetPrec(bigPrec).SetFloat64(math.Min(math.Abs(x), 448))
	best, bestD := -1, new(big.Float)
	for b := range 0x7f {
		v := new(big.Float).SetPrec(bigPrec).SetFloat64(e4m3Table[b])
		d := new(big.Float).SetPrec(bigPrec).Sub(ax, v)
		d.Abs(d)
		if best < 0 || d.Cmp(bestD) < 0 || (d.Cmp(bestD) == 0 && b%2 == 0) {
			best, bestD = b, d
		}
	}
	if math.Signbit(x) {
		best |= 0x80
	}
	return uint8(best)
}

// naiveFold is §9c fold_group.
func naiveFold(codes, scales []uint8, rows, k, g int) (fp8, gs []uint8, gsf []float32, inexact []bool) {
	nb := k / 32
	ng := (nb + g - 1) / g
	fp8 = make([]uint8, rows*k)
	gs, gsf, inexact = make([]uint8, rows*ng), make([]float32, rows*ng), make([]bool, rows*ng)
	for r := range rows {
		for gi := range ng {
			lo, hi := gi*g, min(nb, gi*g+g)
			hasNaN, emax, any := false, 0, false
			nonzero := func(blk int) bool {
				for i := range 32 {
					if naiveCode(codes, (r*nb+blk)*32+i)&7 != 0 {
						return true
					}
				}
				return false
			}
			for blk := lo; blk < hi; blk++ {
				b := int(scales[r*nb+blk])
				hasNaN = hasNaN || b == 255
				if nonzero(blk) && (!any || b-127 > emax) {
					emax, any = b-127, true
				}
			}
			o := r*ng + gi
			if hasNaN {
				gs[o], gsf[o] = 255, float32(math.NaN())
				for i := lo * 32; i < hi*32; i++ {
					fp8[r*k+i] = 0x7f | naiveCode(codes, r*k+i)<<4&0x80
				}
				continue
			}
			S := 0
			if any {
				S = emax - 6
			}
			if S < -127 {
				S = -127
			}
			gs[o], gsf[o] = uint8(S+127), float32(math.Pow(2, float64(S)))
			for blk := lo; blk < hi; blk++ {
				eb := int(scales[r*nb+blk]) - 127
				if nonzero(blk) && eb-S < -8 {
					inexact[o] = true
				}
				for i := blk * 32; i < blk*32+32; i++ {
					fp8[r*k+i] = naiveE4M3(handE2M1[naiveCode(codes, r*k+i)] * math.Pow(2, float64(eb-S)))
				}
			}
		}
	}
	return
}

// naiveGEMM is y = x @ w^T with float64 sums in ascending k from 0, and S.
func naiveGEMM(x, w []float64, m, n, k int) (y, s []float64) {
	y, s = make([]float64, m*n), make([]float64, m*n)
	for i := range m {
		for j := range n {
			var acc, bound float64
			for p := range k {
				acc += float64(x[i*k+p] * w[j*k+p])
				bound += math.Abs(float64(x[i*k+p] * w[j*k+p]))
			}
			y[i*n+j], s[i*n+j] = acc, bound
		}
	}
	return
}

func bf16Values(x []uint16) []float64 {
	out := make([]float64, len(x))
	for i, h := range x {
		out[i] = npy.BF16ToF64(h)
	}
	return out
}

// naivePerToken is DeepGEMM's per_token_cast_to_fp8(use_ue8m0=True) by search.
func naivePerToken(x []float64, m, k int) (fp8, scales []uint8) {
	ng := (k + 127) / 128
	fp8, scales = make([]uint8, m*k), make([]uint8, m*ng)
	for r := range m {
		for gi := range ng {
			amax := float64(float32(1e-4))
			for c := gi * 128; c < min(k, gi*128+128); c++ {
				amax = math.Max(amax, math.Abs(x[r*k+c]))
			}
			e := -200
			for 448*math.Pow(2, float64(e)) < amax {
				e++
			}
			b := min(max(e+127, 1), 254)
			scales[r*ng+gi] = uint8(b)
			for c := gi * 128; c < min(k, gi*128+128); c++ {
				fp8[r*k+c] = naiveE4M3(x[r*k+c] / math.Pow(2, float64(b-127)))
			}
		}
	}
	return
}

// naiveMoE is §9e token by token.
func naiveMoE(x []uint16, logits []float32, w golden.MoEWeights, d golden.MoEDims) (out []float64, counts []int64) {
	out, _, counts = naiveMoEWithBound(x, logits, w, d)
	return out, counts
}

// naiveMoEWithBound is naiveMoE plus the bound of §9e: bound = sum_j w_j *
// (sum_i |a_i*w2[c,i]| + |b2[c]|).
func naiveMoEWithBound(x []uint16, logits []float32, w golden.MoEWeights, d golden.MoEDims) (out, bound []float64, counts []int64) {
	out, bound, counts = make([]float64, d.T*d.Hd), make([]float64, d.T*d.Hd), make([]int64, d.E)
	w1 := naiveDequant(w.W1Codes, w.W1Scales, d.E*2*d.I, d.Hd)
	w2 := naiveDequant(w.W2Codes, w.W2Scales, d.E*d.Hd, d.I)
	for t := range d.T {
		idx := make([]int, d.E)
		for i := range idx {
			idx[i] = i
		}
		row := logits[t*d.E : (t+1)*d.E]
		sort.SliceStable(idx, func(a, b int) bool { return row[idx[a]] > row[idx[b]] })
		sel := idx[:d.TopK]
		ex := make([]float64, d.TopK)
		var sum float64
		for j, e := range sel {
			ex[j] = detmath.Exp(float64(row[e]) - float64(row[sel[0]]))
			sum += ex[j]
		}
		xt := bf16Values(x[t*d.Hd : (t+1)*d.Hd])
		acc := make([]float64, d.Hd)
		for j, e := range sel {
			counts[e]++
			h := make([]float64, 2*d.I)
			for r := range 2 * d.I {
				var s float64
				for c := range d.Hd {
					s += float64(xt[c] * w1[(e*2*d.I+r)*d.Hd+c])
				}
				h[r] = s + npy.BF16ToF64(w.B1[e*2*d.I+r])
			}
			a := make([]float64, d.I)
			for i := range d.I {
				glu, lin := math.Min(h[2*i], 7), math.Max(math.Min(h[2*i+1], 7), -7)
				sigmoid := 1 / (1 + detmath.Exp(-float64(1.702*glu)))
				a[i] = float64(float64(glu*sigmoid) * (lin + 1))
				if d.RoundAct {
					a[i] = roundBF16(a[i])
				}
			}
			wt := ex[j] / sum
			for c := range d.Hd {
				var s, sa float64
				for i := range d.I {
					s += float64(a[i] * w2[(e*d.Hd+c)*d.I+i])
					sa += math.Abs(a[i] * w2[(e*d.Hd+c)*d.I+i])
				}
				acc[c] += float64(wt * (s + npy.BF16ToF64(w.B2[e*d.Hd+c])))
				bound[t*d.Hd+c] += wt * (sa + math.Abs(npy.BF16ToF64(w.B2[e*d.Hd+c])))
			}
		}
		copy(out[t*d.Hd:], acc)
	}
	return
}

// roundBF16 rounds x to bfloat16 (8 significant bits, ties to even) with
// math/big, independently of npy's bit arithmetic; below 2^-126 onto the
// subnormal grid of 2^-133. Finite x only.
func roundBF16(x float64) float64 {
	if math.Abs(x) < 0x1p-126 {
		return math.RoundToEven(x*0x1p133) * 0x1p-133
	}
	f, _ := new(big.Float).SetPrec(8).SetMode(big.ToNearestEven).SetFloat64(x).Float64()
	return f
}
