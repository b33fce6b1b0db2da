package cpuslots

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

func TestForRunsEveryUnitOnce(t *testing.T) {
	for _, tc := range []struct{ workers, n int }{{1, 0}, {1, 5}, {4, 0}, {4, 1}, {4, 3}, {8, 1000}, {64, 100}} {
		seen := make([]atomic.Int32, tc.n)
		var maxW atomic.Int32
		For(tc.workers, tc.n, func(w, u int) {
			seen[u].Add(1)
			for {
				m := maxW.Load()
				if int32(w) <= m || maxW.CompareAndSwap(m, int32(w)) {
					break
				}
			}
		})
		for u := range seen {
			if got := seen[u].Load(); got != 1 {
				t.Fatalf("workers %d n %d: unit %d ran %d times", tc.workers, tc.n, u, got)
			}
		}
		if int(maxW.Load()) >= max(1, min(tc.workers, tc.n)) {
			t.Fatalf("workers %d n %d: worker number %d out of range", tc.workers, tc.n, maxW.Load())
		}
		if InUse() != 0 {
			t.Fatalf("%d slots still held", InUse())
		}
	}
}

// Worker numbers are distinct among concurrent calls (callers index
// scratch by them).
func TestForWorkersDistinct(t *testing.T) {
	var busy [16]atomic.Int32
	For(16, 2000, func(w, u int) {
		if busy[w].Add(1) != 1 {
			t.Errorf("worker %d runs two units at once", w)
		}
		runtime.Gosched() // let another unit start meanwhile
		busy[w].Add(-1)
	})
}

// Many concurrent loops hold no more than GOMAXPROCS-1 helpers together,
// and nested loops finish (the caller always works).
func TestForBoundAndNesting(t *testing.T) {
	limit := runtime.GOMAXPROCS(0) - 1
	var peak atomic.Int64
	var wg sync.WaitGroup
	var total atomic.Int64
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			For(8, 50, func(_, _ int) {
				For(8, 20, func(_, _ int) {
					if n := int64(InUse()); n > peak.Load() {
						peak.Store(n)
					}
					total.Add(1)
				})
			})
		}()
	}
	wg.Wait()
	if total.Load() != 8*50*20 {
		t.Fatalf("ran %d inner units, want %d", total.Load(), 8*50*20)
	}
	if p := peak.Load(); p > int64(max(limit, 0)) {
		t.Fatalf("peak %d helpers, limit %d", p, limit)
	}
	if InUse() != 0 {
		t.Fatalf("%d slots still held", InUse())
	}
}
