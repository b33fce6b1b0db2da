package suite

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/goldset/goldset/gen"
	"github.com/goldset/goldset/golden"
	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/schedule"
)

// ---- pipeline cases (docs/spec.md §14) ----
//
// A recipe case of op "pipeline" is a chain: consecutive steps of a
// scheduler simulation (package schedule, run at plan time over the
// case's request lengths), each step run through the chain's stages. Every
// stage of every step becomes a manifest case of the stage's op, judged as
// any case of that op is, whose Case.Chain places it (manifests.Chain). A
// stage's input that is an earlier stage's golden is that golden's file,
// listed again: reshape_and_cache's key_cache_out is the attention stage's
// key_cache, and step s's is step s+1's key_cache.
//
// Token values: the key and value rows of request r's position p written
// at step s come from the streams "key/s<s>/r<r>" and "value/s<s>/r<r>" at
// element p*Hkv*D (a rewritten position, after a rejected draft or a
// preemption, gets new values), graph padding tokens from "key/s<s>/pad".
// The cache before the first sampled step holds, for every request alive
// then, its written positions at their slots, and stale values from the
// streams "key_cache" and "value_cache" everywhere else.

// PipelineOp is the recipe op of a pipeline case.
const PipelineOp = "pipeline"

// ErrChain is wrapped by the errors of a pipeline case's plan.
var ErrChain = errors.New("invalid pipeline case")

// chainKind is one stage sequence.
type chainKind struct {
	stages []string
	// attend writes the stages after reshape_and_cache for one step,
	// over the updated caches.
	attend func(c *caseCtx, pl *pipelinePlan, k int, kc, vc []uint16, keyCache, valueCache manifests.Tensor) error
	// build, when set, builds the whole chain instead (the DSA chain's
	// caches are not reshape_and_cache's).
	build func(c *caseCtx, pl *pipelinePlan) error
}

var chainKinds = map[string]*chainKind{
	"paged": {stages: []string{"reshape_and_cache", "unified_attention"}, attend: attendUnified},
	"quest": {stages: []string{"reshape_and_cache", "quest"}, attend: attendQuest},
	"dsa":   {stages: []string{"dsa_index_cache", "dsa_indexer", "dsa_sparse_attention"}, build: buildDSAChain},
}

// pipelineParams are a pipeline case's params.
type pipelineParams struct {
	// Chain names the stage sequence: "paged" (reshape_and_cache ->
	// unified_attention) or "quest" (reshape_and_cache -> quest over the
	// step's decode rows).
	Chain string `json:"chain"`
	// Model names where the shapes come from (recorded, not used).
	Model string  `json:"model,omitempty"`
	Hq    int     `json:"hq"`
	Hkv   int     `json:"hkv"`
	D     int     `json:"d"`
	DType string  `json:"dtype"`
	Scale float64 `json:"scale"` // default 1/sqrt(D)
	// Schedule is the scheduler configuration; its block_size and
	// num_blocks are the caches' BS and NB.
	Schedule schedule.Config `json:"schedule"`
	Requests requestSpec     `json:"requests"`
	// Start picks the first sampled step: "mixed" (the first step mixing
	// prefill and decode rows), "index" (StartStep), "seq_len" (the first
	// step with a row whose sequence reaches StartSeqLen tokens).
	Start       string `json:"start"`
	StartStep   int    `json:"start_step,omitempty"`
	StartSeqLen int    `json:"start_seq_len,omitempty"`
	// Steps consecutive steps are sampled (default 2).
	Steps int `json:"steps"`
	// GraphMode pads each step's tokens to the next capture size (1, 2, 4,
	// ..., 512; larger steps run eager) with slot -1 and, for the
	// attention stage, a zero-length padded request.
	GraphMode bool `json:"graph_mode,omitempty"`
	// K blocks are selected per row (quest; default 8); tokens (dsa;
	// default 2048).
	K int `json:"k,omitempty"`
	// The DSA chain's shapes (docs/spec.md §8, §14): MLA query heads H,
	// latent DC and rope DR dims, index heads HI of DI dims, next_n rows
	// per decode row (2: one draft token), the index cache's scale_fmt
	// (ue8m0). Scale is its sm_scale (default 1/sqrt(192)).
	H        int    `json:"h,omitempty"`
	DC       int    `json:"dc,omitempty"`
	DR       int    `json:"dr,omitempty"`
	HI       int    `json:"hi,omitempty"`
	DI       int    `json:"di,omitempty"`
	NextN    int    `json:"next_n,omitempty"`
	ScaleFmt string `json:"scale_fmt,omitempty"`
}

