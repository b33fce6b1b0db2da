package dtype

import (
	"encoding/binary"
	"fmt"

	"github.com/goldset/goldset/npy"
)

// Encode rounds every value of src into d's stored bytes, little-endian,
// in dst; float4_e2m1fn_x2 packs element 2i into the low nibble of byte i
// and element 2i+1 into its high nibble. len(dst) must equal
// d.StorageBytes(len(src)) (so len(src) is even for E2M1): a mismatch is a
// programming error and panics.
func (d DType) Encode(dst []byte, src []float64) {
	d.checkLen("Encode", len(dst), len(src))
	switch d {
	case Float8E4M3FN:
		for i, v := range src {
			dst[i] = E4M3FromF64(v)
		}
	case Float8E8M0:
		for i, v := range src {
			dst[i] = E8M0FromF64(v)
		}
	case Float4E2M1x2:
		for i := range dst {
			dst[i] = E2M1FromF64(src[2*i]) | E2M1FromF64(src[2*i+1])<<4
		}
	// The bulk float types (goldens' outputs) in loops of their own: the
	// generic loop's two switches per element cost as much as the rounding.
	case Float16:
		dst = dst[:2*len(src)]
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], npy.F16FromF64(v))
		}
	case BFloat16:
		dst = dst[:2*len(src)]
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], npy.BF16FromF64(v))
		}
	case Float32:
		dst = dst[:4*len(src)]
		for i, v := range src {
			binary.LittleEndian.PutUint32(dst[4*i:], f32FromF64(v))
		}
	default:
		size := d.ItemSize()
		for i, v := range src {
			putLE(dst[i*size:(i+1)*size], d.Round(v))
		}
	}
}

// Decode widens d's stored bytes in src to float64 values in dst (exact;
// see Widen). len(src) must equal d.StorageBytes(len(dst)), else it panics.
func (d DType) Decode(dst []float64, src []byte) {
	d.checkLen("Decode", len(src), len(dst))
	switch d {
	case Float8E4M3FN:
		t := &e4m3Table
		for i, c := range src {
			dst[i] = t[c]
		}
	case Float4E2M1x2:
		for i, c := range src {
			dst[2*i], dst[2*i+1] = e2m1Values[c&0xf], e2m1Values[c>>4]
		}
	default:
		size := d.ItemSize()
		for i := range dst {
			dst[i] = d.Widen(getLE(src[i*size : (i+1)*size]))
		}
	}
}

// e4m3Table holds every float8_e4m3fn byte's value: Decode's hot loop.
var e4m3Table = func() (t [256]float64) {
	for c := range t {
		t[c] = E4M3ToF64(uint8(c))
	}
	return t
}()

// PackE2M1 packs E2M1 codes (one per byte, low nibble) in pairs: byte i of
// dst gets codes[2*i] in bits 0-3 and codes[2*i+1] in bits 4-7. The high
// nibble of each code is ignored. len(codes) must be 2*len(dst), else it
// panics.
func PackE2M1(dst []byte, codes []uint8) {
	if len(codes) != 2*len(dst) {
		panic(fmt.Sprintf("dtype: PackE2M1: %d codes for %d bytes", len(codes), len(dst)))
	}
	for i := range dst {
		dst[i] = codes[2*i]&0xf | codes[2*i+1]<<4
	}
}

// UnpackE2M1 splits packed E2M1 bytes into one code per byte: dst[2*i] is
// the low nibble of packed[i], dst[2*i+1] its high nibble. len(dst) must be
// 2*len(packed), else it panics.
func UnpackE2M1(dst []uint8, packed []byte) {
	if len(dst) != 2*len(packed) {
		panic(fmt.Sprintf("dtype: UnpackE2M1: %d codes for %d bytes", len(dst), len(packed)))
	}
	for i, c := range packed {
		dst[2*i], dst[2*i+1] = c&0xf, c>>4
	}
}

func (d DType) checkLen(op string, nBytes, nElems int) {
	want, err := d.StorageBytes(int64(nElems))
	if err != nil || want != int64(nBytes) {
		panic(fmt.Sprintf("dtype: %s.%s: %d bytes for %d elements (want %d, %v)", d.Name(), op, nBytes, nElems, want, err))
	}
}

func putLE(b []byte, v uint64) {
	switch len(b) {
	case 1:
		b[0] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	case 8:
		binary.LittleEndian.PutUint64(b, v)
	}
}

func getLE(b []byte) uint64 {
	switch len(b) {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	case 8:
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}
