package gen

import (
	"math"
	"testing"
)

// TestChunkHalfVecMatchesScalar compares the vector kernel (where the CPU
// has it) with the portable path chunk by chunk, for both formats and for
// scales that push values into subnormals, zero, overflow and the rounding
// edges, so the kernel's fallback marks are exercised too.
func TestChunkHalfVecMatchesScalar(t *testing.T) {
	if !useAVX512 {
		t.Skip("no AVX-512 on this CPU: the portable path is the only one (covered by the pinned vectors)")
	}
	s := NewStream(11, "vec", "x")
	var buf [ChunkElems]float64
	var got, want [ChunkElems]uint16
	for _, bf := range []bool{false, true} {
		for _, scale := range []float64{1, 0.125, 1e-6, 3e-5, 1e-40, 3e4, 1e38, 1.5, -2, 0, math.Inf(1)} {
			for c := uint64(0); c < 400; c++ {
				st := s.chunkState(c)
				if !chunkHalfVec(st, got[:], scale, bf) {
					t.Fatal("vector kernel unavailable")
				}
				chunkNormals(st, buf[:])
				if bf {
					bf16s(want[:], buf[:], scale)
				} else {
					f16s(want[:], buf[:], scale)
				}
				if got != want {
					for k := range got {
						if got[k] != want[k] {
							t.Fatalf("bf16=%v scale %g chunk %d element %d: vector %#04x, scalar %#04x (x=%g)", bf, scale, c, k, got[k], want[k], buf[k])
						}
					}
				}
			}
		}
	}
}
