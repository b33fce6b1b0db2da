package safefile

import (
	"errors"
	"fmt"
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
)

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
		return nil, fmt.Errorf("%s is %s: %w", path, Kind(fi.Mode()), ErrNotRegular)
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
