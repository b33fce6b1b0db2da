package compare

import (
	"context"
	"fmt"
	"io"
	"math"

	"github.com/goldset/goldset/internal/dtype"
	"github.com/goldset/goldset/npy"
)

// MXFP4 families (ops.md §9, docs/spec.md §9; the argument is in doc.go,
// "MXFP4 families").
var (
	// MXValue: numeric equality of decoded values, for E2M1 codes
	// (float4_e2m1fn_x2), FP8 bytes (float8_e4m3fn) and exact dequantized
	// values: -0 equals +0 (codes 0 and 8, fp8 0x00 and 0x80), NaN matches
	// NaN whatever its payload, every other value must be the same. A
	// case's `strict` param swaps it for MXStrict.
	MXValue = Family{name: "mx_value", mode: ModeAllclose, row: family{}}
	// MXStrict: the bytes themselves (exact mode: -0 is not +0).
	MXStrict = Exact.WithBasis("mx_value/strict")
	// MXScale: E8M0 scale bytes, bit-exact; the op's grading mask leaves
	// out the scale of a block (or fold group) without a nonzero code,
	// whose byte no consumer reads.
	MXScale = Exact.WithBasis("mx_scale")
	// MXGEMM: outputs of MXFP4 GEMM and MoE, judged against the float32
	// truth: |c-g| <= 2^-8*|g| + 2^-18*S per element, S = sum |x*w| the
	// case's aux tensor "s", and relative L2 <= 2^-8 per row (bf16);
	// allclose(atol = rtol = 1e-2) is reported beside it, never graded.
	MXGEMM = Family{name: "mx_gemm", mode: ModeAllclose, table: mxGEMMTable}
	// MXMoEActBF16: MXGEMM for MoE outputs whose golden rounds the SwiGLU
	// activations to bf16 (act_round "bfloat16"), S weighted 2^-16: a
	// correct kernel's activation lands on the neighbouring bf16 value
	// wherever its float32 SwiGLU input sits within its accumulation error
	// of a rounding midpoint, and each such flip moves o by a bf16 spacing
	// of a_i times |w2|; on the H200 that reached 1.27x of 2^-18*S on 11 of
	// 207K elements, while a kernel with unrounded activations stays 10x
	// and more over 2^-16*S (docs/spec.md §9e).
	MXMoEActBF16 = Family{name: "mx_gemm/act_bf16", mode: ModeAllclose, table: mxMoEActTable}
)

// MXActBoundFactor is the weight of S in MXMoEActBF16 (2^-16).
const MXActBoundFactor = 0x1p-16

// MXBoundFactor is the weight of S in the MXFP4 GEMM bound (2^-18).
const MXBoundFactor = 0x1p-18

// gpuModeAllclose is GPU MODE's atol = rtol of its MXFP4 problems.
const gpuModeAllclose = 1e-2

var mxGEMMTable = map[string]family{
	BFloat16: {rtol: 0x1p-8, rowRelL2: 0x1p-8, atol: -1, bound: "s", boundFactor: MXBoundFactor, reportAllclose: gpuModeAllclose},
	// float32 outputs (the truth's row): one fp32 spacing, the same S term.
	Float32: {rtol: 0x1p-23, rowRelL2: 0x1p-20, atol: -1, bound: "s", boundFactor: MXBoundFactor, reportAllclose: gpuModeAllclose},
}

var mxMoEActTable = map[string]family{
	BFloat16: {rtol: 0x1p-8, rowRelL2: 0x1p-8, atol: -1, bound: "s", boundFactor: MXActBoundFactor, reportAllclose: gpuModeAllclose},
	Float32:  {rtol: 0x1p-23, rowRelL2: 0x1p-20, atol: -1, bound: "s", boundFactor: MXActBoundFactor, reportAllclose: gpuModeAllclose},
}

