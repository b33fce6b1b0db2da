package golden

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"unsafe"

	"github.com/goldset/goldset/internal/dtype"
)

// MXFP4 (ops.md §9): E2M1 element codes, two per byte (element 2i in bits
// 0-3, element 2i+1 in bits 4-7), one E8M0 scale byte b (value 2^(b-127))
// per block of 32 elements along the last axis. See doc.go for the exact
// rules and the sources behind them.

// MXBlock is the number of elements sharing one E8M0 scale.
const MXBlock = 32

// ErrNonFinite reports a NaN or infinite input where the op needs finite
// values (the block scale of §9a is undefined for them).
var ErrNonFinite = errors.New("golden: non-finite input")

// MXFP8Bytes maps an E2M1 code to the float8_e4m3fn byte of the same value
// (§9c target mxfp8): 0x00 0x30 0x38 0x3C 0x40 0x44 0x48 0x4C, sign bit 0x80.
var MXFP8Bytes = func() (t [16]uint8) {
	base := [8]uint8{0x00, 0x30, 0x38, 0x3C, 0x40, 0x44, 0x48, 0x4C}
	for c := range 16 {
		t[c] = base[c&7] | uint8(c&8)<<4
	}
	return
}()

// ScaleMode chooses the E8M0 exponent of a block from its amax (§9a).
type ScaleMode uint8

const (
	// ScaleRceil: e = ceil(log2(amax/6)), the smallest e with amax <= 6*2^e
	// (triton_kernels ROUND_UP, gpt-oss, vLLM, NVIDIA cvt.rp.ue8m0). The
	// default: the block max never saturates.
	ScaleRceil ScaleMode = iota
	// ScaleFloor: e = floor(log2 amax) - 2 (the OCP text as torchao reads
	// it; triton_kernels ROUND_DOWN). Values in (6, 8)*2^e saturate to 6.
	ScaleFloor
	// ScaleCeil: e = ceil(log2 amax) - 2 (torchao CEIL).
	ScaleCeil
	// ScaleEven: e = floor(log2 a') - 2 with a' = amax's float32 bits plus
	// 2^21 (torchao EVEN): the exponent bumps when the significand is >= 1.75.
	ScaleEven
)

var scaleModeNames = [...]string{"rceil", "floor", "ceil", "even"}

// String returns the mode's manifest name.
func (m ScaleMode) String() string {
	if int(m) < len(scaleModeNames) {
		return scaleModeNames[m]
	}
	return fmt.Sprintf("ScaleMode(%d)", m)
}

// ParseScaleMode reads a manifest name ("rceil", "floor", "ceil", "even").
func ParseScaleMode(s string) (ScaleMode, error) {
	for i, n := range scaleModeNames {
		if s == n {
			return ScaleMode(i), nil
		}
	}
	return 0, fmt.Errorf("golden: scale mode %q not one of rceil, floor, ceil, even: %w", s, ErrInvalidParams)
}

// f32Log2Parts returns E = floor(log2 a) and the 23 fraction bits of a's
// significand normalized to [1, 2), for the positive finite float32 bits a
// (subnormals included).
func f32Log2Parts(a uint32) (e int, frac uint32) {
	if a >= 0x00800000 {
		return int(a>>23) - 127, a & 0x7fffff
	}
	n := bits.Len32(a) // 1..23
	return n - 1 - 149, (a << (24 - n)) & 0x7fffff
}

// MXScaleByte returns the E8M0 byte §9a assigns to a block whose largest
// magnitude has the float32 bits amax (sign cleared, finite): byte 0 for
// amax 0, else clamp(e+127, 0, 254) with e from mode. Integer-exact.
func MXScaleByte(amax uint32, mode ScaleMode) uint8 {
	if amax == 0 {
		return 0
	}
	var e int
	switch mode {
	case ScaleFloor:
		e, _ = f32Log2Parts(amax)
		e -= 2
	case ScaleCeil:
		l, frac := f32Log2Parts(amax)
		e = l - 2
		if frac != 0 {
			e++
		}
	case ScaleEven:
		e, _ = f32Log2Parts(amax + 1<<21) // a' may reach the Inf pattern: exponent 128
		e -= 2
	default: // rceil: 6*2^(E-2) = 1.5*2^E covers amax iff its significand <= 1.5
		l, frac := f32Log2Parts(amax)
		e = l - 2
		if frac > 0x400000 {
			e++
		}
	}
	return uint8(min(max(e+127, 0), 254))
}

