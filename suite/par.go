package suite

import (
	"sync"
)

// parallelRange calls fn(i) for i in [0, n) on up to workers goroutines.
// Each i is an independent unit, so results never depend on workers.
func parallelRange(workers, n int, fn func(i int)) {
	parallelChunks(workers, n, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			fn(i)
		}
	})
}

// parallelChunks splits [0, n) into one contiguous chunk per worker and
// calls fn(worker, lo, hi) for each.
func parallelChunks(workers, n int, fn func(w, lo, hi int)) {
	workers = max(1, min(workers, n))
	if workers == 1 {
		if n > 0 {
			fn(0, 0, n)
		}
		return
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := w*n/workers, (w+1)*n/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(w, lo, hi)
		}()
	}
	wg.Wait()
}
