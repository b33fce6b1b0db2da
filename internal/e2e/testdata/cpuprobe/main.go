// Command cpuprobe prints the golang.org/x/sys/cpu flags that select
// goldset's amd64 kernels, as the process sees them after GODEBUG:
// TestScalarPathsIdentity runs it to show its GODEBUG turns them off.
package main

import (
	"fmt"

	"golang.org/x/sys/cpu"
)

func main() {
	fmt.Printf("avx=%v avx2=%v f16c=%v avx512f=%v\n", cpu.X86.HasAVX, cpu.X86.HasAVX2, cpu.X86.HasF16C, cpu.X86.HasAVX512F)
}