// e2m1Thresholds returns, for a block with scale byte b, the seven
// rounding thresholds of §9a's RNE as comparands for the magnitude bits a
// of an input float32: the code of a is the number of i with a > g[i]
// (g[i] = midpoint bits where a tie rounds down to an even code, midpoint
// bits - 1 where it rounds up). Midpoints m*2^(b-127) are exact float32s
// (at most three significant bits, >= 2^-129); one above the float32 range
// is never exceeded.
func e2m1Thresholds(b uint8) (g [7]uint64) {
	mids := [7]float64{0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5}
	for i, m := range mids {
		v := math.Ldexp(m, int(b)-127)
		t := uint64(0x7f800000)
		if v <= math.MaxFloat32 {
			t = uint64(math.Float32bits(float32(v)))
		}
		if i%2 == 1 { // 0.75, 1.75, 3.5: the even neighbour is above
			t--
		}
		g[i] = t
	}
	return
}

// e2m1Code is the RNE code of the float32 bits x against thresholds g:
// saturating (anything above 5*2^e is code 7) and keeping the sign (code 8
// for a negative value that rounds to zero).
func e2m1Code(x uint32, g *[7]uint64) uint8 {
	a := uint64(x & 0x7fffffff)
	c := (g[0]-a)>>63 + (g[1]-a)>>63 + (g[2]-a)>>63 + (g[3]-a)>>63 +
		(g[4]-a)>>63 + (g[5]-a)>>63 + (g[6]-a)>>63
	return uint8(c) | uint8(x>>28)&8
}

func checkMXDims(rows, k int) error {
	if rows < 0 || k < 0 {
		return fmt.Errorf("golden: mxfp4 rows=%d k=%d: negative size: %w", rows, k, ErrInvalidParams)
	}
	if k%MXBlock != 0 {
		return fmt.Errorf("golden: mxfp4 k=%d is not a multiple of %d: %w", k, MXBlock, ErrInvalidParams)
	}
	return nil
}

func checkMode(mode ScaleMode) error {
	if mode > ScaleEven {
		return fmt.Errorf("golden: mxfp4 quantize: %v: %w", mode, ErrInvalidParams)
	}
	return nil
}

func checkMXLens(codes, scales []uint8, rows, k int) {
	if len(codes) != rows*k/2 {
		panic(badLenCodes)
	}
	if len(scales) != rows*k/MXBlock {
		panic(badLenScales)
	}
}

// MXFP4Quantize quantizes x [rows, k] (float32 values, finite, k a
// multiple of 32) into codes [rows, k/2] and scales [rows, k/32] by §9a:
// per block of 32 the scale byte of MXScaleByte(amax, mode), then each
// element x*2^(127-b) rounded to the nearest E2M1 value, ties to the even
// code, magnitudes above 6 saturating to 6, the sign kept (a negative
// value or -0 that rounds to zero is code 8). An all-zero block gets byte
// 0 and codes 0 or 8. Nothing is written when x holds a NaN or Inf
// (ErrNonFinite).
func MXFP4Quantize(codes, scales []uint8, x []float32, rows, k int, mode ScaleMode) error {
	if err := errors.Join(checkMXDims(rows, k), checkMode(mode)); err != nil {
		return err
	}
	if len(x) != rows*k {
		panic(badLenX)
	}
	checkMXLens(codes, scales, rows, k)
	xb := f32Bits(x)
	if hasNonFinite32(xb) {
		i := firstNonFinite32(xb)
		return fmt.Errorf("golden: mxfp4 quantize: x[%d, %d] = %v: %w", i/k, i%k, x[i], ErrNonFinite)
	}
	quantizeBlocks(codes, scales, mode, xb, nil)
	return nil
}

