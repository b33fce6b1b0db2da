//go:build !purego

#include "textflag.h"

// ROUND rounds the 8 float64 lanes of Y (already scaled) to half bits with
// the fast path of f16Fast/bf16Fast, packs them to 8 words in OUT and sets
// SLOW for lanes outside the format's normal range (the Go caller redoes
// those with the exact converter). a + (half ulp - 1 - bias) + lowest kept
// bit is f16Fast's a + half + lsb - bias (wrapping sums). Clobbers
// Z14-Z16, K7.
#define ROUND(Y, OUT, SLOW) \
	VPANDQ     Z29, Y, Z14      \ // a = |y| bits
	VPSUBQ     Z23, Z14, Z15    \ // a - lo
	VPCMPUQ    $5, Z24, Z15, SLOW \ // a - lo >= hi - lo (unsigned)
	VPTESTMQ   Z18, Z14, K7     \ // lowest kept bit set (ties to even)
	VPADDQ     Z25, Z14, Z14    \ // + half ulp - 1 - bias
	VPADDQ     Z30, Z14, K7, Z14 \ // + 1 where that bit is set
	VPSRLVQ    Z27, Z14, Z14    \
	VPSRLQ     $48, Y, Z16      \ // sign at bit 15
	VPTERNLOGQ $0xf8, Z31, Z16, Z14 \ // | sign & 0x8000
	VPMOVQW    Z14, OUT

// func chunkHalfAVX512(state uint64, dst *uint16, scale float64, c *halfVecConsts, ws *[512]float64, kc *[256]byte, rej, slow *rejectMask)
//
// The fast pass of chunkNormals followed by the fast path of f16s/bf16s
// for one whole chunk (256 elements), 16 elements per iteration: the same
// wyrand words (the 64x64->128 product from four 32-bit products), the same
// float64 products and the same single rounding, so the same bits. rej
// gets the rejected elements and slow those whose scaled value leaves the
// format's normal range; the caller finishes both in Go.
TEXT ·chunkHalfAVX512(SB), NOSPLIT, $0-64
	MOVQ state+0(FP), AX
	MOVQ dst+8(FP), DI
	VBROADCASTSD scale+16(FP), Z20
	MOVQ c+24(FP), SI
	MOVQ ws+32(FP), R8
	MOVQ kc+40(FP), R9
	MOVQ rej+48(FP), R10
	MOVQ slow+56(FP), R11

	VPBROADCASTQ AX, Z0
	VPADDQ       (SI), Z0, Z0 // lane i: state + (i+1)*inc
	VPBROADCASTQ 64(SI), Z21  // 8*inc
	VPBROADCASTQ 72(SI), Z22  // xor
	VPBROADCASTQ 80(SI), Z23  // lo
	VPBROADCASTQ 88(SI), Z24  // hi - lo
	VPBROADCASTQ 96(SI), Z25  // 1<<(sh-1) - 1 - bias
	VPBROADCASTQ 112(SI), Z27 // sh
	VPBROADCASTQ 120(SI), Z18 // 1<<sh
	MOVQ         $0xffffffff, CX
	VPBROADCASTQ CX, Z28
	MOVQ         $0x7fffffffffffffff, CX
	VPBROADCASTQ CX, Z29
	MOVQ         $1, CX
	VPBROADCASTQ CX, Z30
	MOVQ         $0x8000, CX
	VPBROADCASTQ CX, Z31
	MOVL         $0x1ff, CX
	VPBROADCASTD CX, Z19
	
	XORQ BX, BX

loop:
	// w = hi ^ lo of S * (S ^ xor), from 32-bit pieces.
	VPXORQ   Z22, Z0, Z1
	VPSRLQ   $32, Z0, Z2
	VPSRLQ   $32, Z1, Z3
	VPMULUDQ Z1, Z0, Z4  // p0 = alo*blo
	VPMULUDQ Z3, Z0, Z5  // p1 = alo*bhi
	VPMULUDQ Z1, Z2, Z6  // p2 = ahi*blo
	VPMULUDQ Z3, Z2, Z7  // p3 = ahi*bhi
	VPSRLQ   $32, Z4, Z8
	VPANDQ   Z28, Z5, Z9
	VPADDQ   Z9, Z8, Z8
	VPANDQ   Z28, Z6, Z9
	VPADDQ   Z9, Z8, Z8  // mid = p0>>32 + p1&M + p2&M
	VPSRLQ   $32, Z5, Z9
	VPADDQ   Z9, Z7, Z7
	VPSRLQ   $32, Z6, Z9
	VPADDQ   Z9, Z7, Z7
	VPSRLQ   $32, Z8, Z9
	VPADDQ   Z9, Z7, Z7  // hi
	VPSLLQ   $32, Z8, Z8
	VPANDQ   Z28, Z4, Z4
	VPORQ    Z8, Z4, Z4  // lo
	VPXORQ   Z7, Z4, Z4  // 16 dword draws r, in element order
	VPADDQ   Z21, Z0, Z0

	VPSRLD $9, Z4, Z5   // m
	VPANDD Z19, Z4, Z6  // layer and sign: index into zigWS

	// zigKc[layer] by two 128-byte permutes of the draws' low bytes (no
	// gather): bytes below 128 from the first half, the rest from the
	// second. An element is marked when m>>15 >= zigKc[layer], i.e. when
	// r >= zigKc[layer]<<24: every rejected element and the 1/256 whose
	// top bits tie the threshold; the caller decides the marked ones
	// exactly.
	VMOVDQU64 (R9), Z8
	VPERMT2B  64(R9), Z4, Z8
	VMOVDQU64 128(R9), Z7
	VPERMT2B  192(R9), Z4, Z7
	VPMOVB2M  Z4, K1
	VMOVDQU8  Z7, K1, Z8
	VPSLLD    $24, Z8, Z8
	VPCMPUD   $5, Z8, Z4, K2 // r >= zigKc[layer]<<24: maybe rejected
	KMOVW     K2, (R10)(BX*2)

	VCVTUDQ2PD    Y5, Z9
	KXNORW        K3, K3, K3
	VGATHERDPD    (R8)(Y6*8), K3, Z10
	VMULPD        Z10, Z9, Z9
	VEXTRACTI64X4 $1, Z5, Y11
	VEXTRACTI64X4 $1, Z6, Y12
	VCVTUDQ2PD    Y11, Z11
	KXNORW        K3, K3, K3
	VGATHERDPD    (R8)(Y12*8), K3, Z13
	VMULPD        Z13, Z11, Z11

	VMULPD Z20, Z9, Z9
	VMULPD Z20, Z11, Z11
	ROUND(Z9, X13, K4)
	ROUND(Z11, X12, K5)
	VMOVDQU  X13, (DI)
	VMOVDQU  X12, 16(DI)
	KUNPCKBW K4, K5, K6
	KMOVW    K6, (R11)(BX*2)

	ADDQ $32, DI
	INCQ BX
	CMPQ BX, $16
	JLT  loop
	VZEROUPPER
	RET
