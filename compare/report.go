package compare

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/goldset/goldset/internal/jsonnum"
)

// Float is a float64 whose JSON form survives non-finite values: numbers
// as usual, NaN and infinities as the strings "NaN", "+Inf", "-Inf"
// (internal/jsonnum, the one form of every goldset --json report).
type Float = jsonnum.Float

// Check is one rule of a tolerance, evaluated.
type Check struct {
	Rule       string `json:"rule"`       // nonfinite, elementwise, row_rel_l2, row_sum, exact, set
	Formula    string `json:"formula"`    // the rule with its numbers
	Violations int64  `json:"violations"` // elements or rows breaking it
	Of         int64  `json:"of"`         // elements or rows it applies to
	Unit       string `json:"unit"`       // "elements" or "rows"
	Observed   Float  `json:"observed"`   // worst value seen (ratio, rel L2, |sum-1|, ...)
	Pass       bool   `json:"pass"`
	// Informative checks are reported beside the graded ones and never
	// change the status (GPU MODE's allclose next to the MXFP4 bound).
	Informative bool `json:"informative,omitempty"`
}

// String renders the check in one line, e.g. "elementwise |c-g| <= ...
// violated at 12 of 4096 elements".
func (c Check) String() string {
	if c.Pass {
		return fmt.Sprintf("%s %s holds at all %d %s", c.Rule, c.Formula, c.Of, c.Unit)
	}
	return fmt.Sprintf("%s %s violated at %d of %d %s", c.Rule, c.Formula, c.Violations, c.Of, c.Unit)
}

// Status values.
const (
	Pass = "PASS"
	Fail = "FAIL"
)

// Report is the judgement of one candidate output against its golden.
// Indices are multi-dimensional (row-major, into Shape; in set mode, into
// the leading axes that index rows). Metrics ignore ungraded (masked)
// elements and, except the NaN/Inf counts, pairs where either side is not
// finite.
type Report struct {
	Name   string    `json:"name,omitempty"`
	Mode   string    `json:"mode"`
	DType  string    `json:"dtype"`
	Shape  []int64   `json:"shape"`
	Graded int64     `json:"graded"` // elements graded (not masked out)
	Rows   int64     `json:"rows"`
	Status string    `json:"status"`           // PASS or FAIL
	Failed []string  `json:"failed,omitempty"` // the binding rules, as Check.String
	Checks []Check   `json:"checks"`
	Tol    Tolerance `json:"tolerance"`

	// Mismatches: elements violating the elementwise (or exact) rule or
	// the NaN/Inf rule; in set mode, rows whose sets differ.
	MismatchCount int64   `json:"mismatch_count"`
	MismatchRatio Float   `json:"mismatch_ratio"`
	MismatchUnit  string  `json:"mismatch_unit"`
	FirstMismatch []int64 `json:"first_mismatch_index,omitempty"`

	// Worst element: largest |c-g|/allowed (allclose), largest |c-g|
	// (exact; non-finite mismatches rank first), largest symmetric
	// difference (set, a row).
	WorstIndex     []int64 `json:"worst_index,omitempty"`
	WorstGolden    Float   `json:"worst_golden"`
	WorstCandidate Float   `json:"worst_candidate"`
	WorstRatio     Float   `json:"worst_ratio"` // allclose: |c-g| / allowed at WorstIndex (<= 1 within tolerance)

	MaxAbs      Float   `json:"max_abs"`
	MaxAbsIndex []int64 `json:"max_abs_index,omitempty"`
	// MaxRel is max |c-g| / max(|g|, RelFloor); RelFloor is the smallest
	// normal of the output dtype, below which the format has no fixed
	// relative precision.
	MaxRel   Float  `json:"max_rel"`
	RelFloor Float  `json:"rel_floor"`
	MaxULP   uint64 `json:"max_ulp"` // both sides rounded to the output dtype; 0 for non-float dtypes
	// DoubleThousandth is the share of graded elements whose relative
	// error (same denominator as MaxRel) exceeds 1e-3, non-finite
	// mismatches included: the Ascend precision metric.
	DoubleThousandth Float `json:"double_thousandth"`

	// RelL2 and Cosine are NaN when a non-finite value sits where the
	// golden's is finite or the reverse (the nonfinite rule's violations).
	RelL2         Float   `json:"rel_l2"` // ||c-g|| / ||g|| over the whole tensor
	WorstRowRelL2 Float   `json:"worst_row_rel_l2"`
	WorstRow      []int64 `json:"worst_row_index,omitempty"`
	Cosine        Float   `json:"cosine"` // <c,g>/(||c|| ||g||); 1 if both zero, 0 if one is

	NaNMismatch     int64 `json:"nan_mismatch"`      // NaN on one side only
	InfMismatch     int64 `json:"inf_mismatch"`      // Inf on either side, not matched by the same Inf
	InfSignMismatch int64 `json:"inf_sign_mismatch"` // of which: +Inf against -Inf

	// RowSumMaxErr is max |sum(c row) - 1| when the tolerance checks row sums.
	RowSumMaxErr *Float `json:"row_sum_max_err,omitempty"`

	// Set mode: values missing from, and extra in, the candidate rows.
	SetMissing int64 `json:"set_missing,omitempty"`
	SetExtra   int64 `json:"set_extra,omitempty"`
}