// MXFP4QuantizeBF16 is MXFP4Quantize over bfloat16 bits x [rows, k]; the
// result equals MXFP4Quantize of the widened float32 values.
func MXFP4QuantizeBF16(codes, scales []uint8, x []uint16, rows, k int, mode ScaleMode) error {
	if err := errors.Join(checkMXDims(rows, k), checkMode(mode)); err != nil {
		return err
	}
	if len(x) != rows*k {
		panic(badLenX)
	}
	checkMXLens(codes, scales, rows, k)
	if hasNonFiniteBF16(x) {
		i := firstNonFiniteBF16(x)
		return fmt.Errorf("golden: mxfp4 quantize: x[%d, %d] = bf16 %#04x: %w", i/k, i%k, x[i], ErrNonFinite)
	}
	quantizeBlocks(codes, scales, mode, nil, x)
	return nil
}

func firstNonFiniteBF16(xh []uint16) int {
	for i, h := range xh {
		if h&0x7f80 == 0x7f80 {
			return i
		}
	}
	return -1
}

func firstNonFinite32(xb []uint32) int {
	for i, v := range xb {
		if v&0x7f800000 == 0x7f800000 {
			return i
		}
	}
	return -1
}

// quantizeBlocks runs §9a over the blocks of xf (float32 bits) or, when
// xf is nil, of xh (bfloat16 bits). Blocks are independent, so the split
// over workers never changes a bit.
func quantizeBlocks(codes, scales []uint8, mode ScaleMode, xf []uint32, xh []uint16) {
	const unit = 2048 // blocks per work unit
	nblk := len(scales)
	units := (nblk + unit - 1) / unit
	workers := numWorkers(units)
	amax := make([][]uint32, workers)
	parallelFor(workers, units, func(w, u int) {
		b0, b1 := u*unit, min(nblk, (u+1)*unit)
		cs, ss := codes[b0*MXBlock/2:b1*MXBlock/2], scales[b0:b1]
		var uf []uint32
		var uh []uint16
		if xf != nil {
			uf = xf[b0*MXBlock : b1*MXBlock]
		} else {
			uh = xh[b0*MXBlock : b1*MXBlock]
		}
		if hasMXVec {
			if amax[w] == nil {
				amax[w] = make([]uint32, unit)
			}
			quantizeUnitVec(cs, ss, uf, uh, amax[w], mode)
			return
		}
		var buf [MXBlock]uint32
		for j := range ss {
			var v *[MXBlock]uint32
			if uf != nil {
				v = (*[MXBlock]uint32)(uf[j*MXBlock : (j+1)*MXBlock])
			} else {
				for i, h := range uh[j*MXBlock : (j+1)*MXBlock] {
					buf[i] = uint32(h) << 16
				}
				v = &buf
			}
			quantizeBlock((*[MXBlock / 2]uint8)(cs[j*MXBlock/2:(j+1)*MXBlock/2]), &ss[j], v, mode)
		}
	})
}

func quantizeBlock(out *[MXBlock / 2]uint8, scale *uint8, xb *[MXBlock]uint32, mode ScaleMode) {
	var amax uint32
	for _, v := range xb {
		amax = max(amax, v&0x7fffffff)
	}
	b := MXScaleByte(amax, mode)
	*scale = b
	quantizeBlockAt(out, xb, b)
}

// quantizeBlockAt rounds a block's elements at scale byte b (§9a).
func quantizeBlockAt(out *[MXBlock / 2]uint8, xb *[MXBlock]uint32, b uint8) {
	if b < 3 { // float32 subnormals can reach code 1: compare against the midpoints
		g := &e2m1Thr[b]
		for i := range out {
			out[i] = e2m1Code(xb[2*i], g) | e2m1Code(xb[2*i+1], g)<<4
		}
		return
	}
	q0 := int32(b)
	for i := range out {
		out[i] = e2m1CodeRel(xb[2*i], q0) | e2m1CodeRel(xb[2*i+1], q0)<<4
	}
}

// MXScaleByteRoundUpBits returns triton_kernels' ROUND_UP scale byte of a
// block whose largest magnitude has the float32 bits amax: the exponent
// field of (bits(fl32(amax/6)) + 0x7FFFFF) & 0x7F800000
// (_downcast_to_mxfp.py @0616e64515491718b6576b4cb3ba521f52a56d68). It
// equals MXScaleByte(amax, ScaleRceil) wherever fl32(amax/6) is a normal
// float32 or 0, and is 1 where the quotient is a nonzero subnormal (amax
// below 6*2^-126), where the exact rule gives 0 for amax <= 6*2^-127.
func MXScaleByteRoundUpBits(amax uint32) uint8 {
	q := math.Float32frombits(amax&0x7fffffff) / 6 // float32 division, as the kernel
	return uint8(((math.Float32bits(q) + 0x7fffff) & 0x7f800000) >> 23)
}

