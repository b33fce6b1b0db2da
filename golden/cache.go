package golden

import "fmt"

// CacheDims are the sizes of a reshape_and_cache case (docs/spec.md §3).
//
//	key, value             [T, Hkv, D]
//	keyCache, valueCache   [NB, BS, Hkv, D]
//	slotMapping            [Ts], Ts <= T
type CacheDims struct {
	T   int // tokens in key/value
	Hkv int // key/value heads
	D   int // head dimension
	NB  int // physical blocks
	BS  int // tokens per block
}

// ReshapeAndCache writes the golden caches of docs/spec.md §3: dstK and dstV
// receive keyCache and valueCache with, for every t < len(slotMapping) with
// s = slotMapping[t] >= 0, row (s/BS, s%BS) replaced by key[t] and value[t].
// Negative slots (any value) are skipped; slot 0 is a real slot.
//
// E is any element type: pass []uint16 raw bits for float16/bfloat16 caches
// and the copy is bit-exact, NaN payloads included (no value ever passes
// through a float register). dstK/dstV may alias keyCache/valueCache for an
// in-place update; otherwise the inputs are not modified.
//
// Slots >= NB*BS return ErrOutOfRange and duplicate non-negative slots
// ErrInvalidParams (docs/spec.md §3 forbids them); on error dst is untouched.
func ReshapeAndCache[E any](dstK, dstV, key, value, keyCache, valueCache []E, slotMapping []int32, dims CacheDims) error {
	if dims.T < 0 || dims.Hkv <= 0 || dims.D <= 0 || dims.NB <= 0 || dims.BS <= 0 {
		return fmt.Errorf("golden: cache dims %+v: sizes must be positive: %w", dims, ErrInvalidParams)
	}
	row := dims.Hkv * dims.D
	if len(key) != dims.T*row || len(value) != dims.T*row {
		panic(badLenKV)
	}
	slots := dims.NB * dims.BS
	if len(keyCache) != slots*row || len(valueCache) != slots*row {
		panic(badLenCache)
	}
	if len(dstK) != slots*row || len(dstV) != slots*row {
		panic(badLenDst)
	}
	if len(slotMapping) > dims.T {
		panic(badLenSlots)
	}
	if err := checkSlotMapping(slotMapping, slots); err != nil {
		return err
	}
	copy(dstK, keyCache)
	copy(dstV, valueCache)
	for t, s := range slotMapping {
		if s < 0 {
			continue
		}
		o := int(s) * row
		copy(dstK[o:o+row], key[t*row:(t+1)*row])
		copy(dstV[o:o+row], value[t*row:(t+1)*row])
	}
	return nil
}

// checkSlotMapping validates a slot mapping against a cache of slots slots:
// negative entries are skipped, the others must be below slots
// (ErrOutOfRange) and distinct (ErrInvalidParams).
func checkSlotMapping(slotMapping []int32, slots int) error {
	seen := make([]uint64, (slots+63)/64)
	for t, s := range slotMapping {
		if s < 0 {
			continue
		}
		if int(s) >= slots {
			return fmt.Errorf("golden: slot_mapping[%d] = %d not below NB*BS = %d: %w", t, s, slots, ErrOutOfRange)
		}
		if seen[s/64]&(1<<(s%64)) != 0 {
			return fmt.Errorf("golden: slot_mapping[%d] = %d is a duplicate: %w", t, s, ErrInvalidParams)
		}
		seen[s/64] |= 1 << (s % 64)
	}
	return nil
}
