//go:build !purego

#include "textflag.h"

// AVX-512 tiles of attend (attention.go; attn_amd64.go declares them).
// Every lane keeps one sequential float64 sum, each product rounded and
// then added (VMULPD, VADDPD: never fused), so every score and every
// accumulator element gets the bits of the scalar loops. The score tiles
// run their lanes across (head, token), never across e; the value tiles
// run theirs across e, each lane adding the tokens in order.
//
// Rows are widened in registers: VCVTPH2PS (float16), a 16-bit shift
// (bfloat16) and VCVTPS2PD are exact. A signalling NaN comes out quiet
// with its payload, which is also what the scalar path's float32 ->
// float64 conversion (CVTSS2SD) makes of it, so the float64 operands are
// the same bits on both paths.
//
// The half widening uses the VEX forms (F16C, AVX2), so its scratch
// registers are below Y16; everything else is AVX-512F.

// W* widen the 8 elements at mem into the float64 lanes of zd; yt is
// scratch.
#define WF32(mem, yt, zd) VCVTPS2PD mem, zd
#define WF16(mem, yt, zd) VCVTPH2PS mem, yt; VCVTPS2PD yt, zd
#define WBF16(mem, yt, zd) VPMOVZXWD mem, yt; VPSLLD $16, yt, yt; VCVTPS2PD yt, zd

// ------------------------------------------------------------ score tiles
//
// func attnQK*(s *float64, ls int, q *float64, k *T, rs, d, n int, scale float64)
//
// Lane 2h+u of an accumulator is head h (of the quad) and token u of a
// token pair; q holds, for each e, (q_0[e], q_0[e], ..., q_3[e], q_3[e]),
// and VPERMI2PD makes (k_0[e], k_1[e]) x4 from the pair's two widened rows.
// The main loop takes 8 tokens, four pairs whose e steps interleave so
// that four independent sums (Z16-Z19) hide the add latency, and steps e
// by 8: query vectors Z24-Z31, rows Z8-Z15, key vectors Z0-Z3, scale Z7.
// It prefetches the next 8 rows as it goes. Only 8 rows are in flight:
// rows a 2 or 4 KiB stride apart share L1 sets, and 16 of them (or more
// prefetched ahead) thrash them. A tail loop takes one pair at a time.
//
// DI scores (head stride R8 bytes), SI query, BX row 0 of the token group,
// DX row stride (bytes), R10 d, AX tokens left, R11 query at e, R12 row 0
// at e, R13 the row being widened, CX e left (then the scores of head 2),
// R14 and R9 8 and 9 rows (prefetch distances).

