package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/goldset/goldset/internal/cpuslots"
	"github.com/goldset/goldset/internal/safefile"
	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/suite"
)

type genOptions struct {
	suites     []string
	out        string
	splits     []string
	cases      []string
	jobs       int
	compress   string
	quiet      bool
	json       bool
	from       string
	shard      string
	secretFile string
	noFsync    bool
	cpuProfile string
	traceFile  string
	recipes    []string
	command    string
	overwrite  bool
	dryRun     bool
	noSpace    bool
	variants   int // replay-proof variants of the --case cases (variants.go)
}

// genIOProcs is how many Ps gen adds beyond the CPUs (two measured best on
// a 2-CPU VM: 10.95 s against 12.3 s with one and 13.8 s with none).
const genIOProcs = 2

func newGenCmd(s *streams) *cobra.Command {
	var o genOptions
	cmd := &cobra.Command{
		Use:   "gen [SUITE...]",
		Short: "Generate bundles (inputs, goldens, manifest) for embedded suites",
		Long: `gen builds the named embedded suites into OUT/<suite>/, each a bundle of .npy
files and a manifest.json. With no suite named it builds the contest suites
(those marked "default" in 'goldset list'; not the benchmark-only peer-sizes).
The same recipe gives byte-identical bundles on every run, machine and --jobs
value.

Before writing, gen prints the plan (bundles, cases, estimated size) and
refuses when the file system lacks the space; --dry-run prints the plan only.

Bundles are written atomically: into a temporary directory beside the target,
renamed into place when complete. Ctrl-C leaves no partial bundle. An
existing target is replaced only with --overwrite, and only when it is a
goldset bundle of the same suite holding nothing else; gen says so first.

With --from MANIFEST it rebuilds the bundle a manifest describes, from the
manifest alone, and checks every sha256 (exit 3 naming what differs).

Hidden cases (split "hidden") take their seeds from HMAC-SHA256(secret, case
id); the secret comes from --secret-file or $GOLDSET_HIDDEN_SECRET, and the
manifest publishes sha256(secret) as a commitment.

Replay-proof variants: --variants N with --case ID builds, into
OUT/<suite>.variants.<ID>, N input variants of the case (seeds
HMAC-SHA256(secret, "<ID>.v<i>")), each with its inputs, the reference
values of an HMAC-chosen 1.5% of every output's rows and the full golden's
sha256, but no golden: the Python judge feeds variant i to timed
iteration i and checks the sampled rows (docs/spec.md §13d).

Sharding: --shard i/n builds every n-th case starting at the i-th (1-based);
when --shard is not given, $JOB_COMPLETION_INDEX (Kubernetes Indexed Job) or
$SLURM_ARRAY_TASK_ID with $GOLDSET_SHARDS set gives it. Join shards with
'goldset merge'.`,
		Example: `  goldset gen --dry-run                         # what the default build writes, and its size
  goldset gen stage1-basic --case mm-qwen3-q-16x4096x4096-bf16 --variants 50 --secret-file s.key
  goldset gen                                   # the contest suites into ./out
  goldset gen stage1-basic --out /data/goldset --overwrite
  goldset gen stage2-paged --split public --jobs 2 --quiet
  goldset gen --from shared/manifest.json --out rebuilt
  goldset gen --recipe my-suite.json --out out
  goldset gen stage2-paged --shard 2/4 --out shards`,
		ValidArgsFunction: completeSuites,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.suites = args
			o.command = strings.Join(os.Args, " ")
			// Extra Ps for the direct writes and their hashing; worker
			// pools stay sized by the CPUs (cpuslots.RaiseForIO says why).
			defer cpuslots.RaiseForIO(genIOProcs)()
			return runGen(cmd.Context(), o, s.out, s.err)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.out, "out", "o", "out", "output directory; each suite goes to OUT/<suite>")
	f.Var(&enumSlice{p: &o.splits, allowed: []string{manifests.SplitPublic, manifests.SplitBenchmark, manifests.SplitHidden, manifests.SplitEdge}}, "split", "splits to build: public, benchmark, hidden, edge (default public,benchmark; hidden too with a secret; edge only when named)")
	f.StringSliceVar(&o.cases, "case", nil, "build only these case ids (one suite only)")
	posIntVarP(f, &o.jobs, "jobs", "j", cpuslots.Procs(), "cases built at once (output never depends on it)")
	f.BoolVar(&o.overwrite, "overwrite", false, "replace an existing bundle of the same suite")
	f.BoolVar(&o.dryRun, "dry-run", false, "print what would be built and its size, write nothing")
	f.BoolVar(&o.noSpace, "no-space-check", false, "build even when the free space looks short (a full disk still fails cleanly, leaving nothing)")
	f.StringVar(&o.compress, "compress", "", `compress tensors: "zstd" (hashes stay over the .npy bytes)`)
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress output")
	f.BoolVar(&o.json, "json", false, "print a JSON summary of each bundle on stdout")
	f.StringVar(&o.from, "from", "", "rebuild the bundle described by this manifest and check its hashes")
	f.StringVar(&o.shard, "shard", "", "build shard i of n (1-based, e.g. 2/4)")
	f.StringVar(&o.secretFile, "secret-file", "", "file holding the secret for hidden cases")
	f.StringArrayVar(&o.recipes, "recipe", nil, "build a suite recipe from this JSON file instead of an embedded one (repeatable)")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile to this file (diagnostics)")
	f.StringVar(&o.traceFile, "trace", "", "write a Go execution trace to this file (diagnostics: go tool trace FILE; each case is a task, each tensor writer, DSA stage and the commit a region; direct writes are logged)")
	f.IntVar(&o.variants, "variants", 0, "build N replay-proof input variants of each --case into OUT/<suite>.variants.<case> (needs a secret; docs/spec.md §13d)")
	f.BoolVar(&o.noFsync, "no-fsync", false, "skip fsync before the final rename (faster; a power loss may leave an incomplete bundle, a crash still cannot)")
	cmd.RegisterFlagCompletionFunc("case", completeRecipeCases)
	markArgs(cmd, notPath, "")
	markPath(cmd, "out", output, "")
	markPath(cmd, "from", inputDir, "bundle")
	markPath(cmd, "split", notPath, "")
	markPath(cmd, "secret-file", inputFile, "secret")
	markPath(cmd, "recipe", inputFile, "recipe")
	markPath(cmd, "cpuprofile", output, "")
	markPath(cmd, "trace", output, "")
	return cmd
}

