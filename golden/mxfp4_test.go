package golden_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/goldset/goldset/golden"
	"github.com/goldset/goldset/internal/dtype"
	"github.com/goldset/goldset/npy"
)

var allModes = []golden.ScaleMode{golden.ScaleRceil, golden.ScaleFloor, golden.ScaleCeil, golden.ScaleEven}

func sameF64(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || (math.IsNaN(a) && math.IsNaN(b))
}

// TestE2M1CodesExhaustive checks every code against the hand table: its
// value (sign of zero included) and its mxfp8 byte, the byte's e4m3 value.
func TestE2M1CodesExhaustive(t *testing.T) {
	handFP8 := [16]uint8{0x00, 0x30, 0x38, 0x3C, 0x40, 0x44, 0x48, 0x4C, 0x80, 0xB0, 0xB8, 0xBC, 0xC0, 0xC4, 0xC8, 0xCC}
	for c := range 16 {
		if got := golden.MXFP4Value(uint8(c), 127); !sameF64(got, handE2M1[c]) {
			t.Errorf("code %d: value %v, want %v", c, got, handE2M1[c])
		}
		if got := golden.MXFP8Bytes[c]; got != handFP8[c] {
			t.Errorf("code %d: mxfp8 byte %#02x, want %#02x", c, got, handFP8[c])
		}
		if got := dtype.E4M3ToF64(handFP8[c]); !sameF64(got, handE2M1[c]) {
			t.Errorf("e4m3 byte %#02x: %v, want %v", handFP8[c], got, handE2M1[c])
		}
		if got := e4m3Table[handFP8[c]]; !sameF64(got, handE2M1[c]) {
			t.Errorf("hand e4m3 table %#02x: %v, want %v", handFP8[c], got, handE2M1[c])
		}
	}
}

// TestE8M0BytesExhaustive decodes every (scale byte, code) pair to float32
// and bf16 and checks it against the hand tables (scale by repeated
// doubling, overflow to Inf, byte 255 NaN); a few scales are also pinned
// as literals.
func TestE8M0BytesExhaustive(t *testing.T) {
	pinned := map[uint8]float64{0: 5.877471754111438e-39, 1: 1.1754943508222875e-38, 126: 0.5, 127: 1, 128: 2, 254: 1.7014118346046923e+38}
	for b, want := range pinned {
		if got := naiveScale(b); got != want {
			t.Fatalf("hand scale table byte %d: %v, want %v", b, got, want)
		}
	}
	// 256 blocks, block b under scale byte b, each holding the 16 codes twice.
	rows, k := 1, 256*32
	codes, scales := make([]uint8, k/2), make([]uint8, k/32)
	for i := range codes {
		codes[i] = uint8(2*i%16) | uint8((2*i+1)%16)<<4
	}
	for b := range scales {
		scales[b] = uint8(b)
	}
	f32 := make([]float32, rows*k)
	bf := make([]uint16, rows*k)
	if err := golden.MXFP4Dequantize(f32, codes, scales, rows, k); err != nil {
		t.Fatal(err)
	}
	if err := golden.MXFP4DequantizeBF16(bf, codes, scales, rows, k); err != nil {
		t.Fatal(err)
	}
	want := naiveDequant(codes, scales, rows, k)
	for i, w := range want {
		b, c := i/32, naiveCode(codes, i)
		if c != uint8(i%16) {
			t.Fatalf("element %d: code %d, the case is built wrong", i, c)
		}
		if math.IsNaN(w) {
			if math.Float32bits(f32[i]) != 0x7fc00000 || bf[i] != 0x7fc0 {
				t.Errorf("byte %d code %d: %#08x / bf16 %#04x, want NaN 0x7fc00000 / 0x7fc0", b, c, math.Float32bits(f32[i]), bf[i])
			}
			continue
		}
		wf := naiveF32(w)
		if math.Float32bits(f32[i]) != math.Float32bits(wf) {
			t.Errorf("byte %d code %d: float32 %v, want %v", b, c, f32[i], wf)
		}
		if wb := npy.BF16FromF64(float64(wf)); bf[i] != wb {
			t.Errorf("byte %d code %d: bf16 %#04x, want %#04x", b, c, bf[i], wb)
		}
		if !math.IsInf(float64(wf), 0) && (float64(wf) != w || npy.BF16ToF64(bf[i]) != w) {
			t.Errorf("byte %d code %d: not exact: %v, bf16 %v, value %v", b, c, wf, npy.BF16ToF64(bf[i]), w)
		}
		if got := golden.MXFP4Value(c, uint8(b)); !sameF64(got, w) {
			t.Errorf("MXFP4Value(%d, %d) = %v, want %v", c, b, got, w)
		}
	}
	// Overflow happens exactly where |value| >= 2^128 (hand list: 4 and 6
	// at byte 253, 2 and up at 254).
	overflow := map[[2]int]bool{{253, 6}: true, {253, 7}: true, {254, 4}: true, {254, 5}: true, {254, 6}: true, {254, 7}: true}
	for b := 250; b < 255; b++ {
		for c := range 16 {
			inf := math.IsInf(float64(f32[b*32+c]), 0)
			if inf != overflow[[2]int{b, c & 7}] {
				t.Errorf("byte %d code %d: overflow %v, hand table %v", b, c, inf, overflow[[2]int{b, c & 7}])
			}
		}
	}
	// Exactness claim of §9b: every b in [0, 252] is finite and exact.
	for b := range 253 {
		for c := range 16 {
			if v := want[b*32+c]; math.IsInf(float64(naiveF32(v)), 0) {
				t.Errorf("byte %d code %d overflows float32", b, c)
			}
		}
	}
}

// TestMXScaleByteBoundaries pins the four modes at the boundaries ops.md
// §9a names (amax at 1.5 and 1.75 times a power of two, just around them,
// powers of two, the float32 extremes) with hand-computed bytes.
func TestMXScaleByteBoundaries(t *testing.T) {
	up := func(v float32) float32 { return math.Nextafter32(v, float32(math.Inf(1))) }
	dn := func(v float32) float32 { return math.Nextafter32(v, 0) }
	cases := []struct {
		name string
		amax float32
		want [4]uint8 // rceil, floor, ceil, even
	}{
		{"0", 0, [4]uint8{0, 0, 0, 0}},
		{"6=1.5*4", 6, [4]uint8{127, 127, 128, 127}},
		{"6+ulp", up(6), [4]uint8{128, 127, 128, 127}},
		{"6-ulp", dn(6), [4]uint8{127, 127, 128, 127}},
		{"7=1.75*4", 7, [4]uint8{128, 127, 128, 128}},
		{"7-ulp", dn(7), [4]uint8{128, 127, 128, 127}},
		{"7+ulp", up(7), [4]uint8{128, 127, 128, 128}},
		{"4", 4, [4]uint8{127, 127, 127, 127}},
		{"4+ulp", up(4), [4]uint8{127, 127, 128, 127}},
		{"8-ulp", dn(8), [4]uint8{128, 127, 128, 128}},
		{"1", 1, [4]uint8{125, 125, 125, 125}},
		{"0.1875=1.5/8", 0.1875, [4]uint8{122, 122, 123, 122}},
		{"0.21875=1.75/8", 0.21875, [4]uint8{123, 122, 123, 123}},
		{"1.5*2^60", 1.5 * (1 << 60), [4]uint8{185, 185, 186, 185}},
		{"max float32", math.MaxFloat32, [4]uint8{253, 252, 253, 253}},
		{"1.5*2^127", 1.5 * 0x1p127, [4]uint8{252, 252, 253, 252}},
		{"6*2^-127", 6 * 0x1p-127, [4]uint8{0, 0, 1, 0}},
		{"6*2^-127+ulp", up(6 * 0x1p-127), [4]uint8{1, 0, 1, 0}},
		{"6*2^-126", 6 * 0x1p-126, [4]uint8{1, 1, 2, 1}},
		{"min normal", 0x1p-126, [4]uint8{0, 0, 0, 0}},
		{"min subnormal", 0x1p-149, [4]uint8{0, 0, 0, 0}},
	}
	for _, c := range cases {
		for mi, mode := range allModes {
			got := golden.MXScaleByte(math.Float32bits(c.amax), mode)
			if got != c.want[mi] {
				t.Errorf("%s (%g) %v: byte %d, want %d", c.name, c.amax, mode, got, c.want[mi])
			}
			if n := naiveScaleExp(float64(c.amax), mode); n != c.want[mi] {
				t.Errorf("%s %v: naive byte %d, want %d (table or twin wrong)", c.name, mode, n, c.want[mi])
			}
		}
	}
}

