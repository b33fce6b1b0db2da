package manifests

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"unsafe"
)

// RandomFile is a file of known size whose bytes arrive in any order
// (WriteAt, from several goroutines) and whose hash is taken by reading it
// back once it is complete (Finish). The paged caches use it: their golden
// consumes a sequence's blocks together while the file holds the blocks in
// physical order, so writing sequence by sequence saves producing every
// block a second time, at the cost of one read of the file (from the
// device, usually from its cache) for the hash.
//
// Writes go through aligned staging buffers with direct I/O where the
// filesystem allows it, on a few writer goroutines; the parts of pages
// that two writes share are assembled in memory until the page is whole.
type RandomFile struct {
	f      *os.File
	path   string
	size   int64
	direct bool

	mu      sync.Mutex
	pages   map[int64]*pagePart // page offset -> page being assembled
	whole   []uint64            // bit per page: written whole
	n       int64               // bytes accepted
	err     error
	jobs    chan pageJob
	stage   chan []byte // free staging buffers
	writers sync.WaitGroup
	done    bool
}

type pagePart struct {
	buf    []byte // directAlign bytes, aligned
	filled int
}

type pageJob struct {
	buf  []byte
	off  int64
	free bool // return buf to the staging pool
}

const (
	randomStage   = 1 << 20 // bytes per staged write
	randomStages  = 16      // staging buffers per file
	randomWriters = 4       // writes in flight per file
)

// CreateRandom opens rel for writing size bytes in any order. Use it only
// where the bundle is not NoSync or Buffered (Random reports that).
func (b *BundleWriter) CreateRandom(rel string, size int64) (*RandomFile, error) {
	if !filepath.IsLocal(filepath.FromSlash(rel)) {
		return nil, fmt.Errorf("manifests: %w: %q", ErrPath, rel)
	}
	if size < 0 {
		return nil, fmt.Errorf("manifests: %q: negative size %d", rel, size)
	}
	p := filepath.Join(b.tmp, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("manifests: %w", err)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("manifests: %w", err)
	}
	b.mu.Lock()
	b.files = append(b.files, p)
	b.mu.Unlock()
	r := &RandomFile{f: f, path: p, size: size, direct: setDirect(f, true) == nil,
		pages: make(map[int64]*pagePart), whole: make([]uint64, (size/directAlign+64)/64), jobs: make(chan pageJob, randomStages), stage: make(chan []byte, randomStages)}
	for range randomStages {
		r.stage <- alignedBuf(randomStage)
	}
	for range randomWriters {
		r.writers.Add(1)
		go r.writer()
	}
	return r, nil
}

// Random reports whether CreateRandom may be used: files must reach the
// device (no NoSync) through the direct-I/O path (no Buffered).
func (b *BundleWriter) Random() bool { return !b.NoSync && !b.Buffered }

func alignedBuf(n int) []byte {
	raw := make([]byte, n+directAlign)
	skip := (directAlign - int(uintptr(unsafe.Pointer(&raw[0]))%directAlign)) % directAlign
	return raw[skip : skip+n : skip+n]
}

func (r *RandomFile) writer() {
	defer r.writers.Done()
	for j := range r.jobs {
		err := r.writeAt(j.buf, j.off)
		if j.free {
			r.stage <- j.buf[:cap(j.buf)]
		}
		if err != nil {
			r.fail(err)
		}
	}
}

func (r *RandomFile) fail(err error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = fmt.Errorf("manifests: write %q: %w", r.path, err)
	}
	r.mu.Unlock()
}

// writeAt writes an aligned buffer, dropping to buffered I/O if the
// filesystem refuses a direct write.
func (r *RandomFile) writeAt(buf []byte, off int64) error {
	_, err := r.f.WriteAt(buf, off)
	if err != nil && r.direct && isEINVAL(err) {
		if setDirect(r.f, false) == nil {
			_, err = r.f.WriteAt(buf, off)
		}
	}
	return err
}

// WriteAt stores p at offset off. Every byte of the file must be written
// exactly once before Finish. p may be reused when WriteAt returns.
func (r *RandomFile) WriteAt(p []byte, off int64) error {
	if off < 0 || off > r.size || int64(len(p)) > r.size-off {
		return fmt.Errorf("manifests: write %q: [%d, %d) outside the file's %d bytes", r.path, off, off+int64(len(p)), r.size)
	}
	r.mu.Lock()
	err := r.err
	r.n += int64(len(p))
	r.mu.Unlock()
	if err != nil {
		return err
	}
	const a = directAlign
	end := off + int64(len(p))
	lo := (off + a - 1) &^ (a - 1) // first whole page
	hi := end &^ (a - 1)           // end of the last whole page
	if lo >= hi {                  // no whole page: one or two partial ones
		for o := off; o < end; {
			pg := o &^ (a - 1)
			e := min(end, pg+a)
			r.part(pg, o, p[o-off:e-off])
			o = e
		}
		return nil
	}
	if off < lo {
		r.part(lo-a, off, p[:lo-off])
	}
	if hi < end {
		r.part(hi, hi, p[hi-off:])
	}
	if err := r.mark(lo, hi); err != nil {
		return err
	}
	for o := lo; o < hi; {
		buf := <-r.stage
		n := copy(buf[:min(int64(len(buf)), hi-o)], p[o-off:])
		r.jobs <- pageJob{buf: buf[:n], off: o, free: true}
		o += int64(n)
	}
	return nil
}

