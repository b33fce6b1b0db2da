package golden_test

import (
	"errors"
	"math"
	"testing"

	"github.com/goldset/goldset/golden"
)

// FuzzUnifiedAttention feeds arbitrary batch metadata (query_start_loc,
// seq_lens, block table) to the golden over a fixed cache: it must never
// panic, must wrap every rejection in a sentinel, and whatever it accepts
// gives finite outputs (the cache and queries are finite).
func FuzzUnifiedAttention(f *testing.F) {
	f.Add([]byte{0, 2, 3, 3}, []byte{3, 1, 0}, []byte{0, 1, 2, 255, 255, 255})
	f.Add([]byte{0, 1, 1, 4}, []byte{5, 0, 4}, []byte{3, 2, 1, 0, 4, 5})
	const T, S, NB, BS, MAXB, Hq, Hkv, D = 4, 3, 6, 2, 2, 2, 1, 2
	n := NB * BS * Hkv * D
	kc, vc := make([]float32, n), make([]float32, n)
	for i := range kc {
		kc[i], vc[i] = float32(i%7)-3, float32(i%5)
	}
	q := make([]float32, T*Hq*D)
	for i := range q {
		q[i] = float32(i%3) - 1
	}
	dims := golden.UnifiedDims{T: T, S: S, Hq: Hq, Hkv: Hkv, D: D, NB: NB, BS: BS, MAXB: MAXB}
	f.Fuzz(func(t *testing.T, qslB, slB, btB []byte) {
		get := func(b []byte, n int) []int32 {
			v := make([]int32, n)
			for i := range v {
				if i < len(b) {
					v[i] = int32(int8(b[i]))
				}
			}
			return v
		}
		qsl, sl, bt := get(qslB, S+1), get(slB, S), get(btB, S*MAXB)
		out, lse := make([]float64, T*Hq*D), make([]float64, T*Hq)
		err := golden.UnifiedAttention(out, lse, q, kc, vc, bt, sl, qsl, dims, 0.5)
		if err != nil {
			if !errors.Is(err, golden.ErrInvalidParams) && !errors.Is(err, golden.ErrContextLen) && !errors.Is(err, golden.ErrOutOfRange) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		for i, x := range append(out, lse...) {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				t.Fatalf("accepted %v %v %v but output %d is %v", qsl, sl, bt, i, x)
			}
		}
	})
}
