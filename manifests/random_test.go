package manifests

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestRandomFile writes files of sizes around page and staging boundaries
// in shuffled pieces of random sizes from several goroutines, and checks
// the read-back hash, the size and the content.
func TestRandomFile(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	bw, err := CreateBundle(filepath.Join(t.TempDir(), "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer bw.Abort()
	sizes := []int{0, 1, directAlign - 1, directAlign, directAlign + 1, 3*directAlign + 128, randomStage + 5, 2*directBufSize + 777}
	for _, size := range sizes {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		name := fmt.Sprintf("r-%d.bin", size)
		rf, err := bw.CreateRandom(name, int64(size))
		if err != nil {
			t.Fatal(err)
		}
		// Cut into pieces (some tiny, some spanning pages), shuffle.
		type piece struct{ off, n int }
		var pieces []piece
		for off := 0; off < size; {
			n := min(size-off, 1+rng.IntN(3*directAlign))
			if rng.IntN(4) == 0 {
				n = min(size-off, 1+rng.IntN(randomStage*2))
			}
			pieces = append(pieces, piece{off, n})
			off += n
		}
		rng.Shuffle(len(pieces), func(i, j int) { pieces[i], pieces[j] = pieces[j], pieces[i] })
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for w := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < len(pieces); i += 3 {
					pc := pieces[i]
					buf := append([]byte(nil), data[pc.off:pc.off+pc.n]...)
					if err := rf.WriteAt(buf, int64(pc.off)); err != nil {
						errs[w] = err
						return
					}
					clear(buf) // WriteAt must not keep it
				}
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		sum, n, err := rf.Finish()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := sha256.Sum256(data)
		if sum != hex.EncodeToString(want[:]) || n != int64(size) {
			t.Errorf("%s: Finish = %.12s, %d; want %.12x, %d", name, sum, n, want, size)
		}
		if err := rf.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(bw.Dir(), name))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s: content differs (%d bytes read, want %d; %v)", name, len(got), size, err)
		}
	}
}

// TestRandomFileErrors: a byte never written, and a write outside the file.
func TestRandomFileErrors(t *testing.T) {
	bw, err := CreateBundle(filepath.Join(t.TempDir(), "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer bw.Abort()
	for _, hole := range []int{0, 100, directAlign, 3*directAlign - 1} {
		rf, err := bw.CreateRandom(fmt.Sprintf("hole-%d.bin", hole), 3*directAlign)
		if err != nil {
			t.Fatal(err)
		}
		data := make([]byte, 3*directAlign)
		if hole > 0 {
			rf.WriteAt(data[:hole], 0)
		}
		rf.WriteAt(data[hole+1:], int64(hole+1))
		if _, _, err := rf.Finish(); !errors.Is(err, ErrIncomplete) {
			t.Errorf("hole at %d: Finish error %v, want ErrIncomplete", hole, err)
		}
		rf.Close()
	}
	rf, err := bw.CreateRandom("small.bin", 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ off, n int }{{-1, 1}, {5, 6}, {11, 0}} {
		if err := rf.WriteAt(make([]byte, c.n), int64(c.off)); err == nil {
			t.Errorf("WriteAt(%d bytes at %d) of a 10-byte file succeeded", c.n, c.off)
		}
	}
	rf.Close()
}

// TestRandomFileTwice: a page written twice while another is never
// written keeps the byte count right; the page map must catch it.
func TestRandomFileTwice(t *testing.T) {
	bw, err := CreateBundle(filepath.Join(t.TempDir(), "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer bw.Abort()
	rf, err := bw.CreateRandom("twice.bin", 2*directAlign)
	if err != nil {
		t.Fatal(err)
	}
	page := make([]byte, directAlign)
	if err := rf.WriteAt(page, 0); err != nil {
		t.Fatal(err)
	}
	err1 := rf.WriteAt(page, 0)
	_, _, err2 := rf.Finish()
	if err1 == nil && err2 == nil {
		t.Error("writing page 0 twice and page 1 never went unnoticed")
	}
	rf.Close()
}
