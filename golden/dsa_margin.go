package golden

import (
	"fmt"
	"math"
	"slices"
)

// DSADemotion records one key demoted by DSAIndexerMargin.
type DSADemotion struct {
	Seq      int     // sequence
	Pos      int     // logical position in the sequence
	Slot     int     // physical slot of the index cache
	Token    int     // row of k (the source key) written to the slot
	Halvings int     // the key and its scale were divided by 2^Halvings
	Before   float64 // I before
	After    float64 // I after (= Before / 2^Halvings exactly)
}

// DSAIndexerMargin plants a selection margin (ops.md §8b, "margin: tau")
// in a decode case with NN = 1 and non-negative weights: for every row it
// computes the golden scores, and every visible token outside the row's
// top-k with I > kth - tau*A has its source key k[t] (the row whose
// slot_mapping entry writes the token's slot) divided by the smallest 2^n
// that takes I below kth - tau*A, and its slot rewritten from the halved
// key. Halving a key leaves its e4m3 codes unchanged and divides only its
// scale (ue8m0 or fp32) by 2^n, so I is divided by 2^n exactly and the
// top-k, kth and A are unchanged; both facts are checked, not assumed.
// k and cache are modified in place (cache must be what DSAIndexCache
// wrote from k and slotMapping); the demotions are returned in (sequence,
// position) order. Every demotion is validated before anything is
// modified, so on error k and cache are untouched.
//
// It returns ErrInvalidParams when NN != 1, a weight is negative or NaN,
// tau is negative or not finite, a row with a token to demote has kth -
// tau*A <= 0 (no halving takes a score below it), lies in a slot that another row also sees (a shared
// page: demoting it would change that row), has no source row, or would
// take its key's amax below the 1e-4 floor or a value below the smallest
// normal (either would change the codes).
func DSAIndexerMargin(k []float32, slotMapping []int32, cache []byte, cdims DSACacheDims, f DSAScaleFmt, q []uint8, weights []float32, blockTable, seqLens []int32, dims DSAIndexerDims, tau float64) ([]DSADemotion, error) {
	if err := dims.check(); err != nil {
		return nil, err
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	if dims.NN != 1 {
		return nil, fmt.Errorf("golden: dsa margin needs next_n 1 (each key serves one query row), got %d: %w", dims.NN, ErrInvalidParams)
	}
	if !(tau >= 0) || math.IsInf(tau, 1) {
		return nil, fmt.Errorf("golden: dsa margin tau %g must be finite and >= 0: %w", tau, ErrInvalidParams)
	}
	for i, w := range weights {
		if !(w >= 0) {
			return nil, fmt.Errorf("golden: dsa margin: weights[%d] = %g; weights must be >= 0 so that halving a key halves its score: %w", i, w, ErrInvalidParams)
		}
	}
	if cdims.DI != dims.DI || cdims.NB != dims.NB || len(k) != cdims.T*cdims.DI || len(slotMapping) > cdims.T {
		panic(badLenKV)
	}
	width := dims.MAXB * DSABlockSize
	logits := make([]float64, dims.B*width)
	sel := make([]int32, dims.B*dims.K)
	info := make([]DSARowInfo, dims.B)
	if err := DSAIndexer(logits, sel, nil, info, q, weights, cache, blockTable, seqLens, dims); err != nil {
		return nil, err
	}
	tokenOf := make(map[int]int, len(slotMapping))
	for t, s := range slotMapping {
		if s >= 0 {
			tokenOf[int(s)] = t
		}
	}
	refs := make(map[int]int)
	slotOf := func(b, pos int) int {
		return int(blockTable[b*dims.MAXB+pos/DSABlockSize])*DSABlockSize + pos%DSABlockSize
	}
	for b, l := range seqLens {
		for pos := range int(l) {
			refs[slotOf(b, pos)]++
		}
	}
	var out []DSADemotion
	for b, l := range seqLens {
		chosen := sel[b*dims.K : (b+1)*dims.K]
		isSel := make([]bool, l)
		for _, p := range chosen {
			if p >= 0 {
				isSel[p] = true
			}
		}
		thr := info[b].Kth - float64(tau*info[b].A)
		for pos := range int(l) {
			x := logits[b*width+pos]
			if isSel[pos] || !(x > thr) {
				continue
			}
			slot := slotOf(b, pos)
			if !(thr > 0) {
				// Scores are >= 0 here, and halving one never takes it below 0.
				return nil, fmt.Errorf("golden: dsa margin: sequence %d position %d has score %g > kth - tau*A = %g <= 0; halving cannot lower it below: %w", b, pos, x, thr, ErrInvalidParams)
			}
			if refs[slot] > 1 {
				return nil, fmt.Errorf("golden: dsa margin: sequence %d position %d lives in slot %d, which another row also sees: %w", b, pos, slot, ErrInvalidParams)
			}
			t, ok := tokenOf[slot]
			if !ok {
				return nil, fmt.Errorf("golden: dsa margin: slot %d (sequence %d position %d) is not written by slot_mapping: %w", slot, b, pos, ErrInvalidParams)
			}
			n, after := 0, x
			for after >= thr {
				after /= 2
				n++
			}
			if err := dsaCanHalve(k[t*cdims.DI:(t+1)*cdims.DI], n); err != nil {
				return nil, fmt.Errorf("golden: dsa margin: sequence %d position %d (k row %d): %w", b, pos, t, err)
			}
			out = append(out, DSADemotion{Seq: b, Pos: pos, Slot: slot, Token: t, Halvings: n, Before: x, After: after})
		}
	}
	// Every demotion is valid: only now are k and cache modified.
	for _, d := range out {
		if err := dsaHalveKey(k[d.Token*cdims.DI:(d.Token+1)*cdims.DI], cache, d.Slot, cdims.DI, f, d.Halvings); err != nil {
			return nil, fmt.Errorf("golden: dsa margin: sequence %d position %d (k row %d): %w", d.Seq, d.Pos, d.Token, err)
		}
	}
	return out, nil
}

// dsaCanHalve reports whether dividing the key row by 2^n keeps its codes:
// its amax must stay above the quantizer's floor and its values normal.
func dsaCanHalve(row []float32, n int) error {
	var amax float32
	minNZ := float32(math.Inf(1))
	for _, x := range row {
		a := float32(math.Abs(float64(x)))
		amax = max(amax, a)
		if a != 0 {
			minNZ = min(minNZ, a)
		}
	}
	div := float32(math.Ldexp(1, n))
	if amax/div < dsaAmaxFloor {
		return fmt.Errorf("amax %g / 2^%d falls below the 1e-4 floor, which would change the codes: %w", amax, n, ErrInvalidParams)
	}
	if minNZ != float32(math.Inf(1)) && minNZ/div < 0x1p-126 {
		return fmt.Errorf("value %g / 2^%d would be subnormal: %w", minNZ, n, ErrInvalidParams)
	}
	return nil
}

// dsaHalveKey divides the key row by 2^n (dsaCanHalve passed), rewrites its
// slot and checks that only the scale changed, by exactly 2^-n.
func dsaHalveKey(row []float32, cache []byte, slot, di int, f DSAScaleFmt, n int) error {
	div := float32(math.Ldexp(1, n))
	codes, sc := DSACacheSlot(cache, slot, di)
	before := slices.Clone(codes)
	for d := range row {
		row[d] /= div // exact: a power of two, no underflow (checked)
	}
	dsaQuantizeRow(cache, row, slot, di, f)
	codes, sc2 := DSACacheSlot(cache, slot, di)
	if !slices.Equal(codes, before) || sc2 != sc/div {
		return fmt.Errorf("halving changed the codes or did not halve the scale (%g -> %g): %w", sc, sc2, ErrInvalidParams)
	}
	return nil
}