// requestSpec gives the requests' lengths: listed, or drawn (the
// LongBench-like lognormal of gen.DrawLens) from the stream "prompt" /
// "output" of seed Seed (not the suite's: the schedule, and so the
// manifest's steps, are fixed at plan time).
type requestSpec struct {
	Prompts []int `json:"prompts,omitempty"`
	Outputs []int `json:"outputs,omitempty"`
	// Drawn lengths: N requests, prompts lognormal (PromptMean,
	// PromptSigma, clipped to [1, PromptMax]), outputs likewise.
	N            int     `json:"n,omitempty"`
	PromptMean   float64 `json:"prompt_mean,omitempty"`
	PromptSigma  float64 `json:"prompt_sigma,omitempty"`
	PromptMax    int     `json:"prompt_max,omitempty"`
	OutputMean   float64 `json:"output_mean,omitempty"`
	OutputSigma  float64 `json:"output_sigma,omitempty"`
	OutputMax    int     `json:"output_max,omitempty"`
	Seed         uint64  `json:"seed,omitempty"`
	ArrivalEvery int     `json:"arrival_every,omitempty"` // request i arrives at step i*ArrivalEvery
}

// stepPadding returns a step's padded token count and padded requests:
// unified_attention's graph padding (captureSizes) when graph is set.
func stepPadding(st *schedule.Step, graph bool) (tokens, seqs int) {
	up := unifiedParams{GraphPad: graph}
	for _, r := range st.Rows {
		up.Rows = append(up.Rows, unifiedRowParam{QLen: r.QLen, Context: r.Context + r.QLen})
	}
	if err := up.fillPadding(up.Rows); err != nil {
		panic("suite: step padding: " + err.Error()) // rows are valid by construction
	}
	return up.PadTokens, up.PadSeqs
}

// reqCache is what a request has in the cache: its block table and, per
// position, the step that wrote it.
type reqCache struct {
	req    int
	blocks []int32
	wrote  []int32
}

// pipelinePlan is a planned pipeline case.
type pipelinePlan struct {
	p     *pipelineParams
	kind  *chainKind
	bs    int
	nb    int
	reqs  []schedule.Request
	steps []schedule.Step // the sampled steps (Blocks copied)
	init  []reqCache      // the requests in the cache before steps[0], by request
}

func errChain(format string, a ...any) error {
	return fmt.Errorf("%w: %w: %s", ErrParams, ErrChain, fmt.Sprintf(format, a...))
}

// Limits of a pipeline case: the scheduler's work and the two caches the
// build holds in memory.
const (
	maxPipelineTokens = 1 << 22 // prompt plus output tokens of all requests
	maxPipelineCache  = 1 << 28 // elements of one cache (512 MiB of bf16)
	maxPipelineStep   = 1 << 16 // max_num_batched_tokens
	maxPipelineReqs   = 1 << 12 // requests
	maxSimSteps       = 1 << 16 // scheduler steps simulated
	maxSimRows        = 1 << 22 // rows of all simulated steps
)

