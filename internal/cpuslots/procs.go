package cpuslots

import (
	"os"
	"runtime"
	"sync/atomic"
)

// planned is the CPU count worker pools are sized for after RaiseForIO
// raised GOMAXPROCS above it; 0 when it did not.
var planned atomic.Int64

// Procs is the number of CPUs goldset sizes its worker pools and helper
// slots for: GOMAXPROCS, or what it was before RaiseForIO (whichever is
// smaller, so a test that lowers GOMAXPROCS still gets fewer workers).
func Procs() int {
	n := runtime.GOMAXPROCS(0)
	if p := int(planned.Load()); p > 0 && p < n {
		return p
	}
	return n
}

// RaiseForIO gives the scheduler extra Ps beyond the CPUs the work is
// planned for (Procs stays where it was), for a process that keeps
// blocking writes in flight while every CPU computes.
//
// A goroutine blocked in a write syscall holds its P until the runtime's
// monitor takes it back (tens of microseconds to 10 ms, depending on how
// busy the monitor has recently been), and a write that completes needs a
// P before it can hand its buffer back and start the next write. With as
// many Ps as CPUs, both waits leave a CPU idle or the disk without a
// queued write: a 2-CPU `gen peer-sizes` ran 10.95-12.3 s with two extra
// Ps against 13.8-16.9 s without, the same worker counts and bytes. The
// extra Ps run the I/O and hashing goroutines; compute loops stay bounded
// by Procs. An explicit GOMAXPROCS in the environment is left alone. The
// returned func undoes it (for callers that run inside a longer process,
// such as the CLI's tests); nested calls do nothing.
func RaiseForIO(extra int) (restore func()) {
	if extra <= 0 || os.Getenv("GOMAXPROCS") != "" {
		return func() {}
	}
	n := runtime.GOMAXPROCS(0)
	if !planned.CompareAndSwap(0, int64(n)) {
		return func() {}
	}
	runtime.GOMAXPROCS(n + extra)
	return func() {
		runtime.GOMAXPROCS(n)
		planned.Store(0)
	}
}
