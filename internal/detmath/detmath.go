// Package detmath provides the few transcendental functions goldset needs,
// written so that they return the same bits on every architecture.
//
// The standard library's math.Exp and math.Log use assembly on amd64 (and,
// for Exp, arm64 and s390x), some of it switching to fused multiply-add when
// the CPU has it, so their last bit may differ between machines. Goldens and
// generated inputs must be byte-identical everywhere, so goldset uses these
// pure-Go versions instead: the classic fdlibm algorithms (argument
// reduction plus a minimax polynomial), with every product wrapped in an
// explicit float64 conversion so that no compiler may fuse it into an FMA.
// Accuracy is below one ulp, like fdlibm; regression vectors pin the bits.
package detmath

import "math"

const (
	ln2Hi  = 6.93147180369123816490e-01 // high bits of ln 2 (exact product with small ints)
	ln2Lo  = 1.90821492927058770002e-10 // ln 2 - ln2Hi
	log2e  = 1.44269504088896338700e+00
	expOvf = 7.09782712893383973096e+02  // above this exp overflows
	expUnf = -7.45133219101941108420e+02 // below this exp underflows to 0

	// Remez polynomial for (r*(exp(r)+1)/(exp(r)-1)) on [-ln2/2, ln2/2].
	p1 = 1.66666666666666019037e-01
	p2 = -2.77777777770155933842e-03
	p3 = 6.61375632143793436117e-05
	p4 = -1.65339022054652515390e-06
	p5 = 4.13813679705723846039e-08

	// Polynomial for log(1+f) via s = f/(2+f).
	lg1 = 6.666666666666735130e-01
	lg2 = 3.999999999940941908e-01
	lg3 = 2.857142874366239149e-01
	lg4 = 2.222219843214978396e-01
	lg5 = 1.818357216161805012e-01
	lg6 = 1.531383769920937332e-01
	lg7 = 1.479819860511658591e-01
)

// Exp returns e**x, with the same bits on every GOARCH.
func Exp(x float64) float64 {
	switch {
	case x != x || x > expOvf:
		if x != x {
			return x
		}
		return math.Inf(1)
	case x < expUnf:
		return 0
	case x > -3.725290298461914e-09 && x < 3.725290298461914e-09: // |x| < 2**-28
		return 1 + x
	}
	// x = k*ln2 + r, |r| <= ln2/2.
	var k int
	if x < 0 {
		k = int(float64(log2e*x) - 0.5)
	} else {
		k = int(float64(log2e*x) + 0.5)
	}
	kf := float64(k)
	hi := x - float64(kf*ln2Hi)
	lo := float64(kf * ln2Lo)
	r := hi - lo
	t := float64(r * r)
	poly := float64(t * p5)
	poly = float64(t * (p4 + poly))
	poly = float64(t * (p3 + poly))
	poly = float64(t * (p2 + poly))
	poly = float64(t * (p1 + poly))
	c := r - poly
	y := 1 - ((lo - float64(r*c)/(2-c)) - hi)
	return scale2(y, k)
}

// scale2 returns y * 2**k for the y of Exp (finite, in [0.5, 2)): where the
// result is a normal number the exponent field takes k directly (an exact
// scaling, the bits of math.Ldexp without its checks, which cost Exp a
// third of its time); elsewhere math.Ldexp, which rounds subnormals.
func scale2(y float64, k int) float64 {
	if k > -1000 && k < 1000 {
		return math.Float64frombits(math.Float64bits(y) + uint64(int64(k))<<52)
	}
	return math.Ldexp(y, k)
}

// Log returns the natural logarithm of x, with the same bits on every GOARCH.
func Log(x float64) float64 {
	switch {
	case x != x || math.IsInf(x, 1):
		return x
	case x < 0:
		return math.NaN()
	case x == 0:
		return math.Inf(-1)
	}
	f1, ki := math.Frexp(x) // x = f1 * 2**ki, f1 in [0.5, 1)
	if f1 < math.Sqrt2/2 {
		f1 *= 2
		ki--
	}
	f := f1 - 1
	k := float64(ki)
	s := f / (2 + f)
	s2 := float64(s * s)
	s4 := float64(s2 * s2)
	t1 := float64(s4 * lg7)
	t1 = float64(s4 * (lg5 + t1))
	t1 = float64(s4 * (lg3 + t1))
	t1 = float64(s2 * (lg1 + t1))
	t2 := float64(s4 * lg6)
	t2 = float64(s4 * (lg4 + t2))
	t2 = float64(s4 * (lg2 + t2))
	r := t1 + t2
	hfsq := float64(float64(0.5*f) * f)
	return float64(k*ln2Hi) - ((hfsq - (float64(s*(hfsq+r)) + float64(k*ln2Lo))) - f)
}
