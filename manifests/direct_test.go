package manifests

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
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
