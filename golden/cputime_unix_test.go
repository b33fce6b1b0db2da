//go:build unix

package golden_test

import "syscall"

// cpuSeconds is the process's user+system CPU time: on a shared machine a
// benchmark's elements per CPU-second is its per-core rate, whatever the
// wall clock says.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Sec) + float64(ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}
