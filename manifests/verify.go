package manifests

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/goldset/goldset/internal/safefile"
	"github.com/goldset/goldset/npy"
)

// Problem is one way a bundle differs from its manifest.
type Problem struct {
	Case   string `json:"case,omitempty"`
	Tensor string `json:"tensor,omitempty"`
	Path   string `json:"path,omitempty"`
	What   string `json:"what"`
}

func (p Problem) String() string {
	if p.Path == "" {
		// A problem of a case or of a tensor not on disk: name it.
		switch {
		case p.Case != "" && p.Tensor != "":
			return fmt.Sprintf("%s/%s: %s", p.Case, p.Tensor, p.What)
		case p.Case != "":
			return fmt.Sprintf("%s: %s", p.Case, p.What)
		}
		return p.What
	}
	return fmt.Sprintf("%s: %s", p.Path, p.What)
}

// OpenTensor opens the uncompressed .npy stream of t inside the bundle dir.
// The file must be a regular file reached without links (package
// internal/safefile); anything else is refused before a byte is read.
func OpenTensor(dir string, t *Tensor) (io.ReadCloser, error) {
	if !filepath.IsLocal(filepath.FromSlash(t.Path)) {
		return nil, fmt.Errorf("manifests: %w: %q", ErrPath, t.Path)
	}
	p := filepath.Join(dir, filepath.FromSlash(t.Path))
	// No links, FIFOs or devices: a link could point anywhere, a FIFO
	// would block the reader forever.
	f, err := safefile.OpenIn(dir, t.Path)
	if err != nil {
		return nil, fmt.Errorf("manifests: %w", err)
	}
	if t.Compression != "zstd" {
		return f, nil
	}
	dec, err := zstd.NewReader(bufio.NewReaderSize(f, 1<<20), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(1<<30))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("manifests: open %q: %w", p, err)
	}
	return &zstdFile{Decoder: dec, f: f}, nil
}

type zstdFile struct {
	*zstd.Decoder
	f *os.File
}

func (z *zstdFile) Close() error {
	z.Decoder.Close()
	return z.f.Close()
}

// CheckHeader reports whether an .npy header agrees with t's dtype and shape.
func CheckHeader(h npy.Header, t *Tensor) error {
	want, _ := NpyDType(t.DType)
	if h.Descr != want {
		return fmt.Errorf("header dtype %s, manifest says %s (%s)", h.Descr, t.DType, want)
	}
	if !slices.Equal(h.Shape, t.Shape) {
		return fmt.Errorf("header shape %v, manifest says %v", h.Shape, t.Shape)
	}
	if h.Fortran {
		return errors.New("header is Fortran-ordered")
	}
	return nil
}

// VerifyTensor checks one tensor file: present, header, size and sha256.
func VerifyTensor(dir string, c *Case, t *Tensor) []Problem {
	return verifyTensor(context.Background(), dir, c, t)
}

func verifyTensor(ctx context.Context, dir string, c *Case, t *Tensor) []Problem {
	prob := func(format string, a ...any) []Problem {
		return []Problem{{Case: c.ID, Tensor: t.Name, Path: t.Path, What: fmt.Sprintf(format, a...)}}
	}
	rc, err := OpenTensor(dir, t)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return prob("missing")
		}
		return prob("%v", err)
	}
	defer rc.Close()
	h := sha256.New()
	br := bufio.NewReaderSize(io.TeeReader(rc, h), 1<<20)
	hdr, hn, err := npy.ReadHeader(br)
	if err != nil {
		return prob("bad .npy header: %v", err)
	}
	var probs []Problem
	if err := CheckHeader(hdr, t); err != nil {
		probs = append(probs, prob("%v", err)...)
	}
	n, err := io.Copy(io.Discard, ctxReader{ctx, br})
	if err != nil {
		return append(probs, prob("read: %v", err)...)
	}
	if total := hn + n; total != t.Bytes {
		probs = append(probs, prob("size %d bytes, manifest says %d", total, t.Bytes)...)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != t.SHA256 {
		probs = append(probs, prob("sha256 %s, manifest says %s", sum, t.SHA256)...)
	}
	return probs
}

