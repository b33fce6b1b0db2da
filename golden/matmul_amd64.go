//go:build !purego

package golden

import "golang.org/x/sys/cpu"

//go:noescape
func matmulTile4x16(dst *float64, ldd int, a *float64, lda int, b *float64, k int)

// hasMatmulTile selects the AVX-512 tile kernel (tests turn it off).
var hasMatmulTile = cpu.X86.HasAVX512F

// tile4x16 runs the kernel on dst rows i..i+3, columns j..j+15.
func tile4x16(dst []float64, ldd int, a []float64, lda int, b []float64, k int) {
	checkTile(4, dst, ldd, a, lda, b, k)
	matmulTile4x16(&dst[0], ldd, &a[0], lda, &b[0], k)
}

//go:noescape
func matmulTile4x16FMA(dst *float64, ldd int, a *float64, lda int, b *float64, k int)

// tile4x16FMA is tile4x16 with fused multiply-adds: only for products
// that are exact in float64 (float32 values; the same bits then).
func tile4x16FMA(dst []float64, ldd int, a []float64, lda int, b []float64, k int) {
	checkTile(4, dst, ldd, a, lda, b, k)
	matmulTile4x16FMA(&dst[0], ldd, &a[0], lda, &b[0], k)
}

//go:noescape
func matmulTile8x16FMA(dst *float64, ldd int, a *float64, lda int, b *float64, k int)

// tile8x16FMA is tile4x16FMA over eight rows (the same bits, rows 0-3 and
// 4-7 being two 4-row tiles' sums).
func tile8x16FMA(dst []float64, ldd int, a []float64, lda int, b []float64, k int) {
	checkTile(8, dst, ldd, a, lda, b, k)
	matmulTile8x16FMA(&dst[0], ldd, &a[0], lda, &b[0], k)
}

// checkTile bounds-checks a tile kernel's operands (rows rows of dst and
// a, a packed panel of k steps) before the assembly reads them.
func checkTile(rows int, dst []float64, ldd int, a []float64, lda int, b []float64, k int) {
	_ = dst[(rows-1)*ldd+15]
	_ = a[(rows-1)*lda+k-1]
	_ = b[16*k-1]
}