// TestMXScaleByteAllExponents compares MXScaleByte with the search twin
// for every float32 exponent and the mantissas at each mode's boundary.
func TestMXScaleByteAllExponents(t *testing.T) {
	mants := []uint32{0, 1, 0x1fffff, 0x200000, 0x3fffff, 0x400000, 0x400001, 0x5fffff, 0x600000, 0x600001, 0x7ffffe, 0x7fffff}
	n := 0
	for e := uint32(0); e < 255; e++ {
		for _, m := range mants {
			a := e<<23 | m
			for _, mode := range allModes {
				n++
				if got, want := golden.MXScaleByte(a, mode), naiveScaleExp(float64(math.Float32frombits(a)), mode); got != want {
					t.Fatalf("amax bits %#08x %v: %d, want %d", a, mode, got, want)
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		a := r.Uint32N(0x7f800000)
		for _, mode := range allModes {
			n++
			if got, want := golden.MXScaleByte(a, mode), naiveScaleExp(float64(math.Float32frombits(a)), mode); got != want {
				t.Fatalf("amax bits %#08x %v: %d, want %d", a, mode, got, want)
			}
		}
	}
	t.Logf("%d (amax, mode) pairs equal to the twin", n)
}

// quantizeBoth runs the golden and the twin on x [rows, k] for every mode.
func quantizeBoth(t *testing.T, name string, x []float32, rows, k int) {
	t.Helper()
	xf := make([]float64, len(x))
	for i, v := range x {
		xf[i] = float64(v)
	}
	xb := make([]uint16, len(x))
	allBF16 := true
	for i, v := range x {
		xb[i] = npy.BF16FromF32(v)
		allBF16 = allBF16 && npy.BF16ToF32(xb[i]) == v && math.Signbit(float64(v)) == (xb[i]&0x8000 != 0)
	}
	for _, mode := range allModes {
		codes, scales := make([]uint8, rows*k/2), make([]uint8, rows*k/32)
		if err := golden.MXFP4Quantize(codes, scales, x, rows, k, mode); err != nil {
			t.Fatal(err)
		}
		wc, ws := naiveQuantize(xf, rows, k, mode)
		if !slices.Equal(scales, ws) {
			i := firstDiffU8(scales, ws)
			t.Fatalf("%s %v: scale[%d] = %d, want %d", name, mode, i, scales[i], ws[i])
		}
		if !slices.Equal(codes, wc) {
			i := firstDiffU8(codes, wc)
			t.Fatalf("%s %v: codes byte %d = %#02x, want %#02x (x %v %v, scale %d)", name, mode, i, codes[i], wc[i], x[2*i], x[2*i+1], scales[2*i/32])
		}
		for i, v := range x { // internal/dtype's E2M1 RNE at scale 1 on the pre-scaled value
			if c := dtype.E2M1FromF64(math.Ldexp(float64(v), 127-int(scales[i/32]))); c != naiveCode(codes, i) {
				t.Fatalf("%s %v: x[%d] = %v: code %d, dtype.E2M1FromF64 %d", name, mode, i, v, naiveCode(codes, i), c)
			}
		}
		if allBF16 {
			bc, bs := make([]uint8, len(codes)), make([]uint8, len(scales))
			if err := golden.MXFP4QuantizeBF16(bc, bs, xb, rows, k, mode); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(bc, codes) || !slices.Equal(bs, scales) {
				t.Fatalf("%s %v: bf16 entry differs from float32 entry", name, mode)
			}
		}
	}
}

func firstDiffU8(a, b []uint8) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestMXFP4QuantizeBoundaries is the element table of §9a: midpoints
// between E2M1 values (ties to the even code), one ulp either side,
// values in (6, 8) times the scale (saturating under floor), signed zero.
func TestMXFP4QuantizeBoundaries(t *testing.T) {
	up := func(v float32) float32 { return math.Nextafter32(v, float32(math.Inf(1))) }
	dn := func(v float32) float32 { return math.Nextafter32(v, 0) }
	for _, e := range []int{0, -3, 17, -126, 120} {
		s := float32(math.Ldexp(1, e))
		// amax 6*2^e: rceil and floor both give byte 127+e.
		cases := []struct {
			v    float32
			code uint8
		}{
			{0.25 * s, 0}, {up(0.25 * s), 1}, {dn(0.25 * s), 0},
			{0.75 * s, 2}, {dn(0.75 * s), 1}, {up(0.75 * s), 2},
			{1.25 * s, 2}, {up(1.25 * s), 3}, {dn(1.25 * s), 2},
			{1.75 * s, 4}, {dn(1.75 * s), 3},
			{2.5 * s, 4}, {up(2.5 * s), 5},
			{3.5 * s, 6}, {dn(3.5 * s), 5},
			{5 * s, 6}, {up(5 * s), 7}, {dn(5 * s), 6},
			{6 * s, 7}, {-0.25 * s, 8}, {-0.75 * s, 10}, {-5 * s, 14}, {-up(5 * s), 15},
			{float32(math.Copysign(0, -1)), 8}, {0, 0}, {-0x1p-149, 8},
		}
		for _, mode := range []golden.ScaleMode{golden.ScaleRceil, golden.ScaleFloor} {
			for _, c := range cases {
				x := make([]float32, 32)
				x[0], x[1] = 6*s, c.v
				codes, scales := make([]uint8, 16), make([]uint8, 1)
				if err := golden.MXFP4Quantize(codes, scales, x, 1, 32, mode); err != nil {
					t.Fatal(err)
				}
				if scales[0] != uint8(127+e) {
					t.Fatalf("e=%d %v: scale %d, want %d", e, mode, scales[0], 127+e)
				}
				if got := codes[0] >> 4; got != c.code {
					t.Errorf("e=%d %v: %g (= %g * 2^e) -> code %d, want %d", e, mode, c.v, float64(c.v)/float64(s), got, c.code)
				}
			}
		}
	}
	// Values in (6, 8) times the scale: floor keeps the exponent of amax and
	// saturates them to 6 (code 7); rceil takes the next exponent.
	for _, m := range []float32{6.25, 7, 7.5, 7.999999} {
		x := make([]float32, 32)
		x[0], x[1] = m, -m
		x[2] = 3.5 // a tie at the floor scale
		want := map[golden.ScaleMode][3]uint8{
			golden.ScaleFloor: {7, 15, 6},
			golden.ScaleRceil: {uint8(map[float32]uint8{6.25: 5, 7: 6, 7.5: 6, 7.999999: 6}[m]), 8 | map[float32]uint8{6.25: 5, 7: 6, 7.5: 6, 7.999999: 6}[m], 4},
		}
		for mode, w := range want {
			codes, scales := make([]uint8, 16), make([]uint8, 1)
			if err := golden.MXFP4Quantize(codes, scales, x, 1, 32, mode); err != nil {
				t.Fatal(err)
			}
			got := [3]uint8{codes[0] & 15, codes[0] >> 4, codes[1] & 15}
			if got != w {
				t.Errorf("amax %g %v (scale %d): codes %v, want %v", m, mode, scales[0], got, w)
			}
		}
	}
}

// TestMXFP4QuantizeVsNaive compares whole tensors with the twin: normal
// values at scales across the E8M0 range, exact ties, subnormals, zero and
// negative-zero blocks, single large outliers.
func TestMXFP4QuantizeVsNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	rows, k := 24, 96
	x := make([]float32, rows*k)
	for blk := range rows * k / 32 {
		e := r.IntN(260) - 140
		kind := blk % 6
		for i := range 32 {
			var v float64
			switch kind {
			case 0, 1: // Gaussian
				v = r.NormFloat64() * math.Ldexp(1, e)
			case 2: // exact midpoints and E2M1 values
				v = []float64{0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5, 6, 7, 0.5, 3}[r.IntN(11)] * math.Ldexp(1, e%100)
				if r.IntN(2) == 0 {
					v = -v
				}
			case 3: // zeros of both signs
				v = math.Copysign(0, float64(r.IntN(2)*2-1))
			case 4: // subnormal float32
				v = float64(math.Float32frombits(r.Uint32N(0x800000) | uint32(r.IntN(2))<<31))
			default: // one outlier
				v = r.NormFloat64() * 1e-3
				if i == 7 {
					v = 1e4
				}
			}
			x[blk*32+i] = float32(v)
		}
	}
	quantizeBoth(t, "mixed", x, rows, k)
}

// TestMXFP4QuantizeBF16Exhaustive quantizes every finite bf16 value beside
// anchors that fix the block scale at several bytes (and beside nothing)
// and compares with the twin.
func TestMXFP4QuantizeBF16Exhaustive(t *testing.T) {
	if testing.Short() {
		t.Skip("exhaustive bf16 sweep (about 10 s)")
	}
	anchors := []float32{0, 6 * 0x1p-127, 6, 1.75 * 0x1p40, 3 * 0x1p-100}
	const perRow = 32
	for _, a := range anchors {
		var x []float32
		for h := range 1 << 16 {
			if h&0x7f80 == 0x7f80 {
				continue
			}
			blk := make([]float32, perRow)
			blk[0] = a
			blk[5] = npy.BF16ToF32(uint16(h))
			x = append(x, blk...)
		}
		quantizeBoth(t, fmt.Sprintf("anchor %g", a), x, len(x)/perRow, perRow)
	}
}

func TestMXFP4QuantizeErrors(t *testing.T) {
	codes, scales := make([]uint8, 16), []uint8{77}
	x := make([]float32, 32)
	x[3] = float32(math.NaN())
	err := golden.MXFP4Quantize(codes, scales, x, 1, 32, golden.ScaleRceil)
	if !errors.Is(err, golden.ErrNonFinite) || scales[0] != 77 {
		t.Errorf("NaN input: err %v, scale %d (want ErrNonFinite, nothing written)", err, scales[0])
	}
	x[3] = float32(math.Inf(-1))
	if err := golden.MXFP4Quantize(codes, scales, x, 1, 32, golden.ScaleRceil); !errors.Is(err, golden.ErrNonFinite) {
		t.Errorf("-Inf input: %v", err)
	}
	xb := make([]uint16, 32)
	xb[31] = 0x7f80
	if err := golden.MXFP4QuantizeBF16(codes, scales, xb, 1, 32, golden.ScaleRceil); !errors.Is(err, golden.ErrNonFinite) {
		t.Errorf("bf16 Inf input: %v", err)
	}
	if err := golden.MXFP4Quantize(make([]uint8, 8), make([]uint8, 0), make([]float32, 16), 1, 16, golden.ScaleRceil); !errors.Is(err, golden.ErrInvalidParams) {
		t.Errorf("k=16: %v", err)
	}
	if err := golden.MXFP4Quantize(codes, scales, make([]float32, 32), 1, 32, golden.ScaleMode(9)); !errors.Is(err, golden.ErrInvalidParams) {
		t.Errorf("mode 9: %v", err)
	}
	if _, err := golden.ParseScaleMode("nearest"); !errors.Is(err, golden.ErrInvalidParams) {
		t.Errorf("ParseScaleMode(nearest): %v", err)
	}
	for _, m := range allModes {
		if p, err := golden.ParseScaleMode(m.String()); err != nil || p != m {
			t.Errorf("ParseScaleMode(%q) = %v, %v", m.String(), p, err)
		}
	}
}

// TestE4M3 checks the e4m3fn encoder against the brute-force twin on every
// byte's value, every midpoint between neighbours and one ulp around it,
// saturation and NaN.
func TestE4M3(t *testing.T) {
	var xs []float64
	for b := range 0x7f {
		v := e4m3Table[b]
		if got := dtype.E4M3ToF64(uint8(b)); !sameF64(got, v) {
			t.Errorf("E4M3ToF64(%#02x) = %v, want %v", b, got, v)
		}
		xs = append(xs, v, -v)
		if b+1 < 0x7f {
			mid := (v + e4m3Table[b+1]) / 2
			xs = append(xs, mid, math.Nextafter(mid, 0), math.Nextafter(mid, 1000), -mid)
		}
	}
	xs = append(xs, 448, 464, 465, 1e9, math.Inf(1), math.Inf(-1), 0x1p-10, math.Nextafter(0x1p-10, 1), 0x1p-11, math.Copysign(0, -1))
	for _, x := range xs {
		if got, want := dtype.E4M3FromF64(x), naiveE4M3(x); got != want {
			t.Errorf("E4M3FromF64(%v) = %#02x, want %#02x", x, got, want)
		}
	}
	if got := dtype.E4M3FromF64(math.NaN()); got&0x7f != 0x7f {
		t.Errorf("NaN -> %#02x", got)
	}
	if !math.IsNaN(dtype.E4M3ToF64(0x7f)) || !math.IsNaN(dtype.E4M3ToF64(0xff)) {
		t.Error("0x7f / 0xff not NaN")
	}
}

func TestMXFP4ToMXFP8AllBytes(t *testing.T) {
	codes := make([]uint8, 256)
	for i := range codes {
		codes[i] = uint8(i)
	}
	fp8 := make([]uint8, 512)
	if err := golden.MXFP4ToMXFP8(fp8, codes, 16, 32); err != nil {
		t.Fatal(err)
	}
	for i, p := range codes {
		for h, c := range []uint8{p & 15, p >> 4} {
			if v := e4m3Table[fp8[2*i+h]]; !sameF64(v, handE2M1[c]) {
				t.Errorf("byte %#02x nibble %d: fp8 %#02x = %v, want %v", p, h, fp8[2*i+h], v, handE2M1[c])
			}
		}
	}
}

// foldCase makes codes and scales whose blocks spread over many binades:
// all-zero blocks, -0 only blocks, gaps beyond 14 binades, edge bytes.
func foldCase(r *rand.Rand, rows, k int, edge bool) (codes, scales []uint8) {
	codes, scales = make([]uint8, rows*k/2), make([]uint8, rows*k/32)
	for i := range codes {
		codes[i] = uint8(r.UintN(256))
	}
	for blk := range scales {
		switch blk % 5 {
		case 0:
			scales[blk] = uint8(100 + r.IntN(40))
		case 1:
			scales[blk] = uint8(100 + r.IntN(8))
		case 2: // all-zero block with a large scale: must not set S
			scales[blk] = 250
			for i := blk * 16; i < blk*16+16; i++ {
				codes[i] &= 0x88
			}
		default:
			scales[blk] = uint8(2 + r.IntN(250))
		}
		if edge && blk%7 == 3 {
			scales[blk] = []uint8{0, 1, 253, 254, 255}[r.IntN(5)]
		}
	}
	return
}

func TestMXFP4FoldGroupVsNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	total := 0
	for _, sh := range []struct{ rows, k, g int }{{7, 128, 4}, {5, 96, 4}, {3, 64, 4}, {4, 32, 4}, {6, 256, 1}, {3, 96, 2}} {
		for _, edge := range []bool{false, true} {
			codes, scales := foldCase(r, sh.rows, sh.k, edge)
			if sh.k == 96 && !edge { // an all-zero group
				for i := range 48 {
					codes[i] &= 0x88
				}
			}
			ng := golden.FoldGroups(sh.k, sh.g)
			fp8, gs := make([]uint8, sh.rows*sh.k), make([]uint8, sh.rows*ng)
			gsf, inex := make([]float32, sh.rows*ng), make([]bool, sh.rows*ng)
			n, err := golden.MXFP4FoldGroup(fp8, gs, gsf, inex, codes, scales, sh.rows, sh.k, sh.g)
			if err != nil {
				t.Fatal(err)
			}
			wfp8, wgs, wgsf, winex := naiveFold(codes, scales, sh.rows, sh.k, sh.g)
			name := fmt.Sprintf("%+v edge=%v", sh, edge)
			if i := firstDiffU8(fp8, wfp8); i < len(fp8) {
				t.Fatalf("%s: fp8[%d] = %#02x, want %#02x", name, i, fp8[i], wfp8[i])
			}
			if !slices.Equal(gs, wgs) || !slices.Equal(inex, winex) {
				t.Fatalf("%s: group bytes %v inexact %v, want %v %v", name, gs, inex, wgs, winex)
			}
			for i := range gsf {
				if math.Float32bits(gsf[i]) != math.Float32bits(wgsf[i]) && !(gsf[i] != gsf[i] && wgsf[i] != wgsf[i]) {
					t.Fatalf("%s: group scale %d = %v, want %v", name, i, gsf[i], wgsf[i])
				}
			}
			cnt := 0
			for _, f := range inex {
				if f {
					cnt++
				}
			}
			if n != cnt {
				t.Errorf("%s: count %d, flags %d", name, n, cnt)
			}
			total += cnt
			// Exactness: a group not flagged reproduces every value.
			vals := naiveDequant(codes, scales, sh.rows, sh.k)
			nb := sh.k / 32
			for i, v := range vals {
				row, blk := i/sh.k, (i%sh.k)/32
				o := row*ng + blk/sh.g
				if gs[o] == 255 || inex[o] {
					continue
				}
				if got := e4m3Table[fp8[i]] * math.Pow(2, float64(int(gs[o])-127)); !sameF64(got, v) {
					t.Fatalf("%s: element %d (block %d of %d): fp8*2^S = %v, want %v", name, i, blk, nb, got, v)
				}
			}
		}
	}
	if total == 0 {
		t.Error("no group was flagged inexact: the cases miss the > 14 binade rule")
	}
}

// TestMXFP4FoldInexactBoundary: 14 binades below the group max is exact,
// 15 is flagged and loses code 1 (0.5*2^-9 rounds to zero).
func TestMXFP4FoldInexactBoundary(t *testing.T) {
	for _, gap := range []int{14, 15} {
		codes := make([]uint8, 64)
		codes[0] = 7         // block 0: 6
		codes[16] = 1 | 9<<4 // block 1: 0.5, -0.5
		scales := []uint8{140, uint8(140 - gap), 140, 140}
		fp8, gs, gsf, inex := make([]uint8, 128), make([]uint8, 1), make([]float32, 1), make([]bool, 1)
		if _, err := golden.MXFP4FoldGroup(fp8, gs, gsf, inex, codes, scales, 1, 128, 4); err != nil {
			t.Fatal(err)
		}
		if gs[0] != 140-6 || inex[0] != (gap > 14) {
			t.Errorf("gap %d: group byte %d inexact %v", gap, gs[0], inex[0])
		}
		wantLo, wantHi := uint8(0x01), uint8(0x81) // 2^-9
		if gap == 15 {
			wantLo, wantHi = 0x00, 0x80
		}
		if fp8[32] != wantLo || fp8[33] != wantHi || fp8[0] != 0x7c { // 6*2^6 = 384 = 1.5*2^8: 0x7C
			t.Errorf("gap %d: fp8 %#02x %#02x (max %#02x)", gap, fp8[32], fp8[33], fp8[0])
		}
	}
}

func randBF16(r *rand.Rand, n int, sd float64) []uint16 {
	x := make([]uint16, n)
	for i := range x {
		x[i] = npy.BF16FromF64(r.NormFloat64() * sd)
	}
	return x
}

func quantizedWeights(t testing.TB, r *rand.Rand, rows, k int, sd float64) (codes, scales []uint8) {
	w := randBF16(r, rows*k, sd)
	codes, scales = make([]uint8, rows*k/2), make([]uint8, rows*k/32)
	if err := golden.MXFP4QuantizeBF16(codes, scales, w, rows, k, golden.ScaleRceil); err != nil {
		t.Fatal(err)
	}
	return
}

func TestMXFP4GEMMVsNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, sh := range [][3]int{{1, 1, 32}, {3, 5, 64}, {7, 33, 96}, {17, 40, 256}, {4, 16, 32}} {
		m, n, k := sh[0], sh[1], sh[2]
		x := randBF16(r, m*k, 1)
		codes, scales := quantizedWeights(t, r, n, k, 1/math.Sqrt(float64(k)))
		w := naiveDequant(codes, scales, n, k)
		check := func(name string, y, s, wy, ws []float64) {
			t.Helper()
			for i := range y {
				if !sameF64(y[i], wy[i]) || !sameF64(s[i], ws[i]) {
					t.Fatalf("%s %v: [%d] y %v s %v, want %v %v", name, sh, i, y[i], s[i], wy[i], ws[i])
				}
			}
		}
		y, s := make([]float64, m*n), make([]float64, m*n)
		if err := golden.MXFP4GEMM(y, s, x, codes, scales, m, n, k); err != nil {
			t.Fatal(err)
		}
		wy, ws := naiveGEMM(bf16Values(x), w, m, n, k)
		check("bf16", y, s, wy, ws)

		xc, xs := make([]uint8, m*k/2), make([]uint8, m*k/32)
		if err := golden.MXFP4QuantizeBF16(xc, xs, x, m, k, golden.ScaleRceil); err != nil {
			t.Fatal(err)
		}
		if err := golden.MXFP4GEMMA4W4(y, s, xc, xs, codes, scales, m, n, k); err != nil {
			t.Fatal(err)
		}
		wy, ws = naiveGEMM(naiveDequant(xc, xs, m, k), w, m, n, k)
		check("a4w4", y, s, wy, ws)

		ng := (k + 127) / 128
		q8, s8 := make([]uint8, m*k), make([]uint8, m*ng)
		if err := golden.FP8QuantizePerToken(q8, s8, x, m, k); err != nil {
			t.Fatal(err)
		}
		nq8, ns8 := naivePerToken(bf16Values(x), m, k)
		if !slices.Equal(q8, nq8) || !slices.Equal(s8, ns8) {
			t.Fatalf("%v: per-token fp8 differs from the twin", sh)
		}
		if err := golden.MXFP4GEMMW4A8(y, s, q8, s8, codes, scales, m, n, k); err != nil {
			t.Fatal(err)
		}
		xa8 := make([]float64, m*k)
		for i, q := range q8 {
			xa8[i] = e4m3Table[q] * naiveScale(s8[(i/k)*ng+(i%k)/128])
		}
		wy, ws = naiveGEMM(xa8, w, m, n, k)
		check("w4a8", y, s, wy, ws)
	}
}

