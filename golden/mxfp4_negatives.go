package golden

import (
	"math"

	"github.com/goldset/goldset/internal/dtype"
	"github.com/goldset/goldset/npy"
)

// Negative controls of ops.md §9: each is a plausible broken MXFP4 kernel
// with the signature of the golden it imitates, so the judge can be shown
// to reject it. Each differs from the golden on the inputs of
// TestMXFP4NegativesDiffer.

// MXFP4QuantizeSwappedNibbles is MXFP4Quantize with element 2i in the high
// nibble and 2i+1 in the low one.
func MXFP4QuantizeSwappedNibbles(codes, scales []uint8, x []float32, rows, k int, mode ScaleMode) error {
	if err := MXFP4Quantize(codes, scales, x, rows, k, mode); err != nil {
		return err
	}
	for i, p := range codes {
		codes[i] = p<<4 | p>>4
	}
	return nil
}

// MXFP4QuantizeFloorForRceil ignores the requested rceil and emits the
// floor mode's scales and codes.
func MXFP4QuantizeFloorForRceil(codes, scales []uint8, x []float32, rows, k int) error {
	return MXFP4Quantize(codes, scales, x, rows, k, ScaleFloor)
}

// MXFP4QuantizeHalfAway rounds elements to nearest with ties away from
// zero (0.25 -> 0.5, 1.25 -> 1.5, 2.5 -> 3, 5 -> 6) instead of to the even code.
func MXFP4QuantizeHalfAway(codes, scales []uint8, x []float32, rows, k int, mode ScaleMode) error {
	return quantizeTies(codes, scales, x, rows, k, mode, true)
}

// MXFP4QuantizeHalfDown rounds elements to nearest with ties toward zero
// (0.75 -> 0.5, 1.75 -> 1.5, 3.5 -> 3), as DeepGEMM's torch.bucketize
// reference (deep_gemm/utils/math.py _quantize_to_fp4_e2m1) does.
func MXFP4QuantizeHalfDown(codes, scales []uint8, x []float32, rows, k int, mode ScaleMode) error {
	return quantizeTies(codes, scales, x, rows, k, mode, false)
}

func quantizeTies(codes, scales []uint8, x []float32, rows, k int, mode ScaleMode, up bool) error {
	if err := MXFP4Quantize(codes, scales, x, rows, k, mode); err != nil {
		return err
	}
	mids := [7]float64{0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5}
	for i, v := range x {
		m := math.Ldexp(math.Abs(float64(v)), 127-int(scales[i/MXBlock]))
		for c, mid := range mids {
			if m != mid {
				continue
			}
			code := uint8(c)
			if up {
				code++
			}
			code |= uint8(math.Float32bits(v)>>28) & 8
			sh := 4 * uint(i%2)
			codes[i/2] = codes[i/2]&^(15<<sh) | code<<sh
		}
	}
	return nil
}

// MXFP4QuantizeNoNegZero folds code 8 (-0) to code 0 (judged under strict).
func MXFP4QuantizeNoNegZero(codes, scales []uint8, x []float32, rows, k int, mode ScaleMode) error {
	if err := MXFP4Quantize(codes, scales, x, rows, k, mode); err != nil {
		return err
	}
	FoldNegZero(codes, codes)
	return nil
}

// FoldNegZero writes src's E2M1 pairs to dst with every -0 (code 8) turned
// into +0 (code 0): the "-0 folded" negative control. dst may be src.
func FoldNegZero(dst, src []uint8) {
	for i, p := range src[:len(dst)] {
		if p&15 == 8 {
			p &^= 15
		}
		if p>>4 == 8 {
			p &= 15
		}
		dst[i] = p
	}
}

