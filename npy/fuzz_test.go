package npy

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var sentinels = []error{ErrFormat, ErrUnsupportedDType, ErrTruncated, ErrTrailingData, ErrFortranOrder, ErrShape}

// sentinelOf returns the one sentinel err wraps, or nil.
func sentinelOf(err error) error {
	var found error
	for _, s := range sentinels {
		if errors.Is(err, s) {
			if found != nil {
				return nil
			}
			found = s
		}
	}
	return found
}

// addFixtureSeeds seeds the corpus with the numpy-written fixtures (small
// ones whole, large ones cut after the header) and handcrafted headers.
func addFixtureSeeds(f *testing.F) {
	paths, err := filepath.Glob(filepath.Join(fixtureDir, "*.npy"))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no fixtures: %v", err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) > 4096 {
			b = b[:256]
		}
		f.Add(b)
	}
	f.Add(rawFile(2, dict("<f4", "False", "(2,)"), make([]byte, 8)))
	f.Add(rawFile(3, `{"shape": (1, 2,), "descr": "=f8", "fortran_order": False}`, make([]byte, 16)))
	f.Add(rawFile(1, dict("<i8", "False", "(3L,)"), make([]byte, 24)))
	// the candidate-only integer dtypes
	f.Add(rawFile(1, dict("|i1", "False", "(3,)"), []byte{0, 0x80, 0xff}))
	f.Add(rawFile(1, dict("<i2", "False", "(2,)"), []byte{0xff, 0xff, 0, 0x80}))
	f.Add(rawFile(1, dict("<u4", "False", "(1,)"), []byte{0xff, 0xff, 0xff, 0xff}))
	f.Add(rawFile(1, dict("<u8", "False", "(1, 1)"), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}))
	f.Add(rawFile(1, dict("<f4", "False", "(4294967296, 4294967296)"), nil))
}

// allocGuard fails the test if more than limit bytes were allocated since
// it was made.
type allocGuard struct{ start runtimeMem }

func newAllocGuard() *allocGuard { g := &allocGuard{}; g.start.read(); return g }

func (g *allocGuard) check(t *testing.T, what string, limit uint64) {
	var now runtimeMem
	now.read()
	if d := now.total - g.start.total; d > limit {
		t.Fatalf("%s allocated %d bytes, cap %d", what, d, limit)
	}
}

func FuzzReadHeader(f *testing.F) {
	addFixtureSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		g := newAllocGuard()
		h, n, err := ReadHeader(bytes.NewReader(data))
		g.check(t, "ReadHeader", MaxHeaderLen+1<<20)
		if err != nil {
			if sentinelOf(err) == nil || !strings.HasPrefix(err.Error(), `npy: read header of "<stream>": `) {
				t.Fatalf("error %q wraps no single sentinel or lacks the file name", err)
			}
			return
		}
		if n < PreambleLen1 || n > int64(len(data)) {
			t.Fatalf("consumed %d of %d bytes", n, len(data))
		}
		if h.Fortran || h.Validate() != nil || h.NumBytes() < 0 {
			t.Fatalf("accepted an invalid header %+v", h)
		}
		enc, err := EncodeHeader(h)
		if err != nil {
			t.Fatalf("accepted header %+v does not encode: %v", h, err)
		}
		h2, n2, err := ReadHeader(bytes.NewReader(enc))
		if err != nil || !h2.equal(h) || n2 != int64(len(enc)) {
			t.Fatalf("re-encoded header %+v reads back as %+v, %d, %v", h, h2, n2, err)
		}
	})
}

func FuzzReadArray(f *testing.F) {
	addFixtureSeeds(f)
	const maxData = 1 << 20
	// One file per process, rewritten by each call (calls are sequential).
	path := filepath.Join(f.TempDir(), "f.npy")
	f.Fuzz(func(t *testing.T, data []byte) {
		g := newAllocGuard()
		h, payload, err := ReadArray(bytes.NewReader(data), maxData)
		// The header buffer, the first data chunk, and data growth bounded
		// by what the stream really holds.
		g.check(t, "ReadArray", MaxHeaderLen+maxData+3*uint64(len(data))+1<<20)

		// Reading the same bytes as a file must agree with the stream reader.
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		fh, fpayload, ferr := ReadFile(path)
		if err != nil {
			if sentinelOf(err) == nil || !strings.HasPrefix(err.Error(), `npy: read `) {
				t.Fatalf("error %q wraps no single sentinel or lacks the name", err)
			}
			limited := errors.Is(err, ErrShape) && strings.Contains(err.Error(), "exceed the limit")
			if !limited && sentinelOf(ferr) != sentinelOf(err) {
				t.Fatalf("stream error %q, file error %q", err, ferr)
			}
			if ferr != nil && !strings.Contains(ferr.Error(), `"`+path+`"`) {
				t.Fatalf("file error %q does not name the file", ferr)
			}
			return
		}
		if ferr != nil || !fh.equal(h) || !bytes.Equal(fpayload, payload) {
			t.Fatalf("ReadFile disagrees with ReadArray: %v", ferr)
		}
		if int64(len(payload)) != h.NumBytes() {
			t.Fatalf("%d data bytes for %+v", len(payload), h)
		}
		var buf bytes.Buffer
		w, err := NewWriter(&buf, h)
		if err != nil {
			t.Fatalf("accepted header %+v does not encode: %v", h, err)
		}
		w.Write(payload)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		h2, p2, err := ReadArray(&buf, maxData)
		if err != nil || !h2.equal(h) || !bytes.Equal(p2, payload) {
			t.Fatalf("re-encoded array does not read back: %v", err)
		}
	})
}
