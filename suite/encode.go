package suite

import (
	"encoding/binary"
	"math"
	"slices"
	"unsafe"

	"github.com/goldset/goldset/gen"
	"github.com/goldset/goldset/internal/dtype"
	"github.com/goldset/goldset/npy"
)

// emitChunk is the number of elements encoded per write.
const emitChunk = 1 << 18

// scratch returns the tensor's reused encoding buffer with length n
// (capacity at least one emitted chunk of the widest element).
func (t *tensorOut) scratch(n int) []byte {
	if cap(t.buf) < max(n, 4*emitChunk) {
		t.buf = make([]byte, max(n, 4*emitChunk))
	}
	return t.buf[:n]
}

// littleEndian hosts can emit slices' own bytes: they are already .npy
// data (emit copies them, so no scratch copy is needed first).
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// viewFloats views raw, the bytes of a tensor of dtype in host order, as
// its elements: bits for the half dtypes, vals for float32.
func viewFloats(dtype string, raw []byte) *floatTensor {
	if isFloat32(dtype) {
		return &floatTensor{dtype: dtype, dt: dtypeOf(dtype), vals: unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(raw))), len(raw)/4)}
	}
	return &floatTensor{dtype: dtype, dt: dtypeOf(dtype), bits: unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(raw))), len(raw)/2)}
}

// slice returns elements lo..hi of a view from viewFloats.
func (ft *floatTensor) slice(lo, hi int) *floatTensor {
	if ft.bits != nil {
		return &floatTensor{dtype: ft.dtype, dt: ft.dt, bits: ft.bits[lo:hi]}
	}
	return &floatTensor{dtype: ft.dtype, dt: ft.dt, vals: ft.vals[lo:hi]}
}

// toLittleEndian turns elements of size sz written in host order into
// .npy's little-endian bytes, in place (nothing to do on little-endian
// hosts).
func toLittleEndian(raw []byte, sz int) {
	if littleEndian {
		return
	}
	for i := 0; i+sz <= len(raw); i += sz {
		slices.Reverse(raw[i : i+sz])
	}
}

// rawBytes views n elements of size sz at p as bytes.
func rawBytes[T any](p *T, n, sz int) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), n*sz)
}

func (t *tensorOut) u16(v []uint16) error {
	for len(v) > 0 {
		n := min(len(v), emitChunk)
		b := rawBytes(&v[0], n, 2)
		if !littleEndian {
			b = npy.AppendUint16s(t.scratch(0), v[:n])
		}
		if err := t.emit(b); err != nil {
			return err
		}
		v = v[n:]
	}
	return nil
}

func (t *tensorOut) f32(v []float32) error {
	for len(v) > 0 {
		n := min(len(v), emitChunk)
		b := rawBytes(&v[0], n, 4)
		if !littleEndian {
			b = npy.AppendFloat32s(t.scratch(0), v[:n])
		}
		if err := t.emit(b); err != nil {
			return err
		}
		v = v[n:]
	}
	return nil
}

func (t *tensorOut) i32(v []int32) error {
	for len(v) > 0 {
		n := min(len(v), emitChunk)
		b := rawBytes(&v[0], n, 4)
		if !littleEndian {
			b = npy.AppendInt32s(t.scratch(0), v[:n])
		}
		if err := t.emit(b); err != nil {
			return err
		}
		v = v[n:]
	}
	return nil
}

// rounded writes exact float64 values rounded once (RNE) to the tensor's
// logical dtype, a floating row of the dtype table.
func (t *tensorOut) rounded(name string, v []float64) error {
	dt := dtypeOf(name)
	if !dt.IsFloat() {
		panic("suite: rounded to non-float dtype " + name)
	}
	for len(v) > 0 {
		n := min(len(v), emitChunk)
		size, err := dt.StorageBytes(int64(n))
		if err != nil {
			return err
		}
		b := t.scratch(int(size))
		dt.Encode(b, v[:n])
		if err := t.emit(b); err != nil {
			return err
		}
		v = v[n:]
	}
	return nil
}

// genDType maps a logical float dtype to the generator's.
func genDType(d string) gen.DType {
	switch dtypeOf(d) {
	case dtype.Float16:
		return gen.F16
	case dtype.BFloat16:
		return gen.BF16
	case dtype.Float32:
		return gen.F32
	}
	panic("suite: the generator has no dtype " + d)
}

// halfToF32 converts fp16/bf16 bits to their exact float32 values.
func halfToF32(dst []float32, src []uint16, dtype string) {
	if isBF16(dtype) {
		npy.BF16sToF32s(dst, src)
	} else {
		npy.F16sToF32s(dst, src)
	}
}

