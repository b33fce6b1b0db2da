package manifests

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"
)

// TestFileWriterSizes writes files of sizes around the direct-I/O block
// and buffer boundaries, in uneven pieces, through the direct and the
// buffered paths (and with NoSync), and checks content, hash and count.
func TestFileWriterSizes(t *testing.T) {
	sizes := []int{0, 1, directAlign - 1, directAlign, directAlign + 1, directBufSize - 1, directBufSize, directBufSize + 1,
		directBufs*directBufSize + 4096, (directBufs+1)*directBufSize + 123}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, mode := range []string{"direct", "buffered", "nosync"} {
		bw, err := CreateBundle(filepath.Join(t.TempDir(), "b"))
		if err != nil {
			t.Fatal(err)
		}
		bw.Buffered = mode == "buffered"
		bw.NoSync = mode == "nosync"
		for _, size := range sizes {
			data := make([]byte, size)
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			name := fmt.Sprintf("%s-%d.bin", mode, size)
			fw, err := bw.Create(name, false)
			if err != nil {
				t.Fatal(err)
			}
			if mode == "direct" && fw.dw == nil {
				t.Fatal("direct mode did not use the direct writer")
			}
			for p := data; len(p) > 0; {
				n := min(len(p), 1+rng.IntN(3*directBufSize/2))
				if k, err := fw.Write(p[:n]); err != nil || k != n {
					t.Fatalf("%s: Write = %d, %v", name, k, err)
				}
				p = p[n:]
			}
			if err := fw.Close(); err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(data)
			if fw.SHA256() != hex.EncodeToString(sum[:]) || fw.Bytes() != int64(size) {
				t.Errorf("%s: hash or count wrong", name)
			}
			got, err := os.ReadFile(filepath.Join(bw.Dir(), name))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data) {
				t.Errorf("%s: file content differs (%d bytes read, want %d)", name, len(got), size)
			}
		}
		bw.Abort()
	}
}

// TestDirectPoolReuse checks that closed files give their buffers back.
func TestDirectPoolReuse(t *testing.T) {
	bw, err := CreateBundle(filepath.Join(t.TempDir(), "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer bw.Abort()
	for i := range 3 {
		fw, err := bw.Create(fmt.Sprintf("f%d", i), false)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(make([]byte, 2*directBufSize+5))
		if err := fw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	n := directPool.Len()
	if n < 3 || n > directPoolMax {
		t.Errorf("pool holds %d buffers after three closed files, want 3..%d", n, directPoolMax)
	}
}

// A free disk worker takes the write of the file with the most bytes to
// come, and among equals the earliest.
func TestNextWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		reqs []diskReq
		want int
	}{
		{"one", []diskReq{{prio: 5, arrival: 1}}, 0},
		{"most to come", []diskReq{{prio: 8 << 20, arrival: 1}, {prio: 130 << 20, arrival: 2}, {prio: 4 << 20, arrival: 3}}, 1},
		{"tie: earliest", []diskReq{{prio: 7, arrival: 9}, {prio: 7, arrival: 3}, {prio: 7, arrival: 5}}, 1},
		{"no hint (0) goes last", []diskReq{{prio: 0, arrival: 1}, {prio: 1, arrival: 2}}, 1},
	} {
		if got := nextWrite(tc.reqs); got != tc.want {
			t.Errorf("%s: nextWrite = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// A file's hashing moves to its own goroutine at its first write of
// hashAsideMin or more, mid-buffer, and stays there: the hash is still
// over every byte in order, the content is intact (a buffer is reused
// only once hashed), and the hashing goroutine ends with the file.
func TestDirectHashAside(t *testing.T) {
	bw, err := CreateBundle(filepath.Join(t.TempDir(), "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer bw.Abort()
	warm, _ := bw.Create("warm", false) // starts the process's disk workers
	warm.Write(make([]byte, directBufSize))
	warm.Close()
	base := runtime.NumGoroutine()
	rng := rand.New(rand.NewPCG(5, 6))
	for i, pieces := range [][]int{
		{100, 4096, hashAsideMin, 7, 3*directBufSize + 5, 1},
		{2*directBufSize + 3, 10},
		slices.Repeat([]int{hashAsideMin}, 4*directBufs+1),
		{hashAsideMin - 1, hashAsideMin - 1, 5},  // never aside
		{directAlign, hashAsideMin, directAlign}, // aside, ends on a partial buffer
	} {
		name := fmt.Sprintf("f%d", i)
		fw, err := bw.Create(name, false)
		if err != nil {
			t.Fatal(err)
		}
		var data []byte
		for _, n := range pieces {
			p := make([]byte, n)
			for j := range p {
				p[j] = byte(rng.Uint32())
			}
			data = append(data, p...)
			if k, err := fw.Write(p); err != nil || k != n {
				t.Fatalf("%s: Write = %d, %v", name, k, err)
			}
			clear(p) // the writer must not read p after Write returns
		}
		if err := fw.Close(); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if fw.SHA256() != hex.EncodeToString(sum[:]) || fw.Bytes() != int64(len(data)) {
			t.Errorf("%s: hash or count wrong", name)
		}
		got, err := os.ReadFile(filepath.Join(bw.Dir(), name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Errorf("%s: content differs", name)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > base && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		t.Errorf("%d goroutines after the files closed, %d before", n, base)
	}
}

// slowHash hashes like sha256, slowly: the staged buffers' hashing then
// lags the copies, and a buffer reused before it is hashed would show.
type slowHash struct{ hash.Hash }

func (s slowHash) Write(p []byte) (int, error) {
	time.Sleep(2 * time.Millisecond)
	return s.Hash.Write(p)
}

// A staged buffer is refilled only once its hash has read it.
func TestDirectHashBeforeReuse(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := slowHash{sha256.New()}
	d := newDirectWriter(f, f.Name(), h)
	rng := rand.New(rand.NewPCG(7, 8))
	data := make([]byte, 6*directBufs*directBufSize)
	for j := range data {
		data[j] = byte(rng.Uint32())
	}
	for p := data; len(p) > 0; p = p[hashAsideMin:] { // copies far ahead of the hash
		if _, err := d.Write(p[:hashAsideMin]); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.finish(); err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(data); !bytes.Equal(h.Sum(nil), sum[:]) {
		t.Error("hash differs: a buffer was refilled before it was hashed")
	}
}