// parseShard reads "i/n" (1-based) or, when empty, the batch-system env vars.
func parseShard(s string) (suite.Shard, error) {
	if s == "" {
		idx := os.Getenv("JOB_COMPLETION_INDEX")
		base := 0 // JOB_COMPLETION_INDEX is 0-based
		if idx == "" {
			idx = os.Getenv("SLURM_ARRAY_TASK_ID")
			if v := os.Getenv("SLURM_ARRAY_TASK_MIN"); v != "" && idx != "" {
				if b, err := strconv.Atoi(v); err == nil {
					base = b
				}
			}
		}
		n := os.Getenv("GOLDSET_SHARDS")
		if idx == "" && n == "" {
			return suite.Shard{}, nil
		}
		if n == "" {
			// Every pod of the job would build everything.
			return suite.Shard{}, usagef("the batch system sets the shard index (%s) but GOLDSET_SHARDS is not set: set it to the number of shards, or pass --shard 1/1 to build everything", shardIndexVar())
		}
		if idx == "" {
			return suite.Shard{}, usagef("GOLDSET_SHARDS=%q is set but neither JOB_COMPLETION_INDEX nor SLURM_ARRAY_TASK_ID is: pass --shard i/n", n)
		}
		i, err1 := strconv.Atoi(idx)
		c, err2 := strconv.Atoi(n)
		if err1 != nil || err2 != nil || c < 1 || i-base < 0 || i-base >= c {
			return suite.Shard{}, usagef("bad shard from environment: index %q of GOLDSET_SHARDS=%q", idx, n)
		}
		return suite.Shard{Index: i - base, Count: c}, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return suite.Shard{}, usagef("--shard %q: want i/n with 1 <= i <= n", s)
	}
	return suite.Shard{Index: i - 1, Count: n}, nil
}

