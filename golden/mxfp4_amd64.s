//go:build !purego

#include "textflag.h"

// The AVX-512 parts of MXFP4 quantization (mxfp4_amd64.go). Integer work
// only: the results are those of quantizeBlock's Go loops bit for bit
// (TestMXFP4QuantizeVecMatchesGo).

// ABSMAX16 folds the 16 dword lanes of Z into X's lane 0 (unsigned max).
#define ABSMAX16(Z, Y, X, T) \
	VEXTRACTI64X4 $1, Z, Y1; \
	VPMAXUD Y1, Y, Y; \
	VEXTRACTI128 $1, Y, X1; \
	VPMAXUD X1, X, X; \
	VPSHUFD $0x4e, X, X1; \
	VPMAXUD X1, X, X; \
	VPSHUFD $0xb1, X, X1; \
	VPMAXUD X1, X, X

// func mxAmaxAVX512(amax *uint32, x *uint32, nblk int)
//
// amax[j] = max over i < 32 of x[32j+i] & 0x7fffffff.
TEXT ·mxAmaxAVX512(SB), NOSPLIT, $0-24
	MOVQ amax+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ nblk+16(FP), CX
	MOVL $0x7fffffff, AX
	MOVQ AX, X15
	VPBROADCASTD X15, Z15
aloop:
	TESTQ CX, CX
	JZ adone
	VPANDD (SI), Z15, Z0
	VPANDD 64(SI), Z15, Z2
	VPMAXUD Z2, Z0, Z0
	ABSMAX16(Z0, Y0, X0, X1)
	VMOVD X0, (DI)
	ADDQ $128, SI
	ADDQ $4, DI
	DECQ CX
	JMP aloop
adone:
	VZEROUPPER
	RET

// func mxAmaxBF16AVX512(amax *uint32, x *uint16, nblk int)
//
// mxAmaxAVX512 on bfloat16 bits widened to float32 bits (h << 16).
TEXT ·mxAmaxBF16AVX512(SB), NOSPLIT, $0-24
	MOVQ amax+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ nblk+16(FP), CX
	MOVL $0x7fffffff, AX
	MOVQ AX, X15
	VPBROADCASTD X15, Z15
bloop:
	TESTQ CX, CX
	JZ bdone
	VPMOVZXWD (SI), Z0
	VPMOVZXWD 32(SI), Z2
	VPSLLD $16, Z0, Z0
	VPSLLD $16, Z2, Z2
	VPANDD Z15, Z0, Z0
	VPANDD Z15, Z2, Z2
	VPMAXUD Z2, Z0, Z0
	ABSMAX16(Z0, Y0, X0, X1)
	VMOVD X0, (DI)
	ADDQ $64, SI
	ADDQ $4, DI
	DECQ CX
	JMP bloop
bdone:
	VZEROUPPER
	RET

// CODES16 turns the float32 bits in Z (16 lanes) into E2M1 codes in C:
// the sign bit to bit 3, plus one for each threshold g[i] (dwords at R10)
// that |x| exceeds. Z15 = 0x7fffffff, Z14 = 8, Z13 = 1.
#define CODES16(Z, A, C, K) \
	VPANDD Z15, Z, A; \
	VPSRLD $28, Z, C; \
	VPANDD Z14, C, C; \
	VPCMPUD $6, Z6, A, K; \
	VPADDD Z13, C, K, C; \
	VPCMPUD $6, Z7, A, K; \
	VPADDD Z13, C, K, C; \
	VPCMPUD $6, Z8, A, K; \
	VPADDD Z13, C, K, C; \
	VPCMPUD $6, Z9, A, K; \
	VPADDD Z13, C, K, C; \
	VPCMPUD $6, Z10, A, K; \
	VPADDD Z13, C, K, C; \
	VPCMPUD $6, Z11, A, K; \
	VPADDD Z13, C, K, C; \
	VPCMPUD $6, Z12, A, K; \
	VPADDD Z13, C, K, C

// LOADTHR broadcasts the seven thresholds of scale byte (R8) into Z6-Z12.
#define LOADTHR \
	MOVBLZX (R8), AX; \
	SHLQ $5, AX; \
	LEAQ (R9)(AX*1), R10; \
	VPBROADCASTD (R10), Z6; \
	VPBROADCASTD 4(R10), Z7; \
	VPBROADCASTD 8(R10), Z8; \
	VPBROADCASTD 12(R10), Z9; \
	VPBROADCASTD 16(R10), Z10; \
	VPBROADCASTD 20(R10), Z11; \
	VPBROADCASTD 24(R10), Z12

// PACKSTORE packs the 32 codes in Z4 (elements 0-15) and Z5 (16-31) two
// per byte, element 2i in the low nibble, and stores 16 bytes at DI.
#define PACKSTORE \
	VPMOVDB Z4, X4; \
	VPMOVDB Z5, X5; \
	VINSERTI128 $1, X5, Y4, Y4; \
	VPSRLW $4, Y4, Y5; \
	VPOR Y5, Y4, Y4; \
	VPMOVWB Y4, X4; \
	VMOVDQU X4, (DI)

