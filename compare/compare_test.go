package compare

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/goldset/goldset/npy"
)

func fp32Tol() Tolerance { return tolOf(MatmulLike, Float32) }

func TestMetrics(t *testing.T) {
	tests := []struct {
		name        string
		g, c        []float64
		shape       []int64
		tol         Tolerance
		maxAbs      float64
		maxAbsAt    []int64
		maxRel      float64
		relL2       float64
		cosine      float64
		maxULP      uint64
		doubleThous float64
	}{
		{
			// |(-2.5)-(-2)| = 0.5 at [1]; rel 0.5/2; one fp32 ulp in [2,4) is 2^-22
			name: "abs rel ulp", g: []float64{1, -2, 0.5, 4}, c: []float64{1, -2.5, 0.5, 4}, shape: []int64{4}, tol: fp32Tol(),
			maxAbs: 0.5, maxAbsAt: []int64{1}, maxRel: 0.25, relL2: 0.5 / math.Sqrt(21.25),
			cosine: (1 + 5 + 0.25 + 16) / math.Sqrt(21.25*(1+6.25+0.25+16)), maxULP: 1 << 21, doubleThous: 0.25,
		},
		{
			// fp16: golden 0 uses the floor 2^-14 as denominator; 2^-20 is 16 subnormal ulps
			name: "rel floor fp16", g: []float64{0, 1}, c: []float64{0x1p-20, 1}, shape: []int64{2},
			tol:    Tolerance{Mode: ModeAllclose, DType: Float16, RTol: 1e-3, ATol: 1},
			maxAbs: 0x1p-20, maxAbsAt: []int64{0}, maxRel: 0x1p-6, relL2: 0x1p-20, cosine: 1 / math.Sqrt(1+0x1p-40), maxULP: 16, doubleThous: 0.5,
		},
		{
			// one fp16 ulp at 1 is 2^-10; double-thousandth needs > 1e-3, 2^-10 < 1e-3
			name: "fp16 one ulp", g: []float64{1, 1}, c: []float64{1 + 0x1p-10, 1}, shape: []int64{1, 2},
			tol: tolOf(MatmulLike, Float16), maxAbs: 0x1p-10, maxAbsAt: []int64{0, 0}, maxRel: 0x1p-10,
			relL2: 0x1p-10 / math.Sqrt2, cosine: (2 + 0x1p-10) / math.Sqrt(2*(1+(1+0x1p-10)*(1+0x1p-10))), maxULP: 1,
		},
		{
			name: "orthogonal", g: []float64{1, 0}, c: []float64{0, 1}, shape: []int64{2}, tol: fp32Tol(),
			// golden 0 at [1]: the denominator is the fp32 floor 2^-126
			maxAbs: 1, maxAbsAt: []int64{0}, maxRel: 0x1p126, relL2: math.Sqrt2, cosine: 0, maxULP: 0x3f800000, doubleThous: 1,
		},
		{
			name: "parallel", g: []float64{1, 2}, c: []float64{2, 4}, shape: []int64{2}, tol: fp32Tol(),
			maxAbs: 2, maxAbsAt: []int64{1}, maxRel: 1, relL2: 1, cosine: 1, maxULP: 0x800000, doubleThous: 1,
		},
		{
			// -x against x: ulps count through zero, twice the magnitude's pattern
			name: "antiparallel", g: []float64{1, 2}, c: []float64{-1, -2}, shape: []int64{2}, tol: fp32Tol(),
			maxAbs: 4, maxAbsAt: []int64{1}, maxRel: 2, relL2: 2, cosine: -1, maxULP: 2 * 0x40000000, doubleThous: 1,
		},
		{
			name: "both zero", g: []float64{0, 0}, c: []float64{0, 0}, shape: []int64{2}, tol: fp32Tol(), cosine: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Compare(tc.g, tc.c, tc.shape, tc.tol, Options{})
			if err != nil {
				t.Fatal(err)
			}
			check := func(what string, got, want float64) {
				if math.Abs(got-want) > 1e-15*math.Abs(want) {
					t.Errorf("%s = %v, want %v", what, got, want)
				}
			}
			check("max_abs", float64(r.MaxAbs), tc.maxAbs)
			check("max_rel", float64(r.MaxRel), tc.maxRel)
			check("rel_l2", float64(r.RelL2), tc.relL2)
			check("cosine", float64(r.Cosine), tc.cosine)
			check("double_thousandth", float64(r.DoubleThousandth), tc.doubleThous)
			if r.MaxULP != tc.maxULP {
				t.Errorf("max_ulp = %d, want %d", r.MaxULP, tc.maxULP)
			}
			if tc.maxAbsAt != nil && !slices.Equal(r.MaxAbsIndex, tc.maxAbsAt) {
				t.Errorf("max_abs_index = %v, want %v", r.MaxAbsIndex, tc.maxAbsAt)
			}
		})
	}
}