func shardIndexVar() string {
	if v := os.Getenv("JOB_COMPLETION_INDEX"); v != "" {
		return "JOB_COMPLETION_INDEX=" + v
	}
	return "SLURM_ARRAY_TASK_ID=" + os.Getenv("SLURM_ARRAY_TASK_ID")
}

// maxSecretBytes bounds a --secret-file (a secret is a line of text).
const maxSecretBytes = 64 << 10

func readSecret(file string) ([]byte, error) {
	if file != "" {
		b, err := safefile.ReadFile(file, maxSecretBytes)
		if err != nil {
			return nil, fmt.Errorf("read secret: %w", err)
		}
		b = []byte(strings.TrimRight(string(b), "\r\n"))
		if len(b) == 0 {
			return nil, fmt.Errorf("secret file %s is empty", file)
		}
		return b, nil
	}
	if v := os.Getenv("GOLDSET_HIDDEN_SECRET"); v != "" {
		return []byte(v), nil
	}
	return nil, nil
}

func provenance(command string) *manifests.Provenance {
	host, _ := os.Hostname()
	return &manifests.Provenance{
		Tool: "goldset", Version: toolVersion(), GoVersion: runtime.Version(), GOARCH: runtime.GOARCH,
		Created: time.Now().UTC().Format(time.RFC3339), Host: host, Command: command,
	}
}

func runGen(ctx context.Context, o genOptions, w, errw io.Writer) error {
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if o.traceFile != "" {
		f, err := os.Create(o.traceFile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			return err
		}
		defer trace.Stop()
	}
	if o.compress != "" && o.compress != "zstd" {
		return usagef("--compress %q: only zstd is supported", o.compress)
	}
	shard, err := parseShard(o.shard)
	if err != nil {
		return err
	}
	secret, err := readSecret(o.secretFile)
	if err != nil {
		return err
	}
	if len(o.cases) > 0 && len(o.suites)+len(o.recipes) != 1 && o.from == "" {
		return usagef("--case needs exactly one suite")
	}
	opts := suite.Options{
		Splits: o.splits, Cases: o.cases, Jobs: o.jobs, Compress: o.compress == "zstd",
		Secret: secret, Shard: shard, Provenance: provenance(o.command),
	}
	if o.variants != 0 {
		return runGenVariants(ctx, o, opts, w, errw)
	}
	if o.from != "" {
		if len(o.suites) > 0 || len(o.recipes) > 0 {
			return usagef("--from rebuilds one manifest; do not name suites or --recipe too")
		}
		if len(o.splits) > 0 || o.shard != "" {
			// They were overridden silently: --from rebuilds every split.
			return usagef("--from rebuilds the manifest's cases whatever their split: no --split or --shard (--case picks cases)")
		}
		return runGenFrom(ctx, o, opts, w, errw)
	}
	recipes, err := selectRecipes(o, opts)
	if err != nil {
		return err
	}
	plan, err := planGen(recipes, o, opts)
	if err != nil {
		return err
	}
	if err := plan.report(o, w, errw); err != nil || o.dryRun {
		return err
	}
	for _, b := range plan.Bundles {
		if _, err := buildBundle(ctx, b.recipe, b.Dir, opts, o.quiet, o.json, o.noFsync, o.overwrite, w, errw); err != nil {
			return err
		}
	}
	return nil
}

// genPlan is what gen is about to write (printed first; --dry-run stops there).
type genPlan struct {
	OK        bool            `json:"ok"` // --dry-run --json: true (a short disk is an error object)
	Bundles   []plannedBundle `json:"bundles"`
	Bytes     int64           `json:"bytes"`
	FreeBytes int64           `json:"free_bytes,omitempty"`
}

type plannedBundle struct {
	Suite   string `json:"suite"`
	Version string `json:"version"`
	Dir     string `json:"dir"`
	Cases   int    `json:"cases"`
	Bytes   int64  `json:"bytes"`
	Replace bool   `json:"replace"`
	recipe  *manifests.Recipe
}