func moeCase(t testing.TB, seed uint64, d golden.MoEDims, xsd float64) ([]uint16, []float32, golden.MoEWeights) {
	r := rand.New(rand.NewPCG(seed, 41))
	var w golden.MoEWeights
	w.W1Codes, w.W1Scales = quantizedWeights(t, r, d.E*2*d.I, d.Hd, 1/math.Sqrt(float64(d.Hd)))
	w.W2Codes, w.W2Scales = quantizedWeights(t, r, d.E*d.Hd, d.I, 1/math.Sqrt(float64(d.I)))
	w.B1, w.B2 = randBF16(r, d.E*2*d.I, 0.5), randBF16(r, d.E*d.Hd, 0.5)
	x := randBF16(r, d.T*d.Hd, xsd)
	logits := make([]float32, d.T*d.E)
	for i := range logits {
		logits[i] = float32(math.Round(r.NormFloat64()*4) / 4) // coarse: many ties
	}
	return x, logits, w
}

func TestMXFP4MoEVsNaive(t *testing.T) {
	for _, c := range []struct {
		d   golden.MoEDims
		xsd float64
	}{
		{golden.MoEDims{T: 9, Hd: 64, I: 32, E: 6, TopK: 2}, 1},
		{golden.MoEDims{T: 5, Hd: 96, I: 64, E: 4, TopK: 4}, 8}, // large h: the limit clamps
		{golden.MoEDims{T: 1, Hd: 32, I: 32, E: 8, TopK: 1}, 1},
		{golden.MoEDims{T: 9, Hd: 64, I: 32, E: 6, TopK: 2, RoundAct: true}, 1},
		{golden.MoEDims{T: 5, Hd: 96, I: 64, E: 4, TopK: 4, RoundAct: true}, 8},
	} {
		x, logits, w := moeCase(t, uint64(c.d.T), c.d, c.xsd)
		out, counts := make([]float64, c.d.T*c.d.Hd), make([]int64, c.d.E)
		if err := golden.MXFP4MoE(out, counts, x, logits, w, c.d); err != nil {
			t.Fatal(err)
		}
		wout, wcounts := naiveMoE(x, logits, w, c.d)
		if !slices.Equal(counts, wcounts) {
			t.Fatalf("%+v: counts %v, want %v", c.d, counts, wcounts)
		}
		var sum int64
		for _, n := range counts {
			sum += n
		}
		if sum != int64(c.d.T*c.d.TopK) {
			t.Errorf("%+v: counts sum %d", c.d, sum)
		}
		for i := range out {
			if !sameF64(out[i], wout[i]) {
				t.Fatalf("%+v: out[%d] = %v, want %v", c.d, i, out[i], wout[i])
			}
		}
		// One token per chunk (each expert's weights decoded per token) gives the same bits.
		old := golden.SetMoEChunkBytes(1)
		out1 := make([]float64, len(out))
		err := golden.MXFP4MoE(out1, counts, x, logits, w, c.d)
		golden.SetMoEChunkBytes(old)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(out1, out) {
			t.Errorf("%+v: chunked result differs", c.d)
		}
	}
}

