package compare

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Comparison modes.
const (
	// ModeAllclose: |c-g| <= atol + atol_rms_factor*rms(golden row) + rtol*|g|
	// elementwise, NaN/Inf must match, plus the optional row checks.
	ModeAllclose = "allclose"
	// ModeExact: every element bit-identical (float64 bits of the decoded values).
	ModeExact = "exact"
	// ModeSet: each row, read as a multiset of values with SetIgnore values
	// dropped, equals the golden row's.
	ModeSet = "set"
)

// Sentinel errors.
var (
	// ErrShape: the shape is invalid, or a slice's length does not match it.
	ErrShape = errors.New("shape mismatch")
	// ErrTolerance: a Tolerance that cannot be applied (unknown mode,
	// negative or non-finite limits).
	ErrTolerance = errors.New("invalid tolerance")
)

// Tolerance says how a candidate output is judged against its golden. It
// is stored in the manifest next to each golden; zero fields are off.
type Tolerance struct {
	Mode  string `json:"mode"`  // ModeAllclose, ModeExact or ModeSet
	DType string `json:"dtype"` // output dtype (canonical name): ulp unit and relative-error floor

	RTol float64 `json:"rtol,omitempty"`
	// ATol is an absolute floor, in practice the resolution of the output
	// format (fp16: two subnormal spacings, 2^-23).
	ATol float64 `json:"atol,omitempty"`
	// ATolRMSFactor adds factor*rms(golden row) to ATol, so the absolute
	// allowance follows the row's scale (rms over the row's finite graded
	// golden values).
	ATolRMSFactor float64 `json:"atol_rms_factor,omitempty"`
	// RowRelL2 bounds the relative L2 error per row, forgiving the format's
	// resolution as the elementwise rule does:
	// ||c-g|| <= RowRelL2*||g|| + ATol*sqrt(n), n the row's finite pairs.
	RowRelL2 float64 `json:"row_rel_l2,omitempty"`
	// RowSum bounds |sum(c row) - 1| (softmax), for rows whose golden is
	// not all zero.
	RowSum float64 `json:"row_sum,omitempty"`
	// RowAxes is how many trailing axes form one row; 0 means 1, the last
	// axis. A row is where the RMS, row checks and set mode apply.
	RowAxes int `json:"row_axes,omitempty"`
	// SetIgnore lists padding values that set mode drops from both sides
	// (Quest selected: -1).
	SetIgnore []float64 `json:"set_ignore,omitempty"`
	// Basis names the default that produced the tolerance, e.g.
	// "attention/float16"; informative only.
	Basis string `json:"basis,omitempty"`
}

// Validate reports whether t can be applied; errors wrap ErrTolerance.
func (t Tolerance) Validate() error {
	switch t.Mode {
	case ModeAllclose, ModeExact, ModeSet:
	default:
		return fmt.Errorf("compare: %w: mode %q (want %q, %q or %q)", ErrTolerance, t.Mode, ModeAllclose, ModeExact, ModeSet)
	}
	if t.DType != "" {
		if c, ok := CanonicalDType(t.DType); !ok || c != t.DType {
			return fmt.Errorf("compare: %w: dtype %q is not a canonical name (float16, bfloat16, float32, ...)", ErrTolerance, t.DType)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"rtol", t.RTol}, {"atol", t.ATol}, {"atol_rms_factor", t.ATolRMSFactor}, {"row_rel_l2", t.RowRelL2}, {"row_sum", t.RowSum}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("compare: %w: %s = %v must be finite and >= 0", ErrTolerance, f.name, f.v)
		}
	}
	if t.RowAxes < 0 {
		return fmt.Errorf("compare: %w: row_axes = %d must be >= 0", ErrTolerance, t.RowAxes)
	}
	for _, v := range t.SetIgnore {
		if v != v {
			return fmt.Errorf("compare: %w: set_ignore holds NaN", ErrTolerance)
		}
	}
	return nil
}

// family is a row of the default tolerance table (see doc.go).
type family struct {
	rtol, atolRMS, rowRelL2, rowSum float64
	atol                            float64 // < 0: the format's flush floor
}