func TestULPDistance(t *testing.T) {
	tests := []struct {
		dtype string
		g, c  float64
		want  uint64
	}{
		{Float16, 1, 1 + 0x1p-10, 1},
		{Float16, 1, 1 - 0x1p-11, 1},    // spacing below a power of two halves
		{Float16, -0x1p-24, 0x1p-24, 2}, // through zero: -min, 0, +min
		{Float16, 0, math.Copysign(0, -1), 0},
		{Float16, 65504, 65536, 1},   // 65536 rounds to +Inf, the pattern after max
		{Float16, 1, 1 + 0x1p-12, 0}, // rounds to 1 in fp16
		{BFloat16, 1, 1 + 0x1p-7, 1},
		{BFloat16, 3, 3.5, 32}, // spacing 2^-6 in [2, 4)
		{Float32, 1, float64(math.Nextafter32(1, 2)), 1},
		{Float32, -1, 1, 2 * 0x3f800000},
		{Float64, 1, math.Nextafter(1, 2), 1},
		{Float64, -math.MaxFloat64, math.MaxFloat64, 2 * math.Float64bits(math.MaxFloat64)},
	}
	for _, tc := range tests {
		if got := formatOf(tc.dtype).ulpDistance(tc.g, tc.c); got != tc.want {
			t.Errorf("%s ulps(%v, %v) = %d, want %d", tc.dtype, tc.g, tc.c, got, tc.want)
		}
		if got := formatOf(tc.dtype).ulpDistance(tc.c, tc.g); got != tc.want {
			t.Errorf("%s ulps(%v, %v) = %d, want %d (symmetry)", tc.dtype, tc.c, tc.g, got, tc.want)
		}
	}
}

func TestIndexFormatting(t *testing.T) {
	shape := []int64{2, 3, 4}
	for flat := range int64(24) {
		ix := unravel(flat, shape)
		if back := (ix[0]*3+ix[1])*4 + ix[2]; back != flat {
			t.Fatalf("unravel(%d) = %v", flat, ix)
		}
	}
	if got := fmtIndex(unravel(23, shape)); got != "[1, 2, 3]" {
		t.Errorf("fmtIndex = %q", got)
	}
	if got := fmtIndex(nil); got != "[]" {
		t.Errorf("fmtIndex(nil) = %q", got)
	}
}

// attnGolden returns a random fp16 attention-like golden [2,3,64].
func attnGolden(seed uint64) ([]float64, []int64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	return randn(rng, 2*3*64, 0.05, Float16), []int64{2, 3, 64}
}

func TestSinglePerturbation(t *testing.T) {
	g, shape := attnGolden(1)
	tol := tolOf(AttentionLike, Float16)
	at := []int64{1, 2, 7}
	flat := (at[0]*3+at[1])*64 + at[2]
	row := g[flat-at[2] : flat-at[2]+64]
	var s float64
	for _, v := range row {
		s += v * v
	}
	allowed := tol.ATol + tol.ATolRMSFactor*math.Sqrt(s/64) + tol.RTol*math.Abs(g[flat])
	tol.RowRelL2 = 0 // isolate the elementwise rule
	for _, tc := range []struct {
		factor float64
		want   string
	}{{0.5, Pass}, {0.99, Pass}, {1.01, Fail}, {2, Fail}, {-3, Fail}} {
		c := slices.Clone(g)
		c[flat] += tc.factor * allowed
		r, err := Compare(g, c, shape, tol, Options{Name: "out"})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != tc.want {
			t.Errorf("perturbation %.2fx allowance: %s, want %s", tc.factor, r.Status, tc.want)
		}
		if !slices.Equal(r.WorstIndex, at) {
			t.Errorf("perturbation %.2fx: worst index %v, want %v", tc.factor, r.WorstIndex, at)
		}
		if math.Abs(float64(r.WorstRatio)-math.Abs(tc.factor)) > 1e-9 {
			t.Errorf("perturbation %.2fx: worst ratio %v", tc.factor, r.WorstRatio)
		}
		if tc.want == Fail {
			if !slices.Equal(r.FirstMismatch, at) || r.MismatchCount != 1 {
				t.Errorf("first mismatch %v count %d, want %v and 1", r.FirstMismatch, r.MismatchCount, at)
			}
			if len(r.Failed) != 1 || !strings.Contains(r.Failed[0], "elementwise") || !strings.Contains(r.Failed[0], "violated at 1 of 384 elements") {
				t.Errorf("failed = %q", r.Failed)
			}
			var b bytes.Buffer
			r.WriteText(&b)
			if !strings.Contains(b.String(), "[1, 2, 7]") || !strings.Contains(b.String(), "FAIL") {
				t.Errorf("text does not name the index:\n%s", b.String())
			}
		} else if r.FirstMismatch != nil || r.MismatchCount != 0 {
			t.Errorf("pass with mismatches: %v %d", r.FirstMismatch, r.MismatchCount)
		}
	}
}

