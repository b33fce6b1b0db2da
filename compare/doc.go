// Package compare is goldset's judge: it compares a candidate kernel output
// with its golden and produces a report (docs/spec.md §6).
//
// # Inputs
//
// Compare takes the golden and the candidate as decoded float64 slices
// (Decode converts .npy data: <f2, <f4, <f8, <u2 as bfloat16 bits when the
// manifest says bfloat16, and the integer dtypes), a row-major shape, a
// Tolerance (stored in the manifest next to each golden) and Options (a
// report name and an optional mask of graded elements, e.g. Quest kmax/kmin
// past nb, docs/spec.md §5a). A candidate may be stored in a wider dtype than the
// golden (an fp32 result for an fp16 output); it is judged by the output
// dtype's tolerance. The golden is normally the one in the output dtype
// (role golden); every default below also holds against the float32 truth.
//
// Slices whose length does not match the shape, negative dimensions and
// masks of the wrong length wrap ErrShape; an unusable Tolerance wraps
// ErrTolerance. Empty tensors pass. A 0-d tensor is one element.
//
// # Rows
//
// A row is the last Tolerance.RowAxes axes (default 1: the last axis):
// C[m, :] for matmul, Y[m, :] for softmax, out[b, h, :] for attention,
// scores[b, h, :] and selected[b, h, :] for Quest. Row statistics use the
// row's graded elements whose golden is finite.
//
// # Rules (allclose mode)
//
// With g the golden, c the candidate, rms(row) = sqrt(mean g^2) over the
// row:
//
//	nonfinite:   NaN where and only where g is NaN (any payload), +Inf
//	             where g is +Inf, -Inf where g is -Inf
//	elementwise: |c-g| <= atol + atol_rms_factor*rms(row) + rtol*|g|
//	             for every element with g and c finite
//	row_rel_l2:  ||c-g|| <= row_rel_l2*||g|| + atol*sqrt(n) per row
//	             (n: the row's finite pairs; off when 0)
//	row_sum:     |sum(c row) - 1| <= row_sum + sum_i spacing(g_i)/2 (what a
//	             correct rounding of every element may add up to: many equal
//	             tiny outputs all round the same way) per row whose golden is not
//	             all zero (softmax; off when 0; a non-finite c fails it)
//
// The status is PASS when every rule holds; the failed rules are named in
// Report.Failed, e.g. "elementwise |c-g| <= 1.19e-07 + 0.01*rms(row) +
// 0.01*|g| violated at 12 of 4096 elements". The atol*sqrt(n) term forgives
// the format's resolution in the row rule as atol does elementwise: a row
// of fp16 subnormals (softmax over 151936 entries, ~6.6e-6 each) cannot be
// closer to a float64 truth than rounding puts it (relative L2 ~2.6e-3).
//
// Exact mode compares float64 bit patterns: decoding keeps NaN payloads,
// so for a candidate in the golden's dtype this is byte identity (-0 is not
// +0; differing NaN payloads differ). It is meant for integers, indices,
// caches and block metadata.
//
// Set mode compares each row as a multiset after dropping the SetIgnore
// values (Quest selected: -1): order is free, a missing or extra block id
// fails, a duplicated id fails (the golden never has duplicates, and a
// selection fed to sparse attention must not), a NaN matches nothing.
// Mismatches are counted in rows; indices name rows (the leading axes).
//
// # Report
//
// Metrics cover graded pairs with both sides finite; non-finite mismatches
// are counted apart (nan_mismatch: NaN on one side only; inf_mismatch: an
// infinity not matched by the same infinity; inf_sign_mismatch: +Inf
// against -Inf).
//
//	max_abs            max |c-g| (index max_abs_index)
//	max_rel            max |c-g| / max(|g|, rel_floor), rel_floor = smallest
//	                   normal of the output dtype (fp16 2^-14, bf16 and fp32
//	                   2^-126): below it the format has no fixed relative
//	                   precision, and without the floor a correctly rounded
//	                   fp16 subnormal would count as a 0.5% error
//	double_thousandth  share of graded elements with |c-g| > 1e-3*max(|g|,
//	                   rel_floor), non-finite mismatches included (Ascend
//	                   precision metric; reported, not graded)
//	max_ulp            max distance in ulps of the output dtype: both values
//	                   rounded to it (nearest even) and their sign-magnitude
//	                   bit patterns mapped onto a line where -0 = +0; 0 for
//	                   integer dtypes
//	rel_l2             ||c-g|| / ||g|| over the tensor (+Inf if ||g|| = 0 < ||c-g||)
//	worst_row_rel_l2   largest per-row ||c-g||/||g|| (rows with ||g|| > 0)
//	cosine             <c,g> / (||c|| ||g||); 1 if both are zero, 0 if one is
//	mismatch_count     elements breaking the nonfinite or elementwise (exact)
//	                   rule; rows in set mode; mismatch_ratio over graded
//	first_mismatch     lowest such index (row-major)
//	worst_index        allclose: the element with the largest
//	                   |c-g|/allowance (worst_ratio; <= 1 within tolerance),
//	                   pass or fail; exact: the largest |c-g| among
//	                   mismatches; a non-finite mismatch ranks first
//	row_sum_max_err    max |sum(c row) - 1| when row sums are checked
//
// Indices are multi-dimensional. JSON uses the struct tags; Float writes
// non-finite values as "NaN", "+Inf", "-Inf". WriteText renders a few lines.
//
// # Chains (chain.go)
//
// A pipeline chain's stage cases are judged one by one, each output under
// its own tolerance; ChainVerdict orders them by scheduler step, then
// stage, names the first that fails (First) and keeps every later stage's
// reports: a wrong cache write at step s usually fails the attention after
// it and the later writes, and the verdict shows all of them while naming
// the write. A stage given no candidate is SKIPPED; a chain with nothing
// judged is SKIPPED, not PASS.
//
// # Tolerance families
//
// compare knows no op names. It exports tolerance families (Family); each
// op picks one per output (package suite's op table, which is where an
// unknown op or output is an error) and Family.Tolerance(dtype) gives the
// rule for the dtype the output is stored in, or an error wrapping
// ErrTolerance when the family has no row for it (an integer dtype in a
// floating family, a format a table lacks): there is no fallback row.
// WithBasis only renames the recorded Basis (e.g. "exact/cache").
//
// p is the significand precision (fp16 11 bits, bf16 8, fp32 24); one
// spacing at 1 is 2^(1-p): fp16 9.766e-4, bf16 7.8125e-3, fp32 1.19e-7.
// floor = 2^-23 for fp16 (two subnormal spacings), else the smallest
// normal 2^-126 (subnormals may be flushed).
//
//	family          dtype  rtol   atol   atol_rms_factor  row_rel_l2  row_sum  used by
//	MatmulLike      fp16   1e-3   floor  1e-3             1e-3        -        matmul c
//	                bf16   8e-3   floor  8e-3             8e-3        -
//	                fp32   1e-5   floor  1e-4             2e-5        -
//	SoftmaxLike     fp16   1e-3   floor  -                1e-3        2e-3     softmax y
//	                bf16   8e-3   floor  -                8e-3        1e-2
//	                fp32   1e-5   floor  1e-5             1e-5        1e-5
//	AttentionLike   fp16   1e-2   floor  1e-2             2e-3        -        paged_attention and
//	                bf16   2e-2   floor  2e-2             1e-2        -        quest out
//	                fp32   1e-4   floor  1e-4             5e-5        -
//	LSE             any    1e-5   1e-4   -                -           -        lse (float32)
//	Scores          any    1e-4   floor  1e-4             -           -        quest scores (f32)
//	RowMax          any    0      0      (numeric equality: a max is exact)    softmax row_max
//	RowSum          any    2e-4   floor  -                -           -        softmax row_sum
//	(row_sum is the online state, a cross-check: one fp32 running sum over
//	151936 terms drifts ~1e-4, so its limit is looser than Y's.)
//	Exact           any dtype, bit-identical       reshape_and_cache caches, quest kmax/kmin
//	SetWithPadding  any dtype, multiset per row    quest selected (pad -1)
//	MXValue         any float dtype, numeric equality (-0 = +0, NaN = NaN)   MXFP4 codes, fp8,
//	                                               dequantized values (MXStrict: exact, for strict cases)
//	MXScale         bit-identical, masked by the op   MXFP4 scale bytes (all-zero blocks ungraded)
//	MXGEMM          bf16   2^-8   floor  -  2^-8  -  + 2^-18*S    mxfp4 gemm y, moe out
//	                fp32   2^-23  floor  -  2^-20 -  + 2^-18*S    (the truth's row)
//	MXMoEActBF16    as MXGEMM with + 2^-16*S              moe out with act_round bfloat16
//
// float64 outputs (not produced by the spec) get 1e-12-scale limits.
//
// # MXFP4 families (family_mx.go)
//
// MXValue compares decoded values with zero tolerance, so a code, fp8 byte
// or dequantized value must be the golden's value; the only freedom is the
// sign of zero (E2M1 codes 0 and 8, e4m3 0x00 and 0x80) and NaN payloads.
// MXScale is exact mode; the op's mask leaves out scales whose block holds
// no nonzero code. MXGEMM adds Tolerance.Bound: BoundFactor*S[i] joins the
// elementwise allowance, S read from the aux tensor the tolerance names
// (Options.Bound; a non-finite or negative S adds nothing), and with
// ReportAllclose an informative check (Check.Informative, never graded)
// reports GPU MODE's allclose(1e-2) beside the graded rules. Judged
// against the float32 truth, a correctly rounded bf16 result is within
// 2^-8|g| (half a spacing) and an fp32-accumulating kernel's error is a
// small multiple of 2^-24*S, under 2^-18*S (docs/spec.md §9). Byte-coded
// candidates (|u1 files for float4_e2m1fn_x2, float8_e8m0fnu,
// float8_e4m3fn goldens) are decoded through the dtype table.
//
// # Accepted alternatives (alt.go)
//
// Family.WithAlt(aux, group) records Tolerance.Alt and AltGroup: the case
// stores a second convention's values in the aux tensor (equal to the
// golden wherever the two agree) and the caller passes them as
// Options.Alt. Before the rules run, every group of AltGroup consecutive
// elements in which the alternative differs from the golden and the
// candidate equals the alternative throughout (bits in exact mode, values
// otherwise) is judged as the golden; an informative "alternative" check
// counts those elements. Nothing else changes, so a value that is
// neither, or one off where the two agree, fails as before. Used where
// both conventions are defensible and the golden follows one: the
// fp32-scale DSA index cache (float32 division or one rounding,
// docs/spec.md §8a, group 1) and MXFP4 rceil below 2^-127 (triton_kernels'
// byte 1 and its codes, §9a, group 32 for the codes).
//
// The DSA families (family_dsa.go, mode "dsa", docs/spec.md §8) need
// per-row facts of the case, which the caller passes as Options.DSA (suite
// reads them from the bundle's aux tensors):
//
//	DSASelection  int32 index rows: golden.DSASelectionCheck's tie band,
//	              eps = eps_rel*A, eps_rel 2^-12 (float32 logits) or 2^-7
//	              (bfloat16, DSAData.LogitsDType); max_abs reports
//	              FlashInfer-Bench's sorted-score difference, never binding
//	DSALogits     |d| <= eps_rel*A + 2^-20*|g| (eps_rel by the stored dtype),
//	              the -inf mask equal
//	DSAAttention  |d| <= 2^-7*|g| + 2^-8*max|v_sel|, row rel L2 <= 2^-7,
//	              one valid index: bit for bit
//	DSALSE        |d| <= 2^-13*max(|g|, 1); either infinity where g = -inf
//
// The bound is the spec's argument: the indexer's dots are exact, so a
// float32 kernel errs by a few float32 roundings of terms bounded by A;
// bf16 logits carry 2^-9 relative error, hence 2^-7. On an H200 the worst
// error / bound was 5.1e-4 (fp32 logits), 0.27 (bf16 logits at 2^-7),
// 0.056 / 0.32 (fp32 / bf16-P MLA out), 0.0011 (lse): docs/dsa-h200.log.
//
// # Why a correct kernel passes
//
// Let x be the exact value, x' the kernel's value before its final
// rounding with error d = |x'-x|, c = rnd(x'), g = rnd(x).
//
// One spacing always passes. If c and g are adjacent representable values
// a < b (same sign), b - a = ulp(a) <= 2^(1-p)*|a| <= 2^(1-p)*|g| for
// normal a, and rtol >= 2^(1-p) in every fp16/bf16 row (1e-3 > 9.766e-4,
// 8e-3 > 7.8125e-3): the flip uses at most 97.7% of the allowance, a
// deterministic bound, not a tail. Near zero a flip is one subnormal
// spacing (fp16 2^-24, half the floor; bf16/fp32 subnormals are under the
// floor). So any kernel whose relative error stays below 2^-p (fp16 4.9e-4,
// bf16 3.9e-3), which keeps c within one spacing of g, passes elementwise.
//
// Absolute errors pass through the RMS term. In general
// |c-g| <= |c-x'| + d + |x-g| <= 2^(1-p)/(1-2^-p)*|g| + (1+2^-p)*d (plus
// a subnormal spacing), so any d <= atol_rms_factor*rms(row)/(1+2^-p)
// passes whatever |g| is. This is what covers cancellation, where an
// element is much smaller than its row (matmul and attention outputs near
// zero), and the per-term rounding of the probabilities P that flash
// attention feeds to its P@V product in fp16/bf16.
//
// Sizes of d for fp32-accumulating kernels (u = 2^-24):
//   - matmul: fp16/bf16 products are exact in fp32; sequential fp32
//     summation of K terms errs by ~u*sqrt(K/6)*rms per element (2.7e-6*rms
//     at K = 12288, ~1.6e-5*rms at 6 sigma): under the fp16 term 1e-3*rms by
//     60x and the fp32 term 1e-4*rms by 6x. Relative L2 of a correctly
//     rounded result against the truth is <= 2^-p (fp16 4.9e-4, bf16
//     3.9e-3), half the row limits.
//   - softmax: errors are relative (exp, the denominator), ~1e-6 with tiled
//     reductions; even one naive fp32 accumulator per row, whose stagnation
//     loses up to 2e-4 of the denominator on long peaked rows (151936
//     entries, logits of std 3-4), stays below 2^-p for fp16/bf16 and
//     passes. fp32 outputs assume tiled/tree reductions (errors ~3e-7): the
//     naive 2e-4 is ~1700 fp32 ulps and fails on purpose. Row sums of
//     correctly rounded outputs deviate from 1 by <= 2^-p in the worst
//     (single dominant entry) case and by ~sqrt(N)*spacing/sqrt(12) for
//     flat rows: within 2e-3 (fp16) and 1e-2 (bf16).
//   - attention: rounding P to the input dtype gives d ~ 2^-p/sqrt(3)*rms
//     per element (fp16 2.8e-4*rms, bf16 2.3e-3*rms; 6 sigma: 1.7e-3, 1.4e-2)
//     against atol_rms_factor = rtol = 1e-2 / 2e-2; row relative L2 ~4e-4
//     (fp16) and ~4e-3 (bf16) against 2e-3 and 1e-2. fp32 attention sums P*V
//     over up to 40960 tokens: relative errors ~5e-6 for sequential
//     accumulation, so 1e-4 elementwise and 5e-5 per row (the spec's 1e-5
//     would leave a 2x margin).
//   - lse: an absolute error e on lse is a relative error e on the softmax
//     denominator; fp32 denominators err by ~1e-6 (tiled) to ~1e-5
//     (sequential over 40960) and fp32 scores by ~|s|*4u, so atol 1e-4 plus
//     rtol 1e-5 (for large |lse|) leaves >= 10x margin.
//   - quest scores: 128 exact products summed in fp32 (128*G for
//     kv_group_sum): worst-case bound (n-1)*u*sum|terms| = 6.1e-5*sum|terms|
//     at n = 1024, typical ~sqrt(n)*u ~ 2e-6; hence 1e-4 relative plus
//     1e-4*rms(row).
//
// The simulated kernels in the tests (kernel_test.go) measure these margins:
// fp32 accumulation, fp32 exp with up to 4 ulps of error, tiled online
// softmax, flash-decoding with P rounded to the input dtype.
//
// # Why the defaults are not vacuous
//
// All-zero output fails every graded case: in a row whose golden is not
// (near) zero, max|g| >= rms(row), and the allowance at that element is
// atol + (atol_rms_factor + rtol)*max|g| < max|g| because atol_rms_factor +
// rtol <= 0.04 in every row of the table and atol is the format's
// resolution; independently, a zero row has relative L2 1 > row_rel_l2
// and a zero softmax row sums to 0, not 1. Zero lse fails unless every
// |lse| <= 1e-4, and lse >= max score + log(1) is log(L) + O(1). Only a
// golden that is itself zero up to the format's resolution (fully masked
// softmax rows, kept out of graded cases) accepts zeros.
//
// The tests also reject, with these defaults: a skipped K tile in matmul
// (all dtypes), a bf16 round trip of an fp32 or fp16 result, a softmax
// denominator missing one tile, fp16 intermediates in an fp32 softmax, one
// skipped 16-token block at L = 2000 (out and lse), a wrong GQA head
// mapping, bf16-rounded Quest scores, and a finite score where the golden
// has -inf. What no tolerance can see is an error below its allowance: at
// L = 40960 an unmasked tail of a few tokens moves fp16 attention outputs
// by ~1e-4 relative; the spec catches those with NaN-filled tails (the
// nonfinite rule), short-context cases and lse (1e-4 absolute).
//
// # Determinism
//
// Everything is computed sequentially in float64 in row-major order with
// every product rounded before it is added (no FMA), so reports are
// bit-identical across machines. The relative-error comparisons are made
// as |c-g| > t*den rather than by dividing.
package compare