// requests returns the case's requests.
func (r *requestSpec) requests() ([]schedule.Request, error) {
	prompts, outputs := r.Prompts, r.Outputs
	if len(prompts) == 0 {
		if err := checkRange("requests.n", r.N, 1, maxPipelineReqs); err != nil {
			return nil, err
		}
		for _, d := range []struct {
			name string
			dst  *[]int
			ld   gen.LenDraw
		}{{"prompt", &prompts, gen.LenDraw{Mean: r.PromptMean, Sigma: r.PromptSigma, Max: r.PromptMax}},
			{"output", &outputs, gen.LenDraw{Mean: r.OutputMean, Sigma: r.OutputSigma, Max: r.OutputMax}}} {
			l, _, err := gen.DrawLens(gen.NewStream(r.Seed, "requests", d.name), r.N, d.ld)
			if err != nil {
				return nil, errParams("requests: %v", err)
			}
			for _, v := range l {
				*d.dst = append(*d.dst, int(v))
			}
		}
	} else if r.N != 0 || len(outputs) != len(prompts) {
		return nil, errParams("requests: %d prompts and %d outputs listed (and n %d): list both, equally long, or draw n", len(prompts), len(outputs), r.N)
	}
	if err := checkRange("requests", len(prompts), 1, maxPipelineReqs); err != nil {
		return nil, err
	}
	reqs := make([]schedule.Request, len(prompts))
	total := 0
	for i := range prompts {
		if err := checkRange("prompt length", prompts[i], 1, 1<<20); err != nil {
			return nil, err
		}
		if err := checkRange("output length", outputs[i], 1, 1<<20); err != nil {
			return nil, err
		}
		if total += prompts[i] + outputs[i]; total > maxPipelineTokens {
			return nil, errParams("requests: more than %d prompt and output tokens in all", maxPipelineTokens)
		}
		reqs[i] = schedule.Request{ID: fmt.Sprintf("r%d", i), PromptTokens: prompts[i], OutputTokens: outputs[i], ArrivalStep: i * r.ArrivalEvery}
	}
	return reqs, nil
}

// startsAt says whether st is the first sampled step.
func (p *pipelineParams) startsAt(st *schedule.Step) bool {
	switch p.Start {
	case "index":
		return st.Index >= p.StartStep
	case "seq_len":
		for _, r := range st.Rows {
			if r.Context+r.QLen >= p.StartSeqLen {
				return true
			}
		}
		return false
	default:
		return st.Mixed()
	}
}

func planPipeline(raw json.RawMessage) (*casePlan, error) {
	var p pipelineParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	kind := chainKinds[p.Chain]
	if kind == nil {
		return nil, errParams("chain %q: want paged, quest or dsa", p.Chain)
	}
	if p.Start == "" {
		p.Start = "mixed"
	}
	if p.Steps == 0 {
		p.Steps = 2
	}
	if p.Scale == 0 && p.D > 0 {
		p.Scale = 1 / math.Sqrt(float64(p.D))
	}
	if p.Chain == "quest" && p.K == 0 {
		p.K = 8
	}
	if p.Chain == "quest" && p.GraphMode {
		return nil, errParams("graph_mode: the quest chain has no graph padding")
	}
	if p.Schedule.BlockSize == 0 {
		p.Schedule.BlockSize = schedule.DefaultBlockSize
	}
	if p.Chain == "dsa" {
		if err := p.dsaDefaults(); err != nil {
			return nil, err
		}
	}
	for _, e := range []error{checkRange("steps", p.Steps, 1, 64), checkRange("schedule.block_size", p.Schedule.BlockSize, 1, maxBlockSize),
		checkRange("schedule.num_blocks", p.Schedule.NumBlocks, 2, 1<<24), checkRange("k", p.K, 0, 1<<16), finitePositive("scale", p.Scale),
		checkRange("schedule.max_num_batched_tokens", p.Schedule.MaxNumBatchedTokens, 0, maxPipelineStep)} {
		if e != nil {
			return nil, e
		}
	}
	switch p.Start {
	case "mixed", "index", "seq_len":
	default:
		return nil, errParams("start %q: want mixed, index or seq_len", p.Start)
	}
	if p.Chain == "dsa" {
		return planDSAChain(&p, kind)
	}
	if p.H != 0 || p.DC != 0 || p.DR != 0 || p.HI != 0 || p.DI != 0 || p.NextN != 0 || p.ScaleFmt != "" {
		return nil, errParams("h, dc, dr, hi, di, next_n, scale_fmt are the dsa chain's params")
	}
	for _, e := range []error{checkRange("hq", p.Hq, 1, 1024), checkRange("hkv", p.Hkv, 1, p.Hq), checkRange("d", p.D, 1, maxHeadDim)} {
		if e != nil {
			return nil, e
		}
	}
	if p.Hq%p.Hkv != 0 {
		return nil, errParams("hq %d is not a multiple of hkv %d", p.Hq, p.Hkv)
	}
	if err := checkFloatDType("dtype", p.DType); err != nil {
		return nil, err
	}
	if dtypeSize(p.DType) != 2 {
		return nil, errParams("dtype %q: a pipeline's caches are float16 or bfloat16", p.DType)
	}
	cacheElems, err := checkElems("cache", p.Schedule.NumBlocks, p.Schedule.BlockSize, p.Hkv, p.D)
	if err != nil {
		return nil, err
	}
	if cacheElems > maxPipelineCache {
		return nil, errParams("a cache of %d elements (num_blocks*block_size*hkv*d): a pipeline holds two, at most %d each", cacheElems, maxPipelineCache)
	}
	step := max(p.Schedule.MaxNumBatchedTokens, schedule.DefaultMaxNumBatchedTokens, 512)
	if err := checkHeld("query", step, p.Hq, p.D); err != nil {
		return nil, err
	}
	pl, err := newPipelinePlan(&p, kind)
	if err != nil {
		return nil, err
	}
	var bytes int64
	for _, st := range pl.steps {
		tt, _ := stepPadding(&st, p.GraphMode)
		t := int64(tt)
		bytes += 2*cacheElems*2 + t*int64(p.Hkv*p.D)*4 + t*int64(p.Hq*p.D)*(2+2+4+4)
	}
	bytes += 2 * cacheElems * 2
	return pl.casePlan(p.DType, bytes), nil
}

