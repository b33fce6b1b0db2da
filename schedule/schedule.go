package schedule

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
)

// Config is the scheduler and KV cache configuration (vLLM names).
type Config struct {
	// MaxNumBatchedTokens is the token budget of one step
	// (--max-num-batched-tokens); 0 means DefaultMaxNumBatchedTokens.
	MaxNumBatchedTokens int `json:"max_num_batched_tokens"`
	// MaxNumSeqs caps the running requests (--max-num-seqs); 0 means
	// DefaultMaxNumSeqs.
	MaxNumSeqs int `json:"max_num_seqs"`
	// BlockSize is the KV cache block (page) size in tokens; 0 means 16.
	BlockSize int `json:"block_size"`
	// NumBlocks is the KV block budget, vLLM's num_gpu_blocks (e.g. from
	// `goldset serving size`). Block 0 is vLLM's null block and never
	// handed out, so NumBlocks-1 blocks are usable. Required.
	NumBlocks int `json:"num_blocks"`
	// LongPrefillTokenThreshold caps the tokens one request computes per
	// step (--long-prefill-token-threshold); 0 = off.
	LongPrefillTokenThreshold int `json:"long_prefill_token_threshold"`
	// NumSpeculativeTokens is the draft length k; 0 = off. A decoding
	// request then schedules 1+k tokens (a "verify" row).
	NumSpeculativeTokens int `json:"num_speculative_tokens"`
	// Seed drives the seeded choices (draft-token acceptance).
	Seed uint64 `json:"seed"`

	// AcceptanceRate is the probability that a draft token is accepted
	// given that every earlier draft of the row was (each draft is drawn in
	// order; the first rejection rejects the rest). 0 rejects every draft,
	// 1 accepts all. Used only with NumSpeculativeTokens > 0.
	AcceptanceRate float64 `json:"acceptance_rate"`
	// Lookahead allocates k extra slots per running request, as vLLM does
	// for EAGLE and draft-model proposers (num_lookahead_tokens); off for
	// n-gram drafting.
	Lookahead bool `json:"lookahead"`
	// MaxModelLen caps positions as vLLM's max_model_len does (scheduled
	// tokens stop at max_model_len-1, a request stops when it reaches
	// max_model_len tokens); 0 = no cap.
	MaxModelLen int `json:"max_model_len"`
	// FreeToFront puts freed blocks at the free queue's front (reused
	// first) instead of its tail, as vLLM block_pool.py did for hash-less
	// blocks at commit c59cb794 (see doc.go); off: the tail, as in the
	// releases and the current free_blocks with prefix caching off.
	FreeToFront bool `json:"free_to_front"`
}

// vLLM's defaults for `vllm serve` on a GPU with at least 70 GiB (H100,
// H200), EngineArgs.get_batch_defaults; see doc.go.
const (
	DefaultMaxNumBatchedTokens = 8192
	DefaultMaxNumSeqs          = 1024
	DefaultBlockSize           = 16
)

// Request is one request of the workload.
type Request struct {
	ID           string `json:"id"`
	PromptTokens int    `json:"prompt_tokens"`
	OutputTokens int    `json:"output_tokens"`
	// ArrivalStep is the first step at which the request is in the
	// waiting queue (0: from the start).
	ArrivalStep int `json:"arrival_step"`
}

// Row is one request's share of a step: the new tokens it computes.
type Row struct {
	Request int `json:"request"` // index into the request slice
	QLen    int `json:"q_len"`   // tokens computed this step
	Context int `json:"context"` // tokens already in the KV cache before this step
	// Blocks is the request's block table after this step's allocation
	// (covers Context+QLen). Read-only: later rows of the same request
	// share its backing array.
	Blocks []int32 `json:"blocks"`
	// Kind is "prefill" (the whole prompt, or a resumed request's whole
	// recompute, in one row), "chunk" (part of it), "decode" (one token)
	// or "verify" (the last sampled token plus draft tokens).
	Kind string `json:"kind"`
}

// Row kinds.
const (
	KindPrefill = "prefill"
	KindChunk   = "chunk"
	KindDecode  = "decode"
	KindVerify  = "verify"
)

// Slot is the KV cache slot of the row's new token j (0 <= j < QLen),
// vLLM's slot_mapping: block_id*block_size + offset.
func (r Row) Slot(j, blockSize int) int64 {
	p := r.Context + j
	return int64(r.Blocks[p/blockSize])*int64(blockSize) + int64(p%blockSize)
}

