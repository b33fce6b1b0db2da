package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/goldset/goldset/compare"
	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/suite"
)

type compareOptions struct {
	bundle  string
	caseID  string
	outputs []string // NAME=FILE.npy
	json    bool
	partial bool
	quiet   bool
	timing  string // a timing file (judge package): judged instead of, or besides, outputs
	profile string // the device profile whose floor the timing must respect
	chain   string // judge this chain instead of one case
	dir     string // a chain's candidates: DIR/<stage-case>/<output>.npy
}

func newCompareCmd(s *streams) *cobra.Command {
	var o compareOptions
	cmd := &cobra.Command{
		Use:   "compare BUNDLE (--case ID --output NAME=FILE.npy... | --chain ID [--dir DIR] [--output CASE/NAME=FILE.npy...])",
		Short: "Judge a kernel's outputs against a case's goldens",
		Long: `compare loads each candidate output (any float .npy: <f2, <f4, <f8, or <u2
holding bfloat16 bits when the golden is bfloat16; any integer .npy, |i1,
<i2, <i4, <i8, |u1, <u2, <u4 or <u8, for index outputs, every value within
the golden's dtype), compares it with the case's golden under
the tolerance recorded in the manifest (ops.md §6) and prints a report: max
abs and rel error, mismatch count and ratio, relative L2, cosine, max ULP,
NaN/Inf mismatches, worst and first mismatching indices, the share of
elements with relative error > 1e-3, and PASS/FAIL naming the binding rule.
Floating goldens are compared against the float32 truth when the bundle has
it (the exact result), in the units of the output dtype.

A candidate may also be a .safetensors file (the tensor named like the
output is judged, its dtype and shape from the file's header) or a raw .bin
file (little-endian data in the golden's stored dtype, bfloat16 as its bits,
shape from the manifest: msOpST's and Ascend kernels' outputs), so the files
'goldset export' writes and their kernels' outputs are judged directly.

Every graded output of the case must be given, each once; --partial judges
only those given and lists the ones skipped. The golden and truth files are
checked against the manifest's sha256 before they are used, and a
candidate's header (shape, dtype, byte order, memory order) is judged before
its data is read. Candidates must be regular files (no links, FIFOs or
devices).

--timing FILE judges the per-iteration kernel times the Python judge wrote
(schema goldset-timing/1, docs/spec.md §13b) against each case's recorded
work: median, a seeded bootstrap 95% interval of the median, achieved
bandwidth and FLOP rate, peak_fraction per device profile (h200, b200,
ascend910b), and FAIL for any time below max(bytes / peak bandwidth,
flops / peak FLOP/s) of the device it ran on (--profile, or the file's
profile; neither: the lowest floor of all). With --timing, --case and
--output are optional; given too, both are judged and --json prints one
object, the timing report under "timing_result", "ok" covering both.

With --chain ID it judges a pipeline chain (docs/spec.md §14): every
stage case of every sampled step, each output under its own tolerance, as
above. Candidates are --output STAGE-CASE/NAME=FILE.npy or the files
DIR/<stage-case>/<name>.npy of --dir (an --output wins). The report has a
line per stage and step, names the FIRST stage and step that diverges, and
still judges every later one (a wrong cache write at step s usually fails
the attention after it too).

Exit status: 0 when every output passes, 3 when one fails (a wrong shape or
dtype, or a golden failing its sha256, counts as a failure), 2 for an unknown
case or output name, 1 when a file cannot be read.`,
		Example: `  goldset compare out/stage2-paged --case pa-edge-g4-bf16 --output out=my_out.npy --output lse=my_lse.npy
  goldset compare out/stage1-basic --case sm-781-fp16 --output y=y.npy --partial
  goldset compare out/stage1-basic --case mm-odd-7x129x781-bf16 --output c=outputs.safetensors
  goldset compare out/stage1-basic --case mm-odd-7x129x781-bf16 --output c=c.bin
  goldset compare out/stage2-paged --case quest-planted-k8-bf16 \
      --output selected=sel.npy --output out=o.npy --output lse=lse.npy --json
  goldset compare out/stage1-basic --timing timing.json --profile h200
  goldset compare out/stage4-steps --chain qwen3-8b-mixed --dir my_outputs/
  goldset compare out/stage4-steps --chain qwen3-8b-mixed --partial \
      --output qwen3-8b-mixed.s22.unified_attention/out=o.npy`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.bundle = args[0]
			if o.profile != "" && o.timing == "" {
				return usagef("--profile is the device whose floor --timing enforces: give --timing FILE too")
			}
			if o.chain != "" {
				if o.caseID != "" {
					return usagef("give --case or --chain, not both")
				}
				if o.timing != "" {
					return usagef("--timing judges cases, not a --chain: give one or the other")
				}
				return runCompareChain(cmd.Context(), o, s.out, s.err)
			}
			if o.dir != "" {
				return usagef("--dir is for --chain; a case takes --case and --output")
			}
			return runCompare(cmd.Context(), o, s.out, s.err)
		},
	}
	cmd.Flags().StringVar(&o.caseID, "case", "", "case id (or --chain)")
	cmd.Flags().StringVar(&o.chain, "chain", "", "judge this pipeline chain: every stage and step")
	cmd.Flags().StringVar(&o.dir, "dir", "", "with --chain: candidates as DIR/<stage-case>/<output>.npy")
	cmd.Flags().StringArrayVar(&o.outputs, "output", nil, "NAME=FILE.npy: a candidate for the golden tensor NAME (repeatable)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print the reports as JSON")
	cmd.Flags().BoolVar(&o.partial, "partial", false, "judge only the outputs given (the others are listed as skipped)")
	cmd.Flags().BoolVarP(&o.quiet, "quiet", "q", false, "no progress output")
	cmd.Flags().StringVar(&o.timing, "timing", "", "FILE: judge the kernel times in FILE (goldset-timing/1 JSON)")
	cmd.Flags().StringVar(&o.profile, "profile", "", "device profile whose time floor is enforced (h200, b200, ascend910b)")
	cmd.RegisterFlagCompletionFunc("case", completeBundleCases)
	cmd.RegisterFlagCompletionFunc("chain", completeBundleChains)
	markArgs(cmd, inputDir, "bundle")
	markPath(cmd, "output", inputFile, "candidate")
	markPath(cmd, "timing", inputFile, "timing")
	markPath(cmd, "profile", notPath, "")
	markPath(cmd, "dir", inputDir, "chain-candidates")
	return cmd
}

