package dtype

import (
	"fmt"
	"testing"
)

func benchValues(n int) []float64 {
	src := make([]float64, n)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range src {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		src[i] = (float64(x>>11)*0x1p-53 - 0.5) * 900 // spans e4m3's range and past it
	}
	return src
}

func BenchmarkEncode(b *testing.B) {
	const n = 1 << 14
	src := benchValues(n)
	for _, d := range All() {
		b.Run(d.Name(), func(b *testing.B) {
			nb, _ := d.StorageBytes(n)
			dst := make([]byte, nb)
			b.SetBytes(n * 8) // float64 input consumed
			b.ReportAllocs()
			for b.Loop() {
				d.Encode(dst, src)
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	const n = 1 << 14
	src := benchValues(n)
	for _, d := range All() {
		b.Run(d.Name(), func(b *testing.B) {
			nb, _ := d.StorageBytes(n)
			buf := make([]byte, nb)
			d.Encode(buf, src)
			dst := make([]float64, n)
			b.SetBytes(n * 8) // float64 output produced
			b.ReportAllocs()
			for b.Loop() {
				d.Decode(dst, buf)
			}
		})
	}
}

func BenchmarkPackE2M1(b *testing.B) {
	const n = 1 << 14
	codes := make([]uint8, n)
	for i := range codes {
		codes[i] = uint8(i*7) & 0xf
	}
	dst := make([]byte, n/2)
	b.SetBytes(n)
	b.ReportAllocs()
	for b.Loop() {
		PackE2M1(dst, codes)
	}
	_ = fmt.Sprint(dst[0])
}