// Verify checks every tensor of m against the files in dir, using up to
// jobs goroutines, and the manifest's digest. The problems are returned in
// manifest order; none means the bundle is intact.
func Verify(dir string, m *Manifest, jobs int) []Problem {
	probs, _ := VerifyContext(context.Background(), dir, m, jobs, nil)
	return probs
}

// VerifyContext is Verify that stops when ctx is cancelled (returning
// ctx's error) and calls progress, when not nil, after each tensor with the
// bytes checked so far and the total.
func VerifyContext(ctx context.Context, dir string, m *Manifest, jobs int, progress func(done, total int64)) ([]Problem, error) {
	var probs []Problem
	if d, err := ComputeDigest(m); err != nil || d != m.Digest {
		probs = append(probs, Problem{Path: "manifest.json", What: fmt.Sprintf("digest %s does not match the manifest's content (%s): the manifest was edited", m.Digest, d)})
	}
	type job struct{ ci, ti int }
	var list []job
	listed := make(map[string]bool)
	for ci := range m.Cases {
		for ti := range m.Cases[ci].Tensors {
			// A chain lists a file twice (an earlier golden as a later
			// input, checked equal by Validate): it is read once.
			if p := m.Cases[ci].Tensors[ti].Path; !listed[p] {
				listed[p] = true
				list = append(list, job{ci, ti})
			}
		}
	}
	results := make([][]Problem, len(list))
	if jobs < 1 {
		jobs = 1
	}
	var total int64
	for _, j := range list {
		total += m.Cases[j.ci].Tensors[j.ti].Bytes
	}
	var mu sync.Mutex
	var done int64
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < jobs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c := &m.Cases[list[i].ci]
				t := &c.Tensors[list[i].ti]
				results[i] = verifyTensor(ctx, dir, c, t)
				if progress != nil {
					mu.Lock()
					done += t.Bytes
					progress(done, total)
					mu.Unlock()
				}
			}
		}()
	}
feed:
	for i := range list {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, r := range results {
		probs = append(probs, r...)
	}
	return probs, nil
}

// LoadTensor reads a whole tensor, checking its header against the
// manifest, and returns the header and the raw data bytes. The file's size
// and sha256 must be the manifest's (ErrMismatch otherwise): a golden that
// was altered on disk is never used.
func LoadTensor(dir string, t *Tensor) (npy.Header, []byte, error) {
	rc, err := OpenTensor(dir, t)
	if err != nil {
		return npy.Header{}, nil, err
	}
	defer rc.Close()
	sum := sha256.New()
	br := bufio.NewReaderSize(io.TeeReader(rc, sum), 1<<20)
	h, hn, err := npy.ReadHeader(br)
	if err != nil {
		return h, nil, fmt.Errorf("manifests: %s: %w", t.Path, err)
	}
	if err := CheckHeader(h, t); err != nil {
		return h, nil, fmt.Errorf("manifests: %s: %w: %v", t.Path, ErrMismatch, err)
	}
	want := t.Bytes - hn
	if need := h.NumElems() * int64(h.Descr.ItemSize()); want != need {
		return h, nil, fmt.Errorf("manifests: %s: %w: manifest size %d does not fit header (%d data bytes)", t.Path, ErrMismatch, t.Bytes, need)
	}
	data := make([]byte, want)
	if _, err := io.ReadFull(br, data); err != nil {
		return h, nil, fmt.Errorf("manifests: %s: %w: %v", t.Path, ErrMismatch, err)
	}
	if n, _ := io.Copy(io.Discard, br); n > 0 {
		return h, nil, fmt.Errorf("manifests: %s: %w: %d bytes after the data", t.Path, ErrMismatch, n)
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != t.SHA256 {
		return h, nil, fmt.Errorf("manifests: %s: %w: sha256 %s, manifest says %s (the file was changed; run goldset verify)", t.Path, ErrMismatch, got, t.SHA256)
	}
	return h, data, nil
}

// ctxReader fails reads once ctx is done, so long hashes stop on Ctrl-C.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
