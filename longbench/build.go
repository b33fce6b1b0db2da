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

	"github.com/goldset/goldset/internal/safefile"
)

// BuildOptions configure Build.
type BuildOptions struct {
	DataDir string   // holds <subset>.jsonl
	Subsets []string // in output order; each must have a file, a template and a max generation length
	Version Version  // V1 when zero
	// TemplatesDir holds dataset2prompt.json and dataset2maxlen.json;
	// when empty, <DataDir>/config, else <DataDir>/../config.
	TemplatesDir string
	Prompt       PromptOptions

	// V2Template, when set, is a LongBench v2 prompt file ($DOC$, $Q$,
	// $C_A$..$C_D$, e.g. prompts/0shot.txt) used for every subset instead of
	// dataset2prompt.json (Version must be V2).
	V2Template string

	N               int     // prompts to select (> 0); with Buckets, per band
	TargetMean      float64 // wanted mean prompt length in tokens; 0: plain seeded sample
	Tolerance       float64 // relative; DefaultTolerance when zero
	MaxPromptTokens int     // exclude longer prompts (chat template included); 0: no limit
	Seed            uint64
	// Buckets, when set, builds a length set instead: for each band edge E
	// (ascending, <= the context), N records whose prompt + output reaches E,
	// middle-truncated so that prompt_tokens + max_new_tokens == E. Limit adds
	// the band at the context length itself.
	Buckets []int
	Limit   bool

	Out       string // output directory, created atomically
	Overwrite bool   // replace a non-empty Out
	// Model is the model name written into batch.chat.jsonl's body.model and
	// into every printed command (required: run-batch rejects a body whose
	// model it does not serve).
	Model string

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
	tokens int // final prompt tokens under the plan's budget (0 in length-set builds)
	raw    int // tokens of the formatted prompt before truncation
}

// job is one prompt to build in phase 2: a candidate and its length-set target.
type job struct {
	cand   int
	target int // 0: the plan's budget
}