// part adds data at file offset at to the page starting at pg, writing the
// page once whole (the file's last page is whole at the file's end).
func (r *RandomFile) part(pg, at int64, data []byte) {
	r.mu.Lock()
	pp := r.pages[pg]
	if pp == nil {
		pp = &pagePart{buf: alignedBuf(directAlign)}
		r.pages[pg] = pp
	}
	copy(pp.buf[at-pg:], data)
	pp.filled += len(data)
	whole := pp.filled == directAlign
	if whole {
		delete(r.pages, pg)
	}
	r.mu.Unlock()
	if whole {
		if err := r.mark(pg, pg+directAlign); err != nil {
			r.fail(err)
			return
		}
		r.jobs <- pageJob{buf: pp.buf, off: pg}
	}
}

// mark records the whole pages of [lo, hi) as written; writing a page
// twice is an error (so is a byte never written, which Finish finds).
func (r *RandomFile) mark(lo, hi int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for pg := lo / directAlign; pg < hi/directAlign; pg++ {
		if r.whole[pg/64]&(1<<(pg%64)) != 0 {
			return fmt.Errorf("manifests: write %q: page at %d written twice", r.path, pg*directAlign)
		}
		r.whole[pg/64] |= 1 << (pg % 64)
	}
	return nil
}

// ErrIncomplete is returned by Finish when some bytes were never written.
var ErrIncomplete = errors.New("file not completely written")

// Finish waits for the writes, writes the file's last partial page, reads
// the file back and returns its sha256 (hex) and size. The file stays open
// until Close.
func (r *RandomFile) Finish() (string, int64, error) {
	if r.done {
		return "", 0, fmt.Errorf("manifests: %q finished twice", r.path)
	}
	r.done = true
	close(r.jobs)
	r.writers.Wait()
	if r.err != nil {
		return "", 0, r.err
	}
	last := r.size &^ (directAlign - 1)
	for pg, pp := range r.pages {
		if pg != last || pp.filled != int(r.size-last) {
			return "", 0, fmt.Errorf("manifests: %q: %w (page at %d holds %d bytes)", r.path, ErrIncomplete, pg, pp.filled)
		}
		// The tail is not a whole block: write it through the page cache.
		if r.direct {
			if err := setDirect(r.f, false); err != nil {
				return "", 0, fmt.Errorf("manifests: write %q: %w", r.path, err)
			}
		}
		if _, err := r.f.WriteAt(pp.buf[:pp.filled], pg); err != nil {
			return "", 0, fmt.Errorf("manifests: write %q: %w", r.path, err)
		}
		if r.direct && setDirect(r.f, true) != nil {
			r.direct = false
		}
	}
	for pg := int64(0); pg < r.size/directAlign; pg++ {
		if r.whole[pg/64]&(1<<(pg%64)) == 0 {
			return "", 0, fmt.Errorf("manifests: %q: %w (page at %d)", r.path, ErrIncomplete, pg*directAlign)
		}
	}
	if r.n != r.size {
		return "", 0, fmt.Errorf("manifests: %q: %w (%d of %d bytes written)", r.path, ErrIncomplete, r.n, r.size)
	}
	sum, err := r.hash()
	if err != nil {
		return "", 0, fmt.Errorf("manifests: read back %q: %w", r.path, err)
	}
	return sum, r.size, nil
}

// hash reads the file in order, the next read overlapping the hashing of
// the current buffer.
func (r *RandomFile) hash() (string, error) {
	h := sha256.New()
	type chunk struct {
		buf []byte
		err error
	}
	bufs := make(chan []byte, 2)
	bufs <- getDirectBuf()
	bufs <- getDirectBuf()
	filled := make(chan chunk, 2)
	go func() {
		defer close(filled)
		for off := int64(0); off < r.size; {
			buf := <-bufs
			// Direct reads want whole pages: the last one is short at EOF.
			want := min(int64(len(buf)), (r.size-off+directAlign-1)&^(directAlign-1))
			n, err := r.f.ReadAt(buf[:want], off)
			if err != nil && r.direct && isEINVAL(err) && setDirect(r.f, false) == nil {
				r.direct = false
				n, err = r.f.ReadAt(buf[:want], off)
			}
			if err == io.EOF && int64(n) == r.size-off {
				err = nil
			}
			if err == nil && n == 0 {
				err = io.ErrUnexpectedEOF
			}
			filled <- chunk{buf[:n], err}
			if err != nil {
				return
			}
			off += int64(n)
		}
	}()
	var first error
	for c := range filled {
		if c.err != nil && first == nil {
			first = c.err
		}
		if first == nil {
			h.Write(c.buf)
		}
		bufs <- c.buf[:cap(c.buf)]
	}
	close(bufs)
	for b := range bufs {
		putDirectBuf(b)
	}
	if first != nil {
		return "", first
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Close closes the file (after Finish, or to abandon it after an error:
// then it waits for the writes in flight first).
func (r *RandomFile) Close() error {
	if !r.done {
		r.done = true
		close(r.jobs)
		r.writers.Wait()
	}
	return r.f.Close()
}
