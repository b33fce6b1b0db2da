package suite

import (
	"encoding/json"
	"math"
	"sort"

	"github.com/goldset/goldset/gen"
	"github.com/goldset/goldset/golden"
)

// casePlan is a validated case: canonical params, a size estimate and the
// function that builds it.
type casePlan struct {
	params json.RawMessage
	bytes  int64
	build  func(*caseCtx) error
}

var opBuilders = map[string]func(json.RawMessage) (*casePlan, error){
	"matmul":            planMatmul,
	"softmax":           planSoftmax,
	"reshape_and_cache": planReshapeAndCache,
	"paged_attention":   planPagedAttention,
	"quest":             planQuest,
}

func planCase(c manifestsRecipeCase) (*casePlan, error) {
	f, ok := opBuilders[c.Op]
	if !ok {
		return nil, errUnknownOp(c)
	}
	p, err := f(c.Params)
	if err != nil {
		return nil, errCase(c, err)
	}
	return p, nil
}

// writeOutput writes an exact float64 output: the golden in dtype (with its
// tolerance) and, for half types, the float32 truth.
func (c *caseCtx) writeOutput(op, name, dtype string, shape []int64, v []float64) error {
	if err := c.writeRounded(tensorSpec{name: name, role: roleGolden, dtype: dtype, shape: shape, tol: tolerance(op, name, dtype)}, v); err != nil {
		return err
	}
	if dtype == "float32" {
		return nil
	}
	return c.writeRounded(tensorSpec{name: name + "_truth", role: roleTruth, dtype: "float32", shape: shape, tol: tolerance(op, name, "float32")}, v)
}

// writeRounded writes exact values rounded once to ts.dtype.
func (c *caseCtx) writeRounded(ts tensorSpec, v []float64) error {
	return c.write(ts, func(t *tensorOut) error { return t.rounded(ts.dtype, v) })
}

// writeFloat writes a generated tensor's stored form.
func (c *caseCtx) writeFloat(ts tensorSpec, ft *floatTensor) error { return c.write(ts, ft.write) }

// writeInts writes int32 values.
func (c *caseCtx) writeInts(ts tensorSpec, v []int32) error {
	return c.write(ts, func(t *tensorOut) error { return t.i32(v) })
}

// ---- matmul (docs/spec.md §1) ----

type matmulParams struct {
	M       int     `json:"m"`
	K       int     `json:"k"`
	N       int     `json:"n"`
	DType   string  `json:"dtype"`
	BLayout string  `json:"b_layout"` // "KN" (default) or "NK" (nn.Linear weight)
	ScaleA  float64 `json:"scale_a"`  // std of A (default 1)
	ScaleB  float64 `json:"scale_b"`  // std of B (default 1/sqrt(K), so C is O(1))
}

// matmulChunkN is how many rows of an NK-layout B are generated and
// multiplied at once: memory stays bounded for LM-head-sized B.
const matmulChunkN = 2048

func planMatmul(raw json.RawMessage) (*casePlan, error) {
	var p matmulParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if p.BLayout == "" {
		p.BLayout = "KN"
	}
	if p.ScaleA == 0 {
		p.ScaleA = 1
	}
	if p.ScaleB == 0 && p.K > 0 {
		p.ScaleB = 1 / math.Sqrt(float64(p.K))
	}
	for _, e := range []error{checkRange("m", p.M, 1, maxDim), checkRange("k", p.K, 1, maxDim), checkRange("n", p.N, 1, maxDim),
		checkFloatDType("dtype", p.DType), finitePositive("scale_a", p.ScaleA), finitePositive("scale_b", p.ScaleB)} {
		if e != nil {
			return nil, e
		}
	}
	if p.BLayout != "KN" && p.BLayout != "NK" {
		return nil, errParams("b_layout %q: want KN or NK", p.BLayout)
	}
	if err := checkHeld("a", p.M, p.K); err != nil {
		return nil, err
	}
	nb, err := checkElems("b", p.K, p.N)
	if err != nil {
		return nil, err
	}
	if p.BLayout == "KN" && nb > 1<<28 {
		return nil, errParams("b of %d elements in KN layout is held in memory; use b_layout NK for B this large", nb)
	}
	if err := checkHeld("c", p.M, p.N); err != nil {
		return nil, err
	}
	sz := dtypeSize(p.DType)
	bytes := int64(p.M*p.K+p.K*p.N+p.M*p.N)*sz + int64(p.M*p.N)*4
	return &casePlan{params: canonical(p), bytes: bytes, build: func(c *caseCtx) error { return buildMatmul(c, p) }}, nil
}

