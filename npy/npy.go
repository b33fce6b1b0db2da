package npy

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// DType is a numpy type descriptor string as stored in the header.
// Only the canonical spellings below are valid in a Header; ParseDType maps
// the other spellings numpy accepts ('=f4', '<u1', ...) onto them.
type DType string

// Supported descriptors (canonical spellings, as numpy.save writes them).
const (
	Float16 DType = "<f2"
	Float32 DType = "<f4"
	Float64 DType = "<f8"
	Int32   DType = "<i4"
	Int64   DType = "<i8"
	Uint16  DType = "<u2" // also carries bfloat16 bits, see doc.go
	Uint8   DType = "|u1"
	Bool    DType = "|b1"
	// Read as candidates only (torch and numpy index outputs): no
	// bundle tensor is stored in them.
	Int8   DType = "|i1"
	Int16  DType = "<i2"
	Uint32 DType = "<u4"
	Uint64 DType = "<u8"
)

// Limits.
const (
	// MaxHeaderLen caps the header length field (dict, padding and '\n')
	// accepted by ReadHeader, so a hostile length cannot force a large
	// allocation. numpy itself refuses headers over 10000 bytes by default.
	MaxHeaderLen = 1 << 20
	// PreambleLen1 and PreambleLen2 are the sizes of magic, version and
	// header-length field for format version 1.0 and versions 2.0/3.0.
	PreambleLen1 = 10
	PreambleLen2 = 12
	// Align is the alignment of the data offset that numpy.save produces.
	Align = 64
)

// Sentinel errors. Every error returned by this package wraps exactly one of
// them (or an I/O error from the underlying file) and names the file.
var (
	ErrFormat           = errors.New("not a valid .npy file")
	ErrUnsupportedDType = errors.New("unsupported dtype")
	ErrTruncated        = errors.New("file truncated")
	ErrTrailingData     = errors.New("trailing bytes after array data")
	ErrFortranOrder     = errors.New("Fortran-order arrays are not supported") //lint:ignore ST1005 Fortran is a proper noun
	ErrShape            = errors.New("invalid shape or data size")
)

// ItemSize returns the size in bytes of one element, or 0 if d is not one of
// the canonical descriptors.
func (d DType) ItemSize() int {
	switch d {
	case Float16, Uint16, Int16:
		return 2
	case Float32, Int32, Uint32:
		return 4
	case Float64, Int64, Uint64:
		return 8
	case Uint8, Bool, Int8:
		return 1
	}
	return 0
}

// ParseDType maps a numpy descr string onto a canonical DType. It accepts
// '<' (little-endian) and '=' (native; numpy never writes it, and it is
// taken as little-endian so that results do not depend on the host) for
// multi-byte types, and any of '<', '=', '|', '>' for one-byte types, where
// byte order is meaningless. Big-endian multi-byte types, and every kind or
// size not listed in the DType constants, wrap ErrUnsupportedDType.
func ParseDType(descr string) (DType, error) {
	if len(descr) < 2 {
		return "", fmt.Errorf("%w %q", ErrUnsupportedDType, descr)
	}
	order, typ := descr[0], descr[1:]
	switch typ {
	case "u1", "i1", "b1":
		if order == '<' || order == '>' || order == '=' || order == '|' {
			return DType("|" + typ), nil
		}
	case "f2", "f4", "f8", "i2", "i4", "i8", "u2", "u4", "u8":
		switch order {
		case '<', '=':
			return DType("<" + typ), nil
		case '>':
			return "", fmt.Errorf("%w %q: big-endian data is not supported (numpy: a.astype(a.dtype.newbyteorder('<')))", ErrUnsupportedDType, descr)
		case '|':
			return "", fmt.Errorf("%w %q: byte order '|' is only meaningful for one-byte types", ErrUnsupportedDType, descr)
		}
	}
	return "", fmt.Errorf("%w %q (supported: <f2 <f4 <f8 |i1 <i2 <i4 <i8 |u1 <u2 <u4 <u8 |b1)", ErrUnsupportedDType, descr)
}

// Header describes an array.
type Header struct {
	Descr   DType
	Fortran bool
	Shape   []int64
}

// NumElems returns the product of the shape (1 for a 0-d array), or -1 if a
// dimension is negative or the product of the non-zero dimensions overflows
// int64 (numpy applies the same rule: (0, 2**62, 2**62) is too big).
func (h Header) NumElems() int64 {
	return shapeProduct(h.Shape, 1)
}

// NumBytes returns the size of the array data in bytes, or -1 if the dtype is
// unknown, a dimension is negative or the item size times the product of the
// non-zero dimensions overflows int64.
func (h Header) NumBytes() int64 {
	size := int64(h.Descr.ItemSize())
	if size == 0 {
		return -1
	}
	return shapeProduct(h.Shape, size)
}

// shapeProduct returns unit times the product of shape, or -1 if a
// dimension is negative or unit times the product of the non-zero
// dimensions overflows int64.
func shapeProduct(shape []int64, unit int64) int64 {
	n, zero := unit, false
	for _, d := range shape {
		switch {
		case d < 0:
			return -1
		case d == 0:
			zero = true
			continue
		}
		hi, lo := bits.Mul64(uint64(n), uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			return -1
		}
		n = int64(lo)
	}
	if zero {
		return 0
	}
	return n
}

// Validate reports whether h can be written: a canonical dtype
// (ErrUnsupportedDType) and non-negative dimensions whose element and byte
// counts fit in int64 (ErrShape). Fortran order is allowed here; the reader
// rejects it.
func (h Header) Validate() error {
	if err := h.check(); err != nil {
		return fmt.Errorf("npy: %w", err)
	}
	return nil
}

// check is Validate without the "npy: " prefix, for callers that add their
// own context.
func (h Header) check() error {
	if h.Descr.ItemSize() == 0 {
		if _, err := ParseDType(string(h.Descr)); err != nil {
			return err
		}
		return fmt.Errorf("%w %q: not canonical (use ParseDType)", ErrUnsupportedDType, h.Descr)
	}
	for i, d := range h.Shape {
		if d < 0 {
			return fmt.Errorf("%w: dimension %d is negative (%d)", ErrShape, i, d)
		}
	}
	if h.NumElems() < 0 {
		return fmt.Errorf("%w: element count of shape %v overflows int64", ErrShape, h.Shape)
	}
	if h.NumBytes() < 0 {
		return fmt.Errorf("%w: byte count of shape %v x %d bytes overflows int64", ErrShape, h.Shape, h.Descr.ItemSize())
	}
	return nil
}

// equal reports whether two headers describe the same array layout.
func (h Header) equal(o Header) bool {
	if h.Descr != o.Descr || h.Fortran != o.Fortran || len(h.Shape) != len(o.Shape) {
		return false
	}
	for i := range h.Shape {
		if h.Shape[i] != o.Shape[i] {
			return false
		}
	}
	return true
}
