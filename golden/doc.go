// Package golden holds the reference kernels that compute goldset's golden
// outputs: matmul, softmax, reshape_and_cache, GQA paged attention and the
// Quest sparse-attention parts. The normative semantics are in the
// repository's docs/spec.md (section numbers below refer to it); this
// comment pins down the layouts and the exact arithmetic.
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
// MatmulF32, SoftmaxF32, PagedAttentionF32 and SparseAttentionF32 are
// honest float32 kernels the comparator must accept.
//
// Package goldentest is a conformance suite any implementation of these
// signatures can run.
package golden
