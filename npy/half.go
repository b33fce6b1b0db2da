package npy

import (
	"math"
	"sync"
	"unsafe"
)

// Half-precision conversions. Every narrowing conversion rounds to nearest,
// ties to even, exactly once: float64 -> float16 and float64 -> bfloat16 do
// not pass through float32 (that would round twice). Overflow goes to
// +-Inf, fp16 and bf16 subnormals are produced, NaN stays NaN (quiet, sign
// and top payload bits kept). Widening conversions are exact and keep NaN
// payloads bit for bit.
//
// The narrowing conversions are integer bit manipulation on the IEEE
// encoding: for a normal result, rebias the exponent, add half an ulp minus
// one plus the lowest kept mantissa bit (round half to even; a carry out of
// the mantissa correctly bumps the exponent) and shift. A subnormal result is
// produced by one float addition of a power of two whose ulp is the target's
// subnormal unit: IEEE addition rounds to nearest even exactly once, and the
// integer difference of the encodings is the subnormal mantissa. Every step
// is exact IEEE arithmetic, so results are identical on every architecture.

const (
	f64Abs  = 1<<63 - 1
	f64Inf  = 0x7ff0000000000000
	f32Abs  = 1<<31 - 1
	f32Inf  = 0x7f800000
	f16Inf  = 0x7c00
	f16QNaN = 0x7e00
	bf16Inf = 0x7f80
)

// F16FromF64 rounds x to the nearest float16 (ties to even) and returns its bits.
func F16FromF64(x float64) uint16 {
	b := math.Float64bits(x)
	a := b & f64Abs
	n := a - (1023-15)<<52
	r := (n + 1<<41 - 1 + (n>>42)&1) >> 42
	// Subnormal: units of 2^-24 = ulp of 2^28. NaN: quiet, top payload kept.
	sub := math.Float64bits(math.Float64frombits(a)+0x1p28) - 0x41b0000000000000
	nan := f16QNaN | (a>>42)&0x1ff
	if a < 0x3f10000000000000 { // below 2^-14
		r = sub
	}
	if a >= 0x40effe0000000000 { // 65520 = halfway between 65504 and 2^16: ties to even is Inf
		r = f16Inf
	}
	if a > f64Inf {
		r = nan
	}
	return uint16(b>>48)&0x8000 | uint16(r)
}

// F16FromF32 rounds x to the nearest float16 (ties to even) and returns its
// bits. It equals F16FromF64(float64(x)) for every x.
func F16FromF32(x float32) uint16 { return f16FromF32Bits(math.Float32bits(x)) }

// f16FromF32Bits computes every candidate result and selects one, which the
// compiler turns into conditional moves: no data-dependent branches.
// F16sFromF32s repeats it by hand, as it exceeds the inlining budget.
func f16FromF32Bits(b uint32) uint16 {
	a := b & f32Abs
	n := a - (127-15)<<23
	r := (n + 1<<12 - 1 + (n>>13)&1) >> 13
	// Subnormal: units of 2^-24 = ulp of 0.5. NaN: quiet, top payload kept.
	sub := math.Float32bits(math.Float32frombits(a)+0.5) - 0x3f000000
	nan := f16QNaN | (a>>13)&0x1ff
	if a < 0x38800000 { // below 2^-14
		r = sub
	}
	if a >= 0x477ff000 { // 65520 = halfway between 65504 and 2^16: ties to even is Inf
		r = f16Inf
	}
	if a > f32Inf {
		r = nan
	}
	return uint16(b>>16)&0x8000 | uint16(r)
}

// F16ToF32 returns the float32 value of the float16 bits h (exact).
func F16ToF32(h uint16) float32 {
	a := uint32(h&0x7fff) << 13
	r := a + (127-15)<<23
	if a >= 0x1f<<23 { // Inf/NaN: exponent all ones, payload kept
		r = a + (255-31)<<23
	}
	// Zero/subnormal: 2^-14 * (1 + m/1024) - 2^-14 = m * 2^-24, exact.
	sub := math.Float32bits(math.Float32frombits(a+113<<23) - 0x1p-14)
	if a < 1<<23 {
		r = sub
	}
	return math.Float32frombits(uint32(h&0x8000)<<16 | r)
}

// F16ToF64 returns the float64 value of the float16 bits h (exact).
func F16ToF64(h uint16) float64 {
	if h&0x7c00 == 0x7c00 && h&0x3ff != 0 { // NaN: keep the payload bits
		return math.Float64frombits(uint64(h&0x8000)<<48 | f64Inf | uint64(h&0x3ff)<<42)
	}
	return float64(F16ToF32(h))
}

// BF16FromF64 rounds x to the nearest bfloat16 (ties to even) and returns its bits.
func BF16FromF64(x float64) uint16 {
	b := math.Float64bits(x)
	a := b & f64Abs
	n := a - (1023-127)<<52
	r := (n + 1<<44 - 1 + (n>>45)&1) >> 45
	sub := math.Float64bits(math.Float64frombits(a)+0x1p-81) - 0x3ae0000000000000 // units of 2^-133 = ulp of 2^-81
	nan := 0x7fc0 | (a>>45)&0x3f
	if a < 0x3810000000000000 { // below 2^-126: subnormal
		r = sub
	}
	if a >= 0x47eff00000000000 { // 0x1.ffp127, halfway between bf16 max and 2^128
		r = bf16Inf
	}
	if a > f64Inf {
		r = nan
	}
	return uint16(b>>48)&0x8000 | uint16(r)
}

