package gen

import (
	"errors"
	"math"
	"testing"
)

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
