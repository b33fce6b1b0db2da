package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/goldset/goldset/compare"
	"github.com/goldset/goldset/internal/dtype"
	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/npy"
	"github.com/goldset/goldset/suite"
)

type compareOptions struct {
	bundle  string
	caseID  string
	outputs []string // NAME=FILE.npy
	json    bool
}

func newCompareCmd(s *streams) *cobra.Command {
	var o compareOptions
	cmd := &cobra.Command{
		Use:   "compare BUNDLE --case ID --output NAME=FILE.npy...",
		Short: "Judge a kernel's outputs against a case's goldens",
		Long: `compare loads each candidate output (any float .npy: <f2, <f4, <f8, or <u2
holding bfloat16 bits when the golden is bfloat16; integers for index
outputs), compares it with the case's golden under the tolerance recorded in
the manifest (ops.md §6) and prints a report: max abs and rel error, mismatch
count and ratio, relative L2, cosine, max ULP, NaN/Inf mismatches, worst and
first mismatching indices, the share of elements with relative error > 1e-3,
and PASS/FAIL naming the binding rule. Floating goldens are compared against
the float32 truth when the bundle has it (the exact result), in the units of
the output dtype.

Exit status: 0 when every output passes, 3 when one fails (a wrong shape or
dtype counts as a failure), 1 when the inputs cannot be read.`,
		Example: `  goldset compare out/stage2-paged --case pa-edge-g4-bf16 --output out=my_out.npy
  goldset compare out/stage2-paged --case quest-planted-k8-bf16 \
      --output selected=sel.npy --output out=o.npy --output lse=lse.npy --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.bundle = args[0]
			return runCompare(cmd.Context(), o, s.out)
		},
	}
	cmd.Flags().StringVar(&o.caseID, "case", "", "case id (required)")
	cmd.Flags().StringArrayVar(&o.outputs, "output", nil, "NAME=FILE.npy: a candidate for the golden tensor NAME (repeatable)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print the reports as JSON")
	cmd.MarkFlagRequired("case")
	cmd.MarkFlagRequired("output")
	return cmd
}

type compareResult struct {
	Bundle  string           `json:"bundle"`
	Case    string           `json:"case"`
	Status  string           `json:"status"`
	Reports []compare.Report `json:"reports"`
}

func runCompare(ctx context.Context, o compareOptions, w io.Writer) error {
	m, err := manifests.ReadManifest(o.bundle)
	if err != nil {
		return err
	}
	dir := bundleDir(o.bundle)
	c := m.Case(o.caseID)
	if c == nil {
		var ids []string
		for _, cc := range m.Cases {
			ids = append(ids, cc.ID)
		}
		return fmt.Errorf("bundle %s has no case %q (cases: %s)", o.bundle, o.caseID, strings.Join(ids, ", "))
	}
	res := compareResult{Bundle: o.bundle, Case: c.ID, Status: compare.Pass}
	for _, spec := range o.outputs {
		name, file, ok := strings.Cut(spec, "=")
		if !ok || name == "" || file == "" {
			return usagef("--output %q: want NAME=FILE.npy", spec)
		}
		rep, err := compareOutput(dir, c, name, file)
		if err != nil {
			return err
		}
		if !rep.OK() {
			res.Status = compare.Fail
		}
		res.Reports = append(res.Reports, rep)
	}
	if o.json {
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s\n", b)
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
		fmt.Fprintf(w, "\n%s\n", res.Status)
	}
	if res.Status != compare.Pass {
		return errFailed
	}
	return nil
}

// compareOutput judges one candidate file against the golden tensor name.
func compareOutput(dir string, c *manifests.Case, name, file string) (compare.Report, error) {
	gt := c.Tensor(name)
	if gt == nil || gt.Role != manifests.RoleGolden {
		return suite.JudgeOutput(dir, c, name, nil) // names the case's outputs
	}
	h, data, err := npy.ReadFile(file)
	if err != nil {
		return compare.Report{}, err
	}
	// Shape and dtype are judged before any value: a failure, not an error.
	fail := func(why string) (compare.Report, error) {
		return compare.Report{Name: name, DType: gt.DType, Shape: gt.Shape, Status: compare.Fail, Failed: []string{why}}, nil
	}
	if !slices.Equal(h.Shape, gt.Shape) {
		return fail(fmt.Sprintf("shape: candidate %s has shape %v, golden %v", file, h.Shape, gt.Shape))
	}
	if err := candidateDTypeOK(h.Descr, gt.DType); err != nil {
		return fail(fmt.Sprintf("dtype: candidate %s: %v", file, err))
	}
	gdt, _ := dtype.Parse(gt.DType) // the manifest's dtypes were checked on load
	got, err := compare.Decode(h.Descr, gdt == dtype.BFloat16 && h.Descr == npy.Uint16, data)
	if err != nil {
		return compare.Report{}, fmt.Errorf("candidate %s: %w", file, err)
	}
	return suite.JudgeOutput(dir, c, name, got)
}

// candidateDTypeOK accepts any float encoding for float goldens and an
// integer encoding for integer goldens.
func candidateDTypeOK(d npy.DType, golden string) error {
	switch golden {
	case "int32", "int64":
		if d == npy.Int32 || d == npy.Int64 {
			return nil
		}
		return fmt.Errorf("%s for an %s output (want <i4 or <i8)", d, golden)
	case "bfloat16":
		if d == npy.Uint16 || d == npy.Float32 || d == npy.Float64 {
			return nil
		}
		return fmt.Errorf("%s for a bfloat16 output (want <u2 bf16 bits, <f4 or <f8)", d)
	}
	switch d {
	case npy.Float16, npy.Float32, npy.Float64:
		return nil
	}
	return fmt.Errorf("%s for a %s output (want <f2, <f4 or <f8)", d, golden)
}
