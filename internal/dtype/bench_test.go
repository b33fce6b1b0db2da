package dtype

import "testing"

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

// BenchmarkCodec measures Encode (float64 in) and Decode (float64 out)
// per type; SetBytes counts the float64 side.
func BenchmarkCodec(b *testing.B) {
	const n = 1 << 14
	src := benchValues(n)
	dst := make([]float64, n)
	for _, d := range All() {
		nb, _ := d.StorageBytes(n)
		buf := make([]byte, nb)
		for _, op := range []string{"Encode", "Decode"} {
			b.Run(op+"/"+d.Name(), func(b *testing.B) {
				b.SetBytes(n * 8)
				b.ReportAllocs()
				for b.Loop() {
					if op == "Encode" {
						d.Encode(buf, src)
					} else {
						d.Decode(dst, buf)
					}
				}
			})
		}
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
}
