package golden

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// ErrSelection reports a DSA top-k row that the tie-band rule rejects.
var ErrSelection = errors.New("golden: dsa selection rejected")

// DSASpace says which index space a top-k row uses.
type DSASpace int

const (
	// DSALogical indices are request-local positions (vLLM's topk_indices).
	DSALogical DSASpace = iota
	// DSAPhysical indices are cache slots block_table[s/ps]*ps + s%ps
	// (FlashMLA's and FlashInfer-Bench's sparse_indices).
	DSAPhysical
)

// DSASelectionRow is one row to judge.
type DSASelectionRow struct {
	Got    []int32   // the kernel's row, K entries, any order
	Want   []int32   // the golden row (DSAIndexer's), same space
	Scores []float64 // the golden I of the visible tokens by logical position (len = Visible)
	Info   DSARowInfo
	Space  DSASpace
	// BlockTable is the sequence's block-table row and PS its page size;
	// both are needed for DSAPhysical only.
	BlockTable []int32
	PS         int
}

// DSASelectionCheck judges one top-k row by ops.md §8's tie-band rule, with
// order ignored: exactly min(K, Visible) entries >= 0 and the rest -1;
// every entry reachable (a logical position below Visible, or a physical
// slot of a visible token through BlockTable) and none repeated; with eps =
// epsRel*A, every returned token has I >= kth - eps and no omitted token
// has I > kth + eps; and where gap > 2*eps the set equals the golden set.
// It returns nil, or the first violation wrapped in ErrSelection.
// Malformed arguments (Scores longer than the table reaches, a block table
// that maps two visible tokens to one slot) return ErrInvalidParams.
func DSASelectionCheck(row DSASelectionRow, epsRel float64) error {
	k, v := len(row.Got), len(row.Scores)
	if len(row.Want) != k {
		return fmt.Errorf("golden: dsa check: got %d entries, golden %d: %w", k, len(row.Want), ErrInvalidParams)
	}
	if !(epsRel >= 0) {
		return fmt.Errorf("golden: dsa check: eps_rel %g: %w", epsRel, ErrInvalidParams)
	}
	logical, err := row.logicalMap()
	if err != nil {
		return err
	}
	n := min(k, v)
	picked := make(map[int]bool, n)
	valid := 0
	for i, x := range row.Got {
		if x == -1 {
			continue
		}
		p, ok := logical(x)
		if !ok {
			return fmt.Errorf("golden: dsa check: entry %d = %d is not a visible token (visible %d, %s space): %w", i, x, v, row.Space, ErrSelection)
		}
		if picked[p] {
			return fmt.Errorf("golden: dsa check: entry %d = %d repeats a token: %w", i, x, ErrSelection)
		}
		picked[p] = true
		valid++
	}
	if valid != n {
		return fmt.Errorf("golden: dsa check: %d valid entries, want min(K=%d, visible=%d) = %d: %w", valid, k, v, n, ErrSelection)
	}
	eps := float64(epsRel * row.Info.A) // rounded here: no FMA into kth±eps on arm64
	kth := row.Info.Kth
	for p := range picked {
		if !(row.Scores[p] >= kth-eps) {
			return fmt.Errorf("golden: dsa check: token %d has I = %g below kth - eps = %g - %g: %w", p, row.Scores[p], kth, eps, ErrSelection)
		}
	}
	for p, x := range row.Scores {
		if !picked[p] && x > kth+eps {
			return fmt.Errorf("golden: dsa check: token %d with I = %g above kth + eps = %g + %g is missing: %w", p, x, kth, eps, ErrSelection)
		}
	}
	if row.Info.Gap > 2*eps {
		for i, x := range row.Want {
			if x == -1 {
				continue
			}
			p, ok := logical(x)
			if !ok {
				return fmt.Errorf("golden: dsa check: golden entry %d = %d unreachable: %w", i, x, ErrInvalidParams)
			}
			if !picked[p] {
				return fmt.Errorf("golden: dsa check: gap %g > 2*eps = %g but golden token %d is missing: %w", row.Info.Gap, 2*eps, p, ErrSelection)
			}
		}
	}
	return nil
}

func (s DSASpace) String() string {
	if s == DSAPhysical {
		return "physical"
	}
	return "logical"
}

// logicalMap returns the map from an index of the row's space to the
// logical position it names, if visible.
func (row DSASelectionRow) logicalMap() (func(int32) (int, bool), error) {
	v := len(row.Scores)
	if row.Space == DSALogical {
		return func(x int32) (int, bool) { return int(x), x >= 0 && int(x) < v }, nil
	}
	if row.PS <= 0 || numBlocks(v, row.PS) > len(row.BlockTable) {
		return nil, fmt.Errorf("golden: dsa check: %d visible tokens need %d block-table entries of page size %d, have %d: %w", v, numBlocks(v, max(row.PS, 1)), row.PS, len(row.BlockTable), ErrInvalidParams)
	}
	m := make(map[int32]int, v)
	for p := range v {
		slot := row.BlockTable[p/row.PS]*int32(row.PS) + int32(p%row.PS)
		if _, dup := m[slot]; dup {
			return nil, fmt.Errorf("golden: dsa check: the block table maps two visible tokens to slot %d: %w", slot, ErrInvalidParams)
		}
		m[slot] = p
	}
	return func(x int32) (int, bool) { p, ok := m[x]; return p, ok }, nil
}

// DSASortedScoreDiff is FlashInfer-Bench's comparison, reported beside
// DSASelectionCheck and never binding: the largest difference between the
// golden scores of the got and want entries, each sorted descending
// (unreachable or missing entries count as -Inf, so a count mismatch gives
// +Inf). It accepts wrong picks whose scores happen to match.
func DSASortedScoreDiff(row DSASelectionRow) float64 {
	logical, err := row.logicalMap()
	if err != nil {
		return math.Inf(1)
	}
	scores := func(r []int32) []float64 {
		var out []float64
		for _, x := range r {
			if x == -1 {
				continue
			}
			if p, ok := logical(x); ok {
				out = append(out, row.Scores[p])
			} else {
				out = append(out, math.Inf(-1))
			}
		}
		sortDesc(out)
		return out
	}
	g, w := scores(row.Got), scores(row.Want)
	if len(g) != len(w) {
		return math.Inf(1)
	}
	var d float64
	for i := range g {
		if math.IsInf(g[i], -1) {
			return math.Inf(1)
		}
		d = max(d, math.Abs(g[i]-w[i]))
	}
	return d
}

func sortDesc(x []float64) {
	slices.SortFunc(x, func(a, b float64) int { return cmp.Compare(b, a) })
}
