//go:build amd64 && !purego

#include "textflag.h"

// func cpuid7() (ebx uint32)
TEXT ·cpuid7(SB), NOSPLIT, $0-4
	MOVL $7, AX
	MOVL $0, CX
	CPUID
	MOVL BX, ebx+0(FP)
	RET
