//go:build !purego

package golden

import "golang.org/x/sys/cpu"

// hasDSAVec selects the AVX-512 kernels of dsa_amd64.s (tests turn it off
// to get the Go twins).
var hasDSAVec = cpu.X86.HasAVX512F

//go:noescape
func dsaE4M3CodesAVX512(codes *uint8, x *float32, n int, sc float32)

//go:noescape
func dsaHeadSumsAVX512(sums, abs, wf, wa *float64, hi int, dots *float64, cn, n int)

// dsaE4M3CodesVec writes the codes of x's first len(x)&^15 elements as
// dsaQuantizeRow's loop does and returns that count (0 without the kernel).
func dsaE4M3CodesVec(codes []uint8, x []float32, sc float32) int {
	n := len(x) &^ 15
	if !hasDSAVec || n == 0 {
		return 0
	}
	_ = codes[n-1]
	dsaE4M3CodesAVX512(&codes[0], &x[0], n, sc)
	return n
}

// dsaHeadSumsVec does dsaHeadSums' sums for the first cn&^31 keys and
// returns that count (0 without the kernel).
func dsaHeadSumsVec(sums, abs, wf, wa, dots []float64, cn int) int {
	n := cn &^ 31
	hi := len(wf)
	if !hasDSAVec || n == 0 || hi == 0 {
		return 0
	}
	_, _, _ = sums[n-1], abs[n-1], wa[hi-1]
	_ = dots[(hi-1)*cn+n-1]
	dsaHeadSumsAVX512(&sums[0], &abs[0], &wf[0], &wa[0], hi, &dots[0], cn, n)
	return n
}

// dsaAbsMaxBitsVec is dsaAbsMaxBits over row's first len(row)&^31
// elements, by the MXFP4 quantizer's scan; it returns the count done.
func dsaAbsMaxBitsVec(row []float32) (uint32, int) {
	n := len(row) &^ 31
	if !hasMXVec || n == 0 {
		return 0, 0
	}
	return mxMaxAbsAVX512(&f32Bits(row)[0], n), n
}
