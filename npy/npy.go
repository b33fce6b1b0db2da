package npy

// NOTE: first cut of the API; the npy owner extends and hardens it, keeping
// these names.

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// DType is a numpy type descriptor string as stored in the header.
type DType string

// Supported descriptors.
const (
	Float16 DType = "<f2"
	Float32 DType = "<f4"
	Float64 DType = "<f8"
	Int32   DType = "<i4"
	Int64   DType = "<i8"
	Uint16  DType = "<u2"
	Uint8   DType = "|u1"
	Bool    DType = "|b1"
)

// Sentinel errors.
var (
	ErrFormat           = errors.New("not a valid .npy file")
	ErrUnsupportedDType = errors.New("unsupported dtype")
)

// ItemSize returns the size in bytes of one element, or 0 if d is unknown.
func (d DType) ItemSize() int {
	switch d {
	case Float16, Uint16:
		return 2
	case Float32, Int32:
		return 4
	case Float64, Int64:
		return 8
	case Uint8, Bool:
		return 1
	}
	return 0
}

// Header describes an array.
type Header struct {
	Descr   DType
	Fortran bool
	Shape   []int64
}

// NumElems returns the product of the shape (1 for a 0-d array).
func (h Header) NumElems() int64 {
	n := int64(1)
	for _, d := range h.Shape {
		n *= d
	}
	return n
}

// EncodeHeader returns the magic, version, length and header dict,
// padded as numpy.save pads it.
func EncodeHeader(h Header) ([]byte, error) {
	if h.Descr.ItemSize() == 0 {
		return nil, fmt.Errorf("npy: %w %q", ErrUnsupportedDType, h.Descr)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "{'descr': '%s', 'fortran_order': %s, 'shape': (", h.Descr, pyBool(h.Fortran))
	for i, d := range h.Shape {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatInt(d, 10))
	}
	if len(h.Shape) == 1 {
		b.WriteString(",")
	}
	b.WriteString("), }")
	dict := b.String()
	// numpy pads with spaces so that magic+len+dict+'\n' is a multiple of 64.
	pre := 10
	total := pre + len(dict) + 1
	pad := (64 - total%64) % 64
	out := make([]byte, 0, total+pad)
	out = append(out, "\x93NUMPY\x01\x00"...)
	hl := len(dict) + 1 + pad
	out = append(out, byte(hl), byte(hl>>8))
	out = append(out, dict...)
	for i := 0; i < pad; i++ {
		out = append(out, ' ')
	}
	out = append(out, '\n')
	return out, nil
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// Writer streams the data of one array after its header.
type Writer struct {
	w       io.Writer
	want, n int64
}

// NewWriter writes h to w and returns a Writer for exactly the array's data bytes.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	hdr, err := EncodeHeader(h)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(hdr); err != nil {
		return nil, err
	}
	return &Writer{w: w, want: h.NumElems() * int64(h.Descr.ItemSize())}, nil
}

// Write writes raw little-endian element bytes.
func (w *Writer) Write(p []byte) (int, error) {
	if w.n+int64(len(p)) > w.want {
		return 0, fmt.Errorf("npy: write past end of data (%d > %d bytes)", w.n+int64(len(p)), w.want)
	}
	n, err := w.w.Write(p)
	w.n += int64(n)
	return n, err
}

// Close checks that exactly the array's bytes were written.
func (w *Writer) Close() error {
	if w.n != w.want {
		return fmt.Errorf("npy: wrote %d data bytes, header promised %d", w.n, w.want)
	}
	return nil
}
