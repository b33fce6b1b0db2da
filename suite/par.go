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

// forRounds runs work(b, w) for b in [0, n) on up to workers goroutines,
// w being the worker's slot, in rounds of `workers` items; after each round
// it calls emit(b, w) for the round's items in order. Output written by emit
// is therefore in item order whatever the worker count.
func forRounds(workers, n int, work func(b, w int) error, emit func(b, w int) error) error {
	workers = max(1, min(workers, n))
	errs := make([]error, workers)
	for b0 := 0; b0 < n; b0 += workers {
		b1 := min(n, b0+workers)
		var wg sync.WaitGroup
		for b := b0; b < b1; b++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[b-b0] = work(b, b-b0)
			}()
		}
		wg.Wait()
		for b := b0; b < b1; b++ {
			if errs[b-b0] != nil {
				return errs[b-b0]
			}
			if emit != nil {
				if err := emit(b, b-b0); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// seqWorkers is how many sequences a paged case computes at once (each
// holds one gathered sequence in memory).
func seqWorkers() int { return min(2, defaultJobs()) }