// TestMoERoundActChangesOut: rounding the activations to bf16 changes most
// outputs (the parameter is not a no-op), each by at most about one bf16
// rounding of the activations: 2^-8 of sum_i |a_i w2_i| + |b2|, bounded
// here by the same sum over the exact activations with a 2^-7 margin.
func TestMoERoundActChangesOut(t *testing.T) {
	d := golden.MoEDims{T: 6, Hd: 64, I: 64, E: 4, TopK: 2}
	x, logits, w := moeCase(t, 77, d, 1)
	run := func(round bool) []float64 {
		d := d
		d.RoundAct = round
		out := make([]float64, d.T*d.Hd)
		if err := golden.MXFP4MoE(out, make([]int64, d.E), x, logits, w, d); err != nil {
			t.Fatal(err)
		}
		return out
	}
	exact, rounded := run(false), run(true)
	_, bound, _ := naiveMoEWithBound(x, logits, w, d)
	var diff int
	for i := range exact {
		if exact[i] != rounded[i] {
			diff++
		}
		if e := math.Abs(exact[i] - rounded[i]); e > 0x1p-7*bound[i] {
			t.Errorf("out[%d]: RoundAct moved it by %g, more than 2^-7 of its bound %g", i, e, bound[i])
		}
	}
	if diff < len(exact)/2 {
		t.Errorf("RoundAct changed %d of %d outputs, want most", diff, len(exact))
	}
}

