//go:build !purego

#include "textflag.h"

// func f16sToF32sF16C(dst *float32, src *uint16, n int) int
//
// Widens src[0:k] to dst[0:k] 16 values at a time with VCVTPH2PS and
// returns k: n rounded down to a multiple of 16, or less when a group of 16
// holds an exponent of all ones (Inf or NaN), which the caller widens in Go
// (VCVTPH2PS would quiet a signalling NaN; the Go path keeps the payload).
TEXT ·f16sToF32sF16C(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ AX, AX
	MOVL $0x7c007c00, DX
	MOVQ DX, X3
	VPBROADCASTD X3, Y3
loop:
	LEAQ 16(AX), BX
	CMPQ BX, CX
	JGT done
	VMOVDQU (SI)(AX*2), Y0
	VPAND Y3, Y0, Y1
	VPCMPEQW Y3, Y1, Y1
	VPTEST Y1, Y1
	JNZ done
	VCVTPH2PS X0, Y2
	VMOVUPS Y2, (DI)(AX*4)
	VEXTRACTI128 $1, Y0, X0
	VCVTPH2PS X0, Y2
	VMOVUPS Y2, 32(DI)(AX*4)
	MOVQ BX, AX
	JMP loop
done:
	VZEROUPPER
	MOVQ AX, ret+24(FP)
	RET

// func bf16sToF32sAVX2(dst *float32, src *uint16, n int) int
//
// Widens src[0:k] to dst[0:k], k = n rounded down to a multiple of 16:
// bfloat16 bits are the top half of the float32 bits, so zero-extend and
// shift (exact for every pattern, NaN payloads included).
TEXT ·bf16sToF32sAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ AX, AX
bloop:
	LEAQ 16(AX), BX
	CMPQ BX, CX
	JGT bdone
	VPMOVZXWD (SI)(AX*2), Y0
	VPMOVZXWD 16(SI)(AX*2), Y1
	VPSLLD $16, Y0, Y0
	VPSLLD $16, Y1, Y1
	VMOVDQU Y0, (DI)(AX*4)
	VMOVDQU Y1, 32(DI)(AX*4)
	MOVQ BX, AX
	JMP bloop
bdone:
	VZEROUPPER
	MOVQ AX, ret+24(FP)
	RET