func buildMatmul(c *caseCtx, p matmulParams) error {
	m, k, n := p.M, p.K, p.N
	a := normalTensor(c.stream("a"), p.DType, m*k, 0, p.ScaleA)
	if err := c.writeFloat(tensorSpec{name: "a", role: roleInput, dtype: p.DType, shape: []int64{int64(m), int64(k)}}, &a); err != nil {
		return err
	}
	out := make([]float64, m*n)
	bShape := []int64{int64(k), int64(n)}
	if p.BLayout == "NK" {
		bShape = []int64{int64(n), int64(k)}
	}
	bt, err := c.create(tensorSpec{name: "b", role: roleInput, dtype: p.DType, shape: bShape})
	if err != nil {
		return err
	}
	sb := c.stream("b")
	if p.BLayout == "KN" {
		b := normalTensor(sb, p.DType, k*n, 0, p.ScaleB)
		if err := b.write(bt); err != nil {
			bt.abort()
			return err
		}
		// The NK kernel reads B rows contiguously and is several times
		// faster; both sum over k in order, so the bits are the same.
		bt := make([]float32, k*n)
		for i := 0; i < k; i++ {
			for j, v := range b.vals[i*n : (i+1)*n] {
				bt[j*k+i] = v
			}
		}
		golden.Matmul(out, a.vals, bt, m, k, n, true)
	} else {
		// B is [N, K]: generate row blocks, multiply each into its columns.
		part := make([]float64, m*matmulChunkN)
		for j0 := 0; j0 < n; j0 += matmulChunkN {
			if err := c.ctx.Err(); err != nil {
				bt.abort()
				return err
			}
			j1 := min(n, j0+matmulChunkN)
			b := normalTensor(sb, p.DType, (j1-j0)*k, int64(j0)*int64(k), p.ScaleB)
			if err := b.write(bt); err != nil {
				bt.abort()
				return err
			}
			w := j1 - j0
			golden.Matmul(part[:m*w], a.vals, b.vals, m, k, w, true)
			for i := 0; i < m; i++ {
				copy(out[i*n+j0:i*n+j1], part[i*w:(i+1)*w])
			}
		}
	}
	if err := bt.close(); err != nil {
		return err
	}
	return c.writeOutput("matmul", "c", p.DType, []int64{int64(m), int64(n)}, out)
}

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
	return &casePlan{params: canonical(p), bytes: bytes, build: func(c *caseCtx) error { return buildSoftmax(c, p) }}, nil
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
	rowsOf := func(r0, r1 int) floatTensor {
		x := normalTensor(sx, p.DType, (r1-r0)*n, int64(r0)*int64(n), p.Scale)
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
		return x
	}
	shape := []int64{int64(m), int64(n)}
	xt, err := c.create(tensorSpec{name: "x", role: roleInput, dtype: p.DType, shape: shape})
	if err != nil {
		return err
	}
	yt, err := c.create(tensorSpec{name: "y", role: roleGolden, dtype: p.DType, shape: shape, tol: tolerance("softmax", "y", p.DType)})
	if err != nil {
		xt.abort()
		return err
	}
	var truth *tensorOut
	if p.DType != "float32" {
		if truth, err = c.create(tensorSpec{name: "y_truth", role: roleTruth, dtype: "float32", shape: shape, tol: tolerance("softmax", "y", "float32")}); err != nil {
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
	if err := c.writeRounded(tensorSpec{name: "row_max", role: roleGolden, dtype: "float32", shape: []int64{int64(m)}, tol: tolerance("softmax", "row_max", "float32")}, rowMax); err != nil {
		return err
	}
	return c.writeRounded(tensorSpec{name: "row_sum", role: roleGolden, dtype: "float32", shape: []int64{int64(m)}, tol: tolerance("softmax", "row_sum", "float32")}, rowSum)
}
