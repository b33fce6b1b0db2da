package compare

import (
	"fmt"
	"math"

	"github.com/goldset/goldset/golden"
)

// ModeDSA judges the outputs of the DeepSeek Sparse Attention ops
// (docs/spec.md §8) by Tolerance.DSA.Rule. Their bounds need per-row facts
// of the case (the row scale A, max|v_sel|, the golden scores and block
// table), which the caller passes as Options.DSA.
const ModeDSA = "dsa"

// The DSA rules (DSARule.Rule).
const (
	// DSARuleSelection: the tie-band rule on a top-k index row
	// (golden.DSASelectionCheck), FlashInfer-Bench's sorted-score
	// difference reported as max_abs, never binding.
	DSARuleSelection = "selection"
	// DSARuleScaled: |c-g| <= RTol*|g| + Scale*rowScale per element, the
	// NaN/Inf pattern equal (the indexer logits' -inf mask), optionally
	// the per-row relative L2, and bit-exact rows where Options.DSA.Exact.
	DSARuleScaled = "scaled"
	// DSARuleLSE: |c-g| <= RTol*max(|g|, 1); where the golden is -inf (an
	// empty row) either infinity passes, and only there.
	DSARuleLSE = "lse"
)

// DSARule holds the numbers of a DSA rule (Tolerance.DSA).
type DSARule struct {
	Rule string `json:"rule"`
	// EpsRel is the tie band of selection rows as a multiple of A, by the
	// dtype the kernel's logits are stored in (float32 2^-12, bfloat16
	// 2^-7); Options.DSA.LogitsDType picks the entry.
	EpsRel map[string]float64 `json:"eps_rel,omitempty"`
	// RTol, Scale, RowRelL2: the scaled and lse rules' numbers.
	RTol     float64 `json:"rtol,omitempty"`
	Scale    float64 `json:"scale,omitempty"`
	RowRelL2 float64 `json:"row_rel_l2,omitempty"`
	// RowScale names what Options.DSA.RowScale holds ("A", "max|v_sel|").
	RowScale string `json:"row_scale,omitempty"`
}

func (d *DSARule) validate() error {
	if d == nil {
		return fmt.Errorf("compare: %w: mode %q needs its dsa rule", ErrTolerance, ModeDSA)
	}
	switch d.Rule {
	case DSARuleSelection, DSARuleScaled, DSARuleLSE:
	default:
		return fmt.Errorf("compare: %w: dsa rule %q", ErrTolerance, d.Rule)
	}
	for k, v := range d.EpsRel {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("compare: %w: dsa eps_rel[%s] = %v", ErrTolerance, k, v)
		}
	}
	for _, v := range []float64{d.RTol, d.Scale, d.RowRelL2} {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("compare: %w: dsa rule %s: limit %v must be finite and >= 0", ErrTolerance, d.Rule, v)
		}
	}
	return nil
}

// DSAData is what a DSA rule needs of the case, one entry per row of the
// output (a row: its last axis).
type DSAData struct {
	// Selection: the golden rows (Want, Scores, Info, Space, BlockTable,
	// PS; Got is filled from the candidate), the offset subtracted from
	// both sides' indices (the ragged indexer's ks), and the dtype of the
	// kernel's logits, which picks EpsRel.
	Rows        []golden.DSASelectionRow
	Offsets     []int32
	LogitsDType string
	// Scaled: the row scale (A for logits, max|v_sel| for attention) and
	// the rows graded bit for bit (attention rows with one valid index).
	RowScale []float64
	Exact    []bool
}

