package manifests

import (
	"sync"

	"github.com/goldset/goldset/internal/cpuslots"
	"github.com/goldset/goldset/internal/sha256x2"
)

// Large files' hashing goes through a small pool of workers that hash two
// files' pieces together (sha256x2.Pair): on the SHA extensions one
// message is latency-bound, two interleaved take about 1.5x one's time on
// this project's VMs (BenchmarkPair), and a build usually writes several
// large tensors at once. Each file's hashing goroutine hands over one
// piece at a time and waits for it, so a file's pieces stay in order.

type pairJob struct {
	d    *sha256x2.Digest
	b    []byte
	done chan struct{}
}

var (
	pairQ    chan *pairJob
	pairOnce sync.Once
)

// pairedWrite hashes b into d on a pairing worker and returns when done.
func pairedWrite(d *sha256x2.Digest, b []byte, done chan struct{}) {
	pairOnce.Do(func() {
		pairQ = make(chan *pairJob, 64)
		for range max(1, cpuslots.Procs()) {
			go pairWorker()
		}
	})
	pairQ <- &pairJob{d: d, b: b, done: done}
	<-done
}

// pairWorker takes a job and, while it has bytes left, pairs it with
// whatever job is waiting (or hashes it alone when none is): the shorter
// of two ends first and the other carries on with the next partner.
func pairWorker() {
	for j := range pairQ {
		for j != nil {
			var k *pairJob
			select {
			case k = <-pairQ:
			default:
			}
			if k == nil {
				j.d.Write(j.b)
				j.done <- struct{}{}
				break
			}
			m := min(len(j.b), len(k.b))
			sha256x2.Pair(j.d, j.b[:m], k.d, k.b[:m])
			j.b, k.b = j.b[m:], k.b[m:]
			switch {
			case len(j.b) == 0 && len(k.b) == 0:
				j.done <- struct{}{}
				k.done <- struct{}{}
				j = nil
			case len(j.b) == 0:
				j.done <- struct{}{}
				j = k
			default:
				k.done <- struct{}{}
			}
		}
	}
}
