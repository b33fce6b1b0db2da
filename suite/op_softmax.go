package suite

import (
	"encoding/json"
	"math"
	"slices"
	"sort"

	"github.com/goldset/goldset/compare"
	"github.com/goldset/goldset/gen"
	"github.com/goldset/goldset/golden"
	"github.com/goldset/goldset/manifests"
)

// softmax: row softmax of x [m,n] with the online state (row max, row
// sum of exp(x - max)) as float32 outputs (docs/spec.md §2).
var _ = register(&op{
	name:   "softmax",
	export: exportSpec{flashinfer: "softmax", ascend: "Softmax", axes: map[string][]string{"x": {"M", "N"}, "y": {"M", "N"}, "row_max": {"M"}, "row_sum": {"M"}}},
	inputs: []string{"x"},
	outputs: []output{
		{name: "y", truth: true, tol: compare.SoftmaxLike},
		{name: "row_max", dtype: "float32", tol: compare.RowMax.WithBasis("softmax_row_max")},
		{name: "row_sum", dtype: "float32", tol: compare.RowSum.WithBasis("softmax_row_sum")},
	},
	plan:     planSoftmax,
	controls: softmaxControls,
	work:     softmaxWork,
})

// ---- softmax (docs/spec.md §2) ----

type softmaxParams struct {
	M     int     `json:"m"`
	N     int     `json:"n"`
	DType string  `json:"dtype"`
	Scale float64 `json:"scale"` // std of the normal logits (default 1)
	// OutlierRows rows get logits of magnitude OutlierMagnitude (kinds
	// cycle: uniform(-L, L), L + N(0,1), -L + N(0,1)).
	OutlierRows      int     `json:"outlier_rows"`
	OutlierMagnitude float64 `json:"outlier_magnitude"`
	// NegInfRows rows start with NegInfPrefix entries of -inf (a leading
	// tile fully masked, then finite values).
	NegInfRows   int `json:"neg_inf_rows"`
	NegInfPrefix int `json:"neg_inf_prefix"`
	// MaskedRows rows are entirely -inf (defined as all zeros; docs/spec.md §2).
	MaskedRows int `json:"masked_rows"`
}

func defaultOutlierMagnitude(dtype string) float64 {
	if dtype == "float16" {
		return 6e4 // near fp16 max (65504): exp without max subtraction overflows
	}
	return 1e4
}

func planSoftmax(raw json.RawMessage) (*casePlan, error) {
	var p softmaxParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if p.Scale == 0 {
		p.Scale = 1
	}
	if p.OutlierRows > 0 && p.OutlierMagnitude == 0 {
		p.OutlierMagnitude = defaultOutlierMagnitude(p.DType)
	}
	for _, e := range []error{checkRange("m", p.M, 1, maxDim), checkRange("n", p.N, 1, maxDim), checkFloatDType("dtype", p.DType),
		finitePositive("scale", p.Scale), checkRange("outlier_rows", p.OutlierRows, 0, maxDim),
		checkRange("neg_inf_rows", p.NegInfRows, 0, maxDim), checkRange("masked_rows", p.MaskedRows, 0, maxDim),
		checkRange("neg_inf_prefix", p.NegInfPrefix, 0, max(0, p.N-1))} {
		if e != nil {
			return nil, e
		}
	}
	if p.OutlierRows > 0 {
		if err := finitePositive("outlier_magnitude", p.OutlierMagnitude); err != nil {
			return nil, err
		}
	}
	if p.OutlierRows+p.NegInfRows+p.MaskedRows > p.M {
		return nil, errParams("outlier_rows + neg_inf_rows + masked_rows = %d exceeds m = %d", p.OutlierRows+p.NegInfRows+p.MaskedRows, p.M)
	}
	if (p.NegInfRows > 0) != (p.NegInfPrefix > 0) {
		return nil, errParams("neg_inf_rows and neg_inf_prefix go together")
	}
	if _, err := checkElems("x", p.M, p.N); err != nil {
		return nil, err
	}
	mn := int64(p.M) * int64(p.N)
	bytes := mn*dtypeSize(p.DType)*2 + mn*4 + int64(p.M)*8
	return &casePlan{params: canonical(p), dtype: p.DType, bytes: bytes, build: func(c *caseCtx) error { return buildSoftmax(c, p) }}, nil
}

// softmaxRowKinds assigns special rows: outliers, -inf prefixes, masked.
func softmaxRowKinds(c *caseCtx, p softmaxParams) map[int]string {
	r := c.stream("rows").Rand()
	rows := r.Choice(p.M, p.OutlierRows+p.NegInfRows+p.MaskedRows)
	kinds := make(map[int]string, len(rows))
	for i, row := range rows {
		switch {
		case i < p.OutlierRows:
			kinds[row] = [...]string{"outlier_uniform", "outlier_pos", "outlier_neg"}[i%3]
		case i < p.OutlierRows+p.NegInfRows:
			kinds[row] = "neg_inf_prefix"
		default:
			kinds[row] = "masked"
		}
	}
	return kinds
}

// softmaxBlockRows bounds the rows generated and reduced at once.
func softmaxBlockRows(n int) int { return max(1, (1<<22)/n) }

