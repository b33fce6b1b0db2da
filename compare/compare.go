package compare

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// Options carries what the manifest's tolerance cannot: per-case facts.
type Options struct {
	// Name labels the report (the output's name in the manifest).
	Name string
	// Mask, when non-nil, has one entry per element; false leaves the
	// element ungraded (e.g. Quest kmax/kmin past nb, docs/spec.md §5a).
	Mask []bool
	// Bound is the per-element bound S the tolerance's Bound names (one
	// entry per element); required when Tolerance.Bound is set.
	Bound []float64
	// DSA carries the per-row facts of the DSA rules (family_dsa.go).
	DSA *DSAData
	// Alt is the accepted alternative the tolerance's Alt names (one
	// entry per element); required when Tolerance.Alt is set.
	Alt []float64
}

// doubleThousandth is the Ascend relative-error threshold.
const doubleThousandth = 1e-3

// Compare judges candidate against golden, both row-major with the given
// shape, under tol. Length mismatches and invalid shapes wrap ErrShape, an
// unusable tolerance wraps ErrTolerance. Empty tensors pass.
func Compare(golden, candidate []float64, shape []int64, tol Tolerance, opts Options) (Report, error) {
	n, err := numElems(shape)
	if err != nil {
		return Report{}, err
	}
	switch {
	case int64(len(golden)) != n:
		return Report{}, fmt.Errorf("compare %s: golden has %d elements, shape %s needs %d: %w", opts.Name, len(golden), fmtIndex(shape), n, ErrShape)
	case int64(len(candidate)) != n:
		return Report{}, fmt.Errorf("compare %s: candidate has %d elements, shape %s needs %d: %w", opts.Name, len(candidate), fmtIndex(shape), n, ErrShape)
	case opts.Mask != nil && int64(len(opts.Mask)) != n:
		return Report{}, fmt.Errorf("compare %s: mask has %d entries, shape %s needs %d: %w", opts.Name, len(opts.Mask), fmtIndex(shape), n, ErrShape)
	}
	if err := tol.Validate(); err != nil {
		return Report{}, fmt.Errorf("compare %s: %w", opts.Name, err)
	}
	if err := checkBound(tol, opts, n); err != nil {
		return Report{}, err
	}
	if err := checkAlt(tol, opts, n); err != nil {
		return Report{}, err
	}
	var altAccepted, altDiffer int64
	if tol.Alt != "" {
		candidate, altAccepted, altDiffer = applyAlt(golden, candidate, opts.Alt, tol)
	}
	fm := formatOf(tol.DType)
	rowLen, rows, rowShape := rowGeometry(shape, tol.RowAxes, n)
	tol.SetIgnore = slices.Clone(tol.SetIgnore) // the report keeps its own copy
	r := Report{
		Name: opts.Name, Mode: tol.Mode, DType: tol.DType, Shape: append([]int64{}, shape...),
		Rows: int64(rows), Tol: tol, MismatchUnit: "elements", Cosine: 1,
	}
	if r.DType == "" {
		r.DType = Float64
	}
	if fm.isFloat {
		r.RelFloor = Float(fm.minNorm)
	}
	j := judge{r: &r, g: golden, c: candidate, mask: opts.Mask, bound: opts.Bound, shape: shape, tol: tol, fm: fm, rowLen: rowLen, rows: rows, rowShape: rowShape}
	switch tol.Mode {
	case ModeSet:
		j.set()
	case ModeDSA:
		if err := j.dsa(opts.DSA); err != nil {
			return Report{}, err
		}
	default:
		j.elementwise()
		j.reportAllclose()
	}
	if tol.Alt != "" {
		r.Checks = append(r.Checks, altCheck(tol, altAccepted, altDiffer))
	}
	r.Status = Pass
	for _, c := range r.Checks {
		if !c.Pass && !c.Informative {
			r.Status = Fail
			r.Failed = append(r.Failed, c.String())
		}
	}
	return r, nil
}

// numElems validates shape and returns its element count.
func numElems(shape []int64) (int64, error) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("compare: shape %s has a negative dimension: %w", fmtIndex(shape), ErrShape)
		}
		hi, lo := bits.Mul64(uint64(n), uint64(d))
		if hi != 0 || lo > math.MaxInt {
			return 0, fmt.Errorf("compare: shape %s overflows: %w", fmtIndex(shape), ErrShape)
		}
		n = int64(lo)
	}
	return n, nil
}