// floatTensor is a generated floating tensor: its stored form (bits for
// half types, values for float32) and, for half types only when asked for
// (needVals), its exact float32 values; otherwise vals is nil or scratch.
type floatTensor struct {
	dtype string
	dt    dtype.DType // dtype's table row
	bits  []uint16    // float16/bfloat16 storage
	vals  []float32   // exact values (float32 storage for float32)
}

// normalTensor draws n values of scale*N(0,1) from stream s at offset at,
// rounded to dtype.
func normalTensor(s gen.Stream, dtype string, n int, at int64, scale float64) floatTensor {
	return normalValues(s, dtype, n, at, scale, true)
}

// normalValues is normalTensor; without needVals, half dtypes get only
// their bits (for tensors that are written and copied bit for bit, which
// saves faulting in a float32 copy).
func normalValues(s gen.Stream, dtype string, n int, at int64, scale float64, needVals bool) floatTensor {
	var ft floatTensor
	ft.drawNormal(s, dtype, n, at, scale, needVals)
	return ft
}

// drawNormal is normalValues into ft, reusing its buffers where they are
// large enough: a builder that draws a large tensor in pieces keeps one
// piece's memory instead of faulting in fresh pages for every piece (on
// the VMs measured, first-touching memory costs more than drawing it).
func (ft *floatTensor) drawNormal(s gen.Stream, dtype string, n int, at int64, scale float64, needVals bool) {
	ft.dtype, ft.dt = dtype, dtypeOf(dtype)
	ft.bits, ft.vals = ft.bits[:0], ft.vals[:0]
	if isFloat32(dtype) || needVals {
		ft.vals = reuse(ft.vals, n)
	}
	if isFloat32(dtype) {
		ft.bits = nil
		gen.Parallel(0, at, n, func(lo, hi int) {
			gen.Normal(s, ft.vals[lo:hi], at+int64(lo), gen.F32, scale)
		})
		return
	}
	ft.bits = reuse(ft.bits, n)
	dt := genDType(dtype)
	gen.Parallel(0, at, n, func(lo, hi int) {
		gen.Normal(s, ft.bits[lo:hi], at+int64(lo), dt, scale)
		if needVals {
			halfToF32(ft.vals[lo:hi], ft.bits[lo:hi], dtype)
		}
	})
	if !needVals {
		ft.vals = nil
	}
}

// reuse returns b resized to n, reallocated only when too small.
func reuse[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}

// syncBits re-derives the stored bits from vals after vals were edited (the
// edits must be representable in dtype).
func (ft *floatTensor) syncBits() {
	if ft.bits == nil {
		return
	}
	if isBF16(ft.dtype) {
		npy.BF16sFromF32s(ft.bits, ft.vals)
	} else {
		npy.F16sFromF32s(ft.bits, ft.vals)
	}
}

// set stores v (rounded to dtype) at i, keeping bits and vals in step.
func (ft *floatTensor) set(i int, v float64) {
	// Fast paths for the hot half types (hostile NaN fills, planting run
	// per element); the table's Round and Widen give the same bits.
	switch ft.dt {
	case dtype.BFloat16:
		ft.bits[i] = npy.BF16FromF64(v)
		ft.vals[i] = npy.BF16ToF32(ft.bits[i])
		return
	case dtype.Float16:
		ft.bits[i] = npy.F16FromF64(v)
		ft.vals[i] = npy.F16ToF32(ft.bits[i])
		return
	case 0:
		panic("suite: floatTensor without its dtype row")
	}
	bits := ft.dt.Round(v)
	if ft.bits == nil { // float32 storage: the bits are the value
		ft.vals[i] = math.Float32frombits(uint32(bits))
		return
	}
	ft.bits[i] = uint16(bits)
	ft.vals[i] = float32(ft.dt.Widen(bits)) // exact: a half value
}

// isBF16 reports whether a validated dtype name is bfloat16.
func isBF16(name string) bool { return dtypeOf(name) == dtype.BFloat16 }

// isFloat32 reports whether a validated dtype name is float32 (stored as
// floatTensor values rather than half bits).
func isFloat32(name string) bool { return dtypeOf(name) == dtype.Float32 }

// write emits the stored form.
func (ft *floatTensor) write(t *tensorOut) error {
	if ft.bits != nil {
		return t.u16(ft.bits)
	}
	return t.f32(ft.vals)
}