// planGen selects every recipe's cases, refusing unknown case ids and empty
// selections (exit 2), and sums the estimated sizes.
func planGen(recipes []*manifests.Recipe, o genOptions, opts suite.Options) (*genPlan, error) {
	p := &genPlan{}
	for _, r := range recipes {
		known := map[string]string{}
		for _, c := range r.Cases {
			known[c.ID] = c.Split
		}
		for _, id := range o.cases {
			if _, ok := known[id]; !ok {
				return nil, usagef("suite %s has no case %q (goldset list %s --cases)", r.Name, id, r.Name)
			}
		}
		all := opts
		all.Shard = suite.Shard{}
		sel, err := suite.SelectCases(r, all)
		if err != nil {
			if errors.Is(err, suite.ErrSecret) {
				return nil, usageError{err}
			}
			return nil, err
		}
		if len(sel) == 0 {
			why := ""
			for _, id := range o.cases {
				if sp := known[id]; !slices.Contains(effectiveSplits(opts), sp) {
					why += fmt.Sprintf("; case %s is in split %s", id, sp)
				}
			}
			return nil, usagef("nothing to build: no case of %s is selected (splits %s%s); an empty bundle is never written", r.Name, strings.Join(effectiveSplits(opts), ","), why)
		}
		if opts.Shard.Count > 1 {
			if sel, err = suite.SelectCases(r, opts); err != nil {
				return nil, err
			}
		}
		b := plannedBundle{Suite: r.Name, Version: r.Version, Dir: filepath.Join(o.out, r.Name), Cases: len(sel), recipe: r}
		if opts.Shard.Count > 1 {
			b.Dir = filepath.Join(o.out, fmt.Sprintf("%s.shard-%d-of-%d", r.Name, opts.Shard.Index+1, opts.Shard.Count))
		}
		for _, c := range sel {
			n, err := suite.EstimateBytes(c)
			if err != nil {
				return nil, fmt.Errorf("suite %s: %w", r.Name, err)
			}
			b.Bytes += n
		}
		if _, err := os.Lstat(b.Dir); err == nil {
			b.Replace = true
		}
		p.Bundles = append(p.Bundles, b)
		p.Bytes += b.Bytes
	}
	return p, nil
}

func effectiveSplits(opts suite.Options) []string {
	if len(opts.Splits) > 0 {
		return opts.Splits
	}
	if len(opts.Secret) > 0 {
		return []string{manifests.SplitPublic, manifests.SplitBenchmark, manifests.SplitHidden}
	}
	return []string{manifests.SplitPublic, manifests.SplitBenchmark}
}

// report prints the plan and refuses when the free space is short.
func (p *genPlan) report(o genOptions, w, errw io.Writer) error {
	free, known := freeBytes(existingAncestor(o.out))
	if known {
		p.FreeBytes = free
	}
	short := known && free < p.Bytes && !o.noSpace
	if o.dryRun && o.json && !short {
		p.OK = true
		return writeJSON(w, p)
	}
	out := errw
	if o.dryRun && !o.json {
		out = w
	}
	if !o.quiet || (o.dryRun && !o.json) {
		for _, b := range p.Bundles {
			verb := "write"
			if b.Replace {
				verb = "replace"
			}
			fmt.Fprintf(out, "goldset: will %s %s (%s %s: %d cases, ~%s)\n", verb, b.Dir, b.Suite, b.Version, b.Cases, humanBytes(b.Bytes))
		}
		freeNote := ""
		if known {
			freeNote = fmt.Sprintf(", %s free there", humanBytes(free))
		}
		fmt.Fprintf(out, "goldset: ~%s in total%s\n", humanBytes(p.Bytes), freeNote)
	}
	if short {
		return fmt.Errorf("not enough free space under %s: the build needs ~%s, %s is free (name fewer suites, --split, --case)", o.out, humanBytes(p.Bytes), humanBytes(free))
	}
	return nil
}

// existingAncestor is path or its nearest existing parent (for statfs).
func existingAncestor(path string) string {
	p := filepath.Clean(path)
	for {
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(p)
		if parent == p {
			return p
		}
		p = parent
	}
}

