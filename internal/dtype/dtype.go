package dtype

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/goldset/goldset/npy"
)

// DType is a storage type. The zero value is invalid.
type DType uint8

// The storage types, in table order.
const (
	Float16 DType = iota + 1
	BFloat16
	Float32
	Float64
	Int32
	Int64
	Uint8
	Float8E4M3FN
	Float4E2M1x2
	Float8E8M0
	numTypes // one past the last
)

// ErrUnknown is wrapped by every Parse and FromDescr error.
var ErrUnknown = errors.New("unknown dtype")

// info is one row of the table.
type info struct {
	name         string
	descr        npy.DType
	itemSize     int
	elemsPerItem int
	isFloat      bool
	precision    int     // significand bits, the implicit one included
	minNormal    float64 // smallest positive normal
	maxFinite    float64
}

var table = [numTypes]info{
	Float16:      {"float16", npy.Float16, 2, 1, true, 11, 0x1p-14, 65504},
	BFloat16:     {"bfloat16", npy.Uint16, 2, 1, true, 8, 0x1p-126, 0x1.fep127},
	Float32:      {"float32", npy.Float32, 4, 1, true, 24, 0x1p-126, math.MaxFloat32},
	Float64:      {"float64", npy.Float64, 8, 1, true, 53, 0x1p-1022, math.MaxFloat64},
	Int32:        {"int32", npy.Int32, 4, 1, false, 0, 0, math.MaxInt32},
	Int64:        {"int64", npy.Int64, 8, 1, false, 0, 0, 0x1p63 - 1024}, // largest float64 below 2^63
	Uint8:        {"uint8", npy.Uint8, 1, 1, false, 0, 0, math.MaxUint8},
	Float8E4M3FN: {"float8_e4m3fn", npy.Uint8, 1, 1, true, 4, 0x1p-6, 448},
	Float4E2M1x2: {"float4_e2m1fn_x2", npy.Uint8, 1, 2, true, 2, 1, 6},
	Float8E8M0:   {"float8_e8m0fnu", npy.Uint8, 1, 1, true, 1, 0x1p-127, 0x1p127},
}

// All returns every valid DType in table order.
func All() []DType {
	all := make([]DType, 0, numTypes-1)
	for d := Float16; d < numTypes; d++ {
		all = append(all, d)
	}
	return all
}

// names lists the valid names for error messages.
func names() string {
	var b strings.Builder
	for _, d := range All() {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(d.Name())
	}
	return b.String()
}

// Parse maps a manifest dtype name onto its DType. Only the exact names in
// the package documentation are accepted.
func Parse(name string) (DType, error) {
	for _, d := range All() {
		if table[d].name == name {
			return d, nil
		}
	}
	return 0, fmt.Errorf("%w %q (known: %s)", ErrUnknown, name, names())
}

// FromDescr maps a .npy descriptor onto the DType it stores by default:
// every spelling npy.ParseDType accepts, with <u2 meaning bfloat16 and |u1
// meaning uint8 (the byte types float8_e4m3fn, float4_e2m1fn_x2 and
// float8_e8m0fnu are |u1 too and are told apart by the manifest's name).
func FromDescr(descr string) (DType, error) {
	c, err := npy.ParseDType(descr)
	if err != nil {
		return 0, fmt.Errorf("%w: descr %q: %w", ErrUnknown, descr, err)
	}
	for _, d := range All() {
		if table[d].descr == c {
			return d, nil
		}
	}
	return 0, fmt.Errorf("%w: descr %q stores no goldset dtype", ErrUnknown, descr)
}

// Valid reports whether d is one of the table's types.
func (d DType) Valid() bool { return d >= Float16 && d < numTypes }

func (d DType) row() info {
	if !d.Valid() {
		return info{}
	}
	return table[d]
}

// Name returns the manifest name ("float16", "float8_e4m3fn", ...), or
// "DType(n)" for an invalid d.
func (d DType) Name() string {
	if !d.Valid() {
		return fmt.Sprintf("DType(%d)", uint8(d))
	}
	return table[d].name
}

// String returns Name.
func (d DType) String() string { return d.Name() }

// Descr returns the .npy descriptor that stores d ("" if d is invalid).
func (d DType) Descr() npy.DType { return d.row().descr }

// ItemSize returns the bytes per stored item (0 if d is invalid). A
// float4_e2m1fn_x2 item is one byte holding two elements.
func (d DType) ItemSize() int { return d.row().itemSize }

// ElemsPerItem returns the elements per stored item: 2 for
// float4_e2m1fn_x2, 1 for the others, 0 if d is invalid.
func (d DType) ElemsPerItem() int { return d.row().elemsPerItem }

// IsFloat reports whether d is a floating format (the three OCP byte
// formats included).
func (d DType) IsFloat() bool { return d.row().isFloat }

// Precision returns the significand bits, the implicit leading one included
// (11 for float16, 4 for float8_e4m3fn, 1 for float8_e8m0fnu); 0 for the
// integer types.
func (d DType) Precision() int { return d.row().precision }

// SmallestNormal returns the smallest positive normal value (2^-14 for
// float16, 2^-6 for float8_e4m3fn, 1 for E2M1, 2^-127 for E8M0); 0 for the
// integer types.
func (d DType) SmallestNormal() float64 { return d.row().minNormal }

// MaxFinite returns the largest finite value: 65504, 448, 6, 2^127, ...; for
// the integer types the largest value that float64 holds exactly (2^63-1024
// for int64).
func (d DType) MaxFinite() float64 { return d.row().maxFinite }

// StorageBytes returns the bytes n elements of d occupy. It fails for a
// negative n, an odd n of float4_e2m1fn_x2 (a row of codes fills whole
// bytes) and an invalid d.
func (d DType) StorageBytes(n int64) (int64, error) {
	r := d.row()
	switch {
	case r.itemSize == 0:
		return 0, fmt.Errorf("dtype: %s: %w", d.Name(), ErrUnknown)
	case n < 0:
		return 0, fmt.Errorf("dtype: %s: negative element count %d", d.Name(), n)
	case n%int64(r.elemsPerItem) != 0:
		return 0, fmt.Errorf("dtype: %s: %d elements do not fill whole bytes (two per byte)", d.Name(), n)
	case n/int64(r.elemsPerItem) > math.MaxInt64/int64(r.itemSize):
		return 0, fmt.Errorf("dtype: %s: %d elements overflow int64 bytes", d.Name(), n)
	}
	return n / int64(r.elemsPerItem) * int64(r.itemSize), nil
}
