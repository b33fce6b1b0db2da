//go:build !purego

#include "textflag.h"

// func orderedMinMaxAVX2(hi, lo *int16, src *uint16, row, cnt int)
//
// For e < row (a multiple of 16) and tokens t = 1..cnt-1, hi[e] and lo[e]
// take the max and min of orderedHalf(src[t*row + e]): the pattern XOR
// ((pattern >> 15, arithmetic) & 0x7fff), compared as int16. hi and lo
// hold token 0's keys on entry.
TEXT ·orderedMinMaxAVX2(SB), NOSPLIT, $0-40
	MOVQ hi+0(FP), DI
	MOVQ lo+8(FP), R8
	MOVQ src+16(FP), SI
	MOVQ row+24(FP), CX
	MOVQ cnt+32(FP), DX
	MOVL $0x7fff7fff, AX
	MOVQ AX, X15
	VPBROADCASTD X15, Y15
	XORQ R9, R9 // e
eloop:
	CMPQ R9, CX
	JGE done
	VMOVDQU (DI)(R9*2), Y0
	VMOVDQU (R8)(R9*2), Y1
	LEAQ (SI)(R9*2), R10 // &src[e]
	MOVQ $1, R11         // t
tloop:
	CMPQ R11, DX
	JGE tdone
	LEAQ (R10)(CX*2), R10 // next token's row
	VMOVDQU (R10), Y2
	VPSRAW  $15, Y2, Y3
	VPAND   Y15, Y3, Y3
	VPXOR   Y3, Y2, Y2
	VPMAXSW Y2, Y0, Y0
	VPMINSW Y2, Y1, Y1
	INCQ R11
	JMP tloop
tdone:
	VMOVDQU Y0, (DI)(R9*2)
	VMOVDQU Y1, (R8)(R9*2)
	ADDQ $16, R9
	JMP eloop
done:
	VZEROUPPER
	RET