type compareResult struct {
	OK      bool             `json:"ok"`
	Bundle  string           `json:"bundle"`
	Case    string           `json:"case"`
	Status  string           `json:"status"`
	Partial bool             `json:"partial"`
	Skipped []string         `json:"skipped"`
	Reports []compare.Report `json:"reports"`
	// Timing is compare --timing's result when outputs are judged too.
	Timing *timingResult `json:"timing_result,omitempty"`
}

// candidateSpec is one --output NAME=FILE.
type candidateSpec struct{ name, file string }

// parseOutputs checks the --output values against the case's graded outputs:
// NAME=FILE form, known names, no name twice, all of them unless partial.
func parseOutputs(c *manifests.Case, specs []string, partial bool) ([]candidateSpec, []string, error) {
	var graded []string
	for _, t := range c.Tensors {
		if t.Role == manifests.RoleGolden {
			graded = append(graded, t.Name)
		}
	}
	if len(graded) == 0 {
		if vi, ok := suite.CaseVariant(c); ok {
			// gen --variants keeps no golden, only sampled rows.
			return nil, nil, usagef("case %s is replay-proof variant %d of %s: it holds no golden, only sampled rows, which the Python judge checks (goldset.judge_variants, docs/spec.md §13d); compare %s in its own bundle", c.ID, vi.Index, vi.VariantOf, vi.VariantOf)
		}
	}
	var out []candidateSpec
	given := map[string]bool{}
	for _, spec := range specs {
		name, file, ok := strings.Cut(spec, "=")
		if !ok || name == "" || file == "" {
			return nil, nil, usagef("--output %q: want NAME=FILE.npy", spec)
		}
		if !slices.Contains(graded, name) {
			return nil, nil, usagef("case %s has %v %q (outputs: %s)", c.ID, suite.ErrNoOutput, name, strings.Join(graded, ", "))
		}
		if given[name] {
			return nil, nil, usagef("--output %s given twice", name)
		}
		given[name] = true
		out = append(out, candidateSpec{name, file})
	}
	var skipped []string
	for _, g := range graded {
		if !given[g] {
			skipped = append(skipped, g)
		}
	}
	if len(skipped) > 0 && !partial {
		return nil, nil, usagef("case %s has %d graded outputs; missing --output for %s (or pass --partial to judge only some)", c.ID, len(graded), strings.Join(skipped, ", "))
	}
	return out, skipped, nil
}

