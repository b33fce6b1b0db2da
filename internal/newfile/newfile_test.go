package newfile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	data := []byte("hello, newfile\n")
	d, err := Write(p, 4, func(w io.Writer) error { _, err := w.Write(data); return err })
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if d.Bytes != int64(len(data)) || d.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("digest %+v, want %d bytes %x", d, len(data), sum)
	}
	if b, _ := os.ReadFile(p); string(b) != string(data) {
		t.Errorf("file holds %q", b)
	}
	// An existing file is never replaced.
	if _, err := Write(p, 4, func(io.Writer) error { return nil }); !errors.Is(err, os.ErrExist) {
		t.Errorf("existing file: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != string(data) {
		t.Errorf("existing file changed: %q", b)
	}
	// fill's error comes back.
	boom := errors.New("boom")
	if _, err := Write(filepath.Join(t.TempDir(), "g"), 4, func(io.Writer) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("fill error: %v", err)
	}
}