// MXFP4QuantizeRoundUpBits is MXFP4Quantize in mode rceil with
// triton_kernels' scale byte (MXScaleByteRoundUpBits) and each element
// rounded at that byte as §9a rounds: the alternative compare accepts for
// rceil blocks with amax <= 6*2^-127 (docs/spec.md §9a). It differs from
// MXFP4Quantize only in those blocks: byte 1 where the golden has 0, and
// the codes of x*2^126 instead of x*2^127. (triton_kernels' own element
// conversion drops low bits of values below 1 before its round; for these
// blocks every x is a multiple of 2^-149, so x*2^126 is a multiple of
// 2^-23 and no dropped bit is set: its codes are these.)
func MXFP4QuantizeRoundUpBits(codes, scales []uint8, x []float32, rows, k int) error {
	if err := MXFP4Quantize(codes, scales, x, rows, k, ScaleRceil); err != nil {
		return err
	}
	var xb [MXBlock]uint32
	for blk := range scales {
		if scales[blk] > 1 {
			continue // a normal quotient: the same byte
		}
		var amax uint32
		for i := range xb {
			xb[i] = math.Float32bits(x[blk*MXBlock+i])
			amax = max(amax, xb[i]&0x7fffffff)
		}
		if b := MXScaleByteRoundUpBits(amax); b != scales[blk] {
			scales[blk] = b
			quantizeBlockAt((*[MXBlock / 2]uint8)(codes[blk*MXBlock/2:(blk+1)*MXBlock/2]), &xb, b)
		}
	}
	return nil
}

// e2m1CodeRel is e2m1Code for a block byte b >= 3, where every float32
// subnormal rounds to zero: the code depends only on the exponent of x
// relative to the scale (clamped to [-3, 3]), the top three fraction bits
// and whether any lower fraction bit is set (e2m1RelTable).
func e2m1CodeRel(x uint32, b int32) uint8 {
	a := x & 0x7fffffff
	q := min(max(int32(a>>23)-b, -3), 3) + 3
	sticky := (a&0xfffff + 0xfffff) >> 20
	return e2m1RelTable[uint32(q)<<4|(a>>19)&14|sticky] | uint8(x>>28)&8
}

// e2m1RelTable[(q+3)<<4 | m3<<1 | sticky] is the RNE code of
// 1.m3(sticky) * 2^q, built by rounding a representative of each class
// with the threshold rule (so the two paths share one definition).
var e2m1RelTable = func() (t [7 << 4]uint8) {
	g := e2m1Thresholds(127)
	for q := -3; q <= 3; q++ {
		for m3 := range uint32(8) {
			for sticky := range uint32(2) {
				bitsOf := uint32(q+127)<<23 | m3<<20 | sticky
				t[uint32(q+3)<<4|m3<<1|sticky] = e2m1Code(bitsOf, &g)
			}
		}
	}
	return
}()

// e2m1Thr caches e2m1Thresholds for every scale byte a quantizer emits.
var e2m1Thr = func() (t [255][7]uint64) {
	for b := range t {
		t[b] = e2m1Thresholds(uint8(b))
	}
	return
}()

// mxDecodeF32 holds the float32 bits of E2M1[c] * 2^(b-127) for every
// scale byte b and code c (§9b): exact for b <= 252 and for every b where
// the product is below 2^128 (byte 0 is 2^-127, a float32 subnormal);
// products at or above 2^128 are +-Inf; byte 255 is NaN (0x7FC00000) for
// every code.
var mxDecodeF32 = func() (t [256][16]uint32) {
	for b := range 256 {
		for c := range 16 {
			t[b][c] = mxValueBits(uint8(b), uint8(c))
		}
	}
	return
}()

// mxDecodeF64 is mxDecodeF32 widened to float64 (the values tilePanels
// packs from MXFP4 codes: those Matmul reads from MXFP4Dequantize's output).
var mxDecodeF64 = func() (t [256][16]float64) {
	for b := range t {
		for c := range t[b] {
			t[b][c] = float64(math.Float32frombits(mxDecodeF32[b][c]))
		}
	}
	return
}()