// TestSwiGLU pins gpt-oss's activation: clamps at 7 (glu above only,
// linear both sides), the +1 on the linear half.
func TestSwiGLU(t *testing.T) {
	sig := func(z float64) float64 { return 1 / (1 + math.Exp(-z)) }
	cases := []struct{ glu, lin, want float64 }{
		{0, 5, 0},
		{1, 0, 1 * sig(1.702)},
		{10, 0, 7 * sig(1.702*7)},
		{-10, 0, -10 * sig(-17.02)},
		{1, 10, sig(1.702) * 8},
		{1, -10, sig(1.702) * -6},
	}
	for _, c := range cases {
		if got := golden.SwiGLU(c.glu, c.lin); math.Abs(got-c.want) > 1e-15*math.Max(1, math.Abs(c.want)) {
			t.Errorf("SwiGLU(%v, %v) = %v, want %v", c.glu, c.lin, got, c.want)
		}
	}
}

func TestMoERouteTies(t *testing.T) {
	logits := []float32{1, 3, 3, 2, 3}
	ids, w := make([]int32, 3), make([]float64, 3)
	if err := golden.MoERoute(ids, w, logits, 1, 5, 3); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []int32{1, 2, 4}) || w[0] != w[1] || math.Abs(w[0]-1.0/3) > 1e-15 {
		t.Errorf("ids %v weights %v", ids, w)
	}
	logits[3] = float32(math.NaN())
	if err := golden.MoERoute(ids, w, logits, 1, 5, 3); !errors.Is(err, golden.ErrNonFinite) {
		t.Errorf("NaN logit: %v", err)
	}
}

// TestMXFP4WorkerInvariance: one worker and many give the same bits.
func TestMXFP4WorkerInvariance(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	rows, k := 300, 512
	x := make([]float32, rows*k)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	run := func() ([]uint8, []uint8, []float64, []float64) {
		codes, scales := make([]uint8, rows*k/2), make([]uint8, rows*k/32)
		if err := golden.MXFP4Quantize(codes, scales, x, rows, k, golden.ScaleEven); err != nil {
			t.Fatal(err)
		}
		xb := make([]uint16, 5*k)
		npy.BF16sFromF32s(xb, x[:5*k])
		y, s := make([]float64, 5*rows), make([]float64, 5*rows)
		if err := golden.MXFP4GEMM(y, s, xb, codes, scales, 5, rows, k); err != nil {
			t.Fatal(err)
		}
		return codes, scales, y, s
	}
	d := golden.MoEDims{T: 7, Hd: 64, I: 288, E: 3, TopK: 2} // W1 has 576 rows: several 256-column blocks
	mx, ml, mw := moeCase(t, 9, d, 1)
	moe := func() []float64 {
		out := make([]float64, d.T*d.Hd)
		if err := golden.MXFP4MoE(out, make([]int64, d.E), mx, ml, mw, d); err != nil {
			t.Fatal(err)
		}
		return out
	}
	c1, s1, y1, b1 := run()
	m1 := moe()
	old := runtime.GOMAXPROCS(1)
	c2, s2, y2, b2 := run()
	m2 := moe()
	runtime.GOMAXPROCS(old)
	if !slices.Equal(c1, c2) || !slices.Equal(s1, s2) || !slices.Equal(y1, y2) || !slices.Equal(b1, b2) || !slices.Equal(m1, m2) {
		t.Error("results depend on GOMAXPROCS")
	}
}

