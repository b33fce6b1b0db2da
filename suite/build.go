package suite

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"runtime/trace"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/goldset/goldset/compare"
	"github.com/goldset/goldset/gen"
	"github.com/goldset/goldset/internal/bufpool"
	"github.com/goldset/goldset/internal/cpuslots"
	"github.com/goldset/goldset/internal/hugemem"
	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/npy"
)

// GeneratorVersion names the input-generation algorithm (package gen) and
// the case builders of this package; it is recorded in every manifest.
const GeneratorVersion = "goldset-gen/1"

// Sentinel errors.
var (
	ErrParams    = errors.New("invalid case parameters")
	ErrUnknownOp = errors.New("unknown op")
	ErrSecret    = errors.New("hidden cases need the secret")
	ErrShard     = errors.New("invalid shard")
)

// Shard selects every Count-th case starting at Index (0-based).
type Shard struct{ Index, Count int }

// String formats s as "i/n" (1-based i, as users write it), "" when unsharded.
func (s Shard) String() string {
	if s.Count <= 1 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index+1, s.Count)
}

// Event reports progress; Bytes is a running total of tensor bytes produced.
type Event struct {
	Case       string
	CaseDone   bool
	CasesDone  int
	CasesTotal int
	Bytes      int64
	TotalBytes int64 // estimate of all tensor bytes, for ETA
}

// Options controls a build.
type Options struct {
	// Splits to build; empty means public and benchmark, plus hidden when a
	// secret is given.
	Splits []string
	// Cases restricts the build to these case ids (empty: all).
	Cases []string
	// Jobs is the number of cases built at once (>= 1); kernels inside a
	// case use all of GOMAXPROCS. Output never depends on it.
	Jobs     int
	Compress bool
	// Secret derives hidden cases' seeds (HMAC-SHA256(secret, case id)).
	Secret   []byte
	Shard    Shard
	Progress func(Event)
	// Provenance is copied into the manifest (outside its digest).
	Provenance *manifests.Provenance
}

// Sink receives the tensor files of a build.
type Sink interface {
	Create(rel string, compress bool) (File, error)
}

// File is one tensor file being written; hash and size are over the
// uncompressed .npy bytes.
type File interface {
	io.Writer
	Close() error
	SHA256() string
	Bytes() int64
}

// SelectCases applies splits, case ids and the shard to r's cases and
// returns them in recipe order.
func SelectCases(r *manifests.Recipe, o Options) ([]manifests.RecipeCase, error) {
	splits := o.Splits
	if len(splits) == 0 {
		splits = []string{manifests.SplitPublic, manifests.SplitBenchmark}
		if len(o.Secret) > 0 {
			splits = append(splits, manifests.SplitHidden)
		}
	}
	for _, s := range splits {
		switch s {
		case manifests.SplitPublic, manifests.SplitBenchmark, manifests.SplitHidden, manifests.SplitEdge:
		default:
			return nil, fmt.Errorf("suite: unknown split %q (public, benchmark, hidden, edge)", s)
		}
	}
	if o.Shard.Count > 1 && (o.Shard.Index < 0 || o.Shard.Index >= o.Shard.Count) {
		return nil, fmt.Errorf("suite: %w: index %d of %d", ErrShard, o.Shard.Index+1, o.Shard.Count)
	}
	known := make(map[string]bool)
	for _, c := range r.Cases {
		known[c.ID] = true
	}
	for _, id := range o.Cases {
		if !known[id] {
			return nil, fmt.Errorf("suite: %s has no case %q", r.Name, id)
		}
	}
	var sel []manifests.RecipeCase
	for _, c := range r.Cases {
		if !slices.Contains(splits, c.Split) {
			continue
		}
		if len(o.Cases) > 0 && !slices.Contains(o.Cases, c.ID) {
			continue
		}
		if c.Split == manifests.SplitHidden && len(o.Secret) == 0 {
			return nil, fmt.Errorf("suite: case %q: %w (give --secret-file or GOLDSET_HIDDEN_SECRET, or leave the hidden split out)", c.ID, ErrSecret)
		}
		sel = append(sel, c)
	}
	if o.Shard.Count <= 1 {
		return sel, nil
	}
	// Shard k takes selected cases k, k+n, k+2n, ...: merging shards
	// round-robin restores the unsharded order exactly.
	var out []manifests.RecipeCase
	for i := o.Shard.Index; i < len(sel); i += o.Shard.Count {
		out = append(out, sel[i])
	}
	return out, nil
}

