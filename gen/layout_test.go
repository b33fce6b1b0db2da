package gen

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// checkLayout verifies the invariants every kernel relies on.
func checkLayout(t *testing.T, l *PagedLayout, spec LayoutSpec) {
	t.Helper()
	if len(l.Lens) != l.Seqs || len(l.Tables) != l.Seqs*l.MaxBlocks || len(l.Live) != l.NumBlocks {
		t.Fatal("slice sizes")
	}
	refs := make([]int, l.NumBlocks)
	for b, L := range l.Lens {
		if L < 1 || int(L) > l.MaxBlocks*l.BlockSize {
			t.Fatalf("sequence %d: L=%d outside [1, %d]", b, L, l.MaxBlocks*l.BlockSize)
		}
		nb := l.NumLogical(b)
		row := l.Tables[b*l.MaxBlocks : (b+1)*l.MaxBlocks]
		for i, p := range row {
			switch {
			case i < nb:
				if p < 0 || int(p) >= l.NumBlocks || p == l.PoisonBlock {
					t.Fatalf("sequence %d logical %d: block %d out of range", b, i, p)
				}
				refs[p]++
			case spec.Pad == PadNeg1 && p != -1, spec.Pad == PadZero && p != 0, spec.Pad == PadPoison && p != l.PoisonBlock:
				t.Fatalf("sequence %d pad entry %d = %d", b, i, p)
			}
		}
		// Live covers exactly what this sequence reads.
		for i := range nb {
			need := min(int(L)-i*l.BlockSize, l.BlockSize)
			if int(l.Live[row[i]]) < need {
				t.Fatalf("sequence %d block %d: live %d < %d", b, i, l.Live[row[i]], need)
			}
		}
	}
	shared, unref := 0, 0
	for p, c := range refs {
		switch {
		case c > 1:
			shared += c - 1
		case c == 0:
			unref++
			if l.Live[p] != 0 {
				t.Fatalf("unreferenced block %d live %d", p, l.Live[p])
			}
		}
	}
	wantUnref := spec.ExtraBlocks
	if spec.Pad == PadPoison {
		wantUnref++
	}
	if shared != spec.SharedPairs || unref != wantUnref {
		t.Fatalf("%d shared (want %d), %d unreferenced (want %d)", shared, spec.SharedPairs, unref, wantUnref)
	}
}

func TestPagedLayoutValid(t *testing.T) {
	lensS, tabS := NewStream(1, "pl", "context_lens"), NewStream(1, "pl", "block_tables")
	for _, spec := range []LayoutSpec{
		{Seqs: 9, BlockSize: 128, Lens: []int32{1, 127, 128, 129, 511, 512, 513, 2011, 40960}},
		{Seqs: 4, BlockSize: 16, Lens: []int32{1, 16, 17, 33}, Pad: PadZero, SharedPairs: 2, ExtraBlocks: 3},
		{Seqs: 3, BlockSize: 16, Lens: []int32{5, 40, 16}, Pad: PadPoison, MaxBlocks: 10, SharedPairs: 1},
		{Seqs: 100, BlockSize: 128, Draw: LenDraw{Mean: 8192, Sigma: 1, Max: 40960}},
		{Seqs: 50, BlockSize: 16, Draw: LenDraw{Mean: 300, Sigma: 0.5, Max: 1000}, Pad: PadPoison, ExtraBlocks: 5},
	} {
		l, err := NewPagedLayout(spec, lensS, tabS)
		if err != nil {
			t.Fatal(err)
		}
		checkLayout(t, l, spec)
		if spec.Lens == nil {
			mean := 0.0
			for _, L := range l.Lens {
				mean += float64(L)
			}
			mean /= float64(len(l.Lens))
			// Rescaling targets the clipped mean; rint moves it < 0.5.
			if math.Abs(mean-spec.Draw.Mean) > 0.5+1e-9*spec.Draw.Mean {
				t.Errorf("drawn mean %v, want %v", mean, spec.Draw.Mean)
			}
			if l.MaxBlocks != (spec.Draw.Max+spec.BlockSize-1)/spec.BlockSize {
				t.Errorf("MaxBlocks %d", l.MaxBlocks)
			}
		}
		again, _ := NewPagedLayout(spec, lensS, tabS)
		if !slices.Equal(again.Tables, l.Tables) || !slices.Equal(again.Lens, l.Lens) {
			t.Fatal("layout not reproducible")
		}
	}
	// Shuffled: the tables of a long sequence are not the identity.
	l, _ := NewPagedLayout(LayoutSpec{Seqs: 1, BlockSize: 16, Lens: []int32{1600}}, lensS, tabS)
	inOrder := 0
	for i, p := range l.Tables {
		if int(p) == i {
			inOrder++
		}
	}
	if inOrder > 10 {
		t.Errorf("%d of 100 blocks in identity position", inOrder)
	}
}

