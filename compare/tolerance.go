package compare

import (
	"errors"
	"fmt"
	"math"
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
	// Bound names an aux tensor of the case holding a per-element bound
	// S (MXFP4 GEMM: sum |x*w|); BoundFactor*S is added to the
	// elementwise allowance (family_mx.go). The caller passes S as
	// Options.Bound.
	Bound       string  `json:"bound,omitempty"`
	BoundFactor float64 `json:"bound_factor,omitempty"`
	// ReportAllclose, when > 0, adds an informative check (never graded):
	// allclose with atol = rtol = ReportAllclose (GPU MODE's 1e-2).
	ReportAllclose float64 `json:"report_allclose,omitempty"`
	// DSA holds the numbers of a ModeDSA rule (family_dsa.go).
	DSA *DSARule `json:"dsa,omitempty"`
	// Alt names an aux tensor of the case holding a second accepted value
	// per element (another defensible convention, equal to the golden
	// wherever the two agree); a group of AltGroup consecutive elements
	// (0: one) that matches it as a whole is judged as the golden
	// (alt.go). The caller passes the tensor as Options.Alt.
	Alt      string `json:"alt,omitempty"`
	AltGroup int    `json:"alt_group,omitempty"`
}

// Validate reports whether t can be applied; errors wrap ErrTolerance.
func (t Tolerance) Validate() error {
	switch t.Mode {
	case ModeAllclose, ModeExact, ModeSet:
	case ModeDSA:
		if err := t.DSA.validate(); err != nil {
			return err
		}
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
	}{{"rtol", t.RTol}, {"atol", t.ATol}, {"atol_rms_factor", t.ATolRMSFactor}, {"row_rel_l2", t.RowRelL2}, {"row_sum", t.RowSum},
		{"bound_factor", t.BoundFactor}, {"report_allclose", t.ReportAllclose}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("compare: %w: %s = %v must be finite and >= 0", ErrTolerance, f.name, f.v)
		}
	}
	if t.RowAxes < 0 {
		return fmt.Errorf("compare: %w: row_axes = %d must be >= 0", ErrTolerance, t.RowAxes)
	}
	if t.AltGroup < 0 || t.AltGroup != 0 && t.Alt == "" || t.Alt != "" && (t.Mode == ModeSet || t.Mode == ModeDSA) {
		return fmt.Errorf("compare: %w: alt %q with alt_group %d in mode %s (an alternative applies to exact and allclose outputs)", ErrTolerance, t.Alt, t.AltGroup, t.Mode)
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
	bound                           string  // aux tensor of the bound S (family_mx.go)
	boundFactor, reportAllclose     float64
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

// One-row families: the same limits in every floating dtype (their
// outputs are float32 by definition, docs/spec.md §7).
var (
	lseRow    = family{rtol: 1e-5, atol: 1e-4}
	scoresRow = family{rtol: 1e-4, atolRMS: 1e-4, atol: -1}
	rowSumRow = family{rtol: 2e-4, atol: -1} // one fp32 running sum over 151936 terms drifts ~1e-4
	rowMaxRow = family{}                     // max is exact in any precision: numeric equality
)

// A Family chooses the Tolerance of an output from the dtype it is stored
// in. compare knows no op names: each op (package suite's op table) picks a
// family for each of its outputs. The reasoning behind every number is in
// doc.go ("Tolerance families").
type Family struct {
	name      string
	mode      string
	table     map[string]family // per dtype (matmul-like, ...); nil: row for every floating dtype
	row       family
	setIgnore []float64
	basis     string   // overrides the recorded Basis (see WithBasis)
	dsa       *DSARule // ModeDSA families (family_dsa.go)
	alt       string   // Tolerance.Alt (see WithAlt)
	altGroup  int
}

// The tolerance families.
var (
	// MatmulLike: sums of fp16/bf16/fp32 products accumulated in fp32
	// (matmul and GEMM-shaped outputs). Basis "matmul/<dtype>".
	MatmulLike = Family{name: "matmul", mode: ModeAllclose, table: matmulTable}
	// SoftmaxLike: normalized exponentials (relative errors, row sums near 1).
	// Basis "softmax/<dtype>".
	SoftmaxLike = Family{name: "softmax", mode: ModeAllclose, table: softmaxTable}
	// AttentionLike: softmax-weighted sums of values, P possibly rounded to
	// the input dtype (flash attention). Basis "attention/<dtype>".
	AttentionLike = Family{name: "attention", mode: ModeAllclose, table: attentionTable}
	// LSE: log-sum-exp of scores (absolute 1e-4 plus relative 1e-5).
	LSE = Family{name: "lse", mode: ModeAllclose, row: lseRow}
	// Scores: short fp32 dot products (Quest block scores).
	Scores = Family{name: "scores", mode: ModeAllclose, row: scoresRow}
	// RowSum: a running fp32 sum over a long row (softmax's online state).
	RowSum = Family{name: "row_sum", mode: ModeAllclose, row: rowSumRow}
	// RowMax: a maximum, exact in any precision (numeric equality).
	RowMax = Family{name: "row_max", mode: ModeAllclose, row: rowMaxRow}
	// Exact: bit-identical values (copies, integers, block metadata).
	Exact = Family{name: "exact", mode: ModeExact}
)

// SetWithPadding: each row is a multiset of indices, pad values dropped
// from both sides (Quest's selection, padded with -1). Basis "set".
func SetWithPadding(pad ...float64) Family {
	return Family{name: "set", mode: ModeSet, setIgnore: pad}
}

// WithBasis returns f recording basis as the Tolerance's Basis (which names
// the rule in the manifest, e.g. "exact/cache"); the limits are f's.
func (f Family) WithBasis(basis string) Family {
	f.basis = basis
	return f
}

// WithAlt returns f accepting, group by group, the values of the case's
// aux tensor aux where the candidate matches it (Tolerance.Alt, alt.go);
// group is the number of consecutive elements that must match together
// (1: each element alone).
func (f Family) WithAlt(aux string, group int) Family {
	f.alt, f.altGroup = aux, group
	if group <= 1 {
		f.altGroup = 0
	}
	return f
}

// Name is the family's name ("matmul", "attention", "lse", "exact", ...).
func (f Family) Name() string { return f.name }

// Tolerance returns f's tolerance for an output stored in dtype (any
// spelling CanonicalDType accepts). A dtype the family has no row for
// (a floating family and an integer dtype, a table without that format) is
// an error wrapping ErrTolerance: there is no silent fallback.
func (f Family) Tolerance(dtype string) (Tolerance, error) {
	t, err := f.tolerance(dtype)
	if err == nil && f.alt != "" {
		t.Alt, t.AltGroup = f.alt, f.altGroup
	}
	return t, err
}

func (f Family) tolerance(dtype string) (Tolerance, error) {
	dt, ok := CanonicalDType(dtype)
	if !ok {
		return Tolerance{}, fmt.Errorf("compare: %w: family %s: unknown dtype %q", ErrTolerance, f.name, dtype)
	}
	basis := f.basis
	switch f.mode {
	case ModeExact:
		if basis == "" {
			basis = f.name
		}
		return Tolerance{Mode: ModeExact, DType: dt, Basis: basis}, nil
	case ModeSet:
		if basis == "" {
			basis = f.name
		}
		return Tolerance{Mode: ModeSet, DType: dt, SetIgnore: append([]float64(nil), f.setIgnore...), Basis: basis}, nil
	case ModeDSA:
		return f.dsaTolerance(dt)
	}
	if !formatOf(dt).isFloat {
		return Tolerance{}, fmt.Errorf("compare: %w: family %s grades floating outputs, not %s", ErrTolerance, f.name, dt)
	}
	row := f.row
	if f.table != nil {
		var ok bool
		if row, ok = f.table[dt]; !ok {
			return Tolerance{}, fmt.Errorf("compare: %w: family %s has no row for %s", ErrTolerance, f.name, dt)
		}
		if basis == "" {
			basis = f.name + "/" + dt
		}
	}
	if basis == "" {
		basis = f.name
	}
	return row.tolerance(dt, basis), nil
}

func (f family) tolerance(dt, basis string) Tolerance {
	atol := f.atol
	if atol < 0 {
		atol = flushFloor(dt)
	}
	return Tolerance{
		Mode: ModeAllclose, DType: dt, RTol: f.rtol, ATol: atol, ATolRMSFactor: f.atolRMS,
		RowRelL2: f.rowRelL2, RowSum: f.rowSum, Basis: basis,
		Bound: f.bound, BoundFactor: f.boundFactor, ReportAllclose: f.reportAllclose,
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