// CaseSeed returns the seed a case's streams use: the suite seed for public
// and benchmark cases; for hidden cases the first 8 bytes (big-endian) of
// HMAC-SHA256(secret, case id).
func CaseSeed(r *manifests.Recipe, c manifests.RecipeCase, secret []byte) uint64 {
	if c.Split != manifests.SplitHidden {
		return r.Seed
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(c.ID))
	return binary.BigEndian.Uint64(mac.Sum(nil)[:8])
}

// Build generates every selected case of r into sink and returns the
// manifest (not yet sealed into a bundle: the caller commits it).
func Build(ctx context.Context, r *manifests.Recipe, sink Sink, o Options) (*manifests.Manifest, error) {
	cases, err := SelectCases(r, o)
	if err != nil {
		return nil, err
	}
	// Check every case's parameters before producing anything.
	plans := make([]*casePlan, len(cases))
	var totalBytes int64
	for i, c := range cases {
		p, err := planCase(c)
		if err != nil {
			return nil, fmt.Errorf("suite %s: %w", r.Name, err)
		}
		plans[i] = p
		totalBytes += p.bytes
	}
	m := &manifests.Manifest{
		SchemaVersion: manifests.SchemaVersion,
		Suite:         r.Name,
		SuiteVersion:  r.Version,
		SpecVersion:   r.SpecVersion,
		Generator:     GeneratorVersion,
		Seed:          r.Seed,
		Shard:         o.Shard.String(),
		Provenance:    o.Provenance,
	}
	// built[i] is recipe case i's manifest cases: one, or a chain's stages.
	built := make([][]manifests.Case, len(cases))
	for _, c := range cases {
		if c.Split == manifests.SplitHidden {
			sum := sha256.Sum256(o.Secret)
			m.HiddenCommitment = hex.EncodeToString(sum[:])
			break
		}
	}
	jobs := o.Jobs
	if jobs < 1 {
		jobs = 1
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu        sync.Mutex
		firstErr  error
		done      int
		bytesDone atomic.Int64
		wg        sync.WaitGroup
		next      = make(chan int)
	)
	report := func(id string, caseDone bool) {
		if o.Progress == nil {
			return
		}
		mu.Lock()
		if caseDone {
			done++
		}
		ev := Event{Case: id, CaseDone: caseDone, CasesDone: done, CasesTotal: len(cases), Bytes: bytesDone.Load(), TotalBytes: totalBytes}
		o.Progress(ev)
		mu.Unlock()
	}
	order, head := headFirst(plans, jobs)
	var headStarted chan struct{}
	if head >= 0 {
		headStarted = make(chan struct{})
	}
	for w := 0; w < jobs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c := cases[i]
				// A task per case, so that 'go tool trace' (gen --trace)
				// shows each case's span and its tensors' writers.
				tctx, task := trace.NewTask(ctx, "case "+c.ID)
				cc := &caseCtx{
					ctx:      tctx,
					id:       c.ID,
					seed:     CaseSeed(r, c, o.Secret),
					tols:     plans[i].tols,
					sink:     sink,
					compress: o.Compress,
					onBytes: func(n int64) {
						bytesDone.Add(n)
					},
					tick: func() { report(c.ID, false) },
				}
				if i == head {
					var once sync.Once
					cc.started = func() { once.Do(func() { close(headStarted) }) }
					cc.lead = plans[i].lead
				}
				err := plans[i].build(cc)
				if cc.started != nil {
					cc.started() // a case that opens no tensor
				}
				if err == nil {
					err = ctx.Err()
				}
				cc.abortOpen()
				task.End()
				var work *manifests.Work
				switch {
				case err != nil:
				case plans[i].chain == nil:
					work, err = caseWork(c.Op, plans[i].params, cc.tensors, cc.facts)
				default:
					err = cc.endStage() // the last stage, with its work
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("suite %s: case %s: %w", r.Name, c.ID, err)
					}
					mu.Unlock()
					cancel()
					continue
				}
				if plans[i].chain != nil {
					for k := range cc.stages {
						cc.stages[k].Split = c.Split
					}
					built[i] = cc.stages
					report(c.ID, true)
					continue
				}
				mc := manifests.Case{ID: c.ID, Op: c.Op, Split: c.Split, Params: plans[i].params, Tensors: cc.tensors, Info: cc.infoJSON(), Work: work}
				built[i] = []manifests.Case{mc}
				report(c.ID, true)
			}
		}()
	}