// TestMXFP4NegativesDiffer runs each negative control of §9 on an input
// where it must differ from the golden and checks that it does.
func TestMXFP4NegativesDiffer(t *testing.T) {
	// Two rows of two blocks: ties at 0.25, 0.75, 1.25 and 1.75 times the
	// scale, amax 7 (1.75*4: floor and rceil differ), a small negative,
	// halves with different ranges (so 16-element blocks differ).
	rows, k := 2, 64
	x := make([]float32, rows*k)
	for i := range x {
		x[i] = float32(0.01 * float64(i%7))
	}
	copy(x, []float32{7, 0.5, 1.25, 0.75, 1.75, -0.01, 0.25, 3.5})
	x[20] = 0.001
	x[32] = 5 // block 1: amax 5 (rceil byte 127, floor 127)
	x[64] = 100
	x[96+3] = 0.02
	quant := func(mode golden.ScaleMode) ([]uint8, []uint8) {
		c, s := make([]uint8, rows*k/2), make([]uint8, rows*k/32)
		if err := golden.MXFP4Quantize(c, s, x, rows, k, mode); err != nil {
			t.Fatal(err)
		}
		return c, s
	}
	gc, gs := quant(golden.ScaleRceil)
	type qf func(codes, scales []uint8, x []float32, rows, k int, mode golden.ScaleMode) error
	for name, f := range map[string]qf{
		"swapped nibbles": golden.MXFP4QuantizeSwappedNibbles,
		"half away":       golden.MXFP4QuantizeHalfAway,
		"half down":       golden.MXFP4QuantizeHalfDown,
		"-0 folded":       golden.MXFP4QuantizeNoNegZero,
		"floor for rceil": func(c, s []uint8, x []float32, rows, k int, _ golden.ScaleMode) error {
			return golden.MXFP4QuantizeFloorForRceil(c, s, x, rows, k)
		},
	} {
		c, s := make([]uint8, len(gc)), make([]uint8, len(gs))
		if err := f(c, s, x, rows, k, golden.ScaleRceil); err != nil {
			t.Fatal(err)
		}
		if slices.Equal(c, gc) && slices.Equal(s, gs) {
			t.Errorf("%s: same codes and scales as the golden", name)
		}
	}
	c16, s16 := make([]uint8, len(gc)), make([]uint8, rows*k/16)
	if err := golden.MXFP4QuantizeScalePer16(c16, s16, x, rows, k, golden.ScaleRceil); err != nil {
		t.Fatal(err)
	}
	if slices.Equal(c16, gc) {
		t.Error("scale per 16: same codes as the golden")
	}

	gold := make([]float32, rows*k)
	if err := golden.MXFP4Dequantize(gold, gc, gs, rows, k); err != nil {
		t.Fatal(err)
	}
	type df func(dst []float32, codes, scales []uint8, rows, k int) error
	for name, f := range map[string]df{
		"scale bias off by one": golden.MXFP4DequantizeBias128,
		"scales transposed":     golden.MXFP4DequantizeScalesTransposed,
		"E8M0 read as e4m3":     golden.MXFP4DequantizeScaleAsE4M3,
	} {
		got := make([]float32, len(gold))
		if err := f(got, gc, gs, rows, k); err != nil {
			t.Fatal(err)
		}
		if slices.Equal(got, gold) {
			t.Errorf("%s: same values as the golden", name)
		}
	}

	ng := golden.FoldGroups(k, 1)
	fold := func(f func(fp8, gs []uint8, gsf []float32, inex []bool, codes, scales []uint8, rows, k, g int) (int, error)) []uint8 {
		fp8, b, bf, in := make([]uint8, rows*k), make([]uint8, rows*ng), make([]float32, rows*ng), make([]bool, rows*ng)
		if _, err := f(fp8, b, bf, in, gc, gs, rows, k, 1); err != nil {
			t.Fatal(err)
		}
		return fp8
	}
	if slices.Equal(fold(golden.MXFP4FoldGroupOffset7), fold(golden.MXFP4FoldGroup)) {
		t.Error("fold at offset 7: same fp8 as the golden")
	}

	r := rand.New(rand.NewPCG(61, 62))
	m, n, kk := 2, 3, 1024
	xb := randBF16(r, m*kk, 1)
	wc, ws := quantizedWeights(t, r, n, kk, 1/math.Sqrt(float64(kk)))
	y, s := make([]float64, m*n), make([]float64, m*n)
	if err := golden.MXFP4GEMM(y, s, xb, wc, ws, m, n, kk); err != nil {
		t.Fatal(err)
	}
	yb := make([]float64, m*n)
	if err := golden.MXFP4GEMMBF16Acc(yb, s, xb, wc, ws, m, n, kk); err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for i := range y {
		worst = max(worst, math.Abs(yb[i]-y[i])/s[i])
	}
	if !(worst > 0x1p-18) {
		t.Errorf("bf16 accumulation: worst |d|/S = %g, not beyond the 2^-18*S term", worst)
	}
}

func ExampleMXFP4Quantize() {
	x := make([]float32, 32)
	copy(x, []float32{7, -1.25, 0.74, -0.01})
	codes, scales := make([]uint8, 16), make([]uint8, 1)
	for _, mode := range []golden.ScaleMode{golden.ScaleRceil, golden.ScaleFloor} {
		if err := golden.MXFP4Quantize(codes, scales, x, 1, 32, mode); err != nil {
			panic(err)
		}
		back := make([]float32, 32)
		if err := golden.MXFP4Dequantize(back, codes, scales, 1, 32); err != nil {
			panic(err)
		}
		fmt.Printf("%s: scale byte %d, codes % x, values %v\n", mode, scales[0], codes[:2], back[:4])
	}
	// Output:
	// rceil: scale byte 128, codes 96 81, values [8 -1 1 -0]
	// floor: scale byte 127, codes a7 81, values [6 -1 0.5 -0]
}

// FuzzMXFP4QuantizeBlock compares one block of arbitrary float32 bits
// with the twin under every mode.
func FuzzMXFP4QuantizeBlock(f *testing.F) {
	seed := make([]byte, 128)
	for i := range seed {
		seed[i] = byte(i * 37)
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 128 {
			return
		}
		x := make([]float32, 32)
		for i := range x {
			b := uint32(data[4*i]) | uint32(data[4*i+1])<<8 | uint32(data[4*i+2])<<16 | uint32(data[4*i+3])<<24
			if b&0x7f800000 == 0x7f800000 {
				b &^= 0x40000000 // keep it finite
			}
			x[i] = math.Float32frombits(b)
		}
		quantizeBoth(t, "fuzz", x, 1, 32)
	})
}

func benchQuantInput(rows, k int) []float32 {
	r := rand.New(rand.NewPCG(71, 72))
	x := make([]float32, rows*k)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 0.02)
	}
	return x
}

// reportElems reports elements per wall second and per CPU-second (the
// per-core rate on a loaded machine; cpu0 is cpuSeconds() before the loop).
func reportElems(b *testing.B, n int, cpu0 float64) {
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
	if c := cpuSeconds() - cpu0; c > 0 && cpu0 > 0 {
		b.ReportMetric(float64(n)*float64(b.N)/c/1e9, "Gelem/cpu-s")
	}
}

