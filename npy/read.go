package npy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/goldset/goldset/internal/safefile"
)

// nameOf returns the name used in error messages for r.
func nameOf(r any) string {
	if n, ok := r.(interface{ Name() string }); ok {
		return n.Name()
	}
	return "<stream>"
}

// ReadHeader reads the preamble and header of a .npy file (format 1.0, 2.0
// or 3.0) from r, reading no byte past the header. It returns the validated
// header, with Descr canonical, and the number of bytes consumed, which is
// the offset of the array data. Errors name the file when r has a Name
// method (as *os.File does) and wrap ErrFormat, ErrUnsupportedDType,
// ErrFortranOrder, ErrShape or ErrTruncated.
func ReadHeader(r io.Reader) (Header, int64, error) {
	h, n, err := readHeader(r)
	if err != nil {
		return Header{}, 0, fmt.Errorf("npy: read header of %q: %w", nameOf(r), err)
	}
	return h, n, nil
}

func readHeader(r io.Reader) (Header, int64, error) {
	var pre [PreambleLen2]byte
	if _, err := io.ReadFull(r, pre[:8]); err != nil {
		return Header{}, 0, shortRead(err, "preamble")
	}
	if string(pre[:6]) != "\x93NUMPY" {
		return Header{}, 0, fmt.Errorf("%w: bad magic %q", ErrFormat, pre[:6])
	}
	major, minor := pre[6], pre[7]
	if major < 1 || major > 3 || minor != 0 {
		return Header{}, 0, fmt.Errorf("%w: unsupported format version %d.%d (want 1.0, 2.0 or 3.0)", ErrFormat, major, minor)
	}
	preLen := PreambleLen1
	if major > 1 {
		preLen = PreambleLen2
	}
	if _, err := io.ReadFull(r, pre[8:preLen]); err != nil {
		return Header{}, 0, shortRead(err, "header length")
	}
	var hlen uint32
	if major == 1 {
		hlen = uint32(binary.LittleEndian.Uint16(pre[8:]))
	} else {
		hlen = binary.LittleEndian.Uint32(pre[8:])
	}
	if hlen > MaxHeaderLen {
		return Header{}, 0, fmt.Errorf("%w: header length %d exceeds the limit of %d bytes", ErrFormat, hlen, MaxHeaderLen)
	}
	buf := make([]byte, hlen)
	if _, err := io.ReadFull(r, buf); err != nil {
		return Header{}, 0, shortRead(err, fmt.Sprintf("header (%d bytes)", hlen))
	}
	h, err := parseHeader(buf, major)
	if err != nil {
		return Header{}, 0, err
	}
	return h, int64(preLen) + int64(hlen), nil
}

// parseHeader parses and validates the header dict.
func parseHeader(buf []byte, major byte) (Header, error) {
	h, descr, err := parseDict(buf, major)
	if err != nil {
		return Header{}, err
	}
	if h.Descr, err = ParseDType(descr); err != nil {
		return Header{}, err
	}
	if h.Fortran {
		return Header{}, fmt.Errorf("%w (shape %v); save np.ascontiguousarray(a) instead", ErrFortranOrder, h.Shape)
	}
	if err := h.check(); err != nil {
		return Header{}, err
	}
	return h, nil
}

func shortRead(err error, what string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: end of file inside the %s", ErrTruncated, what)
	}
	return err
}

// File is an open .npy file positioned on its data. Read and ReadAt see
// exactly the array's data bytes (ReadAt offsets are relative to the data).
type File struct {
	Header
	Name       string
	DataOffset int64 // offset of the data in the file (preamble + header)
	f          *os.File
	data       *io.SectionReader
}

