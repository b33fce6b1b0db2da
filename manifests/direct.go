package manifests

import (
	"context"
	"fmt"
	"hash"
	"os"
	"runtime/trace"
	"slices"
	"strconv"
	"sync"
	"unsafe"

	"github.com/goldset/goldset/internal/bufpool"
	"github.com/goldset/goldset/internal/hugemem"
	"github.com/goldset/goldset/internal/sha256x2"
)

// Direct I/O. A bundle is usually larger than the page cache can hold, and
// on virtual machines every page the cache takes can cost a fault on the
// host: buffered writes of a large bundle spend about as much CPU in the
// kernel as goldset spends computing it. Where the filesystem supports
// O_DIRECT, a file's whole aligned blocks therefore go straight from
// goldset's buffers to the device: data is staged in one of directBufs
// aligned buffers while the others are being written, and only the last partial
// block goes through the page cache. Where O_DIRECT is refused (tmpfs,
// some network filesystems, other systems) the same code writes buffered.

const (
	directAlign   = 4096    // offset, length and address alignment (covers 512-byte devices)
	directBufSize = 4 << 20 // one write
	directPoolMax = 32      // buffers kept for reuse (fresh memory is slow to fault in)
)

// directPool keeps the aligned buffers between files.
var directPool = bufpool.New(directPoolMax, func() []byte {
	raw := make([]byte, directBufSize+directAlign)
	hugemem.Advise(raw)
	skip := (directAlign - int(uintptr(unsafe.Pointer(&raw[0]))%directAlign)) % directAlign
	return raw[skip : skip+directBufSize : skip+directBufSize]
})

func getDirectBuf() []byte  { return directPool.Get() }
func putDirectBuf(b []byte) { directPool.Put(b) }

// directBufs is how many buffers a file cycles through: while one fills,
// the others' writes are in flight, so the device sees several requests
// at once (one direct write at a time leaves it idle between requests).
const directBufs = 4

// directWriter stages writes into aligned buffers, hashes what it stages
// and writes each full buffer at its offset through the disk queue.
//
// A large file hashes on a goroutine of its own that reads the staged
// buffers in order, behind the copies: the caller copies the next piece
// while the last is hashed, and waits only to reuse a buffer whose write
// or hash is unfinished. For such a file sha256 (about 1.4 GB/s on one
// core) is the build's floor; hashed beside each copy and waited for,
// the hashing goroutine, readied by every handover, sat behind the copy
// on the caller's core for about a fifth of the file's time (gen --trace
// on 16 cores).
type directWriter struct {
	f      *os.File
	path   string
	direct bool // O_DIRECT is on
	bufs   [directBufs][]byte
	busy   [directBufs]bool // bufs[i] is being written
	done   [directBufs]chan error
	cur    int   // buffer being filled
	n      int   // bytes in bufs[cur]
	off    int64 // file offset of bufs[cur]
	err    error
	size   int64 // expected file size (SizeHint), 0 when unknown

	h      hash.Hash
	hq     chan hashJob // to the hashing goroutine; nil: hashed inline
	hashed [directBufs]chan struct{}
	marked [directBufs]bool // bufs[i]'s hash is owed a signal on hashed[i]
	hdone  chan struct{}    // the hashing goroutine has ended
}

// hashJob is a staged piece to hash, or (mark >= 0) the signal that
// buffer mark's pieces are all hashed.
type hashJob struct {
	b    []byte
	mark int
}

// hashAsideMin is the smallest write that moves a file's hashing to its
// own goroutine (from then on every piece goes there, in order), where it
// can be hashed paired with another file's (hashpair.go): the suite's
// writers emit 512 KiB pieces of half tensors.
const hashAsideMin = 256 << 10

// startHashing starts the file's hashing goroutine.
func (d *directWriter) startHashing() {
	d.hq, d.hdone = make(chan hashJob, 64), make(chan struct{})
	for i := range d.hashed {
		d.hashed[i] = make(chan struct{}, 1)
	}
	go func(in <-chan hashJob) {
		defer close(d.hdone)
		dg, pairable := d.h.(*sha256x2.Digest)
		done := make(chan struct{}, 1)
		for j := range in {
			if j.mark >= 0 {
				d.hashed[j.mark] <- struct{}{}
				continue
			}
			if pairable {
				pairedWrite(dg, j.b, done)
			} else {
				d.h.Write(j.b)
			}
		}
	}(d.hq)
}

// hash hashes a staged piece, on the hashing goroutine once it runs.
func (d *directWriter) hash(b []byte) {
	if d.hq != nil {
		d.hq <- hashJob{b: b, mark: -1}
		return
	}
	d.h.Write(b)
}

// stopHashing waits for the hashing goroutine to hash what it was given
// and end.
func (d *directWriter) stopHashing() {
	if d.hq != nil {
		close(d.hq)
		<-d.hdone
		d.hq = nil
	}
}

// diskQueue runs the process's direct writes on diskWorkers goroutines.
// A free worker takes the waiting write whose file has the most bytes
// still to come (its size hint less the write's offset; ties in arrival
// order). The longest file's single writer, whose sha256 runs at about
// 1.4 GB/s on one core, is a build's critical path: queued behind a dozen
// short files' writes it would finish last and alone, the device half
// idle. The workers live for the process, so a write allocates nothing
// (an allocation during a GC cycle can park its goroutine in the
// collector's assist queue behind every busy core).
type diskQueue struct {
	mu   sync.Mutex
	cond sync.Cond
	reqs []diskReq
	seq  int64
	once sync.Once
}

