package compare

import (
	"fmt"

	"github.com/goldset/goldset/npy"
)

// Decode converts the raw data of a .npy array (little-endian, as read
// after the header) of dtype d into float64 values, exactly: <f2, <f4, <f8,
// <u2 as bfloat16 bits when bf16 is set (the manifest says "bfloat16"), and
// the integer dtypes float64 holds exactly (<i4, <u2, |u1, |b1). NaN
// payloads are kept, so exact mode stays bit-exact. A length that is not a
// whole number of elements wraps ErrShape; an unsupported dtype wraps
// npy.ErrUnsupportedDType.
func Decode(d npy.DType, bf16 bool, data []byte) ([]float64, error) {
	size := d.ItemSize()
	if size == 0 {
		return nil, fmt.Errorf("compare: decode: %w %q", npy.ErrUnsupportedDType, d)
	}
	if len(data)%size != 0 {
		return nil, fmt.Errorf("compare: decode: %d bytes is not a whole number of %s elements: %w", len(data), d, ErrShape)
	}
	// An empty decode validates the dtype before anything is allocated.
	if err := npy.DecodeFloat64(nil, d, bf16, nil); err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	dst := make([]float64, len(data)/size)
	if err := npy.DecodeFloat64(dst, d, bf16, data); err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	return dst, nil
}