// packMXFP4 packs W [n, k] in MXFP4 (codes [n, k/2], scales [n, k/32])
// for tilePanels: the panel gets the float64 of each dequantized value,
// with no float32 W in between.
func packMXFP4(codes, scales []uint8, k int) func(panel []float64, j0, cols int) {
	return func(panel []float64, j0, cols int) {
		for c := range cols {
			j := j0 + c
			cr := codes[j*k/2 : (j+1)*k/2]
			for blk, b := range scales[j*k/MXBlock : (j+1)*k/MXBlock] {
				lut := &mxDecodeF64[b]
				out := panel[blk*MXBlock*16 : (blk+1)*MXBlock*16]
				for i, q := range cr[blk*MXBlock/2 : (blk+1)*MXBlock/2] {
					out[2*i*16+c] = lut[q&15]
					out[(2*i+1)*16+c] = lut[q>>4]
				}
			}
		}
	}
}

func mxValueBits(b, c uint8) uint32 {
	if b == 255 {
		return 0x7fc00000
	}
	v := math.Ldexp(dtype.E2M1ToF64(c), int(b)-127)
	// exact below 2^128: two significant bits, >= 2^-128
	return math.Float32bits(f32OrInf(v))
}

// MXFP4Value returns E2M1[c] * 2^(b-127) as float64 with §9b's edge
// convention (overflow of float32 kept as the exact float64 value; byte 255
// NaN). Kernels that store float32 use MXFP4Dequantize.
func MXFP4Value(c, b uint8) float64 {
	return dtype.E2M1ToF64(c) * dtype.E8M0ToF64(b) // a power of two: exact
}

// MXFP4Dequantize decodes codes [rows, k/2] and scales [rows, k/32] into
// dst [rows, k] float32 (§9b): E2M1[c]*2^(b-127), exact wherever float32
// holds it (every b <= 252), +-Inf above float32's range, NaN for b = 255.
func MXFP4Dequantize(dst []float32, codes, scales []uint8, rows, k int) error {
	if err := checkMXDims(rows, k); err != nil {
		return err
	}
	if len(dst) != rows*k {
		panic(badLenDst)
	}
	checkMXLens(codes, scales, rows, k)
	db := f32Bits(dst)
	dequantizeBlocks(len(scales), func(blk int) {
		lut := &mxDecodeF32[scales[blk]]
		// Fixed-size views: the loop runs without bounds checks.
		out := (*[MXBlock]uint32)(db[blk*MXBlock:])
		for i, p := range (*[MXBlock / 2]uint8)(codes[blk*MXBlock/2:]) {
			out[2*i] = lut[p&15]
			out[2*i+1] = lut[p>>4]
		}
	})
	return nil
}

// MXFP4DequantizeBF16 is MXFP4Dequantize into bfloat16 bits: the same
// values, exact (every finite product has two significant bits and is
// >= 2^-128, inside bf16's range), so each is the top half of the float32
// bits; Inf and NaN become 0x7F80/0xFF80 and 0x7FC0.
func MXFP4DequantizeBF16(dst []uint16, codes, scales []uint8, rows, k int) error {
	if err := checkMXDims(rows, k); err != nil {
		return err
	}
	if len(dst) != rows*k {
		panic(badLenDst)
	}
	checkMXLens(codes, scales, rows, k)
	dequantizeBlocks(len(scales), func(blk int) {
		lut := &mxDecodeF32[scales[blk]]
		out := (*[MXBlock]uint16)(dst[blk*MXBlock:])
		for i, p := range (*[MXBlock / 2]uint8)(codes[blk*MXBlock/2:]) {
			out[2*i] = uint16(lut[p&15] >> 16)
			out[2*i+1] = uint16(lut[p>>4] >> 16)
		}
	})
	return nil
}

func dequantizeBlocks(nblk int, fn func(blk int)) {
	const unit = 4096
	units := (nblk + unit - 1) / unit
	parallelFor(numWorkers(units), units, func(_, u int) {
		for blk := u * unit; blk < min(nblk, (u+1)*unit); blk++ {
			fn(blk)
		}
	})
}

