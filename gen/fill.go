package gen

import (
	"math"

	"github.com/goldset/goldset/npy"
)

// DType is the element type of a floating buffer. F16 and BF16 buffers are
// []uint16 holding the raw bits, F32 is []float32, F64 is []float64 (the
// exact float64 value before any narrowing, for builders that post-process).
type DType uint8

// Floating dtypes.
const (
	F16 DType = iota + 1
	BF16
	F32
	F64
)

func (d DType) String() string {
	switch d {
	case F16:
		return "float16"
	case BF16:
		return "bfloat16"
	case F32:
		return "float32"
	case F64:
		return "float64"
	}
	return "invalid"
}

// Elem is the Go element type of a floating buffer.
type Elem interface {
	uint16 | float32 | float64
}

const errDType = "gen: dtype does not match the element type"

// f16 rounds x to float16 bits (RNE), equal to npy.F16FromF64 (local fast
// path for the normal range, see f16Fast).
func f16(x float64) uint16 {
	if h, ok := f16Fast(x); ok {
		return h
	}
	return npy.F16FromF64(x)
}

// bf16 rounds x to bfloat16 bits (RNE), equal to npy.BF16FromF64.
func bf16(x float64) uint16 {
	if h, ok := bf16Fast(x); ok {
		return h
	}
	return npy.BF16FromF64(x)
}

// bf16ToF64 is exact.
func bf16ToF64(h uint16) float64 { return float64(npy.BF16ToF32(h)) }

// Store rounds every src value once (RNE) into dst of dtype dt. It panics if
// the lengths differ or dt does not match E.
func Store[E Elem](dst []E, dt DType, src []float64) {
	if len(dst) != len(src) {
		panic("gen: Store length mismatch")
	}
	switch d := any(dst).(type) {
	case []uint16:
		mustHalf(dt)
		if dt == F16 {
			f16s(d, src, 1)
		} else {
			bf16s(d, src, 1)
		}
	case []float32:
		mustBe(dt, F32)
		for i, v := range src {
			d[i] = float32(v)
		}
	case []float64:
		mustBe(dt, F64)
		copy(d, src)
	}
}

// Load converts src of dtype dt to float64 (exact). It panics if the lengths
// differ or dt does not match E.
func Load[E Elem](dst []float64, src []E, dt DType) {
	if len(dst) != len(src) {
		panic("gen: Load length mismatch")
	}
	switch s := any(src).(type) {
	case []uint16:
		mustHalf(dt)
		if dt == F16 {
			for i, v := range s {
				dst[i] = npy.F16ToF64(v)
			}
		} else {
			for i, v := range s {
				dst[i] = bf16ToF64(v)
			}
		}
	case []float32:
		mustBe(dt, F32)
		for i, v := range s {
			dst[i] = float64(v)
		}
	case []float64:
		mustBe(dt, F64)
		copy(dst, s)
	}
}

// Fill sets every element of dst to v rounded to dt. A NaN v is written as
// the canonical quiet NaN of dt (0x7e00, 0x7fc0, 0x7fc00000,
// 0x7ff8000000000000); use it for NaN sentinels and -Inf masks.
func Fill[E Elem](dst []E, dt DType, v float64) {
	switch d := any(dst).(type) {
	case []uint16:
		mustHalf(dt)
		var h uint16
		switch {
		case v != v && dt == F16:
			h = 0x7e00
		case v != v:
			h = 0x7fc0
		case dt == F16:
			h = f16(v)
		default:
			h = bf16(v)
		}
		for i := range d {
			d[i] = h
		}
	case []float32:
		mustBe(dt, F32)
		f := float32(v)
		if v != v {
			f = math.Float32frombits(0x7fc00000)
		}
		for i := range d {
			d[i] = f
		}
	case []float64:
		mustBe(dt, F64)
		if v != v {
			v = math.Float64frombits(0x7ff8000000000000)
		}
		for i := range d {
			d[i] = v
		}
	}
}

func mustHalf(dt DType) {
	if dt != F16 && dt != BF16 {
		panic(errDType)
	}
}

func mustBe(dt, want DType) {
	if dt != want {
		panic(errDType)
	}
}

// chunkSpan splits the absolute range [at, at+n) at chunk boundaries and
// calls fn(chunk, skip, off, cnt): dst[off:off+cnt] holds elements
// skip..skip+cnt-1 of chunk `chunk`.
func chunkSpan(at int64, n int, fn func(chunk uint64, skip, off, cnt int)) {
	if at < 0 {
		panic("gen: negative element index")
	}
	for off := 0; off < n; {
		idx := at + int64(off)
		skip := int(idx % ChunkElems)
		cnt := min(ChunkElems-skip, n-off)
		fn(uint64(idx/ChunkElems), skip, off, cnt)
		off += cnt
	}
}

