package npy

import (
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

const convN = 1 << 16 // 256 KiB of float32: stays in L2, measures the converter

// benchFloat32s returns typical kernel data: N(0,1)-ish values, plus a few
// subnormal-range and overflowing values.
func benchFloat32s(n int) []float32 {
	rng := rand.New(rand.NewPCG(7, 8))
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

func BenchmarkBF16sFromF32s(b *testing.B) {
	src, dst := benchFloat32s(convN), make([]uint16, convN)
	b.SetBytes(4 * convN)
	b.ReportAllocs()
	for b.Loop() {
		BF16sFromF32s(dst, src)
	}
	b.ReportMetric(float64(b.N)*convN/b.Elapsed().Seconds()/1e6, "Mvalues/s")
}

func BenchmarkF16sFromF32s(b *testing.B) {
	for _, c := range []struct {
		name string
		src  []float32
	}{
		{"normal", benchFloat32s(convN)},
		{"randombits", func() []float32 {
			rng := rand.New(rand.NewPCG(9, 10))
			v := make([]float32, convN)
			for i := range v {
				v[i] = math.Float32frombits(rng.Uint32())
			}
			return v
		}()},
	} {
		b.Run(c.name, func(b *testing.B) {
			dst := make([]uint16, convN)
			b.SetBytes(4 * convN)
			b.ReportAllocs()
			for b.Loop() {
				F16sFromF32s(dst, c.src)
			}
			b.ReportMetric(float64(b.N)*convN/b.Elapsed().Seconds()/1e6, "Mvalues/s")
		})
	}
}

func BenchmarkF16sFromF64s(b *testing.B) {
	src32 := benchFloat32s(convN)
	src := make([]float64, convN)
	for i, v := range src32 {
		src[i] = float64(v) * (1 + 0x1p-30)
	}
	dst := make([]uint16, convN)
	b.SetBytes(8 * convN)
	b.ReportAllocs()
	for b.Loop() {
		F16sFromF64s(dst, src)
	}
	b.ReportMetric(float64(b.N)*convN/b.Elapsed().Seconds()/1e6, "Mvalues/s")
}

func BenchmarkBF16sFromF64s(b *testing.B) {
	src32 := benchFloat32s(convN)
	src := make([]float64, convN)
	for i, v := range src32 {
		src[i] = float64(v) * (1 + 0x1p-30)
	}
	dst := make([]uint16, convN)
	b.SetBytes(8 * convN)
	b.ReportAllocs()
	for b.Loop() {
		BF16sFromF64s(dst, src)
	}
	b.ReportMetric(float64(b.N)*convN/b.Elapsed().Seconds()/1e6, "Mvalues/s")
}

func BenchmarkF16sToF32s(b *testing.B) {
	h := make([]uint16, convN)
	F16sFromF32s(h, benchFloat32s(convN))
	dst := make([]float32, convN)
	b.SetBytes(2 * convN)
	b.ReportAllocs()
	for b.Loop() {
		F16sToF32s(dst, h)
	}
	b.ReportMetric(float64(b.N)*convN/b.Elapsed().Seconds()/1e6, "Mvalues/s")
}

func BenchmarkBF16sToF32s(b *testing.B) {
	h := make([]uint16, convN)
	BF16sFromF32s(h, benchFloat32s(convN))
	dst := make([]float32, convN)
	b.SetBytes(2 * convN)
	b.ReportAllocs()
	for b.Loop() {
		BF16sToF32s(dst, h)
	}
	b.ReportMetric(float64(b.N)*convN/b.Elapsed().Seconds()/1e6, "Mvalues/s")
}

func BenchmarkAppendFloat32s(b *testing.B) {
	src := benchFloat32s(1 << 20)
	buf := make([]byte, 0, 4<<20)
	b.SetBytes(4 << 20)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendFloat32s(buf[:0], src)
	}
}

func BenchmarkAppendFloat32sPortable(b *testing.B) {
	src := benchFloat32s(1 << 20)
	buf := make([]byte, 0, 4<<20)
	b.SetBytes(4 << 20)
	b.ReportAllocs()
	for b.Loop() {
		buf = appendFloat32sPortable(buf[:0], src)
	}
}

// The streaming benchmarks move one 1 GiB float32 tensor per iteration
// through a reused 4 MiB buffer.
const (
	streamElems = 1 << 28 // 1 GiB of float32
	chunkElems  = 1 << 20 // 4 MiB
)

var streamHeader = Header{Descr: Float32, Shape: []int64{1 << 14, 1 << 14}}

// writeStream writes the 1 GiB tensor to w chunk by chunk, converting from a
// reused float32 chunk each time as a generator would.
func writeStream(b *testing.B, w *Writer, chunk []float32, buf []byte) {
	for i := 0; i < streamElems; i += chunkElems {
		buf = AppendFloat32s(buf[:0], chunk)
		if _, err := w.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkStreamWriteDiscard(b *testing.B) {
	chunk, buf := benchFloat32s(chunkElems), make([]byte, 0, 4*chunkElems)
	b.SetBytes(4 * streamElems)
	b.ReportAllocs()
	for b.Loop() {
		w, err := NewWriter(io.Discard, streamHeader)
		if err != nil {
			b.Fatal(err)
		}
		writeStream(b, w, chunk, buf)
	}
}

func BenchmarkStreamWriteFile(b *testing.B) {
	if testing.Short() {
		b.Skip("writes 1 GiB files")
	}
	path := filepath.Join(b.TempDir(), "big.npy")
	chunk, buf := benchFloat32s(chunkElems), make([]byte, 0, 4*chunkElems)
	b.SetBytes(4 * streamElems)
	b.ReportAllocs()
	for b.Loop() {
		w, err := Create(path, streamHeader)
		if err != nil {
			b.Fatal(err)
		}
		writeStream(b, w, chunk, buf)
	}
}

func BenchmarkStreamReadFile(b *testing.B) {
	if testing.Short() {
		b.Skip("reads a 1 GiB file")
	}
	path := filepath.Join(b.TempDir(), "big.npy")
	w, err := Create(path, streamHeader)
	if err != nil {
		b.Fatal(err)
	}
	writeStream(b, w, benchFloat32s(chunkElems), make([]byte, 0, 4*chunkElems))
	buf, vals := make([]byte, 4*chunkElems), make([]float32, chunkElems)
	b.SetBytes(4 * streamElems)
	b.ReportAllocs()
	for b.Loop() {
		f, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		for {
			n, err := io.ReadFull(f, buf)
			if n > 0 {
				DecodeFloat32s(vals[:n/4], buf[:n])
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		f.Close()
	}
	os.Remove(path)
}
