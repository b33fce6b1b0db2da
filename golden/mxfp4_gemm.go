package golden

import (
	"fmt"
	"math"

	"github.com/goldset/goldset/internal/dtype"
	"github.com/goldset/goldset/npy"
)

// MXFP4GEMM computes y = x @ W^T (ops.md §9d) for x [m, k] bfloat16 bits
// and W [n, k] in MXFP4 (codes [n, k/2], scales [n, k/32]): y [m, n] and
// the bound s [m, n] (nil to skip) are float64 sums over ascending k of
// float64(x*w) and |float64(x*w)|, w = E2M1[c]*2^(b-127). Both factors are
// exact float32s, so each product is exact and the only rounding is that
// of the sequential additions (the caller rounds y once to bf16 and stores
// float32 truth and s as aux). Scale bytes above 252 follow §9b (+-Inf,
// NaN), and propagate.
func MXFP4GEMM(y, s []float64, x []uint16, codes, scales []uint8, m, n, k int) error {
	if err := checkGEMM(y, s, m, n, k); err != nil {
		return err
	}
	if len(x) != m*k {
		panic(badLenX)
	}
	xf := make([]float32, m*k)
	npy.BF16sToF32s(xf, x)
	return gemmDecoded(y, s, xf, codes, scales, m, n, k)
}

// MXFP4GEMMA4W4 is MXFP4GEMM with x in MXFP4 too (variant a4w4): xCodes
// [m, k/2] and xScales [m, k/32], typically MXFP4QuantizeBF16 of the bf16
// activations with the case's scale mode.
func MXFP4GEMMA4W4(y, s []float64, xCodes, xScales, codes, scales []uint8, m, n, k int) error {
	if err := checkGEMM(y, s, m, n, k); err != nil {
		return err
	}
	checkMXLens(xCodes, xScales, m, k)
	xf := make([]float32, m*k)
	if err := MXFP4Dequantize(xf, xCodes, xScales, m, k); err != nil {
		return err
	}
	return gemmDecoded(y, s, xf, codes, scales, m, n, k)
}

// MXFP4GEMMW4A8 is MXFP4GEMM with x in float8_e4m3fn (variant w4a8):
// xFP8 [m, k] and one E8M0 byte per token per 128 (xScales [m,
// ceil(k/128)], FP8QuantizePerToken's output); x = e4m3(q)*2^(b-127).
func MXFP4GEMMW4A8(y, s []float64, xFP8, xScales, codes, scales []uint8, m, n, k int) error {
	if err := checkGEMM(y, s, m, n, k); err != nil {
		return err
	}
	ng := (k + FP8Group - 1) / FP8Group
	if len(xFP8) != m*k {
		panic(badLenX)
	}
	if len(xScales) != m*ng {
		panic(badLenScales)
	}
	xf := make([]float32, m*k)
	for i, q := range xFP8 {
		r, c := i/k, i%k
		xf[i] = f32OrInf(math.Ldexp(dtype.E4M3ToF64(q), int(xScales[r*ng+c/FP8Group])-127)) // <= 4 significant bits: exact
		if xScales[r*ng+c/FP8Group] == 255 {
			xf[i] = float32(math.NaN())
		}
	}
	return gemmDecoded(y, s, xf, codes, scales, m, n, k)
}

func checkGEMM(y, s []float64, m, n, k int) error {
	if m < 0 || n < 0 {
		return fmt.Errorf("golden: mxfp4 gemm m=%d n=%d: negative size: %w", m, n, ErrInvalidParams)
	}
	if err := checkMXDims(n, k); err != nil {
		return err
	}
	if len(y) != m*n {
		panic(badLenDst)
	}
	if s != nil && len(s) != m*n {
		panic(badLenS)
	}
	return nil
}

// gemmDecoded decodes W to float32 and runs Matmul (its sums are float64
// over ascending k with exact products: the definition above); S is the
// same Matmul over the magnitudes, sign bits cleared in place. On the
// vector tiles W is decoded straight into Matmul's panels and S comes
// from the same panels (tilePanels): the same sums.
func gemmDecoded(y, s []float64, xf []float32, codes, scales []uint8, m, n, k int) error {
	checkMXLens(codes, scales, n, k)
	if useTiles(m, k, n) {
		tilePanels(y, s, xf, m, k, n, packMXFP4(codes, scales, k))
		return nil
	}
	wf := make([]float32, n*k)
	if err := MXFP4Dequantize(wf, codes, scales, n, k); err != nil {
		return err
	}
	Matmul(y, xf, wf, m, k, n, true)
	if s != nil {
		for _, v := range [][]uint32{f32Bits(xf), f32Bits(wf)} {
			for i := range v {
				v[i] &= 0x7fffffff
			}
		}
		Matmul(s, xf, wf, m, k, n, true)
	}
	return nil
}
