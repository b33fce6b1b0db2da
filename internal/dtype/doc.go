// Package dtype is goldset's one table of storage types: for each type the
// manifest name, the .npy descriptor that stores it, the stored item size,
// the format's precision and range, one round-to-nearest-even from float64
// into the stored bits, and the exact widening back to float64.
//
// # Names
//
// Names are the manifest's "dtype" strings. The float ones are torch's dtype
// names (torch.float8_e4m3fn, torch.float4_e2m1fn_x2, torch.float8_e8m0fnu),
// which ml_dtypes shares for the unpacked types (ml_dtypes.float8_e4m3fn,
// ml_dtypes.float8_e8m0fnu; ml_dtypes.float4_e2m1fn is one element per
// byte, so the packed pair takes torch's "_x2" name). Parse accepts exactly
// these spellings, nothing else:
//
//	name              descr  item  elems  stored bits
//	float16           <f2    2     1      IEEE binary16
//	bfloat16          <u2    2     1      top half of binary32 (numpy has no bf16; see npy)
//	float32           <f4    4     1      IEEE binary32
//	float64           <f8    8     1      IEEE binary64
//	int32             <i4    4     1      two's complement
//	int64             <i8    8     1      two's complement
//	uint8             |u1    1     1      unsigned
//	float8_e4m3fn     |u1    1     1      OCP FP8 E4M3 (finite, NaN)
//	float4_e2m1fn_x2  |u1    1     2      two OCP FP4 E2M1 codes
//	float8_e8m0fnu    |u1    1     1      OCP E8M0 scale (power of two, NaN)
//
// The byte types share |u1, so a descriptor alone cannot name them:
// FromDescr maps |u1 to uint8 and <u2 to bfloat16 (goldset stores bf16 bits
// as <u2 and has no uint16 type), and the manifest's name decides.
//
// # Bit layouts
//
// float8_e4m3fn (OCP OFP8 E4M3, "fn": finite, no Inf; bias 7):
//
//	  7   6 5 4 3   2 1 0
//	+---+---------+-------+
//	| s |  eeee   |  mmm  |   e = 0:        (-1)^s * m/8 * 2^-6      (subnormal, 2^-9 steps)
//	+---+---------+-------+   e = 1..15:    (-1)^s * (1 + m/8) * 2^(e-7)
//	                          e=15, m=7:    NaN (0x7f, 0xff); no Inf
//	max 448 (0x7e), smallest normal 2^-6 (0x08), smallest subnormal 2^-9 (0x01)
//
// float4_e2m1fn_x2 (OCP MX FP4 E2M1, bias 1; two codes per byte):
//
//	  7 6 5 4     3 2 1 0
//	+---------+---------+        code  0   1    2  3    4  5  6  7
//	| odd el. | even el.|        value 0  0.5  1  1.5  2  3  4  6   (bit 3 is the sign:
//	+---------+---------+                                           8 = -0 ... 15 = -6)
//	  each nibble:  s e e m      e = 0: m * 0.5;  e = 1..3: (1 + m/2) * 2^(e-1)
//
// Byte i of a packed row holds element 2i in bits 0-3 and element 2i+1 in
// bits 4-7 (torch's Float4_e2m1fn_x2, gpt-oss, triton_kernels agree). No
// Inf, no NaN; max 6, smallest normal 1, smallest subnormal 0.5.
//
// float8_e8m0fnu (OCP MX E8M0 scale; "fnu": finite, no sign, unsigned):
//
//	  7 6 5 4 3 2 1 0
//	+-----------------+
//	|    eeeeeeee     |   b = 0..254: 2^(b-127)   (no zero, no sign)
//	+-----------------+   b = 255:    NaN
//
// # Rounding (Round)
//
// Round takes the exact float64 x to the stored bits once, to nearest, ties
// to even, with no intermediate float32 (ml_dtypes converts float64 through
// float32 and so rounds twice: 5.000000000000001 becomes E2M1 4, not 6).
// Subnormal results are produced. The types differ where x is out of range:
//
//   - float16, bfloat16, float32: overflow gives +-Inf; NaN stays a quiet
//     NaN with its sign and top payload bits (npy's rule, for all three).
//   - float64: the bits of x.
//   - float8_e4m3fn: saturates (OCP "satfinite"): every |x| above 448,
//     Inf included, gives +-448 (0x7e/0xfe); NaN gives 0x7f whatever its
//     sign. torch's x.to(torch.float8_e4m3fn) does not saturate: it gives
//     NaN for |x| > 464 (pytorch c10/util/Float8_e4m3fn.h, commit
//     1725fe86ee35), and so does ml_dtypes; vLLM and DeepGEMM clamp to
//     [-448, 448] before the cast, and Round equals
//     x.clamp(-448, 448).to(torch.float8_e4m3fn) on every probe in
//     testdata/codes.txt. 464 (the midpoint of 448 and 480) rounds to 448,
//     its even neighbour.
//   - float4_e2m1fn_x2 (Round returns one nibble, 0..15): saturates to +-6,
//     Inf included; a negative x that rounds to zero keeps its sign (code 8);
//     NaN gives code 8 (-0), as ml_dtypes does. 0.25 -> 0, 0.75 -> 1,
//     1.25 -> 1, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4 (ties to the even code).
//   - float8_e8m0fnu: a positive x goes to the nearer of the two powers of
//     two around it, and a tie (x = 1.5 * 2^e, the linear midpoint) goes UP
//     to 2^(e+1): with no stored mantissa there is no even/odd significand to
//     break it, and torch (c10/util/Float8_e8m0fnu.h, commit 3d63d33ce1e3)
//     and ml_dtypes both round the midpoint up. So 3 -> 4 (byte 129),
//     1.5 -> 2. Below 1.5 * 2^-127 (zero and -0 included) gives byte 0 =
//     2^-127, the nearest value; x >= 1.5 * 2^127, +Inf, NaN and every
//     negative x give 255 (NaN: E8M0 has no sign). torch drops the sign of a
//     negative x instead; ml_dtypes maps 0 to NaN; both misround float32
//     subnormal inputs in (2^-127, 1.5 * 2^-127) up to 2^-126.
//   - int32, int64, uint8: round to the nearest integer, ties to even,
//     saturating at the type's range; NaN gives 0. The bits are the two's
//     complement pattern in the low ItemSize bytes.
//
// # Widening (Widen)
//
// Widen returns the exact float64 value of the stored bits (only the low
// 8*ItemSize bits, or the low nibble for float4_e2m1fn_x2, are read). NaN
// payloads of float16, bfloat16 and float32 are kept bit for bit; the byte
// types' NaNs widen to the quiet NaN with their sign. int64 values beyond
// 2^53 round to nearest even, the only inexact case.
//
// Round(Widen(b)) == b for every non-NaN code of every type except the
// integer types' values beyond 2^53 (the tests check all 256 byte codes, all
// 16 nibbles and all 65536 half codes).
package dtype