// Build reads the subsets, builds and tokenizes every prompt, selects N of
// them to the target mean (or N per band of a length set) and writes the
// outputs atomically into opts.Out. Every prompt satisfies prompt_tokens +
// max_new_tokens <= the context length. Progress and the length statistics
// go to progress (may be nil).
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
	// The directories named are directories (a FIFO there would otherwise
	// read as a missing subset).
	for _, d := range []string{opts.DataDir, opts.TemplatesDir} {
		if d == "" {
			continue
		}
		if err := safefile.Dir(d); err != nil {
			return nil, fmt.Errorf("longbench: %w", err)
		}
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
	var v2tmpl *FileDigest
	if opts.V2Template != "" {
		t, d, err := LoadDollarTemplate(opts.V2Template)
		if err != nil {
			return nil, err
		}
		pr.SetFormatter(t)
		v2tmpl = &d
	}
	ctxLen := opts.Prompt.contextLen()
	edges := opts.bandEdges(ctxLen)
	plans := make([]SubsetPlan, len(opts.Subsets))
	for i, s := range opts.Subsets {
		if plans[i], err = pr.Plan(s, v); err != nil {
			return nil, err
		}
		for _, e := range edges {
			if e-plans[i].MaxNewTokens-plans[i].TemplateTokens < 2 {
				return nil, fmt.Errorf("longbench: subset %q: band %d leaves no prompt tokens (max_new_tokens %d, chat template %d): %w",
					s, e, plans[i].MaxNewTokens, plans[i].TemplateTokens, ErrBudget)
			}
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

	// Phase 1: token counts of every record; texts and ids are dropped.
	var cands []candidate
	sources := make([]FileInfo, len(opts.Subsets))
	for si, s := range opts.Subsets {
		var info FileInfo
		res, err := runPool(ctx, workers, func(submit func(*Record) error) error {
			var err error
			info, err = ReadSubset(ctx, opts.DataDir, s, ropts, submit)
			return err
		}, func(rec *Record) (candidate, error) {
			if len(edges) > 0 {
				raw, err := pr.rawTokens(rec)
				return candidate{subset: si, line: rec.Line, raw: raw}, err
			}
			p, err := pr.build(rec, plans[si])
			if err != nil {
				return candidate{}, err
			}
			return candidate{subset: si, line: rec.Line, tokens: len(p.IDs), raw: p.RawTokens}, nil
		})
		if err != nil {
			return nil, err
		}
		sources[si] = info
		cands = append(cands, res...)
		fmt.Fprintf(progress, "longbench: %s: %d records (%d skipped), %d bytes, sha256 %s\n",
			s, info.Records, info.Skipped, info.Bytes, info.SHA256)
	}

	var (
		jobs    []job
		sel     Selection
		lengths []int
		bands   []BandInfo
	)
	if len(edges) > 0 {
		jobs, bands, err = selectBands(cands, plans, edges, ctxLen, opts.N, opts.Seed)
		if err != nil {
			return nil, err
		}
		lengths = make([]int, len(cands))
		for i, c := range cands {
			lengths[i] = c.raw + plans[c.subset].TemplateTokens
		}
	} else {
		lengths = make([]int, len(cands))
		gens := make([]int, len(cands))
		for i, c := range cands {
			lengths[i], gens[i] = c.tokens, plans[c.subset].MaxNewTokens
		}
		sel, err = Select(lengths, opts.N, SelectOptions{Seed: opts.Seed, TargetMean: opts.TargetMean,
			Tolerance: opts.Tolerance, MaxLen: opts.MaxPromptTokens, MaxTotal: ctxLen, Output: gens})
		if err != nil {
			return nil, err
		}
		for _, ci := range sel.Indices {
			jobs = append(jobs, job{cand: ci})
		}
	}

	// Phase 2: rebuild the selected prompts from a second read of the files.
	type key struct{ subset, line, target int }
	want := make([]map[int][]int, len(opts.Subsets)) // line -> targets
	for i := range want {
		want[i] = map[int][]int{}
	}
	for _, j := range jobs {
		c := cands[j.cand]
		want[c.subset][c.line] = append(want[c.subset][c.line], j.target)
	}
	built := map[key]Prompt{}
	ropts.OnSkip = nil // already reported in phase 1
	for si, s := range opts.Subsets {
		if len(want[si]) == 0 {
			continue
		}
		var info FileInfo
		res, err := runPool(ctx, workers, func(submit func(*Record) error) error {
			var err error
			info, err = ReadSubset(ctx, opts.DataDir, s, ropts, func(r *Record) error {
				if len(want[si][r.Line]) > 0 {
					return submit(r)
				}
				return nil
			})
			return err
		}, func(rec *Record) ([]Prompt, error) {
			var ps []Prompt
			for _, t := range want[si][rec.Line] {
				p, err := pr.buildTo(rec, plans[si], t)
				if err != nil {
					return nil, err
				}
				ps = append(ps, p)
			}
			return ps, nil
		})
		if err != nil {
			return nil, err
		}
		if info.SHA256 != sources[si].SHA256 {
			return nil, fmt.Errorf("longbench: %s changed during the build (sha256 %s, then %s)",
				SubsetPath(opts.DataDir, s), sources[si].SHA256, info.SHA256)
		}
		for _, ps := range res {
			for _, p := range ps {
				built[key{si, p.Line, p.Target}] = p
			}
		}
	}
	prompts := make([]Prompt, len(jobs))
	for i, j := range jobs {
		c := cands[j.cand]
		p, ok := built[key{c.subset, c.line, j.target}]
		if !ok {
			return nil, fmt.Errorf("longbench: %s line %d was not found on the second read", opts.Subsets[c.subset], c.line)
		}
		if p.Total() > ctxLen {
			return nil, fmt.Errorf("longbench: %s line %d: %d prompt + %d output tokens > context %d: %w", p.Subset, p.Line, len(p.IDs), p.MaxNewTokens, ctxLen, ErrBudget)
		}
		if j.target == 0 && len(p.IDs) != c.tokens {
			return nil, fmt.Errorf("longbench: %s line %d tokenized to %d then %d tokens: tokenizer is not deterministic: %w",
				p.Subset, p.Line, c.tokens, len(p.IDs), ErrTokenizer)
		}
		prompts[i] = p
	}
	lens := make([]int, len(prompts))
	for i := range prompts {
		lens[i] = len(prompts[i].IDs)
	}
	if len(edges) > 0 {
		if err := checkBands(prompts, bands); err != nil {
			return nil, err
		}
		sel = Selection{Lengths: lens, Candidates: len(cands), Stats: ComputeStats(lens)}
	}

	m := opts.manifest(v, cfg, tok, pr, plans, sources, sel, lengths, skipped, v2tmpl)
	if len(bands) > 0 {
		m.LengthSets = &LengthSetInfo{PerBand: opts.N, Bands: bands}
	}
	marks := HistogramMarks{Bands: edges, ContextLen: ctxLen}
	if err := commitDir(opts.Out, opts.Overwrite, func(tmp string) error {
		return writeOutputs(tmp, prompts, m, tok, opts.Prompt.NoThinking, marks)
	}); err != nil {
		return nil, err
	}
	if len(bands) > 0 {
		for _, b := range bands {
			fmt.Fprintf(progress, "longbench: band (%d, %d]: %d of %d eligible records, %d exactly at %d\n", b.Lower, b.Upper, b.Selected, b.Eligible, b.Exact, b.Upper)
		}
	} else {
		fmt.Fprintf(progress, "longbench: selected %d of %d candidates (%d over max length or context), %d swaps\n",
			opts.N, sel.Candidates, sel.Excluded, sel.Swaps)
	}
	maxTotal := 0
	for i := range prompts {
		maxTotal = max(maxTotal, prompts[i].Total())
	}
	fmt.Fprintf(progress, "longbench: prompt tokens %s; max prompt + output %d <= context %d\n", sel.Stats, maxTotal, ctxLen)
	fmt.Fprint(progress, Histogram(sel.Lengths, 10, 40))
	fmt.Fprintf(progress, "longbench: wrote %s (workload_digest %s)\n", opts.Out, m.WorkloadDigest)
	return &BuildResult{Out: opts.Out, Lengths: sel.Lengths, Stats: sel.Stats, Manifest: m}, nil
}

// bandEdges returns the length-set band edges (ascending), with the
// context length appended for Limit.
func (o *BuildOptions) bandEdges(ctxLen int) []int {
	if len(o.Buckets) == 0 && !o.Limit {
		return nil
	}
	e := append([]int(nil), o.Buckets...)
	if o.Limit && (len(e) == 0 || e[len(e)-1] != ctxLen) {
		e = append(e, ctxLen)
	}
	return e
}

// selectBands picks, for each band edge, N candidates whose prompt + output
// before truncation reaches the edge, by a seeded sample (seed + band index).
func selectBands(cands []candidate, plans []SubsetPlan, edges []int, ctxLen, n int, seed uint64) ([]job, []BandInfo, error) {
	var jobs []job
	bands := make([]BandInfo, len(edges))
	longest := 0
	for _, c := range cands {
		longest = max(longest, c.raw+plans[c.subset].TemplateTokens+plans[c.subset].MaxNewTokens)
	}
	for k, e := range edges {
		lower := 0
		if k > 0 {
			lower = edges[k-1]
		}
		var elig, lens []int
		for i, c := range cands {
			pl := plans[c.subset]
			if c.raw+pl.TemplateTokens+pl.MaxNewTokens >= e {
				elig = append(elig, i)
				lens = append(lens, c.raw)
			}
		}
		bands[k] = BandInfo{Lower: lower, Upper: e, Limit: e == ctxLen, Eligible: len(elig)}
		if len(elig) < n {
			return nil, nil, fmt.Errorf("longbench: length set band (%d, %d]: only %d of %d records reach %d prompt + output tokens before truncation (the longest reaches %d), %d wanted; records are never repeated within a band: %w",
				lower, e, len(elig), len(cands), e, longest, n, ErrNotEnough)
		}
		sel, err := Select(lens, n, SelectOptions{Seed: seed + uint64(k)})
		if err != nil {
			return nil, nil, err
		}
		for _, i := range sel.Indices {
			jobs = append(jobs, job{cand: elig[i], target: e})
		}
		bands[k].Selected = n
	}
	return jobs, bands, nil
}

// checkBands verifies that every length-set prompt landed in its band and
// counts those exactly at the edge.
func checkBands(prompts []Prompt, bands []BandInfo) error {
	for i := range prompts {
		p := &prompts[i]
		for k := range bands {
			b := &bands[k]
			if b.Upper != p.Target {
				continue
			}
			if t := p.Total(); t <= b.Lower || t > b.Upper {
				return fmt.Errorf("longbench: %s line %d: prompt + output %d tokens is outside its band (%d, %d]: %w", p.Subset, p.Line, t, b.Lower, b.Upper, ErrBudget)
			}
			if p.Total() == b.Upper {
				b.Exact++
			}
		}
	}
	return nil
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
	case o.Model == "":
		return bad("no model name: it goes into %s's body.model and every printed command", ChatBatchFile)
	case o.Prompt.AllowOverBudget:
		return bad("AllowOverBudget: serving files must fit the context (prompt_tokens + max_new_tokens <= context_len)")
	case (len(o.Buckets) > 0 || o.Limit) && o.TargetMean > 0:
		return bad("a length set (buckets/limit) takes no target mean")
	case o.V2Template != "" && o.Version != V2:
		return bad("a v2 template (%s) needs LongBench v2 records", o.V2Template)
	}
	ctxLen := o.Prompt.contextLen()
	for i, b := range o.Buckets {
		if b <= 0 || b > ctxLen || (i > 0 && b <= o.Buckets[i-1]) {
			return bad("buckets %v: want ascending band edges in (0, %d] (the context)", o.Buckets, ctxLen)
		}
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

func (o *BuildOptions) manifest(v Version, cfg *Config, tok Tokenizer, pr *Prompter, plans []SubsetPlan, sources []FileInfo,
	sel Selection, lengths []int, skipped []string, v2tmpl *FileDigest) *Manifest {
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
	template := "python str.format(**record) with " + PromptFile + "[subset] (LongBench pred.py)"
	if v2tmpl != nil {
		template = "LongBench v2 pred.py: template.replace('$DOC$', context.strip()).replace('$Q$', question.strip()).replace('$C_A$', choice_A.strip())... ($C_B$, $C_C$, $C_D$) with " + v2tmpl.Path
	}
	pol := o.Prompt.policy()
	polNote := map[string]string{
		PolicyFit:       "max_len = context_len - max_new_tokens - chat template tokens (prompt + output fits by construction)",
		PolicyLongBench: fmt.Sprintf("max_len = context_len - %d (LongBench pred.py config/model2maxlen.json); checked against the context with each subset's output and template", LongBenchMargin),
		PolicyFixed:     "max_len fixed for every subset (--truncate-at); checked against the context with each subset's output and template",
	}[pol]
	if len(o.Buckets) > 0 || o.Limit {
		polNote += "; length set: each prompt truncated so that prompt_tokens + max_new_tokens equals its band's upper edge"
	}
	hist := strings.Split(strings.TrimRight(Histogram(sel.Lengths, 10, 40), "\n"), "\n")
	return &Manifest{
		Format:    ManifestFormat,
		LongBench: v.String(),
		DataDir:   o.DataDir,
		Sources:   srcs,
		Templates: cfg.Files,
		Tokenizer: tokInfo,
		Recipe: RecipeInfo{
			Template:       template,
			V2Template:     v2tmpl,
			ContextLen:     o.Prompt.contextLen(),
			Budget:         "prompt_tokens + max_new_tokens <= context_len for every prompt, chat template and think block included",
			Policy:         pol,
			PolicyNote:     polNote,
			FixedMaxLen:    o.Prompt.MaxLen,
			ChatTokens:     pr.ChatTokens(),
			Truncation:     "if len(encode(prompt)) > max_len: half = max_len/2; prompt = decode(ids[:half], skip_special=True) + decode(ids[-half:], skip_special=True); before the chat template; max_len lowered by any overshoot of the final prompt (seam re-tokenization) and the prompt truncated again",
			ChatTemplate:   chat,
			ChatHead:       ChatHead,
			ChatTail:       ChatTail,
			NoThinking:     o.Prompt.NoThinking,
			NoChat:         o.Prompt.NoChat,
			NoChatSubsets:  NoChatSubsets,
			Subsets:        plans,
			OutputLenNotes: "max_tokens / output_tokens / max_completion_tokens = max_new_tokens of the subset (" + MaxLenFile + ")",
		},
		Selection: SelectionInfo{
			Algorithm:       "seeded uniform sample (partial Fisher-Yates), then greedy closest-to-target single swaps until within tolerance/2; if that ends outside tolerance, the same swaps from the sorted window of n lengths whose mean is closest to the target; candidates are prompts with prompt_tokens + max_new_tokens <= context_len; length sets: a seeded sample (seed + band index) per band of the records long enough for it",
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
		Model:   o.Model,
		Skipped: skipped,
	}
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
