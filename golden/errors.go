package golden

import (
	"errors"
	"fmt"

	"github.com/goldset/goldset/internal/cpuslots"
)

// Sentinel errors returned (wrapped with context) for bad data. Wrong slice
// lengths are programmer errors and panic instead.
var (
	// ErrInvalidParams reports dimensions or parameters that do not describe
	// a valid case: non-positive sizes, Hq not a multiple of Hkv, K smaller
	// than the number of anchors, duplicate slots or selected blocks.
	ErrInvalidParams = errors.New("golden: invalid parameters")
	// ErrOutOfRange reports an index input (slot mapping, block table entry,
	// selected block) outside its valid range.
	ErrOutOfRange = errors.New("golden: index out of range")
	// ErrContextLen reports a context length outside [1, MAXB*BS].
	ErrContextLen = errors.New("golden: context length out of range")
)

// Panic messages for wrong slice lengths (constant strings, gonum style).
const (
	badDims      = "golden: negative dimension"
	badLenDst    = "golden: bad length of dst"
	badLenA      = "golden: bad length of a"
	badLenB      = "golden: bad length of b"
	badLenX      = "golden: bad length of x"
	badLenRowMax = "golden: bad length of rowMax"
	badLenRowSum = "golden: bad length of rowSum"
	badLenKV     = "golden: bad length of key or value"
	badLenCache  = "golden: bad length of a cache"
	badLenSlots  = "golden: slot mapping longer than T"
	badLenQ      = "golden: bad length of q"
	badLenOut    = "golden: bad length of out"
	badLenLSE    = "golden: bad length of lse"
	badLenBT     = "golden: bad length of blockTables"
	badLenCL     = "golden: bad length of contextLens"
	badLenQSL    = "golden: bad length of queryStartLoc"
	badLenMeta   = "golden: bad length of kmax or kmin"
	badLenScores = "golden: bad length of scores"
	badLenSel    = "golden: bad length of selected"
)

// AttentionDims are the sizes of a paged-attention case (docs/spec.md §4).
//
//	q            [B, Hq, D]
//	kCache/vCache [NB, BS, Hkv, D]
//	blockTables  [B, MAXB]
//	contextLens  [B]
type AttentionDims struct {
	B    int // sequences
	Hq   int // query heads
	Hkv  int // key/value heads; Hq must be a multiple of Hkv
	D    int // head dimension
	NB   int // physical blocks in the cache
	BS   int // tokens per block
	MAXB int // block-table width (logical blocks per sequence)
}

// G returns the GQA group size Hq/Hkv.
func (d AttentionDims) G() int { return d.Hq / d.Hkv }

func (d AttentionDims) check() error {
	if d.B <= 0 || d.Hq <= 0 || d.Hkv <= 0 || d.D <= 0 || d.NB <= 0 || d.BS <= 0 || d.MAXB <= 0 {
		return fmt.Errorf("golden: dims %+v: all sizes must be positive: %w", d, ErrInvalidParams)
	}
	if d.Hq%d.Hkv != 0 {
		return fmt.Errorf("golden: Hq=%d is not a multiple of Hkv=%d: %w", d.Hq, d.Hkv, ErrInvalidParams)
	}
	return nil
}

func (d AttentionDims) checkCaseLens(q []float32, nk, nv int, blockTables, contextLens []int32) {
	if len(q) != d.B*d.Hq*d.D {
		panic(badLenQ)
	}
	n := d.NB * d.BS * d.Hkv * d.D
	if nk != n || nv != n {
		panic(badLenCache)
	}
	if len(blockTables) != d.B*d.MAXB {
		panic(badLenBT)
	}
	if len(contextLens) != d.B {
		panic(badLenCL)
	}
}

// numBlocks returns ceil(L/BS).
func numBlocks(l, bs int) int { return (l + bs - 1) / bs }

// checkSeqs validates context lengths and the block-table entries that are
// read (logical blocks below ceil(L/BS)); later entries are never read.
func (d AttentionDims) checkSeqs(blockTables, contextLens []int32) error {
	for b, l32 := range contextLens {
		l := int(l32)
		if l < 1 || l > d.MAXB*d.BS {
			return fmt.Errorf("golden: context_lens[%d] = %d not in [1, %d]: %w", b, l, d.MAXB*d.BS, ErrContextLen)
		}
		for i := range numBlocks(l, d.BS) {
			p := blockTables[b*d.MAXB+i]
			if p < 0 || int(p) >= d.NB {
				return fmt.Errorf("golden: block_tables[%d, %d] = %d not in [0, %d): %w", b, i, p, d.NB, ErrOutOfRange)
			}
		}
	}
	return nil
}

// parallelFor runs fn(worker, unit) for every unit in [0, n) on up to
// workers goroutines (see numWorkers). Each unit's result must depend on the unit alone (no
// cross-unit reductions), so the output is the same for any worker count;
// worker only selects per-worker scratch space.
func parallelFor(workers, n int, fn func(worker, unit int)) {
	cpuslots.For(workers, n, fn)
}

// numWorkers is the scratch-slot count parallelFor needs for n units.
func numWorkers(n int) int { return max(1, min(cpuslots.Procs(), n)) }
