package compare

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/goldset/goldset/internal/dtype"
	"github.com/goldset/goldset/internal/safefile"
	"github.com/goldset/goldset/npy"
	"github.com/goldset/goldset/safetensors"
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

// ErrCandidate wraps verdicts reached from a candidate's header alone: a
// wrong shape, dtype or memory order (big-endian, Fortran). They are failed
// comparisons (exit 3), not unreadable files.
var ErrCandidate = errors.New("candidate does not match the golden")

// CheckCandidateDType accepts any float encoding for a float golden (<u2
// only as bfloat16 bits for a bfloat16 golden) and any integer encoding
// (|i1, <i2, <i4, <i8, |u1, <u2, <u4, <u8) for an integer golden: index
// outputs come as int64 from torch.topk, as int32 from most kernels, and
// as whatever narrower or unsigned type a kernel keeps them in. Whether
// each value fits the golden's dtype is checked as the data is read
// (ReadCandidate).
func CheckCandidateDType(d npy.DType, golden string) error {
	if _, ok := intBounds[golden]; ok {
		switch d {
		case npy.Int8, npy.Int16, npy.Int32, npy.Int64, npy.Uint8, npy.Uint16, npy.Uint32, npy.Uint64:
			return nil
		}
		return fmt.Errorf("%w: dtype %s for an %s output (want an integer: |i1, <i2, <i4, <i8, |u1, <u2, <u4 or <u8)", ErrCandidate, d, golden)
	}
	if golden == "bfloat16" {
		if d == npy.Uint16 || d == npy.Float32 || d == npy.Float64 {
			return nil
		}
		return fmt.Errorf("%w: dtype %s for a bfloat16 output (want <u2 bf16 bits, <f4 or <f8)", ErrCandidate, d)
	}
	switch d {
	case npy.Float16, npy.Float32, npy.Float64:
		return nil
	}
	return fmt.Errorf("%w: dtype %s for a %s output (want <f2, <f4 or <f8)", ErrCandidate, d, golden)
}

// intBounds are the values of each integer golden dtype: an integer
// candidate's values must lie within its golden's (a uint32 4294967295 is
// not an int32 -1, nor an int64 2^40 an int32 index).
var intBounds = map[string][2]int64{
	"int32":  {math.MinInt32, math.MaxInt32},
	"int64":  {math.MinInt64, math.MaxInt64},
	"uint8":  {0, math.MaxUint8},
	"uint16": {0, math.MaxUint16},
}

// decodeInto converts one chunk. For an integer golden (bounds non-nil)
// it returns the chunk position and text of the first value outside the
// bounds, or -1; every value inside them is exact in float64 but int64
// values beyond 2^53, which round to the nearest float64 and so stay
// wrong where the golden is an index.
func decodeInto(dst []float64, d npy.DType, bf16 bool, data []byte, bounds *[2]int64) (int, string, error) {
	if d == npy.Int64 || d == npy.Uint64 {
		for i := range dst {
			u := binary.LittleEndian.Uint64(data[8*i:])
			v := int64(u)
			if d == npy.Uint64 && u > math.MaxInt64 || v < bounds[0] || v > bounds[1] {
				if d == npy.Uint64 {
					return i, strconv.FormatUint(u, 10), nil
				}
				return i, strconv.FormatInt(v, 10), nil
			}
			dst[i] = float64(v)
		}
		return -1, "", nil
	}
	if err := npy.DecodeFloat64(dst, d, bf16, data); err != nil {
		return -1, "", err
	}
	if bounds != nil {
		for i, v := range dst {
			if v < float64(bounds[0]) || v > float64(bounds[1]) {
				return i, strconv.FormatFloat(v, 'f', -1, 64), nil
			}
		}
	}
	return -1, "", nil
}

// candidateChunk is how many data bytes ReadCandidate reads between
// context checks and progress reports (a multiple of every item size).
const candidateChunk = 16 << 20

// ReadCandidate reads a kernel's output file for a golden of logical dtype
// golden and shape. The file must be a regular file (links, FIFOs and
// devices are refused before it is opened, see internal/safefile). Its
// header is read and judged first — shape, dtype and memory order, each a
// failure wrapping ErrCandidate — and the file size must match the header
// (npy.ErrTruncated, npy.ErrTrailingData) before any data is allocated or
// read. The data is then read in chunks, checking ctx and calling progress
// (may be nil) with the bytes read so far.
func ReadCandidate(ctx context.Context, path, golden string, shape []int64, progress func(done, total int64)) ([]float64, error) {
	return ReadCandidateTensor(ctx, path, "", golden, shape, progress)
}

