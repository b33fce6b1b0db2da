package manifests

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/klauspost/compress/zstd"

	"github.com/goldset/goldset/internal/sha256x2"
	"github.com/goldset/goldset/internal/shutdown"
)

const (
	tmpMarker = ".goldset-tmp-"
	oldMarker = ".goldset-old-"
)

// ErrNotBundle is returned when a target exists and is not provably a
// goldset bundle of the suite being written, so replacing it could destroy
// unrelated data.
var ErrNotBundle = errors.New("target exists and is not a goldset bundle")

// ErrExists is returned when the target is a bundle of the same suite and
// replacing it was not asked for (CreateOptions.Overwrite).
var ErrExists = errors.New("target bundle exists")

// BundleWriter writes a bundle atomically: files go into a temporary
// sibling directory that Commit renames onto the target.
type BundleWriter struct {
	mu    sync.Mutex
	files []string // written files, fsynced together at Commit
	final string
	tmp   string
	done  bool
	// Cleaned lists stale temporary directories removed when the writer
	// was created (left by killed runs).
	Cleaned []string
	// NoSync skips the fsyncs before the rename. The rename still makes a
	// killed process leave no partial bundle, but after a power loss the
	// files may not all have reached the disk. For scratch and benchmark
	// builds only.
	NoSync bool
	// Buffered writes every file through the page cache instead of with
	// direct I/O (see direct.go); for comparisons and odd filesystems.
	Buffered bool
	// Replaces is the manifest of the bundle Commit will replace (nil when
	// the target does not exist or is empty).
	Replaces *Manifest

	opts    CreateOptions
	release func() // unregisters the forced-exit cleanup (internal/shutdown)
}

// CreateBundle prepares an atomic write of the bundle directory dir, which
// must not exist yet or be an empty directory (CreateBundleWith replaces an
// existing bundle).
func CreateBundle(dir string) (*BundleWriter, error) {
	return CreateBundleWith(dir, CreateOptions{})
}

// CreateBundleWith prepares an atomic write of the bundle directory dir. An
// existing target is replaced only when o.Overwrite is set and Owned proves
// it is a bundle of o.Suite; anything else there is refused (ErrNotBundle,
// ErrExists) before a byte is written. Replaces reports the bundle that
// Commit will replace, for the caller to announce.
func CreateBundleWith(dir string, o CreateOptions) (*BundleWriter, error) {
	dir = filepath.Clean(dir)
	parent, base := filepath.Split(dir)
	if parent == "" {
		parent = "."
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("manifests: create %q: %w", parent, err)
	}
	old, err := checkReplaceable(dir, o)
	if err != nil {
		return nil, err
	}
	bw := &BundleWriter{final: dir, opts: o, Replaces: old}
	bw.Cleaned = cleanStale(parent, base)
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	bw.tmp = filepath.Join(parent, "."+base+tmpMarker+strconv.Itoa(os.Getpid())+"-"+hex.EncodeToString(rnd[:]))
	if err := os.Mkdir(bw.tmp, 0o755); err != nil {
		return nil, fmt.Errorf("manifests: create temporary bundle directory: %w", err)
	}
	tmp := bw.tmp
	bw.release = shutdown.OnExit(func() { os.RemoveAll(tmp) }) // a forced exit on a signal
	return bw, nil
}

// cleanStale removes temporaries of base left by processes that are gone.
func cleanStale(parent, base string) []string {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return nil
	}
	var cleaned []string
	for _, e := range ents {
		name := e.Name()
		var rest string
		switch {
		case strings.HasPrefix(name, "."+base+tmpMarker):
			rest = strings.TrimPrefix(name, "."+base+tmpMarker)
		case strings.HasPrefix(name, "."+base+oldMarker):
			rest = strings.TrimPrefix(name, "."+base+oldMarker)
		default:
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid <= 0 || processAlive(pid) {
			continue
		}
		p := filepath.Join(parent, name)
		if os.RemoveAll(p) == nil {
			cleaned = append(cleaned, p)
		}
	}
	return cleaned
}

// Dir returns the temporary directory files are written into.
func (b *BundleWriter) Dir() string { return b.tmp }

// Final returns the target directory.
func (b *BundleWriter) Final() string { return b.final }

// Create opens rel (slash-separated, local) in the temporary bundle for
// writing. With compress set the file is zstd-compressed; the returned
// writer's hash and count are always over the uncompressed bytes.
func (b *BundleWriter) Create(rel string, compress bool) (*FileWriter, error) {
	if !filepath.IsLocal(filepath.FromSlash(rel)) {
		return nil, fmt.Errorf("manifests: %w: %q", ErrPath, rel)
	}
	p := filepath.Join(b.tmp, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("manifests: %w", err)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("manifests: %w", err)
	}
	fw := &FileWriter{f: f, h: sha256x2.New(), path: p}
	b.mu.Lock()
	b.files = append(b.files, p)
	b.mu.Unlock()
	fw.w = f
	switch {
	case compress || b.NoSync:
		// zstd output is small; without fsync, writing to the page cache
		// and returning is what was asked for.
		fw.flushed = -1
	case !b.Buffered:
		fw.dw = newDirectWriter(f, p, fw.h)
		fw.w = fw.dw
		fw.flushed = -1
	}
	if compress {
		enc, err := zstd.NewWriter(f, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedDefault))
		if err != nil {
			f.Close()
			return nil, err
		}
		fw.zw = enc
		fw.w = enc
	}
	return fw, nil
}

