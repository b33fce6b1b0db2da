package manifests

import (
	"sync"
	"time"

	"github.com/goldset/goldset/internal/cpuslots"
	"github.com/goldset/goldset/internal/sha256x2"
)

// Large files' hashing goes through a dispatcher that pairs two files'
// pieces and Procs() workers that hash each pair together
// (sha256x2.Pair): on the SHA extensions one message is latency-bound, two
// interleaved take about 1.5x one's time on this project's VMs
// (BenchmarkPair), and a build usually writes several large tensors at
// once. Each file's hashing goroutine hands over one piece at a time and
// waits for it, so a file's pieces stay in order.
//
// Producers hand over pieces a little apart, so the dispatcher waits up
// to pairWait for a second piece before sending one alone (a file has
// several buffers in flight; the wait delays no writer). Workers that
// took the first piece themselves found no partner: a 2-CPU peer-sizes
// build then paired almost nothing.

// pairWait is how long the dispatcher waits for a partner.
const pairWait = 500 * time.Microsecond

type pairJob struct {
	d    *sha256x2.Digest
	b    []byte
	done chan struct{}
}

var (
	pairQ    chan *pairJob    // pieces from files, and the rest of uneven pairs
	pairExec chan [2]*pairJob // pairs (or one piece, second nil) to hash
	pairOnce sync.Once
)

// pairedWrite hashes b into d through the pairing workers and returns when
// done.
func pairedWrite(d *sha256x2.Digest, b []byte, done chan struct{}) {
	pairOnce.Do(func() {
		pairQ = make(chan *pairJob, 256)
		pairExec = make(chan [2]*pairJob)
		go pairDispatch()
		for range max(1, cpuslots.Procs()) {
			go pairWorker()
		}
	})
	pairQ <- &pairJob{d: d, b: b, done: done}
	<-done
}

func pairDispatch() {
	wait := time.NewTimer(time.Hour)
	wait.Stop()
	for j := range pairQ {
		var k *pairJob
		select {
		case k = <-pairQ:
		default:
			wait.Reset(pairWait)
			select {
			case k = <-pairQ:
				wait.Stop()
			case <-wait.C:
			}
		}
		pairExec <- [2]*pairJob{j, k}
	}
}

// pairWorker hashes a pair's common length together; the longer piece's
// rest goes back to the dispatcher (or is hashed here when its queue is
// full), and a finished piece's file is told.
func pairWorker() {
	for p := range pairExec {
		j, k := p[0], p[1]
		if k == nil {
			j.d.Write(j.b)
			j.done <- struct{}{}
			continue
		}
		m := min(len(j.b), len(k.b))
		sha256x2.Pair(j.d, j.b[:m], k.d, k.b[:m])
		for _, x := range [2]*pairJob{j, k} {
			if x.b = x.b[m:]; len(x.b) == 0 {
				x.done <- struct{}{}
				continue
			}
			select {
			case pairQ <- x:
			default:
				x.d.Write(x.b)
				x.done <- struct{}{}
			}
		}
	}
}
