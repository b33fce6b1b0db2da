package npy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rawFile builds a .npy file from a header dict as given (padding as numpy
// does) and a data payload.
func rawFile(major byte, dict string, data []byte) []byte {
	pre := PreambleLen1
	if major > 1 {
		pre = PreambleLen2
	}
	hlen := len(dict) + 1
	pad := Align - (pre+hlen)%Align
	b := []byte("\x93NUMPY")
	b = append(b, major, 0)
	if major == 1 {
		b = binary.LittleEndian.AppendUint16(b, uint16(hlen+pad))
	} else {
		b = binary.LittleEndian.AppendUint32(b, uint32(hlen+pad))
	}
	b = append(b, dict...)
	b = append(b, bytes.Repeat([]byte{' '}, pad)...)
	b = append(b, '\n')
	return append(b, data...)
}

func dict(descr, fortran, shape string) string {
	return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }"
}

func TestReadHeaderAccepts(t *testing.T) {
	tests := []struct {
		name  string
		major byte
		dict  string
		want  Header
	}{
		{"numpy style", 1, dict("<f4", "False", "(2, 3)"), Header{Descr: Float32, Shape: []int64{2, 3}}},
		{"0-d", 1, dict("<f8", "False", "()"), Header{Descr: Float64, Shape: []int64{}}},
		{"1-d", 1, dict("<i4", "False", "(7,)"), Header{Descr: Int32, Shape: []int64{7}}},
		{"keys in any order, double quotes", 1, `{"shape": (4, 5), "descr": "<f2", "fortran_order": False}`, Header{Descr: Float16, Shape: []int64{4, 5}}},
		{"whitespace everywhere", 1, "  {\t'descr' :'<u2' ,\n'fortran_order':False,'shape':( 1 ,2 , 3 , ) }\r\n", Header{Descr: Uint16, Shape: []int64{1, 2, 3}}},
		{"no trailing comma", 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (0,)}", Header{Descr: Uint8, Shape: []int64{0}}},
		{"native order '='", 1, dict("=f4", "False", "(1,)"), Header{Descr: Float32, Shape: []int64{1}}},
		{"one-byte '<u1'", 1, dict("<u1", "False", "(1,)"), Header{Descr: Uint8, Shape: []int64{1}}},
		{"one-byte '=b1'", 1, dict("=b1", "False", "(1,)"), Header{Descr: Bool, Shape: []int64{1}}},
		{"python 2 long suffix", 1, dict("<i8", "False", "(3L, 4L)"), Header{Descr: Int64, Shape: []int64{3, 4}}},
		{"version 2.0", 2, dict("<f4", "False", "(2,)"), Header{Descr: Float32, Shape: []int64{2}}},
		{"version 3.0", 3, dict("<f4", "False", "(2,)"), Header{Descr: Float32, Shape: []int64{2}}},
		{"max int64 dim, zero size", 1, dict("|u1", "False", "(9223372036854775807, 0)"), Header{Descr: Uint8, Shape: []int64{math.MaxInt64, 0}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := rawFile(tc.major, tc.dict, nil)
			h, n, err := ReadHeader(bytes.NewReader(file))
			if err != nil {
				t.Fatal(err)
			}
			if !h.equal(tc.want) || n != int64(len(file)) {
				t.Fatalf("got %+v, %d bytes; want %+v, %d", h, n, tc.want, len(file))
			}
		})
	}
}

