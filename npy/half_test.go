package npy

import (
	"flag"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

var exhaustive = flag.Bool("exhaustive", false, "also check all 2^32 float32 bit patterns against the reference (about 10-30 s)")

// Reference converters: the obvious float64 arithmetic (Frexp, RoundToEven,
// Ldexp), independent of the bit manipulation in half.go.

func refF16FromF64(x float64) uint16 {
	bits := math.Float64bits(x)
	sign := uint16(bits>>48) & 0x8000
	a := math.Abs(x)
	switch {
	case a != a:
		return sign | 0x7e00 | uint16(bits>>42)&0x1ff
	case a >= 65520:
		return sign | 0x7c00
	case a < 0x1p-14:
		return sign | uint16(math.RoundToEven(a*0x1p24))
	}
	f, e := math.Frexp(a) // a = f * 2**e, f in [0.5, 1)
	q := int(math.RoundToEven(f*2048)) - 1024
	exp := e - 1 + 15
	if q == 1024 {
		q = 0
		exp++
	}
	if exp >= 31 {
		return sign | 0x7c00
	}
	return sign | uint16(exp)<<10 | uint16(q)
}

func refBF16FromF64(x float64) uint16 {
	bits := math.Float64bits(x)
	sign := uint16(bits>>48) & 0x8000
	a := math.Abs(x)
	switch {
	case a != a:
		return sign | 0x7fc0 | uint16(bits>>45)&0x3f
	case a >= 0x1.ffp127:
		return sign | 0x7f80
	case a < 0x1p-126:
		return sign | uint16(math.RoundToEven(a*0x1p133))
	}
	f, e := math.Frexp(a)
	q := int(math.RoundToEven(f*256)) - 128
	exp := e - 1 + 127
	if q == 128 {
		q = 0
		exp++
	}
	if exp >= 255 {
		return sign | 0x7f80
	}
	return sign | uint16(exp)<<7 | uint16(q)
}

func refF16ToF64(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	man := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(man, -24)
	case 31:
		if man != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	}
	return sign * math.Ldexp(1024+man, exp-25)
}

func isNaN16(h uint16) bool  { return h&0x7c00 == 0x7c00 && h&0x3ff != 0 }
func isNaNB16(h uint16) bool { return h&0x7f80 == 0x7f80 && h&0x7f != 0 }

// sameF64 compares bit patterns, so -0 != +0 and NaN payloads count.
func sameF64(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

func TestF16AllPatterns(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		v := F16ToF64(h)
		f := F16ToF32(h)
		if isNaN16(h) {
			// NaN stays NaN with the sign and the payload; narrowing quiets it.
			quiet := h | 0x200
			if !math.IsNaN(v) || !math.IsNaN(float64(f)) || math.Signbit(v) != (h&0x8000 != 0) {
				t.Fatalf("%#04x: widened to %v / %v", h, v, f)
			}
			if got := F16FromF64(v); got != quiet {
				t.Fatalf("%#04x: NaN round trip via float64 gives %#04x, want %#04x", h, got, quiet)
			}
			if got := F16FromF32(f); got != quiet {
				t.Fatalf("%#04x: NaN round trip via float32 gives %#04x, want %#04x", h, got, quiet)
			}
			if got := uint16(math.Float32bits(f)>>13) & 0x3ff; got != h&0x3ff {
				t.Fatalf("%#04x: float32 payload %#x", h, got)
			}
			continue
		}
		if ref := refF16ToF64(h); !sameF64(v, ref) {
			t.Fatalf("F16ToF64(%#04x) = %v, want %v", h, v, ref)
		}
		if !sameF64(float64(f), v) {
			t.Fatalf("F16ToF32(%#04x) = %v, want %v", h, f, v)
		}
		if got := F16FromF64(v); got != h {
			t.Fatalf("F16FromF64(F16ToF64(%#04x)) = %#04x", h, got)
		}
		if got := F16FromF32(f); got != h {
			t.Fatalf("F16FromF32(F16ToF32(%#04x)) = %#04x", h, got)
		}
	}
}

