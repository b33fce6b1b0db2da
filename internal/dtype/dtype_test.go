package dtype

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/goldset/goldset/npy"
)

func TestTable(t *testing.T) {
	tests := []struct {
		d                 DType
		name              string
		descr             npy.DType
		size, elems, prec int
		isFloat           bool
		minNormal, maxFin float64
	}{
		{Float16, "float16", "<f2", 2, 1, 11, true, 0x1p-14, 65504},
		{BFloat16, "bfloat16", "<u2", 2, 1, 8, true, 0x1p-126, 3.3895313892515355e38},
		{Float32, "float32", "<f4", 4, 1, 24, true, 0x1p-126, 3.4028234663852886e38},
		{Float64, "float64", "<f8", 8, 1, 53, true, 0x1p-1022, math.MaxFloat64},
		{Int32, "int32", "<i4", 4, 1, 0, false, 0, 2147483647},
		{Int64, "int64", "<i8", 8, 1, 0, false, 0, 9223372036854774784},
		{Uint8, "uint8", "|u1", 1, 1, 0, false, 0, 255},
		{Float8E4M3FN, "float8_e4m3fn", "|u1", 1, 1, 4, true, 0.015625, 448},
		{Float4E2M1x2, "float4_e2m1fn_x2", "|u1", 1, 2, 2, true, 1, 6},
		{Float8E8M0, "float8_e8m0fnu", "|u1", 1, 1, 1, true, 5.877471754111438e-39, 1.7014118346046923e38},
	}
	if len(tests) != len(All()) {
		t.Fatalf("%d rows tested, table has %d", len(tests), len(All()))
	}
	for i, tt := range tests {
		d := tt.d
		if All()[i] != d {
			t.Errorf("All()[%d] = %v, want %v", i, All()[i], d)
		}
		if d.Name() != tt.name || d.String() != tt.name || d.Descr() != tt.descr || d.ItemSize() != tt.size ||
			d.ElemsPerItem() != tt.elems || d.Precision() != tt.prec || d.IsFloat() != tt.isFloat ||
			d.SmallestNormal() != tt.minNormal || d.MaxFinite() != tt.maxFin {
			t.Errorf("%v: got {%q %q %d %d %d %v %g %g}, want %+v", d, d.Name(), d.Descr(), d.ItemSize(), d.ElemsPerItem(),
				d.Precision(), d.IsFloat(), d.SmallestNormal(), d.MaxFinite(), tt)
		}
		if p, err := Parse(tt.name); p != d || err != nil {
			t.Errorf("Parse(%q) = %v, %v", tt.name, p, err)
		}
		if d.IsFloat() {
			// MaxFinite and SmallestNormal are values of the format: they
			// round to themselves, and so does the next power of two down.
			for _, v := range []float64{d.MaxFinite(), d.SmallestNormal()} {
				if w := d.Widen(d.Round(v)); w != v {
					t.Errorf("%v: %g rounds to %g", d, v, w)
				}
			}
		}
	}
	var zero DType
	if zero.Valid() || zero.Name() != "DType(0)" || zero.ItemSize() != 0 || zero.Round(1) != 0 || !math.IsNaN(zero.Widen(0)) {
		t.Errorf("zero DType is not invalid: %v %q", zero.Valid(), zero.Name())
	}
}

func TestParseErrors(t *testing.T) {
	for _, s := range []string{"", "fp16", "Float16", "float4_e2m1x2", "float4_e2m1fn", "float8_e8m0", "uint16", "bool", "float16 "} {
		d, err := Parse(s)
		if d != 0 || !errors.Is(err, ErrUnknown) {
			t.Errorf("Parse(%q) = %v, %v; want ErrUnknown", s, d, err)
		}
	}
}

func TestFromDescr(t *testing.T) {
	tests := []struct {
		descr string
		want  DType
	}{
		{"<f2", Float16}, {"=f2", Float16}, {"<u2", BFloat16}, {"<f4", Float32}, {"<f8", Float64},
		{"<i4", Int32}, {"<i8", Int64}, {"|u1", Uint8}, {"<u1", Uint8},
	}
	for _, tt := range tests {
		if d, err := FromDescr(tt.descr); d != tt.want || err != nil {
			t.Errorf("FromDescr(%q) = %v, %v; want %v", tt.descr, d, err, tt.want)
		}
	}
	for _, s := range []string{"", ">f4", "|b1", "<c8", "|f2"} {
		if d, err := FromDescr(s); d != 0 || !errors.Is(err, ErrUnknown) {
			t.Errorf("FromDescr(%q) = %v, %v; want ErrUnknown", s, d, err)
		}
	}
}

