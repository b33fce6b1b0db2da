package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/goldset/goldset/schedule"
	"github.com/goldset/goldset/serving"
)

type scheduleOptions struct {
	workload, out                string
	cfg                          schedule.Config
	model, kvBudget, gpuMemory   string
	weights, framework, kvDType  string
	utilization                  float64
	maxSteps                     int
	overwrite, json, quiet, full bool
}

func newLongbenchScheduleCmd(s *streams) *cobra.Command {
	var o scheduleOptions
	cmd := &cobra.Command{
		Use:   "schedule --workload DIR (--num-blocks N | --model M --kv-budget B) [--out steps.jsonl]",
		Short: "Simulate vLLM V1's scheduler over a workload: per-step rows, q_len, context, block tables",
		Long: `schedule runs the requests of a workload (a longbench build directory, its
manifest.json, or a JSONL file of {"id","prompt_tokens","output_tokens",
"arrival_step"}) through a simulation of vLLM V1's scheduler: a token budget
per step (--max-num-batched-tokens), running requests first then waiting ones
FCFS, chunked prefill (always on in V1), --long-prefill-token-threshold,
--max-num-seqs, a KV block pool (--num-blocks, or the budget of
` + "`serving size`" + ` from --model with --kv-budget or --gpu-memory) with vLLM's
free-block queue, recompute preemption when blocks run out, prefix caching
off, and speculative verify rows (--num-speculative-tokens, seeded
acceptance). Package schedule's doc.go names the vLLM source and commits it
follows and every simplification.

--out writes one JSON Step per line: {"step", "rows": [{"request" (index in
the workload), "q_len", "context", "blocks" (the block table after the
step's allocation), "kind": prefill|chunk|decode|verify}], "tokens",
"preempted", "finished", "free_blocks"}; the slot of row token j is
blocks[(context+j)/block_size]*block_size + (context+j)%block_size.

The summary gives steps, rows per step, the tokens-per-step and rows-per-step
histograms, how many steps mix prefill rows with decode rows, preemptions,
peak blocks and the first mixed step.`,
		Example: `  goldset longbench schedule --workload lb100 --model qwen3-8b --kv-budget 60GiB --out lb100/steps.jsonl
  goldset longbench schedule --workload lb100/manifest.json --num-blocks 4000 --max-num-batched-tokens 2048 \
      --num-speculative-tokens 3 --acceptance-rate 0.7 --seed 1 --json
  goldset longbench schedule --workload requests.jsonl --num-blocks 500 --max-steps 100 --out steps.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLongbenchSchedule(cmd.Context(), o, s.out, s.err)
		},
	}
	f := cmd.Flags()
	c := &o.cfg
	f.StringVar(&o.workload, "workload", "", "longbench build directory, manifest.json or requests JSONL (required)")
	posIntVarP(f, &c.MaxNumBatchedTokens, "max-num-batched-tokens", "", schedule.DefaultMaxNumBatchedTokens, "token budget per step (vLLM serve's default on H100/H200)")
	posIntVarP(f, &c.MaxNumSeqs, "max-num-seqs", "", schedule.DefaultMaxNumSeqs, "most running requests")
	posIntVarP(f, &c.BlockSize, "block-size", "", schedule.DefaultBlockSize, "KV cache block size in tokens")
	f.IntVar(&c.NumBlocks, "num-blocks", 0, "KV blocks (vLLM num_gpu_blocks, block 0 is the null block); or derive it with --model and --kv-budget/--gpu-memory")
	f.IntVar(&c.LongPrefillTokenThreshold, "long-prefill-token-threshold", 0, "most tokens one request computes per step (0: off)")
	f.IntVar(&c.NumSpeculativeTokens, "num-speculative-tokens", 0, "draft tokens per decode (0: off); decodes become verify rows of 1+k")
	f.Float64Var(&c.AcceptanceRate, "acceptance-rate", 0.7, "probability a draft is accepted given the earlier ones were")
	f.BoolVar(&c.Lookahead, "lookahead", false, "allocate k lookahead slots per running request (EAGLE, draft model)")
	f.IntVar(&c.MaxModelLen, "max-model-len", -1, "vLLM max_model_len (-1: the manifest's context_len, else none; 0: none)")
	f.BoolVar(&c.FreeToFront, "free-to-front", false, "freed blocks go to the free queue's front (vLLM commit c59cb794) instead of its tail")
	f.Uint64Var(&c.Seed, "seed", 0, "seed of the draft acceptance draws")
	f.StringVar(&o.model, "model", "", "with --kv-budget or --gpu-memory: derive --num-blocks as `serving size` does (qwen3-8b, qwen3-14b, qwen3-32b or a config JSON)")
	f.StringVar(&o.kvBudget, "kv-budget", "", "KV cache bytes, e.g. 60GiB (with --model)")
	f.StringVar(&o.gpuMemory, "gpu-memory", "", "GPU memory, e.g. 141GiB (with --model, --weights, --framework)")
	f.StringVar(&o.weights, "weights", "0", "model weights bytes (with --gpu-memory)")
	f.StringVar(&o.framework, "framework", "0", "activations, CUDA graphs and allocator bytes (with --gpu-memory)")
	f.Float64Var(&o.utilization, "gpu-memory-utilization", 0.9, "vLLM's --gpu-memory-utilization (with --gpu-memory)")
	f.StringVar(&o.kvDType, "kv-dtype", "", "KV cache dtype (with --model; default the model's)")
	f.IntVar(&o.maxSteps, "max-steps", 0, "stop after this many steps (0: run every request to its end)")
	f.StringVar(&o.out, "out", "", "write the steps as JSONL here")
	f.BoolVar(&o.overwrite, "overwrite", false, "replace an existing --out file (only a previous schedule output)")
	f.BoolVar(&o.full, "full-example", false, "print the example step's block tables in full")
	f.BoolVar(&o.json, "json", false, "print the summary as JSON")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress output")
	cmd.MarkFlagRequired("workload")
	markArgs(cmd, notPath, "")
	markPath(cmd, "workload", inputDir, "workload")
	markPath(cmd, "model", inputFile, "model")
	markPath(cmd, "out", output, "")
	for _, name := range []string{"kv-budget", "gpu-memory", "weights", "framework", "kv-dtype"} {
		markPath(cmd, name, notPath, "")
	}
	return cmd
}

type scheduleResult struct {
	OK             bool             `json:"ok"`
	Workload       string           `json:"workload"`
	WorkloadDigest string           `json:"workload_digest,omitempty"`
	BlocksFrom     string           `json:"num_blocks_from"`
	Out            string           `json:"out,omitempty"`
	Summary        schedule.Summary `json:"summary"`
	FirstMixed     *schedule.Step   `json:"first_mixed_step,omitempty"`
}

func runLongbenchSchedule(ctx context.Context, o scheduleOptions, w, errw io.Writer) error {
	if o.maxSteps < 0 {
		return usagef("--max-steps %d: want 0 (no limit) or more", o.maxSteps)
	}
	reqs, err := schedule.ReadWorkload(o.workload)
	if err != nil {
		return err
	}
	res := scheduleResult{Workload: o.workload}
	// A longbench manifest also gives the context length and the digest.
	var wl *serving.Workload
	if fi, err := os.Stat(o.workload); err == nil && (fi.IsDir() || strings.HasSuffix(o.workload, ".json")) {
		if wl, err = serving.ReadWorkload(o.workload); err == nil {
			res.WorkloadDigest = wl.Digest
		}
	}
	cfg := o.cfg
	if cfg.MaxModelLen < 0 {
		cfg.MaxModelLen = 0
		if wl != nil {
			cfg.MaxModelLen = wl.ContextLen
		}
	}
	if res.BlocksFrom, err = o.numBlocks(&cfg, wl); err != nil {
		return err
	}
	out, err := o.openOut()
	if err != nil {
		return err
	}
	prog := newStepProgress(errw, len(reqs), o.quiet)
	var first *schedule.Step
	finished, steps := 0, 0
	visit := func(s schedule.Step) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if first == nil && s.Mixed() {
			c := s
			first = &c
		}
		if out != nil {
			if err := out.write(s); err != nil {
				return err
			}
		}
		finished += len(s.Finished)
		steps++
		prog.update(s.Index, finished)
		if o.maxSteps > 0 && steps == o.maxSteps {
			return schedule.ErrStop
		}
		return nil
	}
	sum, err := schedule.Simulate(cfg, reqs, visit)
	prog.finish()
	if err == nil && out != nil {
		err = out.commit()
		res.Out = o.out
	}
	if err != nil {
		if out != nil {
			out.abort()
		}
		if errors.Is(err, schedule.ErrConfig) {
			return usageError{err}
		}
		return err
	}
	res.OK, res.Summary, res.FirstMixed = true, sum, first
	if o.json {
		return writeJSON(w, res)
	}
	printSchedule(w, res, reqs, o.full)
	return nil
}

// numBlocks fills cfg.NumBlocks from --model and a KV budget when
// --num-blocks is not given, and says where the number came from.
func (o scheduleOptions) numBlocks(cfg *schedule.Config, wl *serving.Workload) (string, error) {
	budget := o.kvBudget != "" || o.gpuMemory != ""
	switch {
	case cfg.NumBlocks > 0 && (budget || o.model != ""):
		return "", usagef("--num-blocks excludes --model, --kv-budget and --gpu-memory")
	case cfg.NumBlocks > 0:
		return "--num-blocks", nil
	case cfg.NumBlocks < 0:
		return "", usagef("--num-blocks %d: want a positive count", cfg.NumBlocks)
	case o.model == "" || !budget:
		return "", usagef("give --num-blocks, or --model with --kv-budget (or --gpu-memory, --weights, --framework)")
	}
	m, err := serving.LoadModel(o.model)
	if err != nil {
		return "", err // as in serving size: an unreadable model file is exit 1
	}
	so := serving.SizeOptions{BlockSize: cfg.BlockSize, Utilization: o.utilization, KVDType: o.kvDType, ContextLen: cfg.MaxModelLen}
	if err := parseMemoryFlags(&so, o.kvBudget, o.gpuMemory, o.weights, o.framework); err != nil {
		return "", err
	}
	sz, err := serving.Size(m, wl, so)
	if err != nil {
		return "", usageError{err}
	}
	if sz.Budget.Blocks > 1<<30 {
		return "", usagef("KV budget gives %d blocks, more than the simulator takes (2^30)", sz.Budget.Blocks)
	}
	cfg.NumBlocks = int(sz.Budget.Blocks)
	return fmt.Sprintf("serving size: %s, %s KV budget %s, %s per block", m.Name, sz.Model.DType, serving.FormatBytes(sz.Budget.KVBytes), serving.FormatBytes(sz.BytesPerBlock)), nil
}

// stepsOut writes the JSONL through a temporary file renamed into place
// on success, so a failed run leaves no partial file.
type stepsOut struct {
	path string
	f    *os.File
	bw   *bufio.Writer
	enc  *json.Encoder
}

func (o scheduleOptions) openOut() (*stepsOut, error) {
	if o.out == "" {
		return nil, nil
	}
	if fi, err := os.Lstat(o.out); err == nil {
		if !o.overwrite {
			return nil, fmt.Errorf("--out %s exists (--overwrite replaces a previous schedule output)", o.out)
		}
		if !fi.Mode().IsRegular() || !isStepsFile(o.out) {
			return nil, fmt.Errorf("--out %s is not a schedule output (its first line is not a step); not replacing it", o.out)
		}
	}
	f, err := os.CreateTemp(filepath.Dir(o.out), "."+filepath.Base(o.out)+".tmp-")
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(0o644); err != nil { // CreateTemp's 0600 is for the temporary name only
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	enc := json.NewEncoder(bw)
	return &stepsOut{path: o.out, f: f, bw: bw, enc: enc}, nil
}

// isStepsFile says whether path's first line is a step this command wrote
// (or the file is empty).
func isStepsFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(f, 1<<16).ReadSlice('\n')
	if len(line) == 0 && err == io.EOF {
		return true
	}
	var s struct {
		Step *int             `json:"step"`
		Rows *json.RawMessage `json:"rows"`
	}
	return json.Unmarshal(bytes.TrimSpace(line), &s) == nil && s.Step != nil && s.Rows != nil
}

func (s *stepsOut) write(st schedule.Step) error { return s.enc.Encode(st) }

func (s *stepsOut) commit() error {
	err := s.bw.Flush()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(s.f.Name(), s.path)
	}
	if err != nil {
		os.Remove(s.f.Name())
	}
	return err
}

func (s *stepsOut) abort() {
	s.f.Close()
	os.Remove(s.f.Name())
}

// stepProgress reports the step and finished requests on long runs.
type stepProgress struct {
	lineProgress
	total int
}

func newStepProgress(w io.Writer, total int, quiet bool) *stepProgress {
	return &stepProgress{lineProgress: newLineProgress(w, quiet), total: total}
}

func (p *stepProgress) update(step, finished int) {
	p.show(func() string {
		return fmt.Sprintf("schedule: step %d, %d of %d requests finished", step, finished, p.total)
	})
}

func printSchedule(w io.Writer, res scheduleResult, reqs []schedule.Request, full bool) {
	s := res.Summary
	c := s.Config
	fmt.Fprintf(w, "workload %s: %d requests", res.Workload, s.Requests)
	if res.WorkloadDigest != "" {
		fmt.Fprintf(w, " (workload_digest %s)", res.WorkloadDigest)
	}
	fmt.Fprintf(w, "\nKV blocks: %d of %d tokens (%d usable; %s)\n", c.NumBlocks, c.BlockSize, s.UsableBlocks, res.BlocksFrom)
	fmt.Fprintf(w, "config: max_num_batched_tokens %d, max_num_seqs %d, long_prefill_token_threshold %d, num_speculative_tokens %d",
		c.MaxNumBatchedTokens, c.MaxNumSeqs, c.LongPrefillTokenThreshold, c.NumSpeculativeTokens)
	if c.NumSpeculativeTokens > 0 {
		fmt.Fprintf(w, " (acceptance %g, seed %d, lookahead %v)", c.AcceptanceRate, c.Seed, c.Lookahead)
	}
	fmt.Fprintf(w, ", max_model_len %d, free to %s\n", c.MaxModelLen, map[bool]string{false: "tail", true: "front"}[c.FreeToFront])
	trunc := ""
	if s.Truncated {
		trunc = " (stopped at --max-steps)"
	}
	fmt.Fprintf(w, "steps %d (last index %d)%s, %d of %d requests finished, %d tokens\n", s.Steps, s.LastStep, trunc, s.Finished, s.Requests, s.Tokens)
	fmt.Fprintf(w, "rows %d: %.2f per step on average, at most %d; prefill %d, chunk %d, decode %d, verify %d\n",
		s.Rows, s.MeanRowsPerStep, s.MaxRowsPerStep, s.PrefillRows, s.ChunkRows, s.DecodeRows, s.VerifyRows)
	first := "none"
	if s.FirstMixedStep >= 0 {
		first = fmt.Sprintf("first at step %d", s.FirstMixedStep)
	}
	fmt.Fprintf(w, "mixed steps (prefill or chunk rows with decode or verify rows): %d, %s; full-budget steps %d\n", s.MixedSteps, first, s.FullSteps)
	fmt.Fprintf(w, "preemptions %d, peak blocks %d of %d usable", s.Preemptions, s.PeakBlocks, s.UsableBlocks)
	if s.DraftTokens > 0 {
		fmt.Fprintf(w, ", drafts %d, accepted %d", s.DraftTokens, s.AcceptedTokens)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "tokens per step:")
	printBins(w, s.TokensHistogram)
	fmt.Fprintln(w, "rows per step:")
	printBins(w, s.RowsHistogram)
	if st := res.FirstMixed; st != nil {
		fmt.Fprintf(w, "first mixed step %d: %d tokens, %d rows, %d free blocks after allocation\n", st.Index, st.Tokens, len(st.Rows), st.FreeBlocks)
		for _, r := range st.Rows {
			fmt.Fprintf(w, "  %-7s request %d (%s): q_len %d, context %d, blocks %d %s\n", r.Kind, r.Request, reqs[r.Request].ID,
				r.QLen, r.Context, len(r.Blocks), blockList(r.Blocks, full))
		}
	}
	if res.Out != "" {
		fmt.Fprintf(w, "steps -> %s\n", res.Out)
	}
}

func printBins(w io.Writer, bins []schedule.Bin) {
	top := 0
	for _, b := range bins {
		top = max(top, b.Count)
	}
	for _, b := range bins {
		bar := strings.Repeat("#", (b.Count*40+top-1)/top)
		fmt.Fprintf(w, "  %6d-%-6d %7d %s\n", b.Lo, b.Hi, b.Count, bar)
	}
}

// blockList shows a block table, its ends only unless full.
func blockList(b []int32, full bool) string {
	if full || len(b) <= 8 {
		return fmt.Sprint(b)
	}
	return fmt.Sprintf("[%d %d %d ... %d %d %d]", b[0], b[1], b[2], b[len(b)-3], b[len(b)-2], b[len(b)-1])
}
