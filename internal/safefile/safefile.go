package safefile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Sentinel errors; returned errors wrap one of them and name the path.
var (
	// ErrNotRegular: the path is a link, FIFO, device, socket or directory.
	ErrNotRegular = errors.New("not a regular file")
	// ErrOutside: a relative path leaves its root (absolute, "..", empty).
	ErrOutside = errors.New("path is not inside its bundle")
	// ErrTooLarge: the file is larger than its format's limit (ReadFile).
	ErrTooLarge = errors.New("file too large")
	// ErrNotDir: a path that must name a directory does not (Dir).
	ErrNotDir = errors.New("not a directory")
)

// Dir checks that path is a directory (a link to one is accepted: roots
// are the caller's choice), naming what it is otherwise; it opens nothing.
func Dir(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is %s: %w", path, Kind(fi.Mode()), ErrNotDir)
	}
	return nil
}

// Kind names what a file mode describes, for error messages.
func Kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m.IsDir():
		return "a directory"
	case m.IsRegular():
		return "a regular file"
	}
	return "an irregular file"
}

// Open opens path for reading when it is a regular file; see the package doc.
func Open(path string) (*os.File, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err // *PathError names the path
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(path, fi.Mode())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return nil, err
	}
	got, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !got.Mode().IsRegular() || !os.SameFile(fi, got) {
		f.Close()
		return nil, fmt.Errorf("%s changed while it was opened (now %s): %w", path, Kind(got.Mode()), ErrNotRegular)
	}
	return f, nil
}

// notRegular is Open's refusal. A link's message says where it leads and
// how to proceed, since the file it names may be fine: resolving it reads
// only links and directory entries (Lstat, Readlink), never opens a file.
func notRegular(path string, m fs.FileMode) error {
	if m&fs.ModeSymlink == 0 {
		return fmt.Errorf("%s is %s: %w", path, Kind(m), ErrNotRegular)
	}
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		raw, _ := os.Readlink(path)
		return fmt.Errorf("%s is a symbolic link to %q, which does not resolve: %w", path, raw, ErrNotRegular)
	}
	if fi, err := os.Lstat(target); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is a symbolic link to %s, which is %s: %w", path, target, Kind(fi.Mode()), ErrNotRegular)
	}
	return fmt.Errorf("%s is a symbolic link (to %s); goldset does not follow links: name %s itself, or replace the link with a copy: %w", path, target, target, ErrNotRegular)
}

// ReadFile reads the regular file path (see Open) when it holds at most
// limit bytes (limit <= 0: no limit). The size is checked on the opened file
// before anything is allocated or read, and again while reading (the file
// may grow): a larger file is refused with an error wrapping ErrTooLarge
// that names it, its size and the limit.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if limit > 0 && st.Size() > limit {
		return nil, tooLarge(path, st.Size(), limit)
	}
	var r io.Reader = f
	if limit > 0 {
		r = io.LimitReader(f, limit+1)
	}
	var b bytes.Buffer
	b.Grow(int(st.Size()) + 1)
	if _, err := b.ReadFrom(r); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if limit > 0 && int64(b.Len()) > limit {
		return nil, tooLarge(path, int64(b.Len()), limit)
	}
	return b.Bytes(), nil
}

func tooLarge(path string, size, limit int64) error {
	return fmt.Errorf("%s is %d bytes, more than the %d (%s) such a file may have: %w", path, size, limit, human(limit), ErrTooLarge)
}

// human prints a byte count in binary units, for errors.
func human(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, u := float64(n), 0
	for v >= unit && u < 4 {
		v /= unit
		u++
	}
	return fmt.Sprintf("%.4g %ciB", v, "KMGTP"[u-1])
}

// OpenIn opens rel (slash-separated) inside root; see the package doc.
func OpenIn(root, rel string) (*os.File, error) {
	p, err := Join(root, rel)
	if err != nil {
		return nil, err
	}
	return Open(p)
}

// Join returns root/rel after checking that rel is local and that every
// directory between root and rel's last component is a real directory.
func Join(root, rel string) (string, error) {
	local := filepath.FromSlash(rel)
	if !filepath.IsLocal(local) || strings.Contains(rel, `\`) {
		return "", fmt.Errorf("%q: %w", rel, ErrOutside)
	}
	parts := strings.Split(filepath.ToSlash(filepath.Clean(local)), "/")
	p := root
	for _, d := range parts[:len(parts)-1] {
		p = filepath.Join(p, d)
		fi, err := os.Lstat(p)
		if err != nil {
			return "", err
		}
		if !fi.IsDir() {
			return "", fmt.Errorf("%s is %s, not a directory of the bundle: %w", p, Kind(fi.Mode()), ErrNotRegular)
		}
	}
	return filepath.Join(root, local), nil
}

// CheckTree walks dir without following links and returns an error naming
// the first entry that is neither a regular file nor a directory.
func CheckTree(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if m := d.Type(); m&^fs.ModeDir != 0 {
			return fmt.Errorf("%s is %s: %w", p, Kind(m), ErrNotRegular)
		}
		return nil
	})
}