// TestByteCodesRoundTrip: every code of every byte type widens to the hand
// table's value and rounds back to itself (NaN codes to the canonical NaN).
func TestByteCodesRoundTrip(t *testing.T) {
	for _, d := range []DType{Float8E4M3FN, Float4E2M1x2, Float8E8M0, Uint8} {
		for c := range numCodes(d) {
			hv := handValue(d, c)
			if w := d.Widen(uint64(c)); !sameValue(w, hv) {
				t.Errorf("%v: Widen(%#02x) = %v, hand table %v", d, c, w, hv)
			}
			want := uint64(c)
			if math.IsNaN(hv) {
				want = map[DType]uint64{Float8E4M3FN: 0x7f, Float8E8M0: 0xff}[d]
			}
			if r := d.Round(hv); r != want {
				t.Errorf("%v: Round(%v) = %#02x, want %#02x", d, hv, r, want)
			}
		}
	}
}

// TestHalfExhaustive checks fp16 and bf16 over all 65536 codes against npy
// (the reference): widening, the round trip, and the rounding of each
// midpoint between neighbours and of its float32 neighbours, through npy's
// separate float32 path (F16FromF32, BF16FromF32).
func TestHalfExhaustive(t *testing.T) {
	for _, h := range []struct {
		d      DType
		widen  func(uint16) float64
		from32 func(float32) uint16
	}{
		{Float16, npy.F16ToF64, npy.F16FromF32},
		{BFloat16, npy.BF16ToF64, npy.BF16FromF32},
	} {
		d := h.d
		for c := range 1 << 16 {
			w := d.Widen(uint64(c))
			if ref := h.widen(uint16(c)); math.Float64bits(w) != math.Float64bits(ref) {
				t.Fatalf("%v: Widen(%#04x) = %v, npy %v", d, c, w, ref)
			}
			if math.IsNaN(w) {
				if r := d.Round(w); !math.IsNaN(d.Widen(r)) {
					t.Fatalf("%v: NaN %#04x rounds to %#04x", d, c, r)
				}
				continue
			}
			if r := d.Round(w); r != uint64(c) {
				t.Fatalf("%v: Round(Widen(%#04x)) = %#04x", d, c, r)
			}
			if c&0x7fff >= 0x7c00 && d == Float16 || c&0x7fff >= 0x7f80 && d == BFloat16 {
				continue // Inf: no next value
			}
			next := d.Widen(uint64(c + 1)) // same sign, one code up in magnitude
			mid := w + (next-w)/2
			for _, x := range []float32{float32(mid), math.Nextafter32(float32(mid), 0), math.Nextafter32(float32(mid), float32(math.Inf(1)))} {
				if float64(float32(mid)) != mid {
					t.Fatalf("%v: midpoint %v not float32-exact", d, mid)
				}
				if r, ref := d.Round(float64(x)), h.from32(x); r != uint64(ref) {
					t.Fatalf("%v: Round(%v) = %#04x, npy float32 path %#04x", d, x, r, ref)
				}
			}
		}
	}
}

// TestFloat32 checks float32 against Go's conversion on midpoints and NaN
// payloads.
func TestFloat32(t *testing.T) {
	for _, x := range []float64{1, 1 + 0x1p-24, 1 + 0x1p-24 + 0x1p-50, 1 + 3*0x1p-24, 0x1p-149, 0x1p-150, 0x1.8p-150,
		math.MaxFloat32, 0x1.ffffffp127, 0x1.fffffefp127, -0x1p-150 * 1.0000001, 1e300} {
		if got, want := Float32.Round(x), math.Float32bits(float32(x)); got != uint64(want) {
			t.Errorf("Float32.Round(%v) = %#08x, want %#08x", x, got, want)
		}
	}
	// NaN: quiet, sign and top payload kept; widening keeps a signalling
	// NaN's payload.
	if got := Float32.Round(math.Float64frombits(0xfff0_0000_2000_0001)); got != 0xffc00001 {
		t.Errorf("Float32.Round(-sNaN) = %#08x, want 0xffc00001", got)
	}
	if got := math.Float64bits(Float32.Widen(0x7f800001)); got != 0x7ff0000020000000 {
		t.Errorf("Float32.Widen(sNaN) bits %#016x", got)
	}
}