feed:
	for k, i := range order {
		if k == 1 && headStarted != nil {
			// The head case runs alone until it opens its lead tensor
			// (casePlan.lead; else its first): the largest case's first
			// stage (the DSA selection, say) gets every core, and its
			// writer, the build's longest, starts before the cores and
			// the device are shared.
			select {
			case <-headStarted:
			case <-ctx.Done():
				break feed
			}
		}
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.Cases = []manifests.Case{}
	for i, cs := range built {
		m.Cases = append(m.Cases, cs...)
		if ch := plans[i].chain; ch != nil {
			rec := *ch
			rec.ID, rec.Split = cases[i].ID, cases[i].Split
			m.Chains = append(m.Chains, rec)
		}
	}
	return m, nil
}

// headFirst orders the cases for jobs workers: the case of the most
// planned bytes first (the head, returned; -1 when there is no head
// start), then the others in recipe order. The output never depends on
// the order.
func headFirst(plans []*casePlan, jobs int) (order []int, head int) {
	order = make([]int, 0, len(plans))
	if jobs < 2 || len(plans) < 2 {
		for i := range plans {
			order = append(order, i)
		}
		return order, -1
	}
	head = 0
	for i, p := range plans {
		if p.bytes > plans[head].bytes {
			head = i
		}
	}
	order = append(order, head)
	for i := range plans {
		if i != head {
			order = append(order, i)
		}
	}
	return order, head
}

// caseCtx is what a case builder writes through.
type caseCtx struct {
	ctx      context.Context
	id       string
	seed     uint64
	tols     map[string]*compare.Tolerance // of the case's goldens and truths (the op table's)
	sink     Sink
	compress bool
	onBytes  func(int64)
	tick     func()
	tensors  []manifests.Tensor
	info     map[string]any
	open     []*tensorOut // created, not yet closed or aborted
	started  func()       // the head case's signal (see headFirst), else nil
	lead     int64        // the head's signal comes with its first tensor of at least lead bytes

	factMu sync.Mutex
	facts  map[string]int64 // counts the op's work formula needs (addFact)
	// A pipeline case writes one stage case after another (pipeline.go):
	// dir is the current stage's directory (the case id when empty),
	// stage its manifest case, stages the finished ones.
	dir    string
	stage  *manifests.Case
	stages []manifests.Case
}

// infoJSON returns the case's info as JSON (nil without info).
func (c *caseCtx) infoJSON() json.RawMessage {
	if c.info == nil {
		return nil
	}
	b, err := json.Marshal(c.info)
	if err != nil {
		panic("suite: info not marshalable: " + err.Error())
	}
	return b
}

// abortOpen aborts every tensor a failed builder left open.
func (c *caseCtx) abortOpen() {
	for _, t := range c.open {
		if t != nil {
			t.abort()
		}
	}
	c.open = nil
}

func (c *caseCtx) setInfo(k string, v any) {
	if c.info == nil {
		c.info = make(map[string]any)
	}
	c.info[k] = v
}

// tensorSpec describes one tensor to write.
type tensorSpec struct {
	name  string
	role  string
	dtype string // logical dtype
	shape []int64
}

// tensorOut is one tensor being written; several may be open at once.
// Its manifest entry is placed when it is created, so the manifest order is
// the creation order whatever the order of closing.
//
// Writing runs on the tensor's own goroutine (and a large file's hashing
// on one more, see manifests), overlapping the generation and golden work
// that produce the bytes; the byte order is
// the order of emit calls, so the output does not depend on it.
type tensorOut struct {
	c    *caseCtx
	idx  int
	f    File
	rel  string
	nw   *npy.Writer
	n    int64 // bytes emitted
	last int64
	buf  []byte

	queue chan []byte   // filled buffers, in order
	free  chan []byte   // buffers to reuse
	done  chan struct{} // closed when the writer goroutine has drained
	werr  atomic.Pointer[error]
	spare int // buffers allocated so far

	// A deferred tensor (see deferred) has no manifest entry until
	// commit.
	deferredSpec *tensorSpec
}

// deferred returns a tensor whose manifest entry is placed when commit is
// called rather than now, so that the tensor can be computed and written
// while earlier tensors are still being written without changing the
// manifest order (the creation order of the entries). Its bytes stream to
// its file as they come; only the entry waits.
func (c *caseCtx) deferred(ts tensorSpec) (*tensorOut, error) {
	t, err := c.createFile(ts)
	if err != nil {
		return nil, err
	}
	t.deferredSpec = &ts
	t.idx = -1
	return t, nil
}

