#include "textflag.h"

// AVX-512 tiles of attend (attention.go). Every lane keeps one sequential
// float64 sum, product rounded, then added (VMULPD, VADDPD: never fused),
// so each score and each accumulator element has the bits of the scalar
// loops; vectors only run across (head, token) lanes in the score tiles
// and across elements e in the value tiles. Half rows are widened in
// registers: VCVTPH2PS (float16) and a 16-bit shift (bfloat16) are exact,
// and so is VCVTPS2PD; a signalling NaN comes out quiet with its payload,
// which is what the scalar path's float32 -> float64 conversion gives.

// Row widening: 8 elements at mem into the float64 lanes of zd (yt is a
// scratch register below Y16, for the VEX forms).
#define WF32(mem, yt, zd) VCVTPS2PD mem, zd
#define WF16(mem, yt, zd) VCVTPH2PS mem, yt; VCVTPS2PD yt, zd
#define WBF16(mem, yt, zd) VPMOVZXWD mem, yt; VPSLLD $16, yt, yt; VCVTPS2PD yt, zd

// ---------------------------------------------------------------- scores
//
// Lanes 2h+u of a score accumulator hold head h (of 4) and token u (of
// 2). Registers: Z16-Z23 accumulators (token pairs), Z24-Z31 the query
// vectors (q_0..q_3[e], each twice) of 8 consecutive e, Z8/Z9 and Z12/Z13
// the two rows of a pair in float64, Z0-Z7 key vectors (k_0[e], k_1[e])
// x4. Pointers: DI scores, R8 head stride (bytes), R9 3*R8, SI query,
// BX first row of the token group, DX row stride (bytes), R10 d, AX tokens
// left, R11 query at e, R12 row 0 at e, R13 row of the pair, CX e left.

// KVEC puts (a[i], b[i]) x4 into zt for the four i of one lane pattern:
// lo = VUNPCKLPD rows (a0 b0 a2 b2 ...), hi = VUNPCKHPD rows (a1 b1 ...).
#define QSTEP(imm, src, zt, zq, acc) VSHUFF64X2 imm, src, src, zt; VMULPD zq, zt, zt; VADDPD zt, acc, acc

// QPAIR adds the 8 products q[e..e+7] * k[e..e+7] of a token pair, in e
// order, into acc; W widens a row.
#define QPAIR(W, acc, za, zb, ya, yb) \
	W((R13), ya, za); \
	W((R13)(DX*1), yb, zb); \
	VUNPCKLPD zb, za, Z0; \
	VUNPCKHPD zb, za, Z1; \
	QSTEP($0x00, Z0, Z2, Z24, acc); \
	QSTEP($0x00, Z1, Z3, Z25, acc); \
	QSTEP($0x55, Z0, Z4, Z26, acc); \
	QSTEP($0x55, Z1, Z5, Z27, acc); \
	QSTEP($0xaa, Z0, Z4, Z28, acc); \
	QSTEP($0xaa, Z1, Z5, Z29, acc); \
	QSTEP($0xff, Z0, Z2, Z30, acc); \
	QSTEP($0xff, Z1, Z3, Z31, acc); \
	LEAQ (R13)(DX*2), R13

#define QLOAD \
	VMOVUPD (R11), Z24; \
	VMOVUPD 64(R11), Z25; \
	VMOVUPD 128(R11), Z26; \
	VMOVUPD 192(R11), Z27; \
	VMOVUPD 256(R11), Z28; \
	VMOVUPD 320(R11), Z29; \
	VMOVUPD 384(R11), Z30; \
	VMOVUPD 448(R11), Z31

// QSTORE scales acc and writes its two tokens of each head at off.
#define QSTORE(acc, off) \
	VMULPD Z7, acc, acc; \
	VEXTRACTF32X4 $0, acc, off(DI); \
	VEXTRACTF32X4 $1, acc, off(DI)(R8*1); \
	VEXTRACTF32X4 $2, acc, off(DI)(R8*2); \
	VEXTRACTF32X4 $3, acc, off(DI)(R9*1)