// DSA families (docs/spec.md §8). The selection and logits bands are the
// spec's proposals, kept after the H200 run of docs/dsa-h200.log.
var (
	// DSASelection: tie-band selection rule on top-k index rows.
	DSASelection = Family{name: "dsa_selection", mode: ModeDSA, dsa: &DSARule{Rule: DSARuleSelection,
		EpsRel: map[string]float64{Float32: 0x1p-12, BFloat16: 0x1p-7}}}
	// DSALogits: |d| <= eps_rel*A + 2^-20*|ref|, eps_rel by the logits'
	// dtype, the -inf mask equal.
	DSALogits = Family{name: "dsa_logits", mode: ModeDSA, dsa: &DSARule{Rule: DSARuleScaled, RTol: 0x1p-20, RowScale: "A"}}
	// DSAAttention: |d| <= 2^-7*|ref| + 2^-8*max|v_sel| and per-row rel L2;
	// one valid index: the V row bit for bit.
	DSAAttention = Family{name: "dsa_attention", mode: ModeDSA, dsa: &DSARule{Rule: DSARuleScaled, RTol: 0x1p-7, Scale: 0x1p-8, RowRelL2: 0x1p-7, RowScale: "max|v_sel|"}}
	// DSALSE: |d| <= 2^-13*max(|ref|, 1).
	DSALSE = Family{name: "dsa_lse", mode: ModeDSA, dsa: &DSARule{Rule: DSARuleLSE, RTol: 0x1p-13}}
)

// dsaLogitsEps is the logits band by stored dtype (the selection's eps_rel).
var dsaLogitsEps = map[string]float64{Float32: 0x1p-12, BFloat16: 0x1p-7}

// dsaTolerance is Family.Tolerance for ModeDSA families.
func (f Family) dsaTolerance(dt string) (Tolerance, error) {
	r := *f.dsa
	basis := f.name
	switch {
	case r.Rule == DSARuleSelection:
		if dt != Int32 {
			return Tolerance{}, fmt.Errorf("compare: %w: family %s grades int32 index rows, not %s", ErrTolerance, f.name, dt)
		}
		r.EpsRel = map[string]float64{Float32: f.dsa.EpsRel[Float32], BFloat16: f.dsa.EpsRel[BFloat16]}
	case r.RowScale == "A":
		eps, ok := dsaLogitsEps[dt]
		if !ok {
			return Tolerance{}, fmt.Errorf("compare: %w: family %s has no row for %s", ErrTolerance, f.name, dt)
		}
		r.Scale = eps
		basis += "/" + dt
	default:
		if !formatOf(dt).isFloat {
			return Tolerance{}, fmt.Errorf("compare: %w: family %s grades floating outputs, not %s", ErrTolerance, f.name, dt)
		}
	}
	if f.basis != "" {
		basis = f.basis
	}
	return Tolerance{Mode: ModeDSA, DType: dt, DSA: &r, Basis: basis}, nil
}

// dsa runs ModeDSA.
func (j *judge) dsa(data *DSAData) error {
	if data == nil && j.tol.DSA.Rule != DSARuleLSE {
		return fmt.Errorf("compare %s: %w: the %s rule needs the case's dsa data", j.r.Name, ErrShape, j.tol.DSA.Rule)
	}
	switch j.tol.DSA.Rule {
	case DSARuleSelection:
		return j.dsaSelection(data)
	case DSARuleScaled:
		return j.dsaScaled(data)
	}
	j.dsaLSE()
	return nil
}

func (j *judge) dsaRowsMatch(n int, what string) error {
	if n != j.rows {
		return fmt.Errorf("compare %s: dsa %s has %d rows, the output %d: %w", j.r.Name, what, n, j.rows, ErrShape)
	}
	return nil
}

// shift maps an index of a ragged row to its window (x - off); an index
// below the window becomes -2, which no row reaches (-1 stays padding).
func dsaShift(x float64, off int32) int32 {
	if x != x || x < math.MinInt32 || x > math.MaxInt32 {
		return -2
	}
	v := int32(x)
	if v == -1 || off == 0 {
		return v
	}
	if v < off {
		return -2
	}
	return v - off
}

