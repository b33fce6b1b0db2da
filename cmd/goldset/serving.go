package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/goldset/goldset/serving"
)

func newServingCmd(s *streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "serving",
		Short: "Check that a vLLM/SGLang benchmark result ran a workload, report it, size its KV cache, score its texts",
		Long: `serving reads the result files of vLLM's and SGLang's benchmark clients and
proves them against a workload built by "goldset longbench build": check says
whether a run sent exactly the workload's requests with its lengths, report
prints throughput and latency percentiles (side by side only for runs that
pass check against the same workload), and size gives the KV cache a workload
needs for a model config; score grades what a run generated with LongBench's
metrics (and against a baseline run: deltas with a bootstrap CI, greedy
agreement).`,
	}
	root.AddCommand(newServingCheckCmd(s), newServingReportCmd(s), newServingSizeCmd(s), newServingScoreCmd(s))
	return root
}

type servingCheckOptions struct {
	result, workload     string
	run                  int
	shuffled, eosAllowed bool
	json                 bool
}

func newServingCheckCmd(s *streams) *cobra.Command {
	var o servingCheckOptions
	cmd := &cobra.Command{
		Use:   "check RESULT --workload DIR",
		Short: "Prove a benchmark result ran the workload (exit 3 when it did not)",
		Long: `check reads RESULT, one of
  vllm bench serve --save-result [--save-detailed]     (JSON; --append-result: one per line)
  vllm bench throughput --output-json                  (JSON)
  python -m sglang.bench_serving --output-file [--output-details]        (JSONL)
  python -m sglang.bench_offline_throughput --result-filename            (JSONL)
and checks it against DIR/manifest.json: completed + failed = the workload's
prompts and failed = 0; per request (with --save-detailed / --output-details)
input_lens[i] = prompt_tokens[i] in order (as a multiset when the workload's
command does not pass --disable-shuffle, or with --shuffled, and then it says
so) and output_lens[i] = max_new_tokens[i] (EOS ignored; <= with
--eos-allowed); without per-request data, the totals; and the settings the
file records (vLLM: num_prompts and any --metadata KEY=VALUE such as
workload_digest, temperature, disable_shuffle). Each failure names the field,
the request index and both values, with the likely cause.

Exit status: 0 the result ran the workload, 3 it did not, 1 unreadable.`,
		Example: `  goldset serving check vllm-dense.json --workload lb100
  goldset serving check sglang.jsonl --workload lb100 --run -1 --shuffled
  goldset serving check throughput.json --workload lb100 --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.result = args[0]
			return runServingCheck(cmd.Context(), o, s.out)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.workload, "workload", "", "workload directory (or its manifest.json) from goldset longbench build (required)")
	f.IntVar(&o.run, "run", -1, "which run of an appended file (0 first, -1 last)")
	f.BoolVar(&o.shuffled, "shuffled", false, "compare per-request lengths as a multiset (the client reordered the requests)")
	f.BoolVar(&o.eosAllowed, "eos-allowed", false, "accept outputs shorter than max_new_tokens (run without --ignore-eos)")
	f.BoolVar(&o.json, "json", false, "print the verdict as JSON")
	cmd.MarkFlagRequired("workload")
	markArgs(cmd, inputFile, "result")
	markPath(cmd, "workload", inputDir, "workload")
	return cmd
}

func runServingCheck(ctx context.Context, o servingCheckOptions, w io.Writer) error {
	wl, err := serving.ReadWorkload(o.workload)
	if err != nil {
		return err
	}
	r, err := serving.ReadResult(o.result, o.run)
	if err != nil {
		return err
	}
	v := serving.Check(wl, r, serving.CheckOptions{Shuffled: o.shuffled, EOSAllowed: o.eosAllowed})
	if o.json {
		b, _ := json.MarshalIndent(v, "", "  ")
		fmt.Fprintf(w, "%s\n", b)
	} else {
		printVerdict(w, v)
	}
	if !v.OK {
		return errFailed
	}
	return nil
}

func printVerdict(w io.Writer, v *serving.Verdict) {
	if v.OK {
		fmt.Fprintf(w, "OK %s (%s) ran workload %s: %d prompts, digest %s\n", v.Result, v.Format, v.Workload, v.N, v.Digest)
	} else {
		fmt.Fprintf(w, "FAIL %s (%s) against workload %s (%d prompts, digest %s): %d failure(s)\n", v.Result, v.Format, v.Workload, v.N, v.Digest, len(v.Failures))
	}
	for _, f := range v.Failures {
		fmt.Fprintf(w, "  %s\n", f)
	}
	for _, c := range v.Causes {
		fmt.Fprintf(w, "  cause: %s\n", c)
	}
	for _, c := range v.Checked {
		fmt.Fprintf(w, "  checked: %s\n", c)
	}
	for _, n := range v.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}

type servingReportOptions struct {
	results            []string
	baseline, workload string
	data               string
	svg                string
	run                int
	shuffled, eos      bool
	json               bool
}

func newServingReportCmd(s *streams) *cobra.Command {
	var o servingReportOptions
	cmd := &cobra.Command{
		Use:   "report RESULT... [--baseline RESULT --workload DIR]",
		Short: "Throughput, TTFT/TPOT/ITL/E2EL percentiles and concurrency of benchmark runs",
		Long: `report prints, per run, request and token throughput, TTFT / TPOT / ITL /
E2EL p50/p90/p99 (recomputed from the per-request data when the file has it,
with numpy's percentile, else the file's own summary, marked "rec"),
successes, failures and peak concurrency; --svg draws the latency
distributions. Serving and offline runs are listed in separate tables and
never ranked together. With --workload, runs whose files carry generated
texts also get their LongBench score beside the figures (as "serving score"
computes it, reading the records from --data or the manifest's data_dir),
overall and per subset, with the difference from the baseline.

With --baseline, each RESULT is put beside the baseline with a speed-up per
metric (throughput ratio; baseline latency over the run's), but only when the
baseline and the run both pass "serving check" against --workload (one
workload digest); otherwise the refusal is printed and the exit status is 3.`,
		Example: `  goldset serving report dense.json sparse.json --svg latency.svg
  goldset serving report sparse.json --baseline dense.json --workload lb100
  goldset serving report a.json b.jsonl --workload lb100 --json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.results = args
			return runServingReport(cmd.Context(), o, s.out)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.baseline, "baseline", "", "result the others are ranked against (needs --workload)")
	f.StringVar(&o.workload, "workload", "", "workload to check every result against")
	f.StringVar(&o.svg, "svg", "", "write the latency distributions as SVG to this file")
	f.StringVar(&o.data, "data", "", "LongBench data directory: with --workload, runs whose files carry generated texts are scored (default: the manifest's data_dir)")
	f.IntVar(&o.run, "run", -1, "which run of appended files (0 first, -1 last)")
	f.BoolVar(&o.shuffled, "shuffled", false, "check lengths as a multiset (see serving check)")
	f.BoolVar(&o.eos, "eos-allowed", false, "accept outputs shorter than max_new_tokens (see serving check)")
	f.BoolVar(&o.json, "json", false, "print the report as JSON")
	markArgs(cmd, inputFile, "result")
	markPath(cmd, "baseline", inputFile, "result")
	markPath(cmd, "workload", inputDir, "workload")
	markPath(cmd, "data", inputDir, "score-data")
	markPath(cmd, "svg", output, "")
	return cmd
}

type servingReport struct {
	Runs       []serving.Summary   `json:"runs"`
	Comparison *serving.Comparison `json:"comparison,omitempty"`
	Refused    string              `json:"refused,omitempty"`
}

func runServingReport(ctx context.Context, o servingReportOptions, w io.Writer) error {
	if o.baseline != "" && o.workload == "" {
		return usagef("--baseline needs --workload: runs are ranked only when both pass check against one workload")
	}
	var wl *serving.Workload
	if o.workload != "" {
		var err error
		if wl, err = serving.ReadWorkload(o.workload); err != nil {
			return err
		}
	}
	load := func(path string) (serving.Summary, error) {
		r, err := serving.ReadResult(path, o.run)
		if err != nil {
			return serving.Summary{}, err
		}
		s := serving.Summarize(r)
		if wl != nil {
			s.Check = serving.Check(wl, r, serving.CheckOptions{Shuffled: o.shuffled, EOSAllowed: o.eos})
			switch rep, _, err := serving.ScoreRun(ctx, wl, o.data, path, o.run); {
			case err == nil:
				s.Accuracy = serving.AccuracyOf(rep)
			case errors.Is(err, serving.ErrNoTexts):
				// Nothing to score: the table shows "-".
			case o.data != "":
				// --data named explicitly and unusable: an error, not a note.
				return serving.Summary{}, err
			default:
				s.Accuracy = &serving.Accuracy{Note: err.Error()}
			}
		}
		return s, nil
	}
	var rep servingReport
	for _, p := range o.results {
		s, err := load(p)
		if err != nil {
			return err
		}
		rep.Runs = append(rep.Runs, s)
	}
	var cmpErr error
	if o.baseline != "" {
		base, err := load(o.baseline)
		if err != nil {
			return err
		}
		rep.Comparison, cmpErr = serving.Compare(base, rep.Runs)
		if cmpErr != nil {
			rep.Refused = cmpErr.Error()
		}
	}
	if o.svg != "" {
		all := rep.Runs
		if rep.Comparison != nil {
			all = append([]serving.Summary{rep.Comparison.Baseline}, rep.Runs...)
		}
		if err := writeFileAtomic(o.svg, func(f io.Writer) error { return serving.WriteSVG(f, all) }); err != nil {
			return err
		}
	}
	if o.json {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s\n", b)
	} else {
		printReport(w, rep)
	}
	if cmpErr != nil {
		if errors.Is(cmpErr, serving.ErrNotComparable) {
			return errFailed
		}
		return cmpErr
	}
	return nil
}

// writeFileAtomic writes through a temporary file beside path and renames it,
// so a failed write leaves no partial file.
func writeFileAtomic(path string, fn func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	err = fn(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

func printReport(w io.Writer, rep servingReport) {
	if c := rep.Comparison; c != nil {
		runs := []serving.Summary{c.Baseline}
		ratios := [][]serving.Ratio{nil}
		var apart []serving.Summary
		for i, s := range c.Runs {
			if s.Kind != c.Baseline.Kind {
				apart = append(apart, s)
				continue
			}
			runs = append(runs, s)
			ratios = append(ratios, c.Ratios[i])
		}
		fmt.Fprintf(w, "%s runs, speed-up against the baseline %s (>1: better):\n", c.Baseline.Kind, c.Baseline.Result)
		summaryTable(w, runs, ratios)
		if len(apart) > 0 {
			fmt.Fprintf(w, "%s runs (never ranked against a %s baseline):\n", apart[0].Kind, c.Baseline.Kind)
			summaryTable(w, apart, nil)
		}
		for _, r := range c.Refused {
			fmt.Fprintf(w, "not ranked: %s\n", r)
		}
		if rep.Refused != "" {
			fmt.Fprintf(w, "comparison refused: %s\n", rep.Refused)
		}
		return
	}
	for _, kind := range []serving.Kind{serving.Serving, serving.Offline} {
		var runs []serving.Summary
		for _, s := range rep.Runs {
			if s.Kind == kind {
				runs = append(runs, s)
			}
		}
		if len(runs) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s runs:\n", kind)
		summaryTable(w, runs, nil)
	}
}

// summaryTable prints one column per run; with ratios, each run after the
// first gets a speed-up column.
func summaryTable(w io.Writer, runs []serving.Summary, ratios [][]serving.Ratio) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(name string, cells []string) {
		fmt.Fprintf(tw, "%s\t%s\t\n", name, strings.Join(cells, "\t"))
	}
	cols := func(f func(s serving.Summary) string, metric string) []string {
		var out []string
		for i, s := range runs {
			out = append(out, f(s))
			if ratios != nil && i > 0 {
				out = append(out, speedup(ratios[i], metric))
			}
		}
		return out
	}
	head := cols(func(s serving.Summary) string { return filepath.Base(s.Result) }, "")
	if ratios != nil {
		for i := range head {
			if head[i] == "" {
				head[i] = "speed-up"
			}
		}
	}
	row("", head)
	row("format", cols(func(s serving.Summary) string { return string(s.Format) }, ""))
	if runs[0].Check != nil {
		row("check", cols(func(s serving.Summary) string {
			if s.Check.OK {
				return "OK"
			}
			return fmt.Sprintf("FAIL(%d)", len(s.Check.Failures))
		}, ""))
	}
	row("successes", cols(func(s serving.Summary) string { return fmt.Sprint(s.Successes) }, ""))
	row("failures", cols(func(s serving.Summary) string { return intOrDash(s.Failures) }, ""))
	row("duration s", cols(func(s serving.Summary) string { return num(s.Duration, 2) }, ""))
	row("requests/s", cols(func(s serving.Summary) string { return num(s.RequestThroughput, 3) }, "request_throughput"))
	row("output tok/s", cols(func(s serving.Summary) string { return num(s.OutputThroughput, 1) }, "output_throughput"))
	row("total tok/s", cols(func(s serving.Summary) string { return num(s.TotalTokenThroughput, 1) }, "total_token_throughput"))
	accuracyRows(row, runs, ratios != nil)
	if runs[0].Kind == serving.Serving {
		row("peak concurrency", cols(func(s serving.Summary) string { return intOrDash(s.PeakConcurrency) }, ""))
		for mi, m := range serving.Metrics {
			for _, p := range []string{"p50", "p90", "p99"} {
				name := fmt.Sprintf("%s %s ms", strings.ToUpper(m), p)
				row(name, cols(func(s serving.Summary) string {
					if mi >= len(s.Latency) {
						return "-"
					}
					d := s.Latency[mi]
					v := map[string]serving.Num{"p50": d.P50, "p90": d.P90, "p99": d.P99}[p]
					if d.Source == "recorded" && v.Known() {
						return num(v, 2) + " rec"
					}
					return num(v, 2)
				}, m+"_"+p+"_ms"))
			}
		}
	}
	tw.Flush()
}

func speedup(rs []serving.Ratio, metric string) string {
	if metric == "" {
		return ""
	}
	if rs == nil {
		return "n/a"
	}
	for _, r := range rs {
		if r.Metric == metric {
			if !r.Speedup.Known() {
				return "-"
			}
			return fmt.Sprintf("%.3fx", float64(r.Speedup))
		}
	}
	return "-"
}

func num(v serving.Num, prec int) string {
	if !v.Known() {
		return "-"
	}
	return fmt.Sprintf("%.*f", prec, float64(v))
}

func intOrDash(n int) string {
	if n < 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

type servingSizeOptions struct {
	workload, model                         string
	kvBudget, gpuMemory, weights, framework string
	utilization                             float64
	blockSize, questBlock, contextLen       int
	questK                                  []int
	kvDType                                 string
	perPrompt, json                         bool
}

func newServingSizeCmd(s *streams) *cobra.Command {
	var o servingSizeOptions
	cmd := &cobra.Command{
		Use:   "size --workload DIR --model qwen3-8b|FILE --kv-budget 60GiB",
		Short: "KV cache bytes and blocks of a workload, what a KV budget admits, Quest's reads",
		Long: `size computes, for a model config (layers, KV heads, head dim, KV dtype, block
size): KV bytes per token, per block, per prompt (at prompt + max_new_tokens)
and for the whole workload; the largest concurrency and the longest context a
KV budget admits; and Quest's per-decode-step KV bytes read (kmax/kmin
metadata of every block + K and V of the K selected blocks) against dense,
with its metadata memory and top-k workspace.

vLLM pre-allocates the KV cache after its profiling run, so "GPU memory used"
is the same for every dataset; these figures are the ones that differ.
Weights and framework memory are inputs (--weights, --framework with
--gpu-memory), never guessed; or give the KV budget directly (--kv-budget,
e.g. the "GPU KV cache size" vLLM logs, in tokens x bytes per token).

--model is a built-in (qwen3-8b, qwen3-14b, qwen3-32b: bf16, from their
config.json), a small JSON {"name","layers","q_heads","kv_heads","head_dim",
"dtype","max_context"} or a Hugging Face config.json.`,
		Example: `  goldset serving size --workload lb100 --model qwen3-8b --kv-budget 60GiB
  goldset serving size --workload lb100 --model Qwen3-32B/config.json --gpu-memory 141GiB \
      --weights 61GiB --framework 6GiB --quest-k 16,32,64 --json
  goldset serving size --model qwen3-8b --kv-budget 20GiB --context-len 40960`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServingSize(cmd.Context(), o, s.out)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.workload, "workload", "", "workload directory (or manifest.json); without it only the context-limit figures")
	f.StringVar(&o.model, "model", "", "qwen3-8b, qwen3-14b, qwen3-32b, or a model JSON / HF config.json (required)")
	f.StringVar(&o.kvBudget, "kv-budget", "", "bytes for the KV cache, e.g. 60GiB")
	f.StringVar(&o.gpuMemory, "gpu-memory", "", "GPU memory, e.g. 141GiB (with --weights, --framework: budget = memory x utilization - weights - framework)")
	f.StringVar(&o.weights, "weights", "0", "model weights bytes (an input, e.g. 15.3GiB)")
	f.StringVar(&o.framework, "framework", "0", "activations, CUDA graphs and allocator bytes (an input)")
	f.Float64Var(&o.utilization, "gpu-memory-utilization", 0.9, "vLLM's --gpu-memory-utilization")
	f.IntVar(&o.blockSize, "block-size", 16, "KV cache block size in tokens (vLLM's --block-size)")
	f.IntSliceVar(&o.questK, "quest-k", []int{16, 32, 64}, "Quest blocks kept per head (anchors included)")
	f.IntVar(&o.questBlock, "quest-block", 0, "Quest block size in tokens (default: --block-size)")
	f.IntVar(&o.contextLen, "context-len", 0, "context limit to size at (default: the workload's context_len, else the model's)")
	f.StringVar(&o.kvDType, "kv-dtype", "", "KV cache dtype (vLLM --kv-cache-dtype: bfloat16, float16, fp8); default the model's")
	f.BoolVar(&o.perPrompt, "per-prompt", false, "also list every prompt's tokens, blocks and bytes")
	f.BoolVar(&o.json, "json", false, "print the figures as JSON")
	cmd.MarkFlagRequired("model")
	markArgs(cmd, notPath, "")
	markPath(cmd, "workload", inputDir, "workload")
	markPath(cmd, "model", inputFile, "model")
	markPath(cmd, "weights", notPath, "")
	markPath(cmd, "kv-dtype", notPath, "")
	return cmd
}

// parseMemoryFlags fills so's byte sizes from --kv-budget, --gpu-memory,
// --weights and --framework ("" leaves one unset); a bad size is a usage
// error naming its flag.
func parseMemoryFlags(so *serving.SizeOptions, kvBudget, gpuMemory, weights, framework string) error {
	for _, b := range []struct {
		flag, val string
		dst       *int64
	}{{"--kv-budget", kvBudget, &so.KVBudget}, {"--gpu-memory", gpuMemory, &so.GPUMemory}, {"--weights", weights, &so.Weights}, {"--framework", framework, &so.Framework}} {
		if b.val == "" {
			continue
		}
		v, err := serving.ParseBytes(b.val)
		if err != nil {
			return usagef("%s: %v", b.flag, err)
		}
		*b.dst = v
	}
	return nil
}

func runServingSize(ctx context.Context, o servingSizeOptions, w io.Writer) error {
	m, err := serving.LoadModel(o.model)
	if err != nil {
		return err
	}
	var so serving.SizeOptions
	so.BlockSize, so.QuestK, so.QuestBlock, so.ContextLen, so.Utilization, so.KVDType = o.blockSize, o.questK, o.questBlock, o.contextLen, o.utilization, o.kvDType
	if err := parseMemoryFlags(&so, o.kvBudget, o.gpuMemory, o.weights, o.framework); err != nil {
		return err
	}
	if so.KVBudget == 0 && so.GPUMemory == 0 {
		return usagef("give --kv-budget, or --gpu-memory with --weights and --framework")
	}
	if o.blockSize <= 0 || o.utilization <= 0 || o.utilization > 1 {
		return usagef("--block-size must be positive and --gpu-memory-utilization in (0, 1]")
	}
	var wl *serving.Workload
	if o.workload != "" {
		if wl, err = serving.ReadWorkload(o.workload); err != nil {
			return err
		}
	}
	sz, err := serving.Size(m, wl, so)
	if err != nil {
		return err
	}
	if o.json {
		if !o.perPrompt {
			sz.Prompts = nil
		}
		b, _ := json.MarshalIndent(sz, "", "  ")
		fmt.Fprintf(w, "%s\n", b)
		return nil
	}
	printSizing(w, sz, o.perPrompt)
	return nil
}

func printSizing(w io.Writer, s *serving.Sizing, perPrompt bool) {
	m := s.Model
	fb := serving.FormatBytes
	fmt.Fprintf(w, "model %s (%s): %d layers, %d KV heads x head dim %d, %s KV cache, block size %d\n",
		m.Name, m.Source, m.Layers, m.KVHeads, m.HeadDim, m.DType, s.BlockSize)
	fmt.Fprintf(w, "  KV per token %s (%d B), per block %s, at context_len %d: %s\n",
		fb(s.BytesPerToken), s.BytesPerToken, fb(s.BytesPerBlock), s.ContextLen, fb(s.BytesAtContext))
	b := s.Budget
	fmt.Fprintf(w, "KV budget %s (%d B, %s): %d blocks\n", fb(b.KVBytes), b.KVBytes, b.Derivation, b.Blocks)
	if b.GPUMemory > 0 {
		fmt.Fprintf(w, "  inputs: gpu memory %s, utilization %g, weights %s, framework %s\n", fb(b.GPUMemory), b.Utilization, fb(b.Weights), fb(b.Framework))
	}
	fmt.Fprintf(w, "  longest single context: %d tokens", b.LongestContext)
	if m.MaxContext > 0 && b.LongestContext > int64(m.MaxContext) {
		fmt.Fprintf(w, " (the model's limit is %d)", m.MaxContext)
	}
	fmt.Fprintf(w, "\n  concurrency at context_len %d: %d sequences\n", s.ContextLen, b.ConcurrencyAtContext)
	if s.Workload.Requests > 0 {
		ws := s.Workload
		fmt.Fprintf(w, "workload %s (%d requests, digest %s), each at prompt + max_new_tokens:\n", s.WorkloadName, ws.Requests, s.Digest)
		fmt.Fprintf(w, "  tokens %d (mean %.1f, max %d); blocks %d (max %d per request)\n", ws.Tokens, ws.MeanTokens, ws.MaxTokens, ws.Blocks, ws.MaxBlocks)
		fmt.Fprintf(w, "  KV bytes: all resident %s, mean per request %s, max %s\n", fb(ws.KVBytes), fb(int64(ws.MeanKVBytes)), fb(ws.MaxKVBytes))
		fmt.Fprintf(w, "  budget admits: %d requests at once worst case (the longest first), %d at the mean length; whole workload at once: %v\n",
			b.ConcurrencyWorstCase, b.ConcurrencyMean, b.WholeWorkloadFits)
	}
	fmt.Fprintf(w, "Quest (block %d, anchors first+last; one decode step of one request at %d tokens, all layers):\n", s.QuestBlock, s.ContextLen)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "K\tdense read\tmetadata read\tselected K+V\tQuest read\tQuest/dense\tq_head upper\tworkload mean dense\tworkload mean Quest\t\n")
	for _, q := range s.Quest {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%.4f\t%s\t%s\t%s\t\n", q.K, fb(q.DenseReadBytes), fb(q.MetadataReadBytes),
			fb(q.SelectedReadBytes), fb(q.QuestReadBytes), q.ReadRatio, fb(q.QHeadUpperReadBytes), fb(int64(q.WorkloadDenseRead)), fb(int64(q.WorkloadQuestRead)))
	}
	tw.Flush()
	fmt.Fprintf(w, "Quest memory beside the KV cache (metadata: kmax+kmin per block, all layers; top-k workspace per request and step: float32 scores + int32 selection):\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "K\tmetadata at context_len\tmetadata, workload resident\tworkspace q_head\tworkspace kv_group_sum\tconcurrency at context_len with metadata\t\n")
	for _, q := range s.Quest {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t\n", q.K, fb(q.MetadataBytesAtContext), fb(q.MetadataBytesWorkload),
			fb(q.WorkspaceQHead), fb(q.WorkspaceKVGroupSum), q.ConcurrencyWithMeta)
	}
	tw.Flush()
	if perPrompt {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "custom_id\ttokens\tblocks\tprompt blocks\tKV bytes\t\n")
		for _, p := range s.Prompts {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t\n", p.CustomID, p.Tokens, p.Blocks, p.PromptBlocks, p.KVBytes)
		}
		tw.Flush()
	}
}

type servingScoreOptions struct {
	result, workload, data, baseline string
	tokenizer                        string
	run, resamples                   int
	seed                             uint64
	level                            float64
	perRequest, json, tokenizerAny   bool
}

func newServingScoreCmd(s *streams) *cobra.Command {
	var o servingScoreOptions
	cmd := &cobra.Command{
		Use:   "score RESULT --workload DIR [--data DIR] [--baseline RESULT]",
		Short: "LongBench scores of a run's generated texts; deltas and greedy agreement against a baseline",
		Long: `score reads the texts a run generated, from
  vllm bench serve --save-result --save-detailed     (generated_texts, in send order)
  python -m sglang.bench_serving --output-details    (generated_texts; matched by prompt length)
  vllm run-batch -o F                                (one line per custom_id)
  run_vllm_offline.py output with requests[].text    (per custom_id)
matches them to the workload's prompts, reads each prompt's LongBench record
(answers, all_classes, length; v2: answer, difficulty, length) from --data
(default: the manifest's data_dir) at the manifest's line, checks its _id and
the file's sha256, and scores per subset as LongBench's eval.py does: qa F1,
ROUGE-L (the rouge package), classification, retrieval (en and zh), count and
code edit similarity (fuzzywuzzy with python-Levenshtein), first line only for
trec/triviaqa/samsum/lsht, the best of the answers, round(100 x mean, 2); the
LongBench-E buckets 0-4k/4-8k/8k+ on the record's length. LongBench v2:
"The correct answer is (X)" extraction, accuracy overall, easy/hard and
short/medium/long as result.py rounds them (1 decimal). Subsets scored with
jieba (multifieldqa_zh, dureader, vcsum) are reported unsupported.

With --baseline (another run of the same workload, e.g. dense attention),
each subset's delta (run - baseline) has a paired bootstrap confidence
interval (--resamples draws of the prompts with replacement, SplitMix64
--seed), and greedy agreement gives the share of identical outputs and the
first diverging position per prompt, in recorded token ids when both files
have them, else Qwen3 tokens with --tokenizer, else characters.

Exit status: 0 scored, 1 unreadable or unmatched, 2 usage.`,
		Example: `  goldset serving score dense.json --workload lb100 --data LongBench/data
  goldset serving score sparse.json --workload lb100 --baseline dense.json --tokenizer tokenizer.json
  goldset serving score out.jsonl --workload lb100 --json --per-request`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.result = args[0]
			return runServingScore(cmd.Context(), o, s.out)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.workload, "workload", "", "workload directory (or its manifest.json) from goldset longbench build (required)")
	f.StringVar(&o.data, "data", "", "LongBench data directory holding <subset>.jsonl (default: the manifest's data_dir)")
	f.StringVar(&o.baseline, "baseline", "", "a run of the same workload to compare with (deltas, CI, greedy agreement)")
	f.StringVar(&o.tokenizer, "tokenizer", "", "Qwen3 tokenizer.json: greedy agreement in tokens when the files record no token ids (default: characters)")
	f.BoolVar(&o.tokenizerAny, "tokenizer-any", false, "accept a tokenizer.json other than the known Qwen3 file")
	f.IntVar(&o.run, "run", -1, "which run of appended files (0 first, -1 last)")
	f.IntVar(&o.resamples, "resamples", 10000, "bootstrap resamples")
	f.Uint64Var(&o.seed, "seed", 1, "bootstrap SplitMix64 seed")
	f.Float64Var(&o.level, "level", 0.95, "confidence level of the interval")
	f.BoolVar(&o.perRequest, "per-request", false, "also list every prompt's score (and divergence)")
	f.BoolVar(&o.json, "json", false, "print the scores as JSON")
	cmd.MarkFlagRequired("workload")
	markArgs(cmd, inputFile, "score-result")
	markPath(cmd, "workload", inputDir, "score-workload")
	markPath(cmd, "data", inputDir, "score-data")
	markPath(cmd, "baseline", inputFile, "score-baseline")
	markPath(cmd, "tokenizer", inputFile, "tokenizer")
	return cmd
}

type servingScores struct {
	OK        bool                      `json:"ok"`
	Run       *serving.ScoreReport      `json:"run"`
	Baseline  *serving.ScoreReport      `json:"baseline,omitempty"`
	Deltas    []serving.Delta           `json:"deltas,omitempty"`
	Bootstrap *serving.BootstrapOptions `json:"bootstrap,omitempty"`
	Agreement *serving.Agreement        `json:"agreement,omitempty"`
}

func runServingScore(ctx context.Context, o servingScoreOptions, w io.Writer) error {
	if o.resamples <= 0 || o.level <= 0 || o.level >= 1 {
		return usagef("--resamples must be positive and --level in (0, 1)")
	}
	wl, err := serving.ReadWorkload(o.workload)
	if err != nil {
		return err
	}
	out := servingScores{OK: true}
	run, g, err := serving.ScoreRun(ctx, wl, o.data, o.result, o.run)
	if err != nil {
		return err
	}
	out.Run = run
	if o.baseline != "" {
		base, bg, err := serving.ScoreRun(ctx, wl, o.data, o.baseline, o.run)
		if err != nil {
			return err
		}
		out.Baseline = base
		bo := serving.BootstrapOptions{Resamples: o.resamples, Seed: o.seed, Level: o.level}
		if out.Deltas, err = serving.ScoreDeltas(base, run, bo); err != nil {
			return err
		}
		out.Bootstrap = &bo
		var enc serving.Encoder
		if o.tokenizer != "" {
			tok, err := loadTokenizer(o.tokenizer, o.tokenizerAny, io.Discard)
			if err != nil {
				return err
			}
			enc = tok
		}
		out.Agreement = serving.GreedyAgreement(wl, bg, g, base, run, enc)
	}
	if !o.perRequest {
		out.Run.Requests = nil
		if out.Baseline != nil {
			out.Baseline.Requests = nil
		}
		if out.Agreement != nil {
			out.Agreement.Requests = nil
		}
	}
	if o.json {
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s\n", b)
		return nil
	}
	printScores(w, out)
	return nil
}

func printScores(w io.Writer, s servingScores) {
	r := s.Run
	fmt.Fprintf(w, "%s (%s): LongBench %s scores against workload %s (digest %s); texts matched by %s\n",
		r.Result, r.Format, r.Version, r.Workload, r.Digest, r.Matched)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if s.Baseline == nil {
		fmt.Fprintf(tw, "subset\tmetric\tn\tscore\tbuckets\t\n")
		for _, x := range r.Subsets {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t\n", x.Subset, x.Metric, x.N, scoreCell(x), bucketCells(x))
		}
		fmt.Fprintf(tw, "overall (mean of subsets)\t\t\t%s\t\t\n", num(r.Overall, 2))
	} else {
		fmt.Fprintf(tw, "subset\tn\tbaseline\trun\tdelta\t%.0f%% CI\t\n", 100*s.Bootstrap.Level)
		for _, d := range s.Deltas {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%+.2f\t[%+.2f, %+.2f]\t\n", d.Subset, d.N, num(d.Baseline, 2), num(d.Run, 2), float64(d.Delta), float64(d.Lo), float64(d.Hi))
		}
	}
	tw.Flush()
	for _, x := range r.Subsets {
		if x.Unsupported != "" {
			fmt.Fprintf(w, "unsupported: %s: %s\n", x.Subset, x.Unsupported)
		}
	}
	if s.Baseline != nil {
		fmt.Fprintf(w, "paired bootstrap: %d resamples, seed %d (SplitMix64), baseline %s\n", s.Bootstrap.Resamples, s.Bootstrap.Seed, s.Baseline.Result)
	}
	if a := s.Agreement; a != nil {
		fmt.Fprintf(w, "greedy agreement (%s): %d of %d outputs identical (%s)", a.Unit, a.Identical, a.Compared, num(a.Share*100, 1)+"%")
		if a.MinDiv >= 0 {
			fmt.Fprintf(w, "; first divergence: min %d, median %s", a.MinDiv, num(a.MedianDiv, 1))
		}
		fmt.Fprintln(w)
		for _, x := range a.PerSubset {
			fmt.Fprintf(w, "  %s: %d/%d identical\n", x.Subset, x.Identical, x.Compared)
		}
		for _, d := range a.Requests {
			if !d.Identical {
				fmt.Fprintf(w, "  %s diverges at %d (lengths %d, %d)\n", d.CustomID, d.First, d.LenA, d.LenB)
			}
		}
		for _, n := range a.Notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
	}
	for _, rep := range []*serving.ScoreReport{s.Baseline, s.Run} {
		if rep == nil {
			continue
		}
		for _, n := range rep.Notes {
			fmt.Fprintf(w, "note: %s: %s\n", rep.Result, n)
		}
		for _, q := range rep.Requests {
			fmt.Fprintf(w, "  %s %s score %.4f%s\n", rep.Result, q.CustomID, q.Score, map[bool]string{true: " (failed)", false: ""}[q.Failed])
		}
	}
}

func scoreCell(x serving.SubsetScore) string {
	if x.Unsupported != "" {
		return "unsupported"
	}
	if x.Metric == serving.MetricMultipleChoice {
		return num(x.Score, 1)
	}
	return num(x.Score, 2)
}

func bucketCells(x serving.SubsetScore) string {
	var parts []string
	for _, b := range x.Buckets {
		if b.N > 0 {
			parts = append(parts, fmt.Sprintf("%s %s (%d)", b.Bucket, num(b.Score, 2), b.N))
		}
	}
	return strings.Join(parts, ", ")
}

// accuracyRows adds the LongBench score rows when any run was scored; with
// a baseline (the first run) each later run's column is followed by its
// difference in points.
func accuracyRows(row func(string, []string), runs []serving.Summary, withDelta bool) {
	var subsets []string
	seen := map[string]bool{}
	scored := false
	for _, s := range runs {
		if s.Accuracy == nil {
			continue
		}
		scored = true
		for _, x := range s.Accuracy.Subsets {
			if !seen[x.Subset] {
				seen[x.Subset] = true
				subsets = append(subsets, x.Subset)
			}
		}
	}
	if !scored {
		return
	}
	get := func(s serving.Summary, subset string) serving.Num {
		if s.Accuracy == nil {
			return serving.Num(math.NaN())
		}
		if subset == "" {
			return s.Accuracy.Overall
		}
		for _, x := range s.Accuracy.Subsets {
			if x.Subset == subset {
				return x.Score
			}
		}
		return serving.Num(math.NaN())
	}
	line := func(name, subset string) {
		var cells []string
		for i, s := range runs {
			cells = append(cells, num(get(s, subset), 2))
			if withDelta && i > 0 {
				b, v := get(runs[0], subset), get(s, subset)
				if b.Known() && v.Known() {
					cells = append(cells, fmt.Sprintf("%+.2f", float64(v-b)))
				} else {
					cells = append(cells, "-")
				}
			}
		}
		row(name, cells)
	}
	line("LongBench score", "")
	for _, sub := range subsets {
		line("  "+sub, sub)
	}
}
