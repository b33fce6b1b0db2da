package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/goldset/goldset/internal/dtype"
	"github.com/goldset/goldset/internal/safefile"
	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/npy"
	"github.com/goldset/goldset/suite"
)

type negativesOptions struct {
	bundle    string
	caseID    string
	out       string
	check     bool
	json      bool
	overwrite bool
	chain     string
}

func newNegativesCmd(s *streams) *cobra.Command {
	var o negativesOptions
	cmd := &cobra.Command{
		Use:   "negatives BUNDLE (--case ID | --chain ID) --out DIR",
		Short: "Write deliberately broken (and honest low-precision) outputs for a case",
		Long: `negatives writes, for one case, outputs that compare must reject: all zeros,
one selected block skipped, the wrong GQA mapping (h % Hkv), an unmasked
last-block tail, a bf16 round trip of an fp32 result, softmax without max
subtraction on outlier rows, a cache slot written to the wrong block, a wrong
Quest selection. It also writes positive controls that compare must accept:
an honest kernel accumulating in fp32 and rounding to the output dtype.
Negatives that would equal the golden for this case are left out.

Each control goes to DIR/<control>/<output>.npy in the golden's dtype, with
DIR/controls.json listing them and the expected verdict. With --check every
control is judged at once (exit 3 if compare gets any of them wrong).

With --chain ID it writes chain negatives (docs/spec.md §14): whole
candidate sets for a pipeline chain, each DIR/<control>/<stage-case>/
<output>.npy for every graded output (the goldens except where the control
breaks one stage): a wrong cache write at step s, carried into the later
caches, that compare --chain must report first at (s, reshape_and_cache); a
wrong attention over correct caches, reported at the attention stage; and in
graph mode a write through a pad slot, reported at that step's
reshape_and_cache. --check judges each and requires that first divergence.`,
		Example: `  goldset negatives out/stage2-paged --case pa-edge-g4-bf16 --out neg/
  goldset compare out/stage2-paged --case pa-edge-g4-bf16 --output out=neg/wrong_gqa/out.npy   # exit 3
  goldset negatives out/stage1-basic --case sm-4096-fp16 --out neg/ --check
  goldset negatives out/stage4-steps --chain qwen3-8b-mixed --out neg/ --check
  goldset compare out/stage4-steps --chain qwen3-8b-mixed --dir neg/<control>   # exit 3, names the stage`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.bundle = args[0]
			if (o.caseID == "") == (o.chain == "") {
				return usagef("give --case or --chain (one of them)")
			}
			if o.chain != "" {
				return runNegativesChain(cmd.Context(), o, s.out)
			}
			return runNegatives(cmd.Context(), o, s.out)
		},
	}
	cmd.Flags().StringVar(&o.caseID, "case", "", "case id (or --chain)")
	cmd.Flags().StringVar(&o.chain, "chain", "", "write the chain negatives of this pipeline chain")
	cmd.Flags().StringVarP(&o.out, "out", "o", "", "output directory (required)")
	cmd.Flags().BoolVar(&o.check, "check", false, "judge every control and fail if compare gets one wrong")
	cmd.Flags().BoolVar(&o.json, "json", false, "print the list of controls as JSON")
	cmd.Flags().BoolVar(&o.overwrite, "overwrite", false, "write into a DIR that holds controls from an earlier run")
	cmd.RegisterFlagCompletionFunc("case", completeBundleCases)
	cmd.RegisterFlagCompletionFunc("chain", completeBundleChains)
	cmd.MarkFlagRequired("out")
	markArgs(cmd, inputDir, "bundle")
	markPath(cmd, "out", output, "")
	return cmd
}

type controlResult struct {
	suite.Control
	Files   []string `json:"files"`
	Verdict string   `json:"verdict,omitempty"`
}

func runNegatives(ctx context.Context, o negativesOptions, w io.Writer) error {
	m, err := manifests.ReadManifest(o.bundle)
	if err != nil {
		return err
	}
	dir := bundleDir(o.bundle)
	c := m.Case(o.caseID)
	if c == nil {
		return usagef("bundle %s has no case %q", o.bundle, o.caseID)
	}
	if err := checkControlsDir(o.out, o.overwrite); err != nil {
		return err
	}
	ctls, err := suite.Controls(dir, c)
	if err != nil {
		return err
	}
	var res []controlResult
	wrong := 0
	for _, k := range ctls {
		r := controlResult{Control: k}
		for _, out := range k.Outputs {
			p := filepath.Join(o.out, k.Name, out.Name+".npy")
			if err := writeControl(p, out); err != nil {
				return err
			}
			r.Files = append(r.Files, p)
		}
		if o.check {
			ok, _, err := suite.Judge(dir, c, k)
			if err != nil {
				return err
			}
			r.Verdict = "FAIL"
			if ok {
				r.Verdict = "PASS"
			}
			if ok != k.Pass {
				wrong++
			}
		}
		res = append(res, r)
	}
	b, err := writeControlsJSON(o.out, res)
	if err != nil {
		return err
	}
	if o.json {
		fmt.Fprintf(w, "%s\n", b)
	} else {
		for _, r := range res {
			want := "must FAIL"
			if r.Pass {
				want = "must PASS"
			}
			v := ""
			if r.Verdict != "" {
				v = " -> " + r.Verdict
			}
			fmt.Fprintf(w, "%-20s %s%s  %s\n", r.Name, want, v, r.Note)
		}
	}
	if wrong > 0 {
		fmt.Fprintf(w, "compare misjudged %d control(s)\n", wrong)
		return errFailed
	}
	return nil
}

// maxControlsBytes bounds an earlier run's controls.json (a list of a few
// dozen controls).
const maxControlsBytes = 16 << 20

// checkControlsDir lets negatives write only into an absent or empty
// directory, or, with overwrite, one holding an earlier run's controls.json:
// it never writes over files it cannot tell are its own.
func checkControlsDir(out string, overwrite bool) error {
	ents, err := os.ReadDir(out)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(ents) == 0) {
		return nil
	}
	if err != nil {
		return err
	}
	var prev []controlResult
	// Through safefile: a FIFO planted as controls.json must not block.
	data, err := safefile.ReadFile(filepath.Join(out, "controls.json"), maxControlsBytes)
	if err != nil || json.Unmarshal(data, &prev) != nil {
		return fmt.Errorf("%s is not empty and holds no controls.json of an earlier run: refusing to write into it", out)
	}
	if !overwrite {
		return fmt.Errorf("%s holds the controls of an earlier run: pass --overwrite to replace them", out)
	}
	return nil
}

// writeControl stores values in the output's dtype, encoded by the dtype
// table (bf16 as <u2 bits).
func writeControl(path string, o suite.ControlOutput) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	dt, err := dtype.Parse(o.DType)
	if err != nil {
		return fmt.Errorf("control %s: %w", o.Name, err)
	}
	n, err := dt.StorageBytes(int64(len(o.Values)))
	if err != nil {
		return fmt.Errorf("control %s: %w", o.Name, err)
	}
	data := make([]byte, n)
	dt.Encode(data, o.Values)
	return npy.WriteFile(path, npy.Header{Descr: dt.Descr(), Shape: o.Shape}, data)
}

// writeControlsJSON writes the controls' results as DIR/controls.json (the
// file a later run with --overwrite recognises) and returns its bytes.
func writeControlsJSON(dir string, res any) ([]byte, error) {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return nil, err
	}
	return b, os.WriteFile(filepath.Join(dir, "controls.json"), append(b, '\n'), 0o644)
}