func (j *judge) dsaSelection(data *DSAData) error {
	r := j.r
	r.MismatchUnit = "rows"
	if err := j.dsaRowsMatch(len(data.Rows), "selection rows"); err != nil {
		return err
	}
	if data.Offsets != nil {
		if err := j.dsaRowsMatch(len(data.Offsets), "offsets"); err != nil {
			return err
		}
	}
	lt := data.LogitsDType
	if lt == "" {
		lt = Float32
	}
	eps, ok := j.tol.DSA.EpsRel[lt]
	if !ok {
		return fmt.Errorf("compare %s: %w: no eps_rel for %s logits", r.Name, ErrTolerance, lt)
	}
	var bad int64
	var worstSorted float64
	for row := range j.rows {
		base := row * j.rowLen
		sr := data.Rows[row]
		var off int32
		if data.Offsets != nil {
			off = data.Offsets[row]
		}
		got := make([]int32, j.rowLen)
		want := make([]int32, j.rowLen)
		for i := range got {
			got[i] = dsaShift(j.c[base+i], off)
			want[i] = dsaShift(j.g[base+i], off)
		}
		sr.Got, sr.Want = got, want
		if err := golden.DSASelectionCheck(sr, eps); err != nil {
			bad++
			ix := unravel(int64(row), j.rowShape)
			if r.FirstMismatch == nil {
				r.FirstMismatch = ix
				r.WorstIndex = ix
				r.Failed = append(r.Failed, err.Error())
			}
		}
		worstSorted = max(worstSorted, golden.DSASortedScoreDiff(sr))
	}
	r.Graded = int64(len(j.g))
	r.MismatchCount = bad
	r.MismatchRatio = ratio(bad, int64(j.rows))
	r.MaxAbs = Float(worstSorted) // FlashInfer-Bench's sorted-score difference: reported, never binding
	r.Checks = append(r.Checks, Check{
		Rule:       "dsa_selection",
		Formula:    fmt.Sprintf("min(k, visible) distinct reachable entries, rest -1; tie band eps = %g*A (%s logits); gap > 2*eps: the golden set", eps, lt),
		Violations: bad, Of: int64(j.rows), Unit: "rows", Observed: Float(bad), Pass: bad == 0,
	})
	return nil
}

// dsaTally accumulates the elementwise part of the scaled and lse rules.
type dsaTally struct {
	j               *judge
	nonfinite, viol int64
	worst, maxAbs   float64
	worstAt         int64
}

// nonfiniteAt counts a non-finite mismatch at i.
func (t *dsaTally) nonfiniteAt(i int) {
	t.nonfinite++
	if t.j.r.FirstMismatch == nil {
		t.j.r.FirstMismatch = unravel(int64(i), t.j.shape)
	}
}

// sameNonfinite reports whether g and c are the same NaN/Inf pattern.
func sameNonfinite(g, c float64) bool { return g == c || (g != g && c != c) }

// grade judges |c-g| = ad against allowed at i.
func (t *dsaTally) grade(i int, ad, allowed float64) {
	q := math.Inf(1)
	if allowed > 0 {
		q = ad / allowed
	} else if ad == 0 {
		q = 0
	}
	if q > t.worst || t.worstAt < 0 {
		t.worst, t.worstAt = q, int64(i)
	}
	if ad > allowed {
		t.viol++
		if t.j.r.FirstMismatch == nil {
			t.j.r.FirstMismatch = unravel(int64(i), t.j.shape)
		}
	}
}

// finish fills the report and adds the nonfinite and bound checks.
func (t *dsaTally) finish(nonfiniteFormula, rule, formula string) {
	r := t.j.r
	r.Graded = int64(len(t.j.g))
	r.MismatchCount = t.nonfinite + t.viol
	r.MismatchRatio = ratio(r.MismatchCount, r.Graded)
	r.MaxAbs, r.WorstRatio = Float(t.maxAbs), Float(t.worst)
	if t.worstAt >= 0 {
		r.WorstIndex = unravel(t.worstAt, t.j.shape)
		r.WorstGolden, r.WorstCandidate = Float(t.j.g[t.worstAt]), Float(t.j.c[t.worstAt])
	}
	r.Checks = append(r.Checks, Check{
		Rule: "nonfinite", Formula: nonfiniteFormula,
		Violations: t.nonfinite, Of: r.Graded, Unit: "elements", Observed: Float(t.nonfinite), Pass: t.nonfinite == 0,
	}, Check{
		Rule: rule, Formula: formula,
		Violations: t.viol, Of: r.Graded, Unit: "elements", Observed: Float(t.worst), Pass: t.viol == 0,
	})
}