// Step is one scheduler step (one forward pass).
type Step struct {
	Index  int   `json:"step"`
	Rows   []Row `json:"rows"`
	Tokens int   `json:"tokens"` // sum of the rows' QLen
	// Preempted are the requests preempted (blocks freed, back to the
	// waiting queue for recompute) while scheduling this step.
	Preempted []int `json:"preempted,omitempty"`
	// Finished are the requests that reached their output length (or
	// MaxModelLen) with this step; their blocks are freed after it.
	Finished []int `json:"finished,omitempty"`
	// FreeBlocks is the free block count after this step's allocation,
	// before the finished requests free theirs.
	FreeBlocks int `json:"free_blocks"`
}

// Mixed says whether the step has both prefill rows (prefill or chunk) and
// decode rows (decode or verify).
func (s *Step) Mixed() bool {
	var p, d bool
	for _, r := range s.Rows {
		switch r.Kind {
		case KindPrefill, KindChunk:
			p = true
		default:
			d = true
		}
	}
	return p && d
}

// Bin is one histogram bin: Count values in [Lo, Hi].
type Bin struct {
	Lo    int `json:"lo"`
	Hi    int `json:"hi"`
	Count int `json:"count"`
}

// Summary describes a whole simulation.
type Summary struct {
	Config   Config `json:"config"`
	Requests int    `json:"requests"`
	Finished int    `json:"finished"`
	Steps    int    `json:"steps"`     // steps visited (idle gaps before arrivals are skipped)
	LastStep int    `json:"last_step"` // Index of the last step
	Rows     int    `json:"rows"`
	Tokens   int64  `json:"tokens"`
	// Rows per step.
	MaxRowsPerStep  int     `json:"max_rows_per_step"`
	MeanRowsPerStep float64 `json:"mean_rows_per_step"`
	// Rows by kind.
	PrefillRows int `json:"prefill_rows"`
	ChunkRows   int `json:"chunk_rows"`
	DecodeRows  int `json:"decode_rows"`
	VerifyRows  int `json:"verify_rows"`
	// MixedSteps counts steps with prefill (or chunk) and decode (or
	// verify) rows together; FirstMixedStep is the first one's Index, -1
	// when none.
	MixedSteps     int `json:"mixed_steps"`
	FirstMixedStep int `json:"first_mixed_step"`
	// FullSteps counts steps that used the whole token budget.
	FullSteps int `json:"full_steps"`
	// TokensHistogram bins the tokens per step by powers of two: [1,1],
	// [2,3], [4,7], ... (empty bins left out). RowsHistogram likewise for
	// rows per step.
	TokensHistogram []Bin `json:"tokens_histogram"`
	RowsHistogram   []Bin `json:"rows_histogram"`
	Preemptions     int   `json:"preemptions"`
	// PeakBlocks is the most blocks in use after any step's allocation;
	// UsableBlocks is NumBlocks-1 (the null block excluded).
	PeakBlocks   int `json:"peak_blocks"`
	UsableBlocks int `json:"usable_blocks"`
	// Speculative decoding: draft tokens scheduled in verify rows, and
	// how many were accepted.
	DraftTokens    int64 `json:"draft_tokens"`
	AcceptedTokens int64 `json:"accepted_tokens"`
	// Truncated: the visit function stopped the simulation (ErrStop).
	Truncated bool `json:"truncated"`
}

// request phases.
const (
	stWaiting = iota
	stRunning
	stFinished
)

type reqState struct {
	numTokens int // prompt + outputs so far (vLLM num_tokens)
	outputs   int
	computed  int // vLLM num_computed_tokens
	spec      int // pending draft tokens (len(spec_token_ids))
	decoding  bool
	status    int
	blocks    []int32
}

type sim struct {
	cfg              Config
	reqs             []Request
	st               []reqState
	pool             blockPool
	running          []int
	waiting          []int // FCFS; preempted requests go to the front
	rng              splitMix64
	sum              Summary
	tokHist, rowHist [64]int
}