#define CONSTS \
	MOVL $0x7fffffff, AX; \
	MOVQ AX, X15; \
	VPBROADCASTD X15, Z15; \
	MOVL $8, AX; \
	MOVQ AX, X14; \
	VPBROADCASTD X14, Z14; \
	MOVL $1, AX; \
	MOVQ AX, X13; \
	VPBROADCASTD X13, Z13

// func mxCodesAVX512(codes *uint8, x *uint32, scales *uint8, thr *uint32, nblk int)
//
// For each block j: codes[16j:16j+16] from x[32j:32j+32] under the
// thresholds thr[8*scales[j] : 8*scales[j]+7].
TEXT ·mxCodesAVX512(SB), NOSPLIT, $0-40
	MOVQ codes+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ scales+16(FP), R8
	MOVQ thr+24(FP), R9
	MOVQ nblk+32(FP), CX
	CONSTS
cloop:
	TESTQ CX, CX
	JZ cdone
	LOADTHR
	VMOVDQU32 (SI), Z0
	VMOVDQU32 64(SI), Z1
	CODES16(Z0, Z2, Z4, K1)
	CODES16(Z1, Z3, Z5, K2)
	PACKSTORE
	ADDQ $128, SI
	ADDQ $16, DI
	INCQ R8
	DECQ CX
	JMP cloop
cdone:
	VZEROUPPER
	RET

// func mxCodesBF16AVX512(codes *uint8, x *uint16, scales *uint8, thr *uint32, nblk int)
//
// mxCodesAVX512 on bfloat16 bits widened to float32 bits.
TEXT ·mxCodesBF16AVX512(SB), NOSPLIT, $0-40
	MOVQ codes+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ scales+16(FP), R8
	MOVQ thr+24(FP), R9
	MOVQ nblk+32(FP), CX
	CONSTS
dloop:
	TESTQ CX, CX
	JZ ddone
	LOADTHR
	VPMOVZXWD (SI), Z0
	VPMOVZXWD 32(SI), Z1
	VPSLLD $16, Z0, Z0
	VPSLLD $16, Z1, Z1
	CODES16(Z0, Z2, Z4, K1)
	CODES16(Z1, Z3, Z5, K2)
	PACKSTORE
	ADDQ $64, SI
	ADDQ $16, DI
	INCQ R8
	DECQ CX
	JMP dloop
ddone:
	VZEROUPPER
	RET

// func mxMaxAbsAVX512(x *uint32, n int) uint32
//
// The largest x[i] & 0x7fffffff over n elements, n a multiple of 32: the
// non-finite scan before quantization (a result >= 0x7f800000 means a NaN
// or Inf is present).
TEXT ·mxMaxAbsAVX512(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $5, CX
	MOVL $0x7fffffff, AX
	MOVQ AX, X15
	VPBROADCASTD X15, Z15
	VPXORD Z0, Z0, Z0
	VPXORD Z2, Z2, Z2
mloop:
	TESTQ CX, CX
	JZ mdone
	VPANDD (SI), Z15, Z3
	VPANDD 64(SI), Z15, Z4
	VPMAXUD Z3, Z0, Z0
	VPMAXUD Z4, Z2, Z2
	ADDQ $128, SI
	DECQ CX
	JMP mloop
mdone:
	VPMAXUD Z2, Z0, Z0
	ABSMAX16(Z0, Y0, X0, X1)
	VMOVD X0, AX
	MOVL AX, ret+16(FP)
	VZEROUPPER
	RET

// func mxMaxAbsBF16AVX512(x *uint16, n int) uint16
//
// mxMaxAbsAVX512 on bfloat16 bits (n a multiple of 32): the largest
// x[i] & 0x7fff.
TEXT ·mxMaxAbsBF16AVX512(SB), NOSPLIT, $0-18
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $5, CX
	MOVL $0x7fff7fff, AX
	MOVQ AX, X15
	VPBROADCASTD X15, Y15
	VPXOR Y0, Y0, Y0
nloop:
	TESTQ CX, CX
	JZ ndone
	VPAND (SI), Y15, Y3
	VPAND 32(SI), Y15, Y4
	VPMAXUW Y3, Y0, Y0
	VPMAXUW Y4, Y0, Y0
	ADDQ $64, SI
	DECQ CX
	JMP nloop
ndone:
	VEXTRACTI128 $1, Y0, X1
	VPMAXUW X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPMAXUW X1, X0, X0
	VPSHUFD $0xb1, X0, X1
	VPMAXUW X1, X0, X0
	VPSRLD $16, X0, X1
	VPMAXUW X1, X0, X0
	VMOVD X0, AX
	MOVW AX, ret+16(FP)
	VZEROUPPER
	RET