func (j *judge) dsaScaled(data *DSAData) error {
	r, d := j.r, j.tol.DSA
	if err := j.dsaRowsMatch(len(data.RowScale), "row scales"); err != nil {
		return err
	}
	if data.Exact != nil {
		if err := j.dsaRowsMatch(len(data.Exact), "exact rows"); err != nil {
			return err
		}
	}
	t := dsaTally{j: j, worstAt: -1}
	var exactViol, exactOf, l2Viol, l2Of int64
	var worstL2 float64
	for row := range j.rows {
		base := row * j.rowLen
		exact := data.Exact != nil && data.Exact[row]
		if exact {
			exactOf++
		}
		scale := float64(d.Scale * data.RowScale[row])
		var rd2, rg2 float64
		rowBad := false
		for i := base; i < base+j.rowLen; i++ {
			g, c := j.g[i], j.c[i]
			if !finite(g) || !finite(c) {
				if !sameNonfinite(g, c) {
					t.nonfiniteAt(i)
				}
				continue
			}
			ad := math.Abs(c - g)
			t.maxAbs = max(t.maxAbs, ad)
			rd2 += float64(ad * ad)
			rg2 += float64(g * g)
			if exact {
				rowBad = rowBad || math.Float64bits(c) != math.Float64bits(g)
				continue
			}
			t.grade(i, ad, float64(d.RTol*math.Abs(g))+scale)
		}
		if rowBad {
			exactViol++
		}
		if d.RowRelL2 > 0 && !exact && rg2 > 0 {
			l2Of++
			e := math.Sqrt(rd2) / math.Sqrt(rg2)
			worstL2 = max(worstL2, e/d.RowRelL2)
			if e > d.RowRelL2 {
				l2Viol++
			}
		}
	}
	t.finish("NaN/+Inf/-Inf (the -inf mask) where and only where the golden has them",
		"dsa_scaled", fmt.Sprintf("|c-g| <= %g*|g| + %g*%s(row)", d.RTol, d.Scale, d.RowScale))
	if d.RowRelL2 > 0 {
		r.Checks = append(r.Checks, Check{
			Rule: "row_rel_l2", Formula: fmt.Sprintf("||c-g|| <= %g*||g|| per row", d.RowRelL2),
			Violations: l2Viol, Of: l2Of, Unit: "rows", Observed: Float(worstL2), Pass: l2Viol == 0,
		})
	}
	if data.Exact != nil {
		r.Checks = append(r.Checks, Check{
			Rule: "one_index_exact", Formula: "a row with one valid index is that V row bit for bit",
			Violations: exactViol, Of: exactOf, Unit: "rows", Observed: Float(exactViol), Pass: exactViol == 0,
		})
	}
	return nil
}

func (j *judge) dsaLSE() {
	d := j.tol.DSA
	t := dsaTally{j: j, worstAt: -1}
	for i, g := range j.g {
		c := j.c[i]
		switch {
		case math.IsInf(g, -1):
			// An empty row: FlashMLA writes +inf, the golden -inf.
			if !math.IsInf(c, 0) {
				t.nonfiniteAt(i)
			}
		case !finite(g) || !finite(c):
			if !sameNonfinite(g, c) {
				t.nonfiniteAt(i)
			}
		default:
			ad := math.Abs(c - g)
			t.maxAbs = max(t.maxAbs, ad)
			t.grade(i, ad, float64(d.RTol*max(math.Abs(g), 1)))
		}
	}
	t.finish("non-finite where the golden is; either infinity where the golden is -inf (empty row) only",
		"dsa_lse", fmt.Sprintf("|c-g| <= %g*max(|g|, 1)", d.RTol))
}
