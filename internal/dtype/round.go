package dtype

import (
	"math"

	"github.com/goldset/goldset/npy"
)

// The byte formats narrow as npy/half.go does (its comment gives the
// argument): integer rounding on the float64 encoding for normal results,
// one IEEE addition for subnormal ones; exact IEEE steps, the same bits on
// every architecture.

const (
	f64Abs   = 1<<63 - 1
	f64Inf   = 0x7ff0000000000000
	f64Frac  = 1<<52 - 1
	f64QNaN  = 0x7ff8000000000000
	f32Abs   = 1<<31 - 1
	f32Inf   = 0x7f800000
	f32QNaN  = 0x7fc00000
	e4m3Max  = 0x7e // 448
	e4m3NaN  = 0x7f
	e2m1Max  = 0x7 // 6
	e2m1NaN  = 0x8 // -0, as ml_dtypes
	e8m0Bias = 127
	e8m0NaN  = 0xff
)

// Round rounds x to nearest, ties to even, into d's stored bits (see the
// package documentation for overflow, NaN and the E8M0 rule). For
// float4_e2m1fn_x2 it returns one nibble, 0..15. An invalid d gives 0.
func (d DType) Round(x float64) uint64 {
	switch d {
	case Float16:
		return uint64(npy.F16FromF64(x))
	case BFloat16:
		return uint64(npy.BF16FromF64(x))
	case Float32:
		return uint64(f32FromF64(x))
	case Float64:
		return math.Float64bits(x)
	case Int32:
		return uint64(uint32(int32(roundInt(x, math.MinInt32, math.MaxInt32))))
	case Int64:
		return uint64(roundInt(x, math.MinInt64, math.MaxInt64))
	case Uint8:
		return uint64(roundInt(x, 0, math.MaxUint8))
	case Float8E4M3FN:
		return uint64(E4M3FromF64(x))
	case Float4E2M1x2:
		return uint64(E2M1FromF64(x))
	case Float8E8M0:
		return uint64(E8M0FromF64(x))
	}
	return 0
}

// Widen returns the exact float64 value of d's stored bits (see the package
// documentation). An invalid d gives NaN.
func (d DType) Widen(bits uint64) float64 {
	switch d {
	case Float16:
		return npy.F16ToF64(uint16(bits))
	case BFloat16:
		return npy.BF16ToF64(uint16(bits))
	case Float32:
		return f32ToF64(uint32(bits))
	case Float64:
		return math.Float64frombits(bits)
	case Int32:
		return float64(int32(uint32(bits)))
	case Int64:
		return float64(int64(bits))
	case Uint8:
		return float64(uint8(bits))
	case Float8E4M3FN:
		return E4M3ToF64(uint8(bits))
	case Float4E2M1x2:
		return E2M1ToF64(uint8(bits))
	case Float8E8M0:
		return E8M0ToF64(uint8(bits))
	}
	return math.NaN()
}

// f32FromF64 is float32(x) with NaN made explicit: Go leaves the NaN a
// conversion produces to the hardware, so the quiet bit and top payload are
// set here, as npy does for the half formats.
func f32FromF64(x float64) uint32 {
	b := math.Float64bits(x)
	if b&f64Abs > f64Inf {
		return uint32(b>>32)&0x80000000 | f32QNaN | uint32(b>>29)&0x3fffff
	}
	return math.Float32bits(float32(x))
}

// f32ToF64 widens float32 bits, keeping a NaN's payload bit for bit (a
// hardware conversion would quiet a signalling NaN).
func f32ToF64(h uint32) float64 {
	if h&f32Abs > f32Inf {
		return math.Float64frombits(uint64(h>>31)<<63 | f64Inf | uint64(h&0x7fffff)<<29)
	}
	return float64(math.Float32frombits(h))
}

// roundInt rounds x to the nearest integer (ties to even) and clamps it to
// [lo, hi]; NaN gives 0. lo and hi are exact in float64 or, for int64, the
// comparison with 2^63 is.
func roundInt(x float64, lo, hi int64) int64 {
	r := math.RoundToEven(x)
	switch {
	case r != r:
		return 0
	case r <= float64(lo):
		return lo
	case r >= float64(hi): // float64(MaxInt64) is 2^63: values there saturate
		return hi
	}
	return int64(r)
}

