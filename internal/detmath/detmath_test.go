package detmath

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

func ulpDiff(a, b float64) uint64 {
	ia, ib := int64(math.Float64bits(a)), int64(math.Float64bits(b))
	if ia < 0 {
		ia = math.MinInt64 - ia
	}
	if ib < 0 {
		ib = math.MinInt64 - ib
	}
	if ia > ib {
		return uint64(ia - ib)
	}
	return uint64(ib - ia)
}

func TestExpAgainstMath(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		x := (r.Float64()*2 - 1) * 708 // amd64's math.Exp overflows early above ~709.4
		if i%2 == 0 {
			x = (r.Float64()*2 - 1) * 20
		}
		got, want := Exp(x), math.Exp(x)
		// math.Exp itself is only within ~1 ulp (amd64 assembly), so allow 2 here;
		// TestExpHighPrecision holds Exp to 1 ulp of an exact reference.
		if d := ulpDiff(got, want); d > 2 {
			t.Fatalf("Exp(%v) = %v, math.Exp = %v (%d ulp)", x, got, want, d)
		}
	}
}

func TestLogAgainstMath(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 200000; i++ {
		x := math.Ldexp(r.Float64()+0.5, int(r.IntN(200))-100)
		got, want := Log(x), math.Log(x)
		if d := ulpDiff(got, want); d > 1 {
			t.Fatalf("Log(%v) = %v, math.Log = %v (%d ulp)", x, got, want, d)
		}
	}
}

func TestSpecialValues(t *testing.T) {
	cases := []struct {
		name      string
		got, want float64
	}{
		{"exp(0)", Exp(0), 1},
		{"exp(-inf)", Exp(math.Inf(-1)), 0},
		{"exp(+inf)", Exp(math.Inf(1)), math.Inf(1)},
		{"exp(710)", Exp(710), math.Inf(1)},
		{"exp(-746)", Exp(-746), 0},
		{"log(1)", Log(1), 0},
		{"log(e)", Log(math.E), 1},
		{"log(0)", Log(0), math.Inf(-1)},
		{"log(+inf)", Log(math.Inf(1)), math.Inf(1)},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if d := ulpDiff(Exp(1), math.E); d > 1 {
		t.Errorf("Exp(1) is %d ulp from e", d)
	}
	if v := Exp(709.7); math.IsInf(v, 0) || v < 1.6e308 {
		t.Errorf("Exp(709.7) = %v, want finite ~1.65e308", v)
	}
	if !math.IsNaN(Exp(math.NaN())) || !math.IsNaN(Log(-1)) || !math.IsNaN(Log(math.NaN())) {
		t.Error("NaN handling")
	}
	// Subnormal results of Exp must be produced, not flushed.
	if v := Exp(-740); v == 0 || v >= 0x1p-1022 {
		t.Errorf("Exp(-740) = %v, want a subnormal", v)
	}
}

// TestPinnedBits pins exact outputs: any change in the algorithm, or an
// architecture that computes a different bit, fails here.
func TestPinnedBits(t *testing.T) {
	var h uint64 = 14695981039346656037
	mix := func(v float64) {
		h ^= math.Float64bits(v)
		h *= 1099511628211
	}
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 100000; i++ {
		mix(Exp((r.Float64()*2 - 1) * 50))
		mix(Log(math.Ldexp(r.Float64()+0.5, int(r.IntN(60))-30)))
	}
	const pinned = 0xc68d27d0054bb638
	if h != pinned {
		t.Fatalf("pinned hash = %#x, want %#x", h, uint64(pinned))
	}
}

// bigExp computes e**x to 256 bits by Taylor series after halving x
// until it is small, then squaring back: slow, simple and independent.
func bigExp(x float64) float64 {
	const prec = 256
	v := new(big.Float).SetPrec(prec).SetFloat64(x)
	halvings := 0
	for v.MantExp(nil) > -8 {
		v.Quo(v, big.NewFloat(2).SetPrec(prec))
		halvings++
	}
	sum := new(big.Float).SetPrec(prec).SetFloat64(1)
	term := new(big.Float).SetPrec(prec).SetFloat64(1)
	for n := 1; n < 60; n++ {
		term.Mul(term, v)
		term.Quo(term, new(big.Float).SetPrec(prec).SetInt64(int64(n)))
		sum.Add(sum, term)
	}
	for ; halvings > 0; halvings-- {
		sum.Mul(sum, sum)
	}
	f, _ := sum.Float64()
	return f
}

func TestExpHighPrecision(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 3000; i++ {
		x := (r.Float64()*2 - 1) * 700
		if d := ulpDiff(Exp(x), bigExp(x)); d > 1 {
			t.Fatalf("Exp(%v) = %v, exact %v (%d ulp)", x, Exp(x), bigExp(x), d)
		}
	}
}

// TestScale2MatchesLdexp: the exponent-field shortcut has math.Ldexp's bits
// for every k Exp produces and y across Exp's range (both ends included).
func TestScale2MatchesLdexp(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	ys := []float64{0.5, math.Nextafter(1, 0), 1, math.Sqrt2 / 2, math.Sqrt2, math.Nextafter(2, 0)}
	for range 2000 {
		ys = append(ys, 0.5+1.5*r.Float64())
	}
	for _, y := range ys {
		for k := -1100; k <= 1100; k++ {
			if got, want := scale2(y, k), math.Ldexp(y, k); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("scale2(%v, %d) = %v, math.Ldexp = %v", y, k, got, want)
			}
		}
	}
}

// BenchmarkExp: independent arguments, as softmax rows and attention
// scores call it.
func BenchmarkExp(b *testing.B) {
	xs := make([]float64, 4096)
	ys := make([]float64, len(xs))
	r := rand.New(rand.NewPCG(13, 14))
	for i := range xs {
		xs[i] = -20 * r.Float64()
	}
	b.SetBytes(int64(8 * len(xs)))
	b.ReportAllocs()
	for b.Loop() {
		for i, x := range xs {
			ys[i] = Exp(x)
		}
	}
}