func TestNonFinite(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	tests := []struct {
		name              string
		g, c              []float64
		want              string
		nan, inf, infSign int64
	}{
		{"NaN where golden finite", []float64{1, 2, 3}, []float64{1, nan, 3}, Fail, 1, 0, 0},
		{"finite where golden NaN", []float64{1, nan, 3}, []float64{1, 2, 3}, Fail, 1, 0, 0},
		{"NaN for NaN", []float64{1, nan, 3}, []float64{1, -nan, 3}, Pass, 0, 0, 0},
		{"Inf sign", []float64{1, inf, 3}, []float64{1, -inf, 3}, Fail, 0, 1, 1},
		{"Inf where golden finite", []float64{1, 2, 3}, []float64{1, 2, inf}, Fail, 0, 1, 0},
		{"finite where golden -Inf", []float64{1, 2, -inf}, []float64{1, 2, -3e38}, Fail, 0, 1, 0},
		{"-Inf for -Inf", []float64{1, 2, -inf}, []float64{1, 2, -inf}, Pass, 0, 0, 0},
		{"NaN for Inf", []float64{1, 2, inf}, []float64{1, 2, nan}, Fail, 1, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Compare(tc.g, tc.c, []int64{3}, fp32Tol(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != tc.want || r.NaNMismatch != tc.nan || r.InfMismatch != tc.inf || r.InfSignMismatch != tc.infSign {
				t.Errorf("status %s nan %d inf %d sign %d, want %s %d %d %d", r.Status, r.NaNMismatch, r.InfMismatch, r.InfSignMismatch, tc.want, tc.nan, tc.inf, tc.infSign)
			}
			if tc.want == Fail && (r.Failed == nil || !strings.HasPrefix(r.Failed[0], "nonfinite")) {
				t.Errorf("binding rule %q, want nonfinite", r.Failed)
			}
			if _, err := json.Marshal(r); err != nil {
				t.Errorf("json: %v", err)
			}
		})
	}
}

func TestExact(t *testing.T) {
	f16 := func(bits ...uint16) []float64 {
		v := make([]float64, len(bits))
		for i, b := range bits {
			v[i] = npy.F16ToF64(b)
		}
		return v
	}
	negZero := math.Copysign(0, -1)
	tests := []struct {
		name  string
		dtype string
		g, c  []float64
		want  string
		at    []int64
	}{
		{"same fp16", Float16, f16(0x3c00, 0x7e01, 0xfc00), f16(0x3c00, 0x7e01, 0xfc00), Pass, nil},
		{"fp16 lsb flipped", Float16, f16(0x3c00, 0x4000, 0x1234, 0x0001), f16(0x3c00, 0x4000, 0x1235, 0x0001), Fail, []int64{1, 0}},
		{"fp16 sign of zero", Float16, f16(0, 0, 0, 0), f16(0, 0, 0, 0x8000), Fail, []int64{1, 1}},
		{"NaN payload", Float16, f16(0x7e01, 0, 0, 0), f16(0x7e02, 0, 0, 0), Fail, []int64{0, 0}},
		{"int32 bit 0", Int32, []float64{7, -1, 0, 1 << 30}, []float64{7, -1, 1, 1 << 30}, Fail, []int64{1, 0}},
		{"int32 same", Int32, []float64{7, -1, 0, 1 << 30}, []float64{7, -1, 0, 1 << 30}, Pass, nil},
		{"float64 -0", Float64, []float64{0, 1}, []float64{negZero, 1}, Fail, []int64{0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			shape := []int64{int64(len(tc.g))}
			if len(tc.g) == 4 {
				shape = []int64{2, 2}
			}
			r, err := Compare(tc.g, tc.c, shape, tolOf(Exact, tc.dtype), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Mode != ModeExact || r.Status != tc.want {
				t.Fatalf("mode %s status %s, want exact %s", r.Mode, r.Status, tc.want)
			}
			if tc.want == Fail && (r.MismatchCount != 1 || !slices.Equal(r.FirstMismatch, tc.at) || !slices.Equal(r.WorstIndex, tc.at)) {
				t.Errorf("count %d first %v worst %v, want 1 at %v", r.MismatchCount, r.FirstMismatch, r.WorstIndex, tc.at)
			}
		})
	}
}

func TestExactWorstIsLargest(t *testing.T) {
	g := []float64{1, 2, 3, 4, 5}
	c := []float64{1.5, 2, 13, 4, 6}
	r, err := Compare(g, c, []int64{5}, tolOf(Exact, Float32), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.MismatchCount != 3 || !slices.Equal(r.FirstMismatch, []int64{0}) || !slices.Equal(r.WorstIndex, []int64{2}) || r.MaxAbs != 10 {
		t.Errorf("count %d first %v worst %v max_abs %v", r.MismatchCount, r.FirstMismatch, r.WorstIndex, r.MaxAbs)
	}
}

func TestSet(t *testing.T) {
	tol := tolOf(SetWithPadding(-1), Int32)
	nan := math.NaN()
	tests := []struct {
		name           string
		g, c           []float64
		want           string
		missing, extra int64
		worst          []int64
	}{
		{"identical", []float64{0, 3, 7, -1}, []float64{0, 3, 7, -1}, Pass, 0, 0, nil},
		{"permuted", []float64{0, 3, 7, -1}, []float64{7, -1, 0, 3}, Pass, 0, 0, nil},
		{"padding moved", []float64{0, 3, -1, -1}, []float64{-1, 3, -1, 0}, Pass, 0, 0, nil},
		{"all padding", []float64{-1, -1, -1, -1}, []float64{-1, -1, -1, -1}, Pass, 0, 0, nil},
		{"different block", []float64{0, 3, 7, 9}, []float64{0, 3, 8, 9}, Fail, 1, 1, []int64{0}},
		{"missing block", []float64{0, 3, 7, 9}, []float64{0, 3, -1, 9}, Fail, 1, 0, []int64{0}},
		{"duplicate", []float64{0, 3, 7, -1}, []float64{0, 3, 7, 7}, Fail, 0, 1, []int64{0}},
		{"NaN", []float64{0, 3, 7, -1}, []float64{0, 3, 7, nan}, Fail, 0, 1, []int64{0}},
		{"other padding", []float64{0, 3, 7, -1}, []float64{0, 3, 7, -2}, Fail, 0, 1, []int64{0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// two rows: the case in row [1], an identical row [0]
			g := append([]float64{5, 1, 2, -1}, tc.g...)
			c := append([]float64{1, 5, -1, 2}, tc.c...)
			r, err := Compare(g, c, []int64{1, 2, 4}, tol, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != tc.want || r.SetMissing != tc.missing || r.SetExtra != tc.extra {
				t.Errorf("status %s missing %d extra %d, want %s %d %d", r.Status, r.SetMissing, r.SetExtra, tc.want, tc.missing, tc.extra)
			}
			if tc.want == Fail {
				want := []int64{0, 1}
				if !slices.Equal(r.FirstMismatch, want) || !slices.Equal(r.WorstIndex, want) || r.MismatchCount != 1 || r.MismatchUnit != "rows" {
					t.Errorf("first %v worst %v count %d unit %s, want row %v", r.FirstMismatch, r.WorstIndex, r.MismatchCount, r.MismatchUnit, want)
				}
			}
		})
	}
}

func TestErrors(t *testing.T) {
	g := []float64{1, 2, 3, 4}
	tests := []struct {
		name  string
		g, c  []float64
		shape []int64
		tol   Tolerance
		opts  Options
		want  error
	}{
		{"golden length", g[:3], g, []int64{4}, fp32Tol(), Options{}, ErrShape},
		{"candidate length", g, g[:3], []int64{2, 2}, fp32Tol(), Options{}, ErrShape},
		{"shape product", g, g, []int64{2, 3}, fp32Tol(), Options{}, ErrShape},
		{"negative dim", g, g, []int64{-2, -2}, fp32Tol(), Options{}, ErrShape},
		{"overflow", g, g, []int64{1 << 40, 1 << 40}, fp32Tol(), Options{}, ErrShape},
		{"mask length", g, g, []int64{4}, fp32Tol(), Options{Mask: []bool{true}}, ErrShape},
		{"mode", g, g, []int64{4}, Tolerance{Mode: "close"}, Options{}, ErrTolerance},
		{"negative rtol", g, g, []int64{4}, Tolerance{Mode: ModeAllclose, RTol: -1}, Options{}, ErrTolerance},
		{"NaN atol", g, g, []int64{4}, Tolerance{Mode: ModeAllclose, ATol: math.NaN()}, Options{}, ErrTolerance},
		{"Inf rel l2", g, g, []int64{4}, Tolerance{Mode: ModeAllclose, RowRelL2: math.Inf(1)}, Options{}, ErrTolerance},
		{"dtype", g, g, []int64{4}, Tolerance{Mode: ModeExact, DType: "<f2"}, Options{}, ErrTolerance},
		{"row axes", g, g, []int64{4}, Tolerance{Mode: ModeExact, RowAxes: -1}, Options{}, ErrTolerance},
		{"NaN ignore", g, g, []int64{4}, Tolerance{Mode: ModeSet, SetIgnore: []float64{math.NaN()}}, Options{}, ErrTolerance},
	}
	for _, tc := range tests {
		if _, err := Compare(tc.g, tc.c, tc.shape, tc.tol, tc.opts); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestEmptyAndScalar(t *testing.T) {
	for _, shape := range [][]int64{{0}, {3, 0}, {0, 4}, {2, 0, 5}} {
		for _, tol := range []Tolerance{tolOf(SoftmaxLike, Float16), tolOf(Exact, Float16), tolOf(SetWithPadding(-1), Int32)} {
			r, err := Compare(nil, []float64{}, shape, tol, Options{})
			if err != nil || r.Status != Pass || r.Graded != 0 || r.MismatchCount != 0 {
				t.Errorf("shape %v %s: %v %s graded %d", shape, tol.Mode, err, r.Status, r.Graded)
			}
			var b bytes.Buffer
			if err := r.WriteText(&b); err != nil {
				t.Error(err)
			}
		}
	}
	tol := tolOf(LSE, Float32)
	r, err := Compare([]float64{3}, []float64{3.5}, nil, tol, Options{})
	if err != nil || r.Status != Fail || r.Rows != 1 || r.WorstIndex == nil || len(r.WorstIndex) != 0 {
		t.Errorf("scalar: %v %s rows %d worst %v", err, r.Status, r.Rows, r.WorstIndex)
	}
}

func TestMask(t *testing.T) {
	g := []float64{1, 2, 0, 0, 3, 4, 0, 0}
	c := []float64{1, 2, 9, -9, 3, 4, math.NaN(), 5}
	mask := []bool{true, true, false, false, true, true, false, false}
	tol := tolOf(Exact, Float16)
	r, err := Compare(g, c, []int64{2, 4}, tol, Options{Mask: mask})
	if err != nil || r.Status != Pass || r.Graded != 4 {
		t.Errorf("masked garbage: %v %s graded %d", err, r.Status, r.Graded)
	}
	c[5] = 4.5
	if r, _ := Compare(g, c, []int64{2, 4}, tol, Options{Mask: mask}); r.Status != Fail || !slices.Equal(r.FirstMismatch, []int64{1, 1}) {
		t.Errorf("graded mismatch: %s at %v", r.Status, r.FirstMismatch)
	}
}

func TestRowRules(t *testing.T) {
	// row_rel_l2 binding alone: every element within its allowance, but
	// the whole row off by 0.5% (fp16 attention: rtol 1e-2, row limit 2e-3)
	g, shape := attnGolden(2)
	tol := tolOf(AttentionLike, Float16)
	c := slices.Clone(g)
	for i := range c {
		c[i] *= 1.005
	}
	r, err := Compare(g, c, shape, tol, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != Fail || len(r.Failed) != 1 || !strings.HasPrefix(r.Failed[0], "row_rel_l2") || r.MismatchCount != 0 {
		t.Errorf("row_rel_l2 alone: %s %q mismatches %d", r.Status, r.Failed, r.MismatchCount)
	}

	// row_sum binding alone (fp16 softmax): a peaked row, and 2^-23 (two
	// subnormal ulps, within atol) added to 40960 tiny entries moves the
	// sum by 4.9e-3 > 2e-3 + 1.2e-3 (the row's half-spacings, which a
	// correct rounding may use) while the row's rel L2 stays small
	const n = 40960
	g = make([]float64, n)
	g[0] = roundTo(Float16, 0.9)
	for i := 1; i < n; i++ {
		g[i] = roundTo(Float16, 0.1/(n-1))
	}
	c = slices.Clone(g)
	for i := 1; i < n; i++ {
		c[i] += 0x1p-23
	}
	r, err = Compare(g, c, []int64{1, n}, tolOf(SoftmaxLike, Float16), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != Fail || len(r.Failed) != 1 || !strings.HasPrefix(r.Failed[0], "row_sum") || r.RowSumMaxErr == nil {
		t.Errorf("row_sum alone: %s %q", r.Status, r.Failed)
	}
	// fully masked softmax rows (golden all zero) are not held to sum 1
	zero := make([]float64, 8)
	if r, _ := Compare(zero, zero, []int64{2, 4}, tolOf(SoftmaxLike, Float16), Options{}); r.Status != Pass {
		t.Errorf("zero rows: %s %q", r.Status, r.Failed)
	}
}

func TestZerosFailEveryDefault(t *testing.T) {
	// every floating default, on a golden of O(1) rows and one of tiny
	// rows (softmax over 40960 entries, attention at long context)
	rng := rand.New(rand.NewPCG(9, 9))
	for _, op := range []struct {
		out string
		f   Family
	}{
		{"C", MatmulLike}, {"y", SoftmaxLike}, {"row_sum", RowSum}, {"row_max", RowMax},
		{"out", AttentionLike}, {"lse", LSE}, {"scores", Scores},
	} {
		for _, dt := range floatDTypes {
			for _, scale := range []float64{1, 2.4e-5} {
				tol := tolOf(op.f, dt)
				g := randn(rng, 4*256, scale, dt)
				if op.out == "lse" && scale != 1 {
					continue // lse is log(L) + O(1), never ~1e-5 (doc.go)
				}
				if op.out == "y" { // rows that are distributions
					for r := range 4 {
						row := g[r*256 : (r+1)*256]
						var s float64
						for _, v := range row {
							s += math.Abs(v)
						}
						for i, v := range row {
							row[i] = roundTo(dt, math.Abs(v)/s)
						}
					}
				}
				r, err := Compare(g, make([]float64, len(g)), []int64{4, 256}, tol, Options{})
				if err != nil || r.Status != Fail {
					t.Errorf("%s/%s %s scale %g: zeros %s %v", op.f.Name(), op.out, dt, scale, r.Status, err)
				}
				if r, _ := Compare(g, g, []int64{4, 256}, tol, Options{}); r.Status != Pass {
					t.Errorf("%s/%s %s: golden vs itself %s %q", op.f.Name(), op.out, dt, r.Status, r.Failed)
				}
			}
		}
	}
}

func TestRoundedTruthPasses(t *testing.T) {
	// a float64 truth rounded once to the output dtype passes against the
	// float32 truth and against the golden, for every family and scale
	rng := rand.New(rand.NewPCG(10, 10))
	for _, op := range []struct {
		out string
		f   Family
	}{{"C", MatmulLike}, {"y", SoftmaxLike}, {"out", AttentionLike}} {
		for _, dt := range floatDTypes {
			for _, scale := range []float64{1, 1e-3, 2.4e-5, 1e-7} {
				truth := make([]float64, 8*512)
				for i := range truth {
					truth[i] = scale * rng.NormFloat64()
					if op.out == "y" {
						truth[i] = math.Abs(truth[i])
					}
				}
				tol := tolOf(op.f, dt)
				tol.RowSum = 0 // these rows are not distributions
				cand := roundAll(dt, truth)
				for _, g := range [][]float64{roundAll(Float32, truth), truth, cand} {
					r, err := Compare(g, cand, []int64{8, 512}, tol, Options{})
					if err != nil || r.Status != Pass {
						t.Errorf("%s %s scale %g: %v %s %q", op.f.Name(), dt, scale, err, r.Status, r.Failed)
					}
				}
			}
		}
	}
}

func TestJSON(t *testing.T) {
	// a NaN where the golden is finite: the tensor-wide rel_l2 and cosine
	// are undefined (NaN), not those of the finite pairs (0 and 1 here)
	nr, err := Compare([]float64{1, 2, 3}, []float64{1, math.NaN(), 3}, []int64{3}, fp32Tol(), Options{Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(float64(nr.RelL2)) || !math.IsNaN(float64(nr.Cosine)) || nr.Status != Fail {
		t.Fatalf("NaN candidate: rel_l2 %v cosine %v status %s, want NaN NaN FAIL", nr.RelL2, nr.Cosine, nr.Status)
	}
	// golden all zero, candidate not: rel_l2 is +Inf and must survive JSON
	r, err := Compare([]float64{0, 0}, []float64{1, 2}, []int64{2}, fp32Tol(), Options{Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(float64(r.RelL2), 1) {
		t.Fatalf("rel_l2 = %v, want +Inf", r.RelL2)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"rel_l2":"+Inf"`)) || !bytes.Contains(b, []byte(`"status":"FAIL"`)) {
		t.Errorf("json: %s", b)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(float64(back.RelL2), 1) || back.Status != r.Status || !slices.Equal(back.FirstMismatch, r.FirstMismatch) || back.Tol.RTol != r.Tol.RTol {
		t.Errorf("round trip: %+v", back)
	}
	for _, s := range []string{`"NaN"`, `"-Inf"`, `1.5`} {
		var f Float
		if err := json.Unmarshal([]byte(s), &f); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	var f Float
	if err := json.Unmarshal([]byte(`"x"`), &f); err == nil {
		t.Error("Float accepted \"x\"")
	}
}

func TestTextReport(t *testing.T) {
	g, shape := attnGolden(3)
	c := slices.Clone(g)
	c[5] = math.NaN()
	r, _ := Compare(g, c, shape, tolOf(AttentionLike, Float16), Options{Name: "out"})
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, want := range []string{"out [2, 3, 64] float16 allclose: FAIL", "FAIL nonfinite", "first [0, 0, 5]", "nan_mismatch 1"} {
		if !strings.Contains(s, want) {
			t.Errorf("text lacks %q:\n%s", want, s)
		}
	}
	if n := strings.Count(s, "\n"); n > 10 {
		t.Errorf("text has %d lines", n)
	}
	sr, _ := Compare([]float64{1, 2}, []float64{1, 3}, []int64{1, 2}, tolOf(SetWithPadding(-1), Int32), Options{})
	b.Reset()
	sr.WriteText(&b)
	if !strings.Contains(b.String(), "rows differing 1/1, values missing 1, extra 1, first row [0]") {
		t.Errorf("set text:\n%s", b.String())
	}
}

func TestDecode(t *testing.T) {
	tests := []struct {
		d    npy.DType
		bf16 bool
		data []byte
		want []float64
	}{
		{npy.Float16, false, []byte{0x00, 0x3c, 0x01, 0x00}, []float64{1, 0x1p-24}},
		{npy.Float32, false, []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0}, []float64{1, -2}},
		{npy.Float64, false, []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f}, []float64{1}},
		{npy.Uint16, true, []byte{0x80, 0x3f, 0xc0, 0x3f}, []float64{1, 1.5}},
		{npy.Uint16, false, []byte{0x80, 0x3f}, []float64{0x3f80}},
		{npy.Int32, false, []byte{0xff, 0xff, 0xff, 0xff, 3, 0, 0, 0}, []float64{-1, 3}},
	}
	for _, tc := range tests {
		got, err := Decode(tc.d, tc.bf16, tc.data)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("Decode(%s, %v) = %v, %v; want %v", tc.d, tc.bf16, got, err, tc.want)
		}
	}
	if _, err := Decode(npy.Float32, false, []byte{1, 2, 3}); !errors.Is(err, ErrShape) {
		t.Errorf("ragged data: %v", err)
	}
	for _, bad := range []struct {
		d    npy.DType
		bf16 bool
	}{{"<c8", false}, {npy.Float32, true}, {npy.Int64, false}} {
		if _, err := Decode(bad.d, bad.bf16, make([]byte, 16)); !errors.Is(err, npy.ErrUnsupportedDType) {
			t.Errorf("Decode(%s, %v): %v", bad.d, bad.bf16, err)
		}
	}
}