// newPipelinePlan draws the requests and runs the scheduler.
func newPipelinePlan(p *pipelineParams, kind *chainKind) (*pipelinePlan, error) {
	reqs, err := p.Requests.requests()
	if err != nil {
		return nil, err
	}
	pl := &pipelinePlan{p: p, kind: kind, bs: p.Schedule.BlockSize, nb: p.Schedule.NumBlocks, reqs: reqs}
	if err := pl.simulate(); err != nil {
		return nil, err
	}
	return pl, nil
}

// casePlan returns the plan of the whole chain.
func (pl *pipelinePlan) casePlan(dtype string, bytes int64) *casePlan {
	steps := make([]int, len(pl.steps))
	for k, st := range pl.steps {
		steps[k] = st.Index
	}
	params := canonical(*pl.p)
	ch := &manifests.Chain{Kind: pl.p.Chain, Stages: slices.Clone(pl.kind.stages), Steps: steps, Params: params}
	build := func(c *caseCtx) error { return buildPipeline(c, pl) }
	if pl.kind.build != nil {
		build = func(c *caseCtx) error { return pl.kind.build(c, pl) }
	}
	return &casePlan{params: params, dtype: dtype, bytes: bytes, chain: ch, build: build}
}

// simulate runs the scheduler, keeps the sampled steps and the cache's
// contents before the first.
func (pl *pipelinePlan) simulate() error {
	p := pl.p
	alive := map[int]*reqCache{}
	nsteps, nrows := 0, 0
	visit := func(st schedule.Step) error {
		// Preemption can make a schedule long: the plan stays bounded.
		if nsteps, nrows = nsteps+1, nrows+len(st.Rows); nsteps > maxSimSteps || nrows > maxSimRows {
			return errChain("the schedule runs past %d steps or %d rows before the sampled steps end", maxSimSteps, maxSimRows)
		}
		if len(pl.steps) == 0 && p.startsAt(&st) {
			for _, r := range st.Preempted {
				delete(alive, r)
			}
			for _, rc := range alive {
				pl.init = append(pl.init, reqCache{req: rc.req, blocks: slices.Clone(rc.blocks), wrote: slices.Clone(rc.wrote)})
			}
			slices.SortFunc(pl.init, func(a, b reqCache) int { return a.req - b.req })
		}
		if len(pl.steps) > 0 || p.startsAt(&st) {
			cp := st
			cp.Rows = slices.Clone(st.Rows)
			for i := range cp.Rows {
				cp.Rows[i].Blocks = slices.Clone(cp.Rows[i].Blocks)
			}
			if p.Chain == "quest" && !slices.ContainsFunc(cp.Rows, func(r schedule.Row) bool { return r.QLen == 1 }) {
				return errChain("step %d has no decode row for the quest stage", st.Index)
			}
			if p.Chain == "dsa" && !slices.ContainsFunc(cp.Rows, p.dsaRow) {
				return errChain("step %d has no decode row of next_n = %d tokens for the dsa stages", st.Index, p.NextN)
			}
			pl.steps = append(pl.steps, cp)
			if len(pl.steps) == p.Steps {
				return schedule.ErrStop
			}
		}
		for _, r := range st.Preempted {
			delete(alive, r)
		}
		for _, row := range st.Rows {
			rc := alive[row.Request]
			if rc == nil {
				rc = &reqCache{req: row.Request}
				alive[row.Request] = rc
			}
			rc.blocks = row.Blocks
			end := row.Context + row.QLen
			rc.wrote = rc.wrote[:min(len(rc.wrote), row.Context)]
			for len(rc.wrote) < end {
				rc.wrote = append(rc.wrote, int32(st.Index))
			}
		}
		for _, r := range st.Finished {
			delete(alive, r)
		}
		return nil
	}
	if _, err := schedule.Simulate(p.Schedule, pl.reqs, visit); errors.Is(err, ErrChain) {
		return err
	} else if err != nil {
		return errParams("schedule: %v", err)
	}
	if len(pl.steps) < p.Steps {
		return errChain("the schedule has %d step(s) from the start (%s), %d asked for", len(pl.steps), p.Start, p.Steps)
	}
	return nil
}

