package npy

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"
)

// littleEndian reports whether the host stores integers little-endian; then
// the in-memory bytes of a slice are already .npy data and a copy suffices.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// asBytes views the memory of s as bytes (little-endian hosts only).
func asBytes[T float32 | float64 | int32 | int64 | uint16](s []T) []byte {
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(zero)))
}

// AppendFloat32s appends v to dst as little-endian float32 data and returns
// the extended buffer.
func AppendFloat32s(dst []byte, v []float32) []byte {
	if littleEndian {
		return append(dst, asBytes(v)...)
	}
	return appendFloat32sPortable(dst, v)
}

// AppendFloat64s appends v to dst as little-endian float64 data.
func AppendFloat64s(dst []byte, v []float64) []byte {
	if littleEndian {
		return append(dst, asBytes(v)...)
	}
	return appendFloat64sPortable(dst, v)
}

// AppendInt32s appends v to dst as little-endian int32 data.
func AppendInt32s(dst []byte, v []int32) []byte {
	if littleEndian {
		return append(dst, asBytes(v)...)
	}
	return appendInt32sPortable(dst, v)
}

// AppendInt64s appends v to dst as little-endian int64 data.
func AppendInt64s(dst []byte, v []int64) []byte {
	if littleEndian {
		return append(dst, asBytes(v)...)
	}
	return appendInt64sPortable(dst, v)
}

// AppendUint16s appends v to dst as little-endian uint16 data (also float16
// and bfloat16 bits).
func AppendUint16s(dst []byte, v []uint16) []byte {
	if littleEndian {
		return append(dst, asBytes(v)...)
	}
	return appendUint16sPortable(dst, v)
}

func appendFloat32sPortable(dst []byte, v []float32) []byte {
	for _, x := range v {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(x))
	}
	return dst
}

func appendFloat64sPortable(dst []byte, v []float64) []byte {
	for _, x := range v {
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(x))
	}
	return dst
}

func appendInt32sPortable(dst []byte, v []int32) []byte {
	for _, x := range v {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(x))
	}
	return dst
}

func appendInt64sPortable(dst []byte, v []int64) []byte {
	for _, x := range v {
		dst = binary.LittleEndian.AppendUint64(dst, uint64(x))
	}
	return dst
}

func appendUint16sPortable(dst []byte, v []uint16) []byte {
	for _, x := range v {
		dst = binary.LittleEndian.AppendUint16(dst, x)
	}
	return dst
}

// DecodeFloat32s decodes little-endian float32 data; len(src) must be 4*len(dst).
func DecodeFloat32s(dst []float32, src []byte) {
	if len(src) != 4*len(dst) {
		panic("npy: DecodeFloat32s: len(src) != 4*len(dst)")
	}
	if littleEndian {
		copy(asBytes(dst), src)
		return
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

// DecodeFloat64s decodes little-endian float64 data; len(src) must be 8*len(dst).
func DecodeFloat64s(dst []float64, src []byte) {
	if len(src) != 8*len(dst) {
		panic("npy: DecodeFloat64s: len(src) != 8*len(dst)")
	}
	if littleEndian {
		copy(asBytes(dst), src)
		return
	}
	for i := range dst {
		dst[i] = math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:]))
	}
}

// DecodeInt32s decodes little-endian int32 data; len(src) must be 4*len(dst).
func DecodeInt32s(dst []int32, src []byte) {
	if len(src) != 4*len(dst) {
		panic("npy: DecodeInt32s: len(src) != 4*len(dst)")
	}
	if littleEndian {
		copy(asBytes(dst), src)
		return
	}
	for i := range dst {
		dst[i] = int32(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

// DecodeInt64s decodes little-endian int64 data; len(src) must be 8*len(dst).
func DecodeInt64s(dst []int64, src []byte) {
	if len(src) != 8*len(dst) {
		panic("npy: DecodeInt64s: len(src) != 8*len(dst)")
	}
	if littleEndian {
		copy(asBytes(dst), src)
		return
	}
	for i := range dst {
		dst[i] = int64(binary.LittleEndian.Uint64(src[8*i:]))
	}
}

// DecodeUint16s decodes little-endian uint16 data (float16 or bfloat16
// bits); len(src) must be 2*len(dst).
func DecodeUint16s(dst []uint16, src []byte) {
	if len(src) != 2*len(dst) {
		panic("npy: DecodeUint16s: len(src) != 2*len(dst)")
	}
	if littleEndian {
		copy(asBytes(dst), src)
		return
	}
	for i := range dst {
		dst[i] = binary.LittleEndian.Uint16(src[2*i:])
	}
}

// DecodeFloat64 converts .npy data of dtype d into float64 values, exactly:
// float16, float32, float64, and with bf16 set, bfloat16 bits stored as
// Uint16. Integer dtypes whose values float64 holds exactly (Int8, Int16,
// Int32, Uint16 without bf16, Uint32, Uint8, and Bool as 0 or 1) are
// converted too. NaN payloads survive. len(data) must be
// len(dst)*d.ItemSize() (a programmer error otherwise: panic). Int64,
// Uint64, or bf16 with a dtype other than Uint16, wrap ErrUnsupportedDType.
func DecodeFloat64(dst []float64, d DType, bf16 bool, data []byte) error {
	size := d.ItemSize()
	switch {
	case size == 0:
		return fmt.Errorf("npy: decode: %w %q", ErrUnsupportedDType, d)
	case bf16 && d != Uint16:
		return fmt.Errorf("npy: decode: %w: bfloat16 is stored as %s, not %s", ErrUnsupportedDType, Uint16, d)
	case d == Int64 || d == Uint64:
		return fmt.Errorf("npy: decode: %w: %s does not convert exactly to float64", ErrUnsupportedDType, d)
	}
	if len(data) != len(dst)*size {
		panic("npy: DecodeFloat64: len(data) != len(dst)*d.ItemSize()")
	}
	le := binary.LittleEndian
	switch {
	case d == Float64:
		DecodeFloat64s(dst, data)
	case d == Float32:
		for i := range dst {
			dst[i] = f32ToF64(le.Uint32(data[4*i:]))
		}
	case d == Float16:
		for i := range dst {
			dst[i] = F16ToF64(le.Uint16(data[2*i:]))
		}
	case d == Uint16 && bf16:
		for i := range dst {
			dst[i] = BF16ToF64(le.Uint16(data[2*i:]))
		}
	case d == Uint16:
		for i := range dst {
			dst[i] = float64(le.Uint16(data[2*i:]))
		}
	case d == Int32:
		for i := range dst {
			dst[i] = float64(int32(le.Uint32(data[4*i:])))
		}
	case d == Uint32:
		for i := range dst {
			dst[i] = float64(le.Uint32(data[4*i:]))
		}
	case d == Int16:
		for i := range dst {
			dst[i] = float64(int16(le.Uint16(data[2*i:])))
		}
	case d == Int8:
		for i, b := range data {
			dst[i] = float64(int8(b))
		}
	case d == Uint8:
		for i, b := range data {
			dst[i] = float64(b)
		}
	case d == Bool: // numpy reads any nonzero byte as True
		for i, b := range data {
			dst[i] = 0
			if b != 0 {
				dst[i] = 1
			}
		}
	}
	return nil
}

// f32ToF64 widens float32 bits exactly, keeping NaN payloads bit for bit
// (a hardware conversion would quiet signalling NaNs).
func f32ToF64(b uint32) float64 {
	if b&f32Abs > f32Inf {
		return math.Float64frombits(uint64(b>>31)<<63 | f64Inf | uint64(b&0x7fffff)<<29)
	}
	return float64(math.Float32frombits(b))
}
