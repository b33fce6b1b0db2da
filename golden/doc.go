// Package golden holds the reference kernels that compute goldset's golden
// outputs: matmul, softmax, reshape_and_cache, GQA paged attention, the
// Quest sparse-attention parts and the MXFP4 kernels. The normative
// semantics are in the repository's docs/spec.md (section numbers below
// refer to it; the MXFP4 section's §9 is shared/spec/ops.md's, which
// docs/spec.md reserves); this comment pins down the layouts and the exact
// arithmetic.
//
// # Conventions
//
// Kernels follow gonum: destination first, flat row-major slices with
// explicit dimensions. Float inputs are []float32 holding the exact values
// of the stored tensors (fp16, bf16 and fp32 values are all exact in
// float32); integer inputs are []int32. Float outputs are []float64, the
// result before the single rounding to the stored dtype, which the caller
// does (npy's converters). Wrong slice lengths panic with a constant
// string; bad data (sizes, context lengths, block-table entries, slots,
// selections, K) returns an error wrapping ErrInvalidParams,
// ErrOutOfRange or ErrContextLen. Inputs are never modified.
//
// Determinism: every product of two float32 values is exact in float64,
// and every product that feeds an addition is wrapped in float64(...) so
// no compiler may fuse it into an FMA; exp and log come from
// internal/detmath. Work is split into independent units (matmul: row
// pair x 256 columns; softmax: row; paged attention: sequence; sparse
// attention: sequence x query head; Quest: sequence), each computed the
// same way on any worker, so results are bit-identical for any GOMAXPROCS
// and on every GOARCH.
//
// # Matmul (§1)
//
// a [M,K], b [K,N] (or [N,K] with bNK), dst [M,N]. dst[i,j] =
// sum_{p=0..K-1} a[i,p]*b[p,j], added in p order starting from 0; both
// layouts give the same bits. MatmulF32 accumulates in float32.
//
// # Softmax (§2)
//
// x [M,N], dst [M,N], rowMax [M], rowSum [M] (either may be nil). m =
// max_j x; e_j = exp(x_j - m) (exactly 0 for -Inf); rowSum = sum_j e_j in j
// order; dst_j = e_j / rowSum. A fully masked row gives m = -Inf, rowSum 0,
// dst 0. NaN (or +Inf) in a row makes the row NaN.
//
// # ReshapeAndCache (§3)
//
// key, value [T,Hkv,D]; caches and dst [NB,BS,Hkv,D]; slotMapping [Ts],
// Ts <= T. dst = cache with row s replaced by key[t] for every t whose
// slot s is >= 0. Generic over the element type: with []uint16 raw bits the
// copy is bit-exact, NaN payloads included. Slots >= NB*BS and duplicate
// slots are errors, checked before anything is written.
//
// # PagedAttention (§4)
//
// q [B,Hq,D]; kCache, vCache [NB,BS,Hkv,D]; blockTables [B,MAXB];
// contextLens [B]; out [B,Hq,D]; lse [B,Hq]. G = Hq/Hkv; head h reads KV
// head h/G; token j < L lives at (blockTables[b, j/BS], j%BS). Only those
// rows are read. For each head:
//
//	dot_j = sum_d q[d]*k_j[d]            d order, exact products
//	s_j   = scale * dot_j                 scale is the float64 parameter
//	m     = max_j s_j
//	p_j   = exp(s_j - m)
//	den   = sum_j p_j                     token order
//	acc_d = sum_j float64(p_j*v_j[d])     token order, product rounded first
//	out_d = acc_d / den,  lse = m + log(den)
//
// Tokens run in logical order (block 0 slot 0 first). The kernel computes
// several heads and tokens at once for speed but every quantity above is
// the same sequential sum, so grouping never changes a bit.
//
// # Quest (§5)
//
// BlockMetadata: kmax, kmin [B,MAXB,Hkv,D], element-wise max/min over the
// valid tokens of logical block i < nb = ceil(L/BS) (+0 > -0); 0 for
// i >= nb. BlockScores: scores [B,Hsel,MAXB] with Hsel = Hq (QHead) or
// Hkv (KVGroupSum); per head sum_d max(q*kmax, q*kmin) in d order, no
// scale; KVGroupSum adds the G head scores in head order; -Inf for i >= nb.
// SelectBlocks: selected [B,Hsel,K]; K >= nb selects [0,nb); otherwise the
// anchors, then score descending, index ascending; sorted ascending, -1
// padded; returns the selection margin (see SelectBlocks). SparseAttention:
// PagedAttention's arithmetic over the valid tokens of the selected blocks,
// taken in ascending block order, so selecting all blocks reproduces
// PagedAttention bit for bit.
//
// # UnifiedAttention (§12)
//
// vLLM V1's mixed-batch attention (unified_attention): query [T,Hq,D],
// keyCache/valueCache [NB,BS,Hkv,D] (PagedAttention's layout, which is
// vLLM's NHD flash layout), blockTable [S,MAXB], seqLens [S],
// queryStartLoc [S+1] (vLLM's cu_seqlens_q / seqused_k naming in the
// kernel, query_start_loc / seq_lens in the metadata); out [T,Hq,D], lse
// [T,Hq], UnifiedDims. Query token i of sequence s (Q = its query length,
// L = seqLens[s]) is PagedAttention's row with context length L-Q+i+1 over
// block-table row s: the same arithmetic and bits (tested). One unit per
// query token, all heads. Tokens past queryStartLoc[S] (graph padding)
// and zero-length rows read nothing; padded tokens' out and lse are 0.
// The public API the pipeline suite calls:
//
//	UnifiedAttention(out, lse, query, keyCache, valueCache, blockTable, seqLens, queryStartLoc, dims, scale)
//	UnifiedAttentionHalf(..., keyCache, valueCache []uint16, ht HalfType, ...)
//	UnifiedAttentionF32 (honest float32), UnifiedAttentionNegative(..., bug UnifiedBug)
//
// # MXFP4 (ops.md §9)
//
// mxfp4.go, mxfp4_gemm.go, mxfp4_moe.go. E2M1 codes 0..7 are 0, 0.5, 1,
// 1.5, 2, 3, 4, 6 (dtype.E2M1ToF64), bit 3 the sign (8 = -0); byte i of a
// packed row holds element 2i in bits 0-3 and 2i+1 in bits 4-7. E8M0 byte
// b is 2^(b-127). codes [rows, k/2], scales [rows, k/32], k % 32 == 0.
//
// MXFP4Quantize / MXFP4QuantizeBF16 (§9a): per block of 32, amax = the
// largest magnitude (on the float32 bits), then MXScaleByte: amax 0 gives
// byte 0; otherwise, with E = floor(log2 amax) and f the significand in
// [1, 2), all read off the bits (subnormals normalized):
//
//	rceil (default)  e = E - 2 + [f > 1.5]     = ceil(log2(amax/6))
//	floor            e = E - 2
//	ceil             e = E - 2 + [f > 1]       = ceil(log2 amax) - 2
//	even             e = floor(log2 a') - 2,  a' = bits(amax) + 2^21 (= E-2+[f >= 1.75])
//	byte             clamp(e + 127, 0, 254)
//
// Elements: x*2^(127-b) to the nearest E2M1 value, ties to the even code,
// saturating to 6, sign kept (-0 and negatives that round to zero are code
// 8). Implemented as comparisons of |x|'s bits against the exact float32
// midpoints m*2^(b-127), m in {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5} (and,
// for b >= 3, an equivalent table on x's exponent relative to b, its top
// three fraction bits and a sticky bit): an E2M1 RNE at a given scale
// exponent on the float32 bits, which internal/dtype does not offer (its
// E2M1FromF64 rounds a float64 at scale 1; TestMXFP4QuantizeVsNaive checks
// the two agree on every element). On amd64 with AVX-512 (F, BW, VL) the
// block maxima, the seven compares per element and the nibble packing run
// as integer vector code with the same results (TestMXFP4QuantizeVecMatchesGo;
// the purego tag and GODEBUG=cpu.avx512f=off select the Go loops). NaN or
// Inf input is ErrNonFinite, nothing written (a vector max-abs scan runs
// first).
//
// Sources. triton_kernels
// (triton-lang/triton python/triton_kernels/triton_kernels/numerics_details/mxfp_details/_downcast_to_mxfp.py
// @0616e64515491718b6576b4cb3ba521f52a56d68): ROUND_UP takes fl32(amax/6)
// and rounds its exponent up with (bits + 0x7FFFFF) & 0x7F800000; the
// elements are RNE with guard/sticky, min(code, 7) saturation and the sign
// bit copied, as here. For normal quotients the float32 division never
// moves the exponent (amax = 6*2^e + j ulps gives a quotient at least 2j/3
// ulps above 2^e, so it rounds above 2^e), so rceil above equals it. It
// differs below: for amax <= 6*2^-127 the quotient is a float32 subnormal
// and the bit trick gives byte 1 where the exact rule, and torchao's
// _f32_to_e8m0_rceil (byte 0 unless the subnormal exceeds 2^-127), give 0;
// the goldens follow the exact rule, and MXFP4QuantizeRoundUpBits
// (MXScaleByteRoundUpBits) writes triton_kernels' form, which suite stores
// as the accepted alternative of such cases. mxfp.py
// (@018a674f6d6d2b2ecedbb6225dc71721677b4cec) ROUND_DOWN divides by 4 and
// truncates: the floor mode. torchao
// (pytorch/ao torchao/prototype/mx_formats/mx_tensor.py
// @050515e8a09c3fcad27b5fac7ad1c742f13c97f3): FLOOR, CEIL and EVEN read the
// exponent field, EVEN adds 1 << (23 - 1 - 1) and masks, the exponent is
// clamped to [-127, 127] for finite amax, byte 0 decodes to 2^-127 (FP32
// subnormal 0x00400000). gpt-oss (openai/gpt-oss gpt_oss/torch/weights.py
// @1983a9d74027aa49ed4be004c726004e22db48d2): FP4_VALUES, low nibble =
// element 2i, ldexp by b - 127.
//
// MXFP4Dequantize / MXFP4DequantizeBF16 (§9b): E2M1[c]*2^(b-127), exact
// for every b <= 252 and for b = 253 (codes up to 3) and 254 (up to 1.5);
// products >= 2^128 are +-Inf; byte 255 is NaN (0x7FC00000 / 0x7FC0) for
// every code; byte 0 is 2^-127. The bf16 bits are the top halves of the
// float32 bits (every finite product has two significant bits and is
// >= 2^-128). triton_kernels' upcast kernel
// (_upcast_from_mxfp.py @01757dc263bbb944c504c2b0c62a45d44eeee4a0) agrees
// on byte 0 (2^-127) and 255 (NaN) but clamps overflow to the largest
// finite value, and its torch reference upcast_from_mxfp_torch reads byte
// 0 as 0: both are outside the default suites (b in [2, 252]) and named
// by the edge split's convention.
//
// §9c: MXFP4ToMXFP8 maps each code to MXFP8Bytes (00 30 38 3C 40 44 48 4C,
// sign 0x80), scales unchanged. MXFP4FoldGroup folds g blocks (a last
// partial group takes the rest: FoldGroups = ceil(k/32/g)): S = max e_b -
// 6 over the blocks holding a code other than 0 and 8 (0 for an all-zero
// group), raised to -127 where lower (the group byte S+127 must exist);
// fp8 = dtype.E4M3FromF64(E2M1[c]*2^(e_b-S)) (RNE, saturating at 448,
// signed zero); group byte S+127 and float32 2^S (one ue8m0 scale per 128
// for G = 4, the granularity of DeepGEMM's 1x128 FP8 scales); inexact
// where a nonzero block has e_b
// - S < -8, i.e. more than 14 binades below the group max, the first gap
// where 0.5*2^(e_b-S) falls below e4m3's 2^-9 (groups not flagged
// reproduce every value exactly: TestMXFP4FoldGroupVsNaive). A group
// holding byte 255 gets byte 255, NaN and e4m3 NaN (0x7F | sign).
//
// §9d: MXFP4GEMM: y [m, n] = x [m, k] (bf16) @ W^T, W [n, k] MXFP4, and
// the bound s = sum_k |x*w|, both float64 sums over ascending k of exact
// products: W is decoded to float32 and Matmul runs twice (values, then
// magnitudes). MXFP4GEMMA4W4 takes x as MXFP4 (the caller quantizes it by
// §9a); MXFP4GEMMW4A8 takes x as e4m3 with one E8M0 byte per token per
// 128 from FP8QuantizePerToken, which follows DeepGEMM's
// per_token_cast_to_fp8(use_ue8m0=True) (deepseek-ai/DeepGEMM
// deep_gemm/utils/math.py @38939a4c494ce6e904b54da94a1183955a5e9497):
// amax clamped to >= 1e-4, e the smallest with amax <= 448*2^e (its
// fl32(amax/448) + ceil_to_ue8m0 gives the same e: the quotient is never
// rounded onto a power of two), byte clamp(e+127, 1, 254), elements RNE.
//
// §9e: MXFP4MoE, gpt-oss's block (gpt_oss/torch/model.py
// @0568dfc94f09469e2968c2b90e50561d1b3fc424 MLPBlock and swiglu;
// gpt_oss/triton/moe.py @40939cf4408f1a38ca9a34c23fbe088d89fd3027, whose
// moe() returns without the residual, as here): MoERoute takes the top k
// logits (ties to the lower expert) and a float64 softmax over them; per
// selected expert h = W1 x + b1 (bias after the sum), SwiGLU on the
// interleaved pairs (glu = h[2i] clamped above at 7, linear = h[2i+1]
// clamped to [-7, 7], glu*sigmoid(1.702*glu)*(linear+1)), o = W2 a + b2,
// out = sum_j w_j*o_j in rank order; nothing rounded inside except, with
// MoEDims.RoundAct, a rounded once to bf16 before W2 (the matmul_ogs chain
// of gpt_oss/triton/moe.py and of vLLM's OAI Triton experts stores the
// fused-SwiGLU output in the activation dtype; docs/spec.md §11). Tokens are
// grouped per expert (W decoded once per expert and chunk of tokens; the
// chunk keeps the float64 buffers under 256 MiB), each result a fixed
// sequential sum, so neither grouping nor chunking changes a bit; counts
// [E] gets the tokens per expert.
// MXFP4MoEExpert runs one expert on gathered token rows (the same bits as
// MXFP4MoE for those pairs) and the bound |a| @ |W2|^T + |b2|, for callers
// that hold one expert's weights at a time (package suite's streaming
// build combines the ranks as MXFP4MoE does).
//
// Fixture: testdata/mxfp4_fixture.txt (from testdata/mxfp4_fixture.py,
// run on the GPU machine with Python 3.12.3, numpy 2.5.2, ml_dtypes 0.6.0,
// torch 2.11.0+cu130): 87 blocks x 4 modes whose codes are ml_dtypes' RNE
// (astype float4_e2m1fn) of the scaled values, and the float32 decode of
// all 256 x 16 (scale byte, code) pairs by ml_dtypes and by torch
// (float8_e8m0fnu); TestMXFP4Fixture requires every byte and bit equal.
//
// Negative controls (mxfp4_negatives.go), each shown to differ from the
// golden in TestMXFP4NegativesDiffer: MXFP4QuantizeSwappedNibbles,
// MXFP4DequantizeBias128 (scale bias off by one), MXFP4QuantizeFloorForRceil,
// MXFP4QuantizeHalfAway, MXFP4QuantizeHalfDown (DeepGEMM's bucketize
// reference rounds ties down and drops the sign of zero: both are real),
// MXFP4QuantizeNoNegZero, MXFP4QuantizeScalePer16,
// MXFP4DequantizeScalesTransposed, MXFP4FoldGroupOffset7 (the largest block
// at 2^7 without regrouping: 6*2^7 saturates to 448), MXFP4GEMMBF16Acc,
// MXFP4DequantizeScaleAsE4M3.
//
// # Negative controls (§6)
//
// negatives.go: PagedAttentionWrongGQA, PagedAttentionTailUnmasked,
// SparseAttentionWrongGQA, SparseAttentionTailUnmasked,
// SparseAttentionSkipBlock and SoftmaxNoMaxF32 are broken on purpose;
// PagedAttentionHalf, SparseAttentionHalf and BlockMetadataHalf take the
// caches as raw float16/bfloat16 bits and give the float32 kernels' bits
// on the widened caches: rows are widened as they are read (half the
// memory traffic of a float32 copy) and the block max/min compare the bit
// patterns mapped to ordered integers. On amd64 with AVX-512, Matmul packs
// 16 columns of B into a float64 panel and runs 4x16 tiles, and paged
// attention takes the query heads of a KV head four at a time through
// score and value tiles (rows widened in registers); every lane keeps one
// output element's, score's or accumulator element's sequential sum
// (multiply, then add: never fused), so the bits are those of the scalar
// loops. The tiles run where golang.org/x/sys/cpu reports AVX-512F (and
// AVX2 with F16C for the half widening and Quest's block max/min); under
// GODEBUG=cpu.avx512f=off,cpu.avx2=off or in a -tags purego build the Go
// loops run.
//
// PagedAttentionFeed and SparseAttentionFeed run one sequence's attention
// on blocks a KVFeed hands over one at a time, K in the score pass and V
// in the value pass, each block once per pass (Quest's dense pass shares
// the sparse pass's blocks): a caller that produces its cache (the suite
// regenerates blocks from the generator) streams them through a small
// window instead of assembling the sequence. The passes are those of the
// cache path (attention.go: attend), and the bits depend only on the
// tokens' order, so the results are the same bits.
//
// MatmulF32, SoftmaxF32, PagedAttentionF32 and SparseAttentionF32 are
// honest float32 kernels the comparator must accept.
//
// # DSA: DeepSeek Sparse Attention (§8)
//
// dsa*.go. DSAIndexCache (8a) quantizes key rows k [T, DI] (bf16 values)
// into the index cache [NB, 64*DI + 64*4] bytes: per written slot s, block
// s/64, token o = s%64, sc = DSAIndexScale(max|k|): q = fl32(max(amax,
// fl32(1e-4)) / 448), ue8m0 rounds q up to a power of two exactly (the
// spec's 2^ceil(log2 q)), fp32 keeps q; codes e4m3(RNE, saturating to
// +-448)(fl32(k/sc)) at byte o*DI + d, then sc's float32 bits at byte
// 64*DI + 4*o, little-endian; negative slots are skipped, every other byte
// is copied unchanged (the codes 16 at a time by an AVX-512 kernel doing
// dtype.E4M3FromF32's integer steps on the float32 quotients). The float32 floor and division are vLLM's
// (fmaxf(amax, 1e-4) / 448.0f, then exp2f(ceilf(log2f(scale))) for
// ue8m0); a GPU log2f that rounds q a few ulps above a power of two down to
// an integer would pick the lower scale there, which the exact rule does
// not. DeepGEMM's test quantizes with x * (1/sf) instead of x / sf, which
// can differ by one code for the fp32 format only (ue8m0 scales are powers
// of two, where both are exact). ops.md rounds once from the exact k/sc;
// that differs from e4m3(fl32(k/sc)) where the float32 quotient lands on an
// e4m3 midpoint (fp32 scales only): DSAIndexCacheOneRounding writes that
// form, which suite stores as the accepted alternative of fp32 cases.
//
// DSAIndexer (8b, paged decode, next_n 1 or 2): query row (b, j) sits at
// position L_b - NN + j and sees s <= that position; dot[h,s] = sum_d
// q8*k8 is exact in float64 in any order (e4m3 values are multiples of
// 2^-9 below 2^9; partial sums stay multiples of 2^-18 below 2^34), so the
// kernel computes it over chunks of 2048 keys with Matmul's panel loop,
// the key codes packed straight into float64 panels, and is bit-equal to
// the naive d-order loop; I[s] = sc[s] * sum_{h ascending} float64(w*max(0, dot)),
// rounded once (float64 product) after the head sum (an AVX-512 kernel
// with keys in lanes, each lane adding its heads in order). Logits are I (stored float32), -Inf outside the window; top-k is
// by (I descending, position ascending), a strict total order, via a
// deterministic quickselect and a sort of the k chosen; topk_logical holds
// positions, topk_physical block_table[b, s/64]*64 + s%64, -1 padded.
// DSARowInfo records Visible, Kth (the last selected score), Gap (+Inf when
// all are selected) and A = max_s sc * sum_h |w| max(0, dot). A NaN score
// (a canary slot was read) is an error. DSAIndexerRagged is the prefill
// form over kv rows [ks, ke); DSACausalPrefillSpans builds ks = the
// sequence's first kv row and ke = ks + ctx + i + 1 for its new token i.
// DSAIndexerMargin (NN = 1, weights >= 0) divides the source key of every
// non-selected token with I > kth - tau*A by the smallest 2^n that takes I
// below, rewrites its slot, checks that the codes are unchanged and the
// scale divided by 2^n, and returns the demotions; keys in shared slots,
// scores of 0 and halvings past the 1e-4 floor are refused before anything
// changes.
//
// DSASparseAttention (8c): per row, the distinct valid slots in ascending
// order (any row order gives the same bits), dn and dp summed in d order
// (Matmul), x = smScale*(dn + dp), m = max, p = exp(x - m), den = sum p,
// out = sum float64(p*ckv)/den (summed in slot order: Matmul's unfused
// tiles with the float64 p [H, n] as A), lse = m + log(den) (natural log; stored
// float32; out is stored bf16 with its float32 rounding as the truth). No
// valid slot: out 0, lse -Inf. DSABlockHeader (8d): (valid tokens,
// logical start) per physical block from its first reference in
// (sequence, position) order, (0, -1) when unreferenced.
//
// DSASelectionCheck is the tie-band judge (set semantics, reachability in
// either index space, no duplicates, the band with eps = eps_rel*A, set
// equality where gap > 2*eps); DSASortedScoreDiff is FlashInfer-Bench's
// sorted-score comparison, reported, never binding. The negative controls
// of §8 are DSAIndexerIgnoreCausal, DSAIndexerReLUAfterWeight,
// DSAIndexerNoKScale, DSANegDropIndex, DSANegDuplicateIndex,
// DSANegOffByOne, DSASparseAttentionMinusOneAsSlot0,
// DSASparseAttentionLSEBase2, DSASparseAttentionScale576 and
// DSASparseAttentionReadCanary; "logical where physical is expected" is
// topk_logical judged in DSAPhysical space.
//
// Sources read for these contracts (repository, path, commit):
//   - vllm-project/vllm vllm/v1/attention/backends/mla/indexer.py
//     0023368d052caf392d159ab32d380a807a89be99: decode token j sees
//     seq_len - next_n + j + 1 tokens; prefill cu_seqlen_ks = the
//     sequence's row start, ke = ks + (seq_len - query_len) + 1 + i; the
//     CUDA indexer block size is 64.
//   - vLLM's indexer_k_quant_and_cache_kernel (csrc/cache_kernels.cu, read
//     through the code index in copies of vLLM; the vllm-project/vllm
//     version stored there, 693083ae80680811c9c2a22edad2568e6635e190,
//     predates it): fmaxf(amax, 1e-4)/448, ue8m0 exp2f(ceilf(log2f)),
//     codes at block*block_bytes + offset*head_dim, the fp32 scale at
//     block*block_bytes + 64*head_dim + 4*offset; slot < 0 skipped.
//     Its codes come from fp8::scaled_convert, for bf16 input
//     __nv_cvt_float_to_fp8(__bfloat162float(a) / scale, __NV_SATFINITE,
//     ...): the float32 quotient, rounded once more (vllm-project/vllm
//     csrc/quantization/fp8/nvidia/quant_utils.cuh
//     03476e5c1184648abcfd1573b630bcd81741a555).
//   - vllm-project/vllm vllm/v1/attention/backends/mla/flashmla_sparse.py
//     008a0c31dc020099dd40e8a2b7d2bdb37699b047: block size 64, head size
//     576 (512 NoPE + 64 RoPE).
//   - deepseek-ai/DeepGEMM tests/test_attention.py
//     00b1d2db6f02dfbcbe5e4ab8f9bb3fbdffc19f3b: ref_fp8_paged_mqa_logits
//     (mask k <= context_len - next_n + j, relu(s) * weight summed over
//     heads, -inf elsewhere), kv_cache_cast_to_fp8 (amax.clamp(1e-4)/448,
//     all codes of a block, then its fp32 scales), ref_fp8_mqa_logits
//     (rows see [ks, ke)).
//   - deepseek-ai/FlashMLA tests/ref.py
//     a123d0b0191e0da7aa1e044f8644e0989cc63220 and
//     tests/test_flash_mla_sparse_decoding.py
//     cfc99c275bf1e94f7e1dd01516c0750078c2f908: -1 entries masked, natural
//     logsumexp, a query with no valid index gets out 0 and lse +Inf.
//   - flashinfer-ai/flashinfer-bench flashinfer_trace/definitions/dsa_paged/
//     dsa_topk_indexer_fp8_h64_d128_topk256_ps64.json
//     8b7cb4b13f1c115a287b653a11d46e903c139811 (page = 64*128 code bytes
//     then 64 fp32 scales; sum_h relu(q.k)*w; physical = page*64 + offset,
//     -1 padding) and dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64.json
//     2b6440b2d4b09387588b64dc6504cfad9ccaa07e (sm_scale 1/sqrt(128+64),
//     indices page*64 + offset with -1 padding; its lse is base 2, which the
//     bundle's natural-log lse rejects as a negative control).
//
// Package goldentest is a conformance suite any implementation of these
// signatures can run.
package golden
