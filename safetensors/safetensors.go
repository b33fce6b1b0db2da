package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strconv"
	"unicode/utf8"
)

// MaxHeader is the largest header the reference reader accepts.
const MaxHeader = 100_000_000

// ErrFormat wraps every reason a file is not valid safetensors.
var ErrFormat = errors.New("not a valid safetensors file")

// dtypes lists the format's dtype names in the reference's enum order (the
// rank Encode sorts by) with their item sizes in bytes.
var dtypes = []struct {
	name string
	size int
}{
	{"BOOL", 1}, {"U8", 1}, {"I8", 1}, {"F8_E5M2", 1}, {"F8_E4M3", 1},
	{"I16", 2}, {"U16", 2}, {"F16", 2}, {"BF16", 2},
	{"I32", 4}, {"U32", 4}, {"F32", 4}, {"F64", 8}, {"I64", 8}, {"U64", 8},
}

func rank(dtype string) (int, int, bool) {
	for i, d := range dtypes {
		if d.name == dtype {
			return i, d.size, true
		}
	}
	return 0, 0, false
}

// ItemSize returns the bytes per element of a safetensors dtype, 0 for an
// unknown one.
func ItemSize(dtype string) int {
	_, s, _ := rank(dtype)
	return s
}

// Tensor is one tensor to encode.
type Tensor struct {
	Name  string
	DType string // a safetensors dtype name: "BF16", "F32", ...
	Shape []int64
	Data  []byte
	// Len is the data length of a tensor whose Data is nil because the
	// caller streams it after the header (EncodeHeader only).
	Len int64
}

// Info is one tensor of a header; Begin and End are offsets into the data.
type Info struct {
	Name       string
	DType      string
	Shape      []int64
	Begin, End int64
}

// Header is a decoded header: its metadata and its tensors in data order.
type Header struct {
	Metadata map[string]string
	Tensors  []Info
	// DataStart is the file offset of the data (8 + N).
	DataStart int64
}

// Tensor returns the tensor called name, or false.
func (h *Header) Tensor(name string) (Info, bool) {
	for _, t := range h.Tensors {
		if t.Name == name {
			return t, true
		}
	}
	return Info{}, false
}

// byteCount is the data size of shape in dtype; false on overflow or a
// negative dimension.
func byteCount(shape []int64, size int) (int64, bool) {
	n := uint64(size)
	for _, d := range shape {
		if d < 0 {
			return 0, false
		}
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			return 0, false
		}
		n = lo
	}
	return int64(n), true
}

// order sorts tensors as the reference's prepare does: descending dtype
// rank, then name.
func order(ts []Tensor) []Tensor {
	s := slices.Clone(ts)
	sort.SliceStable(s, func(i, j int) bool {
		ri, _, _ := rank(s[i].DType)
		rj, _, _ := rank(s[j].DType)
		if ri != rj {
			return ri > rj
		}
		return s[i].Name < s[j].Name
	})
	return s
}

// EncodeHeader returns the 8-byte length and the padded header for ts and
// meta, and ts in data order. Every tensor's data length must match its
// dtype and shape, names must be unique and non-empty.
func EncodeHeader(meta map[string]string, ts []Tensor) ([]byte, []Tensor, error) {
	ts = order(ts)
	var b bytes.Buffer
	b.WriteByte('{')
	if len(meta) > 0 {
		m, err := json.Marshal(meta) // map keys are sorted
		if err != nil {
			return nil, nil, err
		}
		b.WriteString(`"__metadata__":`)
		b.Write(m)
	}
	seen := map[string]bool{}
	var off int64
	for i, t := range ts {
		_, size, ok := rank(t.DType)
		if !ok {
			return nil, nil, fmt.Errorf("safetensors: tensor %q: unknown dtype %q", t.Name, t.DType)
		}
		if t.Name == "" || t.Name == "__metadata__" || seen[t.Name] {
			return nil, nil, fmt.Errorf("safetensors: tensor name %q empty, reserved or repeated", t.Name)
		}
		seen[t.Name] = true
		n, ok := byteCount(t.Shape, size)
		have := int64(len(t.Data))
		if t.Data == nil {
			have = t.Len
		}
		if !ok || n != have {
			return nil, nil, fmt.Errorf("safetensors: tensor %q: %d data bytes for %s %v", t.Name, have, t.DType, t.Shape)
		}
		if i > 0 || len(meta) > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(t.Name)
		b.Write(name)
		b.WriteString(`:{"dtype":"` + t.DType + `","shape":[`)
		for k, d := range t.Shape {
			if k > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatInt(d, 10))
		}
		b.WriteString(`],"data_offsets":[` + strconv.FormatInt(off, 10) + "," + strconv.FormatInt(off+n, 10) + "]}")
		off += n
	}
	b.WriteByte('}')
	for b.Len()%8 != 0 {
		b.WriteByte(' ')
	}
	if b.Len() > MaxHeader {
		return nil, nil, fmt.Errorf("safetensors: header of %d bytes exceeds %d", b.Len(), MaxHeader)
	}
	out := binary.LittleEndian.AppendUint64(make([]byte, 0, 8+b.Len()), uint64(b.Len()))
	return append(out, b.Bytes()...), ts, nil
}

