package npy

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Writer streams the data of one array after its header. It accepts the
// data in chunks of any size and checks that exactly the promised number of
// bytes arrives.
type Writer struct {
	w       io.Writer
	name    string // for error messages
	want, n int64
	err     error // sticky
	closed  bool

	// set by Create: data goes through bw to a temporary file that Close
	// renames to path.
	bw   *bufio.Writer
	tmp  *os.File
	path string
}

// NewWriter writes the header h to w and returns a Writer for exactly the
// array's data bytes (little-endian, C order unless h.Fortran).
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	name := nameOf(w)
	if err := h.check(); err != nil {
		return nil, fmt.Errorf("npy: write %q: %w", name, err)
	}
	if _, err := w.Write(appendHeader(nil, h)); err != nil {
		return nil, fmt.Errorf("npy: write header of %q: %w", name, err)
	}
	return &Writer{w: w, name: name, want: h.NumBytes()}, nil
}

// Create starts writing a .npy file at path. The data goes to a temporary
// file in the same directory, which Close renames to path once exactly the
// promised bytes were written; on any error Close removes it, so path never
// holds a partial array. Always call Close.
func Create(path string, h Header) (*Writer, error) {
	if err := h.check(); err != nil {
		return nil, fmt.Errorf("npy: create %q: %w", path, err)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("npy: create %q: %w", path, err)
	}
	bw := bufio.NewWriterSize(tmp, 1<<20)
	if _, err := bw.Write(appendHeader(nil, h)); err != nil { // cannot fail: fits the buffer or goes to disk
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, fmt.Errorf("npy: write header of %q: %w", path, err)
	}
	return &Writer{w: bw, name: path, want: h.NumBytes(), bw: bw, tmp: tmp, path: path}, nil
}

// Write writes raw little-endian element bytes. Writing past the size the
// header promises writes nothing and returns an error wrapping ErrShape;
// errors are sticky.
func (w *Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.closed {
		return 0, fmt.Errorf("npy: write %q: writer is closed", w.name)
	}
	if int64(len(p)) > w.want-w.n {
		w.err = fmt.Errorf("npy: write %q: %w: %d bytes past the %d data bytes the header promises", w.name, ErrShape, w.n+int64(len(p))-w.want, w.want)
		return 0, w.err
	}
	n, err := w.w.Write(p)
	w.n += int64(n)
	if err != nil {
		w.err = fmt.Errorf("npy: write %q: %w", w.name, err)
		return n, w.err
	}
	return n, nil
}

// Written returns the number of data bytes written so far.
func (w *Writer) Written() int64 { return w.n }

// Close checks that exactly the array's bytes were written (ErrShape
// otherwise). For a Writer from Create it also flushes, closes and renames
// the file (or removes it on error); the underlying writer of NewWriter is
// not closed. Close is idempotent and returns the first error.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.err == nil && w.n != w.want {
		w.err = fmt.Errorf("npy: write %q: %w: wrote %d data bytes, header promises %d", w.name, ErrShape, w.n, w.want)
	}
	if w.tmp == nil {
		return w.err
	}
	if w.err == nil {
		if err := w.bw.Flush(); err != nil {
			w.err = fmt.Errorf("npy: write %q: %w", w.name, err)
		}
	}
	if err := w.tmp.Close(); err != nil && w.err == nil {
		w.err = fmt.Errorf("npy: write %q: %w", w.name, err)
	}
	if w.err == nil {
		if err := os.Chmod(w.tmp.Name(), 0o644); err != nil {
			w.err = fmt.Errorf("npy: write %q: %w", w.name, err)
		} else if err := os.Rename(w.tmp.Name(), w.path); err != nil {
			w.err = fmt.Errorf("npy: write %q: %w", w.name, err)
		}
	}
	if w.err != nil {
		os.Remove(w.tmp.Name())
	}
	return w.err
}

// WriteFile writes a whole .npy file: header h and its data, which must be
// exactly h.NumBytes() bytes (ErrShape otherwise, checked before the file is
// created). The file appears atomically, see Create.
func WriteFile(path string, h Header, data []byte) error {
	if err := h.check(); err != nil {
		return fmt.Errorf("npy: write %q: %w", path, err)
	}
	if int64(len(data)) != h.NumBytes() {
		return fmt.Errorf("npy: write %q: %w: %d data bytes for shape %v of %s, want %d", path, ErrShape, len(data), h.Shape, h.Descr, h.NumBytes())
	}
	w, err := Create(path, h)
	if err != nil {
		return err
	}
	w.Write(data) // an error is sticky and returned by Close
	return w.Close()
}