// MXFP4QuantizeScalePer16 uses blocks of 16 (NVFP4's size) with E8M0
// scales: scales16 is [rows, k/16].
func MXFP4QuantizeScalePer16(codes, scales16 []uint8, x []float32, rows, k int, mode ScaleMode) error {
	if err := checkMXDims(rows, k); err != nil {
		return err
	}
	if len(x) != rows*k {
		panic(badLenX)
	}
	if len(codes) != rows*k/2 || len(scales16) != rows*k/16 {
		panic(badLenCodes)
	}
	xb := f32Bits(x)
	if i := firstNonFinite32(xb); i >= 0 {
		return ErrNonFinite
	}
	for blk := range scales16 {
		var amax uint32
		for _, v := range xb[blk*16 : (blk+1)*16] {
			amax = max(amax, v&0x7fffffff)
		}
		b := MXScaleByte(amax, mode)
		scales16[blk] = b
		g := &e2m1Thr[b]
		for i := range 8 {
			codes[blk*8+i] = e2m1Code(xb[blk*16+2*i], g) | e2m1Code(xb[blk*16+2*i+1], g)<<4
		}
	}
	return nil
}

// MXFP4DequantizeBias128 reads scale byte b as 2^(b-128) (bias off by one).
func MXFP4DequantizeBias128(dst []float32, codes, scales []uint8, rows, k int) error {
	return dequantizeWith(dst, codes, scales, rows, k, func(r, j int) float64 {
		return math.Ldexp(1, int(scales[r*(k/MXBlock)+j])-128)
	})
}

// MXFP4DequantizeScalesTransposed reads the scale of row r, block j from
// scales[j*rows + r], as if they were stored [k/32, rows].
func MXFP4DequantizeScalesTransposed(dst []float32, codes, scales []uint8, rows, k int) error {
	return dequantizeWith(dst, codes, scales, rows, k, func(r, j int) float64 {
		return math.Ldexp(1, int(scales[j*rows+r])-127)
	})
}

// MXFP4DequantizeScaleAsE4M3 reads each E8M0 scale byte as a
// float8_e4m3fn value.
func MXFP4DequantizeScaleAsE4M3(dst []float32, codes, scales []uint8, rows, k int) error {
	return dequantizeWith(dst, codes, scales, rows, k, func(r, j int) float64 {
		return dtype.E4M3ToF64(scales[r*(k/MXBlock)+j])
	})
}

func dequantizeWith(dst []float32, codes, scales []uint8, rows, k int, scale func(r, j int) float64) error {
	if err := checkMXDims(rows, k); err != nil {
		return err
	}
	if len(dst) != rows*k {
		panic(badLenDst)
	}
	checkMXLens(codes, scales, rows, k)
	for i := range dst {
		r, c := i/k, i%k
		code := codes[i/2] >> (4 * uint(i%2)) & 15
		dst[i] = f32OrInf(dtype.E2M1ToF64(code) * scale(r, c/MXBlock))
	}
	return nil
}

// MXFP4FoldGroupOffset7 is MXFP4FoldGroup placing the group's largest
// block at 2^7 instead of 2^6 (S = max e_b - 7) without regrouping to keep
// 6*2^7 = 768 inside e4m3: codes 4 and 6 of that block saturate to 448.
func MXFP4FoldGroupOffset7(fp8, groupScale []uint8, groupScaleF32 []float32, inexact []bool, codes, scales []uint8, rows, k, g int) (int, error) {
	return foldGroup(fp8, groupScale, groupScaleF32, inexact, codes, scales, rows, k, g, 7)
}

// MXFP4GEMMBF16Acc is MXFP4GEMM with y accumulated in bfloat16: every
// partial sum rounded to bf16 (s is the golden's bound).
func MXFP4GEMMBF16Acc(y, s []float64, x []uint16, codes, scales []uint8, m, n, k int) error {
	if err := MXFP4GEMM(y, s, x, codes, scales, m, n, k); err != nil {
		return err
	}
	wf := make([]float32, n*k)
	if err := MXFP4Dequantize(wf, codes, scales, n, k); err != nil {
		return err
	}
	for i := range m {
		for j := range n {
			var acc float64
			for p := range k {
				acc = npy.BF16ToF64(npy.BF16FromF64(acc + float64(npy.BF16ToF64(x[i*k+p])*float64(wf[j*k+p]))))
			}
			y[i*n+j] = acc
		}
	}
	return nil
}