// commit places a deferred tensor's manifest entry and closes it.
func (t *tensorOut) commit() error {
	if err := t.c.addEntry(*t.deferredSpec, t.rel); err != nil {
		t.abort()
		return err
	}
	t.idx = len(t.c.tensors) - 1
	return t.close()
}

// writeAhead is how many emitted buffers may wait for the writer.
const writeAhead = 4

func (t *tensorOut) start() {
	t.queue = make(chan []byte, writeAhead)
	t.free = make(chan []byte, writeAhead+1)
	t.done = make(chan struct{})
	go func() {
		defer close(t.done)
		defer trace.StartRegion(t.c.ctx, "write "+t.rel).End()
		for p := range t.queue {
			if t.werr.Load() == nil {
				if _, err := t.nw.Write(p); err != nil {
					// Only a failure allocates: an allocation during a
					// GC cycle can park this goroutine, often the
					// build's critical one.
					e := err
					t.werr.Store(&e)
				}
			}
			t.free <- p[:0]
		}
	}()
}

// drain stops the writer goroutine and returns its first error.
func (t *tensorOut) drain() error {
	if t.queue != nil {
		close(t.queue)
		<-t.done
		t.queue = nil
		putBufs(t.free)
	}
	if e := t.werr.Load(); e != nil {
		return *e
	}
	return nil
}

// create opens the tensor's file and reserves its manifest entry.
func (c *caseCtx) create(ts tensorSpec) (*tensorOut, error) {
	t, err := c.createFile(ts)
	if err != nil {
		return nil, err
	}
	if err := c.addEntry(ts, t.rel); err != nil {
		t.abort()
		return nil, err
	}
	t.idx = len(c.tensors) - 1
	return t, nil
}

// createFile opens ts's file and starts its writer, without a manifest
// entry.
func (c *caseCtx) createFile(ts tensorSpec) (*tensorOut, error) {
	descr, ok := manifests.NpyDType(ts.dtype)
	if !ok {
		panic("suite: unknown dtype " + ts.dtype)
	}
	hdr := npy.Header{Descr: descr, Shape: ts.shape}
	size := hdr.NumBytes() // -1 when it overflows: NewWriter refuses the header below
	if c.started != nil && size >= c.lead {
		c.started()
	}
	if err := c.ctx.Err(); err != nil {
		return nil, err
	}
	dir := c.id
	if c.dir != "" {
		dir = c.dir
	}
	rel := path.Join(dir, ts.name+".npy")
	if c.compress {
		rel += ".zst"
	}
	f, err := c.sink.Create(rel, c.compress)
	if err != nil {
		return nil, err
	}
	nw, err := npy.NewWriter(f, hdr)
	if err != nil {
		f.Close()
		return nil, err
	}
	if h, ok := f.(interface{ SizeHint(int64) }); ok {
		h.SizeHint(size)
	}
	out := &tensorOut{c: c, f: f, nw: nw, rel: rel}
	out.start()
	c.open = append(c.open, out)
	return out, nil
}

// addEntry appends ts's manifest entry (hash and size come at close).
func (c *caseCtx) addEntry(ts tensorSpec, rel string) error {
	t := manifests.Tensor{Name: ts.name, Role: ts.role, Path: rel, DType: ts.dtype, Shape: slices.Clone(ts.shape)}
	if c.compress {
		t.Compression = "zstd"
	}
	if ts.role == roleGolden || ts.role == roleTruth {
		// Every golden and truth tensor is one of the op's outputs, with the
		// tolerance the plan chose for its dtype.
		tol, ok := c.tols[ts.name]
		if !ok || tol.DType != ts.dtype {
			return fmt.Errorf("%s %s (%s) is not an output of its op's table", ts.role, ts.name, ts.dtype)
		}
		b, err := json.Marshal(tol)
		if err != nil {
			return err
		}
		t.Tolerance = b
	}
	c.tensors = append(c.tensors, t)
	return nil
}

// emit appends data bytes.
func (t *tensorOut) emit(p []byte) error {
	b, err := t.reserve(len(p))
	if err != nil {
		return err
	}
	copy(b, p)
	return t.submit(b)
}

// reserve returns a buffer of n bytes for the caller to fill with the
// next data bytes and pass to submit: producers that can write in place
// (writeCache) save emit's copy. It waits while writeAhead buffers are
// queued.
func (t *tensorOut) reserve(n int) ([]byte, error) {
	if err := t.c.ctx.Err(); err != nil {
		return nil, err
	}
	if e := t.werr.Load(); e != nil {
		return nil, *e
	}
	var b []byte
	select {
	case b = <-t.free:
	default:
		if t.spare < writeAhead+1 {
			t.spare++
		} else {
			b = <-t.free
		}
	}
	if cap(b) < n {
		if b = getBuf(n); b == nil {
			b = make([]byte, n)
			hugemem.Advise(b)
		}
	}
	return b[:n], nil
}

