package compare

import (
	"math"
	"strings"

	"github.com/goldset/goldset/npy"
)

// Canonical dtype names used in Tolerance.DType (the manifest's spelling).
const (
	Float16  = "float16"
	BFloat16 = "bfloat16"
	Float32  = "float32"
	Float64  = "float64"
	Int32    = "int32"
	Int64    = "int64"
	Uint16   = "uint16"
	Uint8    = "uint8"
	Bool     = "bool"
)

// CanonicalDType maps the spellings goldset meets (manifest names, numpy
// descriptors, short names) onto the canonical names above. ok is false for
// anything else.
func CanonicalDType(s string) (name string, ok bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "float16", "fp16", "f2", "<f2", "=f2", "half":
		return Float16, true
	case "bfloat16", "bf16":
		return BFloat16, true
	case "float32", "fp32", "f4", "<f4", "=f4", "float", "single":
		return Float32, true
	case "float64", "fp64", "f8", "<f8", "=f8", "double":
		return Float64, true
	case "int32", "i4", "<i4", "=i4":
		return Int32, true
	case "int64", "i8", "<i8", "=i8":
		return Int64, true
	case "uint16", "u2", "<u2", "=u2":
		return Uint16, true
	case "uint8", "u1", "|u1", "<u1":
		return Uint8, true
	case "bool", "b1", "|b1":
		return Bool, true
	}
	return "", false
}

// format describes the floating format an output is stored in: what one
// ulp is, where the normal range starts, which bit pattern a value has.
type format struct {
	name    string
	kind    formatKind
	isFloat bool
	minNorm float64 // smallest positive normal: floor of the relative-error denominator
}

// formatKind selects the bit layout in the per-element ulp computation
// (an integer switch: comparing names there would dominate its cost).
type formatKind uint8

const (
	kindOther formatKind = iota
	kindF16
	kindBF16
	kindF32
	kindF64
)

func formatOf(dtype string) format {
	switch dtype {
	case Float16:
		return format{Float16, kindF16, true, 0x1p-14}
	case BFloat16:
		return format{BFloat16, kindBF16, true, 0x1p-126}
	case Float32:
		return format{Float32, kindF32, true, 0x1p-126}
	case Float64, "":
		return format{Float64, kindF64, true, 0x1p-1022}
	}
	return format{name: dtype}
}

// ordered maps x, rounded to the format (nearest even, as the kernel's
// store would round it), onto an integer whose difference between two
// values is their distance in ulps: sign-magnitude bits turned into a
// two's-complement-like line where -0 and +0 coincide. x must not be NaN.
func (f format) ordered(x float64) int64 {
	var mag uint64
	var neg bool
	switch f.kind {
	case kindF16:
		h := npy.F16FromF64(x)
		mag, neg = uint64(h&0x7fff), h&0x8000 != 0
	case kindBF16:
		h := npy.BF16FromF64(x)
		mag, neg = uint64(h&0x7fff), h&0x8000 != 0
	case kindF32:
		b := math.Float32bits(float32(x))
		mag, neg = uint64(b&0x7fffffff), b&0x80000000 != 0
	default:
		b := math.Float64bits(x)
		mag, neg = b&(1<<63-1), b>>63 != 0
	}
	if neg {
		return -int64(mag)
	}
	return int64(mag)
}

// ulpDistance is the number of representable values of the format between
// g and c (0 when they round to the same value). Neither may be NaN.
func (f format) ulpDistance(g, c float64) uint64 {
	a, b := f.ordered(g), f.ordered(c)
	if a > b {
		a, b = b, a
	}
	// a <= b; b-a may exceed MaxInt64 for float64 (|a|,|b| < 2^63), so
	// subtract in uint64 where the wrap-around is the exact distance.
	return uint64(b) - uint64(a)
}

// halfSpacing returns half the distance between adjacent values of the
// format around |x| (the most a correct rounding can move x): in the
// subnormal range the fixed subnormal step, above it 2^(e-p).
func (f format) halfSpacing(x float64) float64 {
	var p, minExp int // precision in bits, exponent of the smallest normal
	switch f.kind {
	case kindF16:
		p, minExp = 11, -14
	case kindBF16:
		p, minExp = 8, -126
	case kindF32:
		p, minExp = 24, -126
	default:
		p, minExp = 53, -1022
	}
	_, e := math.Frexp(math.Abs(x)) // |x| in [2^(e-1), 2^e)
	e = max(e-1, minExp)
	return math.Ldexp(1, e-p)
}