// MXFP4ToMXFP8 is §9c's target mxfp8: fp8 [rows, k] gets MXFP8Bytes[code]
// for every element; the scale bytes are unchanged (the caller keeps
// them). Always exact.
func MXFP4ToMXFP8(fp8 []uint8, codes []uint8, rows, k int) error {
	if err := checkMXDims(rows, k); err != nil {
		return err
	}
	if len(fp8) != rows*k {
		panic(badLenDst)
	}
	if len(codes) != rows*k/2 {
		panic(badLenCodes)
	}
	for i, p := range codes {
		fp8[2*i] = MXFP8Bytes[p&15]
		fp8[2*i+1] = MXFP8Bytes[p>>4]
	}
	return nil
}

// FoldGroups returns the number of fold groups per row: ceil(k/32/g) (a
// last, partial group takes the blocks left over, as for K = 96 and G = 4).
func FoldGroups(k, g int) int { return (k/MXBlock + g - 1) / g }

// MXFP4FoldGroup is §9c's target fold_group with g blocks of 32 per group
// along k. Per group: S = max e_b - 6 over the blocks holding a nonzero code
// (e_b = b-127; S = 0 for an all-zero group), raised to -127 where lower so
// the group byte S+127 exists; fp8 = dtype.E4M3FromF64 of E2M1[c] * 2^(e_b - S)
// (saturating; signed zero kept); groupScale = S+127, groupScaleF32 = 2^S;
// inexact is set where a block with a nonzero code has e_b - S < -8 (with
// S = max e_b - 6: more than 14 binades below the group's largest, where
// the value 0.5*2^(e_b-S) falls below e4m3's 2^-9). A group holding scale
// byte 255 gets byte 255, NaN, and e4m3 NaN (0x7F, sign kept) for all its
// elements. It returns the number of inexact groups.
func MXFP4FoldGroup(fp8, groupScale []uint8, groupScaleF32 []float32, inexact []bool, codes, scales []uint8, rows, k, g int) (int, error) {
	return foldGroup(fp8, groupScale, groupScaleF32, inexact, codes, scales, rows, k, g, 6)
}

func foldGroup(fp8, groupScale []uint8, groupScaleF32 []float32, inexact []bool, codes, scales []uint8, rows, k, g, offset int) (int, error) {
	if err := checkMXDims(rows, k); err != nil {
		return 0, err
	}
	if g < 1 {
		return 0, fmt.Errorf("golden: mxfp4 fold group size %d < 1: %w", g, ErrInvalidParams)
	}
	checkMXLens(codes, scales, rows, k)
	ng := FoldGroups(k, g)
	if len(fp8) != rows*k {
		panic(badLenDst)
	}
	if len(groupScale) != rows*ng || len(groupScaleF32) != rows*ng || len(inexact) != rows*ng {
		panic(badLenGroups)
	}
	nb := k / MXBlock
	count := 0
	for r := range rows {
		for gi := range ng {
			b0, b1 := gi*g, min(nb, (gi+1)*g)
			sb := scales[r*nb+b0 : r*nb+b1]
			nanGroup := false
			emax := math.MinInt
			for j, b := range sb {
				if b == 255 {
					nanGroup = true
				}
				if blockNonzero(codes, r*nb+b0+j) {
					emax = max(emax, int(b)-127)
				}
			}
			o := r*ng + gi
			out := fp8[r*k+b0*MXBlock : r*k+b1*MXBlock]
			cs := codes[(r*nb+b0)*MXBlock/2 : (r*nb+b1)*MXBlock/2]
			if nanGroup {
				groupScale[o], groupScaleF32[o], inexact[o] = 255, float32(math.NaN()), false
				for i, p := range cs {
					out[2*i] = 0x7f | (p<<4)&0x80
					out[2*i+1] = 0x7f | p&0x80
				}
				continue
			}
			s := 0
			if emax != math.MinInt {
				s = max(emax-offset, -127)
			}
			groupScale[o] = uint8(s + 127)
			groupScaleF32[o] = float32(math.Ldexp(1, s))
			flag := false
			for j, b := range sb {
				d := int(b) - 127 - s
				if d < -8 && blockNonzero(codes, r*nb+b0+j) {
					flag = true
				}
				var lut [16]uint8
				for c := range 16 {
					lut[c] = dtype.E4M3FromF64(math.Ldexp(dtype.E2M1ToF64(uint8(c)), d))
				}
				for i, p := range cs[j*MXBlock/2 : (j+1)*MXBlock/2] {
					out[j*MXBlock+2*i] = lut[p&15]
					out[j*MXBlock+2*i+1] = lut[p>>4]
				}
			}
			inexact[o] = flag
			if flag {
				count++
			}
		}
	}
	return count, nil
}

