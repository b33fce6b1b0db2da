package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestOpenRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "f.npy")
	os.WriteFile(reg, []byte("x"), 0o644)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(reg, link)
	dlink := filepath.Join(dir, "dlink")
	os.Symlink(dir, dlink)
	for _, tc := range []struct{ path, kind string }{
		{fifo, "named pipe"},
		{link, "symbolic link"},
		{dir, "directory"},
		{"/dev/null", "character device"},
	} {
		done := make(chan error, 1)
		go func() {
			f, err := Open(tc.path)
			if f != nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), tc.kind) || !strings.Contains(err.Error(), tc.path) {
				t.Errorf("Open(%s) = %v, want ErrNotRegular naming it as %s", tc.path, err, tc.kind)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Open(%s) blocked", tc.path)
		}
	}
	f, err := Open(reg)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	// OpenIn refuses a linked directory on the way and paths leaving the root.
	if _, err := OpenIn(dir, "dlink/f.npy"); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "not a directory of the bundle") {
		t.Errorf("OpenIn through a linked directory: %v", err)
	}
	for _, rel := range []string{"../f.npy", "/etc/passwd", "", `a\b`} {
		if _, err := OpenIn(dir, rel); !errors.Is(err, ErrOutside) {
			t.Errorf("OpenIn(%q) = %v, want ErrOutside", rel, err)
		}
	}
	if f, err := OpenIn(filepath.Dir(dir), filepath.Base(dir)+"/f.npy"); err != nil {
		t.Errorf("OpenIn of a plain nested file: %v", err)
	} else {
		f.Close()
	}
	if err := CheckTree(dir); !errors.Is(err, ErrNotRegular) {
		t.Errorf("CheckTree of a tree with a FIFO and links: %v", err)
	}
}

func FuzzJoin(f *testing.F) {
	for _, s := range []string{"c1/x.npy", "../x", "/etc/passwd", "c1/../../x", `c1\x`, "a/./b", "", "."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		root := t.TempDir()
		p, err := Join(root, rel)
		if err != nil {
			return
		}
		r, err := filepath.Rel(root, p)
		if err != nil || !filepath.IsLocal(r) {
			t.Fatalf("Join(%q) = %q escapes the root", rel, p)
		}
	})
}
