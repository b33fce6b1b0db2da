//go:build !purego

#include "textflag.h"

// TILE_START loads the arguments of a tile kernel (dst DI, its row stride
// DX in bytes, a rows 0-1 SI and 2-3 R9 with stride R8, b BX, k CX) and
// zeroes the eight accumulators Z0-Z7.
#define TILE_START \
	MOVQ dst+0(FP), DI; \
	MOVQ ldd+8(FP), DX; \
	SHLQ $3, DX; \
	MOVQ a+16(FP), SI; \
	MOVQ lda+24(FP), R8; \
	SHLQ $3, R8; \
	MOVQ b+32(FP), BX; \
	MOVQ k+40(FP), CX; \
	LEAQ (SI)(R8*2), R9; \
	VPXORQ Z0, Z0, Z0; \
	VPXORQ Z1, Z1, Z1; \
	VPXORQ Z2, Z2, Z2; \
	VPXORQ Z3, Z3, Z3; \
	VPXORQ Z4, Z4, Z4; \
	VPXORQ Z5, Z5, Z5; \
	VPXORQ Z6, Z6, Z6; \
	VPXORQ Z7, Z7, Z7

// TILE_LOADS loads step p's panel row (Z16, Z17) and broadcasts the four
// rows' a[r*lda + p] (Z18, Z19, Z28, Z29).
#define TILE_LOADS \
	VMOVUPD      (BX), Z16; \
	VMOVUPD      64(BX), Z17; \
	VBROADCASTSD (SI), Z18; \
	VBROADCASTSD (SI)(R8*1), Z19; \
	VBROADCASTSD (R9), Z28; \
	VBROADCASTSD (R9)(R8*1), Z29

// TILE_NEXT advances to step p+1.
#define TILE_NEXT \
	ADDQ $128, BX; \
	ADDQ $8, SI; \
	ADDQ $8, R9

// TILE_STORE writes the accumulators to the four dst rows.
#define TILE_STORE \
	VMOVUPD Z0, (DI); \
	VMOVUPD Z1, 64(DI); \
	ADDQ    DX, DI; \
	VMOVUPD Z2, (DI); \
	VMOVUPD Z3, 64(DI); \
	ADDQ    DX, DI; \
	VMOVUPD Z4, (DI); \
	VMOVUPD Z5, 64(DI); \
	ADDQ    DX, DI; \
	VMOVUPD Z6, (DI); \
	VMOVUPD Z7, 64(DI); \
	VZEROUPPER

// func matmulTile4x16(dst *float64, ldd int, a *float64, lda int, b *float64, k int)
//
// dst[r*ldd + c] = sum over p = 0..k-1, in order, of a[r*lda + p] * b[p*16 + c]
// for r < 4, c < 16: a is four rows of A in float64, b a packed panel of
// 16 columns of B. Each lane keeps its own running sum, product rounded,
// then added (VMULPD, VADDPD: no fused multiply-add), so every element has
// the bits of the scalar sequential sum. Strides are in elements.
TEXT ·matmulTile4x16(SB), NOSPLIT, $0-48
	TILE_START
	TESTQ CX, CX
	JEQ   store
loop:
	TILE_LOADS
	VMULPD Z16, Z18, Z20
	VMULPD Z17, Z18, Z21
	VMULPD Z16, Z19, Z22
	VMULPD Z17, Z19, Z23
	VMULPD Z16, Z28, Z24
	VMULPD Z17, Z28, Z25
	VMULPD Z16, Z29, Z26
	VMULPD Z17, Z29, Z27
	VADDPD Z20, Z0, Z0
	VADDPD Z21, Z1, Z1
	VADDPD Z22, Z2, Z2
	VADDPD Z23, Z3, Z3
	VADDPD Z24, Z4, Z4
	VADDPD Z25, Z5, Z5
	VADDPD Z26, Z6, Z6
	VADDPD Z27, Z7, Z7
	TILE_NEXT
	DECQ CX
	JNE  loop
store:
	TILE_STORE
	RET

// func matmulTile4x16FMA(dst *float64, ldd int, a *float64, lda int, b *float64, k int)
//
// matmulTile4x16 with fused multiply-adds (VFMADD231PD), for products
// that are exact in float64 (a and b float32 values: 24 + 24 significant
// bits): round(a*b + s) is then round(fl(a*b) + s), the unfused kernel's
// step, so every element has the same bits. About 1.4x the unfused
// kernel's rate on this host's cores.
TEXT ·matmulTile4x16FMA(SB), NOSPLIT, $0-48
	TILE_START
	TESTQ CX, CX
	JEQ   fstore