// rowGeometry splits shape into rows of the trailing rowAxes axes (0 means
// 1; more than the rank means the whole tensor). A 0-d tensor is one row.
func rowGeometry(shape []int64, rowAxes int, n int64) (rowLen, rows int, lead []int64) {
	k := max(rowAxes, 1)
	k = min(k, len(shape))
	lead = shape[:len(shape)-k]
	rl := int64(1)
	for _, d := range shape[len(shape)-k:] {
		rl *= d
	}
	if rl == 0 || n == 0 {
		return int(rl), 0, lead
	}
	return int(rl), int(n / rl), lead
}

// unravel turns a flat row-major index into a multi-dimensional one.
func unravel(flat int64, shape []int64) []int64 {
	ix := make([]int64, len(shape))
	for i := len(shape) - 1; i >= 0; i-- {
		if shape[i] > 0 {
			ix[i] = flat % shape[i]
			flat /= shape[i]
		}
	}
	return ix
}

// judge holds one comparison in progress.
type judge struct {
	r        *Report
	g, c     []float64
	mask     []bool
	bound    []float64 // Options.Bound (nil without Tolerance.Bound)
	shape    []int64
	tol      Tolerance
	fm       format
	rowLen   int
	rows     int
	rowShape []int64
}

func finite(x float64) bool { return x-x == 0 }