// FileWriter hashes and counts what is written and fsyncs on Close.
type FileWriter struct {
	f    *os.File
	zw   *zstd.Encoder
	w    io.Writer
	h    hash.Hash
	n    int64
	path string

	dw *directWriter // direct I/O, when used (it hashes for the file)

	// flushed is the offset up to which writeback has been started
	// (uncompressed files only, where file offsets equal n); -1 disables it.
	flushed int64
}

// writebackStep is how many bytes a file accumulates before its writeback
// is started: large enough for sequential device writes, small enough that
// dirty pages never pile up to the kernel's throttling threshold.
const writebackStep = 32 << 20

func (fw *FileWriter) Write(p []byte) (int, error) {
	n, err := fw.w.Write(p)
	if fw.dw == nil { // the direct writer hashes what it stages
		fw.h.Write(p[:n])
	}
	return fw.wrote(n, err)
}

// wrote accounts for n bytes written with error err.
func (fw *FileWriter) wrote(n int, err error) (int, error) {
	fw.n += int64(n)
	if fw.flushed >= 0 && fw.n-fw.flushed >= writebackStep {
		startWriteback(fw.f, fw.flushed, fw.n-fw.flushed)
		fw.flushed = fw.n
	}
	if err != nil {
		return n, fmt.Errorf("manifests: write %q: %w", fw.path, err)
	}
	return n, nil
}

// Close flushes and closes the file (Commit fsyncs all files at once:
// one fsync per file as it closes serialises the disk's flushes).
func (fw *FileWriter) Close() error {
	var err error
	if fw.zw != nil {
		err = fw.zw.Close()
	}
	if fw.dw != nil {
		if e := fw.dw.finish(); err == nil {
			err = e
		}
	}
	if e := fw.f.Close(); err == nil && e != nil {
		err = e
	}
	if err != nil {
		return fmt.Errorf("manifests: finish %q: %w", fw.path, err)
	}
	return nil
}

// SizeHint tells the writer the file's expected size, which orders its
// device writes among the process's (see diskQueue).
func (fw *FileWriter) SizeHint(n int64) {
	if fw.dw != nil {
		fw.dw.size = n
	}
}

// SHA256 returns the hex sha256 of the uncompressed bytes written so far;
// with direct I/O (which hashes on its own goroutine) only after Close.
func (fw *FileWriter) SHA256() string { return hex.EncodeToString(fw.h.Sum(nil)) }

// Bytes returns the number of uncompressed bytes written.
func (fw *FileWriter) Bytes() int64 { return fw.n }

// Commit seals m, writes manifest.json, fsyncs and renames the temporary
// directory onto the target, replacing an older bundle there.
func (b *BundleWriter) Commit(m *Manifest) error {
	if b.done {
		return errors.New("manifests: bundle already committed or aborted")
	}
	if err := m.Validate(); err != nil {
		return fmt.Errorf("manifests: refusing to write an invalid manifest: %w", err)
	}
	if err := m.Seal(); err != nil {
		return err
	}
	data, err := m.Marshal()
	if err != nil {
		return err
	}
	fw, err := b.Create("manifest.json", false)
	if err != nil {
		return err
	}
	if _, err := fw.Write(data); err != nil {
		fw.Close()
		return err
	}
	if err := fw.Close(); err != nil {
		return err
	}
	if !b.NoSync {
		if err := b.syncAll(); err != nil {
			return err
		}
	}
	// The check and the renames are one critical section: a forced exit on
	// a signal (internal/shutdown) waits for it, so the target is never
	// left moved aside.
	err = shutdown.Critical(b.swap)
	if err == nil && b.release != nil {
		b.release()
	}
	return err
}

// swap renames the temporary directory onto the target (Commit).
func (b *BundleWriter) swap() error {
	// Checked again: the target may have changed while the bundle was built.
	if _, err := checkReplaceable(b.final, b.opts); err != nil {
		return err
	}
	var old string
	if _, err := os.Stat(b.final); err == nil {
		// Swap old and new in one step where the OS can, so a crash
		// leaves either bundle at the target, never neither.
		if err := exchange(b.tmp, b.final); err == nil {
			b.done = true
			syncDir(filepath.Dir(b.final))
			os.RemoveAll(b.tmp) // now holds the old bundle
			return nil
		}
		old = strings.Replace(b.tmp, tmpMarker, oldMarker, 1)
		if err := os.Rename(b.final, old); err != nil {
			return fmt.Errorf("manifests: move old bundle aside: %w", err)
		}
	}
	if err := os.Rename(b.tmp, b.final); err != nil {
		if old != "" {
			os.Rename(old, b.final)
		}
		return fmt.Errorf("manifests: rename bundle into place: %w", err)
	}
	b.done = true
	syncDir(filepath.Dir(b.final))
	if old != "" {
		os.RemoveAll(old)
	}
	return nil
}

// Abort removes the temporary directory. It is safe to call after Commit.
func (b *BundleWriter) Abort() {
	if b.done {
		return
	}
	b.done = true
	os.RemoveAll(b.tmp)
	if b.release != nil {
		// After the removal: a forced exit meanwhile removes it too.
		b.release()
	}
}

// syncAll fsyncs every written file and every directory of the temporary
// bundle, several at a time so the device can batch the flushes.
func (b *BundleWriter) syncAll() error {
	paths := append([]string(nil), b.files...)
	err := filepath.WalkDir(b.tmp, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("manifests: %w", err)
	}
	errs := make([]error, len(paths))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, p := range paths {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			errs[i] = syncDir(p)
			<-sem
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// syncDir fsyncs a file or directory by path.
func syncDir(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("manifests: fsync %q: %w", p, err)
	}
	return nil
}
