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
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

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
}

func newGenCmd(s *streams) *cobra.Command {
	var o genOptions
	cmd := &cobra.Command{
		Use:   "gen [SUITE...]",
		Short: "Generate bundles (inputs, goldens, manifest) for embedded suites",
		Long: `gen builds the named embedded suites (all of them when none is named) into
OUT/<suite>/, each a bundle of .npy files and a manifest.json. The same recipe
gives byte-identical bundles on every run, machine and --jobs value.

Bundles are written atomically: into a temporary directory beside the target,
renamed into place when complete. Ctrl-C leaves no partial bundle.

With --from MANIFEST it rebuilds the bundle a manifest describes, from the
manifest alone, and checks every sha256 (exit 3 naming what differs).

Hidden cases (split "hidden") take their seeds from HMAC-SHA256(secret, case
id); the secret comes from --secret-file or $GOLDSET_HIDDEN_SECRET, and the
manifest publishes sha256(secret) as a commitment.

Sharding: --shard i/n builds every n-th case starting at the i-th (1-based);
when --shard is not given, $JOB_COMPLETION_INDEX (Kubernetes Indexed Job) or
$SLURM_ARRAY_TASK_ID with $GOLDSET_SHARDS set gives it. Join shards with
'goldset merge'.`,
		Example: `  goldset gen                                   # every embedded suite into ./out
  goldset gen stage1-basic --out /data/goldset
  goldset gen stage2-paged --split public --jobs 2 --quiet
  goldset gen --from shared/manifest.json --out rebuilt
  goldset gen --recipe my-suite.json --out out
  goldset gen stage2-paged --shard 2/4 --out shards`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.suites = args
			o.command = strings.Join(os.Args, " ")
			return runGen(cmd.Context(), o, s.out, s.err)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.out, "out", "o", "out", "output directory; each suite goes to OUT/<suite>")
	f.StringSliceVar(&o.splits, "split", nil, "splits to build: public, benchmark, hidden (default public,benchmark; hidden too with a secret)")
	f.StringSliceVar(&o.cases, "case", nil, "build only these case ids (one suite only)")
	f.IntVarP(&o.jobs, "jobs", "j", runtime.GOMAXPROCS(0), "cases built at once (output never depends on it)")
	f.StringVar(&o.compress, "compress", "", `compress tensors: "zstd" (hashes stay over the .npy bytes)`)
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress output")
	f.BoolVar(&o.json, "json", false, "print a JSON summary of each bundle on stdout")
	f.StringVar(&o.from, "from", "", "rebuild the bundle described by this manifest and check its hashes")
	f.StringVar(&o.shard, "shard", "", "build shard i of n (1-based, e.g. 2/4)")
	f.StringVar(&o.secretFile, "secret-file", "", "file holding the secret for hidden cases")
	f.StringArrayVar(&o.recipes, "recipe", nil, "build a suite recipe from this JSON file instead of an embedded one (repeatable)")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile to this file (diagnostics)")
	f.StringVar(&o.traceFile, "trace", "", "write a Go execution trace to this file (diagnostics: go tool trace FILE)")
	f.BoolVar(&o.noFsync, "no-fsync", false, "skip fsync before the final rename (faster; a power loss may leave an incomplete bundle, a crash still cannot)")
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
		if idx == "" || n == "" {
			return suite.Shard{}, nil
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

func readSecret(file string) ([]byte, error) {
	if file != "" {
		b, err := os.ReadFile(file)
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
	if len(o.cases) > 0 && len(o.suites) != 1 && o.from == "" {
		return usagef("--case needs exactly one suite")
	}
	opts := suite.Options{
		Splits: o.splits, Cases: o.cases, Jobs: o.jobs, Compress: o.compress == "zstd",
		Secret: secret, Shard: shard, Provenance: provenance(o.command),
	}
	if o.from != "" {
		if len(o.suites) > 0 {
			return usagef("--from rebuilds one manifest; do not name suites too")
		}
		return runGenFrom(ctx, o, opts, w, errw)
	}
	recipes, err := selectRecipes(o, opts)
	if err != nil {
		return err
	}
	for _, r := range recipes {
		dir := filepath.Join(o.out, r.Name)
		if shard.Count > 1 {
			dir = filepath.Join(o.out, fmt.Sprintf("%s.shard-%d-of-%d", r.Name, shard.Index+1, shard.Count))
		}
		if _, err := buildBundle(ctx, r, dir, opts, o.quiet, o.json, o.noFsync, w, errw); err != nil {
			return err
		}
	}
	return nil
}

// buildBundle builds one recipe into dir atomically and reports it.
func buildBundle(ctx context.Context, r *manifests.Recipe, dir string, opts suite.Options, quiet, asJSON, noSync bool, w, errw io.Writer) (*manifests.Manifest, error) {
	bw, err := manifests.CreateBundle(dir)
	if err != nil {
		return nil, err
	}
	bw.NoSync = noSync
	defer bw.Abort()
	for _, c := range bw.Cleaned {
		fmt.Fprintf(errw, "goldset: removed stale temporary directory %s (left by an interrupted run)\n", c)
	}
	pr := newProgress(errw, r.Name, quiet)
	opts.Progress = pr.update
	start := time.Now()
	m, err := suite.Build(ctx, r, suite.BundleSink{W: bw}, opts)
	pr.finish()
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil, fmt.Errorf("interrupted: no bundle written at %s", dir)
		}
		return nil, err
	}
	if err := bw.Commit(m); err != nil {
		return nil, err
	}
	var total int64
	n := 0
	for _, c := range m.Cases {
		for _, t := range c.Tensors {
			total += t.Bytes
			n++
		}
	}
	el := time.Since(start)
	if asJSON {
		fmt.Fprintf(w, `{"suite":%q,"version":%q,"bundle":%q,"digest":%q,"cases":%d,"tensors":%d,"bytes":%d,"seconds":%.3f}`+"\n",
			m.Suite, m.SuiteVersion, dir, m.Digest, len(m.Cases), n, total, el.Seconds())
	} else {
		fmt.Fprintf(w, "%s %s: %d cases, %d tensors, %s in %.1fs -> %s (digest %s)\n",
			m.Suite, m.SuiteVersion, len(m.Cases), n, humanBytes(total), el.Seconds(), dir, m.Digest[:16])
	}
	return m, nil
}

func runGenFrom(ctx context.Context, o genOptions, opts suite.Options, w, errw io.Writer) error {
	want, err := manifests.ReadManifest(o.from)
	if err != nil {
		return err
	}
	if p := want.Provenance; p != nil && p.Version != toolVersion() {
		fmt.Fprintf(errw, "goldset: warning: manifest was written by goldset %s, this is %s; checking hashes anyway\n", p.Version, toolVersion())
	}
	r, err := suite.RecipeFromManifest(want)
	if err != nil {
		return err
	}
	opts.Splits = []string{manifests.SplitPublic, manifests.SplitBenchmark}
	if want.HiddenCommitment != "" {
		opts.Splits = append(opts.Splits, manifests.SplitHidden)
	}
	opts.Shard = suite.Shard{}
	dir := filepath.Join(o.out, want.Suite)
	got, err := buildBundle(ctx, r, dir, opts, o.quiet, o.json, o.noFsync, w, errw)
	if err != nil {
		return err
	}
	probs := suite.CompareManifests(want, got)
	if len(probs) > 0 {
		fmt.Fprintf(w, "FAIL rebuilt bundle differs from %s in %d place(s):\n", o.from, len(probs))
		for _, p := range probs {
			fmt.Fprintf(w, "  %s\n", p)
		}
		return errFailed
	}
	fmt.Fprintf(w, "OK every tensor hash of %s reproduced\n", o.from)
	return nil
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
			data, err := os.ReadFile(path)
			if err != nil {
				return nil, err
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
		return manifests.Suites()
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
