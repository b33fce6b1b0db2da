package golden

import "math"

// The negative controls of ops.md §8: kernels and selections broken on
// purpose. A judge that passes any of them is wrong; the tests show each
// one rejected by DSASelectionCheck or differing from the golden.

// DSAIndexerIgnoreCausal is DSAIndexer with every query row of a sequence
// seeing all L tokens (the next_n window ignored): with NN = 2, row 0 also
// scores token L-1.
func DSAIndexerIgnoreCausal(logits []float64, topkLogical, topkPhysical []int32, info []DSARowInfo, q []uint8, weights []float32, cache []byte, blockTable, seqLens []int32, dims DSAIndexerDims) error {
	return dsaIndexer(logits, topkLogical, topkPhysical, info, q, weights, cache, blockTable, seqLens, dims, dsaIndexerOpts{ignoreCausal: true})
}

// DSAIndexerReLUAfterWeight is DSAIndexer with the ReLU applied after the
// head weight: max(0, w*dot) instead of w*max(0, dot). It differs where a
// weight is negative.
func DSAIndexerReLUAfterWeight(logits []float64, topkLogical, topkPhysical []int32, info []DSARowInfo, q []uint8, weights []float32, cache []byte, blockTable, seqLens []int32, dims DSAIndexerDims) error {
	return dsaIndexer(logits, topkLogical, topkPhysical, info, q, weights, cache, blockTable, seqLens, dims, dsaIndexerOpts{reluAfterWeight: true})
}

// DSAIndexerNoKScale is DSAIndexer without the per-token key scale sc[s].
func DSAIndexerNoKScale(logits []float64, topkLogical, topkPhysical []int32, info []DSARowInfo, q []uint8, weights []float32, cache []byte, blockTable, seqLens []int32, dims DSAIndexerDims) error {
	return dsaIndexer(logits, topkLogical, topkPhysical, info, q, weights, cache, blockTable, seqLens, dims, dsaIndexerOpts{omitScale: true})
}

// DSANegDropIndex returns a copy of a top-k row with its first valid entry
// replaced by -1 (one selected token dropped).
func DSANegDropIndex(row []int32) []int32 {
	out := append([]int32(nil), row...)
	for i, x := range out {
		if x >= 0 {
			out[i] = -1
			break
		}
	}
	return out
}

// DSANegDuplicateIndex returns a copy of a top-k row with its last valid
// entry replaced by its first (one token dropped, another duplicated).
func DSANegDuplicateIndex(row []int32) []int32 {
	out := append([]int32(nil), row...)
	first, last := -1, -1
	for i, x := range out {
		if x >= 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first >= 0 && last > first {
		out[last] = out[first]
	}
	return out
}

// DSANegOffByOne returns a copy of a top-k row with every valid entry
// increased by one.
func DSANegOffByOne(row []int32) []int32 {
	out := append([]int32(nil), row...)
	for i, x := range out {
		if x >= 0 {
			out[i] = x + 1
		}
	}
	return out
}

// DSASparseAttentionMinusOneAsSlot0 is DSASparseAttention reading every -1
// entry as slot 0 (a kernel that forgets the padding).
func DSASparseAttentionMinusOneAsSlot0(out, lse []float64, qNope, qPe, ckv, kpe []float32, indices []int32, dims DSAAttentionDims, smScale float64) error {
	return dsaSparseAttention(out, lse, qNope, qPe, ckv, kpe, indices, dims, smScale, dsaAttnOpts{minusOneAsSlot0: true})
}

// DSASparseAttentionLSEBase2 is DSASparseAttention reporting lse in base 2
// (FlashInfer-Bench's convention, not the natural log the bundle stores).
func DSASparseAttentionLSEBase2(out, lse []float64, qNope, qPe, ckv, kpe []float32, indices []int32, dims DSAAttentionDims, smScale float64) error {
	return dsaSparseAttention(out, lse, qNope, qPe, ckv, kpe, indices, dims, smScale, dsaAttnOpts{lseBase2: true})
}

// DSASparseAttentionScale576 is DSASparseAttention with sm_scale
// 1/sqrt(576) (the absorbed head dimension) whatever smScale says.
func DSASparseAttentionScale576(out, lse []float64, qNope, qPe, ckv, kpe []float32, indices []int32, dims DSAAttentionDims, _ float64) error {
	return DSASparseAttention(out, lse, qNope, qPe, ckv, kpe, indices, dims, 1/math.Sqrt(576))
}

// DSASparseAttentionReadCanary is DSASparseAttention with the first valid
// entry of every row replaced by canary, a slot no row selects (in hostile
// cases a NaN page), as a kernel that reads a wrong page would.
func DSASparseAttentionReadCanary(out, lse []float64, qNope, qPe, ckv, kpe []float32, indices []int32, dims DSAAttentionDims, smScale float64, canary int32) error {
	bad := append([]int32(nil), indices...)
	for r := range dims.T {
		row := bad[r*dims.K : (r+1)*dims.K]
		for i, x := range row {
			if x >= 0 {
				row[i] = canary
				break
			}
		}
	}
	return DSASparseAttention(out, lse, qNope, qPe, ckv, kpe, bad, dims, smScale)
}