func TestBadInputs(t *testing.T) {
	good := rawFile(1, dict("<f4", "False", "(2, 3)"), make([]byte, 24))
	withLen := func(b []byte, n uint16) []byte {
		b = bytes.Clone(b)
		binary.LittleEndian.PutUint16(b[8:], n)
		return b
	}
	v2Len := func(n uint32) []byte {
		b := []byte("\x93NUMPY\x02\x00")
		return binary.LittleEndian.AppendUint32(b, n)
	}
	tests := []struct {
		name string
		file []byte
		want error
		msg  string // substring the message must hold
	}{
		{"empty file", nil, ErrTruncated, "preamble"},
		{"truncated preamble", good[:5], ErrTruncated, "preamble"},
		{"truncated length field", good[:9], ErrTruncated, "header length"},
		{"truncated data", good[:len(good)-1], ErrTruncated, "needs 24 data bytes"},
		{"no data at all", good[:len(good)-24], ErrTruncated, "has 0"},
		{"wrong magic", append([]byte("\x93NUMPX"), good[6:]...), ErrFormat, "magic"},
		{"zip file", append([]byte("PK\x03\x04"), good[4:]...), ErrFormat, "magic"},
		{"version 4.0", append([]byte("\x93NUMPY\x04\x00"), good[8:]...), ErrFormat, "version 4.0"},
		{"version 1.1", append([]byte("\x93NUMPY\x01\x01"), good[8:]...), ErrFormat, "version 1.1"},
		{"header length past EOF", withLen(good, 60000), ErrTruncated, "header (60000 bytes)"},
		{"v2 header length over the cap", v2Len(MaxHeaderLen + 1), ErrFormat, "exceeds the limit"},
		{"v2 header length 4 GiB", v2Len(math.MaxUint32), ErrFormat, "exceeds the limit"},
		{"zero header length", withLen(good, 0)[:10], ErrFormat, "does not start"},
		{"shape product overflows int64", rawFile(1, dict("<f4", "False", "(4294967296, 4294967296)"), nil), ErrShape, "overflows int64"},
		{"byte count overflows int64", rawFile(1, dict("<f8", "False", "(2305843009213693952,)"), nil), ErrShape, "overflows int64"},
		{"overflow hidden behind a zero dim", rawFile(1, dict("<f4", "False", "(0, 4294967296, 4294967296)"), nil), ErrShape, "overflows int64"},
		{"dim past int64", rawFile(1, dict("<f4", "False", "(9223372036854775808,)"), nil), ErrFormat, "int64 range"},
		{"negative dim", rawFile(1, dict("<f4", "False", "(2, -3)"), nil), ErrShape, "negative"},
		{"unknown descr", rawFile(1, dict("<c8", "False", "(2,)"), make([]byte, 16)), ErrUnsupportedDType, `"<c8"`},
		{"object descr", rawFile(1, dict("|O", "False", "(2,)"), nil), ErrUnsupportedDType, `"|O"`},
		{"big-endian descr", rawFile(1, dict(">f4", "False", "(2,)"), make([]byte, 8)), ErrUnsupportedDType, "big-endian"},
		{"'|' on a multi-byte type", rawFile(1, dict("|f4", "False", "(2,)"), make([]byte, 8)), ErrUnsupportedDType, "one-byte"},
		{"structured dtype", rawFile(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", nil), ErrUnsupportedDType, "structured"},
		{"Fortran order", rawFile(1, dict("<f4", "True", "(2, 3)"), make([]byte, 24)), ErrFortranOrder, "ascontiguousarray"},
		{"trailing bytes", append(bytes.Clone(good), 0), ErrTrailingData, "after the 24 data bytes"},
		{"missing key", rawFile(1, "{'descr': '<f4', 'shape': (2,), }", nil), ErrFormat, `"fortran_order" missing`},
		{"extra key", rawFile(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", nil), ErrFormat, `unexpected key "x"`},
		{"duplicate key", rawFile(1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", nil), ErrFormat, "duplicate"},
		{"shape (n) is not a tuple", rawFile(1, dict("<f4", "False", "(2)"), nil), ErrFormat, "not a tuple"},
		{"shape as list", rawFile(1, dict("<f4", "False", "[2]"), nil), ErrFormat, "not a tuple"},
		{"fortran_order 0", rawFile(1, dict("<f4", "0", "(2,)"), nil), ErrFormat, "True or False"},
		{"Truex", rawFile(1, dict("<f4", "Truex", "(2,)"), nil), ErrFormat, "True or False"},
		{"hex dim", rawFile(1, dict("<f4", "False", "(0x10,)"), nil), ErrFormat, "after dimension"},
		{"leading zeros", rawFile(1, dict("<f4", "False", "(010,)"), nil), ErrFormat, "leading zeros"},
		{"long suffix in v3", rawFile(3, dict("<f4", "False", "(2L,)"), nil), ErrFormat, "after dimension"},
		{"garbage after dict", rawFile(1, dict("<f4", "False", "(2,)")+" x", make([]byte, 8)), ErrFormat, "after the dict"},
		{"unterminated string", rawFile(1, "{'descr: '<f4'}", nil), ErrFormat, ""},
		{"non-ASCII in string", rawFile(3, "{'descr': '<f4\u00e9', 'fortran_order': False, 'shape': (2,)}", nil), ErrFormat, "unsupported character"},
		{"escape in string", rawFile(1, `{'descr': '<f\x34', 'fortran_order': False, 'shape': (2,)}`, nil), ErrFormat, "unsupported character"},
		{"empty dict", rawFile(1, "{}", nil), ErrFormat, "missing"},
		{"not a dict", rawFile(1, "[1, 2]", nil), ErrFormat, "does not start"},
		{"unclosed dict", rawFile(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,),", nil), ErrFormat, ""},
		{"unclosed tuple", rawFile(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3", nil), ErrFormat, ""},
	}
	dir := t.TempDir()
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "case"+string(rune('a'+i%26))+strings.Repeat("_", i/26)+".npy")
			if err := os.WriteFile(path, tc.file, 0o644); err != nil {
				t.Fatal(err)
			}
			check := func(what string, err error, name string) {
				t.Helper()
				if !errors.Is(err, tc.want) {
					t.Fatalf("%s: error %v, want %v", what, err, tc.want)
				}
				if !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), tc.msg) || !strings.HasPrefix(err.Error(), "npy: ") {
					t.Fatalf("%s: message %q should start with \"npy: \" and name %q and say %q", what, err, name, tc.msg)
				}
			}
			quoted := `"` + path + `"`
			_, err := Open(path)
			check("Open", err, quoted)
			_, _, err = ReadFile(path)
			check("ReadFile", err, quoted)
			_, _, err = ReadArray(bytes.NewReader(tc.file), 1<<20)
			check("ReadArray", err, `"<stream>"`)
			if tc.want != ErrTrailingData && !strings.HasPrefix(tc.msg, "needs") && !strings.HasPrefix(tc.msg, "has 0") {
				f, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				_, _, err = ReadHeader(f)
				check("ReadHeader", err, quoted)
			}
		})
	}
}

// TestOpenReadsExactlyTheData covers File.Read, ReadAt and the shrinking
// file case.
func TestOpenReadsExactlyTheData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.npy")
	data := AppendInt32s(nil, []int32{1, -2, 3, -4, 5, -6})
	h := Header{Descr: Int32, Shape: []int64{2, 3}}
	if err := WriteFile(path, h, data); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.DataOffset != 128 || f.Size() != 24 || !f.Header.equal(h) || f.Name != path {
		t.Fatalf("Open: %+v", f)
	}
	got := make([]byte, 100)
	n, err := f.Read(got)
	if n != 24 || err != nil || !bytes.Equal(got[:n], data) {
		t.Fatalf("Read = %d, %v", n, err)
	}
	if n, err := f.Read(got); n != 0 || err == nil || err.Error() != "EOF" {
		t.Fatalf("Read at end = %d, %v; want 0, io.EOF", n, err)
	}
	if n, err := f.ReadAt(got[:8], 16); n != 8 || err != nil || !bytes.Equal(got[:8], data[16:]) {
		t.Fatalf("ReadAt = %d, %v", n, err)
	}
	if err := os.Truncate(path, 128+10); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadAt(got[:8], 8); !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), path) {
		t.Fatalf("ReadAt after truncation: %v", err)
	}
	if _, err := Open(filepath.Dir(path)); !errors.Is(err, ErrFormat) {
		t.Fatalf("Open(directory): %v", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing.npy")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open(missing): %v", err)
	}
}

func TestReadArrayLimit(t *testing.T) {
	file := rawFile(1, dict("<f8", "False", "(1000,)"), make([]byte, 8000))
	if _, _, err := ReadArray(bytes.NewReader(file), 7999); !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("ReadArray over the limit: %v", err)
	}
	h, data, err := ReadArray(bytes.NewReader(file), 8000)
	if err != nil || len(data) != 8000 || h.NumElems() != 1000 {
		t.Fatalf("ReadArray at the limit: %v", err)
	}
	// A header promising 1 GiB followed by 3 bytes must fail without
	// allocating the gigabyte.
	huge := rawFile(1, dict("|u1", "False", "(1073741824,)"), []byte{1, 2, 3})
	var ms0, ms1 runtimeMem
	ms0.read()
	_, _, err = ReadArray(bytes.NewReader(huge), 1<<31)
	ms1.read()
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("ReadArray: %v", err)
	}
	if d := ms1.total - ms0.total; d > 4<<20 {
		t.Fatalf("ReadArray allocated %d bytes for a 3-byte stream", d)
	}
}