// attnPairIdx, 64 bytes for each i = 0..7: VPERMI2PD indexes taking
// (a[i], b[i]) x4 from rows a and b.
DATA attnPairIdx<>+0(SB)/8, $0
DATA attnPairIdx<>+8(SB)/8, $8
DATA attnPairIdx<>+16(SB)/8, $0
DATA attnPairIdx<>+24(SB)/8, $8
DATA attnPairIdx<>+32(SB)/8, $0
DATA attnPairIdx<>+40(SB)/8, $8
DATA attnPairIdx<>+48(SB)/8, $0
DATA attnPairIdx<>+56(SB)/8, $8
DATA attnPairIdx<>+64(SB)/8, $1
DATA attnPairIdx<>+72(SB)/8, $9
DATA attnPairIdx<>+80(SB)/8, $1
DATA attnPairIdx<>+88(SB)/8, $9
DATA attnPairIdx<>+96(SB)/8, $1
DATA attnPairIdx<>+104(SB)/8, $9
DATA attnPairIdx<>+112(SB)/8, $1
DATA attnPairIdx<>+120(SB)/8, $9
DATA attnPairIdx<>+128(SB)/8, $2
DATA attnPairIdx<>+136(SB)/8, $10
DATA attnPairIdx<>+144(SB)/8, $2
DATA attnPairIdx<>+152(SB)/8, $10
DATA attnPairIdx<>+160(SB)/8, $2
DATA attnPairIdx<>+168(SB)/8, $10
DATA attnPairIdx<>+176(SB)/8, $2
DATA attnPairIdx<>+184(SB)/8, $10
DATA attnPairIdx<>+192(SB)/8, $3
DATA attnPairIdx<>+200(SB)/8, $11
DATA attnPairIdx<>+208(SB)/8, $3
DATA attnPairIdx<>+216(SB)/8, $11
DATA attnPairIdx<>+224(SB)/8, $3
DATA attnPairIdx<>+232(SB)/8, $11
DATA attnPairIdx<>+240(SB)/8, $3
DATA attnPairIdx<>+248(SB)/8, $11
DATA attnPairIdx<>+256(SB)/8, $4
DATA attnPairIdx<>+264(SB)/8, $12
DATA attnPairIdx<>+272(SB)/8, $4
DATA attnPairIdx<>+280(SB)/8, $12
DATA attnPairIdx<>+288(SB)/8, $4
DATA attnPairIdx<>+296(SB)/8, $12
DATA attnPairIdx<>+304(SB)/8, $4
DATA attnPairIdx<>+312(SB)/8, $12
DATA attnPairIdx<>+320(SB)/8, $5
DATA attnPairIdx<>+328(SB)/8, $13
DATA attnPairIdx<>+336(SB)/8, $5
DATA attnPairIdx<>+344(SB)/8, $13
DATA attnPairIdx<>+352(SB)/8, $5
DATA attnPairIdx<>+360(SB)/8, $13
DATA attnPairIdx<>+368(SB)/8, $5
DATA attnPairIdx<>+376(SB)/8, $13
DATA attnPairIdx<>+384(SB)/8, $6
DATA attnPairIdx<>+392(SB)/8, $14
DATA attnPairIdx<>+400(SB)/8, $6
DATA attnPairIdx<>+408(SB)/8, $14
DATA attnPairIdx<>+416(SB)/8, $6
DATA attnPairIdx<>+424(SB)/8, $14
DATA attnPairIdx<>+432(SB)/8, $6
DATA attnPairIdx<>+440(SB)/8, $14
DATA attnPairIdx<>+448(SB)/8, $7
DATA attnPairIdx<>+456(SB)/8, $15
DATA attnPairIdx<>+464(SB)/8, $7
DATA attnPairIdx<>+472(SB)/8, $15
DATA attnPairIdx<>+480(SB)/8, $7
DATA attnPairIdx<>+488(SB)/8, $15
DATA attnPairIdx<>+496(SB)/8, $7
DATA attnPairIdx<>+504(SB)/8, $15
GLOBL attnPairIdx<>(SB), RODATA|NOPTR, $512

// QSTEP adds e-offset i (off = 64*i) of the pair with rows za, zb into acc:
// zt = (za[i], zb[i]) x4, times the query vector zq.
#define QSTEP(off, za, zb, zt, zq, acc) VMOVDQU64 attnPairIdx<>+off(SB), zt; VPERMI2PD zb, za, zt; VMULPD zq, zt, zt; VADDPD zt, acc, acc

// QE does e-offset i of four pairs (rows Z8/Z9 ... Z14/Z15).
#define QE(off, zq, a0, a1, a2, a3) \
	QSTEP(off, Z8, Z9, Z0, zq, a0); \
	QSTEP(off, Z10, Z11, Z1, zq, a1); \
	QSTEP(off, Z12, Z13, Z2, zq, a2); \
	QSTEP(off, Z14, Z15, Z3, zq, a3)

// QROW2 widens the 8 elements at R13 of two rows into za, zb, prefetches
// the same bytes 8 rows on and moves R13 two rows on.
#define QROW2(W, za, zb) \
	W((R13), Y4, za); \
	W((R13)(DX*1), Y5, zb); \
	PREFETCHT0 (R13)(R14*1); \
	PREFETCHT0 (R13)(R9*1); \
	LEAQ (R13)(DX*2), R13

// QQUAD adds q[e..e+7] * k[e..e+7], in e order, into the accumulators
// a0..a3 of four token pairs.
#define QQUAD(W, a0, a1, a2, a3) \
	QROW2(W, Z8, Z9); \
	QROW2(W, Z10, Z11); \
	QROW2(W, Z12, Z13); \
	QROW2(W, Z14, Z15); \
	QE(0, Z24, a0, a1, a2, a3); \
	QE(64, Z25, a0, a1, a2, a3); \
	QE(128, Z26, a0, a1, a2, a3); \
	QE(192, Z27, a0, a1, a2, a3); \
	QE(256, Z28, a0, a1, a2, a3); \
	QE(320, Z29, a0, a1, a2, a3); \
	QE(384, Z30, a0, a1, a2, a3); \
	QE(448, Z31, a0, a1, a2, a3)

