package npy

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEncodeHeaderLayout(t *testing.T) {
	tests := []struct {
		h    Header
		want string // the dict, unpadded
	}{
		{Header{Descr: Float32, Shape: []int64{}}, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }"},
		{Header{Descr: Float16, Shape: []int64{3}}, "{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }"},
		{Header{Descr: Bool, Shape: []int64{0, 3}}, "{'descr': '|b1', 'fortran_order': False, 'shape': (0, 3), }"},
		{Header{Descr: Float64, Fortran: true, Shape: []int64{3, 2}}, "{'descr': '<f8', 'fortran_order': True, 'shape': (3, 2), }"},
	}
	for _, tc := range tests {
		b, err := EncodeHeader(tc.h)
		if err != nil {
			t.Fatal(err)
		}
		hlen := int(b[8]) | int(b[9])<<8
		if string(b[:8]) != "\x93NUMPY\x01\x00" || len(b) != PreambleLen1+hlen || len(b)%Align != 0 || b[len(b)-1] != '\n' {
			t.Fatalf("%+v: bad preamble or padding: %q", tc.h, b)
		}
		if got := strings.TrimRight(string(b[PreambleLen1:]), " \n"); got != tc.want {
			t.Errorf("%+v: dict %q, want %q", tc.h, got, tc.want)
		}
	}
}

// TestEncodeHeaderV2 uses a shape with so many dimensions that the header
// needs more than 65535 bytes: numpy would switch to format 2.0 (it cannot
// make such an array: it allows at most 64 dimensions).
func TestEncodeHeaderV2(t *testing.T) {
	shape := make([]int64, 22000)
	for i := range shape {
		shape[i] = 1
	}
	h := Header{Descr: Uint8, Shape: shape}
	b, err := EncodeHeader(h)
	if err != nil {
		t.Fatal(err)
	}
	if b[6] != 2 || len(b) <= math.MaxUint16 || len(b)%Align != 0 {
		t.Fatalf("version %d, length %d", b[6], len(b))
	}
	got, n, err := ReadHeader(bytes.NewReader(append(b, 7)))
	if err != nil || !got.equal(h) || n != int64(len(b)) {
		t.Fatalf("ReadHeader: %v, %d", err, n)
	}
	// Just under the switch: the largest shape that still fits 1.0.
	shape = shape[:21000]
	b, err = EncodeHeader(Header{Descr: Uint8, Shape: shape})
	if err != nil || b[6] != 1 {
		t.Fatalf("21000 dims: version %d, %v", b[6], err)
	}
}

func TestEncodeHeaderRejects(t *testing.T) {
	tests := []struct {
		h    Header
		want error
	}{
		{Header{Descr: "<c8", Shape: []int64{1}}, ErrUnsupportedDType},
		{Header{Descr: ">f4", Shape: []int64{1}}, ErrUnsupportedDType},
		{Header{Descr: "=f4", Shape: []int64{1}}, ErrUnsupportedDType},
		{Header{Descr: "", Shape: []int64{1}}, ErrUnsupportedDType},
		{Header{Descr: Float32, Shape: []int64{-1}}, ErrShape},
		{Header{Descr: Float32, Shape: []int64{1 << 32, 1 << 31}}, ErrShape},
		{Header{Descr: Float64, Shape: []int64{1 << 61}}, ErrShape},
	}
	for _, tc := range tests {
		if _, err := EncodeHeader(tc.h); !errors.Is(err, tc.want) {
			t.Errorf("EncodeHeader(%+v): %v, want %v", tc.h, err, tc.want)
		}
		if err := tc.h.Validate(); !errors.Is(err, tc.want) {
			t.Errorf("Validate(%+v): %v, want %v", tc.h, err, tc.want)
		}
		if _, err := NewWriter(&bytes.Buffer{}, tc.h); !errors.Is(err, tc.want) {
			t.Errorf("NewWriter(%+v): %v, want %v", tc.h, err, tc.want)
		}
	}
}

func TestWriterChecksSize(t *testing.T) {
	h := Header{Descr: Int32, Shape: []int64{2}}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(make([]byte, 5)); err != nil {
		t.Fatal(err)
	}
	if n, err := w.Write(make([]byte, 4)); n != 0 || !errors.Is(err, ErrShape) {
		t.Fatalf("write past end: %d, %v", n, err)
	}
	if _, err := w.Write(make([]byte, 1)); !errors.Is(err, ErrShape) {
		t.Fatalf("error is not sticky: %v", err)
	}
	if err := w.Close(); !errors.Is(err, ErrShape) {
		t.Fatalf("Close: %v", err)
	}

	w, _ = NewWriter(&bytes.Buffer{}, h)
	w.Write(make([]byte, 7))
	if err := w.Close(); !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), "wrote 7") {
		t.Fatalf("short Close: %v", err)
	}
	if w.Written() != 7 {
		t.Fatalf("Written = %d", w.Written())
	}
}

func TestCreateIsAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.npy")
	h := Header{Descr: Float32, Shape: []int64{4}}
	w, err := Create(path, h)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(make([]byte, 8))
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("file visible before Close: %v", err)
	}
	if err := w.Close(); !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Close of a short write: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left behind: %v", ents)
	}
	if err := WriteFile(path, h, make([]byte, 15)); !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), path) {
		t.Fatalf("WriteFile with wrong size: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left behind: %v", ents)
	}
	if err := WriteFile(path, h, AppendFloat32s(nil, []float32{1, 2, 3, 4})); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Size() != 128+16 || st.Mode().Perm() != 0o644 {
		t.Fatalf("written file: %v, %v", st, err)
	}
	if err := WriteFile(filepath.Join(dir, "no", "such", "dir.npy"), h, make([]byte, 16)); err == nil || !strings.Contains(err.Error(), "dir.npy") {
		t.Fatalf("WriteFile into a missing directory: %v", err)
	}
}

// TestWriteReadRoundTrip streams random arrays of every dtype in uneven
// chunks and reads them back three ways.
func TestWriteReadRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	dir := t.TempDir()
	for _, d := range []DType{Float16, Float32, Float64, Int32, Int64, Uint16, Uint8, Bool} {
		for _, shape := range [][]int64{{}, {0}, {1}, {3, 0, 2}, {5, 7}, {2, 3, 4, 5}} {
			h := Header{Descr: d, Shape: shape}
			data := make([]byte, h.NumBytes())
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			path := filepath.Join(dir, "rt.npy")
			w, err := Create(path, h)
			if err != nil {
				t.Fatal(err)
			}
			for rest := data; len(rest) > 0; {
				n := min(len(rest), 1+rng.IntN(13))
				if _, err := w.Write(rest[:n]); err != nil {
					t.Fatal(err)
				}
				rest = rest[n:]
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			gh, gd, err := ReadFile(path)
			if err != nil || !gh.equal(h) || !bytes.Equal(gd, data) {
				t.Fatalf("%s %v: ReadFile %+v, %v", d, shape, gh, err)
			}
			file, _ := os.ReadFile(path)
			ah, ad, err := ReadArray(bytes.NewReader(file), 1<<20)
			if err != nil || !ah.equal(h) || !bytes.Equal(ad, data) {
				t.Fatalf("%s %v: ReadArray %+v, %v", d, shape, ah, err)
			}
			var buf bytes.Buffer
			nw, err := NewWriter(&buf, h)
			if err != nil {
				t.Fatal(err)
			}
			nw.Write(data)
			if err := nw.Close(); err != nil || !bytes.Equal(buf.Bytes(), file) {
				t.Fatalf("%s %v: NewWriter bytes differ from Create's: %v", d, shape, err)
			}
		}
	}
}

func TestParseDType(t *testing.T) {
	tests := []struct {
		in   string
		want DType
		err  error
	}{
		{"<f2", Float16, nil}, {"<f4", Float32, nil}, {"<f8", Float64, nil}, {"<i4", Int32, nil},
		{"<i8", Int64, nil}, {"<u2", Uint16, nil}, {"|u1", Uint8, nil}, {"|b1", Bool, nil},
		{"=f8", Float64, nil}, {">u1", Uint8, nil}, {"<b1", Bool, nil},
		{"<i2", Int16, nil}, {"=i2", Int16, nil}, {"|i1", Int8, nil}, {"<i1", Int8, nil}, {"<u4", Uint32, nil}, {"<u8", Uint64, nil},
		{">f2", "", ErrUnsupportedDType}, {"|i4", "", ErrUnsupportedDType}, {">i2", "", ErrUnsupportedDType}, {"|u8", "", ErrUnsupportedDType},
		{"<i16", "", ErrUnsupportedDType}, {"<u3", "", ErrUnsupportedDType},
		{"f4", "", ErrUnsupportedDType}, {"", "", ErrUnsupportedDType}, {"<", "", ErrUnsupportedDType},
		{"float32", "", ErrUnsupportedDType}, {"<U8", "", ErrUnsupportedDType},
	}
	for _, tc := range tests {
		got, err := ParseDType(tc.in)
		if got != tc.want || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("ParseDType(%q) = %q, %v; want %q, %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestNumElems(t *testing.T) {
	tests := []struct {
		shape        []int64
		elems, bytes int64
	}{
		{nil, 1, 8},
		{[]int64{}, 1, 8},
		{[]int64{0}, 0, 0},
		{[]int64{2, 3, 4}, 24, 192},
		{[]int64{-1}, -1, -1},
		{[]int64{1 << 62, 2}, -1, -1}, // 2^63 overflows
		{[]int64{1 << 60, 4}, 1 << 62, -1},
		{[]int64{0, 1 << 40, 1 << 40}, -1, -1}, // numpy: too big despite the zero
		{[]int64{0, 1 << 40}, 0, 0},
	}
	for _, tc := range tests {
		h := Header{Descr: Float64, Shape: tc.shape}
		if h.NumElems() != tc.elems || h.NumBytes() != tc.bytes {
			t.Errorf("%v: NumElems %d NumBytes %d, want %d %d", tc.shape, h.NumElems(), h.NumBytes(), tc.elems, tc.bytes)
		}
	}
	if (Header{Descr: "x"}).NumBytes() != -1 {
		t.Error("NumBytes of an unknown dtype")
	}
}