func TestBF16AllPatterns(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		f := BF16ToF32(h)
		v := BF16ToF64(h)
		if want := uint32(h) << 16; math.Float32bits(f) != want {
			t.Fatalf("BF16ToF32(%#04x) bits %#08x", h, math.Float32bits(f))
		}
		if isNaNB16(h) {
			quiet := h | 0x40
			if !math.IsNaN(v) || math.Signbit(v) != (h&0x8000 != 0) || uint16(math.Float64bits(v)>>45)&0x7f != h&0x7f {
				t.Fatalf("BF16ToF64(%#04x) = %#x", h, math.Float64bits(v))
			}
			if got := BF16FromF32(f); got != quiet {
				t.Fatalf("%#04x: NaN round trip via float32 gives %#04x", h, got)
			}
			if got := BF16FromF64(v); got != quiet {
				t.Fatalf("%#04x: NaN round trip via float64 gives %#04x", h, got)
			}
			continue
		}
		if !sameF64(v, float64(f)) {
			t.Fatalf("BF16ToF64(%#04x) = %v, want %v", h, v, f)
		}
		if got := BF16FromF32(f); got != h {
			t.Fatalf("BF16FromF32(BF16ToF32(%#04x)) = %#04x", h, got)
		}
		if got := BF16FromF64(v); got != h {
			t.Fatalf("BF16FromF64(BF16ToF64(%#04x)) = %#04x", h, got)
		}
		if got := refBF16FromF64(v); got != h {
			t.Fatalf("refBF16FromF64(%#04x) = %#04x", h, got)
		}
	}
}

func TestF16Rounding(t *testing.T) {
	tiny := 0x1p-40 // far below a float16 ulp, representable next to 1
	tests := []struct {
		name string
		x    float64
		want uint16
	}{
		{"one", 1, 0x3c00},
		{"minus two", -2, 0xc000},
		{"+0", 0, 0x0000},
		{"-0", math.Copysign(0, -1), 0x8000},
		{"halfway 1+2^-11 to even (down)", 1 + 0x1p-11, 0x3c00},
		{"halfway 1+3*2^-11 to even (up)", 1 + 3*0x1p-11, 0x3c02},
		{"just above halfway", 1 + 0x1p-11 + 0x1p-23, 0x3c01},
		{"just below halfway", 1 + 0x1p-11 - 0x1p-24, 0x3c00},
		{"negative halfway to even", -(1 + 3*0x1p-11), 0xbc02},
		{"max finite", 65504, 0x7bff},
		{"below overflow threshold", 65519.99609375, 0x7bff},
		{"overflow threshold 65520 ties to Inf", 65520, 0x7c00},
		{"just below 65520 (float64)", math.Nextafter(65520, 0), 0x7bff},
		{"-65520", -65520, 0xfc00},
		{"2^16", 65536, 0x7c00},
		{"MaxFloat64", math.MaxFloat64, 0x7c00},
		{"+Inf", math.Inf(1), 0x7c00},
		{"-Inf", math.Inf(-1), 0xfc00},
		{"min normal 2^-14", 0x1p-14, 0x0400},
		{"max subnormal", 1023 * 0x1p-24, 0x03ff},
		{"halfway max subnormal/min normal ties up to even", 0x1p-14 - 0x1p-25, 0x0400},
		{"just below that halfway", 0x1p-14 - 0x1p-25 - 0x1p-40, 0x03ff},
		{"min subnormal 2^-24", 0x1p-24, 0x0001},
		{"2^-25 ties to even zero", 0x1p-25, 0x0000},
		{"just above 2^-25", 0x1p-25 + 0x1p-50, 0x0001},
		{"just below 2^-25", 0x1p-25 - 0x1p-50, 0x0000},
		{"3*2^-25 ties to even 2", 3 * 0x1p-25, 0x0002},
		{"5*2^-25 ties to even 2", 5 * 0x1p-25, 0x0002},
		{"-2^-25 keeps sign", -0x1p-25, 0x8000},
		{"smallest float64", math.SmallestNonzeroFloat64, 0x0000},
		{"smallest float32", 0x1p-149, 0x0000},
		// Exactly-once rounding: float32(x) is the halfway point 1+2^-11, so a
		// float64 -> float32 -> float16 chain would round down to 0x3c00.
		{"no double rounding", 1 + 0x1p-11 + tiny, 0x3c01},
	}
	for _, tc := range tests {
		if got := F16FromF64(tc.x); got != tc.want {
			t.Errorf("%s: F16FromF64(%v) = %#04x, want %#04x", tc.name, tc.x, got, tc.want)
		}
		if got := refF16FromF64(tc.x); got != tc.want {
			t.Errorf("%s: reference(%v) = %#04x, want %#04x", tc.name, tc.x, got, tc.want)
		}
		if x32 := float32(tc.x); float64(x32) == tc.x || math.IsInf(tc.x, 0) {
			if got := F16FromF32(x32); got != tc.want {
				t.Errorf("%s: F16FromF32(%v) = %#04x, want %#04x", tc.name, x32, got, tc.want)
			}
		}
	}
	if got := F16FromF32(float32(1 + 0x1p-11 + tiny)); got != 0x3c00 {
		t.Errorf("F16FromF32 of the rounded float32 halfway point = %#04x, want 0x3c00", got)
	}
}