floop:
	TILE_LOADS
	VFMADD231PD Z16, Z18, Z0
	VFMADD231PD Z17, Z18, Z1
	VFMADD231PD Z16, Z19, Z2
	VFMADD231PD Z17, Z19, Z3
	VFMADD231PD Z16, Z28, Z4
	VFMADD231PD Z17, Z28, Z5
	VFMADD231PD Z16, Z29, Z6
	VFMADD231PD Z17, Z29, Z7
	TILE_NEXT
	DECQ CX
	JNE  floop
fstore:
	TILE_STORE
	RET

// func matmulTile8x16FMA(dst *float64, ldd int, a *float64, lda int, b *float64, k int)
//
// matmulTile4x16FMA over eight rows of a (rows 0-1 SI, 2-3 R9, 4-5 R10,
// 6-7 R11, stride R8): sixteen accumulators Z0-Z15 share each panel row's
// two loads, which halves the loads per multiply-add and gives the FMA
// units twice the independent sums to hide their latency. Every element
// is the same sequential fused sum in p order, so the bits equal the 4-row
// kernel's (and the scalar ones').
TEXT ·matmulTile8x16FMA(SB), NOSPLIT, $0-48
	TILE_START
	LEAQ   (R9)(R8*2), R10
	LEAQ   (R10)(R8*2), R11
	VPXORQ Z8, Z8, Z8
	VPXORQ Z9, Z9, Z9
	VPXORQ Z10, Z10, Z10
	VPXORQ Z11, Z11, Z11
	VPXORQ Z12, Z12, Z12
	VPXORQ Z13, Z13, Z13
	VPXORQ Z14, Z14, Z14
	VPXORQ Z15, Z15, Z15
	TESTQ  CX, CX
	JEQ    store8

loop8:
	VMOVUPD      (BX), Z16
	VMOVUPD      64(BX), Z17
	VBROADCASTSD (SI), Z18
	VBROADCASTSD (SI)(R8*1), Z19
	VBROADCASTSD (R9), Z20
	VBROADCASTSD (R9)(R8*1), Z21
	VBROADCASTSD (R10), Z22
	VBROADCASTSD (R10)(R8*1), Z23
	VBROADCASTSD (R11), Z24
	VBROADCASTSD (R11)(R8*1), Z25
	VFMADD231PD  Z16, Z18, Z0
	VFMADD231PD  Z17, Z18, Z1
	VFMADD231PD  Z16, Z19, Z2
	VFMADD231PD  Z17, Z19, Z3
	VFMADD231PD  Z16, Z20, Z4
	VFMADD231PD  Z17, Z20, Z5
	VFMADD231PD  Z16, Z21, Z6
	VFMADD231PD  Z17, Z21, Z7
	VFMADD231PD  Z16, Z22, Z8
	VFMADD231PD  Z17, Z22, Z9
	VFMADD231PD  Z16, Z23, Z10
	VFMADD231PD  Z17, Z23, Z11
	VFMADD231PD  Z16, Z24, Z12
	VFMADD231PD  Z17, Z24, Z13
	VFMADD231PD  Z16, Z25, Z14
	VFMADD231PD  Z17, Z25, Z15
	ADDQ         $128, BX
	ADDQ         $8, SI
	ADDQ         $8, R9
	ADDQ         $8, R10
	ADDQ         $8, R11
	DECQ         CX
	JNE          loop8

store8:
	VMOVUPD Z0, (DI)
	VMOVUPD Z1, 64(DI)
	ADDQ    DX, DI
	VMOVUPD Z2, (DI)
	VMOVUPD Z3, 64(DI)
	ADDQ    DX, DI
	VMOVUPD Z4, (DI)
	VMOVUPD Z5, 64(DI)
	ADDQ    DX, DI
	VMOVUPD Z6, (DI)
	VMOVUPD Z7, 64(DI)
	ADDQ    DX, DI
	VMOVUPD Z8, (DI)
	VMOVUPD Z9, 64(DI)
	ADDQ    DX, DI
	VMOVUPD Z10, (DI)
	VMOVUPD Z11, 64(DI)
	ADDQ    DX, DI
	VMOVUPD Z12, (DI)
	VMOVUPD Z13, 64(DI)
	ADDQ    DX, DI
	VMOVUPD Z14, (DI)
	VMOVUPD Z15, 64(DI)
	VZEROUPPER
	RET