// elementwise runs allclose and exact mode: the NaN/Inf rule and the
// element rule, plus every metric, in one pass per row (two for the RMS).
func (j *judge) elementwise() {
	r, tol, fm := j.r, j.tol, j.fm
	exact := tol.Mode == ModeExact
	var (
		graded, nonfinite, elemViol, relOver int64
		first, worst, maxAbsAt, firstNonfin  int64 = -1, -1, -1, -1
		worstKey, maxAbs, maxRel             float64
		maxULP                               uint64
		sd2, sg2, sc2, scg                   float64 // global, over finite pairs
		rowsL2, rowsL2Viol                   int64
		worstRowL2, worstRowL2Ratio          float64
		worstRowAt                           int64 = -1
		rowsSum, rowsSumViol                 int64
		maxRowSumErr                         float64
	)
	relFloor := fm.minNorm
	for row := 0; row < j.rows; row++ {
		base := row * j.rowLen
		g, c := j.g[base:base+j.rowLen], j.c[base:base+j.rowLen]
		var m []bool
		if j.mask != nil {
			m = j.mask[base : base+j.rowLen]
		}
		atolRow := tol.ATol
		if !exact && tol.ATolRMSFactor > 0 {
			var s float64
			var k int
			for i, gv := range g {
				if (m == nil || m[i]) && finite(gv) {
					s += float64(gv * gv)
					k++
				}
			}
			if k > 0 {
				atolRow += float64(tol.ATolRMSFactor * math.Sqrt(s/float64(k)))
			}
		}
		var rd2, rg2, csum, sumSlack float64
		var rowGraded, rowPairs int64
		rowNonzero, rowSumBad := false, false
		for i, gv := range g {
			if m != nil && !m[i] {
				continue
			}
			cv := c[i]
			idx := int64(base + i)
			rowGraded++
			if !finite(gv) || !finite(cv) {
				gNaN, cNaN := gv != gv, cv != cv
				same := gv == cv || gNaN && cNaN // same infinity, or NaN for NaN
				if exact {
					same = math.Float64bits(gv) == math.Float64bits(cv)
				}
				if same {
					continue
				}
				switch {
				case gNaN != cNaN:
					r.NaNMismatch++
				case gNaN: // both NaN, payloads differ (exact mode only)
				default:
					r.InfMismatch++
					if math.IsInf(gv, 0) && math.IsInf(cv, 0) {
						r.InfSignMismatch++
					}
				}
				rowSumBad = rowSumBad || !finite(cv)
				nonfinite++
				relOver++
				if first < 0 {
					first = idx
				}
				if firstNonfin < 0 {
					firstNonfin = idx
				}
				continue
			}
			rowPairs++
			d := cv - gv
			ad, ag := math.Abs(d), math.Abs(gv)
			rd2 += float64(d * d)
			rg2 += float64(gv * gv)
			sc2 += float64(cv * cv)
			scg += float64(cv * gv)
			csum += cv
			if tol.RowSum > 0 && fm.isFloat {
				sumSlack += fm.halfSpacing(gv)
			}
			rowNonzero = rowNonzero || gv != 0
			if exact && math.Float64bits(gv) != math.Float64bits(cv) {
				elemViol++
				if first < 0 {
					first = idx
				}
				// worst: the largest difference (-0 against +0 counts when
				// nothing larger is seen)
				if ad > worstKey || worst < 0 {
					worst, worstKey = idx, ad
				}
			}
			if ad == 0 {
				continue
			}
			if ad > maxAbs || maxAbsAt < 0 {
				maxAbs, maxAbsAt = ad, idx
			}
			// relative error ad/den, compared without dividing where possible
			den := max(ag, relFloor)
			if ad > float64(maxRel*den) {
				maxRel = max(maxRel, ad/den)
			}
			if ad > float64(doubleThousandth*den) {
				relOver++
			}
			if fm.isFloat {
				if u := fm.ulpDistance(gv, cv); u > maxULP {
					maxULP = u
				}
			}
			if exact {
				continue
			}
			allowed := atolRow + float64(tol.RTol*ag)
			allowed += j.boundAt(idx)
			if ad > allowed {
				elemViol++
				if first < 0 {
					first = idx
				}
			}
			// the worst element is the one nearest to (or furthest past)
			// its allowance, pass or fail
			if ad > float64(worstKey*allowed) || worst < 0 {
				key := math.Inf(1)
				if allowed > 0 {
					key = ad / allowed
				}
				if key > worstKey || worst < 0 {
					worst, worstKey = idx, key
				}
			}
		}
		graded += rowGraded
		sd2 += rd2
		sg2 += rg2
		if rowGraded == 0 {
			continue
		}
		if rg2 > 0 {
			l2 := math.Sqrt(rd2) / math.Sqrt(rg2)
			if l2 > worstRowL2 || worstRowAt < 0 {
				worstRowL2, worstRowAt = l2, int64(row)
			}
		}
		if tol.RowRelL2 > 0 && rowPairs > 0 {
			// the format's resolution (ATol per element) is forgiven, as
			// in the elementwise rule: a row of fp16 subnormals cannot be
			// closer than rounding puts it
			rowsL2++
			allowed := float64(tol.RowRelL2*math.Sqrt(rg2)) + float64(tol.ATol*math.Sqrt(float64(rowPairs)))
			e := math.Sqrt(rd2)
			q := 0.0
			if e > 0 {
				q = e / allowed
			}
			worstRowL2Ratio = max(worstRowL2Ratio, q)
			if e > allowed {
				rowsL2Viol++
			}
		}
		if tol.RowSum > 0 && rowNonzero {
			rowsSum++
			e := math.Abs(csum - 1)
			if rowSumBad {
				e = math.Inf(1)
			}
			if e > maxRowSumErr {
				maxRowSumErr = e
			}
			// A correctly rounded row can be off by the sum of its
			// half-spacings (many equal tiny outputs rounding the same way).
			if !(e <= tol.RowSum+sumSlack) {
				rowsSumViol++
			}
		}
	}

	worstFinite := worstKey
	if firstNonfin >= 0 { // non-finite mismatches rank first
		worst, worstKey = firstNonfin, math.Inf(1)
	}
	r.Graded = graded
	r.MismatchCount = nonfinite + elemViol
	r.MismatchRatio = ratio(r.MismatchCount, graded)
	r.DoubleThousandth = ratio(relOver, graded)
	r.MaxAbs, r.MaxRel, r.MaxULP = Float(maxAbs), Float(maxRel), maxULP
	if !fm.isFloat {
		r.MaxULP = 0
	}
	if maxAbsAt >= 0 {
		r.MaxAbsIndex = unravel(maxAbsAt, j.shape)
	}
	if first >= 0 {
		r.FirstMismatch = unravel(first, j.shape)
	}
	if worst >= 0 {
		r.WorstIndex = unravel(worst, j.shape)
		r.WorstGolden, r.WorstCandidate = Float(j.g[worst]), Float(j.c[worst])
		if !exact {
			r.WorstRatio = Float(worstKey)
		}
	}
	switch {
	case sg2 > 0:
		r.RelL2 = Float(math.Sqrt(sd2) / math.Sqrt(sg2))
	case sd2 > 0:
		r.RelL2 = Float(math.Inf(1))
	}
	r.WorstRowRelL2 = Float(worstRowL2)
	if worstRowAt >= 0 {
		r.WorstRow = unravel(worstRowAt, j.rowShape)
	}
	switch {
	case sg2 > 0 && sc2 > 0:
		r.Cosine = Float(min(1, max(-1, scg/(math.Sqrt(sg2)*math.Sqrt(sc2)))))
	case sg2 > 0 || sc2 > 0:
		r.Cosine = 0
	}
	if nonfinite > 0 {
		// The sums above cover the finite pairs only: with a NaN or an
		// infinity where the golden is finite (or the reverse) the
		// tensor-wide distance is undefined, not that of the rest.
		r.RelL2, r.Cosine = Float(math.NaN()), Float(math.NaN())
	}

	r.Checks = append(r.Checks, Check{
		Rule: "nonfinite", Formula: "NaN/+Inf/-Inf where and only where the golden has them",
		Violations: nonfinite, Of: graded, Unit: "elements", Observed: Float(nonfinite), Pass: nonfinite == 0,
	})
	if exact {
		r.Checks = append(r.Checks, Check{
			Rule: "exact", Formula: "bits(c) == bits(g)", Violations: elemViol, Of: graded - nonfinite,
			Unit: "elements", Observed: Float(maxAbs), Pass: elemViol == 0,
		})
		return
	}
	r.Checks = append(r.Checks, Check{
		Rule: "elementwise", Formula: elementFormula(tol),
		Violations: elemViol, Of: graded - nonfinite, Unit: "elements", Observed: Float(worstFinite), Pass: elemViol == 0,
	})
	if tol.RowRelL2 > 0 {
		r.Checks = append(r.Checks, Check{
			Rule: "row_rel_l2", Formula: fmt.Sprintf("||c-g|| <= %.3g*||g|| + %.3g*sqrt(n) per row", tol.RowRelL2, tol.ATol),
			Violations: rowsL2Viol, Of: rowsL2, Unit: "rows", Observed: Float(worstRowL2Ratio), Pass: rowsL2Viol == 0,
		})
	}
	if tol.RowSum > 0 {
		e := Float(maxRowSumErr)
		r.RowSumMaxErr = &e
		r.Checks = append(r.Checks, Check{
			Rule: "row_sum", Formula: fmt.Sprintf("|sum(c row) - 1| <= %.3g + sum of half-spacings of the row", tol.RowSum),
			Violations: rowsSumViol, Of: rowsSum, Unit: "rows", Observed: e, Pass: rowsSumViol == 0,
		})
	}
}