// buildBundle builds one recipe into dir atomically and reports it.
func buildBundle(ctx context.Context, r *manifests.Recipe, dir string, opts suite.Options, quiet, asJSON, noSync, overwrite bool, w, errw io.Writer) (*manifests.Manifest, error) {
	bw, err := createBundle(dir, r.Name, overwrite, errw)
	if err != nil {
		return nil, err
	}
	bw.NoSync = noSync
	defer bw.Abort()
	pr := newProgress(errw, r.Name, quiet)
	opts.Progress = pr.update
	start := time.Now()
	m, err := suite.Build(ctx, r, suite.BundleSink{W: bw}, opts)
	pr.finish()
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil, fmt.Errorf("no bundle written at %s: %w", dir, err)
		}
		return nil, err
	}
	commit := trace.StartRegion(ctx, "commit "+r.Name)
	err = bw.Commit(m)
	commit.End()
	if err != nil {
		return nil, err
	}
	if bw.Replaces != nil {
		fmt.Fprintf(errw, "goldset: replaced %s (was %s %s, digest %.16s)\n", dir, bw.Replaces.Suite, bw.Replaces.SuiteVersion, bw.Replaces.Digest)
	}
	n, total := tensorTotals(m)
	el := time.Since(start)
	if asJSON {
		if err := writeJSON(w, bundleSummary{OK: true, Suite: m.Suite, Version: m.SuiteVersion, Bundle: dir, Digest: m.Digest,
			Cases: len(m.Cases), Tensors: n, Bytes: total, Seconds: el.Seconds(), Replaced: bw.Replaces != nil}); err != nil {
			return nil, err
		}
	} else {
		fmt.Fprintf(w, "%s %s: %d cases, %d tensors, %s in %.1fs -> %s (digest %s)\n",
			m.Suite, m.SuiteVersion, len(m.Cases), n, humanBytes(total), el.Seconds(), dir, m.Digest[:16])
	}
	return m, nil
}

// bundleSummary is gen's --json line per bundle (and merge's --json).
type bundleSummary struct {
	OK       bool    `json:"ok"`
	Suite    string  `json:"suite"`
	Version  string  `json:"version"`
	Bundle   string  `json:"bundle"`
	Digest   string  `json:"digest"`
	Cases    int     `json:"cases"`
	Tensors  int     `json:"tensors"`
	Bytes    int64   `json:"bytes"`
	Seconds  float64 `json:"seconds,omitempty"`
	Replaced bool    `json:"replaced"`
}

// createBundle starts an atomic write of dir for suite, replacing an
// existing bundle of that suite only with overwrite, and says so first.
func createBundle(dir, suiteName string, overwrite bool, errw io.Writer) (*manifests.BundleWriter, error) {
	bw, err := manifests.CreateBundleWith(dir, manifests.CreateOptions{Suite: suiteName, Overwrite: overwrite})
	if err != nil {
		return nil, err
	}
	for _, c := range bw.Cleaned {
		fmt.Fprintf(errw, "goldset: removed stale temporary directory %s (left by an interrupted run)\n", c)
	}
	if bw.Replaces != nil {
		fmt.Fprintf(errw, "goldset: --overwrite: %s (%s %s) will be replaced when the new bundle is complete\n", dir, bw.Replaces.Suite, bw.Replaces.SuiteVersion)
	}
	return bw, nil
}

