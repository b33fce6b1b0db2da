package compare

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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
	f16 := write("f16.npy", npy.Header{Descr: npy.Float16, Shape: shape}, npy.AppendUint16s(nil, []uint16{0x3c00, 0, 0, 0, 0, 0xbc00}))
	long := write("long.npy", npy.Header{Descr: npy.Float32, Shape: []int64{6}}, make([]byte, 24))
	for _, tc := range []struct {
		name, path, golden string
		want               []float64
		err                error
	}{
		{"int64 for int32", i64, "int32", []float64{0, 5, -1, 7, 1 << 40, 3}, nil},
		{"float16 for float16", f16, "float16", []float64{1, 0, 0, 0, 0, -1}, nil},
		{"float16 for int32", f16, "int32", nil, ErrCandidate},
		{"int64 for float32", i64, "float32", nil, ErrCandidate},
		{"wrong shape", long, "float32", nil, ErrCandidate},
	} {
		got, err := ReadCandidate(context.Background(), tc.path, tc.golden, shape, nil)
		if !errors.Is(err, tc.err) || (tc.err == nil && len(got) != len(tc.want)) {
			t.Errorf("%s: %v %v", tc.name, got, err)
			continue
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
