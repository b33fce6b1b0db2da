package npy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// The fast (unsafe copy) and portable paths must give identical bytes; on a
// big-endian host the portable path is the one used.
func TestAppendMatchesPortable(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	n := 1001
	f32, f64 := make([]float32, n), make([]float64, n)
	i32, i64, u16 := make([]int32, n), make([]int64, n), make([]uint16, n)
	for i := range n {
		f32[i] = math.Float32frombits(rng.Uint32())
		f64[i] = math.Float64frombits(rng.Uint64())
		i32[i], i64[i], u16[i] = int32(rng.Uint32()), int64(rng.Uint64()), uint16(rng.Uint32())
	}
	prefix := []byte("pre")
	check := func(name string, fast, portable []byte, size int) {
		t.Helper()
		if !bytes.Equal(fast, portable) || len(fast) != len(prefix)+size*n || !bytes.HasPrefix(fast, prefix) {
			t.Errorf("%s: fast and portable differ", name)
		}
	}
	check("float32", AppendFloat32s(bytes.Clone(prefix), f32), appendFloat32sPortable(bytes.Clone(prefix), f32), 4)
	check("float64", AppendFloat64s(bytes.Clone(prefix), f64), appendFloat64sPortable(bytes.Clone(prefix), f64), 8)
	check("int32", AppendInt32s(bytes.Clone(prefix), i32), appendInt32sPortable(bytes.Clone(prefix), i32), 4)
	check("int64", AppendInt64s(bytes.Clone(prefix), i64), appendInt64sPortable(bytes.Clone(prefix), i64), 8)
	check("uint16", AppendUint16s(bytes.Clone(prefix), u16), appendUint16sPortable(bytes.Clone(prefix), u16), 2)
	if got := binary.LittleEndian.Uint32(AppendFloat32s(nil, []float32{1})); got != 0x3f800000 {
		t.Errorf("AppendFloat32s(1) = %#x, want little-endian 0x3f800000", got)
	}
	if got := AppendFloat32s(nil, nil); len(got) != 0 {
		t.Errorf("AppendFloat32s(nil, nil) = %v", got)
	}

	g32 := make([]float32, n)
	DecodeFloat32s(g32, AppendFloat32s(nil, f32))
	g64 := make([]float64, n)
	DecodeFloat64s(g64, AppendFloat64s(nil, f64))
	gi32, gi64, gu16 := make([]int32, n), make([]int64, n), make([]uint16, n)
	DecodeInt32s(gi32, AppendInt32s(nil, i32))
	DecodeInt64s(gi64, AppendInt64s(nil, i64))
	DecodeUint16s(gu16, AppendUint16s(nil, u16))
	for i := range n {
		if math.Float32bits(g32[i]) != math.Float32bits(f32[i]) || math.Float64bits(g64[i]) != math.Float64bits(f64[i]) ||
			gi32[i] != i32[i] || gi64[i] != i64[i] || gu16[i] != u16[i] {
			t.Fatalf("decode round trip differs at %d", i)
		}
	}
	if !panics(func() { DecodeFloat32s(make([]float32, 2), make([]byte, 7)) }) {
		t.Error("DecodeFloat32s with a wrong length did not panic")
	}
}

func TestDecodeFloat64(t *testing.T) {
	sNaN32 := math.Float32frombits(0x7f800001) // signalling NaN: payload must survive
	tests := []struct {
		name string
		d    DType
		bf16 bool
		data []byte
		want []float64
	}{
		{"float64", Float64, false, AppendFloat64s(nil, []float64{1.5, math.Copysign(0, -1), math.Inf(1)}), []float64{1.5, math.Copysign(0, -1), math.Inf(1)}},
		{"float32", Float32, false, AppendFloat32s(nil, []float32{0.1, -3, sNaN32}), []float64{float64(float32(0.1)), -3, math.Float64frombits(0x7ff0000020000000)}},
		{"float16", Float16, false, AppendUint16s(nil, []uint16{0x3c00, 0x0001, 0xfc00, 0x7c01}), []float64{1, 0x1p-24, math.Inf(-1), math.Float64frombits(0x7ff0040000000000)}},
		{"bfloat16", Uint16, true, AppendUint16s(nil, []uint16{0x3f80, 0xc040, 0x0001}), []float64{1, -3, 0x1p-133}},
		{"uint16", Uint16, false, AppendUint16s(nil, []uint16{0x3f80, 65535}), []float64{0x3f80, 65535}},
		{"int32", Int32, false, AppendInt32s(nil, []int32{-7, math.MaxInt32}), []float64{-7, math.MaxInt32}},
		{"uint8", Uint8, false, []byte{0, 255}, []float64{0, 255}},
		{"bool", Bool, false, []byte{0, 1, 2}, []float64{0, 1, 1}},
		{"int8", Int8, false, []byte{0, 0x7f, 0x80, 0xff}, []float64{0, 127, -128, -1}},
		{"int16", Int16, false, AppendUint16s(nil, []uint16{0x7fff, 0x8000, 0xffff}), []float64{32767, -32768, -1}},
		{"uint32", Uint32, false, []byte{0xff, 0xff, 0xff, 0xff, 5, 0, 0, 0}, []float64{math.MaxUint32, 5}},
	}
	for _, tc := range tests {
		got := make([]float64, len(tc.want))
		if err := DecodeFloat64(got, tc.d, tc.bf16, tc.data); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for i := range got {
			if !sameF64(got[i], tc.want[i]) {
				t.Errorf("%s[%d] = %v (%#x), want %v (%#x)", tc.name, i, got[i], math.Float64bits(got[i]), tc.want[i], math.Float64bits(tc.want[i]))
			}
		}
	}
	for _, tc := range []struct {
		d    DType
		bf16 bool
	}{{Int64, false}, {Uint64, false}, {Int16, true}, {Float32, true}, {"<c8", false}} {
		if err := DecodeFloat64(nil, tc.d, tc.bf16, nil); !errors.Is(err, ErrUnsupportedDType) {
			t.Errorf("DecodeFloat64(%s, bf16=%v): %v", tc.d, tc.bf16, err)
		}
	}
	if !panics(func() { DecodeFloat64(make([]float64, 2), Float32, false, make([]byte, 4)) }) {
		t.Error("DecodeFloat64 with a wrong length did not panic")
	}
}