// QPAIR is QQUAD for one token pair.
#define QPAIR(W, acc) \
	W((R13), Y4, Z8); \
	W((R13)(DX*1), Y5, Z9); \
	QSTEP(0, Z8, Z9, Z0, Z24, acc); \
	QSTEP(64, Z8, Z9, Z1, Z25, acc); \
	QSTEP(128, Z8, Z9, Z2, Z26, acc); \
	QSTEP(192, Z8, Z9, Z3, Z27, acc); \
	QSTEP(256, Z8, Z9, Z0, Z28, acc); \
	QSTEP(320, Z8, Z9, Z1, Z29, acc); \
	QSTEP(384, Z8, Z9, Z2, Z30, acc); \
	QSTEP(448, Z8, Z9, Z3, Z31, acc)

// QLOAD loads the query vectors of 8 e.
#define QLOAD \
	VMOVUPD (R11), Z24; \
	VMOVUPD 64(R11), Z25; \
	VMOVUPD 128(R11), Z26; \
	VMOVUPD 192(R11), Z27; \
	VMOVUPD 256(R11), Z28; \
	VMOVUPD 320(R11), Z29; \
	VMOVUPD 384(R11), Z30; \
	VMOVUPD 448(R11), Z31

// QSTORE scales acc and stores each head's two scores at off (head 2's
// and 3's rows from CX = DI + 2 head strides).
#define QSTORE(acc, off) \
	VMULPD Z7, acc, acc; \
	VEXTRACTF32X4 $0, acc, off(DI); \
	VEXTRACTF32X4 $1, acc, off(DI)(R8*1); \
	VEXTRACTF32X4 $2, acc, off(CX); \
	VEXTRACTF32X4 $3, acc, off(CX)(R8*1)

// QK is a score tile's body: W widens 8 elements, ESZ is their bytes.
#define QK(W, ESZ) \
qk8: \
	CMPQ AX, $8; \
	JLT qk2; \
	VPXORQ Z16, Z16, Z16; \
	VPXORQ Z17, Z17, Z17; \
	VPXORQ Z18, Z18, Z18; \
	VPXORQ Z19, Z19, Z19; \
	MOVQ SI, R11; \
	MOVQ BX, R12; \
	MOVQ R10, CX; \
qk8e: \
	QLOAD; \
	MOVQ R12, R13; \
	QQUAD(W, Z16, Z17, Z18, Z19); \
	ADDQ $512, R11; \
	ADDQ $ESZ, R12; \
	SUBQ $8, CX; \
	JNE qk8e; \
	LEAQ (DI)(R8*2), CX; \
	QSTORE(Z16, 0); \
	QSTORE(Z17, 16); \
	QSTORE(Z18, 32); \
	QSTORE(Z19, 48); \
	ADDQ $64, DI; \
	LEAQ (BX)(DX*8), BX; \
	SUBQ $8, AX; \
	JMP qk8; \
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
	QPAIR(W, Z16); \
	ADDQ $512, R11; \
	ADDQ $ESZ, R12; \
	SUBQ $8, CX; \
	JNE qk2e; \
	LEAQ (DI)(R8*2), CX; \
	QSTORE(Z16, 0); \
	ADDQ $16, DI; \
	LEAQ (BX)(DX*2), BX; \
	SUBQ $2, AX; \
	JMP qk2; \
qkdone: \
	VZEROUPPER; \
	RET

// ------------------------------------------------------------ value tiles
//
// func attnPV*(acc *float64, p *float64, ls int, v *T, rs, d, n int)
//
// The accumulators of 32 elements of four heads (Z16-Z19 head 0 ...
// Z28-Z31 head 3; 8 elements, Z16/Z20/Z24/Z28, for the rest of d) stay in
// registers while the n tokens go by in order; each widened row chunk
// (Z0-Z3) serves the four heads, whose p are broadcast into Z4-Z7.
//
// DI acc at the chunk (head stride R10 bytes; AX = DI + 2 strides around
// the loads and stores), SI p (head stride R8 bytes, R9 = 3*R8), BX row 0
// at the chunk, DX row stride (bytes), CX elements left, R12 p of the
// token, R13 its row, AX tokens left, R14 n. The main loop prefetches the
// three cache lines after its chunk of the row, so the first chunk's pass
// brings rows of up to 256 bytes in for the passes of the other chunks.