// tokenRows draws the key (or value) rows of positions [p0, p1) of
// request r written at step s into dst (bits, (p1-p0)*row long).
func tokenRows(c *caseCtx, what string, s, r int, p0 int, dst []uint16, row int, dt string) {
	gen.Normal(c.stream(fmt.Sprintf("%s/s%d/r%d", what, s, r)), dst, int64(p0)*int64(row), genDType(dt), 1)
}

// beginStage starts the next stage case of a pipeline: the tensors
// written from now on are its. The previous stage's tensors must be
// closed.
func (c *caseCtx) beginStage(id, op string, params json.RawMessage, ref manifests.ChainRef, dtype string) error {
	if err := c.endStage(); err != nil {
		return err
	}
	o, ok := opTable[op]
	if !ok {
		return fmt.Errorf("pipeline stage %s: %w %q", id, ErrUnknownOp, op)
	}
	tols, err := o.tolerances(dtype)
	if err != nil {
		return fmt.Errorf("pipeline stage %s: %w", id, err)
	}
	c.dir, c.tols = id, tols
	c.stage = &manifests.Case{ID: id, Op: op, Params: params, Chain: &ref}
	return nil
}

// endStage files the current stage case with its work, computed by its
// op's formula from the facts recorded since beginStage (docs/spec.md
// §13: an input that is an earlier golden's file is still read by the
// stage's kernel, so it counts).
func (c *caseCtx) endStage() error {
	if c.stage == nil {
		return nil
	}
	c.stage.Tensors, c.stage.Info = c.tensors, c.infoJSON()
	w, err := caseWork(c.stage.Op, c.stage.Params, c.tensors, c.facts)
	if err != nil {
		return fmt.Errorf("pipeline stage %s: %w", c.stage.ID, err)
	}
	c.stage.Work = w
	c.stages = append(c.stages, *c.stage)
	c.stage, c.tensors, c.info, c.facts = nil, nil, nil, nil
	return nil
}