func TestIntegers(t *testing.T) {
	tests := []struct {
		d    DType
		x    float64
		want uint64
	}{
		{Uint8, 0.5, 0}, {Uint8, 1.5, 2}, {Uint8, 2.5, 2}, {Uint8, 254.5, 254}, {Uint8, 255.5, 255}, {Uint8, 1e9, 255},
		{Uint8, -1, 0}, {Uint8, math.NaN(), 0}, {Uint8, math.Inf(1), 255},
		{Int32, -2.5, 0xfffffffe}, {Int32, -3.5, 0xfffffffc}, {Int32, 2147483647.5, 0x7fffffff}, {Int32, -1e10, 0x80000000},
		{Int32, math.Inf(-1), 0x80000000}, {Int32, math.NaN(), 0},
		{Int64, 0x1p63, math.MaxInt64}, {Int64, -0x1p63, 1 << 63}, {Int64, 0x1p63 - 1024, 1<<63 - 1024}, {Int64, -7.5, uint64(1<<64 - 8)},
		{Int64, math.Inf(1), math.MaxInt64},
	}
	for _, tt := range tests {
		if got := tt.d.Round(tt.x); got != tt.want {
			t.Errorf("%v.Round(%v) = %#x, want %#x", tt.d, tt.x, got, tt.want)
		}
	}
	if Int32.Widen(0xffffffff) != -1 || Int64.Widen(1<<63) != -0x1p63 || Uint8.Widen(0x1ff) != 255 {
		t.Error("integer Widen: sign extension or masking wrong")
	}
}

