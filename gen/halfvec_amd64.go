//go:build !purego

package gen

import (
	"math/bits"
	"unsafe"

	"golang.org/x/sys/cpu"
)

//go:noescape
func chunkHalfAVX512(state uint64, dst *uint16, scale float64, c *halfVecConsts, ws *[2 * zigN]float64, kc *[zigN]byte, rej, slow *rejectMask)

// halfVecConsts is the constant block chunkHalfAVX512 reads (offsets fixed
// by the assembly).
type halfVecConsts struct {
	incs  [8]uint64 // (i+1)*wyInc: the first iteration's lanes
	inc8  uint64
	xor   uint64
	lo    uint64
	span  uint64
	half  uint64 // 1<<(shift-1) - 1 - bias: half an ulp less one, rebiased
	bias  uint64
	shift uint64
	lsb   uint64 // 1<<shift: the lowest kept bit
}

var f16Vec, bf16Vec = newHalfVecConsts(f16Lo, f16Hi, 42, (1023-15)<<52), newHalfVecConsts(bf16Lo, bf16Hi, 45, (1023-127)<<52)

func newHalfVecConsts(lo, hi, shift, bias uint64) *halfVecConsts {
	inc := uint64(wyInc)
	c := &halfVecConsts{inc8: 8 * inc, xor: wyXor, lo: lo, span: hi - lo, half: 1<<(shift-1) - 1 - bias, bias: bias, shift: shift, lsb: 1 << shift}
	for i := range c.incs {
		c.incs[i] = uint64(i+1) * inc
	}
	return c
}

// useAVX512 selects chunkHalfAVX512 (TestChunkHalfVecMatchesScalar compares
// it with chunkNormals and f16s/bf16s). Its threshold lookup permutes bytes
// (VPERMT2B: AVX512-VBMI; VPMOVB2M, VMOVDQU8: AVX512-BW).
var useAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VBMI

func init() {
	if unsafe.Offsetof(halfVecConsts{}.shift) != 112 || unsafe.Offsetof(halfVecConsts{}.lsb) != 120 {
		panic("gen: halfVecConsts layout does not match the assembly")
	}
}

// chunkHalfVec fills one whole chunk of half bits with the AVX-512 kernel
// and finishes its rejected and out-of-range elements in Go; ok is false
// where the kernel is not available.
func chunkHalfVec(state uint64, dst []uint16, scale float64, bf bool) bool {
	if !useAVX512 {
		return false
	}
	dst = dst[:ChunkElems]
	c := f16Vec
	if bf {
		c = bf16Vec
	}
	var rej, slow rejectMask
	chunkHalfAVX512(state, &dst[0], scale, c, &zigWS, &zigKc, &rej, &slow)
	if rej == (rejectMask{}) && slow == (rejectMask{}) {
		return true
	}
	o := wyrand{s: overflowState(state)}
	for i := range rej { // set bits only, ascending: finish draws in k order
		for m := rej[i] | slow[i]; m != 0; m &= m - 1 {
			k := i*64 + bits.TrailingZeros64(m)
			r := primary(state, k)
			x, ok := candidate(r)
			if rej.has(k) {
				if !ok { // rejected: overflow draws
					dst[k] = halfBits(float64(finishRejected(&o, r, x)*scale), bf)
					continue
				}
				if !slow.has(k) { // a tie, accepted: the kernel's bits stand
					continue
				}
			}
			dst[k] = halfBits(float64(x*scale), bf)
		}
	}
	return true
}

// halfBits rounds x to bfloat16 (bf) or float16 bits.
func halfBits(x float64, bf bool) uint16 {
	if bf {
		return bf16(x)
	}
	return f16(x)
}