// Normal fills dst with scale * N(0, 1), element i being element at+i of the
// stream's normal sequence, rounded once (RNE) from the float64 product to
// dt. It panics if dt does not match E or at < 0.
func Normal[E Elem](s Stream, dst []E, at int64, dt DType, scale float64) {
	var buf [ChunkElems]float64
	switch d := any(dst).(type) {
	case []uint16:
		mustHalf(dt)
		chunkSpan(at, len(d), func(c uint64, skip, off, cnt int) {
			if cnt == ChunkElems && chunkHalfVec(s.chunkState(c), d[off:off+cnt], scale, dt == BF16) {
				return
			}
			chunkNormals(s.chunkState(c), buf[:skip+cnt])
			if dt == F16 {
				f16s(d[off:off+cnt], buf[skip:skip+cnt], scale)
			} else {
				bf16s(d[off:off+cnt], buf[skip:skip+cnt], scale)
			}
		})
	case []float32:
		mustBe(dt, F32)
		chunkSpan(at, len(d), func(c uint64, skip, off, cnt int) {
			chunkNormals(s.chunkState(c), buf[:skip+cnt])
			out := d[off : off+cnt]
			for i, v := range buf[skip : skip+cnt] {
				out[i] = float32(v * scale)
			}
		})
	case []float64:
		mustBe(dt, F64)
		chunkSpan(at, len(d), func(c uint64, skip, off, cnt int) {
			chunkNormals(s.chunkState(c), buf[:skip+cnt])
			out := d[off : off+cnt]
			for i, v := range buf[skip : skip+cnt] {
				out[i] = v * scale
			}
		})
	}
}

// Uniform fills dst with lo + (hi-lo)*u, u = (word >> 11) * 2**-53 in [0, 1)
// (one 64-bit word per element), computed in float64 and rounded once to
// dt. The float64 value lies in [lo, hi] (hi only through rounding of the
// product); the stored value in [RNE(lo), RNE(hi)]. It panics if dt does not
// match E, at < 0, or !(lo <= hi).
func Uniform[E Elem](s Stream, dst []E, at int64, dt DType, lo, hi float64) {
	if !(lo <= hi) {
		panic("gen: Uniform needs lo <= hi")
	}
	var buf [ChunkElems]float64
	w := hi - lo
	fillChunk := func(c uint64, skip, cnt int) []float64 {
		// One word per element: skipping is O(1) on the Weyl state.
		g := wyrand{s: s.chunkState(c) + uint64(skip)*wyInc}
		out := buf[:cnt]
		for i := range out {
			u := float64(g.next64()>>11) * 0x1p-53
			out[i] = lo + float64(w*u)
		}
		return out
	}
	chunkSpan(at, len(dst), func(c uint64, skip, off, cnt int) {
		Store(dst[off:off+cnt], dt, fillChunk(c, skip, cnt))
	})
}

// Words fills dst with raw 64-bit words, element at+i being word k+1 of
// its chunk's generator (k its position in the chunk): the word Uniform
// maps to [0, 1), for callers with their own mapping of the bits. It
// panics if at < 0.
func Words(s Stream, dst []uint64, at int64) {
	chunkSpan(at, len(dst), func(c uint64, skip, off, cnt int) {
		g := wyrand{s: s.chunkState(c) + uint64(skip)*wyInc}
		for i := range dst[off : off+cnt] {
			dst[off+i] = g.next64()
		}
	})
}

// Ints fills dst with uniform integers in [lo, hi) (Lemire's unbiased
// multiply-and-reject on 64-bit words, sequential within a chunk). It
// panics unless lo < hi, both within int32 range (hi <= 2**31), and at >= 0.
func Ints(s Stream, dst []int32, at int64, lo, hi int64) {
	if !(lo < hi) || lo < math.MinInt32 || hi > math.MaxInt32+1 {
		panic("gen: Ints needs lo < hi within int32 range")
	}
	n := uint64(hi - lo)
	chunkSpan(at, len(dst), func(c uint64, skip, off, cnt int) {
		g := wyrand{s: s.chunkState(c)}
		for range skip {
			lemire(&g, n)
		}
		out := dst[off : off+cnt]
		for i := range out {
			out[i] = int32(lo + int64(lemire(&g, n)))
		}
	})
}