// Default tables, per family and output dtype. The reasoning behind every
// number is in doc.go ("Default tolerances").
var (
	matmulTable = map[string]family{
		Float16:  {rtol: 1e-3, atolRMS: 1e-3, rowRelL2: 1e-3, atol: -1},
		BFloat16: {rtol: 8e-3, atolRMS: 8e-3, rowRelL2: 8e-3, atol: -1},
		Float32:  {rtol: 1e-5, atolRMS: 1e-4, rowRelL2: 2e-5, atol: -1},
		Float64:  {rtol: 1e-12, atolRMS: 1e-11, rowRelL2: 1e-12, atol: -1},
	}
	softmaxTable = map[string]family{
		Float16:  {rtol: 1e-3, rowRelL2: 1e-3, rowSum: 2e-3, atol: -1},
		BFloat16: {rtol: 8e-3, rowRelL2: 8e-3, rowSum: 1e-2, atol: -1},
		Float32:  {rtol: 1e-5, atolRMS: 1e-5, rowRelL2: 1e-5, rowSum: 1e-5, atol: -1},
		Float64:  {rtol: 1e-12, rowRelL2: 1e-12, rowSum: 1e-12, atol: -1},
	}
	attentionTable = map[string]family{
		Float16:  {rtol: 1e-2, atolRMS: 1e-2, rowRelL2: 2e-3, atol: -1},
		BFloat16: {rtol: 2e-2, atolRMS: 2e-2, rowRelL2: 1e-2, atol: -1},
		Float32:  {rtol: 1e-4, atolRMS: 1e-4, rowRelL2: 5e-5, atol: -1},
		Float64:  {rtol: 1e-12, atolRMS: 1e-11, rowRelL2: 1e-12, atol: -1},
	}
)

// Fixed-dtype outputs (float32 by definition, docs/spec.md §7).
var (
	lseFamily      = family{rtol: 1e-5, atol: 1e-4}
	scoresFamily   = family{rtol: 1e-4, atolRMS: 1e-4, atol: -1}
	rowSumFamily   = family{rtol: 2e-4, atol: -1} // one fp32 running sum over 151936 terms drifts ~1e-4
	rowMaxFamily   = family{}                     // max is exact in any precision: numeric equality
	floatFallbackT = matmulTable
)

// DefaultTolerance returns the tolerance goldset records for output
// `output` of op `op` stored in `dtype` (any spelling CanonicalDType
// accepts; unknown spellings are treated as float64). Names are matched
// case-insensitively. Integer and bool outputs, caches (reshape_and_cache)
// and Quest block metadata (kmax, kmin) are exact; Quest `selected` is a
// set. Unknown ops or outputs with a floating dtype get the matmul row of
// the table, which only assumes fp32 accumulation.
func DefaultTolerance(op, output, dtype string) Tolerance {
	op, output = strings.ToLower(strings.TrimSpace(op)), strings.ToLower(strings.TrimSpace(output))
	dt, ok := CanonicalDType(dtype)
	if !ok {
		dt = Float64
	}
	isFloat := dt == Float16 || dt == BFloat16 || dt == Float32 || dt == Float64
	exact := Tolerance{Mode: ModeExact, DType: dt, Basis: "exact"}

	switch {
	case op == "quest" && output == "selected":
		return Tolerance{Mode: ModeSet, DType: dt, SetIgnore: []float64{-1}, Basis: "set/selection"}
	case !isFloat:
		return exact
	case op == "reshape_and_cache":
		exact.Basis = "exact/cache"
		return exact
	case op == "quest" && (output == "kmax" || output == "kmin"):
		exact.Basis = "exact/block_metadata"
		return exact
	case output == "lse":
		return lseFamily.tolerance(dt, "lse")
	case op == "quest" && (output == "scores" || output == "score"):
		return scoresFamily.tolerance(dt, "quest_scores")
	case op == "softmax" && output == "row_max":
		return rowMaxFamily.tolerance(dt, "softmax_row_max")
	case op == "softmax" && output == "row_sum":
		return rowSumFamily.tolerance(dt, "softmax_row_sum")
	case op == "softmax":
		return softmaxTable[dt].tolerance(dt, "softmax/"+dt)
	case op == "paged_attention" || op == "quest":
		return attentionTable[dt].tolerance(dt, "attention/"+dt)
	case op == "matmul":
		return matmulTable[dt].tolerance(dt, "matmul/"+dt)
	}
	return floatFallbackT[dt].tolerance(dt, "generic/"+dt)
}

func (f family) tolerance(dt, basis string) Tolerance {
	atol := f.atol
	if atol < 0 {
		atol = flushFloor(dt)
	}
	return Tolerance{
		Mode: ModeAllclose, DType: dt, RTol: f.rtol, ATol: atol, ATolRMSFactor: f.atolRMS,
		RowRelL2: f.rowRelL2, RowSum: f.rowSum, Basis: basis,
	}
}

// flushFloor is the absolute floor of a format. fp16 keeps its
// subnormals (softmax outputs live there), so the floor is two subnormal
// spacings, 2^-23: a one-spacing rounding flip near zero uses half of it.
// bf16, fp32 and fp64 allow anything below the smallest normal, which
// accepts kernels that flush subnormals to zero (values < 1.2e-38 carry no
// weight in any of these ops).
func flushFloor(dt string) float64 {
	if dt == Float16 {
		return 0x1p-23
	}
	return formatOf(dt).minNorm
}
