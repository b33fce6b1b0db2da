package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/suite"
)

// chainControlResult is one chain negative as written and judged.
type chainControlResult struct {
	Name  string `json:"name"`
	Note  string `json:"note"`
	Dir   string `json:"dir"`
	Step  int    `json:"step"`  // where compare --chain must name the first divergence
	Stage int    `json:"stage"` //
	Case  string `json:"case"`
	// Reported is the first divergence compare found (--check).
	Reported string `json:"reported,omitempty"`
	Pass     bool   `json:"pass"` // always false: a negative
}

func runNegativesChain(ctx context.Context, o negativesOptions, w io.Writer) error {
	m, err := manifests.ReadManifest(o.bundle)
	if err != nil {
		return err
	}
	if _, err := suite.LookupChain(m, o.chain); err != nil {
		return usagef("%s: %v", o.bundle, err)
	}
	dir := bundleDir(o.bundle)
	if err := checkControlsDir(o.out, o.overwrite); err != nil {
		return err
	}
	ctls, err := suite.ChainControls(dir, m, o.chain)
	if err != nil {
		return err
	}
	var res []chainControlResult
	wrong := 0
	for _, k := range ctls {
		if err := ctx.Err(); err != nil {
			return err
		}
		r := chainControlResult{Name: k.Name, Note: k.Note, Dir: filepath.Join(o.out, k.Name), Step: k.Step, Stage: k.Stage, Case: k.Case}
		get := k.Candidates(dir)
		// The values written are the ones --check judges: kept, so each
		// stored golden is read once per control, not again by JudgeChain.
		written := map[string][]float64{}
		for _, c := range m.ChainCases(o.chain) {
			for _, name := range suite.GradedOutputs(c) {
				v, err := get(c, name)
				if err != nil {
					return err
				}
				written[c.ID+"/"+name] = v
				t := c.Tensor(name)
				if err := writeControl(filepath.Join(r.Dir, c.ID, name+".npy"), suite.ControlOutput{Name: name, DType: t.DType, Shape: t.Shape, Values: v}); err != nil {
					return err
				}
			}
		}
		if o.check {
			v, err := suite.JudgeChain(dir, m, o.chain, func(c *manifests.Case, name string) ([]float64, error) {
				return written[c.ID+"/"+name], nil
			})
			if err != nil {
				return err
			}
			r.Reported = "none"
			if v.First != nil {
				r.Reported = fmt.Sprintf("step %d stage %d (%s)", v.First.Step, v.First.Stage, v.First.Op)
			}
			if v.OK() || v.First == nil || v.First.Case != k.Case {
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
			v := ""
			if r.Reported != "" {
				v = " -> reported at " + r.Reported
			}
			fmt.Fprintf(w, "%-40s must fail first at step %d stage %d%s\n  %s\n", r.Name, r.Step, r.Stage, v, r.Note)
		}
	}
	if wrong > 0 {
		fmt.Fprintf(w, "compare misplaced %d chain negative(s)\n", wrong)
		return errFailed
	}
	return nil
}