// TestRoundCases pins the boundaries by hand: ties at midpoints, the
// subnormal boundaries, saturation, and float64 inputs where rounding
// through float32 first would give another result.
func TestRoundCases(t *testing.T) {
	tests := []struct {
		d    DType
		x    float64
		want uint64
		why  string
	}{
		// float8_e4m3fn
		{Float8E4M3FN, 448, 0x7e, "max"},
		{Float8E4M3FN, 464, 0x7e, "midpoint 448|480: tie to even 448"},
		{Float8E4M3FN, 464 + 0x1p-44, 0x7e, "past the midpoint: would be 480, saturates"},
		{Float8E4M3FN, 480, 0x7e, "saturates"},
		{Float8E4M3FN, math.Inf(1), 0x7e, "Inf saturates"},
		{Float8E4M3FN, math.Inf(-1), 0xfe, "-Inf saturates"},
		{Float8E4M3FN, math.NaN(), 0x7f, "NaN"},
		{Float8E4M3FN, math.Copysign(math.NaN(), -1), 0x7f, "-NaN is 0x7f too"},
		{Float8E4M3FN, 432, 0x7e, "midpoint 416|448: tie to even 448 (0x7e)"},
		{Float8E4M3FN, 416 + 16 - 0x1p-40, 0x7d, "just below the midpoint"},
		{Float8E4M3FN, 1.0625, 0x38, "midpoint 1|1.125: tie to even 1"},
		{Float8E4M3FN, 1.0625 + 0x1p-40, 0x39, "past the midpoint (float32 would round it to the tie)"},
		{Float8E4M3FN, 1.1875, 0x3a, "midpoint 1.125|1.25: tie to even 1.25"},
		{Float8E4M3FN, 0x1p-6, 0x08, "smallest normal"},
		{Float8E4M3FN, 0x1p-6 - 0x1p-10, 0x08, "midpoint 7/8|8/8 * 2^-6: tie to even 0x08"},
		{Float8E4M3FN, math.Nextafter(0x1p-6-0x1p-10, 0), 0x07, "below it: largest subnormal"},
		{Float8E4M3FN, 0x1p-9, 0x01, "smallest subnormal"},
		{Float8E4M3FN, 0x1p-10, 0x00, "half the smallest subnormal: tie to 0"},
		{Float8E4M3FN, math.Nextafter(0x1p-10, 1), 0x01, "past it"},
		{Float8E4M3FN, 3 * 0x1p-10, 0x02, "1.5 steps: tie to even 2"},
		{Float8E4M3FN, -0x1p-11, 0x80, "negative underflow keeps the sign"},
		{Float8E4M3FN, math.Copysign(0, -1), 0x80, "-0"},
		{Float8E4M3FN, 0x1p-1074, 0x00, "float64 subnormal"},
		// float4_e2m1fn_x2 (one nibble)
		{Float4E2M1x2, 0.25, 0, "0|0.5: tie to 0"},
		{Float4E2M1x2, math.Nextafter(0.25, 1), 1, "past it"},
		{Float4E2M1x2, 0.75, 2, "0.5|1: tie to even code 2"},
		{Float4E2M1x2, 1.25, 2, "1|1.5: tie to 1"},
		{Float4E2M1x2, 1.75, 4, "1.5|2: tie to 2"},
		{Float4E2M1x2, 2.5, 4, "2|3: tie to 2"},
		{Float4E2M1x2, 3.5, 6, "3|4: tie to 4"},
		{Float4E2M1x2, 5, 6, "4|6: tie to 4"},
		{Float4E2M1x2, 5 + 0x1p-50, 7, "past it (ml_dtypes gives 4 through float32)"},
		{Float4E2M1x2, 6, 7, "max"},
		{Float4E2M1x2, 1e30, 7, "saturates"},
		{Float4E2M1x2, math.Inf(-1), 15, "-Inf saturates to -6"},
		{Float4E2M1x2, -0.1, 8, "negative underflow: -0"},
		{Float4E2M1x2, math.NaN(), 8, "NaN: -0, as ml_dtypes"},
		// float8_e8m0fnu
		{Float8E8M0, 1, 127, "2^0"},
		{Float8E8M0, 1.5, 128, "tie 1|2 goes up"},
		{Float8E8M0, 3, 129, "tie 2|4 goes up (not to the even byte 128)"},
		{Float8E8M0, 3 - 0x1p-51, 128, "below the tie"},
		{Float8E8M0, 0.75, 127, "tie 0.5|1 goes up"},
		{Float8E8M0, 0x1p-127, 0, "min"},
		{Float8E8M0, 0x1p-140, 0, "below min: nearest is 2^-127"},
		{Float8E8M0, 0, 0, "zero: nearest is 2^-127"},
		{Float8E8M0, math.Copysign(0, -1), 0, "-0 as zero"},
		{Float8E8M0, 0x1p127, 254, "max"},
		{Float8E8M0, 0x1.7ffffffffffffp127, 254, "below 1.5 * 2^127"},
		{Float8E8M0, 0x1.8p127, 255, "1.5 * 2^127 would go up to 2^128: NaN"},
		{Float8E8M0, math.Inf(1), 255, "Inf"},
		{Float8E8M0, -1, 255, "negative"},
		{Float8E8M0, math.NaN(), 255, "NaN"},
		// the IEEE types at their edges
		{Float16, 65520, 0x7c00, "fp16 midpoint 65504|65536: tie to even is Inf"},
		{Float16, math.Nextafter(65520, 0), 0x7bff, "below it"},
		{Float16, 0x1p-25, 0x0000, "half the smallest subnormal"},
		{Float16, math.Nextafter(0x1p-25, 1), 0x0001, "past it (float32 would round it to the tie)"},
		{BFloat16, 1 + 0x1p-8 + 0x1p-40, 0x3f81, "past the midpoint of 1|1+2^-7"},
		{BFloat16, 1 + 0x1p-8, 0x3f80, "the midpoint: tie to even"},
		{Float32, 0x1p-150, 0x00000000, "half the smallest subnormal"},
	}
	for _, tt := range tests {
		if got := tt.d.Round(tt.x); got != tt.want {
			t.Errorf("%v.Round(%v) = %#x, want %#x (%s)", tt.d, tt.x, got, tt.want, tt.why)
		}
		if tt.d == Float8E4M3FN || tt.d == Float4E2M1x2 || tt.d == Float8E8M0 {
			if nv := naiveRound(tt.d, tt.x); uint64(nv) != tt.want {
				t.Errorf("naiveRound(%v, %v) = %#x, want %#x (%s)", tt.d, tt.x, nv, tt.want, tt.why)
			}
		}
	}
}