// blockNonzero reports whether block blk of codes holds a code other than 0 and 8.
func blockNonzero(codes []uint8, blk int) bool {
	for _, p := range codes[blk*MXBlock/2 : (blk+1)*MXBlock/2] {
		if p&0x77 != 0 {
			return true
		}
	}
	return false
}

// FP8Group is the activation group of the w4a8 GEMM: one ue8m0 scale per
// token per 128 elements (DeepGEMM's per_token_cast_to_fp8).
const FP8Group = 128

// FP8QuantizePerToken quantizes x [m, k] (bfloat16 bits, finite) into
// float8_e4m3fn bytes fp8 [m, k] with one E8M0 scale byte per row and
// group of 128 along k (scales [m, ceil(k/128)], a last group may be
// shorter), following DeepGEMM's per_token_cast_to_fp8(use_ue8m0=True):
// amax clamped to at least float32(1e-4), e = the smallest exponent with
// amax <= 448*2^e, byte clamp(e+127, 1, 254), each element x*2^-e rounded
// to e4m3 (RNE; never above 448 by the choice of e).
func FP8QuantizePerToken(fp8, scales []uint8, x []uint16, m, k int) error {
	if m < 0 || k < 0 {
		return fmt.Errorf("golden: fp8 quantize m=%d k=%d: negative size: %w", m, k, ErrInvalidParams)
	}
	ng := (k + FP8Group - 1) / FP8Group
	if len(x) != m*k {
		panic(badLenX)
	}
	if len(fp8) != m*k {
		panic(badLenDst)
	}
	if len(scales) != m*ng {
		panic(badLenScales)
	}
	for i, h := range x {
		if h&0x7f80 == 0x7f80 {
			return fmt.Errorf("golden: fp8 quantize: x[%d, %d] = bf16 %#04x: %w", i/k, i%k, h, ErrNonFinite)
		}
	}
	floor := math.Float32bits(1e-4)
	for r := range m {
		for gi := range ng {
			seg := x[r*k+gi*FP8Group : r*k+min(k, (gi+1)*FP8Group)]
			amax := floor
			for _, h := range seg {
				amax = max(amax, uint32(h&0x7fff)<<16)
			}
			l, frac := f32Log2Parts(amax)
			e := l - 8 // 448*2^(E-8) = 1.75*2^E covers amax iff its significand <= 1.75
			if frac > 0x600000 {
				e++
			}
			b := min(max(e+127, 1), 254)
			scales[r*ng+gi] = uint8(b)
			out := fp8[r*k+gi*FP8Group:]
			for i, h := range seg {
				out[i] = dtype.E4M3FromF64(math.Ldexp(float64(math.Float32frombits(uint32(h)<<16)), 127-b))
			}
		}
	}
	return nil
}

// Panic messages for wrong slice lengths of the MXFP4 kernels.
const (
	badLenCodes  = "golden: bad length of codes"
	badLenScales = "golden: bad length of scales"
	badLenGroups = "golden: bad length of a group output"
	badLenS      = "golden: bad length of s"
	badLenBias   = "golden: bad length of a bias"
	badLenLogits = "golden: bad length of logits"
	badLenCounts = "golden: bad length of counts"
)

// f32OrInf returns v as float32 for a v float32 holds exactly, and +-Inf
// for |v| >= 2^128 (Go leaves an out-of-range conversion undefined).
func f32OrInf(v float64) float32 {
	if math.Abs(v) >= 0x1p128 {
		return float32(math.Copysign(math.Inf(1), v))
	}
	return float32(v)
}

// f32Bits views float32s as their IEEE bit patterns (the values
// math.Float32bits returns), for the bulk loops.
func f32Bits(s []float32) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}