// Simulate runs vLLM V1's scheduler (doc.go says which version and where it
// simplifies) over reqs and calls visit with every step in order; visit may
// return ErrStop to end early. The Step and its slices stay valid after
// visit returns (they are never modified), but Row.Blocks is shared.
func Simulate(cfg Config, reqs []Request, visit func(Step) error) (Summary, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return Summary{}, err
	}
	if err := checkRequests(cfg, reqs); err != nil {
		return Summary{}, err
	}
	s := &sim{cfg: cfg, reqs: reqs, st: make([]reqState, len(reqs)), rng: splitMix64{cfg.Seed}}
	for i, r := range reqs {
		s.st[i].numTokens = r.PromptTokens
	}
	s.pool.init(cfg.NumBlocks)
	s.sum = Summary{Config: cfg, Requests: len(reqs), FirstMixedStep: -1, UsableBlocks: cfg.NumBlocks - 1}
	err = s.run(visit)
	s.finishSummary()
	if errors.Is(err, ErrStop) {
		s.sum.Truncated = true
		err = nil
	}
	return s.sum, err
}

func (c Config) normalize() (Config, error) {
	if c.MaxNumBatchedTokens == 0 {
		c.MaxNumBatchedTokens = DefaultMaxNumBatchedTokens
	}
	if c.MaxNumSeqs == 0 {
		c.MaxNumSeqs = DefaultMaxNumSeqs
	}
	if c.BlockSize == 0 {
		c.BlockSize = DefaultBlockSize
	}
	const lim = 1 << 30
	for _, f := range []struct {
		name string
		v    int
		min  int
	}{
		{"max_num_batched_tokens", c.MaxNumBatchedTokens, 1},
		{"max_num_seqs", c.MaxNumSeqs, 1},
		{"block_size", c.BlockSize, 1},
		{"num_blocks", c.NumBlocks, 2},
		{"long_prefill_token_threshold", c.LongPrefillTokenThreshold, 0},
		{"num_speculative_tokens", c.NumSpeculativeTokens, 0},
		{"max_model_len", c.MaxModelLen, 0},
	} {
		if f.v < f.min || f.v > lim {
			return c, fmt.Errorf("%w: %s %d out of range [%d, %d]", ErrConfig, f.name, f.v, f.min, lim)
		}
	}
	if c.NumBlocks > 1<<31-1 {
		return c, fmt.Errorf("%w: num_blocks %d does not fit int32 block ids", ErrConfig, c.NumBlocks)
	}
	if !(c.AcceptanceRate >= 0 && c.AcceptanceRate <= 1) {
		return c, fmt.Errorf("%w: acceptance_rate %v not in [0, 1]", ErrConfig, c.AcceptanceRate)
	}
	if c.MaxModelLen > 0 && c.MaxModelLen < 2 {
		return c, fmt.Errorf("%w: max_model_len %d below 2", ErrConfig, c.MaxModelLen)
	}
	return c, nil
}

// lookahead is vLLM's num_lookahead_tokens.
func (c Config) lookahead() int {
	if c.Lookahead {
		return c.NumSpeculativeTokens
	}
	return 0
}

// maxSlots is the most KV slots request r can ever hold: every prompt and
// output token but the last output (sampled, never fed back), plus drafts
// and lookahead past it.
func (c Config) maxSlots(r Request) int {
	n := r.PromptTokens + r.OutputTokens - 1 + c.NumSpeculativeTokens + c.lookahead()
	if c.MaxModelLen > 0 {
		n = min(n, c.MaxModelLen)
	}
	return n
}