// seqFacts records the paged-attention facts of sequences of lens tokens
// in distinct blocks of bs (layoutInfo's, without shared blocks): valid
// tokens, distinct ones and the referenced pages.
func seqFacts(c *caseCtx, lens []int32, bs int) {
	for _, l := range lens {
		c.addFact("tokens", int64(l))
		c.addFact("kv_tokens", int64(l))
		c.addFact("pages", int64((int(l)+bs-1)/bs))
	}
}

// ref lists an earlier stage's tensor t again as the input name of the
// current stage: the same file.
func (c *caseCtx) ref(name string, t manifests.Tensor) {
	t.Name, t.Role, t.Tolerance = name, roleInput, nil
	c.tensors = append(c.tensors, t)
}

// last returns the manifest entry of the tensor written last.
func (c *caseCtx) last() manifests.Tensor { return c.tensors[len(c.tensors)-1] }

// stageStream names the stream of a step's tensor.
func stageStream(name string, step int) string { return fmt.Sprintf("%s/s%d", name, step) }

// stageID names a stage case.
func stageID(chain string, step int, op string) string {
	return fmt.Sprintf("%s.s%d.%s", chain, step, op)
}

func buildPipeline(c *caseCtx, pl *pipelinePlan) error {
	p := pl.p
	row := p.Hkv * p.D
	n := pl.nb * pl.bs * row
	kc := normalValues(c.stream("key_cache"), p.DType, n, 0, 1, false).bits
	vc := normalValues(c.stream("value_cache"), p.DType, n, 0, 1, false).bits
	// The cache before the first step: every alive request's positions.
	for _, rc := range pl.init {
		for p0 := 0; p0 < len(rc.wrote); {
			p1 := p0 + 1
			for p1 < len(rc.wrote) && rc.wrote[p1] == rc.wrote[p0] {
				p1++
			}
			buf := make([]uint16, (p1-p0)*row)
			for k, what := range []string{"key", "value"} {
				tokenRows(c, what, int(rc.wrote[p0]), rc.req, p0, buf, row, p.DType)
				dst := [2][]uint16{kc, vc}[k]
				for pos := p0; pos < p1; pos++ {
					slot := int(rc.blocks[pos/pl.bs])*pl.bs + pos%pl.bs
					copy(dst[slot*row:(slot+1)*row], buf[(pos-p0)*row:(pos-p0+1)*row])
				}
			}
			p0 = p1
		}
	}
	cshape := []int64{int64(pl.nb), int64(pl.bs), int64(p.Hkv), int64(p.D)}
	var prevK, prevV *manifests.Tensor
	for k, st := range pl.steps {
		if err := c.ctx.Err(); err != nil {
			return err
		}
		T, _ := stepPadding(&st, p.GraphMode)
		key := make([]uint16, T*row)
		value := make([]uint16, T*row)
		slots := make([]int32, T)
		t := 0
		for _, r := range st.Rows {
			tokenRows(c, "key", st.Index, r.Request, r.Context, key[t*row:(t+r.QLen)*row], row, p.DType)
			tokenRows(c, "value", st.Index, r.Request, r.Context, value[t*row:(t+r.QLen)*row], row, p.DType)
			for j := 0; j < r.QLen; j++ {
				slots[t+j] = int32(r.Slot(j, pl.bs))
			}
			t += r.QLen
		}
		if T > t {
			// Graph padding: tokens that belong to no request, slot -1.
			gen.Normal(c.stream(fmt.Sprintf("key/s%d/pad", st.Index)), key[t*row:], 0, genDType(p.DType), 1)
			gen.Normal(c.stream(fmt.Sprintf("value/s%d/pad", st.Index)), value[t*row:], 0, genDType(p.DType), 1)
			for j := t; j < T; j++ {
				slots[j] = -1
			}
		}
		cp := cacheParams{T: T, TS: T, Hkv: p.Hkv, D: p.D, BS: pl.bs, NB: pl.nb, DType: p.DType, SkipFrac: float64(T-t) / float64(T)}
		ref := manifests.ChainRef{ID: c.id, Step: st.Index, Stage: 0}
		if err := c.beginStage(stageID(c.id, st.Index, "reshape_and_cache"), "reshape_and_cache", canonical(cp), ref, p.DType); err != nil {
			return err
		}
		stepInfo(c, &st, T)
		c.addFact("slots_written", int64(t)) // the padded tokens' slots are -1
		kvShape := []int64{int64(T), int64(p.Hkv), int64(p.D)}
		for _, w := range []struct {
			name string
			bits []uint16
		}{{"key", key}, {"value", value}} {
			if err := c.write(tensorSpec{name: w.name, role: roleInput, dtype: p.DType, shape: kvShape}, func(o *tensorOut) error { return o.u16(w.bits) }); err != nil {
				return err
			}
		}
		if err := c.writeInts(tensorSpec{name: "slot_mapping", role: roleInput, dtype: "int32", shape: []int64{int64(T)}}, slots); err != nil {
			return err
		}
		for _, w := range []struct {
			name string
			bits []uint16
			prev *manifests.Tensor
		}{{"key_cache", kc, prevK}, {"value_cache", vc, prevV}} {
			if w.prev != nil {
				c.ref(w.name, *w.prev)
				continue
			}
			if err := c.write(tensorSpec{name: w.name, role: roleInput, dtype: p.DType, shape: cshape}, func(o *tensorOut) error { return o.u16(w.bits) }); err != nil {
				return err
			}
		}
		dims := golden.CacheDims{T: T, Hkv: p.Hkv, D: p.D, NB: pl.nb, BS: pl.bs}
		if err := golden.ReshapeAndCache(kc, vc, key, value, kc, vc, slots, dims); err != nil {
			return err
		}
		var outs [2]manifests.Tensor
		for i, w := range []struct {
			name string
			bits []uint16
		}{{"key_cache_out", kc}, {"value_cache_out", vc}} {
			if err := c.write(tensorSpec{name: w.name, role: roleGolden, dtype: p.DType, shape: cshape}, func(o *tensorOut) error { return o.u16(w.bits) }); err != nil {
				return err
			}
			outs[i] = c.last()
		}
		prevK, prevV = &outs[0], &outs[1]
		if err := pl.kind.attend(c, pl, k, kc, vc, outs[0], outs[1]); err != nil {
			return err
		}
		c.tick()
	}
	return nil
}

