//go:build unix

package tokenizer

import (
	"syscall"
	"time"
)

// processCPU is the process's user+system CPU time, for benchmarks on shared
// machines where wall time overstates cost.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
