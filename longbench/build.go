package longbench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// DefaultModel is the model name written into batch.jsonl requests.
const DefaultModel = "Qwen/Qwen3-4B"

// BuildOptions configure Build.
type BuildOptions struct {
	DataDir string   // holds <subset>.jsonl
	Subsets []string // in output order; each must have a file, a template and a max generation length
	Version Version  // V1 when zero
	// TemplatesDir holds dataset2prompt.json and dataset2maxlen.json;
	// when empty, <DataDir>/config, else <DataDir>/../config.
	TemplatesDir string
	Prompt       PromptOptions

	N               int     // prompts to select (> 0)
	TargetMean      float64 // wanted mean prompt length in tokens; 0: plain seeded sample
	Tolerance       float64 // relative; DefaultTolerance when zero
	MaxPromptTokens int     // exclude longer prompts (chat template included); 0: no limit
	Seed            uint64

	Out       string // output directory, created atomically
	Overwrite bool   // replace a non-empty Out
	Model     string // batch.jsonl body.model; DefaultModel when empty

	SkipMalformed bool // skip bad JSONL lines (listed in the manifest) instead of failing
	LossyUTF8     bool // read invalid UTF-8 as U+FFFD (counted per source in the manifest) instead of failing
	MaxLineBytes  int  // DefaultMaxLineBytes when zero
	Workers       int  // tokenization goroutines; GOMAXPROCS when zero
}

// BuildResult describes a finished build.
type BuildResult struct {
	Out      string
	Lengths  []int // prompt token counts in output order (kernel context_lens)
	Stats    Stats
	Manifest *Manifest
}

// candidate is what phase 1 keeps of each record.
type candidate struct {
	subset int
	line   int
	tokens int
}