// QK is the body of a score tile; W widens 8 elements, ESZ is the bytes
// of 8 elements and SH the log2 of an element's size.
#define QK(W, ESZ) \
qk16: \
	CMPQ AX, $16; \
	JLT qk2; \
	VPXORQ Z16, Z16, Z16; \
	VPXORQ Z17, Z17, Z17; \
	VPXORQ Z18, Z18, Z18; \
	VPXORQ Z19, Z19, Z19; \
	VPXORQ Z20, Z20, Z20; \
	VPXORQ Z21, Z21, Z21; \
	VPXORQ Z22, Z22, Z22; \
	VPXORQ Z23, Z23, Z23; \
	MOVQ SI, R11; \
	MOVQ BX, R12; \
	MOVQ R10, CX; \
qk16e: \
	QLOAD; \
	MOVQ R12, R13; \
	QPAIR(W, Z16, Z8, Z9, Y10, Y11); \
	QPAIR(W, Z17, Z12, Z13, Y14, Y15); \
	QPAIR(W, Z18, Z8, Z9, Y10, Y11); \
	QPAIR(W, Z19, Z12, Z13, Y14, Y15); \
	QPAIR(W, Z20, Z8, Z9, Y10, Y11); \
	QPAIR(W, Z21, Z12, Z13, Y14, Y15); \
	QPAIR(W, Z22, Z8, Z9, Y10, Y11); \
	QPAIR(W, Z23, Z12, Z13, Y14, Y15); \
	ADDQ $512, R11; \
	ADDQ $ESZ, R12; \
	SUBQ $8, CX; \
	JNE qk16e; \
	QSTORE(Z16, 0); \
	QSTORE(Z17, 16); \
	QSTORE(Z18, 32); \
	QSTORE(Z19, 48); \
	QSTORE(Z20, 64); \
	QSTORE(Z21, 80); \
	QSTORE(Z22, 96); \
	QSTORE(Z23, 112); \
	ADDQ $128, DI; \
	MOVQ DX, CX; \
	SHLQ $4, CX; \
	ADDQ CX, BX; \
	SUBQ $16, AX; \
	JMP qk16; \
qk2: \
	CMPQ AX, $2; \
	JLT qkdone; \
	VPXORQ Z16, Z16, Z16; \
	MOVQ SI, R11; \
	MOVQ BX, R12; \
	MOVQ R10, CX; \
qk2e: \
	QLOAD; \
	MOVQ R12, R13; \
	QPAIR(W, Z16, Z8, Z9, Y10, Y11); \
	ADDQ $512, R11; \
	ADDQ $ESZ, R12; \
	SUBQ $8, CX; \
	JNE qk2e; \
	QSTORE(Z16, 0); \
	ADDQ $16, DI; \
	LEAQ (BX)(DX*2), BX; \
	SUBQ $2, AX; \
	JMP qk2; \
qkdone: \
	VZEROUPPER; \
	RET

// ---------------------------------------------------------------- values
//
// The accumulators of 32 elements (or 8, for the rest of d) of four heads
// stay in registers, Z16-Z19 head 0 ... Z28-Z31 head 3, while the tokens
// go by in order; each widened row chunk (Z0-Z3) serves the four heads.
// Pointers: DI acc at the chunk, R10 acc head stride (bytes), R11 3*R10,
// SI p, R8 p head stride (bytes), R9 3*R8, BX row 0 at the chunk, DX row
// stride (bytes), CX elements left, R12 p of the token, R13 its row, AX
// tokens left. Z4-Z7 hold the four heads' p, Z8-Z15 products.

#define PMUL(zp, zv, zt, acc) VMULPD zp, zv, zt; VADDPD zt, acc, acc

#define PBCAST \
	VBROADCASTSD (R12), Z4; \
	VBROADCASTSD (R12)(R8*1), Z5; \
	VBROADCASTSD (R12)(R8*2), Z6; \
	VBROADCASTSD (R12)(R9*1), Z7

