//go:build unix

package golden_test

import "syscall"

// dsaCPUSeconds is the process's user+system CPU time, so a benchmark can
// report a per-core rate on a shared machine (with -cpu 1).
func dsaCPUSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Sec) + float64(ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}