// PMUL adds zp*zv into acc.
#define PMUL(zp, zv, zt, acc) VMULPD zp, zv, zt; VADDPD zt, acc, acc

#define PBCAST \
	VBROADCASTSD (R12), Z4; \
	VBROADCASTSD (R12)(R8*1), Z5; \
	VBROADCASTSD (R12)(R8*2), Z6; \
	VBROADCASTSD (R12)(R9*1), Z7

// PV is a value tile's body: W widens 8 elements, ESZ is their bytes.
#define PV(W, ESZ) \
pv32: \
	CMPQ CX, $32; \
	JLT pv8; \
	LEAQ (DI)(R10*2), AX; \
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
	VMOVUPD (AX)(R10*1), Z28; \
	VMOVUPD 64(AX)(R10*1), Z29; \
	VMOVUPD 128(AX)(R10*1), Z30; \
	VMOVUPD 192(AX)(R10*1), Z31; \
	MOVQ SI, R12; \
	MOVQ BX, R13; \
	MOVQ R14, AX; \
pv32t: \
	PREFETCHT0 64(R13); \
	PREFETCHT0 128(R13); \
	PREFETCHT0 192(R13); \
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
	LEAQ (DI)(R10*2), AX; \
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
	VMOVUPD Z28, (AX)(R10*1); \
	VMOVUPD Z29, 64(AX)(R10*1); \
	VMOVUPD Z30, 128(AX)(R10*1); \
	VMOVUPD Z31, 192(AX)(R10*1); \
	ADDQ $256, DI; \
	ADDQ $(4*ESZ), BX; \
	SUBQ $32, CX; \
	JMP pv32; \
pv8: \
	CMPQ CX, $8; \
	JLT pvdone; \
	LEAQ (DI)(R10*2), AX; \
	VMOVUPD (DI), Z16; \
	VMOVUPD (DI)(R10*1), Z20; \
	VMOVUPD (DI)(R10*2), Z24; \
	VMOVUPD (AX)(R10*1), Z28; \
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
	LEAQ (DI)(R10*2), AX; \
	VMOVUPD Z16, (DI); \
	VMOVUPD Z20, (DI)(R10*1); \
	VMOVUPD Z24, (DI)(R10*2); \
	VMOVUPD Z28, (AX)(R10*1); \
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
	MOVQ q+16(FP), SI
	MOVQ k+24(FP), BX
	MOVQ rs+32(FP), DX
	SHLQ $2, DX
	MOVQ d+40(FP), R10
	MOVQ n+48(FP), AX
	VBROADCASTSD scale+56(FP), Z7
	MOVQ DX, R14
	SHLQ $3, R14
	LEAQ (R14)(DX*1), R9
	QK(WF32, 32)

// func attnQKF16(s *float64, ls int, q *float64, k *uint16, rs, d, n int, scale float64)
TEXT ·attnQKF16(SB), NOSPLIT, $0-64
	MOVQ s+0(FP), DI
	MOVQ ls+8(FP), R8
	SHLQ $3, R8
	MOVQ q+16(FP), SI
	MOVQ k+24(FP), BX
	MOVQ rs+32(FP), DX
	SHLQ $1, DX
	MOVQ d+40(FP), R10
	MOVQ n+48(FP), AX
	VBROADCASTSD scale+56(FP), Z7
	MOVQ DX, R14
	SHLQ $3, R14
	LEAQ (R14)(DX*1), R9
	QK(WF16, 16)

// func attnQKBF16(s *float64, ls int, q *float64, k *uint16, rs, d, n int, scale float64)
TEXT ·attnQKBF16(SB), NOSPLIT, $0-64
	MOVQ s+0(FP), DI
	MOVQ ls+8(FP), R8
	SHLQ $3, R8
	MOVQ q+16(FP), SI
	MOVQ k+24(FP), BX
	MOVQ rs+32(FP), DX
	SHLQ $1, DX
	MOVQ d+40(FP), R10
	MOVQ n+48(FP), AX
	VBROADCASTSD scale+56(FP), Z7
	MOVQ DX, R14
	SHLQ $3, R14
	LEAQ (R14)(DX*1), R9
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
	MOVQ n+48(FP), R14
	PV(WBF16, 16)