func runGenFrom(ctx context.Context, o genOptions, opts suite.Options, w, errw io.Writer) error {
	want, err := manifests.ReadManifest(o.from)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, safefile.ErrNotRegular) {
			return err // no manifest to rebuild (or a FIFO, link or directory in its place): unreadable, not a failed check
		}
		return failure{err}
	}
	if p := want.Provenance; p != nil && p.Version != toolVersion() {
		fmt.Fprintf(errw, "goldset: warning: manifest was written by goldset %s, this is %s; checking hashes anyway\n", p.Version, toolVersion())
	}
	r, err := suite.RecipeFromManifest(want)
	if err != nil {
		return err
	}
	opts.Splits = []string{manifests.SplitPublic, manifests.SplitBenchmark, manifests.SplitEdge}
	if want.HiddenCommitment != "" {
		opts.Splits = append(opts.Splits, manifests.SplitHidden)
	}
	opts.Shard = suite.Shard{}
	// The plan, its space check and --dry-run, as for named suites.
	plan, err := planGen([]*manifests.Recipe{r}, o, opts)
	if err != nil {
		return err
	}
	if err := plan.report(o, w, errw); err != nil || o.dryRun {
		return err
	}
	dir := filepath.Join(o.out, want.Suite)
	sumW := w
	if o.json {
		sumW = io.Discard // one JSON object below, its ok covering the hash check
	}
	got, err := buildBundle(ctx, r, dir, opts, o.quiet, o.json, o.noFsync, o.overwrite, sumW, errw)
	if err != nil {
		return err
	}
	if len(o.cases) > 0 {
		want = selectedCases(want, o.cases) // --case rebuilt only those
	}
	probs := suite.CompareManifests(want, got)
	if o.json {
		if probs == nil {
			probs = []manifests.Problem{}
		}
		n, _ := tensorTotals(got)
		if err := writeJSON(w, verifyResult{Bundle: dir, Digest: got.Digest, Tensors: n, OK: len(probs) == 0, Problems: probs}); err != nil {
			return err
		}
		if len(probs) > 0 {
			return errFailed
		}
		return nil
	}
	if len(probs) > 0 {
		fmt.Fprintf(w, "FAIL rebuilt bundle differs from %s in %d place(s):\n", o.from, len(probs))
		for _, p := range probs {
			fmt.Fprintf(w, "  %s\n", p)
		}
		return errFailed
	}
	if len(o.cases) > 0 {
		fmt.Fprintf(w, "OK every tensor hash of %s's %s reproduced\n", o.from, strings.Join(o.cases, ", "))
		return nil
	}
	fmt.Fprintf(w, "OK every tensor hash of %s reproduced\n", o.from)
	return nil
}

// selectedCases is a copy of m holding only the recipe cases ids names: a
// plain case by its id, a pipeline chain's stage cases by the chain's id.
func selectedCases(m *manifests.Manifest, ids []string) *manifests.Manifest {
	sel := *m
	sel.Cases, sel.Chains = nil, nil
	for _, c := range m.Cases {
		id := c.ID
		if c.Chain != nil {
			id = c.Chain.ID
		}
		if slices.Contains(ids, id) {
			sel.Cases = append(sel.Cases, c)
		}
	}
	for _, ch := range m.Chains {
		if slices.Contains(ids, ch.ID) {
			sel.Chains = append(sel.Chains, ch)
		}
	}
	return &sel
}

func regenerateProblems(ctx context.Context, m *manifests.Manifest, secretFile string, jobs int) ([]manifests.Problem, error) {
	secret, err := readSecret(secretFile)
	if err != nil {
		return nil, err
	}
	return suite.Regenerate(ctx, m, suite.Options{Jobs: jobs, Secret: secret})
}

// selectRecipes returns the recipes to build: --recipe files, the named
// embedded suites, or every embedded suite.
func selectRecipes(o genOptions, opts suite.Options) ([]*manifests.Recipe, error) {
	switch {
	case len(o.recipes) > 0 && len(o.suites) > 0:
		return nil, usagef("name embedded suites or give --recipe files, not both")
	case len(o.recipes) > 0:
		var out []*manifests.Recipe
		for _, path := range o.recipes {
			data, err := safefile.ReadFile(path, manifests.MaxRecipeBytes)
			if err != nil {
				return nil, fmt.Errorf("recipe: %w", err)
			}
			r, err := manifests.ParseRecipe(path, data)
			if err != nil {
				return nil, err
			}
			// Check every case before anything is written.
			for _, c := range r.Cases {
				if _, err := suite.EstimateBytes(c); err != nil {
					return nil, fmt.Errorf("recipe %s: %w", path, err)
				}
			}
			if _, err := suite.SelectCases(r, opts); err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		return out, nil
	case len(o.suites) == 0:
		all, err := manifests.Suites()
		if err != nil {
			return nil, err
		}
		var def []*manifests.Recipe
		for _, r := range all {
			if r.Default {
				def = append(def, r)
			}
		}
		return def, nil
	}
	var out []*manifests.Recipe
	for _, name := range o.suites {
		r, err := manifests.LookupSuite(name)
		if err != nil {
			return nil, usageError{err}
		}
		out = append(out, r)
	}
	return out, nil
}