func TestEncodeDecode(t *testing.T) {
	src := []float64{0, -0.3, 1.25, 7, 448, -1e9, 0x1p-8, math.NaN()}
	want := map[DType][]byte{
		Float8E4M3FN: {0x00, 0xaa, 0x3a, 0x4e, 0x7e, 0xfe, 0x02, 0x7f},
		Float4E2M1x2: {0x90, 0x72, 0xf7, 0x80},
		Float8E8M0:   {0x00, 0xff, 0x7f, 0x82, 0x88, 0xff, 0x77, 0xff},
		Uint8:        {0, 0, 1, 7, 0xff, 0, 0, 0},
		Float16:      {0, 0, 0xcd, 0xb4, 0x00, 0x3d, 0x00, 0x47, 0x00, 0x5f, 0x00, 0xfc, 0x00, 0x1c, 0x00, 0x7e},
	}
	for d, w := range want {
		dst := make([]byte, len(w))
		d.Encode(dst, src)
		if string(dst) != string(w) {
			t.Errorf("%v.Encode = % x, want % x", d, dst, w)
		}
		back := make([]float64, len(src))
		d.Decode(back, dst)
		for i, v := range back {
			if c := d.Round(v); (d != Float4E2M1x2 && c != getLE(dst[i*d.ItemSize():(i+1)*d.ItemSize()])) ||
				(d == Float4E2M1x2 && c != uint64(dst[i/2]>>(4*(i%2))&0xf)) {
				t.Errorf("%v: Decode[%d] = %v does not round to its stored bits", d, i, v)
			}
		}
	}
	for _, d := range All() {
		n := 6
		nb, err := d.StorageBytes(int64(n))
		if err != nil {
			t.Fatal(err)
		}
		vals := []float64{1, -2, 3.5, 0, 100, -0.5}
		buf := make([]byte, nb)
		d.Encode(buf, vals)
		got := make([]float64, n)
		d.Decode(got, buf)
		for i := range vals {
			if w := d.Widen(d.Round(vals[i])); !sameValue(got[i], w) {
				t.Errorf("%v: Decode(Encode(%v)) = %v, want %v", d, vals[i], got[i], w)
			}
		}
	}
}

func TestPackE2M1(t *testing.T) {
	codes := []uint8{0x1, 0x2, 0xf, 0x8, 0x7, 0x0}
	packed := make([]byte, 3)
	PackE2M1(packed, codes)
	if string(packed) != "\x21\x8f\x07" {
		t.Errorf("PackE2M1 = % x, want 21 8f 07 (low nibble = even element)", packed)
	}
	back := make([]uint8, 6)
	UnpackE2M1(back, packed)
	if string(back) != string(codes) {
		t.Errorf("UnpackE2M1 = % x, want % x", back, codes)
	}
}

func TestStorageBytes(t *testing.T) {
	tests := []struct {
		d    DType
		n    int64
		want int64
		ok   bool
	}{
		{Float16, 3, 6, true}, {Float4E2M1x2, 64, 32, true}, {Float4E2M1x2, 3, 0, false}, {Float32, -1, 0, false},
		{Float64, math.MaxInt64 / 4, 0, false}, {Uint8, math.MaxInt64, math.MaxInt64, true}, {0, 1, 0, false},
	}
	for _, tt := range tests {
		got, err := tt.d.StorageBytes(tt.n)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("%v.StorageBytes(%d) = %d, %v", tt.d, tt.n, got, err)
		}
	}
}

func TestLengthPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"Encode odd E2M1": func() { Float4E2M1x2.Encode(make([]byte, 1), make([]float64, 3)) },
		"Decode short":    func() { Float16.Decode(make([]float64, 2), make([]byte, 3)) },
		"PackE2M1":        func() { PackE2M1(make([]byte, 2), make([]uint8, 3)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// TestE4M3FromF32 compares E4M3FromF32 with E4M3FromF64 on every float32
// whose low 12 bits are one of a few patterns (bits 12..31 exhaustive: all
// signs, exponents and the round bits of both the normal and the
// subnormal path, with and without sticky bits), and on a million random
// encodings.
func TestE4M3FromF32(t *testing.T) {
	check := func(b uint32) {
		x := math.Float32frombits(b)
		if got, want := E4M3FromF32(x), E4M3FromF64(float64(x)); got != want {
			t.Fatalf("E4M3FromF32(%#08x = %g) = %#02x, E4M3FromF64 %#02x", b, x, got, want)
		}
	}
	for hi := uint32(0); hi < 1<<20; hi++ {
		for _, lo := range []uint32{0, 1, 0x7ff, 0x800, 0x801, 0xfff} {
			check(hi<<12 | lo)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 1 << 20 {
		check(rng.Uint32())
	}
}