// Large write buffers outlive their tensor in a small pool: a fresh buffer
// costs zeroing and a page fault per 4 KiB (several times more on virtual
// machines), and a build writes many large tensors one after another.
const (
	pooledBufMin  = 2 << 20 // smaller requests get their own buffer (a 4 MiB buffer for a 1 MiB batch would hold 4x the memory)
	pooledBufSize = 4 << 20 // every pooled buffer's capacity
	pooledBufMax  = 16      // buffers kept
)

var bufPool = bufpool.New(pooledBufMax, func() []byte {
	b := make([]byte, pooledBufSize)
	hugemem.Advise(b)
	return b
})

// getBuf returns a pooled buffer for n bytes, or nil when n is not pooled.
func getBuf(n int) []byte {
	if n < pooledBufMin || n > pooledBufSize {
		return nil
	}
	return bufPool.Get()
}

// putBufs returns a drained tensor's pooled buffers.
func putBufs(free chan []byte) {
	for {
		select {
		case b := <-free:
			if cap(b) == pooledBufSize {
				bufPool.Put(b[:cap(b)])
			}
		default:
			return
		}
	}
}

// submit queues a buffer from reserve, filled.
func (t *tensorOut) submit(b []byte) error {
	t.queue <- b
	t.n += int64(len(b))
	t.c.onBytes(int64(len(b)))
	if t.n-t.last >= 64<<20 {
		t.last = t.n
		t.c.tick()
	}
	return nil
}

// close checks the byte count, finishes the file and records its hash.
func (t *tensorOut) close() error {
	t.forget()
	if err := t.drain(); err != nil {
		t.f.Close()
		return err
	}
	if err := t.nw.Close(); err != nil {
		t.f.Close()
		return fmt.Errorf("%s: %w", t.c.tensors[t.idx].Name, err)
	}
	if err := t.f.Close(); err != nil {
		return err
	}
	t.c.tensors[t.idx].SHA256 = t.f.SHA256()
	t.c.tensors[t.idx].Bytes = t.f.Bytes()
	return nil
}

// abort closes the file after an error; the bundle is discarded anyway.
func (t *tensorOut) abort() {
	t.forget()
	t.drain()
	t.f.Close()
}

// forget removes t from its case's open list.
func (t *tensorOut) forget() {
	for i, o := range t.c.open {
		if o == t {
			t.c.open[i] = nil
		}
	}
}

// fillAsync runs fill(t) on its own goroutine, so that several tensors of
// a case (and its golden) are produced at once; the manifest keeps the
// creation order. The returned wait gives fill's error; it must be called
// before t is closed and before the builder returns (builders defer it),
// and may be called more than once.
func fillAsync(t *tensorOut, fill func(*tensorOut) error) (wait func() error) {
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		err = fill(t)
	}()
	return func() error {
		<-done
		return err
	}
}

// write creates a tensor, lets fill write all of its data, and closes it.
func (c *caseCtx) write(ts tensorSpec, fill func(*tensorOut) error) error {
	t, err := c.create(ts)
	if err != nil {
		return err
	}
	if err := fill(t); err != nil {
		t.abort()
		return err
	}
	return t.close()
}

func defaultJobs() int { return cpuslots.Procs() }

// manifestsRecipeCase shortens signatures.
type manifestsRecipeCase = manifests.RecipeCase

const (
	roleInput  = manifests.RoleInput
	roleGolden = manifests.RoleGolden
	roleTruth  = manifests.RoleTruth
	roleAux    = manifests.RoleAux
)

func errUnknownOp(c manifests.RecipeCase) error {
	return fmt.Errorf("case %q: %w %q (known: %v)", c.ID, ErrUnknownOp, c.Op, Ops())
}

func errCase(c manifests.RecipeCase, err error) error {
	return fmt.Errorf("case %q (%s): %w", c.ID, c.Op, err)
}

// stream returns the generator stream of one of the case's tensors.
func (c *caseCtx) stream(tensor string) gen.Stream { return gen.NewStream(c.seed, c.id, tensor) }

// EstimateBytes validates a case's parameters and estimates its tensor bytes.
func EstimateBytes(c manifests.RecipeCase) (int64, error) {
	p, err := planCase(c)
	if err != nil {
		return 0, err
	}
	return p.bytes, nil
}
