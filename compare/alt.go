package compare

import (
	"fmt"
	"math"
)

// An accepted alternative (Tolerance.Alt): where two conventions of an
// op are both defensible and give different bits on a few elements, the
// bundle stores the golden in one and an aux tensor holding the other
// convention's values (equal to the golden wherever the two agree).
// Compare then accepts, group by group, a candidate that matches the
// alternative: every element of a group of Tolerance.AltGroup consecutive
// elements (0 or 1: each element alone) must equal the alternative, in
// the mode's equality (exact: bits; otherwise numeric, NaN for NaN), and
// the group is then judged as the golden. Nothing else is relaxed: an
// element where the alternative equals the golden is judged as before.
//
// Uses: the fp32-scale index cache (docs/spec.md §8a: float32 division
// then one rounding, or one rounding from the exact quotient) and MXFP4
// rceil quantize of blocks with amax <= 6*2^-127 (§9a: byte 0 or
// triton_kernels' byte 1, with the codes that go with it).

// checkAlt validates Options.Alt against a tolerance that names one.
func checkAlt(tol Tolerance, opts Options, n int64) error {
	if tol.Alt == "" {
		return nil
	}
	if opts.Alt == nil {
		return fmt.Errorf("compare %s: %w: the tolerance accepts the alternative %s but none was given", opts.Name, ErrTolerance, tol.Alt)
	}
	if int64(len(opts.Alt)) != n {
		return fmt.Errorf("compare %s: alternative %s has %d elements, the output %d: %w", opts.Name, tol.Alt, len(opts.Alt), n, ErrShape)
	}
	return nil
}

// altSame is the mode's equality of two values.
func altSame(exact bool, a, b float64) bool {
	if exact {
		return math.Float64bits(a) == math.Float64bits(b)
	}
	return a == b || a != a && b != b
}

// applyAlt returns the candidate with every group that matches the
// alternative (where it differs from the golden) replaced by the golden,
// and the number of elements so accepted and of elements where the
// alternative differs. The candidate itself is not modified.
func applyAlt(golden, candidate, alt []float64, tol Tolerance) (c []float64, accepted, differ int64) {
	exact := tol.Mode == ModeExact
	g := max(tol.AltGroup, 1)
	c = candidate
	copied := false
	for lo := 0; lo < len(golden); lo += g {
		hi := min(lo+g, len(golden))
		diff, match := int64(0), true
		for i := lo; i < hi; i++ {
			if !altSame(exact, alt[i], golden[i]) {
				diff++
			}
			match = match && altSame(exact, candidate[i], alt[i])
		}
		differ += diff
		if diff == 0 || !match {
			continue
		}
		if !copied {
			c, copied = append([]float64(nil), candidate...), true
		}
		copy(c[lo:hi], golden[lo:hi])
		accepted += diff
	}
	return c, accepted, differ
}

// altCheck is the informative record of what the alternative accepted.
func altCheck(tol Tolerance, accepted, differ int64) Check {
	group := "each element"
	if tol.AltGroup > 1 {
		group = fmt.Sprintf("each group of %d", tol.AltGroup)
	}
	return Check{
		Rule: "alternative", Formula: fmt.Sprintf("%s equal to the golden or, as a whole, to %s (%d of the elements where they differ taken from %[2]s)", group, tol.Alt, accepted),
		Violations: 0, Of: differ, Unit: "elements", Observed: Float(accepted), Pass: true, Informative: true,
	}
}
