package sha256x2

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"testing"
)

func data(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// writeSplit writes p to d in pieces of the given sizes (cycled).
func writeSplit(d *Digest, p []byte, sizes []int) {
	for i := 0; len(p) > 0; i++ {
		n := min(len(p), sizes[i%len(sizes)])
		d.Write(p[:n])
		p = p[n:]
	}
}

// TestAgainstCrypto compares Digest (assembly where available, and the Go
// block function) with crypto/sha256 over lengths around block and
// padding edges, written whole and in odd pieces.
func TestAgainstCrypto(t *testing.T) {
	for _, force := range []bool{false, true} {
		ForceGo = force
		for n := 0; n < 700; n += 1 + n/50 {
			p := data(n, uint64(n))
			want := sha256.Sum256(p)
			for _, sizes := range [][]int{{n + 1}, {1}, {63, 65}, {7, 128, 3}} {
				d := New()
				writeSplit(d, p, sizes)
				if got := d.Sum(nil); !bytes.Equal(got, want[:]) {
					t.Fatalf("ForceGo=%v len %d split %v: %x, want %x", force, n, sizes, got, want)
				}
			}
		}
	}
	ForceGo = false
}

// TestPair checks Pair against two separate crypto/sha256 digests for
// pieces of unequal and unaligned lengths, digests with pending partial
// blocks, and long runs through the two-message kernel.
func TestPair(t *testing.T) {
	for _, force := range []bool{false, true} {
		ForceGo = force
		for trial := range 60 {
			r := rand.New(rand.NewPCG(uint64(trial), 2))
			a, b := New(), New()
			ha, hb := sha256.New(), sha256.New()
			for step := range 12 {
				la, lb := r.IntN(5000), r.IntN(5000)
				if step%3 == 0 {
					la, lb = 64*r.IntN(80), 64*r.IntN(80) // whole blocks
				}
				pa, pb := data(la, uint64(trial*100+step)), data(lb, uint64(trial*100+step+50))
				Pair(a, pa, b, pb)
				ha.Write(pa)
				hb.Write(pb)
				if got, want := a.Sum(nil), ha.Sum(nil); !bytes.Equal(got, want) {
					t.Fatalf("ForceGo=%v trial %d step %d: a %x, want %x", force, trial, step, got, want)
				}
				if got, want := b.Sum(nil), hb.Sum(nil); !bytes.Equal(got, want) {
					t.Fatalf("ForceGo=%v trial %d step %d: b %x, want %x", force, trial, step, got, want)
				}
			}
		}
	}
	ForceGo = false
}

func TestPairSelfPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Pair(a, a) did not panic")
		}
	}()
	d := New()
	Pair(d, nil, d, nil)
}

func BenchmarkWrite(b *testing.B) {
	p := data(4<<20, 1)
	for _, force := range []bool{false, true} {
		b.Run(fmt.Sprintf("go=%v", force), func(b *testing.B) {
			ForceGo = force
			defer func() { ForceGo = false }()
			d := New()
			b.SetBytes(int64(len(p)))
			b.ReportAllocs()
			for b.Loop() {
				d.Write(p)
			}
		})
	}
	b.Run("crypto", func(b *testing.B) {
		d := sha256.New()
		b.SetBytes(int64(len(p)))
		b.ReportAllocs()
		for b.Loop() {
			d.Write(p)
		}
	})
}

// BenchmarkPair hashes two 4 MiB pieces per op (SetBytes counts both).
func BenchmarkPair(b *testing.B) {
	pa, pb := data(4<<20, 1), data(4<<20, 2)
	x, y := New(), New()
	b.SetBytes(int64(len(pa) + len(pb)))
	b.ReportAllocs()
	for b.Loop() {
		Pair(x, pa, y, pb)
	}
}
