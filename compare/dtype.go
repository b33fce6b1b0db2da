package compare

import (
	"math"
	"strings"

	"github.com/goldset/goldset/internal/dtype"
	"github.com/goldset/goldset/npy"
)

// Canonical dtype names used in Tolerance.DType (the manifest's spelling,
// rows of the dtype table internal/dtype; these are the common ones).
const (
	Float16  = "float16"
	BFloat16 = "bfloat16"
	Float32  = "float32"
	Float64  = "float64"
	Int32    = "int32"
	Int64    = "int64"
	Uint8    = "uint8"
)

// CanonicalDType maps a manifest dtype name, or a .npy descriptor (<u2
// meaning bfloat16, |u1 uint8, as in goldset bundles), onto the canonical
// name: a row of the dtype table. ok is false for anything else.
func CanonicalDType(s string) (name string, ok bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	if d, err := dtype.Parse(s); err == nil {
		return d.Name(), true
	}
	if d, err := dtype.FromDescr(s); err == nil {
		return d.Name(), true
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
	// precision is the significand bits, the implicit one included.
	precision int
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

// formatOf returns the format of a canonical dtype name ("" is float64),
// from the dtype table.
func formatOf(name string) format {
	if name == "" {
		name = Float64
	}
	d, err := dtype.Parse(name)
	if err != nil {
		return format{name: name}
	}
	f := format{name: name, isFloat: d.IsFloat(), minNorm: d.SmallestNormal(), precision: d.Precision()}
	switch d {
	case dtype.Float16:
		f.kind = kindF16
	case dtype.BFloat16:
		f.kind = kindBF16
	case dtype.Float32:
		f.kind = kindF32
	case dtype.Float64:
		f.kind = kindF64
	}
	return f
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
	p, minNorm := f.precision, f.minNorm
	if !f.isFloat || p == 0 {
		p, minNorm = 53, 0x1p-1022 // as float64
	}
	_, minExp := math.Frexp(minNorm) // minNorm = 2^(minExp-1)
	_, e := math.Frexp(math.Abs(x))  // |x| in [2^(e-1), 2^e)
	e = max(e-1, minExp-1)
	return math.Ldexp(1, e-p)
}