func BenchmarkMXFP4Quantize(b *testing.B) {
	const rows, k = 1024, 4096
	x := benchQuantInput(rows, k)
	xb := make([]uint16, len(x))
	npy.BF16sFromF32s(xb, x)
	codes, scales := make([]uint8, rows*k/2), make([]uint8, rows*k/32)
	b.Run("f32", func(b *testing.B) {
		b.SetBytes(4 * rows * k)
		b.ReportAllocs()
		cpu0 := cpuSeconds()
		for b.Loop() {
			if err := golden.MXFP4Quantize(codes, scales, x, rows, k, golden.ScaleRceil); err != nil {
				b.Fatal(err)
			}
		}
		reportElems(b, rows*k, cpu0)
	})
	b.Run("bf16", func(b *testing.B) {
		b.SetBytes(2 * rows * k)
		b.ReportAllocs()
		cpu0 := cpuSeconds()
		for b.Loop() {
			if err := golden.MXFP4QuantizeBF16(codes, scales, xb, rows, k, golden.ScaleRceil); err != nil {
				b.Fatal(err)
			}
		}
		reportElems(b, rows*k, cpu0)
	})
}

func BenchmarkMXFP4Dequantize(b *testing.B) {
	const rows, k = 1024, 4096
	x := benchQuantInput(rows, k)
	codes, scales := make([]uint8, rows*k/2), make([]uint8, rows*k/32)
	if err := golden.MXFP4Quantize(codes, scales, x, rows, k, golden.ScaleRceil); err != nil {
		b.Fatal(err)
	}
	f32, bf := make([]float32, rows*k), make([]uint16, rows*k)
	b.Run("f32", func(b *testing.B) {
		b.SetBytes(rows * k / 2)
		b.ReportAllocs()
		cpu0 := cpuSeconds()
		for b.Loop() {
			if err := golden.MXFP4Dequantize(f32, codes, scales, rows, k); err != nil {
				b.Fatal(err)
			}
		}
		reportElems(b, rows*k, cpu0)
	})
	b.Run("bf16", func(b *testing.B) {
		b.SetBytes(rows * k / 2)
		b.ReportAllocs()
		cpu0 := cpuSeconds()
		for b.Loop() {
			if err := golden.MXFP4DequantizeBF16(bf, codes, scales, rows, k); err != nil {
				b.Fatal(err)
			}
		}
		reportElems(b, rows*k, cpu0)
	})
}

// BenchmarkMXFP4GEMM is the shape of BenchmarkMatmul/512x4096x1024_NK, so
// the GFLOP/s compare directly (the bound S is a second pass and counted
// in the time, not in the flops).
func BenchmarkMXFP4GEMM(b *testing.B) {
	const m, k, n = 512, 4096, 1024
	r := rand.New(rand.NewPCG(1, 2))
	x := randBF16(r, m*k, 1)
	codes, scales := quantizedWeights(b, r, n, k, 0.01)
	y, s := make([]float64, m*n), make([]float64, m*n)
	for _, withS := range []bool{true, false} {
		name := "y+S"
		if !withS {
			name = "y"
		}
		b.Run(name, func(b *testing.B) {
			ss := s
			if !withS {
				ss = nil
			}
			benchMXGEMM(b, y, ss, x, codes, scales, m, n, k)
		})
	}
}

