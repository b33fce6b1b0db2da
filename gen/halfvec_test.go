package gen

import (
	"math"
	"testing"

	"github.com/goldset/goldset/internal/detmath"
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

// TestSqueezeAgreesWithExp checks, for every layer with a squeeze and
// many (candidate, uniform) pairs across its wedge, that the squeeze's
// accept or reject is the exact comparison's, and that it decides most
// cases (else it would not be worth having).
func TestSqueezeAgreesWithExp(t *testing.T) {
	decided, total := 0, 0
	for idx := 1; idx < zigN; idx++ {
		sq := zigSq[idx]
		if !sq.ok {
			continue
		}
		lo, hi := zigK[idx], uint32(1<<23)
		for k := range 2000 {
			// The wedge's edges first, then a spread of magnitudes.
			m := lo + uint32(uint64(hi-lo-1)*uint64(k)/1999)
			x := float64(m) * zigW[idx]
			for j := range 64 {
				u := uniformOpen32(uint32(j)*0x04000000 + uint32(k*7919))
				lhs := float64((zigF[idx-1]-zigF[idx])*u) + zigF[idx]
				exact := lhs < detmath.Exp(-0.5*x*x)
				total++
				switch {
				case lhs < sq.lo0+float64(sq.lo1*x):
					decided++
					if !exact {
						t.Fatalf("layer %d m %d u %g: squeeze accepts, exact test rejects", idx, m, u)
					}
				case lhs >= sq.hi0+float64(sq.hi1*x):
					decided++
					if exact {
						t.Fatalf("layer %d m %d u %g: squeeze rejects, exact test accepts", idx, m, u)
					}
				}
			}
		}
	}
	if decided < total*9/10 {
		t.Errorf("squeeze decided %d of %d wedge tests, want at least 90%%", decided, total)
	}
	t.Logf("squeeze decided %d of %d wedge tests", decided, total)
}