// ReadCandidateTensor is ReadCandidate for a file in any of the three
// forms a kernel's output comes in, told apart by the name's extension:
//
//   - .safetensors: the tensor called key (its dtype and shape from the
//     file's header, validated as package safetensors does);
//   - .bin: raw little-endian data in the golden's stored dtype (bfloat16
//     as its bits, the byte formats as bytes), shape from the manifest: the
//     size must be exactly that many bytes;
//   - anything else: .npy.
func ReadCandidateTensor(ctx context.Context, path, key, golden string, shape []int64, progress func(done, total int64)) ([]float64, error) {
	f, err := safefile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("compare: candidate: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("compare: candidate: %w", err)
	}
	var h npy.Header
	var off, have int64
	var r io.Reader = f
	switch strings.ToLower(filepath.Ext(path)) {
	case ".safetensors":
		sh, err := safetensors.ReadHeader(bufio.NewReader(f), st.Size())
		if err != nil {
			return nil, fmt.Errorf("compare: candidate %s: %w", path, err)
		}
		info, ok := sh.Tensor(key)
		if !ok {
			var names []string
			for _, t := range sh.Tensors {
				names = append(names, t.Name)
			}
			return nil, fmt.Errorf("compare: candidate %s: %w: no tensor %q (tensors: %s)", path, ErrCandidate, key, strings.Join(names, ", "))
		}
		d, err := stCandidateDType(info.DType, golden)
		if err != nil {
			return nil, fmt.Errorf("compare: candidate %s tensor %s: %w", path, key, err)
		}
		h = npy.Header{Descr: d, Shape: info.Shape}
		off, have = sh.DataStart+info.Begin, info.End-info.Begin
		r = io.NewSectionReader(f, off, have)
	case ".bin":
		d, ok := storedDescr(golden)
		if !ok {
			return nil, fmt.Errorf("compare: candidate %s: %w: no raw form for a %s golden", path, ErrCandidate, golden)
		}
		h = npy.Header{Descr: d, Shape: shape}
		if want := h.NumBytes(); want < 0 || st.Size() != want {
			return nil, fmt.Errorf("compare: candidate %s: %w: %d bytes, a raw %s %v is %d bytes", path, ErrCandidate, st.Size(), golden, shape, want)
		}
		have = st.Size()
	default:
		hh, hoff, err := npy.ReadHeader(f)
		if err != nil {
			if errors.Is(err, npy.ErrUnsupportedDType) || errors.Is(err, npy.ErrFortranOrder) {
				return nil, fmt.Errorf("compare: candidate %s: %w: %v", path, ErrCandidate, err)
			}
			return nil, fmt.Errorf("compare: candidate: %w", err)
		}
		h, off, have = hh, hoff, st.Size()-hoff
	}
	if !slices.Equal(h.Shape, shape) {
		return nil, fmt.Errorf("compare: candidate %s: %w: shape %v, golden %v", path, ErrCandidate, h.Shape, shape)
	}
	if dt, ok := byteCoded(golden); ok {
		return readByteCoded(ctx, r, have, path, h, dt)
	}
	if err := CheckCandidateDType(h.Descr, golden); err != nil {
		return nil, fmt.Errorf("compare: candidate %s: %w", path, err)
	}
	want := h.NumBytes()
	switch {
	case have < want:
		return nil, fmt.Errorf("compare: candidate %s: %w: shape %v of %s needs %d data bytes, file has %d", path, npy.ErrTruncated, h.Shape, h.Descr, want, have)
	case have > want:
		return nil, fmt.Errorf("compare: candidate %s: %w: %d bytes after the data", path, npy.ErrTrailingData, have-want)
	}
	f2 := r
	size := int64(h.Descr.ItemSize())
	n := want / size
	if n > math.MaxInt/8 {
		return nil, fmt.Errorf("compare: candidate %s: %w: %d elements do not fit in memory", path, ErrShape, n)
	}
	bf16 := golden == "bfloat16" && h.Descr == npy.Uint16
	var bounds *[2]int64
	if b, ok := intBounds[golden]; ok {
		bounds = &b
	}
	dst := make([]float64, n)
	buf := make([]byte, min(want, candidateChunk))
	for done := int64(0); done < want; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		k := min(int64(len(buf)), want-done)
		if _, err := io.ReadFull(f2, buf[:k]); err != nil {
			return nil, fmt.Errorf("compare: candidate %s: %w: %v (file changed while read?)", path, npy.ErrTruncated, err)
		}
		bad, val, err := decodeInto(dst[done/size:(done+k)/size], h.Descr, bf16, buf[:k], bounds)
		if err != nil {
			return nil, fmt.Errorf("compare: candidate %s: %w", path, err)
		}
		if bad >= 0 {
			return nil, fmt.Errorf("compare: candidate %s: %w: value %s (%s) at index %v does not fit the golden's %s",
				path, ErrCandidate, val, h.Descr, unravel(done/size+int64(bad), h.Shape), golden)
		}
		done += k
		if progress != nil {
			progress(done, want)
		}
	}
	return dst, nil
}

// stCandidateDType maps a safetensors dtype onto the .npy descriptor
// judged in its place: BF16 is bfloat16 bits (for a bfloat16 golden
// only), F8_E4M3 and U8 are bytes (the byte formats), U16 is never bf16.
func stCandidateDType(st, golden string) (npy.DType, error) {
	m := map[string]npy.DType{"F16": npy.Float16, "F32": npy.Float32, "F64": npy.Float64, "I8": npy.Int8, "I16": npy.Int16,
		"I32": npy.Int32, "I64": npy.Int64, "U8": npy.Uint8, "U16": npy.Uint16, "U32": npy.Uint32, "U64": npy.Uint64, "F8_E4M3": npy.Uint8}
	switch {
	case st == "BF16" && golden == "bfloat16":
		return npy.Uint16, nil
	case st == "U16" && golden == "bfloat16", st == "F8_E4M3" && golden != "float8_e4m3fn":
		return "", fmt.Errorf("%w: safetensors dtype %s for a %s output", ErrCandidate, st, golden)
	}
	d, ok := m[st]
	if !ok {
		return "", fmt.Errorf("%w: safetensors dtype %s for a %s output", ErrCandidate, st, golden)
	}
	return d, nil
}

// storedDescr is the .npy descriptor of a golden's stored dtype (the form
// of its raw .bin).
func storedDescr(golden string) (npy.DType, bool) {
	d, err := dtype.Parse(golden)
	if err != nil {
		return "", false
	}
	return d.Descr(), true
}