func checkRequests(cfg Config, reqs []Request) error {
	usable := int64(cfg.NumBlocks-1) * int64(cfg.BlockSize)
	for i, r := range reqs {
		if err := checkParsed(r); err != nil {
			return fmt.Errorf("%w: request %d (%q): %v", ErrRequest, i, r.ID, err)
		}
		if cfg.MaxModelLen > 0 && r.PromptTokens >= cfg.MaxModelLen {
			return fmt.Errorf("%w: request %d (%q): prompt_tokens %d leaves no room under max_model_len %d", ErrRequest, i, r.ID, r.PromptTokens, cfg.MaxModelLen)
		}
		if n := int64(cfg.maxSlots(r)); n > usable {
			return fmt.Errorf("%w: request %d (%q) needs up to %d KV slots (%d blocks of %d), more than the %d usable blocks hold",
				ErrRequest, i, r.ID, n, ceilDiv(n, int64(cfg.BlockSize)), cfg.BlockSize, cfg.NumBlocks-1)
		}
	}
	return nil
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

func (s *sim) run(visit func(Step) error) error {
	// Arrival order: by ArrivalStep, then slice order.
	order := make([]int, len(s.reqs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return s.reqs[a].ArrivalStep - s.reqs[b].ArrivalStep })
	next := 0 // next request in order to arrive
	step := 0
	for s.sum.Finished < len(s.reqs) {
		if len(s.running) == 0 && len(s.waiting) == 0 {
			step = max(step, s.reqs[order[next]].ArrivalStep)
		}
		for next < len(order) && s.reqs[order[next]].ArrivalStep <= step {
			s.waiting = append(s.waiting, order[next])
			next++
		}
		st := s.schedule(step)
		if len(st.Rows) == 0 {
			return fmt.Errorf("%w: step %d scheduled nothing with %d running and %d waiting requests", ErrStuck, step, len(s.running), len(s.waiting))
		}
		s.update(&st)
		s.record(&st)
		if err := visit(st); err != nil {
			return err
		}
		step++
	}
	return nil
}

// schedule is Scheduler.schedule(): running requests first, then waiting
// ones (FCFS), under the token budget.
func (s *sim) schedule(index int) Step {
	cfg := s.cfg
	st := Step{Index: index}
	budget := cfg.MaxNumBatchedTokens
	look := cfg.lookahead()
	for i := 0; i < len(s.running) && budget > 0; {
		r := s.running[i]
		q := &s.st[r]
		n := q.numTokens + q.spec - q.computed
		if t := cfg.LongPrefillTokenThreshold; t > 0 && n > t {
			n = t
		}
		n = min(n, budget)
		if cfg.MaxModelLen > 0 {
			n = min(n, cfg.MaxModelLen-1-q.computed)
		}
		if n <= 0 {
			i++
			continue
		}
		ok := false
		for {
			if ok = s.allocate(q, n, look); ok {
				break
			}
			// Preempt the lowest-priority request: FCFS, the last running.
			victim := s.running[len(s.running)-1]
			s.running = s.running[:len(s.running)-1]
			s.preempt(victim)
			st.Preempted = append(st.Preempted, victim)
			if victim == r {
				break
			}
		}
		if !ok {
			break
		}
		st.Rows = append(st.Rows, s.row(r, n))
		q.spec = 0 // consumed; new drafts come after the step
		budget -= n
		i++
	}
	if len(st.Preempted) == 0 {
		for len(s.waiting) > 0 && budget > 0 {
			if len(s.running) == cfg.MaxNumSeqs {
				break
			}
			r := s.waiting[0]
			q := &s.st[r]
			n := q.numTokens - q.computed
			if t := cfg.LongPrefillTokenThreshold; t > 0 && n > t {
				n = t
			}
			n = min(n, budget)
			// num_lookahead_tokens is 0 for a request with no computed tokens.
			if !s.allocate(q, n, 0) {
				break
			}
			s.waiting = s.waiting[1:]
			s.running = append(s.running, r)
			q.status = stRunning
			st.Rows = append(st.Rows, s.row(r, n))
			budget -= n
		}
	}
	st.Tokens = cfg.MaxNumBatchedTokens - budget
	st.FreeBlocks = s.pool.numFree()
	return st
}

// row describes request r computing n tokens now that its blocks are
// allocated.
func (s *sim) row(r, n int) Row {
	q := &s.st[r]
	kind := KindChunk
	switch {
	case q.decoding && n == 1:
		kind = KindDecode
	case q.decoding:
		kind = KindVerify
	case q.computed == 0 && n == q.numTokens:
		kind = KindPrefill
	}
	return Row{Request: r, QLen: n, Context: q.computed, Blocks: q.blocks[:len(q.blocks):len(q.blocks)], Kind: kind}
}

// allocate is KVCacheManager.allocate_slots without prefix caching: blocks
// for computed + n + lookahead tokens, all or nothing.
func (s *sim) allocate(q *reqState, n, look int) bool {
	need := q.computed + n + look
	if s.cfg.MaxModelLen > 0 {
		need = min(need, s.cfg.MaxModelLen)
	}
	nb := (need+s.cfg.BlockSize-1)/s.cfg.BlockSize - len(q.blocks)
	if nb <= 0 {
		return true
	}
	if nb > s.pool.numFree() {
		return false
	}
	q.blocks = s.pool.popFront(q.blocks, nb)
	return true
}

// preempt is Scheduler._preempt_request: free the blocks, forget the
// computed tokens and drafts, and put the request at the waiting queue's
// front.
func (s *sim) preempt(r int) {
	q := &s.st[r]
	s.pool.free(q.blocks, s.cfg.FreeToFront)
	q.blocks = nil
	q.computed, q.spec, q.decoding = 0, 0, false
	q.status = stWaiting
	s.waiting = slices.Insert(s.waiting, 0, r)
	s.sum.Preemptions++
}

// update is _update_after_schedule plus update_from_output: advance the
// computed tokens, sample one token per row that completed its prefill or
// decodes (plus the accepted drafts of a verify row), stop finished
// requests and free their blocks.
func (s *sim) update(st *Step) {
	k := s.cfg.NumSpeculativeTokens
	for _, row := range st.Rows {
		q := &s.st[row.Request]
		q.computed += row.QLen
		if q.computed < q.numTokens {
			continue // a prefill chunk: nothing sampled
		}
		drafts := row.Context + row.QLen - q.numTokens
		accepted := 0
		for accepted < drafts && s.rng.float64() < s.cfg.AcceptanceRate {
			accepted++
		}
		if drafts > 0 {
			s.sum.DraftTokens += int64(drafts)
			s.sum.AcceptedTokens += int64(accepted)
		}
		q.computed -= drafts - accepted
		req := s.reqs[row.Request]
		stopped := false
		for range 1 + accepted {
			q.numTokens++
			q.outputs++
			if q.outputs >= req.OutputTokens || (s.cfg.MaxModelLen > 0 && q.numTokens >= s.cfg.MaxModelLen) {
				stopped = true
				break
			}
		}
		if stopped {
			st.Finished = append(st.Finished, row.Request)
			continue
		}
		q.decoding = true
		q.spec = k
	}
	for _, r := range st.Finished {
		q := &s.st[r]
		s.pool.free(q.blocks, s.cfg.FreeToFront)
		q.blocks = nil
		q.status = stFinished
		s.running = slices.DeleteFunc(s.running, func(x int) bool { return x == r })
	}
}

func (s *sim) record(st *Step) {
	m := &s.sum
	m.Steps++
	m.LastStep = st.Index
	m.Rows += len(st.Rows)
	m.Tokens += int64(st.Tokens)
	m.MaxRowsPerStep = max(m.MaxRowsPerStep, len(st.Rows))
	m.Finished += len(st.Finished)
	if st.Tokens == s.cfg.MaxNumBatchedTokens {
		m.FullSteps++
	}
	for _, r := range st.Rows {
		switch r.Kind {
		case KindPrefill:
			m.PrefillRows++
		case KindChunk:
			m.ChunkRows++
		case KindDecode:
			m.DecodeRows++
		case KindVerify:
			m.VerifyRows++
		}
	}
	if st.Mixed() {
		m.MixedSteps++
		if m.FirstMixedStep < 0 {
			m.FirstMixedStep = st.Index
		}
	}
	m.PeakBlocks = max(m.PeakBlocks, m.UsableBlocks-st.FreeBlocks)
	s.tokHist[bits.Len(uint(st.Tokens))-1]++
	s.rowHist[bits.Len(uint(len(st.Rows)))-1]++
}

func (s *sim) finishSummary() {
	m := &s.sum
	if m.Steps > 0 {
		m.MeanRowsPerStep = float64(m.Rows) / float64(m.Steps)
	}
	m.TokensHistogram = pow2Bins(s.tokHist[:])
	m.RowsHistogram = pow2Bins(s.rowHist[:])
}

func pow2Bins(h []int) []Bin {
	var out []Bin
	for i, c := range h {
		if c > 0 {
			out = append(out, Bin{Lo: 1 << i, Hi: 1<<(i+1) - 1, Count: c})
		}
	}
	return out
}

// splitMix64 is SplitMix64 (Steele, Lea, Flood 2014): a fixed, tiny
// generator, so the acceptance draws never change with a library.
type splitMix64 struct{ state uint64 }

func (r *splitMix64) uint64() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// float64 is uniform in [0, 1) with 53 bits.
func (r *splitMix64) float64() float64 { return float64(r.uint64()>>11) * 0x1p-53 }
