package compare

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goldset/goldset/internal/safefile"
	"github.com/goldset/goldset/npy"
)

func TestReadCandidate(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, h npy.Header, data []byte) string {
		p := filepath.Join(dir, name)
		if err := npy.WriteFile(p, h, data); err != nil {
			t.Fatal(err)
		}
		return p
	}
	shape := []int64{2, 3}
	i64 := write("i64.npy", npy.Header{Descr: npy.Int64, Shape: shape}, npy.AppendInt64s(nil, []int64{0, 5, -1, 7, 1 << 40, 3}))
	i64fit := write("i64fit.npy", npy.Header{Descr: npy.Int64, Shape: shape}, npy.AppendInt64s(nil, []int64{0, 5, -1, 7, math.MaxInt32, math.MinInt32}))
	le := func(size int, v ...uint64) []byte {
		var b []byte
		for _, x := range v {
			for k := range size {
				b = append(b, byte(x>>(8*k)))
			}
		}
		return b
	}
	i8 := write("i8.npy", npy.Header{Descr: npy.Int8, Shape: shape}, []byte{0, 5, 0xff, 7, 0x80, 0x7f})
	i16 := write("i16.npy", npy.Header{Descr: npy.Int16, Shape: shape}, le(2, 0, 5, 0xffff, 7, 0x8000, 300))
	u32 := write("u32.npy", npy.Header{Descr: npy.Uint32, Shape: shape}, le(4, 0, 5, 1, 7, math.MaxInt32, 3))
	u32big := write("u32big.npy", npy.Header{Descr: npy.Uint32, Shape: shape}, le(4, 0, 5, 0xffffffff, 7, 2, 3))
	u64 := write("u64.npy", npy.Header{Descr: npy.Uint64, Shape: shape}, le(8, 0, 5, 1, 7, 1<<40, 3))
	u64neg := write("u64neg.npy", npy.Header{Descr: npy.Uint64, Shape: shape}, le(8, 0, 5, 1, 7, 2, math.MaxUint64))
	f16 := write("f16.npy", npy.Header{Descr: npy.Float16, Shape: shape}, npy.AppendUint16s(nil, []uint16{0x3c00, 0, 0, 0, 0, 0xbc00}))
	long := write("long.npy", npy.Header{Descr: npy.Float32, Shape: []int64{6}}, make([]byte, 24))
	for _, tc := range []struct {
		name, path, golden string
		want               []float64
		err                error
		msg                string // in the error
	}{
		{"int64 for int32", i64fit, "int32", []float64{0, 5, -1, 7, math.MaxInt32, math.MinInt32}, nil, ""},
		{"int64 for int64", i64, "int64", []float64{0, 5, -1, 7, 1 << 40, 3}, nil, ""},
		{"int64 beyond int32", i64, "int32", nil, ErrCandidate, "value 1099511627776 (<i8) at index [1 1] does not fit the golden's int32"},
		{"int8 for int32", i8, "int32", []float64{0, 5, -1, 7, -128, 127}, nil, ""},
		{"int8 for uint8", i8, "uint8", nil, ErrCandidate, "value -1 (|i1) at index [0 2] does not fit the golden's uint8"},
		{"int16 for int32", i16, "int32", []float64{0, 5, -1, 7, -32768, 300}, nil, ""},
		{"int16 for uint8", i16, "uint8", nil, ErrCandidate, "value -1 (<i2) at index [0 2]"},
		{"uint32 for int32", u32, "int32", []float64{0, 5, 1, 7, math.MaxInt32, 3}, nil, ""},
		{"uint32 beyond int32", u32big, "int32", nil, ErrCandidate, "value 4294967295 (<u4) at index [0 2] does not fit the golden's int32"},
		{"uint32 for int64", u32big, "int64", []float64{0, 5, math.MaxUint32, 7, 2, 3}, nil, ""},
		{"uint64 for int32", u64, "int32", nil, ErrCandidate, "value 1099511627776 (<u8) at index [1 1]"},
		{"uint64 for int64", u64, "int64", []float64{0, 5, 1, 7, 1 << 40, 3}, nil, ""},
		{"uint64 beyond int64", u64neg, "int64", nil, ErrCandidate, "value 18446744073709551615 (<u8) at index [1 2] does not fit the golden's int64"},
		{"uint64 for uint16", u64, "uint16", nil, ErrCandidate, "at index [1 1]"},
		{"int8 for float32", i8, "float32", nil, ErrCandidate, "want <f2, <f4 or <f8"},
		{"float16 for float16", f16, "float16", []float64{1, 0, 0, 0, 0, -1}, nil, ""},
		{"float16 for int32", f16, "int32", nil, ErrCandidate, "want an integer"},
		{"int64 for float32", i64, "float32", nil, ErrCandidate, ""},
		{"wrong shape", long, "float32", nil, ErrCandidate, ""},
	} {
		got, err := ReadCandidate(context.Background(), tc.path, tc.golden, shape, nil)
		if !errors.Is(err, tc.err) || (tc.err == nil && len(got) != len(tc.want)) {
			t.Errorf("%s: %v %v", tc.name, got, err)
			continue
		}
		if err != nil && (!strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), tc.path)) {
			t.Errorf("%s: error %q does not name the file and say %q", tc.name, err, tc.msg)
		}
		for i := range tc.want {
			if got[i] != tc.want[i] {
				t.Errorf("%s: [%d] = %v, want %v", tc.name, i, got[i], tc.want[i])
			}
		}
	}
	// A header promising more data than the file holds is refused before
	// any allocation of that size: 1<<40 elements would be 8 TiB of float64.
	hb, _ := npy.EncodeHeader(npy.Header{Descr: npy.Float32, Shape: []int64{1 << 40}})
	huge := filepath.Join(dir, "huge.npy")
	os.WriteFile(huge, hb, 0o644)
	if _, err := ReadCandidate(context.Background(), huge, "float32", []int64{1 << 40}, nil); !errors.Is(err, npy.ErrTruncated) {
		t.Errorf("truncated huge candidate: %v", err)
	}
	link := filepath.Join(dir, "link.npy")
	os.Symlink(f16, link)
	if _, err := ReadCandidate(context.Background(), link, "float16", shape, nil); !errors.Is(err, safefile.ErrNotRegular) {
		t.Errorf("symlinked candidate: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ReadCandidate(ctx, f16, "float16", shape, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled read: %v", err)
	}
}
