//go:build !purego

package golden

import "golang.org/x/sys/cpu"

//go:noescape
func mxAmaxAVX512(amax *uint32, x *uint32, nblk int)

//go:noescape
func mxAmaxBF16AVX512(amax *uint32, x *uint16, nblk int)

//go:noescape
func mxCodesAVX512(codes *uint8, x *uint32, scales *uint8, thr *uint32, nblk int)

//go:noescape
func mxCodesBF16AVX512(codes *uint8, x *uint16, scales *uint8, thr *uint32, nblk int)

//go:noescape
func mxMaxAbsAVX512(x *uint32, n int) uint32

//go:noescape
func mxMaxAbsBF16AVX512(x *uint16, n int) uint16

// hasMXVec selects the AVX-512 quantizer (TestMXFP4QuantizeVecMatchesGo
// checks it against the Go loops bit for bit).
var hasMXVec = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL

// mxThr32 is e2m1Thr as dwords, eight per scale byte (the eighth unused).
var mxThr32 = func() (t [256 * 8]uint32) {
	for b, g := range e2m1Thr {
		for i, v := range g {
			t[8*b+i] = uint32(v)
		}
	}
	return
}()

// quantizeUnitVec is quantizeUnit with the AVX-512 kernels: the block
// maxima, then the scale bytes in Go, then the codes.
func quantizeUnitVec(codes, scales []uint8, xf []uint32, xh []uint16, amax []uint32, mode ScaleMode) {
	n := len(scales)
	if n == 0 {
		return
	}
	amax = amax[:n]
	if xf != nil {
		_ = xf[n*MXBlock-1]
		mxAmaxAVX512(&amax[0], &xf[0], n)
	} else {
		_ = xh[n*MXBlock-1]
		mxAmaxBF16AVX512(&amax[0], &xh[0], n)
	}
	for i, a := range amax {
		scales[i] = MXScaleByte(a, mode)
	}
	_ = codes[n*MXBlock/2-1]
	if xf != nil {
		mxCodesAVX512(&codes[0], &xf[0], &scales[0], &mxThr32[0], n)
	} else {
		mxCodesBF16AVX512(&codes[0], &xh[0], &scales[0], &mxThr32[0], n)
	}
}

// hasNonFinite32 reports whether the float32 bits hold a NaN or Inf
// (len a multiple of 32).
func hasNonFinite32(xb []uint32) bool {
	if !hasMXVec || len(xb) == 0 {
		return firstNonFinite32(xb) >= 0
	}
	return mxMaxAbsAVX512(&xb[0], len(xb)) >= 0x7f800000
}

// hasNonFiniteBF16 is hasNonFinite32 for bfloat16 bits.
func hasNonFiniteBF16(xh []uint16) bool {
	if !hasMXVec || len(xh) == 0 {
		return firstNonFiniteBF16(xh) >= 0
	}
	return mxMaxAbsBF16AVX512(&xh[0], len(xh)) >= 0x7f80
}
