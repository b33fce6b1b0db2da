//go:build !purego

#include "textflag.h"

// The AVX-512 parts of the DSA goldens (dsa_amd64.go). Each lane does the
// scalar Go loop's IEEE steps in its order, so the results are the Go
// twins' bits (TestDSAVecMatchesGo).

// func dsaE4M3CodesAVX512(codes *uint8, x *float32, n int, sc float32)
//
// codes[i] = E4M3FromF32(x[i] / sc) for i < n, n a multiple of 16 and > 0:
// the float32 quotient (VDIVPS, Go's x / sc), then E4M3FromF32's integer
// rounding of the encoding, its float32 addition of 2^14 below 2^-6, the
// saturation at 0x7e, the sign, and 0x7f for NaN.
TEXT ·dsaE4M3CodesAVX512(SB), NOSPLIT, $0-28
	MOVQ codes+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	VBROADCASTSS sc+24(FP), Z20
	MOVL $0x7fffffff, AX
	VPBROADCASTD AX, Z21
	MOVL $0x3c000000, AX // (127-7) << 23
	VPBROADCASTD AX, Z22
	MOVL $0x7ffff, AX // 1<<19 - 1
	VPBROADCASTD AX, Z23
	MOVL $1, AX
	VPBROADCASTD AX, Z24
	MOVL $0x46800000, AX // 2^14
	VPBROADCASTD AX, Z25
	MOVL $0x3c800000, AX // 2^-6
	VPBROADCASTD AX, Z26
	MOVL $0x7e, AX
	VPBROADCASTD AX, Z27
	MOVL $0x7f800000, AX
	VPBROADCASTD AX, Z28
	MOVL $0x7f, AX
	VPBROADCASTD AX, Z29
	MOVL $0x80, AX
	VPBROADCASTD AX, Z30
cloop:
	VMOVUPS   (SI), Z0
	VDIVPS    Z20, Z0, Z0     // q = x / sc
	VPANDD    Z21, Z0, Z1     // a = |q| bits
	VPSUBD    Z22, Z1, Z2     // n
	VPSRLD    $20, Z2, Z3
	VPANDD    Z24, Z3, Z3     // (n >> 20) & 1
	VPADDD    Z23, Z2, Z2
	VPADDD    Z3, Z2, Z2
	VPSRLD    $20, Z2, Z2     // r, normal results
	VADDPS    Z25, Z1, Z4     // |q| + 2^14
	VPSUBD    Z25, Z4, Z4     // r, subnormal results
	VPCMPUD   $1, Z26, Z1, K1 // a < 2^-6
	VMOVDQA32 Z4, K1, Z2
	VPMINUD   Z27, Z2, Z2     // saturate at 448
	VPSRLD    $24, Z0, Z5
	VPANDD    Z30, Z5, Z5     // sign
	VPORD     Z5, Z2, Z2
	VPCMPUD   $6, Z28, Z1, K2 // a > Inf: NaN
	VMOVDQA32 Z29, K2, Z2
	VPMOVDB   Z2, (DI)
	ADDQ      $64, SI
	ADDQ      $16, DI
	DECQ      CX
	JNZ       cloop
	VZEROUPPER
	RET

// HSTEP adds head h's term for 32 keys: dots at (BX), Z16 = wf[h],
// Z17 = |wf[h]|, Z15 = 0.
#define HSTEP(off, S, A) \
	VMAXPD off(BX), Z15, Z8; \
	VMULPD Z16, Z8, Z9; \
	VMULPD Z17, Z8, Z10; \
	VADDPD Z9, S, S; \
	VADDPD Z10, A, A

// func dsaHeadSumsAVX512(sums, abs, wf, wa *float64, hi int, dots *float64, cn, n int)
//
// For i < n (n a multiple of 32 and > 0, hi > 0): sums[i] = the sum over
// h = 0..hi-1 in order of wf[h] * max(0, dots[h*cn + i]), abs[i] the same
// with wa[h], each product rounded, then added, from +0. VMAXPD gives
// max(0, NaN) = NaN as Go's max does, and -0 for max(0, -0) where Go gives
// +0: the product is then a zero either way, and a zero added to a sum
// that started at +0 never changes its bits (no sum here is ever -0).
TEXT ·dsaHeadSumsAVX512(SB), NOSPLIT, $0-64
	MOVQ sums+0(FP), DI
	MOVQ abs+8(FP), R8
	MOVQ wf+16(FP), R9
	MOVQ wa+24(FP), R10
	MOVQ dots+40(FP), SI
	MOVQ cn+48(FP), R11
	SHLQ $3, R11
	MOVQ n+56(FP), CX
	SHRQ $5, CX
	VPXORQ Z15, Z15, Z15
kloop:
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3
	VPXORQ Z4, Z4, Z4
	VPXORQ Z5, Z5, Z5
	VPXORQ Z6, Z6, Z6
	VPXORQ Z7, Z7, Z7
	MOVQ SI, BX
	MOVQ R9, R12
	MOVQ R10, R13
	MOVQ hi+32(FP), DX
hloop:
	VBROADCASTSD (R12), Z16
	VBROADCASTSD (R13), Z17
	HSTEP(0, Z0, Z4)
	HSTEP(64, Z1, Z5)
	HSTEP(128, Z2, Z6)
	HSTEP(192, Z3, Z7)
	ADDQ R11, BX
	ADDQ $8, R12
	ADDQ $8, R13
	DECQ DX
	JNZ  hloop
	VMOVUPD Z0, (DI)
	VMOVUPD Z1, 64(DI)
	VMOVUPD Z2, 128(DI)
	VMOVUPD Z3, 192(DI)
	VMOVUPD Z4, (R8)
	VMOVUPD Z5, 64(R8)
	VMOVUPD Z6, 128(R8)
	VMOVUPD Z7, 192(R8)
	ADDQ $256, DI
	ADDQ $256, R8
	ADDQ $256, SI
	DECQ CX
	JNZ  kloop
	VZEROUPPER
	RET