func ratio(k, n int64) Float {
	if n == 0 {
		return 0
	}
	return Float(float64(k) / float64(n))
}

// set runs set mode: per row, the multiset of candidate values (SetIgnore
// values dropped) must equal the golden's. Duplicates count, so a
// candidate repeating a block id fails even if it covers the golden set.
func (j *judge) set() {
	r, tol := j.r, j.tol
	r.MismatchUnit = "rows"
	ignored := func(v float64) bool { return slices.Contains(tol.SetIgnore, v) }
	var gs, cs []float64
	var graded, bad int64
	var worstDiff int64 = -1
	for row := 0; row < j.rows; row++ {
		base := row * j.rowLen
		gs, cs = gs[:0], cs[:0]
		var extra, missing int64
		for i := base; i < base+j.rowLen; i++ {
			if j.mask != nil && !j.mask[i] {
				continue
			}
			graded++
			if g := j.g[i]; !ignored(g) {
				gs = append(gs, g)
			}
			switch c := j.c[i]; {
			case c != c:
				extra++ // NaN matches nothing
			case !ignored(c):
				cs = append(cs, c)
			}
		}
		slices.Sort(gs)
		slices.Sort(cs)
		a, b := 0, 0
		for a < len(gs) && b < len(cs) {
			switch {
			case gs[a] == cs[b]:
				a++
				b++
			case gs[a] < cs[b] || gs[a] != gs[a]:
				missing++
				a++
			default:
				extra++
				b++
			}
		}
		missing += int64(len(gs) - a)
		extra += int64(len(cs) - b)
		r.SetMissing += missing
		r.SetExtra += extra
		if d := missing + extra; d > 0 {
			bad++
			ix := unravel(int64(row), j.rowShape)
			if r.FirstMismatch == nil {
				r.FirstMismatch = ix
			}
			if d > worstDiff {
				worstDiff, r.WorstIndex = d, ix
			}
		}
	}
	r.Graded = graded
	r.MismatchCount = bad
	r.MismatchRatio = ratio(bad, int64(j.rows))
	r.Checks = append(r.Checks, Check{
		Rule: "set", Formula: fmt.Sprintf("same multiset per row, ignoring %v, order free", tol.SetIgnore),
		Violations: bad, Of: int64(j.rows), Unit: "rows", Observed: Float(max(worstDiff, 0)), Pass: bad == 0,
	})
}
