package gen

import (
	"errors"
	"fmt"
	"math"

	"github.com/goldset/goldset/internal/detmath"
)

// Sentinel errors for impossible or inconsistent specs; every returned error
// wraps one of them.
var (
	ErrSpec   = errors.New("invalid generator spec")
	ErrDegen  = errors.New("degenerate data for the requested structure")
	ErrShared = errors.New("block is shared with another sequence")
)

// Pad modes for block-table entries past ceil(L/BS).
const (
	PadNeg1   = iota // -1 (vLLM default)
	PadZero          // 0, a real block another sequence may use
	PadPoison        // the id of an extra, never-read block that PoisonCache fills with NaN
)

// LenDraw is the peer's lognormal context-length draw (numpy_gen.py
// draw_context_lens): raw_b = exp(mu + sigma*z_b), mu = log(mean) -
// sigma**2/2, then 20 fixed-point steps rescale *= mean /
// mean(clip(raw*rescale, 1, max)), and L_b = clip(rint(raw_b*rescale), 1,
// max). z_b is element b of the context-lens stream's normal sequence.
type LenDraw struct {
	Mean, Sigma float64
	Max         int
}

// LayoutSpec describes a paged-KV layout.
type LayoutSpec struct {
	Seqs      int     // B >= 1
	BlockSize int     // BS >= 1
	MaxBlocks int     // MAXB; 0: ceil(Draw.Max/BS) for a draw, else ceil(max(Lens)/BS)
	Lens      []int32 // explicit context lengths (len Seqs), or nil to draw
	Draw      LenDraw // used when Lens is nil
	Pad       int     // PadNeg1, PadZero or PadPoison
	// SharedPairs k: sequences 2i and 2i+1 (i < k) share their logical
	// block 0 (one physical block, as with prefix caching).
	SharedPairs int
	// ExtraBlocks physical blocks that no table references.
	ExtraBlocks int
}

// PagedLayout is a valid-by-construction paged-KV layout.
type PagedLayout struct {
	Seqs, BlockSize, MaxBlocks, NumBlocks int
	Lens                                  []int32 // [Seqs]
	Tables                                []int32 // [Seqs*MaxBlocks], row-major
	// Live[p] is the number of leading slots of physical block p that some
	// sequence reads (token j of sequence b reads slot j%BS of block
	// Tables[b, j/BS], j < L_b). Reads of one sequence in one block are a
	// prefix, so the union is a prefix too. Slots >= Live[p] are never read.
	Live []int32
	// PoisonBlock is the id of the extra NaN block used as pad (PadPoison),
	// else -1.
	PoisonBlock int32
	// Rescale is the lognormal rescale factor (0 for explicit Lens).
	Rescale float64
}

// NumLogical returns ceil(L_b/BS), the number of table entries a kernel may
// read for sequence b.
func (l *PagedLayout) NumLogical(b int) int {
	return (int(l.Lens[b]) + l.BlockSize - 1) / l.BlockSize
}

// Slot returns the physical block and offset of token pos of sequence b.
func (l *PagedLayout) Slot(b, pos int) (block, off int) {
	if pos < 0 || pos >= int(l.Lens[b]) {
		panic("gen: Slot position out of range")
	}
	return int(l.Tables[b*l.MaxBlocks+pos/l.BlockSize]), pos % l.BlockSize
}

// DrawLens draws B context lengths as described at LenDraw from the normal
// sequence of s. It returns the lengths and the rescale factor.
func DrawLens(s Stream, b int, d LenDraw) ([]int32, float64, error) {
	if b < 1 || d.Max < 1 || !(d.Mean >= 1 && d.Mean <= float64(d.Max)) || !(d.Sigma >= 0) || math.IsInf(d.Sigma, 0) {
		return nil, 0, fmt.Errorf("gen: lognormal draw B=%d mean=%v sigma=%v max=%d: %w", b, d.Mean, d.Sigma, d.Max, ErrSpec)
	}
	z := make([]float64, b)
	Normal(s, z, 0, F64, 1)
	mu := detmath.Log(d.Mean) - float64(float64(d.Sigma*d.Sigma)/2) // /2 becomes *0.5, which may fuse too
	raw := make([]float64, b)
	for i, v := range z {
		raw[i] = detmath.Exp(mu + float64(d.Sigma*v))
	}
	maxf := float64(d.Max)
	f := 1.0
	for range 20 {
		sum := 0.0
		for _, v := range raw {
			sum += min(max(float64(v*f), 1), maxf)
		}
		f *= d.Mean / (sum / float64(b))
	}
	lens := make([]int32, b)
	for i, v := range raw {
		lens[i] = int32(min(max(math.RoundToEven(float64(v*f)), 1), maxf))
	}
	return lens, f, nil
}

