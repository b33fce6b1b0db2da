package golden

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMXFP4QuantizeVecMatchesGo runs the AVX-512 quantizer and the Go
// loops on the same inputs (every scale byte's range, ties, subnormals,
// signed zeros; float32 and bf16 entries; every mode) and requires equal
// bytes. The naive-twin tests exercise whichever path the CPU selects.
func TestMXFP4QuantizeVecMatchesGo(t *testing.T) {
	if !hasMXVec {
		t.Skip("no AVX-512 on this CPU or build")
	}
	r := rand.New(rand.NewPCG(81, 82))
	rows, k := 64, 4096+64 // more than one work unit of 2048 blocks
	x := make([]float32, rows*k)
	mids := []float64{0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5, 6, 7}
	for blk := range rows * k / MXBlock {
		e := blk%260 - 140 // 7*2^119 stays finite
		for i := range MXBlock {
			var v float64
			switch (blk + i) % 5 {
			case 0:
				v = mids[r.IntN(len(mids))] * math.Ldexp(1, e)
			case 1:
				v = math.Copysign(0, float64(r.IntN(2)*2-1))
			case 2:
				v = float64(math.Float32frombits(r.Uint32N(0x800000)))
			default:
				v = r.NormFloat64() * math.Ldexp(1, e)
			}
			if r.IntN(2) == 0 {
				v = -v
			}
			x[blk*MXBlock+i] = float32(v)
		}
	}
	xh := make([]uint16, len(x))
	for i, v := range x {
		xh[i] = uint16(math.Float32bits(v) >> 16)
	}
	defer func(old bool) { hasMXVec = old }(hasMXVec)
	for _, mode := range []ScaleMode{ScaleRceil, ScaleFloor, ScaleCeil, ScaleEven} {
		var got [2][4][]uint8
		for p, vec := range []bool{true, false} {
			hasMXVec = vec
			c, s := make([]uint8, rows*k/2), make([]uint8, rows*k/MXBlock)
			if err := MXFP4Quantize(c, s, x, rows, k, mode); err != nil {
				t.Fatal(err)
			}
			ch, sh := make([]uint8, rows*k/2), make([]uint8, rows*k/MXBlock)
			if err := MXFP4QuantizeBF16(ch, sh, xh, rows, k, mode); err != nil {
				t.Fatal(err)
			}
			got[p] = [4][]uint8{c, s, ch, sh}
		}
		for i, name := range []string{"f32 codes", "f32 scales", "bf16 codes", "bf16 scales"} {
			if !slices.Equal(got[0][i], got[1][i]) {
				j := 0
				for got[0][i][j] == got[1][i][j] {
					j++
				}
				t.Errorf("%v %s: vector and Go differ at %d: %#02x vs %#02x", mode, name, j, got[0][i][j], got[1][i][j])
			}
		}
	}
}

// TestMXFP4NonFiniteScan puts one NaN or Inf at each of many positions
// (both halves of a block, both scan accumulators, the last element) and
// requires the vector scan and the Go scan to find it.
func TestMXFP4NonFiniteScan(t *testing.T) {
	defer func(old bool) { hasMXVec = old }(hasMXVec)
	n := 32 * 70
	for _, vec := range []bool{true, false} {
		hasMXVec = vec && hasMXVec
		for _, bad := range []uint32{0x7f800001, 0xff800000, 0x7fc00000, 0x7f800000} {
			for _, pos := range []int{0, 15, 16, 31, 32, 47, 1000, n - 1} {
				xb := make([]uint32, n)
				xh := make([]uint16, n)
				for i := range xb {
					xb[i] = 0x7f7fffff // max finite
					xh[i] = 0xff7f
				}
				xb[pos] = bad
				xh[pos] = uint16(bad>>16) | 1 // keep a payload in the bf16 NaN/Inf pattern's mantissa: 0x7f81 / 0xff81 / 0x7fc1
				if bad == 0x7f800000 {
					xh[pos] = 0x7f80
				}
				if !hasNonFinite32(xb) || !hasNonFiniteBF16(xh) {
					t.Errorf("vec=%v: %#08x at %d not found", hasMXVec, bad, pos)
				}
				xb[pos], xh[pos] = 0x7f7fffff, 0x7f7f
				if hasNonFinite32(xb) || hasNonFiniteBF16(xh) {
					t.Errorf("vec=%v: false positive on finite data", hasMXVec)
				}
			}
		}
	}
}