type diskReq struct {
	d       *directWriter
	i       int // buffer index: the result goes to d.done[i]
	buf     []byte
	off     int64
	prio    int64
	arrival int64
}

// diskWorkers is how many direct writes are in flight at once: 16 MiB,
// which keeps a disk as busy as dd's one 4 MiB write at a time does, and
// few enough that the queue, not the device, decides the order.
var diskWorkers = 4

var disk = &diskQueue{}

func (q *diskQueue) submit(r diskReq) {
	q.once.Do(func() {
		q.cond.L = &q.mu
		for range diskWorkers {
			go q.work()
		}
	})
	q.mu.Lock()
	q.seq++
	r.arrival = q.seq
	q.reqs = append(q.reqs, r)
	q.mu.Unlock()
	q.cond.Signal()
}

func (q *diskQueue) work() {
	for {
		q.mu.Lock()
		for len(q.reqs) == 0 {
			q.cond.Wait()
		}
		best := nextWrite(q.reqs)
		r := q.reqs[best]
		q.reqs = slices.Delete(q.reqs, best, best+1)
		q.mu.Unlock()
		r.d.done[r.i] <- r.d.writeAt(r.buf, r.off)
	}
}

// nextWrite is the index of the write a free worker takes: the most bytes
// still to come in its file, then the earliest arrival.
func nextWrite(reqs []diskReq) int {
	best := 0
	for i, r := range reqs {
		if b := reqs[best]; r.prio > b.prio || (r.prio == b.prio && r.arrival < b.arrival) {
			best = i
		}
	}
	return best
}

func newDirectWriter(f *os.File, path string, h hash.Hash) *directWriter {
	d := &directWriter{f: f, path: path, direct: setDirect(f, true) == nil, h: h}
	for i := range d.done {
		d.done[i] = make(chan error, 1)
	}
	return d
}

func (d *directWriter) Write(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	if d.hq == nil && len(p) >= hashAsideMin {
		d.startHashing()
	}
	total := len(p)
	for len(p) > 0 {
		if err := d.wait(d.cur); err != nil {
			return total - len(p), err
		}
		if d.bufs[d.cur] == nil {
			d.bufs[d.cur] = getDirectBuf()
		}
		k := copy(d.bufs[d.cur][d.n:], p)
		d.hash(d.bufs[d.cur][d.n : d.n+k])
		d.n += k
		p = p[k:]
		if d.n == directBufSize {
			if err := d.flush(); err != nil {
				return total - len(p), err
			}
		}
	}
	return total, nil
}

// flush starts writing the full current buffer and moves to the next.
func (d *directWriter) flush() error {
	i, buf, off := d.cur, d.bufs[d.cur], d.off
	d.busy[i] = true
	disk.submit(diskReq{d: d, i: i, buf: buf, off: off, prio: d.size - off})
	if d.hq != nil {
		d.hq <- hashJob{mark: i}
		d.marked[i] = true
	}
	d.off += int64(len(buf))
	d.cur = (d.cur + 1) % directBufs
	d.n = 0
	return nil
}

// wait waits for buffer i's write and hash, if any, and returns the
// first error.
func (d *directWriter) wait(i int) error {
	if d.busy[i] {
		d.busy[i] = false
		if err := <-d.done[i]; err != nil && d.err == nil {
			d.err = err
		}
	}
	if d.marked[i] {
		d.marked[i] = false
		<-d.hashed[i]
	}
	return d.err
}

// writeAt writes buf at off, falling back to a buffered write if the
// filesystem turns an O_DIRECT write down.
func (d *directWriter) writeAt(buf []byte, off int64) error {
	_, err := d.f.WriteAt(buf, off)
	if trace.IsEnabled() { // gen --trace: the device's progress per file
		trace.Log(context.Background(), "pwrite", strconv.Itoa(len(buf))+" "+d.path)
	}
	if err != nil && d.direct && isEINVAL(err) {
		if setDirect(d.f, false) == nil {
			_, err = d.f.WriteAt(buf, off)
		}
	}
	return err
}

// finish writes what is staged, the final partial block buffered, and
// returns the buffers to the pool. It must be called once, before the
// file is closed, even after an error.
func (d *directWriter) finish() error {
	var err error
	for i := range d.busy {
		if e := d.wait(i); err == nil {
			err = e
		}
	}
	d.stopHashing() // the staged tail's pieces too, before the buffers go back
	if err == nil && d.n > 0 {
		buf := d.bufs[d.cur][:d.n]
		whole := d.n &^ (directAlign - 1)
		if whole > 0 {
			err = d.writeAt(buf[:whole], d.off)
		}
		if err == nil && whole < d.n {
			if d.direct {
				err = setDirect(d.f, false)
			}
			if err == nil {
				_, err = d.f.WriteAt(buf[whole:], d.off+int64(whole))
			}
		}
	}
	for i, b := range d.bufs {
		if b != nil {
			putDirectBuf(b)
			d.bufs[i] = nil
		}
	}
	if err != nil {
		return fmt.Errorf("manifests: write %q: %w", d.path, err)
	}
	return nil
}