func TestBF16Rounding(t *testing.T) {
	tests := []struct {
		name string
		x    float64
		want uint16
	}{
		{"one", 1, 0x3f80},
		{"-0", math.Copysign(0, -1), 0x8000},
		{"halfway 1+2^-8 to even (down)", 1 + 0x1p-8, 0x3f80},
		{"halfway 1+3*2^-8 to even (up)", 1 + 3*0x1p-8, 0x3f82},
		{"just above halfway", 1 + 0x1p-8 + 0x1p-23, 0x3f81},
		{"just below halfway", 1 + 0x1p-8 - 0x1p-23, 0x3f80},
		{"max finite", 0x1.fep127, 0x7f7f},
		{"overflow threshold ties to Inf", 0x1.ffp127, 0x7f80},
		{"just below overflow threshold", 0x1.ffp127 - 0x1p104, 0x7f7f},
		{"MaxFloat32", math.MaxFloat32, 0x7f80},
		{"-MaxFloat32", -math.MaxFloat32, 0xff80},
		{"+Inf", math.Inf(1), 0x7f80},
		{"min normal", 0x1p-126, 0x0080},
		{"halfway max subnormal/min normal ties up", 0x1p-126 - 0x1p-134, 0x0080},
		{"min subnormal 2^-133", 0x1p-133, 0x0001},
		{"2^-134 ties to even zero", 0x1p-134, 0x0000},
		{"just above 2^-134", 0x1p-134 + 0x1p-149, 0x0001},
		{"3*2^-134 ties to even 2", 3 * 0x1p-134, 0x0002},
		{"smallest float32 subnormal", 0x1p-149, 0x0000},
		{"-smallest float32 subnormal", -0x1p-149, 0x8000},
		{"no double rounding", 1 + 0x1p-8 + 0x1p-40, 0x3f81},
	}
	for _, tc := range tests {
		if got := BF16FromF64(tc.x); got != tc.want {
			t.Errorf("%s: BF16FromF64(%v) = %#04x, want %#04x", tc.name, tc.x, got, tc.want)
		}
		if got := refBF16FromF64(tc.x); got != tc.want {
			t.Errorf("%s: reference(%v) = %#04x, want %#04x", tc.name, tc.x, got, tc.want)
		}
		if x32 := float32(tc.x); float64(x32) == tc.x || math.IsInf(tc.x, 0) {
			if got := BF16FromF32(x32); got != tc.want {
				t.Errorf("%s: BF16FromF32(%v) = %#04x, want %#04x", tc.name, x32, got, tc.want)
			}
		}
	}
}

// checkF32 compares the fast float32 paths for the bit pattern b with the
// float64 reference. NaNs are compared by their bits computed directly, not
// through a hardware float32 -> float64 conversion.
func checkF32(b uint32) (f16, want16, bf16, wantBF16 uint16) {
	x := math.Float32frombits(b)
	f16, bf16 = F16FromF32(x), BF16FromF32(x)
	if b&0x7fffffff > 0x7f800000 {
		sign := uint16(b>>16) & 0x8000
		return f16, sign | 0x7e00 | uint16(b>>13)&0x1ff, bf16, uint16(b>>16) | 0x40
	}
	return f16, refF16FromF64(float64(x)), bf16, refBF16FromF64(float64(x))
}