// E4M3FromF64 rounds x to the nearest float8_e4m3fn (ties to even),
// saturating at +-448; NaN gives 0x7f.
func E4M3FromF64(x float64) uint8 {
	b := math.Float64bits(x)
	a := b & f64Abs
	n := a - (1023-7)<<52
	r := (n + 1<<48 - 1 + (n>>49)&1) >> 49
	// Subnormal: units of 2^-9 = ulp of 2^43.
	sub := math.Float64bits(math.Float64frombits(a)+0x1p43) - 0x42a0000000000000
	if a < 0x3f90000000000000 { // below 2^-6
		r = sub
	}
	if r > e4m3Max { // above 464 (Inf included) the rounding carried past 448
		r = e4m3Max
	}
	s := uint8(b>>56) & 0x80
	if a > f64Inf {
		return e4m3NaN
	}
	return s | uint8(r)
}

// E4M3FromF32 is E4M3FromF64(float64(x)) (the widening is exact) on the
// float32 encoding: the same integer rounding with the round bit at bit
// 19, and for results below 2^-6 one float32 addition of 2^14, whose ulp
// is the subnormal unit 2^-9. The index-cache quantizer calls it on every
// key element (TestE4M3FromF32 compares it with E4M3FromF64).
func E4M3FromF32(x float32) uint8 {
	b := math.Float32bits(x)
	a := b & f32Abs
	n := a - (127-7)<<23
	r := (n + 1<<19 - 1 + (n>>20)&1) >> 20
	if a < 0x3c800000 { // below 2^-6
		r = math.Float32bits(math.Float32frombits(a)+0x1p14) - 0x46800000
	}
	if r > e4m3Max {
		r = e4m3Max
	}
	if a > f32Inf {
		return e4m3NaN
	}
	return uint8(b>>24)&0x80 | uint8(r)
}

// E4M3ToF64 returns the value of the float8_e4m3fn bits c (exact; 0x7f and
// 0xff are NaN).
func E4M3ToF64(c uint8) float64 {
	s := uint64(c>>7) << 63
	e, m := uint64(c>>3)&0xf, uint64(c&7)
	switch {
	case e == 0xf && m == 7:
		return math.Float64frombits(s | f64QNaN)
	case e == 0: // m * 2^-9, exact
		v := float64(m) * 0x1p-9
		if s != 0 {
			v = -v // -0 for 0x80
		}
		return v
	}
	return math.Float64frombits(s | (e-7+1023)<<52 | m<<49)
}

// E2M1FromF64 rounds x to the nearest E2M1 code (ties to the even code),
// saturating at +-6, and returns the nibble; a negative x that rounds to
// zero gives 8 (-0), and so does NaN.
func E2M1FromF64(x float64) uint8 {
	b := math.Float64bits(x)
	a := b & f64Abs
	n := a - (1023-1)<<52
	r := (n + 1<<50 - 1 + (n>>51)&1) >> 51
	// Subnormal: units of 0.5 = ulp of 2^51.
	sub := math.Float64bits(math.Float64frombits(a)+0x1p51) - 0x4320000000000000
	if a < 0x3ff0000000000000 { // below 1
		r = sub
	}
	if r > e2m1Max {
		r = e2m1Max
	}
	if a > f64Inf {
		return e2m1NaN
	}
	return uint8(b>>60)&8 | uint8(r)
}

// e2m1Values is the value of each E2M1 code (OCP MX v1.0, section 5.3.3).
var e2m1Values = [16]float64{0, 0.5, 1, 1.5, 2, 3, 4, 6, math.Copysign(0, -1), -0.5, -1, -1.5, -2, -3, -4, -6}

// E2M1ToF64 returns the value of the E2M1 code in the low nibble of c.
func E2M1ToF64(c uint8) float64 { return e2m1Values[c&0xf] }

// E8M0FromF64 rounds x to the nearest power of two 2^(b-127) and returns b;
// a tie (1.5 * 2^e) goes up. Below 1.5 * 2^-127 gives 0; NaN, negative x,
// +Inf and x >= 1.5 * 2^127 give 255 (NaN).
func E8M0FromF64(x float64) uint8 {
	b := math.Float64bits(x)
	if x == 0 {
		return 0
	}
	if b>>63 != 0 || b >= f64Inf { // negative, +Inf, NaN
		return e8m0NaN
	}
	e := int(b>>52) - 1023 // float64 subnormals (e = -1023) are far below 2^-127
	if b&f64Frac >= 1<<51 {
		e++ // the fraction is >= 0.5: at or past the midpoint 1.5 * 2^e
	}
	switch {
	case e < -e8m0Bias:
		return 0
	case e > e8m0Bias:
		return e8m0NaN
	}
	return uint8(e + e8m0Bias)
}

// E8M0ToF64 returns 2^(c-127), or NaN for c = 255 (exact).
func E8M0ToF64(c uint8) float64 {
	if c == e8m0NaN {
		return math.Float64frombits(f64QNaN)
	}
	return math.Float64frombits(uint64(int(c)-e8m0Bias+1023) << 52)
}
