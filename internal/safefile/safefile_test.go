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

// A link's refusal says where it leads and what to do; a link to a FIFO or
// a dangling link is named as such, and nothing is opened.
func TestOpenLinkMessages(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "tokenizer.blob")
	os.WriteFile(reg, []byte("{}"), 0o644)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	for _, tc := range []struct{ target, want string }{
		{reg, "name " + reg + " itself, or replace the link with a copy"},
		{fifo, "which is a named pipe (FIFO)"},
		{dir, "which is a directory"},
		{filepath.Join(dir, "gone"), "which does not resolve"},
	} {
		link := filepath.Join(dir, "link-"+filepath.Base(tc.target))
		os.Symlink(tc.target, link)
		_, err := Open(link)
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), link+" is a symbolic link") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(link to %s) = %v, want %q", tc.target, err, tc.want)
		}
	}
}

func TestReadFileLimit(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "recipe.json")
	os.WriteFile(p, []byte("0123456789"), 0o644)
	for _, tc := range []struct {
		limit int64
		ok    bool
	}{{0, true}, {10, true}, {11, true}, {9, false}, {1, false}} {
		b, err := ReadFile(p, tc.limit)
		switch {
		case tc.ok && (err != nil || string(b) != "0123456789"):
			t.Errorf("ReadFile(limit %d) = %q, %v", tc.limit, b, err)
		case !tc.ok && (!errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), p+" is 10 bytes, more than the")):
			t.Errorf("ReadFile(limit %d) = %v, want ErrTooLarge naming %s and its size", tc.limit, err, p)
		}
	}
	// A FIFO is refused before the limit matters, at once.
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	if _, err := ReadFile(fifo, 1<<20); !errors.Is(err, ErrNotRegular) {
		t.Errorf("ReadFile(FIFO) = %v", err)
	}
	if _, err := ReadFile(dir, 1<<20); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "directory") {
		t.Errorf("ReadFile(dir) = %v", err)
	}
	if err := Dir(fifo); !errors.Is(err, ErrNotDir) || !strings.Contains(err.Error(), fifo+" is a named pipe") {
		t.Errorf("Dir(FIFO) = %v", err)
	}
	if err := Dir(dir); err != nil {
		t.Errorf("Dir(dir) = %v", err)
	}
	if got := human(64 << 20); got != "64 MiB" {
		t.Errorf("human(64 MiB) = %q", got)
	}
}