// benchMXGEMM times MXFP4GEMM, reporting y's 2*m*n*k FLOPs per wall and
// per CPU second.
func benchMXGEMM(b *testing.B, y, s []float64, x []uint16, codes, scales []uint8, m, n, k int) {
	b.SetBytes(int64(2*m*k + n*k/2 + n*k/32))
	b.ReportAllocs()
	cpu0 := cpuSeconds()
	for b.Loop() {
		if err := golden.MXFP4GEMM(y, s, x, codes, scales, m, n, k); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(2*float64(m*k*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	if c := cpuSeconds() - cpu0; c > 0 {
		b.ReportMetric(2*float64(m*k*n)*float64(b.N)/c/1e9, "GFLOP/cpu-s")
	}
}

// BenchmarkMXFP4GEMMSmallM is the suite's GEMM shape (gpt-oss W, N = K =
// 2880) at the small M of its cases and of MoE experts' token groups, y
// and S (GFLOP counts y's 2*m*n*k; S doubles the arithmetic).
func BenchmarkMXFP4GEMMSmallM(b *testing.B) {
	const k, n = 2880, 2880
	r := rand.New(rand.NewPCG(5, 6))
	codes, scales := quantizedWeights(b, r, n, k, 1/math.Sqrt(k))
	for _, m := range []int{1, 6, 64} {
		b.Run(fmt.Sprintf("m%d", m), func(b *testing.B) {
			benchMXGEMM(b, make([]float64, m*n), make([]float64, m*n), randBF16(r, m*k, 1), codes, scales, m, n, k)
		})
	}
}

// TestFP8QuantizePerTokenEdges pins DeepGEMM's rule by hand: the 1e-4
// amax floor (all-zero groups get 2^-22: 448*2^-22 >= 1e-4 > 448*2^-23),
// amax exactly 448 (e = 0), the next bf16 above (e = 1), a short last
// group.
func TestFP8QuantizePerTokenEdges(t *testing.T) {
	const m, k = 3, 160 // groups of 128 and 32
	x := make([]uint16, m*k)
	x[1*k+5] = npy.BF16FromF64(448)
	x[1*k+6] = npy.BF16FromF64(-1)
	x[2*k+0] = npy.BF16FromF64(450) // the next bf16 above 448
	x[2*k+1] = npy.BF16FromF64(-224)
	x[2*k+130] = npy.BF16FromF64(3e-5)
	fp8, sc := make([]uint8, m*k), make([]uint8, m*2)
	if err := golden.FP8QuantizePerToken(fp8, sc, x, m, k); err != nil {
		t.Fatal(err)
	}
	if want := []uint8{105, 105, 127, 105, 128, 105}; !slices.Equal(sc, want) {
		t.Errorf("scales %v, want %v", sc, want)
	}
	// 448 = 1.75*2^8: 0x7E; -1: 0xB8; 450/2 = 225 -> 224 = 1.75*2^7: 0x76;
	// -224/2 = -112 = -1.75*2^6: 0xEE.
	want := map[int]uint8{1*k + 5: 0x7e, 1*k + 6: 0xb8, 2 * k: 0x76, 2*k + 1: 0xee}
	want[2*k+130] = dtype.E4M3FromF64(npy.BF16ToF64(x[2*k+130]) * 0x1p22)
	for i, w := range want {
		if fp8[i] != w {
			t.Errorf("fp8[%d, %d] = %#02x, want %#02x", i/k, i%k, fp8[i], w)
		}
	}
}

// BenchmarkMXFP4MoE is gpt-oss's expert shape (Hd = I = 2880) with 4
// experts, 16 tokens, top 2.
func BenchmarkMXFP4MoE(b *testing.B) {
	d := golden.MoEDims{T: 16, Hd: 2880, I: 2880, E: 4, TopK: 2}
	x, logits, w := moeCase(b, 3, d, 1)
	out, counts := make([]float64, d.T*d.Hd), make([]int64, d.E)
	b.SetBytes(int64(len(w.W1Codes) + len(w.W2Codes) + len(w.W1Scales) + len(w.W2Scales)))
	b.ReportAllocs()
	for b.Loop() {
		if err := golden.MXFP4MoE(out, counts, x, logits, w, d); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(d.T*b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkMXFP4MoEExpert is one gpt-oss expert (Hd = I = 2880) on nt
// tokens with its bound S, as package suite runs it (the skewed cases
// give most experts 1-3 tokens).
func BenchmarkMXFP4MoEExpert(b *testing.B) {
	const hd, in = 2880, 2880
	r := rand.New(rand.NewPCG(7, 8))
	w1c, w1s := quantizedWeights(b, r, 2*in, hd, 1/math.Sqrt(hd))
	w2c, w2s := quantizedWeights(b, r, hd, in, 1/math.Sqrt(in))
	b1, b2 := randBF16(r, 2*in, 0.1), randBF16(r, hd, 0.1)
	for _, nt := range []int{1, 8} {
		b.Run(fmt.Sprintf("t%d", nt), func(b *testing.B) {
			x := randBF16(r, nt*hd, 1)
			o, s := make([]float64, nt*hd), make([]float64, nt*hd)
			var sc golden.MoEScratch
			b.SetBytes(int64(len(w1c) + len(w1s) + len(w2c) + len(w2s)))
			b.ReportAllocs()
			cpu0 := cpuSeconds()
			for b.Loop() {
				if err := golden.MXFP4MoEExpert(o, s, x, nt, w1c, w1s, b1, w2c, w2s, b2, hd, in, true, &sc); err != nil {
					b.Fatal(err)
				}
			}
			if c := cpuSeconds() - cpu0; c > 0 {
				b.ReportMetric(2*float64(nt*3*in*hd)*float64(b.N)/c/1e9, "GFLOP/cpu-s")
			}
		})
	}
}

func ExampleMXFP4FoldGroup() {
	// One row of four blocks (k = 128) folded into one 1x128 group: block 0
	// holds 6 under scale byte 130 (6*2^3 = 384*2^-3: 0x7C), block 1 holds
	// 0.5 under byte 120 (0.5*2^-7 = 2^-5 * 2^-3: 0x10).
	codes := make([]uint8, 64)
	codes[0] = 7
	codes[16] = 1
	scales := []uint8{130, 120, 127, 127}
	fp8, gs, gsf, inexact := make([]uint8, 128), make([]uint8, 1), make([]float32, 1), make([]bool, 1)
	n, err := golden.MXFP4FoldGroup(fp8, gs, gsf, inexact, codes, scales, 1, 128, 4)
	if err != nil {
		panic(err)
	}
	fmt.Printf("group byte %d (2^S = %g), fp8 %#02x %#02x, inexact %v (%d)\n", gs[0], gsf[0], fp8[0], fp8[32], inexact[0], n)
	// Output:
	// group byte 124 (2^S = 0.125), fp8 0x7c 0x10, inexact false (0)
}

func ExampleMXFP4GEMM() {
	// x [1, 32] all 0.5 (bf16 0x3F00); W [2, 32]: row 0 all code 2 (1.0)
	// under byte 127, row 1 all code 9 (-0.5) under byte 128 (-1.0).
	x := slices.Repeat([]uint16{0x3f00}, 32)
	codes := append(slices.Repeat([]uint8{0x22}, 16), slices.Repeat([]uint8{0x99}, 16)...)
	scales := []uint8{127, 128}
	y, s := make([]float64, 2), make([]float64, 2)
	if err := golden.MXFP4GEMM(y, s, x, codes, scales, 1, 2, 32); err != nil {
		panic(err)
	}
	fmt.Println(y, s)
	// Output:
	// [16 -16] [16 16]
}

// TestMXScaleByteRoundUpBits: triton_kernels' bit trick on fl32(amax/6)
// equals the exact rceil byte except where the quotient is a nonzero
// float32 subnormal and amax <= 6*2^-127 (byte 1 against 0), checked on
// hand-picked values and on random float32 bits.
func TestMXScaleByteRoundUpBits(t *testing.T) {
	for _, tc := range []struct {
		amax        float64
		exact, bits uint8
	}{
		{6 * 0x1p-127, 0, 1}, // quotient exactly 2^-127: subnormal
		{7 * 0x1p-127, 1, 1}, // 7/6*2^-127: both 1
		{6 * 0x1p-126, 1, 1}, // quotient exactly 2^-126: normal
		{0x1p-149, 0, 0},     // quotient rounds to 0
		{3 * 0x1p-149, 0, 0}, // 2^-150: a tie, to even (0)
		{4 * 0x1p-149, 0, 1}, // rounds up to 2^-149
		{1, 125, 125},        // 1/6 -> 2^-2
		{6, 127, 127},
		{6.0000005, 128, 128},
	} {
		a := math.Float32bits(float32(tc.amax))
		if e, b := golden.MXScaleByte(a, golden.ScaleRceil), golden.MXScaleByteRoundUpBits(a); e != tc.exact || b != tc.bits {
			t.Errorf("amax %g: exact %d bits %d, want %d %d", tc.amax, e, b, tc.exact, tc.bits)
		}
	}
	r := rand.New(rand.NewPCG(24, 2))
	for range 1 << 20 {
		a := r.Uint32N(0x7f800000)
		if a < 1<<24 && r.IntN(2) == 0 {
			a >>= 6 // more subnormal and tiny amax
		}
		e, b := golden.MXScaleByte(a, golden.ScaleRceil), golden.MXScaleByteRoundUpBits(a)
		q := math.Float32frombits(a) / 6
		sub := q != 0 && math.Float32bits(q) < 0x00800000
		if e != b && !(sub && e == 0 && b == 1 && float64(math.Float32frombits(a)) <= 6*0x1p-127) {
			t.Fatalf("amax bits %#x: exact %d, bit trick %d", a, e, b)
		}
	}
}

// TestMXFP4QuantizeRoundUpBits: the alternative differs from the golden
// only in blocks whose golden byte is 0, where it has byte 1 and the codes
// of x*2^126 (a naive float64 rounding at that scale); elsewhere it is the
// golden bit for bit.
func TestMXFP4QuantizeRoundUpBits(t *testing.T) {
	const rows, k = 64, 256
	r := rand.New(rand.NewPCG(24, 3))
	x := make([]float32, rows*k)
	for i := range x {
		e := -134 + (i/golden.MXBlock)%20 // blocks from 2^-134 to 2^-115
		x[i] = float32(math.Ldexp(r.NormFloat64(), e))
	}
	n := rows * k
	gc, gs := make([]uint8, n/2), make([]uint8, n/golden.MXBlock)
	ac, as := make([]uint8, n/2), make([]uint8, n/golden.MXBlock)
	if err := golden.MXFP4Quantize(gc, gs, x, rows, k, golden.ScaleRceil); err != nil {
		t.Fatal(err)
	}
	if err := golden.MXFP4QuantizeRoundUpBits(ac, as, x, rows, k); err != nil {
		t.Fatal(err)
	}
	differ := 0
	for blk := range gs {
		c0, c1 := blk*golden.MXBlock/2, (blk+1)*golden.MXBlock/2
		if gs[blk] == as[blk] {
			if !slices.Equal(gc[c0:c1], ac[c0:c1]) {
				t.Fatalf("block %d: same byte %d, different codes", blk, gs[blk])
			}
			continue
		}
		differ++
		if gs[blk] != 0 || as[blk] != 1 {
			t.Fatalf("block %d: bytes %d and %d", blk, gs[blk], as[blk])
		}
		for i := range golden.MXBlock {
			v := float64(x[blk*golden.MXBlock+i]) * 0x1p126
			want := dtype.E2M1FromF64(v)
			got := ac[c0+i/2] >> (4 * (i % 2)) & 15
			if got != want && !(got&7 == 0 && want&7 == 0) {
				t.Fatalf("block %d element %d: x*2^126 = %g, code %d, want %d", blk, i, v, got, want)
			}
		}
	}
	t.Logf("%d of %d blocks take byte 1 instead of 0", differ, len(gs))
	if differ == 0 {
		t.Fatal("no block reached the subnormal quotients")
	}
}
