package suite

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/goldset/goldset/compare"
	"github.com/goldset/goldset/manifests"
)

// Margin is the discrimination margin of a tolerance family for one
// stored dtype (docs/spec.md §13c): the err/bound of the nearest wrong
// algorithm among the negative controls (a half-precision accumulation,
// no max subtraction, a bf16 dress-up of an fp8 or fp32 result, a naive
// decode, a wrong block, ...), measured on the tiny recipes' cases. A
// margin of 5 means the closest wrong kernel's error is 5 times what the
// rule allows; below WeakMargin the family barely tells it from an
// honest kernel.
type Margin struct {
	Family string `json:"family"`
	DType  string `json:"dtype"`
	// Ratio is the smallest largest-err/bound over the negative controls
	// that change the output (+Inf, written "Inf": only non-finite
	// mismatches); exact and set families have none (0, Exact).
	Ratio   compare.Float `json:"ratio"`
	Exact   bool          `json:"exact,omitempty"`
	Control string        `json:"control,omitempty"` // the nearest wrong algorithm
	Op      string        `json:"op,omitempty"`
	Output  string        `json:"output,omitempty"`
	Case    string        `json:"case,omitempty"`
	Weak    bool          `json:"weak"` // Ratio < WeakMargin
}

// WeakMargin is the margin below which a family is reported as weak.
const WeakMargin = 2

//go:embed margins.json
var marginsJSON []byte

// Margins returns the recorded margins (suite/margins.json, refreshed by
// go test ./suite -run TestMargins -update), sorted by family and dtype.
func Margins() ([]Margin, error) {
	var ms []Margin
	if err := json.Unmarshal(marginsJSON, &ms); err != nil {
		return nil, fmt.Errorf("suite: margins.json: %w", err)
	}
	return ms, nil
}

// ratioRules are the allclose rules whose Observed is err/bound.
var ratioRules = []string{"elementwise", "row_rel_l2", "dsa_scaled", "dsa_lse"}

// measureMargins judges every negative control of every case of the
// bundle in dir (manifest m) and folds the nearest wrong algorithm of
// each (family, dtype) into acc.
func measureMargins(dir string, m *manifests.Manifest, acc map[[2]string]*Margin) error {
	for i := range m.Cases {
		c := &m.Cases[i]
		ctls, err := Controls(dir, c)
		if err != nil {
			return err
		}
		o, _ := lookupOp(c)
		// The case's family override, planned once for all its reports.
		var family func(string) (compare.Family, bool)
		if pl, err := planCase(manifests.RecipeCase{ID: c.ID, Op: c.Op, Params: c.Params}); err == nil {
			family = pl.family
		}
		if o.probes != nil {
			pr, err := o.probes(caseData{dir: dir, c: c})
			if err != nil {
				return fmt.Errorf("probes of case %s: %w", c.ID, err)
			}
			ctls = append(ctls, pr...)
		}
		for _, ctl := range ctls {
			if ctl.Pass {
				continue
			}
			_, reps, err := Judge(dir, c, ctl)
			if err != nil {
				return fmt.Errorf("case %s control %s: %w", c.ID, ctl.Name, err)
			}
			for _, r := range reps {
				fam := outputFamily(o, family, r.Name)
				key := [2]string{fam, r.DType}
				mg := acc[key]
				if mg == nil {
					mg = &Margin{Family: fam, DType: r.DType, Ratio: compare.Float(math.Inf(1)), Exact: true}
					acc[key] = mg
				}
				q, graded, changed := reportRatio(r)
				if !graded || !changed {
					continue // an exact or set rule (any difference fails), or untouched
				}
				mg.Exact = false
				if q < float64(mg.Ratio) || mg.Control == "" {
					mg.Ratio, mg.Control, mg.Op, mg.Output, mg.Case = compare.Float(q), ctl.Name, c.Op, r.Name, c.ID
				}
			}
		}
	}
	return nil
}

// reportRatio is a report's largest err/bound over its ratio rules,
// whether it has one (exact and set rules have none) and whether the
// candidate differs from the golden. Non-finite mismatches, or a
// difference a zero allowance forbids, are +Inf.
func reportRatio(r compare.Report) (q float64, graded, changed bool) {
	changed = r.MaxAbs > 0 || r.MismatchCount > 0
	for _, ch := range r.Checks {
		if ch.Informative {
			continue
		}
		if ch.Rule == "nonfinite" {
			if ch.Violations > 0 {
				q, changed = math.Inf(1), true
			}
			continue
		}
		if !slices.Contains(ratioRules, ch.Rule) {
			continue
		}
		graded = true
		if o := float64(ch.Observed); o > q || math.IsNaN(o) {
			q = o
		}
	}
	if changed && q == 0 {
		q = math.Inf(1)
	}
	return q, graded, changed
}

// outputFamily is the family an output of a case is judged with (the
// case's override family, when set, else the op table's).
func outputFamily(o *op, family func(string) (compare.Family, bool), name string) string {
	out, ok := o.output(name)
	if !ok {
		return "?"
	}
	if family != nil {
		if f, ok := family(name); ok {
			return f.Name()
		}
	}
	return out.tol.Name()
}

// sortedMargins flattens acc, marking the weak ones.
func sortedMargins(acc map[[2]string]*Margin) []Margin {
	var out []Margin
	for _, m := range acc {
		if m.Exact {
			m.Ratio = 0
		} else if m.Control != "" {
			m.Weak = float64(m.Ratio) < WeakMargin
		}
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Family != out[j].Family {
			return out[i].Family < out[j].Family
		}
		return out[i].DType < out[j].DType
	})
	return out
}