// Encode writes ts and meta to w as one safetensors file.
func Encode(w io.Writer, meta map[string]string, ts []Tensor) error {
	hdr, sorted, err := EncodeHeader(meta, ts)
	if err != nil {
		return err
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	for _, t := range sorted {
		if _, err := w.Write(t.Data); err != nil {
			return err
		}
	}
	return nil
}

type rawInfo struct {
	DType       string   `json:"dtype"`
	Shape       []int64  `json:"shape"`
	DataOffsets []*int64 `json:"data_offsets"`
}

// ReadHeader reads and validates the header of a safetensors file of
// fileSize bytes from r (positioned at its start). See the package
// documentation for the checks.
func ReadHeader(r io.Reader, fileSize int64) (*Header, error) {
	if fileSize < 8 {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the 8-byte header length", ErrFormat, fileSize)
	}
	var lb [8]byte
	if _, err := io.ReadFull(r, lb[:]); err != nil {
		return nil, fmt.Errorf("%w: header length: %v", ErrFormat, err)
	}
	n := binary.LittleEndian.Uint64(lb[:])
	if n > MaxHeader {
		return nil, fmt.Errorf("%w: header length %d exceeds %d", ErrFormat, n, MaxHeader)
	}
	if int64(n) > fileSize-8 {
		return nil, fmt.Errorf("%w: header length %d, but the file has %d bytes after it", ErrFormat, n, fileSize-8)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrFormat, err)
	}
	return ParseHeader(buf, fileSize)
}

// ParseHeader validates header bytes (without the 8-byte length) of a file
// of fileSize bytes.
func ParseHeader(buf []byte, fileSize int64) (*Header, error) {
	if !utf8.Valid(buf) {
		return nil, fmt.Errorf("%w: header is not UTF-8", ErrFormat)
	}
	trim := bytes.TrimRight(buf, " ")
	if len(trim) == 0 || trim[0] != '{' {
		return nil, fmt.Errorf("%w: header does not start with '{'", ErrFormat)
	}
	dec := json.NewDecoder(bytes.NewReader(trim))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrFormat, err)
	}
	h := &Header{DataStart: 8 + int64(len(buf))}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: header: %v", ErrFormat, err)
		}
		key, _ := tok.(string)
		if seen[key] {
			return nil, fmt.Errorf("%w: header names %q twice", ErrFormat, key)
		}
		seen[key] = true
		if key == "__metadata__" {
			if err := dec.Decode(&h.Metadata); err != nil {
				return nil, fmt.Errorf("%w: __metadata__ must map strings to strings: %v", ErrFormat, err)
			}
			continue
		}
		var ri rawInfo
		if err := dec.Decode(&ri); err != nil {
			return nil, fmt.Errorf("%w: tensor %q: %v", ErrFormat, key, err)
		}
		if len(ri.DataOffsets) != 2 || ri.DataOffsets[0] == nil || ri.DataOffsets[1] == nil || ri.Shape == nil {
			return nil, fmt.Errorf("%w: tensor %q: want dtype, shape and two data_offsets", ErrFormat, key)
		}
		h.Tensors = append(h.Tensors, Info{Name: key, DType: ri.DType, Shape: ri.Shape, Begin: *ri.DataOffsets[0], End: *ri.DataOffsets[1]})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrFormat, err)
	}
	if dec.More() || dec.InputOffset() != int64(len(trim)) {
		return nil, fmt.Errorf("%w: data after the header's JSON object", ErrFormat)
	}
	sort.SliceStable(h.Tensors, func(i, j int) bool { return h.Tensors[i].Begin < h.Tensors[j].Begin })
	var at int64
	for _, t := range h.Tensors {
		_, size, ok := rank(t.DType)
		if !ok {
			return nil, fmt.Errorf("%w: tensor %q: unknown dtype %q", ErrFormat, t.Name, t.DType)
		}
		nb, ok := byteCount(t.Shape, size)
		if !ok {
			return nil, fmt.Errorf("%w: tensor %q: shape %v overflows or is negative", ErrFormat, t.Name, t.Shape)
		}
		if t.Begin != at || t.End < t.Begin || t.End-t.Begin != nb {
			return nil, fmt.Errorf("%w: tensor %q: data_offsets [%d, %d] (want [%d, %d] for %s %v)", ErrFormat, t.Name, t.Begin, t.End, at, at+nb, t.DType, t.Shape)
		}
		at = t.End
	}
	if h.DataStart+at != fileSize {
		return nil, fmt.Errorf("%w: tensors end at %d, the file has %d bytes", ErrFormat, h.DataStart+at, fileSize)
	}
	return h, nil
}
