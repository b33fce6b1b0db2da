package suite

import (
	"encoding/json"
	"math"

	"github.com/goldset/goldset/compare"
	"github.com/goldset/goldset/golden"
	"github.com/goldset/goldset/manifests"
)

// matmul: C = A @ B, A [m,k], B [k,n] ("KN") or [n,k] ("NK"), float64
// accumulation of the stored inputs' products (docs/spec.md §1).
var _ = register(&op{
	name:     "matmul",
	export:   exportSpec{flashinfer: "gemm", ascend: "MatMul", axes: map[string][]string{"a": {"M", "K"}, "c": {"M", "N"}}},
	inputs:   []string{"a", "b"},
	outputs:  []output{{name: "c", truth: true, tol: compare.MatmulLike}},
	plan:     planMatmul,
	controls: matmulControls,
	work:     matmulWork,
	probes:   matmulProbes,
})

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
	return &casePlan{params: canonical(p), dtype: p.DType, bytes: bytes, build: func(c *caseCtx) error { return buildMatmul(c, p) }}, nil
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
		// Half dtypes keep only B's bits: each row is widened into one
		// row of scratch on its way into the transpose (a float32 copy of
		// all of B would be 4*k*n more bytes of fresh memory).
		b := normalValues(sb, p.DType, k*n, 0, p.ScaleB, false)
		if err := b.write(bt); err != nil {
			bt.abort()
			return err
		}
		// The NK kernel reads B rows contiguously and is several times
		// faster; both sum over k in order, so the bits are the same.
		bt := make([]float32, k*n)
		row := make([]float32, n)
		for i := 0; i < k; i++ {
			src := row
			if b.bits != nil {
				halfToF32(row, b.bits[i*n:(i+1)*n], p.DType)
			} else {
				src = b.vals[i*n : (i+1)*n]
			}
			for j, v := range src {
				bt[j*k+i] = v
			}
		}
		golden.Matmul(out, a.vals, bt, m, k, n, true)
	} else {
		// B is [N, K]: generate row blocks, multiply each into its columns.
		part := make([]float64, m*matmulChunkN)
		var b floatTensor // one row block's memory, reused
		for j0 := 0; j0 < n; j0 += matmulChunkN {
			if err := c.ctx.Err(); err != nil {
				bt.abort()
				return err
			}
			j1 := min(n, j0+matmulChunkN)
			b.drawNormal(sb, p.DType, (j1-j0)*k, int64(j0)*int64(k), p.ScaleB, true)
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
	return c.writeOutput("c", p.DType, []int64{int64(m), int64(n)}, out)
}

// matmulAB reads a built case's A and B.
func matmulAB(d caseData) (a, b []float32, err error) {
	if a, err = d.f32("a"); err != nil {
		return nil, nil, err
	}
	if b, err = d.f32("b"); err != nil {
		return nil, nil, err
	}
	return a, b, nil
}

func matmulControls(d caseData) ([]Control, error) {
	var p matmulParams
	if err := json.Unmarshal(d.c.Params, &p); err != nil {
		return nil, err
	}
	a, b, err := matmulAB(d)
	if err != nil {
		return nil, err
	}
	truth := make([]float64, p.M*p.N)
	golden.Matmul(truth, a, b, p.M, p.K, p.N, p.BLayout == "NK")
	f32 := make([]float64, p.M*p.N)
	golden.MatmulF32(f32, a, b, p.M, p.K, p.N, p.BLayout == "NK")
	ctl := []Control{zeros(d, "c")}
	if p.DType != "bfloat16" {
		ctl = append(ctl, Control{Name: "bf16_roundtrip", Note: "the exact result rounded through bfloat16", Outputs: []ControlOutput{d.output("c", bf16RoundTrip(truth))}})
	}
	ctl = append(ctl, Control{Name: "fp32_accumulate", Pass: true, Note: "an honest kernel: fp32 products and sums in order, rounded to the output dtype", Outputs: []ControlOutput{d.output("c", f32)}})
	return ctl, nil
}

// matmulWork: A and B read once, C written once, 2*m*k*n flops.
func matmulWork(w workIn) (manifests.Work, error) {
	p, err := decodeWork[matmulParams](w)
	if err != nil {
		return manifests.Work{}, err
	}
	return wholeWork(w, []string{"a", "b"}, []string{"c"}, 2*int64(p.M)*int64(p.K)*int64(p.N), p.DType)
}

// matmulProbes: a half-precision accumulator (fp16 or bf16 HGEMM), the
// nearest wrong algorithm; at small k it may pass, so it is a probe for
// the margins (§13c), not a control.
func matmulProbes(d caseData) ([]Control, error) {
	var p matmulParams
	if err := json.Unmarshal(d.c.Params, &p); err != nil || p.DType == "float32" {
		return nil, err
	}
	a, b, err := matmulAB(d)
	if err != nil {
		return nil, err
	}
	half := make([]float64, p.M*p.N)
	golden.MatmulHalfAccumulate(half, a, b, p.M, p.K, p.N, p.BLayout == "NK", func(v float64) float64 { return roundTo(p.DType, v) })
	return []Control{{Name: "half_accumulate", Note: "fp32 products summed in a " + p.DType + " accumulator", Outputs: []ControlOutput{d.output("c", half)}}}, nil
}