// BF16FromF32 rounds x to the nearest bfloat16 (ties to even) and returns its
// bits. bfloat16 is the top half of float32, so rounding works on all finite
// values, subnormals and overflow alike.
func BF16FromF32(x float32) uint16 {
	b := math.Float32bits(x)
	r := uint16((b + 0x7fff + (b>>16)&1) >> 16)
	if b&f32Abs > f32Inf { // NaN: keep sign and top payload, force quiet
		r = uint16(b>>16) | 0x40
	}
	return r
}

// BF16ToF32 returns the float32 value of the bfloat16 bits h (exact).
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// BF16ToF64 returns the float64 value of the bfloat16 bits h (exact).
func BF16ToF64(h uint16) float64 {
	if h&0x7f80 == 0x7f80 && h&0x7f != 0 { // NaN: keep the payload bits
		return math.Float64frombits(uint64(h&0x8000)<<48 | f64Inf | uint64(h&0x7f)<<45)
	}
	return float64(BF16ToF32(h))
}

// f32Bits views float32s as their IEEE bit patterns (what math.Float32bits
// returns, on every architecture), saving a float-to-integer register move
// per element in the bulk loops.
func f32Bits(s []float32) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}

// F16sFromF32s converts src to float16 bits in dst; len(dst) must be >= len(src).
func F16sFromF32s(dst []uint16, src []float32) {
	if len(dst) < len(src) {
		panic("npy: F16sFromF32s: len(dst) < len(src)")
	}
	dst = dst[:len(src)]
	for i, b := range f32Bits(src) {
		// f16FromF32Bits, inlined by hand (it exceeds the inlining budget).
		a := b & f32Abs
		n := a - (127-15)<<23
		r := (n + 1<<12 - 1 + (n>>13)&1) >> 13
		sub := math.Float32bits(math.Float32frombits(a)+0.5) - 0x3f000000
		nan := f16QNaN | (a>>13)&0x1ff
		if a < 0x38800000 {
			r = sub
		}
		if a >= 0x477ff000 {
			r = f16Inf
		}
		if a > f32Inf {
			r = nan
		}
		dst[i] = uint16(b>>16)&0x8000 | uint16(r)
	}
}

// BF16sFromF32s converts src to bfloat16 bits in dst; len(dst) must be >= len(src).
func BF16sFromF32s(dst []uint16, src []float32) {
	if len(dst) < len(src) {
		panic("npy: BF16sFromF32s: len(dst) < len(src)")
	}
	dst = dst[:len(src)]
	for i, b := range f32Bits(src) {
		r := uint16((b + 0x7fff + (b>>16)&1) >> 16)
		if b&f32Abs > f32Inf {
			r = uint16(b>>16) | 0x40
		}
		dst[i] = r
	}
}

// F16sFromF64s converts src to float16 bits in dst (one rounding);
// len(dst) must be >= len(src).
func F16sFromF64s(dst []uint16, src []float64) {
	if len(dst) < len(src) {
		panic("npy: F16sFromF64s: len(dst) < len(src)")
	}
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = F16FromF64(v)
	}
}

// BF16sFromF64s converts src to bfloat16 bits in dst (one rounding);
// len(dst) must be >= len(src).
func BF16sFromF64s(dst []uint16, src []float64) {
	if len(dst) < len(src) {
		panic("npy: BF16sFromF64s: len(dst) < len(src)")
	}
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = BF16FromF64(v)
	}
}

// F16sToF32s widens float16 bits to float32; len(dst) must be >= len(src).
func F16sToF32s(dst []float32, src []uint16) {
	if len(dst) < len(src) {
		panic("npy: F16sToF32s: len(dst) < len(src)")
	}
	dst = dst[:len(src)]
	t := f16Table()
	for len(src) > 0 {
		// The vector path (amd64 with F16C) stops before a group of 16
		// holding Inf or NaN; the table widens that group, keeping NaN
		// payloads (and signalling NaNs) bit for bit.
		k := widenF16(dst, src)
		dst, src = dst[k:], src[k:]
		m := min(len(src), 16)
		for i, h := range src[:m] {
			dst[i] = t[h]
		}
		dst, src = dst[m:], src[m:]
	}
}

// f16Table maps every float16 bit pattern to its float32 value: a 256 KiB
// table lookup widens about twice as fast as the bit manipulation.
var f16Table = sync.OnceValue(func() *[1 << 16]float32 {
	t := new([1 << 16]float32)
	for h := range t {
		t[h] = F16ToF32(uint16(h))
	}
	return t
})

// BF16sToF32s widens bfloat16 bits to float32; len(dst) must be >= len(src).
func BF16sToF32s(dst []float32, src []uint16) {
	if len(dst) < len(src) {
		panic("npy: BF16sToF32s: len(dst) < len(src)")
	}
	dst = dst[:len(src)]
	k := widenBF16(dst, src)
	for i, h := range src[k:] {
		dst[k+i] = math.Float32frombits(uint32(h) << 16)
	}
}