// readJudgedManifest reads the manifest of the bundle compare judges
// against: an invalid or wrong-schema manifest is a failed judgement (exit
// 3), an unreadable one an input error (exit 1).
func readJudgedManifest(bundle string) (*manifests.Manifest, error) {
	m, err := manifests.ReadManifest(bundle)
	if errors.Is(err, manifests.ErrInvalid) || errors.Is(err, manifests.ErrSchema) {
		return nil, failure{err}
	}
	return m, err
}

func runCompare(ctx context.Context, o compareOptions, w, errw io.Writer) error {
	m, err := readJudgedManifest(o.bundle)
	if err != nil {
		return err
	}
	if o.timing != "" && o.caseID == "" && len(o.outputs) == 0 {
		return runTiming(o, m, w)
	}
	// With outputs too, the timing file is judged first (a bad one is
	// named before any candidate is read) and reported inside the one
	// result: --json prints a single object whose ok covers both.
	var timing *timingResult
	if o.timing != "" {
		if timing, err = judgeTiming(o, m); err != nil {
			return err
		}
	}
	// cobra's wording for a missing required flag (--timing makes both optional)
	if o.caseID == "" {
		return usagef(`required flag(s) "case" not set (or judge times with --timing FILE)`)
	}
	if len(o.outputs) == 0 {
		return usagef(`required flag(s) "output" not set (or judge times with --timing FILE)`)
	}
	dir := bundleDir(o.bundle)
	c := m.Case(o.caseID)
	if c == nil {
		var ids []string
		for _, cc := range m.Cases {
			ids = append(ids, cc.ID)
		}
		return usagef("bundle %s has no case %q (cases: %s)", o.bundle, o.caseID, strings.Join(ids, ", "))
	}
	specs, skipped, err := parseOutputs(c, o.outputs, o.partial)
	if err != nil {
		return err
	}
	res := compareResult{Bundle: o.bundle, Case: c.ID, Status: compare.Pass, Partial: len(skipped) > 0, Skipped: skipped}
	if res.Skipped == nil {
		res.Skipped = []string{}
	}
	for _, sp := range specs {
		rep, err := compareOutput(ctx, dir, c, sp.name, sp.file, newByteProgress(errw, "compare "+sp.name, o.quiet || o.json))
		if err != nil {
			return err
		}
		if !rep.OK() {
			res.Status = compare.Fail
		}
		res.Reports = append(res.Reports, rep)
	}
	res.Timing = timing
	res.OK = res.Status == compare.Pass && (timing == nil || timing.OK)
	if o.json {
		if err := writeJSON(w, res); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(w, "case %s (%s) of %s\n", c.ID, c.Op, o.bundle)
		for _, r := range res.Reports {
			fmt.Fprintln(w)
			if len(r.Checks) == 0 && len(r.Failed) > 0 {
				// Judged before any value was compared (shape, dtype).
				fmt.Fprintf(w, "%s: %s\n", r.Name, r.Status)
				for _, f := range r.Failed {
					fmt.Fprintf(w, "  %s\n", f)
				}
				continue
			}
			r.WriteText(w)
		}
		if len(skipped) > 0 {
			fmt.Fprintf(w, "\nskipped (--partial, not judged): %s\n", strings.Join(skipped, ", "))
		}
		fmt.Fprintf(w, "\n%s\n", res.Status)
		if timing != nil {
			fmt.Fprintln(w)
			writeTimingText(w, *timing)
		}
	}
	if !res.OK {
		return errFailed
	}
	return nil
}

// compareOutput judges one candidate file against the golden tensor name.
// The golden (and truth) are read through manifests.LoadTensor, which
// refuses a file whose sha256 is not the manifest's.
func compareOutput(ctx context.Context, dir string, c *manifests.Case, name, file string, pr *byteProgress) (compare.Report, error) {
	gt := c.Tensor(name)
	got, err := compare.ReadCandidateTensor(ctx, file, name, gt.DType, gt.Shape, pr.update)
	pr.finish()
	if errors.Is(err, compare.ErrCandidate) {
		// Shape and dtype are judged before any value: a failure, not an error.
		return compare.Report{Name: name, DType: gt.DType, Shape: gt.Shape, Status: compare.Fail, Failed: []string{err.Error()}}, nil
	}
	if err != nil {
		return compare.Report{}, err
	}
	rep, err := suite.JudgeOutput(dir, c, name, got)
	if errors.Is(err, manifests.ErrMismatch) {
		return rep, failure{fmt.Errorf("the bundle's reference for %s cannot be trusted: %w", name, err)}
	}
	return rep, err
}