// stepInfo records a step's batch structure in the stage's info.
func stepInfo(c *caseCtx, st *schedule.Step, padded int) {
	kinds := map[string]int{}
	maxLen := 0
	for _, r := range st.Rows {
		kinds[r.Kind]++
		maxLen = max(maxLen, r.Context+r.QLen)
	}
	c.setInfo("step", st.Index)
	c.setInfo("rows", len(st.Rows))
	c.setInfo("row_kinds", kinds)
	c.setInfo("tokens", st.Tokens)
	c.setInfo("padded_tokens", padded)
	c.setInfo("mixed", st.Mixed())
	c.setInfo("max_seq_len", maxLen)
}

// stepTables returns a step's block table [S, maxb] (0-filled past a
// row's blocks, as vLLM's), seq_lens and query_start_loc over the rows
// keep says, after the cache write.
func stepTables(st *schedule.Step, bs int, keep func(schedule.Row) bool, pad int32) (bt, lens, qsl []int32, maxb int) {
	qsl = []int32{0}
	var rows []schedule.Row
	for _, r := range st.Rows {
		if keep(r) {
			rows = append(rows, r)
			maxb = max(maxb, (r.Context+r.QLen+bs-1)/bs)
		}
	}
	bt = make([]int32, len(rows)*maxb)
	for i, r := range rows {
		nb := (r.Context + r.QLen + bs - 1) / bs
		copy(bt[i*maxb:], r.Blocks[:nb])
		for j := nb; j < maxb; j++ {
			bt[i*maxb+j] = pad
		}
		lens = append(lens, int32(r.Context+r.QLen))
		qsl = append(qsl, qsl[len(qsl)-1]+int32(r.QLen))
	}
	return bt, lens, qsl, maxb
}

// widen returns the exact float32 values of half bits.
func widen(bits []uint16, dt string) []float32 {
	v := make([]float32, len(bits))
	halfToF32(v, bits, dt)
	return v
}