func buildSoftmax(c *caseCtx, p softmaxParams) error {
	m, n := p.M, p.N
	kinds := softmaxRowKinds(c, p)
	info := map[string][]int{}
	for row, k := range kinds {
		info[k] = append(info[k], row)
	}
	for _, v := range info {
		sort.Ints(v)
	}
	c.setInfo("special_rows", info)
	sx, so := c.stream("x"), c.stream("x.outlier")
	var x floatTensor // one row block's memory, reused by every block
	rowsOf := func(r0, r1 int) *floatTensor {
		x.drawNormal(sx, p.DType, (r1-r0)*n, int64(r0)*int64(n), p.Scale, true)
		for r := r0; r < r1; r++ {
			k, ok := kinds[r]
			if !ok {
				continue
			}
			base := (r - r0) * n
			L := p.OutlierMagnitude
			switch k {
			case "outlier_uniform":
				u := make([]float64, n)
				gen.Uniform(so, u, int64(r)*int64(n), gen.F64, -L, L)
				for j, v := range u {
					x.set(base+j, v)
				}
			case "outlier_pos", "outlier_neg":
				z := make([]float64, n)
				gen.Normal(so, z, int64(r)*int64(n), gen.F64, 1)
				sgn := 1.0
				if k == "outlier_neg" {
					sgn = -1
				}
				for j, v := range z {
					x.set(base+j, float64(sgn*L)+v)
				}
			case "neg_inf_prefix":
				for j := 0; j < p.NegInfPrefix; j++ {
					x.set(base+j, math.Inf(-1))
				}
			case "masked":
				for j := 0; j < n; j++ {
					x.set(base+j, math.Inf(-1))
				}
			}
		}
		return &x
	}
	shape := []int64{int64(m), int64(n)}
	xt, err := c.create(tensorSpec{name: "x", role: roleInput, dtype: p.DType, shape: shape})
	if err != nil {
		return err
	}
	yt, err := c.create(tensorSpec{name: "y", role: roleGolden, dtype: p.DType, shape: shape})
	if err != nil {
		xt.abort()
		return err
	}
	var truth *tensorOut
	if p.DType != "float32" {
		if truth, err = c.create(tensorSpec{name: "y_truth", role: roleTruth, dtype: "float32", shape: shape}); err != nil {
			xt.abort()
			yt.abort()
			return err
		}
	}
	rowMax := make([]float64, m)
	rowSum := make([]float64, m)
	blk := softmaxBlockRows(n)
	y := make([]float64, blk*n)
	fail := func(err error) error {
		xt.abort()
		yt.abort()
		if truth != nil {
			truth.abort()
		}
		return err
	}
	for r0 := 0; r0 < m; r0 += blk {
		if err := c.ctx.Err(); err != nil {
			return fail(err)
		}
		r1 := min(m, r0+blk)
		x := rowsOf(r0, r1)
		if err := x.write(xt); err != nil {
			return fail(err)
		}
		yy := y[:(r1-r0)*n]
		golden.Softmax(yy, rowMax[r0:r1], rowSum[r0:r1], x.vals, r1-r0, n)
		if err := yt.rounded(p.DType, yy); err != nil {
			return fail(err)
		}
		if truth != nil {
			if err := truth.rounded("float32", yy); err != nil {
				return fail(err)
			}
		}
	}
	for _, t := range []*tensorOut{xt, yt, truth} {
		if t == nil {
			continue
		}
		if err := t.close(); err != nil {
			return err
		}
	}
	if err := c.writeRounded(tensorSpec{name: "row_max", role: roleGolden, dtype: "float32", shape: []int64{int64(m)}}, rowMax); err != nil {
		return err
	}
	return c.writeRounded(tensorSpec{name: "row_sum", role: roleGolden, dtype: "float32", shape: []int64{int64(m)}}, rowSum)
}

func softmaxControls(d caseData) ([]Control, error) {
	var p softmaxParams
	if err := json.Unmarshal(d.c.Params, &p); err != nil {
		return nil, err
	}
	x, err := d.f32("x")
	if err != nil {
		return nil, err
	}
	m, n := p.M, p.N
	ctl := []Control{zeros(d, "y")}
	y := make([]float64, m*n)
	if p.OutlierRows > 0 {
		golden.SoftmaxNoMaxF32(y, nil, nil, x, m, n)
		ctl = append(ctl, Control{Name: "no_max_subtraction", Note: "exp(x)/sum(exp(x)) in fp32 without subtracting the row max (overflows on the outlier rows)", Outputs: []ControlOutput{d.output("y", slices.Clone(y))}})
	}
	if p.DType != "bfloat16" {
		golden.Softmax(y, nil, nil, x, m, n)
		ctl = append(ctl, Control{Name: "bf16_roundtrip", Note: "the exact result rounded through bfloat16", Outputs: []ControlOutput{d.output("y", bf16RoundTrip(y))}})
	}
	rmax, rsum := make([]float64, m), make([]float64, m)
	golden.SoftmaxF32(y, rmax, rsum, x, m, n)
	ctl = append(ctl, Control{Name: "fp32_online", Pass: true, Note: "an honest kernel: fp32 max, exp and sum", Outputs: []ControlOutput{
		d.output("y", y), d.output("row_max", rmax), d.output("row_sum", rsum)}})
	return ctl, nil
}

// softmaxWork: x read once, y and the row state written once; 4 float32
// operations an element (max, subtract, sum, scale; exp is not counted).
func softmaxWork(w workIn) (manifests.Work, error) {
	p, err := decodeWork[softmaxParams](w)
	if err != nil {
		return manifests.Work{}, err
	}
	return wholeWork(w, []string{"x"}, []string{"y", "row_max", "row_sum"}, 4*int64(p.M)*int64(p.N), "float32")
}