#define PV(W, ESZ) \
pv32: \
	CMPQ CX, $32; \
	JLT pv8; \
	VMOVUPD (DI), Z16; \
	VMOVUPD 64(DI), Z17; \
	VMOVUPD 128(DI), Z18; \
	VMOVUPD 192(DI), Z19; \
	VMOVUPD (DI)(R10*1), Z20; \
	VMOVUPD 64(DI)(R10*1), Z21; \
	VMOVUPD 128(DI)(R10*1), Z22; \
	VMOVUPD 192(DI)(R10*1), Z23; \
	VMOVUPD (DI)(R10*2), Z24; \
	VMOVUPD 64(DI)(R10*2), Z25; \
	VMOVUPD 128(DI)(R10*2), Z26; \
	VMOVUPD 192(DI)(R10*2), Z27; \
	VMOVUPD (DI)(R11*1), Z28; \
	VMOVUPD 64(DI)(R11*1), Z29; \
	VMOVUPD 128(DI)(R11*1), Z30; \
	VMOVUPD 192(DI)(R11*1), Z31; \
	MOVQ SI, R12; \
	MOVQ BX, R13; \
	MOVQ R14, AX; \
pv32t: \
	W((R13), Y0, Z0); \
	W(ESZ(R13), Y1, Z1); \
	W(2*ESZ(R13), Y2, Z2); \
	W(3*ESZ(R13), Y3, Z3); \
	PBCAST; \
	PMUL(Z4, Z0, Z8, Z16); \
	PMUL(Z4, Z1, Z9, Z17); \
	PMUL(Z4, Z2, Z10, Z18); \
	PMUL(Z4, Z3, Z11, Z19); \
	PMUL(Z5, Z0, Z12, Z20); \
	PMUL(Z5, Z1, Z13, Z21); \
	PMUL(Z5, Z2, Z14, Z22); \
	PMUL(Z5, Z3, Z15, Z23); \
	PMUL(Z6, Z0, Z8, Z24); \
	PMUL(Z6, Z1, Z9, Z25); \
	PMUL(Z6, Z2, Z10, Z26); \
	PMUL(Z6, Z3, Z11, Z27); \
	PMUL(Z7, Z0, Z12, Z28); \
	PMUL(Z7, Z1, Z13, Z29); \
	PMUL(Z7, Z2, Z14, Z30); \
	PMUL(Z7, Z3, Z15, Z31); \
	ADDQ $8, R12; \
	ADDQ DX, R13; \
	DECQ AX; \
	JNE pv32t; \
	VMOVUPD Z16, (DI); \
	VMOVUPD Z17, 64(DI); \
	VMOVUPD Z18, 128(DI); \
	VMOVUPD Z19, 192(DI); \
	VMOVUPD Z20, (DI)(R10*1); \
	VMOVUPD Z21, 64(DI)(R10*1); \
	VMOVUPD Z22, 128(DI)(R10*1); \
	VMOVUPD Z23, 192(DI)(R10*1); \
	VMOVUPD Z24, (DI)(R10*2); \
	VMOVUPD Z25, 64(DI)(R10*2); \
	VMOVUPD Z26, 128(DI)(R10*2); \
	VMOVUPD Z27, 192(DI)(R10*2); \
	VMOVUPD Z28, (DI)(R11*1); \
	VMOVUPD Z29, 64(DI)(R11*1); \
	VMOVUPD Z30, 128(DI)(R11*1); \
	VMOVUPD Z31, 192(DI)(R11*1); \
	ADDQ $256, DI; \
	ADDQ $(4*ESZ), BX; \
	SUBQ $32, CX; \
	JMP pv32; \
pv8: \
	CMPQ CX, $8; \
	JLT pvdone; \
	VMOVUPD (DI), Z16; \
	VMOVUPD (DI)(R10*1), Z20; \
	VMOVUPD (DI)(R10*2), Z24; \
	VMOVUPD (DI)(R11*1), Z28; \
	MOVQ SI, R12; \
	MOVQ BX, R13; \
	MOVQ R14, AX; \
pv8t: \
	W((R13), Y0, Z0); \
	PBCAST; \
	PMUL(Z4, Z0, Z8, Z16); \
	PMUL(Z5, Z0, Z9, Z20); \
	PMUL(Z6, Z0, Z10, Z24); \
	PMUL(Z7, Z0, Z11, Z28); \
	ADDQ $8, R12; \
	ADDQ DX, R13; \
	DECQ AX; \
	JNE pv8t; \
	VMOVUPD Z16, (DI); \
	VMOVUPD Z20, (DI)(R10*1); \
	VMOVUPD Z24, (DI)(R10*2); \
	VMOVUPD Z28, (DI)(R11*1); \
	ADDQ $64, DI; \
	ADDQ $ESZ, BX; \
	SUBQ $8, CX; \
	JMP pv8; \