// Open opens a .npy file and reads its header. Before anything of data size
// is allocated or read, it checks that the file holds exactly the bytes the
// header promises: fewer wrap ErrTruncated, more wrap ErrTrailingData. A
// path that is not a regular file (a link, FIFO, device or directory) is
// refused before it is opened, wrapping ErrFormat (internal/safefile).
func Open(path string) (*File, error) {
	f, err := safefile.Open(path) // a regular file: never a FIFO, device or link
	if errors.Is(err, safefile.ErrNotRegular) {
		return nil, fmt.Errorf("npy: open %q: %w: %w", path, ErrFormat, err) // not a .npy file at all
	}
	if err != nil {
		return nil, fmt.Errorf("npy: open %q: %w", path, err)
	}
	nf, err := openFile(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	return nf, nil
}

func openFile(f *os.File, path string) (*File, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("npy: open %q: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("npy: open %q: %w: not a regular file", path, ErrFormat)
	}
	h, off, err := readHeader(f)
	if err != nil {
		return nil, fmt.Errorf("npy: read header of %q: %w", path, err)
	}
	if err := checkDataSize(h, off, st.Size()); err != nil {
		return nil, fmt.Errorf("npy: open %q: %w", path, err)
	}
	return &File{Header: h, Name: path, DataOffset: off, f: f, data: io.NewSectionReader(f, off, h.NumBytes())}, nil
}

// checkDataSize compares the data size promised by h with what a file of
// size total holds after off header bytes.
func checkDataSize(h Header, off, total int64) error {
	want, have := h.NumBytes(), total-off
	switch {
	case have < want:
		return fmt.Errorf("%w: shape %v of %s needs %d data bytes, file has %d", ErrTruncated, h.Shape, h.Descr, want, have)
	case have > want:
		return fmt.Errorf("%w: %d bytes after the %d data bytes of shape %v of %s", ErrTrailingData, have-want, want, h.Shape, h.Descr)
	}
	return nil
}

// Read reads data bytes; it returns io.EOF after the last one. A file that
// shrank after Open yields an error wrapping ErrTruncated.
func (f *File) Read(p []byte) (int, error) {
	n, err := f.data.Read(p)
	if err == io.EOF {
		if pos, _ := f.data.Seek(0, io.SeekCurrent); pos < f.data.Size() {
			return n, f.truncated()
		}
	} else if err != nil {
		err = fmt.Errorf("npy: read %q: %w", f.Name, err)
	}
	return n, err
}

// ReadAt reads data bytes at offset off from the start of the data.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.data.ReadAt(p, off)
	if err == io.EOF {
		if off+int64(n) < f.data.Size() && off >= 0 {
			return n, f.truncated()
		}
	} else if err != nil {
		err = fmt.Errorf("npy: read %q: %w", f.Name, err)
	}
	return n, err
}

func (f *File) truncated() error {
	return fmt.Errorf("npy: read %q: %w: data ends early (file changed after open?)", f.Name, ErrTruncated)
}

// Size returns the number of data bytes.
func (f *File) Size() int64 { return f.data.Size() }

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// ReadFile reads a whole .npy file: its header and its data bytes
// (little-endian, C order). The data size is checked against the file size
// before the data buffer is allocated.
func ReadFile(path string) (Header, []byte, error) {
	f, err := Open(path)
	if err != nil {
		return Header{}, nil, err
	}
	defer f.Close()
	n := f.Size()
	if n > math.MaxInt {
		return Header{}, nil, fmt.Errorf("npy: read %q: %w: %d data bytes do not fit in memory on this platform", path, ErrShape, n)
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(f.data, data); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return Header{}, nil, fmt.Errorf("npy: read %q: %w: data ends early (file changed after open?)", path, ErrTruncated)
		}
		return Header{}, nil, fmt.Errorf("npy: read %q: %w", path, err)
	}
	return f.Header, data, nil
}

// ReadArray reads one whole .npy array from a stream that must end right
// after the data. maxData caps the data size accepted (ErrShape beyond it);
// the buffer grows with the bytes actually received, so a short stream that
// promises a large array costs no large allocation.
func ReadArray(r io.Reader, maxData int64) (Header, []byte, error) {
	name := nameOf(r)
	h, _, err := readHeader(r)
	if err != nil {
		return Header{}, nil, fmt.Errorf("npy: read header of %q: %w", name, err)
	}
	want := h.NumBytes()
	if want > maxData || want > math.MaxInt {
		return Header{}, nil, fmt.Errorf("npy: read %q: %w: %d data bytes exceed the limit of %d", name, ErrShape, want, maxData)
	}
	const chunk = 1 << 20
	data := make([]byte, 0, min(want, chunk))
	for int64(len(data)) < want {
		if len(data) == cap(data) {
			grown := make([]byte, len(data), len(data)+int(min(want-int64(len(data)), int64(len(data)))))
			copy(grown, data)
			data = grown
		}
		n, err := io.ReadFull(r, data[len(data):cap(data)])
		data = data[:len(data)+n]
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return Header{}, nil, fmt.Errorf("npy: read %q: %w: shape %v of %s needs %d data bytes, stream has %d", name, ErrTruncated, h.Shape, h.Descr, want, len(data))
		}
		if err != nil {
			return Header{}, nil, fmt.Errorf("npy: read %q: %w", name, err)
		}
	}
	var one [1]byte
	switch n, err := io.ReadFull(r, one[:]); {
	case n > 0:
		return Header{}, nil, fmt.Errorf("npy: read %q: %w: stream continues after the %d data bytes", name, ErrTrailingData, want)
	case err != io.EOF:
		return Header{}, nil, fmt.Errorf("npy: read %q: %w", name, err)
	}
	return h, data, nil
}
