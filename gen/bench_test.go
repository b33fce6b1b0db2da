package gen

import "testing"

const benchN = 1 << 16

func benchNormal16(b *testing.B, dt DType) {
	s := NewStream(1, "bench", "x")
	dst := make([]uint16, benchN)
	b.SetBytes(2 * benchN)
	b.ReportAllocs()
	for b.Loop() {
		Normal(s, dst, 0, dt, 0.125)
	}
	b.ReportMetric(float64(b.N)*benchN/b.Elapsed().Seconds(), "values/s")
}

func BenchmarkNormalF16(b *testing.B)  { benchNormal16(b, F16) }
func BenchmarkNormalBF16(b *testing.B) { benchNormal16(b, BF16) }

func BenchmarkNormalF32(b *testing.B) {
	s := NewStream(1, "bench", "x")
	dst := make([]float32, benchN)
	b.SetBytes(4 * benchN)
	b.ReportAllocs()
	for b.Loop() {
		Normal(s, dst, 0, F32, 0.125)
	}
	b.ReportMetric(float64(b.N)*benchN/b.Elapsed().Seconds(), "values/s")
}

func BenchmarkUniformF16(b *testing.B) {
	s := NewStream(1, "bench", "u")
	dst := make([]uint16, benchN)
	b.SetBytes(2 * benchN)
	b.ReportAllocs()
	for b.Loop() {
		Uniform(s, dst, 0, F16, -1, 1)
	}
	b.ReportMetric(float64(b.N)*benchN/b.Elapsed().Seconds(), "values/s")
}

func BenchmarkInts(b *testing.B) {
	s := NewStream(1, "bench", "i")
	dst := make([]int32, benchN)
	b.SetBytes(4 * benchN)
	b.ReportAllocs()
	for b.Loop() {
		Ints(s, dst, 0, 0, 1000)
	}
	b.ReportMetric(float64(b.N)*benchN/b.Elapsed().Seconds(), "values/s")
}

// BenchmarkNormalF16Parallel fills 16 Mi values with GOMAXPROCS workers.
func BenchmarkNormalF16Parallel(b *testing.B) {
	s := NewStream(1, "bench", "p")
	dst := make([]uint16, 1<<24)
	b.SetBytes(2 << 24)
	b.ReportAllocs()
	for b.Loop() {
		Parallel(0, 0, len(dst), func(lo, hi int) { Normal(s, dst[lo:hi], int64(lo), F16, 1) })
	}
	b.ReportMetric(float64(b.N)*(1<<24)/b.Elapsed().Seconds(), "values/s")
}

// Internal pieces of BenchmarkNormalF16: the ziggurat chunk and the bulk
// float64 -> float16 rounding.
func BenchmarkChunkNormals(b *testing.B) {
	var buf [ChunkElems]float64
	b.SetBytes(8 * ChunkElems)
	st := uint64(1)
	for b.Loop() {
		st++
		chunkNormals(st, buf[:])
	}
	b.ReportMetric(float64(b.N)*ChunkElems/b.Elapsed().Seconds(), "values/s")
}

func BenchmarkRoundF16(b *testing.B) {
	var src [ChunkElems]float64
	chunkNormals(1, src[:])
	var dst [ChunkElems]uint16
	b.SetBytes(2 * ChunkElems)
	for b.Loop() {
		f16s(dst[:], src[:], 0.5)
	}
	b.ReportMetric(float64(b.N)*ChunkElems/b.Elapsed().Seconds(), "values/s")
}

func BenchmarkWyrand(b *testing.B) {
	g := wyrand{s: 1}
	var acc uint64
	b.SetBytes(8 * 1024)
	for b.Loop() {
		for range 1024 {
			acc += g.next64()
		}
	}
	benchSink = acc
}

var benchSink uint64