func TestF32RandomAgainstReference(t *testing.T) {
	n := 1 << 22
	if testing.Short() {
		n = 1 << 18
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		b := rng.Uint32()
		if i%2 == 1 { // half the samples in and near the float16 range
			b = b&0x807fffff | (0x30+rng.Uint32N(0x20))<<23
		}
		if f16, want, bf, wantBF := checkF32(b); f16 != want || bf != wantBF {
			t.Fatalf("float32 %#08x: f16 %#04x want %#04x, bf16 %#04x want %#04x", b, f16, want, bf, wantBF)
		}
		x := float64(math.Float32frombits(b))
		if b&0x7fffffff <= 0x7f800000 && (F16FromF64(x) != refF16FromF64(x) || BF16FromF64(x) != refBF16FromF64(x)) {
			t.Fatalf("float64 path differs on float32 %#08x", b)
		}
	}
}

func TestF64RandomAgainstReference(t *testing.T) {
	n := 1 << 22
	if testing.Short() {
		n = 1 << 18
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range n {
		b := rng.Uint64()
		switch i % 3 {
		case 1: // float16 range and its neighbourhood
			b = b&0x800fffffffffffff | uint64(1023-30+rng.IntN(50))<<52
		case 2: // bfloat16 subnormals and overflow
			b = b&0x800fffffffffffff | uint64(1023-140+rng.IntN(20)+rng.IntN(2)*260)<<52
		}
		x := math.Float64frombits(b)
		if got, want := F16FromF64(x), refF16FromF64(x); got != want {
			t.Fatalf("F16FromF64(%#016x) = %#04x, want %#04x", b, got, want)
		}
		if got, want := BF16FromF64(x), refBF16FromF64(x); got != want {
			t.Fatalf("BF16FromF64(%#016x) = %#04x, want %#04x", b, got, want)
		}
	}
}

// TestF32AllPatterns checks every float32 bit pattern. It takes tens of
// seconds, so it runs only with -exhaustive.
func TestF32AllPatterns(t *testing.T) {
	if !*exhaustive {
		t.Skip("all 2^32 float32 patterns: run with -exhaustive")
	}
	const units = 1 << 12 // fixed work units: any worker count checks the same patterns
	var mu sync.Mutex
	var bad []uint32
	var wg sync.WaitGroup
	next := make(chan uint32, units)
	for u := range uint32(units) {
		next <- u
	}
	close(next)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := make([]float32, 1<<20)
			bulk16, bulkBF := make([]uint16, len(src)), make([]uint16, len(src))
			for u := range next {
				for lo := range src {
					src[lo] = math.Float32frombits(u<<20 | uint32(lo))
				}
				F16sFromF32s(bulk16, src)
				BF16sFromF32s(bulkBF, src)
				for lo := range src {
					b := u<<20 | uint32(lo)
					f16, want, bf, wantBF := checkF32(b)
					if f16 != want || bf != wantBF || bulk16[lo] != want || bulkBF[lo] != wantBF {
						mu.Lock()
						bad = append(bad, b)
						mu.Unlock()
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, b := range bad {
		f16, want, bf, wantBF := checkF32(b)
		t.Errorf("float32 %#08x: f16 %#04x want %#04x, bf16 %#04x want %#04x (scalar or bulk)", b, f16, want, bf, wantBF)
	}
}

func TestBulkConverters(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	src32 := make([]float32, 1000)
	src64 := make([]float64, len(src32))
	for i := range src32 {
		src32[i] = math.Float32frombits(rng.Uint32())
		src64[i] = math.Float64frombits(rng.Uint64())
	}
	h := make([]uint16, len(src32)+3) // longer dst is allowed; the tail stays untouched
	h[len(src32)] = 0xabcd
	F16sFromF32s(h, src32)
	for i, v := range src32 {
		if h[i] != F16FromF32(v) {
			t.Fatalf("F16sFromF32s[%d]", i)
		}
	}
	BF16sFromF32s(h, src32)
	for i, v := range src32 {
		if h[i] != BF16FromF32(v) {
			t.Fatalf("BF16sFromF32s[%d]", i)
		}
	}
	F16sFromF64s(h, src64)
	for i, v := range src64 {
		if h[i] != F16FromF64(v) {
			t.Fatalf("F16sFromF64s[%d]", i)
		}
	}
	BF16sFromF64s(h, src64)
	for i, v := range src64 {
		if h[i] != BF16FromF64(v) {
			t.Fatalf("BF16sFromF64s[%d]", i)
		}
	}
	if h[len(src32)] != 0xabcd {
		t.Fatal("bulk converter wrote past len(src)")
	}
	// Every float16 value as float32, and the float32 values one ulp either
	// side: all rounding boundaries of the hand-inlined bulk loop.
	var edges []float32
	for i := range 1 << 16 {
		f := F16ToF32(uint16(i))
		b := math.Float32bits(f)
		edges = append(edges, f, math.Float32frombits(b+1), math.Float32frombits(b-1))
		if i < 0x7c00 { // halfway to the next float16 and its neighbours
			mid := math.Float32bits((f + F16ToF32(uint16(i+1))) / 2)
			edges = append(edges, math.Float32frombits(mid), math.Float32frombits(mid+1), math.Float32frombits(mid-1))
		}
	}
	e16 := make([]uint16, len(edges))
	F16sFromF32s(e16, edges)
	for i, v := range edges {
		b := math.Float32bits(v)
		want := F16FromF32(v)
		if b&0x7fffffff <= 0x7f800000 && want != refF16FromF64(float64(v)) {
			t.Fatalf("F16FromF32(%#08x) = %#04x, reference %#04x", b, want, refF16FromF64(float64(v)))
		}
		if e16[i] != want {
			t.Fatalf("F16sFromF32s(%#08x) = %#04x, scalar %#04x", b, e16[i], want)
		}
	}
	all := make([]uint16, 1<<16)
	for i := range all {
		all[i] = uint16(i)
	}
	f := make([]float32, len(all))
	F16sToF32s(f, all)
	for i, x := range f {
		if math.Float32bits(x) != math.Float32bits(F16ToF32(uint16(i))) {
			t.Fatalf("F16sToF32s[%#04x]", i)
		}
	}
	BF16sToF32s(f, all)
	for i, x := range f {
		if math.Float32bits(x) != math.Float32bits(BF16ToF32(uint16(i))) {
			t.Fatalf("BF16sToF32s[%#04x]", i)
		}
	}
	for _, fn := range []func(){
		func() { F16sFromF32s(make([]uint16, 1), make([]float32, 2)) },
		func() { BF16sFromF32s(make([]uint16, 1), make([]float32, 2)) },
		func() { F16sToF32s(make([]float32, 1), make([]uint16, 2)) },
	} {
		if !panics(fn) {
			t.Error("short dst did not panic")
		}
	}
}

func panics(f func()) (p bool) {
	defer func() { p = recover() != nil }()
	f()
	return false
}

// TestF16sToF32sVectorPath checks the F16C path (where the CPU has it)
// against the scalar conversion on shuffled bit patterns at unaligned
// offsets and lengths, so Inf/NaN groups fall back mid-slice, and that the
// vector path really runs on finite data.
func TestF16sToF32sVectorPath(t *testing.T) {
	all := make([]uint16, 1<<16)
	for i := range all {
		all[i] = uint16(i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	dst := make([]float32, len(all))
	for _, c := range []struct{ off, n int }{{0, 1 << 16}, {1, 15}, {3, 16}, {5, 17}, {7, 1000}, {11, 40000}} {
		clear(dst)
		F16sToF32s(dst[c.off:c.off+c.n], all[c.off:c.off+c.n])
		for i := c.off; i < c.off+c.n; i++ {
			if math.Float32bits(dst[i]) != math.Float32bits(F16ToF32(all[i])) {
				t.Fatalf("off %d n %d: F16sToF32s(%#04x) = %#08x, want %#08x", c.off, c.n, all[i], math.Float32bits(dst[i]), math.Float32bits(F16ToF32(all[i])))
			}
		}
	}
	for _, c := range []struct{ off, n int }{{0, 1 << 16}, {3, 17}, {9, 40000}} {
		clear(dst)
		BF16sToF32s(dst[c.off:c.off+c.n], all[c.off:c.off+c.n])
		for i := c.off; i < c.off+c.n; i++ {
			if math.Float32bits(dst[i]) != math.Float32bits(BF16ToF32(all[i])) {
				t.Fatalf("off %d n %d: BF16sToF32s(%#04x) = %#08x", c.off, c.n, all[i], math.Float32bits(dst[i]))
			}
		}
	}
	finite := make([]uint16, 100)
	for i := range finite {
		finite[i] = uint16(i * 613 % 0x7c00)
	}
	if k := widenF16(dst, finite); hasF16CPath() && k != 96 {
		t.Errorf("vector path widened %d of 100 finite values, want 96", k)
	}
}