// Build reads the subsets, builds and tokenizes every prompt, selects N of
// them to the target mean and writes the outputs atomically into opts.Out.
// Progress and the length statistics go to progress (may be nil).
func Build(ctx context.Context, opts BuildOptions, tok Tokenizer, progress io.Writer) (*BuildResult, error) {
	if tok == nil {
		panic("longbench: Build: nil tokenizer")
	}
	if progress == nil {
		progress = io.Discard
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	replacing, err := checkOut(opts.Out, opts.Overwrite)
	if err != nil {
		return nil, err
	}
	if replacing {
		fmt.Fprintf(progress, "longbench: --overwrite: %s (a longbench build) will be replaced when the new one is complete\n", opts.Out)
	}
	v := opts.Version
	if v == 0 {
		v = V1
	}
	cfg, err := LoadConfig(opts.templatesDir())
	if err != nil {
		return nil, err
	}
	pr, err := NewPrompter(cfg, tok, opts.Prompt)
	if err != nil {
		return nil, err
	}
	plans := make([]SubsetPlan, len(opts.Subsets))
	for i, s := range opts.Subsets {
		if plans[i], err = pr.Plan(s, v); err != nil {
			return nil, err
		}
		path := SubsetPath(opts.DataDir, s)
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("longbench: subset %q: no file %s: %w", s, path, ErrMissingSubset)
		}
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var skipped []string
	ropts := ReadOptions{Version: v, SkipMalformed: opts.SkipMalformed, MaxLineBytes: opts.MaxLineBytes, LossyUTF8: opts.LossyUTF8,
		OnSkip: func(e *LineError) {
			skipped = append(skipped, e.Error())
			fmt.Fprintf(progress, "longbench: skipped %v\n", e)
		}}

	// Phase 1: token count of every record; texts and ids are dropped.
	var cands []candidate
	sources := make([]FileInfo, len(opts.Subsets))
	for si, s := range opts.Subsets {
		var info FileInfo
		res, err := runPool(ctx, workers, func(submit func(*Record) error) error {
			var err error
			info, err = ReadSubset(ctx, opts.DataDir, s, ropts, submit)
			return err
		}, func(rec *Record) (candidate, error) {
			p, err := pr.build(rec, plans[si])
			if err != nil {
				return candidate{}, err
			}
			return candidate{subset: si, line: rec.Line, tokens: len(p.IDs)}, nil
		})
		if err != nil {
			return nil, err
		}
		sources[si] = info
		cands = append(cands, res...)
		fmt.Fprintf(progress, "longbench: %s: %d records (%d skipped), %d bytes, sha256 %s\n",
			s, info.Records, info.Skipped, info.Bytes, info.SHA256)
	}

	lengths := make([]int, len(cands))
	for i, c := range cands {
		lengths[i] = c.tokens
	}
	sel, err := Select(lengths, opts.N, SelectOptions{Seed: opts.Seed, TargetMean: opts.TargetMean,
		Tolerance: opts.Tolerance, MaxLen: opts.MaxPromptTokens})
	if err != nil {
		return nil, err
	}

	// Phase 2: rebuild the selected prompts from a second read of the files.
	want := make([]map[int]bool, len(opts.Subsets))
	for i := range want {
		want[i] = map[int]bool{}
	}
	for _, ci := range sel.Indices {
		want[cands[ci].subset][cands[ci].line] = true
	}
	var prompts []Prompt
	ropts.OnSkip = nil // already reported in phase 1
	for si, s := range opts.Subsets {
		if len(want[si]) == 0 {
			continue
		}
		var info FileInfo
		res, err := runPool(ctx, workers, func(submit func(*Record) error) error {
			var err error
			info, err = ReadSubset(ctx, opts.DataDir, s, ropts, func(r *Record) error {
				if want[si][r.Line] {
					return submit(r)
				}
				return nil
			})
			return err
		}, func(rec *Record) (Prompt, error) { return pr.build(rec, plans[si]) })
		if err != nil {
			return nil, err
		}
		if info.SHA256 != sources[si].SHA256 {
			return nil, fmt.Errorf("longbench: %s changed during the build (sha256 %s, then %s)",
				SubsetPath(opts.DataDir, s), sources[si].SHA256, info.SHA256)
		}
		prompts = append(prompts, res...)
	}
	for i, p := range prompts {
		if len(p.IDs) != sel.Lengths[i] {
			return nil, fmt.Errorf("longbench: %s line %d tokenized to %d then %d tokens: tokenizer is not deterministic: %w",
				p.Subset, p.Line, sel.Lengths[i], len(p.IDs), ErrTokenizer)
		}
	}

	m := opts.manifest(v, cfg, tok, plans, sources, sel, lengths, skipped)
	if err := commitDir(opts.Out, opts.Overwrite, func(tmp string) error {
		return writeOutputs(tmp, prompts, m)
	}); err != nil {
		return nil, err
	}
	fmt.Fprintf(progress, "longbench: selected %d of %d candidates (%d over max length), %d swaps\n",
		opts.N, sel.Candidates, sel.Excluded, sel.Swaps)
	fmt.Fprintf(progress, "longbench: prompt tokens %s\n", sel.Stats)
	fmt.Fprint(progress, Histogram(sel.Lengths, 10, 40))
	fmt.Fprintf(progress, "longbench: wrote %s\n", opts.Out)
	return &BuildResult{Out: opts.Out, Lengths: sel.Lengths, Stats: sel.Stats, Manifest: m}, nil
}

func (o *BuildOptions) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("longbench: %s: %w", fmt.Sprintf(format, args...), ErrOptions)
	}
	switch {
	case o.DataDir == "":
		return bad("no data directory")
	case len(o.Subsets) == 0:
		return bad("no subsets")
	case o.Out == "":
		return bad("no output directory")
	case o.N <= 0:
		return bad("N = %d, want > 0", o.N)
	case o.Version != 0 && o.Version != V1 && o.Version != V2:
		return bad("LongBench version %d", int(o.Version))
	}
	seen := map[string]bool{}
	for _, s := range o.Subsets {
		if s == "" || strings.ContainsAny(s, `/\`) {
			return bad("subset name %q", s)
		}
		if seen[s] {
			return bad("subset %q listed twice", s)
		}
		seen[s] = true
	}
	return nil
}

func (o *BuildOptions) templatesDir() string {
	if o.TemplatesDir != "" {
		return o.TemplatesDir
	}
	inside := filepath.Join(o.DataDir, "config")
	if st, err := os.Stat(inside); err == nil && st.IsDir() {
		return inside
	}
	return filepath.Join(o.DataDir, "..", "config")
}

// ResolvedTemplatesDir returns the templates directory Build would use.
func (o BuildOptions) ResolvedTemplatesDir() string { return o.templatesDir() }

func (o *BuildOptions) manifest(v Version, cfg *Config, tok Tokenizer, plans []SubsetPlan, sources []FileInfo,
	sel Selection, lengths []int, skipped []string) *Manifest {
	model := o.Model
	if model == "" {
		model = DefaultModel
	}
	tokInfo := TokenizerInfo{SHA256: "unknown"}
	if h, ok := tok.(interface{ SHA256() string }); ok {
		tokInfo.SHA256 = h.SHA256()
	}
	if v, ok := tok.(interface{ Verified() bool }); ok && v.Verified() {
		tokInfo.Verified = true
	} else {
		tokInfo.Note = "token counts come from an unverified tokenizer (not the known Qwen3 tokenizer.json): they may differ from the model's"
	}
	srcs := make([]FileInfo, len(sources))
	for i, s := range sources {
		s.Path = relTo(o.DataDir, s.Path)
		srcs[i] = s
	}
	chat := "qwen3: " + fmt.Sprintf("%q + prompt + %q", ChatHead, ChatTail)
	if o.Prompt.NoThinking {
		chat += fmt.Sprintf(" + %q (enable_thinking=False)", ChatNoThinking)
	}
	tol := o.Tolerance
	if tol == 0 {
		tol = DefaultTolerance
	}
	hist := strings.Split(strings.TrimRight(Histogram(sel.Lengths, 10, 40), "\n"), "\n")
	m := &Manifest{
		Format:    ManifestFormat,
		LongBench: v.String(),
		DataDir:   o.DataDir,
		Sources:   srcs,
		Templates: cfg.Files,
		Tokenizer: tokInfo,
		Recipe: RecipeInfo{
			Template:       "python str.format(**record) with " + PromptFile + "[subset] (LongBench pred.py)",
			ContextLen:     o.Prompt.contextLen(),
			FixedMaxLen:    o.Prompt.MaxLen,
			Truncation:     "if len(encode(prompt)) > max_len: half = max_len/2; prompt = decode(ids[:half], skip_special=True) + decode(ids[-half:], skip_special=True); before the chat template",
			ChatTemplate:   chat,
			ChatHead:       ChatHead,
			ChatTail:       ChatTail,
			NoThinking:     o.Prompt.NoThinking,
			NoChat:         o.Prompt.NoChat,
			NoChatSubsets:  NoChatSubsets,
			Subsets:        plans,
			OutputLenNotes: "max_tokens / output_tokens = max_new_tokens of the subset (" + MaxLenFile + ")",
		},
		Selection: SelectionInfo{
			Algorithm:       "seeded uniform sample (partial Fisher-Yates), then greedy closest-to-target single swaps until within tolerance/2; if that ends outside tolerance, the same swaps from the sorted window of n lengths whose mean is closest to the target",
			PRNG:            "SplitMix64, Lemire bounded integers",
			Seed:            o.Seed,
			N:               o.N,
			TargetMean:      o.TargetMean,
			Tolerance:       tol,
			MaxPromptTokens: o.MaxPromptTokens,
			Candidates:      sel.Candidates,
			Excluded:        sel.Excluded,
			Swaps:           sel.Swaps,
			Fallback:        sel.Fallback,
			CandidateStats:  ComputeStats(lengths),
			SelectedStats:   sel.Stats,
			Histogram:       hist,
		},
		Model:       model,
		Skipped:     skipped,
		Description: "serve.jsonl: vllm bench serve --dataset-name custom --dataset-path serve.jsonl --skip-chat-template --custom-output-len -1; batch.jsonl: vllm run-batch -i batch.jsonl; prompt_ids.npy int32[total], prompt_offsets.npy int64[n+1], prompt_lens.npy int32[n]",
	}
	return m
}

func relTo(base, path string) string {
	if r, err := filepath.Rel(base, path); err == nil {
		return filepath.ToSlash(r)
	}
	return path
}

// runPool feeds records to workers running work, and returns the results in
// submission order. The first error (a worker's, else feed's) wins.
func runPool[T any](ctx context.Context, workers int, feed func(submit func(*Record) error) error, work func(*Record) (T, error)) ([]T, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type job struct {
		idx int
		rec *Record
	}
	jobs := make(chan job, 2*workers)
	var (
		mu      sync.Mutex
		results []T
		werr    error
		werrIdx = -1
		wg      sync.WaitGroup
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if ctx.Err() != nil {
					continue
				}
				v, err := work(j.rec)
				mu.Lock()
				if err != nil {
					if werrIdx < 0 || j.idx < werrIdx {
						werr, werrIdx = err, j.idx
					}
					cancel()
				} else {
					var zero T
					for len(results) <= j.idx {
						results = append(results, zero)
					}
					results[j.idx] = v
				}
				mu.Unlock()
			}
		}()
	}
	n := 0
	ferr := feed(func(r *Record) error {
		select {
		case jobs <- job{n, r}:
			n++
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	close(jobs)
	wg.Wait()
	if werr != nil {
		return nil, werr
	}
	if ferr != nil {
		return nil, ferr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var zero T
	for len(results) < n {
		results = append(results, zero)
	}
	return results, nil
}