// OK reports whether the candidate passed.
func (r Report) OK() bool { return r.Status == Pass }

// WriteText writes a short human-readable rendering of r.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	name := r.Name
	if name == "" {
		name = "output"
	}
	fmt.Fprintf(&b, "%s %s %s %s: %s\n", name, fmtIndex(r.Shape), r.DType, r.Mode, r.Status)
	for _, c := range r.Checks {
		mark := "ok  "
		if !c.Pass {
			mark = "FAIL"
		}
		fmt.Fprintf(&b, "  %s %s\n", mark, c)
	}
	if r.Mode == ModeSet {
		fmt.Fprintf(&b, "  rows differing %d/%d, values missing %d, extra %d", r.MismatchCount, r.Rows, r.SetMissing, r.SetExtra)
		if r.FirstMismatch != nil {
			fmt.Fprintf(&b, ", first row %s, worst row %s", fmtIndex(r.FirstMismatch), fmtIndex(r.WorstIndex))
		}
		b.WriteByte('\n')
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "  mismatches %d/%d (%.3g)", r.MismatchCount, r.Graded, float64(r.MismatchRatio))
	if r.FirstMismatch != nil {
		fmt.Fprintf(&b, ", first %s", fmtIndex(r.FirstMismatch))
	}
	if r.WorstIndex != nil {
		fmt.Fprintf(&b, ", worst %s: golden %.6g candidate %.6g", fmtIndex(r.WorstIndex), float64(r.WorstGolden), float64(r.WorstCandidate))
		if r.Mode == ModeAllclose {
			fmt.Fprintf(&b, " (%.3gx allowed)", float64(r.WorstRatio))
		}
	}
	b.WriteByte('\n')
	fmt.Fprintf(&b, "  max_abs %.3g max_rel %.3g (|g| floored at %.3g) max_ulp %d double_thousandth %.3g\n",
		float64(r.MaxAbs), float64(r.MaxRel), float64(r.RelFloor), r.MaxULP, float64(r.DoubleThousandth))
	fmt.Fprintf(&b, "  rel_l2 %.3g worst_row_rel_l2 %.3g", float64(r.RelL2), float64(r.WorstRowRelL2))
	if r.WorstRow != nil {
		fmt.Fprintf(&b, " at %s", fmtIndex(r.WorstRow))
	}
	fmt.Fprintf(&b, " cosine %.9g", float64(r.Cosine))
	if r.RowSumMaxErr != nil {
		fmt.Fprintf(&b, " row_sum_err %.3g", float64(*r.RowSumMaxErr))
	}
	b.WriteByte('\n')
	if r.NaNMismatch+r.InfMismatch > 0 {
		fmt.Fprintf(&b, "  nan_mismatch %d inf_mismatch %d (sign %d)\n", r.NaNMismatch, r.InfMismatch, r.InfSignMismatch)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// fmtIndex renders a multi-dimensional index or shape as "[3, 17, 5]".
func fmtIndex(ix []int64) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, v := range ix {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatInt(v, 10))
	}
	b.WriteByte(']')
	return b.String()
}
