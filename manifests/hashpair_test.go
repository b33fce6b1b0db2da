package manifests

import (
	"bytes"
	"crypto/sha256"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/goldset/goldset/internal/sha256x2"
)

// TestPairedWriteConcurrent hashes several files at once through the
// pairing workers, in pieces of different lengths (so pairs split
// unevenly and carry on with new partners), and compares each digest
// with crypto/sha256 of the whole file.
func TestPairedWriteConcurrent(t *testing.T) {
	const files = 5
	var wg sync.WaitGroup
	got := make([][]byte, files)
	want := make([][32]byte, files)
	for f := range files {
		r := rand.New(rand.NewPCG(uint64(f), 3))
		data := make([]byte, 1<<20+r.IntN(1<<20))
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		want[f] = sha256.Sum256(data)
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := sha256x2.New()
			done := make(chan struct{}, 1)
			for p := data; len(p) > 0; {
				n := min(len(p), 1+r.IntN(300<<10))
				pairedWrite(d, p[:n], done)
				p = p[n:]
			}
			got[f] = d.Sum(nil)
		}()
	}
	wg.Wait()
	for f := range files {
		if !bytes.Equal(got[f], want[f][:]) {
			t.Errorf("file %d: %x, want %x", f, got[f], want[f])
		}
	}
}

// BenchmarkPairedWrite hashes four 64 MiB files at once through the
// pairing workers in 4 MiB pieces (SetBytes counts all four), against
// BenchmarkHashPerFile: the same with one crypto/sha256 goroutine per file
// (how files were hashed before the pairing).
func BenchmarkPairedWrite(b *testing.B) { benchFiles(b, true) }

func BenchmarkHashPerFile(b *testing.B) { benchFiles(b, false) }

func benchFiles(b *testing.B, paired bool) {
	const files, size, piece = 4, 64 << 20, 4 << 20
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i * 2654435761 >> 13)
	}
	b.SetBytes(files * size)
	b.ReportAllocs()
	for b.Loop() {
		var wg sync.WaitGroup
		for range files {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if paired {
					d, done := sha256x2.New(), make(chan struct{}, 1)
					for p := data; len(p) > 0; p = p[piece:] {
						pairedWrite(d, p[:piece], done)
					}
					return
				}
				h := sha256.New()
				for p := data; len(p) > 0; p = p[piece:] {
					h.Write(p[:piece])
				}
			}()
		}
		wg.Wait()
	}
}
