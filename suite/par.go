package suite

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/goldset/goldset/internal/cpuslots"
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
	// Chunk c is [c*n/workers, (c+1)*n/workers), whoever runs it.
	cpuslots.For(workers, workers, func(w, c int) {
		fn(w, c*n/workers, (c+1)*n/workers)
	})
}

// forOrdered runs work(b, w) for b in [0, n) on up to workers goroutines,
// w being the worker's slot (for its scratch). Items are handed out in
// order as workers free up, so a long item does not hold the others back;
// emit(b) runs on the calling goroutine in item order as soon as item b
// and all before it are done, so what emit writes does not depend on the
// worker count. At most window items are handed out but not yet emitted,
// which bounds the per-item results that wait for emission. After an
// error no new item starts; the error of the lowest failing item is
// returned once the workers have stopped.
//
// gate, when not nil, is called by each worker before it takes its first
// item (to hold some workers back for a while).
func forOrdered(workers, window, n int, gate func(w int), work func(b, w int) error, emit func(b int) error) error {
	workers = max(1, min(workers, n))
	window = max(window, workers)
	type result struct {
		b   int
		err error
	}
	var (
		next    atomic.Int64
		stop    = make(chan struct{})
		tokens  = make(chan struct{}, window)
		results = make(chan result, window)
		wg      sync.WaitGroup
	)
	for range window {
		tokens <- struct{}{}
	}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if gate != nil {
				gate(w)
			}
			for {
				select {
				case <-stop:
					return
				case <-tokens:
				}
				select {
				case <-stop:
					return
				default:
				}
				b := int(next.Add(1) - 1)
				if b >= n {
					return
				}
				results <- result{b, work(b, w)}
			}
		}()
	}
	done := make([]bool, n)
	var first error
	firstB, emitted := n, 0
	for emitted < n && first == nil {
		r := <-results
		done[r.b] = true
		if r.err != nil {
			first, firstB = r.err, r.b
			break
		}
		for emitted < n && done[emitted] {
			if emit != nil {
				if err := emit(emitted); err != nil {
					first, firstB = err, emitted
					break
				}
			}
			emitted++
			tokens <- struct{}{}
		}
	}
	close(stop)
	go func() { wg.Wait(); close(results) }()
	for r := range results { // let the running items finish
		if r.err != nil && r.b < firstB {
			first, firstB = r.err, r.b
		}
	}
	return first
}

// whileWriting runs compute on its own goroutine while write runs on the
// caller's: the goldens of paged cases regenerate their inputs rather than
// read them back, so they need not wait for the (device-bound) input files.
// The writing is the critical path (the device must be kept busy), so
// compute gets one worker until it is done: gate(w) blocks workers w >= 1
// until then. If write fails, stopped() turns true so compute can end
// early (its items returning errWriteFailed); the write error wins, then
// compute's.
func whileWriting(compute func(gate func(w int), stopped func() bool) error, write func() error) error {
	var stop atomic.Bool
	written := make(chan struct{})
	gate := func(w int) {
		if w > 0 {
			<-written
		}
	}
	done := make(chan error, 1)
	go func() { done <- compute(gate, stop.Load) }()
	werr := write()
	close(written)
	if werr != nil {
		stop.Store(true)
	}
	cerr := <-done
	if werr != nil {
		return werr
	}
	return cerr
}

// errWriteFailed ends a compute item of whileWriting once the writer has
// failed: the item must not count as done (its results were not made),
// and whileWriting returns the writer's error instead.
var errWriteFailed = errors.New("suite: the input writer failed")

// seqWorkers is how many sequences a paged case computes at once (each
// holds one gathered sequence in memory).
func seqWorkers() int { return min(2, defaultJobs()) }
