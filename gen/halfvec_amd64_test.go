//go:build !purego

package gen

import "testing"

// TestChunkHalfVecMarks checks the kernel's coarse acceptance: it marks
// exactly the elements whose m>>15 is not below zigKc[layer] (the contract
// the Go finishing relies on), which covers every rejected element, and
// the ties are about 1/256 of all elements.
func TestChunkHalfVecMarks(t *testing.T) {
	if !useAVX512 {
		t.Skip("no AVX-512 BW/VBMI on this CPU")
	}
	s := NewStream(12, "vec", "marks")
	var dst [ChunkElems]uint16
	ties, rejected, n := 0, 0, 0
	for c := uint64(0); c < 2000; c++ {
		st := s.chunkState(c)
		var rej, slow rejectMask
		chunkHalfAVX512(st, &dst[0], 1, f16Vec, &zigWS, &zigKc, &rej, &slow)
		for k := range ChunkElems {
			r := primary(st, k)
			m, layer := r>>9, uint8(r)
			want := m>>15 >= uint32(zigKc[layer])
			if rej.has(k) != want {
				t.Fatalf("chunk %d element %d (m %#x, layer %d, K %#x): marked %v, want %v", c, k, m, layer, zigK[layer], rej.has(k), want)
			}
			if m >= zigK[layer] {
				rejected++
				if !want {
					t.Fatalf("chunk %d element %d: rejected but not marked", c, k)
				}
			} else if want {
				ties++
			}
			n++
		}
	}
	if ties == 0 || ties > n/100 {
		t.Errorf("%d ties of %d elements: want about 1/256", ties, n)
	}
	t.Logf("%d elements: %d rejected, %d ties marked (%.2f%%)", n, rejected, ties, 100*float64(ties)/float64(n))
}
