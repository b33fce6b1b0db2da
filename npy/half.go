package npy

import "math"

// Half-precision conversions. Every narrowing conversion rounds to nearest,
// ties to even, exactly once: float64 -> float16 and float64 -> bfloat16 do
// not pass through float32 (that would round twice). Overflow goes to
// +-Inf, fp16 and bf16 subnormals are produced, NaN stays NaN (quiet, sign
// kept).

// F16FromF64 rounds x to the nearest float16 (ties to even) and returns its bits.
func F16FromF64(x float64) uint16 {
	bits := math.Float64bits(x)
	sign := uint16(bits>>48) & 0x8000
	a := math.Abs(x)
	switch {
	case a != a:
		return sign | 0x7e00 | uint16(bits>>42)&0x1ff
	case a >= 65520: // halfway between 65504 and 2**16 rounds to even: Inf
		return sign | 0x7c00
	case a < 0x1p-14: // subnormal: units of 2**-24
		return sign | uint16(math.RoundToEven(a*0x1p24))
	}
	f, e := math.Frexp(a) // a = f * 2**e, f in [0.5, 1)
	q := int(math.RoundToEven(f*2048)) - 1024
	exp := e - 1 + 15
	if q == 1024 {
		q = 0
		exp++
	}
	if exp >= 31 {
		return sign | 0x7c00
	}
	return sign | uint16(exp)<<10 | uint16(q)
}

// F16FromF32 rounds x to the nearest float16 (ties to even) and returns its bits.
func F16FromF32(x float32) uint16 { return F16FromF64(float64(x)) }

// F16ToF32 returns the float32 value of the float16 bits h (exact).
func F16ToF32(h uint16) float32 { return float32(F16ToF64(h)) }

// F16ToF64 returns the float64 value of the float16 bits h (exact).
func F16ToF64(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	man := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(man, -24)
	case 31:
		if man != 0 {
			return math.Float64frombits(math.Float64bits(math.NaN()) | uint64(h&0x8000)<<48)
		}
		return math.Inf(int(sign))
	}
	return sign * math.Ldexp(1024+man, exp-25)
}

// BF16FromF64 rounds x to the nearest bfloat16 (ties to even) and returns its bits.
func BF16FromF64(x float64) uint16 {
	bits := math.Float64bits(x)
	sign := uint16(bits>>48) & 0x8000
	a := math.Abs(x)
	switch {
	case a != a:
		return sign | 0x7fc0 | uint16(bits>>45)&0x3f
	case a >= 0x1.ffp127: // halfway between bf16 max and 2**128
		return sign | 0x7f80
	case a < 0x1p-126: // subnormal: units of 2**-133
		return sign | uint16(math.RoundToEven(a*0x1p133))
	}
	f, e := math.Frexp(a)
	q := int(math.RoundToEven(f*256)) - 128
	exp := e - 1 + 127
	if q == 128 {
		q = 0
		exp++
	}
	if exp >= 255 {
		return sign | 0x7f80
	}
	return sign | uint16(exp)<<7 | uint16(q)
}

// BF16FromF32 rounds x to the nearest bfloat16 (ties to even) and returns its bits.
func BF16FromF32(x float32) uint16 {
	b := math.Float32bits(x)
	if b&0x7fffffff > 0x7f800000 { // NaN: keep sign and top payload, force quiet
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// BF16ToF32 returns the float32 value of the bfloat16 bits h (exact).
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F16sFromF32s converts src to float16 bits in dst; len(dst) must be >= len(src).
func F16sFromF32s(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = F16FromF32(v)
	}
}

// BF16sFromF32s converts src to bfloat16 bits in dst; len(dst) must be >= len(src).
func BF16sFromF32s(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = BF16FromF32(v)
	}
}