pvdone: \
	VZEROUPPER; \
	RET

// func attnQKF32(s *float64, ls int, q *float64, k *float32, rs, d, n int, scale float64)
TEXT ·attnQKF32(SB), NOSPLIT, $0-64
	MOVQ s+0(FP), DI
	MOVQ ls+8(FP), R8
	SHLQ $3, R8
	LEAQ (R8)(R8*2), R9
	MOVQ q+16(FP), SI
	MOVQ k+24(FP), BX
	MOVQ rs+32(FP), DX
	SHLQ $2, DX
	MOVQ d+40(FP), R10
	MOVQ n+48(FP), AX
	VBROADCASTSD scale+56(FP), Z7
	QK(WF32, 32)

// func attnQKF16(s *float64, ls int, q *float64, k *uint16, rs, d, n int, scale float64)
TEXT ·attnQKF16(SB), NOSPLIT, $0-64
	MOVQ s+0(FP), DI
	MOVQ ls+8(FP), R8
	SHLQ $3, R8
	LEAQ (R8)(R8*2), R9
	MOVQ q+16(FP), SI
	MOVQ k+24(FP), BX
	MOVQ rs+32(FP), DX
	SHLQ $1, DX
	MOVQ d+40(FP), R10
	MOVQ n+48(FP), AX
	VBROADCASTSD scale+56(FP), Z7
	QK(WF16, 16)

// func attnQKBF16(s *float64, ls int, q *float64, k *uint16, rs, d, n int, scale float64)
TEXT ·attnQKBF16(SB), NOSPLIT, $0-64
	MOVQ s+0(FP), DI
	MOVQ ls+8(FP), R8
	SHLQ $3, R8
	LEAQ (R8)(R8*2), R9
	MOVQ q+16(FP), SI
	MOVQ k+24(FP), BX
	MOVQ rs+32(FP), DX
	SHLQ $1, DX
	MOVQ d+40(FP), R10
	MOVQ n+48(FP), AX
	VBROADCASTSD scale+56(FP), Z7
	QK(WBF16, 16)

// func attnPVF32(acc *float64, p *float64, ls int, v *float32, rs, d, n int)
TEXT ·attnPVF32(SB), NOSPLIT, $0-56
	MOVQ acc+0(FP), DI
	MOVQ p+8(FP), SI
	MOVQ ls+16(FP), R8
	SHLQ $3, R8
	LEAQ (R8)(R8*2), R9
	MOVQ v+24(FP), BX
	MOVQ rs+32(FP), DX
	SHLQ $2, DX
	MOVQ d+40(FP), CX
	MOVQ CX, R10
	SHLQ $3, R10
	LEAQ (R10)(R10*2), R11
	MOVQ n+48(FP), R14
	PV(WF32, 32)

// func attnPVF16(acc *float64, p *float64, ls int, v *uint16, rs, d, n int)
TEXT ·attnPVF16(SB), NOSPLIT, $0-56
	MOVQ acc+0(FP), DI
	MOVQ p+8(FP), SI
	MOVQ ls+16(FP), R8
	SHLQ $3, R8
	LEAQ (R8)(R8*2), R9
	MOVQ v+24(FP), BX
	MOVQ rs+32(FP), DX
	SHLQ $1, DX
	MOVQ d+40(FP), CX
	MOVQ CX, R10
	SHLQ $3, R10
	LEAQ (R10)(R10*2), R11
	MOVQ n+48(FP), R14
	PV(WF16, 16)

// func attnPVBF16(acc *float64, p *float64, ls int, v *uint16, rs, d, n int)
TEXT ·attnPVBF16(SB), NOSPLIT, $0-56
	MOVQ acc+0(FP), DI
	MOVQ p+8(FP), SI
	MOVQ ls+16(FP), R8
	SHLQ $3, R8
	LEAQ (R8)(R8*2), R9
	MOVQ v+24(FP), BX
	MOVQ rs+32(FP), DX
	SHLQ $1, DX
	MOVQ d+40(FP), CX
	MOVQ CX, R10
	SHLQ $3, R10
	LEAQ (R10)(R10*2), R11
	MOVQ n+48(FP), R14
	PV(WBF16, 16)
