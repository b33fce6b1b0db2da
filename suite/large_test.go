package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goldset/goldset/manifests"
)

// TestLargeIndex builds a paged-attention case whose physical block ids put
// element offsets past 2^31 (where int32 offset arithmetic in a kernel
// overflows) with a hash-only sink: the builder's int64 indexing handles it
// and memory stays bounded while a 4 GiB cache streams through.
func TestLargeIndex(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 8 GiB of cache; skipped with -short")
	}
	const bs, d = 128, 128
	minBlock := (1<<31)/(bs*d) + 10 // first referenced block starts past element 2^31
	params := fmt.Sprintf(`{"hq": 4, "hkv": 1, "d": %d, "bs": %d, "dtype": "bfloat16", "context_lens": [300, 129], "min_block": %d}`, d, bs, minBlock)
	r := &manifests.Recipe{Name: "large", Version: "1", SpecVersion: 1, Cases: []manifests.RecipeCase{{ID: "pa", Op: "paged_attention", Split: "public", Params: json.RawMessage(params)}}}

	var m *manifests.Manifest
	peak, _, err := peakHeap(50*time.Millisecond, 0, func() (err error) {
		m, err = Build(context.Background(), r, HashSink{}, Options{Jobs: 1})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		NumBlocks int `json:"num_blocks"`
	}
	json.Unmarshal(m.Cases[0].Info, &info)
	if int64(info.NumBlocks)*bs*d <= math.MaxInt32 {
		t.Fatalf("cache of %d blocks does not reach past 2^31 elements", info.NumBlocks)
	}
	if peak > 512<<20 {
		t.Errorf("peak heap %d MiB while streaming a %d MiB cache: generation is not streamed", peak>>20, int64(info.NumBlocks)*bs*d*2>>20)
	}
	t.Logf("blocks %d, cache %d MiB per tensor, peak heap %d MiB above what was in use before", info.NumBlocks, int64(info.NumBlocks)*bs*d*2>>20, peak>>20)
}

// peakHeap runs f and returns the largest heap in use while it ran (sampled
// every period) above what was in use before, and that before. Earlier
// tests' garbage (TestControlsShipped holds ~1 GiB) must not count: it is
// collected first. gcPercent > 0 sets GOGC meanwhile: the garbage f may
// leave uncollected is that share of the heap (earlier tests' live data
// included), which a tight bound needs small.
func peakHeap(period time.Duration, gcPercent int, f func() error) (above, before uint64, err error) {
	if gcPercent > 0 {
		defer debug.SetGCPercent(debug.SetGCPercent(gcPercent))
	}
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		var ms runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(period):
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak.Load() {
					peak.Store(ms.HeapInuse)
				}
			}
		}
	}()
	err = f()
	close(done)
	<-stopped
	return peak.Load() - min(peak.Load(), base.HeapInuse), base.HeapInuse, err
}