// checkBound validates Options.Bound against a tolerance that names one.
func checkBound(tol Tolerance, opts Options, n int64) error {
	if tol.Bound == "" {
		return nil
	}
	if opts.Bound == nil {
		return fmt.Errorf("compare %s: %w: the tolerance adds %g*%s but no bound tensor was given", opts.Name, ErrTolerance, tol.BoundFactor, tol.Bound)
	}
	if int64(len(opts.Bound)) != n {
		return fmt.Errorf("compare %s: bound %s has %d elements, the output %d: %w", opts.Name, tol.Bound, len(opts.Bound), n, ErrShape)
	}
	return nil
}

// boundAt is the bound term of element i: 0 where S is not a finite
// non-negative number, so a NaN bound can only make the rule stricter.
func (j *judge) boundAt(i int64) float64 {
	if j.bound == nil || j.tol.Bound == "" {
		return 0
	}
	if b := j.bound[i]; b > 0 && finite(b) {
		return float64(j.tol.BoundFactor * b)
	}
	return 0
}

func elementFormula(tol Tolerance) string {
	f := fmt.Sprintf("|c-g| <= %.3g + %.3g*rms(row) + %.3g*|g|", tol.ATol, tol.ATolRMSFactor, tol.RTol)
	if tol.Bound != "" {
		f += fmt.Sprintf(" + %.3g*%s", tol.BoundFactor, tol.Bound)
	}
	return f
}

// reportAllclose adds the informative allclose check of
// Tolerance.ReportAllclose: |c-g| <= a + a*|g| over the graded elements,
// a non-finite mismatch counting as a violation.
func (j *judge) reportAllclose() {
	a := j.tol.ReportAllclose
	if a <= 0 || j.tol.Mode != ModeAllclose {
		return
	}
	var of, viol int64
	var worst float64
	for i, g := range j.g {
		if j.mask != nil && !j.mask[i] {
			continue
		}
		of++
		c := j.c[i]
		if !finite(g) || !finite(c) {
			if !(g == c || g != g && c != c) {
				viol++
				worst = math.Inf(1)
			}
			continue
		}
		allowed := a + float64(a*math.Abs(g))
		d := math.Abs(c - g)
		if d > allowed {
			viol++
		}
		worst = max(worst, d/allowed)
	}
	j.r.Checks = append(j.r.Checks, Check{
		Rule: "allclose_gpumode", Formula: fmt.Sprintf("|c-g| <= %.3g + %.3g*|g| (reported, not graded)", a, a),
		Violations: viol, Of: of, Unit: "elements", Observed: Float(worst), Pass: viol == 0, Informative: true,
	})
}

// byteCoded reports whether golden is a float dtype stored as bytes
// (float8_e4m3fn, float8_e8m0fnu, float4_e2m1fn_x2): its candidates are
// |u1 files decoded through the dtype table.
func byteCoded(golden string) (dtype.DType, bool) {
	d, err := dtype.Parse(golden)
	if err != nil || !d.IsFloat() || d.Descr() != npy.Uint8 {
		return 0, false
	}
	return d, true
}

// readByteCoded reads a |u1 candidate of a byte-coded golden (the header
// already read and its shape checked) and decodes it: two values per byte
// for float4_e2m1fn_x2.
func readByteCoded(ctx context.Context, f io.Reader, have int64, path string, h npy.Header, dt dtype.DType) ([]float64, error) {
	if h.Descr != npy.Uint8 {
		return nil, fmt.Errorf("compare: candidate %s: %w: dtype %s for a %s output (want |u1 bytes)", path, ErrCandidate, h.Descr, dt)
	}
	want := h.NumBytes()
	switch {
	case have < want:
		return nil, fmt.Errorf("compare: candidate %s: %w: shape %v needs %d data bytes, file has %d", path, npy.ErrTruncated, h.Shape, want, have)
	case have > want:
		return nil, fmt.Errorf("compare: candidate %s: %w: %d bytes after the data", path, npy.ErrTrailingData, have-want)
	}
	if want > math.MaxInt/16 {
		return nil, fmt.Errorf("compare: candidate %s: %w: %d bytes do not fit in memory", path, ErrShape, want)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data := make([]byte, want)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fmt.Errorf("compare: candidate %s: %w: %v", path, npy.ErrTruncated, err)
	}
	dst := make([]float64, want*int64(dt.ElemsPerItem()))
	dt.Decode(dst, data)
	return dst, nil
}