func TestPagedLayoutErrors(t *testing.T) {
	s := NewStream(1, "pl", "x")
	for name, spec := range map[string]LayoutSpec{
		"no seqs":        {Seqs: 0, BlockSize: 16},
		"bs 0":           {Seqs: 1, BlockSize: 0, Lens: []int32{1}},
		"L 0":            {Seqs: 1, BlockSize: 16, Lens: []int32{0}},
		"L > MAXB*BS":    {Seqs: 1, BlockSize: 16, MaxBlocks: 2, Lens: []int32{33}},
		"lens count":     {Seqs: 2, BlockSize: 16, Lens: []int32{3}},
		"pairs":          {Seqs: 3, BlockSize: 16, Lens: []int32{3, 4, 5}, SharedPairs: 2},
		"pad":            {Seqs: 1, BlockSize: 16, Lens: []int32{3}, Pad: 7},
		"mean > max":     {Seqs: 4, BlockSize: 16, Draw: LenDraw{Mean: 100, Sigma: 1, Max: 50}},
		"negative sigma": {Seqs: 4, BlockSize: 16, Draw: LenDraw{Mean: 10, Sigma: -1, Max: 50}},
		"slot overflow":  {Seqs: 1, BlockSize: 1 << 20, Lens: []int32{1}, ExtraBlocks: 4096},
	} {
		if _, err := NewPagedLayout(spec, s, s); !errors.Is(err, ErrSpec) {
			t.Errorf("%s: err = %v, want ErrSpec", name, err)
		}
	}
}

func TestSlotMapping(t *testing.T) {
	s := NewStream(2, "rc", "slot_mapping")
	for _, spec := range []SlotSpec{
		{Tokens: 1000, NumSlots: 4096 * 16, NegFrac: 0.05, ForceSlot0: true},
		{Tokens: 64, NumSlots: 64, ForceSlot0: true},
		{Tokens: 300, NumSlots: 1 << 30, NegFrac: 0.5},
		{Tokens: 30, NumSlots: 10, AllNeg: true},
		{Tokens: 0, NumSlots: 10},
	} {
		m, err := SlotMapping(s, spec)
		if err != nil {
			t.Fatal(err)
		}
		if len(m) != spec.Tokens {
			t.Fatalf("%d entries", len(m))
		}
		seen := map[int32]bool{}
		neg := map[int32]int{}
		for _, v := range m {
			if v < 0 {
				neg[v]++
				continue
			}
			if int(v) >= spec.NumSlots || seen[v] {
				t.Fatalf("%+v: slot %d repeated or out of range", spec, v)
			}
			seen[v] = true
		}
		nNeg := int(math.Floor(spec.NegFrac*float64(spec.Tokens) + 0.5))
		if spec.AllNeg {
			nNeg = spec.Tokens
		}
		if got := neg[-1] + neg[-7] + neg[math.MinInt32]; got != nNeg || len(neg) > 3 {
			t.Fatalf("%+v: negatives %v, want %d of -1/-7/MinInt32", spec, neg, nNeg)
		}
		if nNeg >= 3 && len(neg) != 3 {
			t.Fatalf("%+v: negatives %v not a mix", spec, neg)
		}
		if spec.ForceSlot0 && !seen[0] {
			t.Fatalf("%+v: slot 0 missing", spec)
		}
	}
	for _, spec := range []SlotSpec{{Tokens: 11, NumSlots: 10}, {Tokens: -1, NumSlots: 10}, {Tokens: 5, NumSlots: 10, NegFrac: 1.5}} {
		if _, err := SlotMapping(s, spec); !errors.Is(err, ErrSpec) {
			t.Errorf("%+v: err = %v, want ErrSpec", spec, err)
		}
	}
}