// NewPagedLayout builds a layout. lens is the context_lens stream (used only
// when spec.Lens is nil), tables the block_tables stream, whose sequential
// generator draws one permutation of all physical blocks (see doc.go).
func NewPagedLayout(spec LayoutSpec, lens, tables Stream) (*PagedLayout, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("gen: paged layout: "+format+": %w", append(a, ErrSpec)...)
	}
	switch {
	case spec.Seqs < 1:
		return nil, bad("%d sequences", spec.Seqs)
	case spec.BlockSize < 1:
		return nil, bad("block size %d", spec.BlockSize)
	case spec.MaxBlocks < 0 || spec.ExtraBlocks < 0 || spec.SharedPairs < 0:
		return nil, bad("negative count")
	case spec.Pad < PadNeg1 || spec.Pad > PadPoison:
		return nil, bad("pad mode %d", spec.Pad)
	case 2*spec.SharedPairs > spec.Seqs:
		return nil, bad("%d shared pairs need %d sequences, have %d", spec.SharedPairs, 2*spec.SharedPairs, spec.Seqs)
	case spec.Lens != nil && len(spec.Lens) != spec.Seqs:
		return nil, bad("%d lengths for %d sequences", len(spec.Lens), spec.Seqs)
	}
	l := &PagedLayout{Seqs: spec.Seqs, BlockSize: spec.BlockSize, PoisonBlock: -1}
	if spec.Lens != nil {
		l.Lens = append([]int32(nil), spec.Lens...)
	} else {
		var err error
		if l.Lens, l.Rescale, err = DrawLens(lens, spec.Seqs, spec.Draw); err != nil {
			return nil, err
		}
	}
	bs := spec.BlockSize
	maxL := 0
	for b, L := range l.Lens {
		if L < 1 {
			return nil, bad("context length %d of sequence %d < 1", L, b)
		}
		maxL = max(maxL, int(L))
	}
	l.MaxBlocks = spec.MaxBlocks
	if l.MaxBlocks == 0 {
		l.MaxBlocks = (maxL + bs - 1) / bs
		if spec.Lens == nil {
			l.MaxBlocks = (spec.Draw.Max + bs - 1) / bs
		}
	}
	if int64(maxL) > int64(l.MaxBlocks)*int64(bs) {
		return nil, bad("context length %d > MAXB*BS = %d*%d", maxL, l.MaxBlocks, bs)
	}
	used := 0
	for b := range l.Lens {
		used += l.NumLogical(b)
	}
	used -= spec.SharedPairs
	nb := used + spec.ExtraBlocks
	if spec.Pad == PadPoison {
		nb++
	}
	if int64(nb)*int64(bs) > math.MaxInt32 || int64(l.Seqs)*int64(l.MaxBlocks) > math.MaxInt32 {
		return nil, bad("%d blocks of %d slots exceed int32 slot ids", nb, bs)
	}
	l.NumBlocks = nb
	perm := tables.Rand().Perm(nb)
	next := 0
	pad := int32(-1)
	if spec.Pad == PadZero {
		pad = 0
	}
	l.Tables = make([]int32, l.Seqs*l.MaxBlocks)
	for b := range l.Seqs {
		row := l.Tables[b*l.MaxBlocks : (b+1)*l.MaxBlocks]
		n := l.NumLogical(b)
		for i := range n {
			if i == 0 && b%2 == 1 && b/2 < spec.SharedPairs {
				row[0] = l.Tables[(b-1)*l.MaxBlocks] // shared with sequence b-1
				continue
			}
			row[i] = int32(perm[next])
			next++
		}
		for i := n; i < l.MaxBlocks; i++ {
			row[i] = pad
		}
	}
	if spec.Pad == PadPoison {
		l.PoisonBlock = int32(perm[next])
		for b := range l.Seqs {
			row := l.Tables[b*l.MaxBlocks : (b+1)*l.MaxBlocks]
			for i := l.NumLogical(b); i < l.MaxBlocks; i++ {
				row[i] = l.PoisonBlock
			}
		}
	}
	l.Live = make([]int32, nb)
	for b, L := range l.Lens {
		for i := range l.NumLogical(b) {
			p := l.Tables[b*l.MaxBlocks+i]
			l.Live[p] = max(l.Live[p], min(L-int32(i*bs), int32(bs)))
		}
	}
	return l, nil
}

// SlotSpec describes a reshape_and_cache slot mapping.
type SlotSpec struct {
	Tokens   int     // T_s
	NumSlots int     // NB*BS
	NegFrac  float64 // share of negative entries: n = floor(NegFrac*T_s + 0.5)
	AllNeg   bool    // every entry negative
	// ForceSlot0 makes slot 0 one of the valid slots when there is at
	// least one (it replaces the last valid slot drawn if 0 was not drawn).
	ForceSlot0 bool
}

// NegSlots are the negative values used, cyclically, for skipped tokens.
var NegSlots = [3]int32{-1, -7, math.MinInt32}

// SlotMapping draws a slot mapping from the sequential generator of s:
// first Choice(NumSlots, nValid) (the valid slots, in draw order), then
// Choice(T_s, nNeg) (the negative positions; the k-th drawn gets
// NegSlots[k%3]); the valid slots fill the other positions in ascending
// order.
func SlotMapping(s Stream, spec SlotSpec) ([]int32, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("gen: slot mapping: "+format+": %w", append(a, ErrSpec)...)
	}
	if spec.Tokens < 0 || spec.NumSlots < 1 || spec.NumSlots > math.MaxInt32 || !(spec.NegFrac >= 0 && spec.NegFrac <= 1) {
		return nil, bad("T_s=%d slots=%d negative fraction %v", spec.Tokens, spec.NumSlots, spec.NegFrac)
	}
	nNeg := int(math.Floor(float64(spec.NegFrac*float64(spec.Tokens)) + 0.5))
	if spec.AllNeg {
		nNeg = spec.Tokens
	}
	nValid := spec.Tokens - nNeg
	if nValid > spec.NumSlots {
		return nil, bad("%d valid tokens but only %d slots", nValid, spec.NumSlots)
	}
	r := s.Rand()
	valid := r.Choice(spec.NumSlots, nValid)
	if spec.ForceSlot0 && nValid > 0 {
		has0 := false
		for _, v := range valid {
			has0 = has0 || v == 0
		}
		if !has0 {
			valid[nValid-1] = 0
		}
	}
	out := make([]int32, spec.Tokens)
	isNeg := make([]bool, spec.Tokens)
	for k, t := range r.Choice(spec.Tokens, nNeg) {
		out[t] = NegSlots[k%3]
		isNeg[t] = true
	}
	k := 0
	for t := range out {
		if !isNeg[t] {
			out[t] = int32(valid[k])
			k++
		}
	}
	return out, nil
}
