package cpuslots

import (
	"sync"
	"sync/atomic"
)

// inUse counts the helpers running in the whole process.
var inUse atomic.Int64

// tryAcquire takes a helper slot if one is free.
func tryAcquire() bool {
	limit := int64(Procs() - 1)
	for {
		n := inUse.Load()
		if n >= limit {
			return false
		}
		if inUse.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func release() { inUse.Add(-1) }

// For calls fn(worker, unit) once for every unit in [0, n), on the calling
// goroutine (worker 0) and on helpers 1..workers-1 while slots allow.
// Units are handed out in order as workers free up. Worker numbers are
// distinct among concurrent calls of fn, and below max(1, min(workers, n)).
func For(workers, n int, fn func(worker, unit int)) {
	workers = min(workers, n)
	if workers <= 1 {
		for u := range n {
			fn(0, u)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	run := func(w int) {
		for {
			u := int(next.Add(1) - 1)
			if u >= n {
				return
			}
			fn(w, u)
		}
	}
	spawned := 1 // worker 0 is the caller; only the caller spawns
	recruit := func() {
		for spawned < workers && int(next.Load()) < n && tryAcquire() {
			w := spawned
			spawned++
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer release()
				run(w)
			}()
		}
	}
	recruit()
	for {
		u := int(next.Add(1) - 1)
		if u >= n {
			break
		}
		fn(0, u)
		recruit()
	}
	wg.Wait()
}

// InUse reports how many helpers are running (for tests).
func InUse() int { return int(inUse.Load()) }
