package suite

import (
	"cmp"
	"encoding/json"
	"math"

	"github.com/goldset/goldset/compare"
	"github.com/goldset/goldset/gen"
	"github.com/goldset/goldset/golden"
	"github.com/goldset/goldset/internal/detmath"
	"github.com/goldset/goldset/internal/dtype"
	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/npy"
)

// MXFP4 GEMMs and MoE (docs/spec.md §9d-e). The three GEMM variants are
// separate ops so that each op's tensor list is fixed (the op table's
// contract): mxfp4_gemm (bf16 activations), mxfp4_gemm_a4w4 (activations
// quantized by §9a too) and mxfp4_gemm_w4a8 (activations in e4m3 with one
// ue8m0 scale per token per 128).

var gemmOutputs = []output{{name: "y", truth: true, tol: compare.MXGEMM}}

var _ = register(&op{
	name: "mxfp4_gemm", inputs: []string{"x", "w_codes", "w_scales"}, outputs: gemmOutputs, aux: []string{"s"},
	export: exportSpec{flashinfer: "gemm", ascend: "Mxfp4Gemm"},
	plan:   planMXGEMM(gemmBF16), controls: mxGEMMControls,
	work: mxGEMMWork([]string{"x", "w_codes", "w_scales"}, "bfloat16"),
})

var _ = register(&op{
	name: "mxfp4_gemm_a4w4", inputs: []string{"x", "x_codes", "x_scales", "w_codes", "w_scales"}, outputs: gemmOutputs, aux: []string{"s"},
	export: exportSpec{flashinfer: "gemm", ascend: "Mxfp4GemmA4W4"},
	plan:   planMXGEMM(gemmA4W4), controls: mxGEMMControls,
	work: mxGEMMWork([]string{"x_codes", "x_scales", "w_codes", "w_scales"}, dtE2M1),
})

var _ = register(&op{
	name: "mxfp4_gemm_w4a8", inputs: []string{"x", "x_fp8", "x_scales", "w_codes", "w_scales"}, outputs: gemmOutputs, aux: []string{"s"},
	export: exportSpec{flashinfer: "gemm", ascend: "Mxfp4GemmW4A8"},
	plan:   planMXGEMM(gemmW4A8), controls: mxGEMMControls,
	work: mxGEMMWork([]string{"x_fp8", "x_scales", "w_codes", "w_scales"}, dtE4M3),
})

var _ = register(&op{
	name:    "mxfp4_moe",
	export:  exportSpec{flashinfer: "moe", ascend: "Mxfp4Moe"},
	inputs:  []string{"x", "router_logits", "w1_codes", "w1_scales", "b1", "w2_codes", "w2_scales", "b2"},
	outputs: []output{{name: "out", truth: true, tol: compare.MXGEMM}},
	aux:     []string{"s", "topk_ids", "topk_weights"},
	plan:    planMXMoE, controls: mxMoEControls,
	work: mxMoEWork,
})

type gemmVariant uint8

const (
	gemmBF16 gemmVariant = iota
	gemmA4W4
	gemmW4A8
)

type mxGEMMParams struct {
	M    int    `json:"m"`
	N    int    `json:"n"`
	K    int    `json:"k"`
	Mode string `json:"mode"` // scale mode of W (and of x for a4w4): rceil (default)
	// ScaleX: std of the bf16 activations (default 1); ScaleW: the std
	// whose nearest power of two places W's drawn scale bytes (default
	// 1/sqrt(K); drawMXWeights).
	ScaleX float64 `json:"scale_x"`
	ScaleW float64 `json:"scale_w"`
}

// mxWeightChunk is how many rows of W are drawn and multiplied at once,
// so memory stays bounded for large N.
const mxWeightChunk = 1024

func planMXGEMM(v gemmVariant) func(json.RawMessage) (*casePlan, error) {
	return func(raw json.RawMessage) (*casePlan, error) {
		var p mxGEMMParams
		if err := decodeParams(raw, &p); err != nil {
			return nil, err
		}
		if p.Mode == "" {
			p.Mode = "rceil"
		}
		if p.ScaleX == 0 {
			p.ScaleX = 1
		}
		if p.ScaleW == 0 && p.K > 0 {
			p.ScaleW = 1 / math.Sqrt(float64(p.K))
		}
		for _, e := range []error{checkRange("m", p.M, 1, maxDim), checkRange("n", p.N, 1, maxDim), checkRange("k", p.K, 32, maxDim), checkMXK(p.K),
			finitePositive("scale_x", p.ScaleX), finitePositive("scale_w", p.ScaleW), checkMXWeightStd("scale_w", p.ScaleW)} {
			if e != nil {
				return nil, e
			}
		}
		if _, err := golden.ParseScaleMode(p.Mode); err != nil {
			return nil, errParams("%v", err)
		}
		if err := checkHeld("x", p.M, p.K); err != nil {
			return nil, err
		}
		if err := checkHeld("y", p.M, p.N); err != nil {
			return nil, err
		}
		if _, err := checkElems("w", p.N, p.K); err != nil {
			return nil, err
		}
		mk, nk, mn := int64(p.M)*int64(p.K), int64(p.N)*int64(p.K), int64(p.M)*int64(p.N)
		bytes := 2*mk + nk/2 + nk/32 + mn*(2+4+4)
		switch v {
		case gemmA4W4:
			bytes += mk/2 + mk/32
		case gemmW4A8:
			bytes += mk + mk/128 + 1
		}
		return &casePlan{params: canonical(p), dtype: "bfloat16", bytes: bytes, build: func(c *caseCtx) error { return buildMXGEMM(c, p, v) }}, nil
	}
}

// mxActivations writes x (bf16) and, for a4w4 / w4a8, its quantized form,
// and returns the activations' exact values as the GEMM reads them.
func mxActivations(c *caseCtx, p mxGEMMParams, v gemmVariant, mode golden.ScaleMode) ([]float32, error) {
	m, k := p.M, p.K
	x := normalTensor(c.stream("x"), "bfloat16", m*k, 0, p.ScaleX)
	if err := c.writeFloat(tensorSpec{name: "x", role: roleInput, dtype: "bfloat16", shape: shape2(m, k)}, &x); err != nil {
		return nil, err
	}
	switch v {
	case gemmA4W4:
		codes, scales := make([]byte, m*k/2), make([]byte, m*k/golden.MXBlock)
		if err := golden.MXFP4QuantizeBF16(codes, scales, x.bits, m, k, mode); err != nil {
			return nil, err
		}
		if err := c.writeBytes(tensorSpec{name: "x_codes", role: roleInput, dtype: dtE2M1, shape: shape2(m, k/2)}, codes); err != nil {
			return nil, err
		}
		if err := c.writeBytes(tensorSpec{name: "x_scales", role: roleInput, dtype: dtE8M0, shape: shape2(m, k/golden.MXBlock)}, scales); err != nil {
			return nil, err
		}
		xf := make([]float32, m*k)
		return xf, golden.MXFP4Dequantize(xf, codes, scales, m, k)
	case gemmW4A8:
		ng := (k + golden.FP8Group - 1) / golden.FP8Group
		fp8, scales := make([]byte, m*k), make([]byte, m*ng)
		if err := golden.FP8QuantizePerToken(fp8, scales, x.bits, m, k); err != nil {
			return nil, err
		}
		if err := c.writeBytes(tensorSpec{name: "x_fp8", role: roleInput, dtype: dtE4M3, shape: shape2(m, k)}, fp8); err != nil {
			return nil, err
		}
		if err := c.writeBytes(tensorSpec{name: "x_scales", role: roleInput, dtype: dtE8M0, shape: shape2(m, ng)}, scales); err != nil {
			return nil, err
		}
		return w4a8Values(fp8, scales, m, k), nil
	}
	return x.vals, nil
}

// w4a8Values decodes e4m3 activations with per-token-per-128 E8M0 scales.
func w4a8Values(fp8, scales []byte, m, k int) []float32 {
	ng := (k + golden.FP8Group - 1) / golden.FP8Group
	xf := make([]float32, m*k)
	for i, q := range fp8 {
		xf[i] = float32(math.Ldexp(dtype.E4M3ToF64(q), int(scales[(i/k)*ng+(i%k)/golden.FP8Group])-127))
	}
	return xf
}

func buildMXGEMM(c *caseCtx, p mxGEMMParams, v gemmVariant) error {
	mode, _ := golden.ParseScaleMode(p.Mode)
	m, n, k := p.M, p.N, p.K
	xf, err := mxActivations(c, p, v, mode)
	if err != nil {
		return err
	}
	xbits := make([]uint16, m*k)
	npy.BF16sFromF32s(xbits, xf) // exact: every activation value has <= 8 significant bits
	wc, err := c.create(tensorSpec{name: "w_codes", role: roleInput, dtype: dtE2M1, shape: shape2(n, k/2)})
	if err != nil {
		return err
	}
	ws, err := c.create(tensorSpec{name: "w_scales", role: roleInput, dtype: dtE8M0, shape: shape2(n, k/golden.MXBlock)})
	if err != nil {
		return err
	}
	y, s := make([]float64, m*n), make([]float64, m*n)
	cw := min(n, mxWeightChunk)
	py, ps := make([]float64, m*cw), make([]float64, m*cw)
	codes, scales := make([]byte, cw*k/2), make([]byte, cw*k/golden.MXBlock)
	cs, ss := c.stream("w_codes"), c.stream("w_scales")
	for j0 := 0; j0 < n; j0 += cw {
		j1 := min(n, j0+cw)
		w := j1 - j0
		cc, sc := codes[:w*k/2], scales[:w*k/golden.MXBlock]
		drawMXWeights(cs, ss, cc, sc, int64(j0)*int64(k/golden.MXBlock), mode, p.ScaleW)
		if err := wc.bytes(cc); err != nil {
			return err
		}
		if err := ws.bytes(sc); err != nil {
			return err
		}
		if err := golden.MXFP4GEMM(py[:m*w], ps[:m*w], xbits, cc, sc, m, w, k); err != nil {
			return err
		}
		for i := range m {
			copy(y[i*n+j0:i*n+j1], py[i*w:(i+1)*w])
			copy(s[i*n+j0:i*n+j1], ps[i*w:(i+1)*w])
		}
	}
	if err := wc.close(); err != nil {
		return err
	}
	if err := ws.close(); err != nil {
		return err
	}
	if err := c.writeOutput("y", "bfloat16", shape2(m, n), y); err != nil {
		return err
	}
	return c.writeRounded(tensorSpec{name: "s", role: roleAux, dtype: "float32", shape: shape2(m, n)}, s)
}

// gemmActivations reloads the activations' values of a built case.
func gemmActivations(d caseData, p mxGEMMParams) ([]float32, error) {
	switch d.c.Op {
	case "mxfp4_gemm_a4w4":
		codes, err := d.raw("x_codes")
		if err != nil {
			return nil, err
		}
		scales, err := d.raw("x_scales")
		if err != nil {
			return nil, err
		}
		xf := make([]float32, p.M*p.K)
		return xf, golden.MXFP4Dequantize(xf, codes, scales, p.M, p.K)
	case "mxfp4_gemm_w4a8":
		fp8, err := d.raw("x_fp8")
		if err != nil {
			return nil, err
		}
		scales, err := d.raw("x_scales")
		if err != nil {
			return nil, err
		}
		return w4a8Values(fp8, scales, p.M, p.K), nil
	}
	return d.f32("x")
}

func mxGEMMControls(d caseData) ([]Control, error) {
	var p mxGEMMParams
	if err := json.Unmarshal(d.c.Params, &p); err != nil {
		return nil, err
	}
	m, n, k := p.M, p.N, p.K
	xf, err := gemmActivations(d, p)
	if err != nil {
		return nil, err
	}
	codes, err := d.raw("w_codes")
	if err != nil {
		return nil, err
	}
	scales, err := d.raw("w_scales")
	if err != nil {
		return nil, err
	}
	wf := make([]float32, n*k)
	if err := golden.MXFP4Dequantize(wf, codes, scales, n, k); err != nil {
		return nil, err
	}
	gemmWith := func(w []float32) []float64 {
		y := make([]float64, m*n)
		golden.Matmul(y, xf, w, m, k, n, true)
		return y
	}
	xbits := make([]uint16, m*k)
	npy.BF16sFromF32s(xbits, xf)
	bf16acc := make([]float64, m*n)
	if err := golden.MXFP4GEMMBF16Acc(bf16acc, make([]float64, m*n), xbits, codes, scales, m, n, k); err != nil {
		return nil, err
	}
	ctl := []Control{zeros(d, "y"),
		{Name: "bf16_accumulate", Note: "every partial sum rounded to bfloat16", Outputs: []ControlOutput{d.output("y", bf16acc)}}}
	for _, st := range []struct {
		name, note string
		on         bool
		f          func(w []float32) error
	}{
		{"scale_bias_128", "W's scale byte b read as 2^(b-128)", true, func(w []float32) error { return golden.MXFP4DequantizeBias128(w, codes, scales, n, k) }},
		{"w_scales_transposed", "W's scales read as [k/32, n]", transposeDiffers(scales, n, k/golden.MXBlock), func(w []float32) error {
			return golden.MXFP4DequantizeScalesTransposed(w, codes, scales, n, k)
		}},
		{"w_swapped_nibbles", "W's element 2i read from the high nibble", true, func(w []float32) error {
			return golden.MXFP4Dequantize(w, swapNibbles(codes), scales, n, k)
		}},
		{"w_scale_as_e4m3", "W's E8M0 byte read as an e4m3 value", true, func(w []float32) error {
			return golden.MXFP4DequantizeScaleAsE4M3(w, codes, scales, n, k)
		}},
	} {
		if !st.on {
			continue
		}
		w := make([]float32, n*k)
		if err := st.f(w); err != nil {
			return nil, err
		}
		ctl = append(ctl, Control{Name: st.name, Note: st.note, Outputs: []ControlOutput{d.output("y", gemmWith(w))}})
	}
	f32 := make([]float64, m*n)
	golden.MatmulF32(f32, xf, wf, m, k, n, true)
	ctl = append(ctl, Control{Name: "fp32_accumulate", Pass: true, Note: "an honest kernel: the dequantized weights, fp32 sums in k order, rounded to bf16", Outputs: []ControlOutput{d.output("y", f32)}})
	return ctl, nil
}

// transposeDiffers reports whether reading scales [rows, nb] as [nb, rows]
// changes any byte (weights whose blocks all share one scale byte, common
// in small seeded matrices, leave the mistake invisible).
func transposeDiffers(scales []byte, rows, nb int) bool {
	for r := range rows {
		for j := range nb {
			if scales[r*nb+j] != scales[j*rows+r] {
				return true
			}
		}
	}
	return false
}

// ---- mxfp4_moe (§9e) ----

type mxMoEParams struct {
	T    int    `json:"t"`
	Hd   int    `json:"hd"`
	I    int    `json:"i"`
	E    int    `json:"e"`
	TopK int    `json:"topk"`
	Mode string `json:"mode"` // scale mode the weights are quantized with (rceil)
	// RouterSkew: Zipf exponent s; expert e's logits get -s*ln(e+1) added,
	// so expert 0 is the hottest (0: uniform routing).
	RouterSkew float64 `json:"router_skew"`
	// Std of the router logits (default 1), of x (1) and of the biases
	// (0.1); ScaleW1 and ScaleW2 place W1's and W2's drawn scale bytes as
	// mxfp4_gemm's scale_w does (1/sqrt(Hd), 1/sqrt(I)).
	RouterStd float64 `json:"router_std"`
	ScaleX    float64 `json:"scale_x"`
	ScaleW1   float64 `json:"scale_w1"`
	ScaleW2   float64 `json:"scale_w2"`
	BiasStd   float64 `json:"bias_std"`
	// ActRound is how the SwiGLU activations enter the second GEMM:
	// "bfloat16" (default: rounded once, the matmul_ogs chain of gpt-oss's
	// triton MoE and vLLM's OAI Triton experts) or "none" (exact).
	ActRound string `json:"act_round"`
}

// roundAct reports whether the case's activations are rounded to bf16.
func (p mxMoEParams) roundAct() bool { return p.ActRound == "bfloat16" }

func planMXMoE(raw json.RawMessage) (*casePlan, error) {
	var p mxMoEParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if p.Mode == "" {
		p.Mode = "rceil"
	}
	switch p.ActRound {
	case "":
		p.ActRound = "bfloat16"
	case "bfloat16", "none":
	default:
		return nil, errParams("act_round = %q: want \"bfloat16\" or \"none\"", p.ActRound)
	}
	for _, d := range []struct {
		v   *float64
		def float64
	}{{&p.RouterStd, 1}, {&p.ScaleX, 1}, {&p.BiasStd, 0.1}} {
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if p.ScaleW1 == 0 && p.Hd > 0 {
		p.ScaleW1 = 1 / math.Sqrt(float64(p.Hd))
	}
	if p.ScaleW2 == 0 && p.I > 0 {
		p.ScaleW2 = 1 / math.Sqrt(float64(p.I))
	}
	for _, e := range []error{checkRange("t", p.T, 1, maxDim), checkRange("hd", p.Hd, 32, 1<<16), checkRange("i", p.I, 32, 1<<16),
		checkMXK(p.Hd), checkMXK(p.I), checkRange("e", p.E, 1, 1<<12), checkRange("topk", p.TopK, 1, p.E),
		finitePositive("router_std", p.RouterStd), finitePositive("scale_x", p.ScaleX), finitePositive("scale_w1", p.ScaleW1),
		finitePositive("scale_w2", p.ScaleW2), finitePositive("bias_std", p.BiasStd),
		checkMXWeightStd("scale_w1", p.ScaleW1), checkMXWeightStd("scale_w2", p.ScaleW2)} {
		if e != nil {
			return nil, e
		}
	}
	if !(p.RouterSkew >= 0 && p.RouterSkew <= 16) {
		return nil, errParams("router_skew = %v: want a Zipf exponent in [0, 16]", p.RouterSkew)
	}
	if _, err := golden.ParseScaleMode(p.Mode); err != nil {
		return nil, errParams("%v", err)
	}
	if err := checkHeld("x", p.T, p.Hd); err != nil {
		return nil, err
	}
	if err := checkHeld("expert outputs", p.T, p.TopK, p.Hd, 2); err != nil {
		return nil, err
	}
	if _, err := checkElems("w1", p.E, 2*p.I, p.Hd); err != nil {
		return nil, err
	}
	t, hd, in, e := int64(p.T), int64(p.Hd), int64(p.I), int64(p.E)
	w := e * 3 * in * hd
	bytes := 2*t*hd + 4*t*e + w/2 + w/32 + 2*e*(2*in+hd) + t*hd*(2+4+4) + 8*t*int64(p.TopK)
	var family func(string) (compare.Family, bool)
	if p.roundAct() { // activation flips: compare.MXMoEActBF16
		family = func(name string) (compare.Family, bool) {
			return compare.MXMoEActBF16, name == "out" || name == "out_truth"
		}
	}
	return &casePlan{params: canonical(p), dtype: "bfloat16", bytes: bytes, family: family, build: func(c *caseCtx) error { return buildMXMoE(c, p) }}, nil
}

// moeRoute draws the router logits (N(0, RouterStd) minus RouterSkew*ln(e+1))
// and routes them.
func moeLogits(c *caseCtx, p mxMoEParams) []float32 {
	l := normalTensor(c.stream("router_logits"), "float32", p.T*p.E, 0, p.RouterStd)
	if p.RouterSkew > 0 {
		for i := range l.vals {
			l.vals[i] = float32(float64(l.vals[i]) - float64(p.RouterSkew*detmath.Log(float64(i%p.E+1))))
		}
	}
	return l.vals
}

// moeExpertFn computes one expert's outputs o (and bounds s, when non-nil)
// [nt, Hd] for the gathered token rows xs.
type moeExpertFn func(o, s []float64, xs []uint16, nt int, w moeExpertWeights) error

type moeExpertWeights struct {
	w1c, w1s []byte
	b1       []uint16
	w2c, w2s []byte
	b2       []uint16
}

// moeCombine runs experts in order, each on the (token, rank) rows routed
// to it, and sums out[t] = sum_j float64(w_j*o_j) in rank order from 0
// (MXFP4MoE's combine), and the same weighted sum of the bounds.
func moeCombine(p mxMoEParams, x []uint16, ids []int32, wts []float64, expert func(e int) (moeExpertWeights, error), run moeExpertFn, withS bool) (out, s []float64, err error) {
	hd, k := p.Hd, p.TopK
	rows := make([][]int, p.E)
	for i, e := range ids {
		rows[e] = append(rows[e], i)
	}
	obuf := make([]float64, p.T*k*hd)
	var sbuf []float64
	if withS {
		sbuf = make([]float64, p.T*k*hd)
	}
	for e := range p.E {
		w, err := expert(e)
		if err != nil {
			return nil, nil, err
		}
		rs := rows[e]
		if len(rs) == 0 {
			continue
		}
		xs := make([]uint16, len(rs)*hd)
		for r, i := range rs {
			tok := i / k
			copy(xs[r*hd:(r+1)*hd], x[tok*hd:(tok+1)*hd])
		}
		o := make([]float64, len(rs)*hd)
		var so []float64
		if withS {
			so = make([]float64, len(rs)*hd)
		}
		if err := run(o, so, xs, len(rs), w); err != nil {
			return nil, nil, err
		}
		for r, i := range rs {
			copy(obuf[i*hd:(i+1)*hd], o[r*hd:(r+1)*hd])
			if withS {
				copy(sbuf[i*hd:(i+1)*hd], so[r*hd:(r+1)*hd])
			}
		}
	}
	out = make([]float64, p.T*hd)
	if withS {
		s = make([]float64, p.T*hd)
	}
	for tok := range p.T {
		dst := out[tok*hd : (tok+1)*hd]
		for j := range k {
			wj := wts[tok*k+j]
			o := obuf[(tok*k+j)*hd : (tok*k+j+1)*hd]
			for c, v := range o {
				dst[c] += float64(wj * v)
			}
			if withS {
				sd, so := s[tok*hd:(tok+1)*hd], sbuf[(tok*k+j)*hd:(tok*k+j+1)*hd]
				for c, v := range so {
					sd[c] += float64(wj * v)
				}
			}
		}
	}
	return out, s, nil
}

func goldenExpert(p mxMoEParams) moeExpertFn {
	var sc golden.MoEScratch
	return func(o, s []float64, xs []uint16, nt int, w moeExpertWeights) error {
		return golden.MXFP4MoEExpert(o, s, xs, nt, w.w1c, w.w1s, w.b1, w.w2c, w.w2s, w.b2, p.Hd, p.I, p.roundAct(), &sc)
	}
}

func buildMXMoE(c *caseCtx, p mxMoEParams) error {
	mode, _ := golden.ParseScaleMode(p.Mode)
	T, hd, in, E, k := p.T, p.Hd, p.I, p.E, p.TopK
	x := normalTensor(c.stream("x"), "bfloat16", T*hd, 0, p.ScaleX)
	if err := c.writeFloat(tensorSpec{name: "x", role: roleInput, dtype: "bfloat16", shape: shape2(T, hd)}, &x); err != nil {
		return err
	}
	logits := moeLogits(c, p)
	if err := c.write(tensorSpec{name: "router_logits", role: roleInput, dtype: "float32", shape: shape2(T, E)}, func(t *tensorOut) error { return t.f32(logits) }); err != nil {
		return err
	}
	ids, wts := make([]int32, T*k), make([]float64, T*k)
	if err := golden.MoERoute(ids, wts, logits, T, E, k); err != nil {
		return err
	}
	counts := make([]int64, E)
	for _, e := range ids {
		counts[e]++
	}
	c.setInfo("tokens_per_expert", counts)
	c.addFact("routed", int64(len(ids)))
	for _, n := range counts {
		if n > 0 {
			c.addFact("experts", 1) // an expert some token is routed to
		}
	}
	var hot int64
	for _, n := range counts {
		hot = max(hot, n)
	}
	c.setInfo("max_tokens_per_expert", hot)
	// The weights stream expert by expert into six open tensors; only one
	// expert's weights are held (and decoded) at a time.
	specs := []tensorSpec{
		{name: "w1_codes", role: roleInput, dtype: dtE2M1, shape: []int64{int64(E), int64(2 * in), int64(hd / 2)}},
		{name: "w1_scales", role: roleInput, dtype: dtE8M0, shape: []int64{int64(E), int64(2 * in), int64(hd / golden.MXBlock)}},
		{name: "b1", role: roleInput, dtype: "bfloat16", shape: shape2(E, 2*in)},
		{name: "w2_codes", role: roleInput, dtype: dtE2M1, shape: []int64{int64(E), int64(hd), int64(in / 2)}},
		{name: "w2_scales", role: roleInput, dtype: dtE8M0, shape: []int64{int64(E), int64(hd), int64(in / golden.MXBlock)}},
		{name: "b2", role: roleInput, dtype: "bfloat16", shape: shape2(E, hd)},
	}
	outs := make([]*tensorOut, len(specs))
	for i, ts := range specs {
		t, err := c.create(ts)
		if err != nil {
			return err
		}
		outs[i] = t
	}
	// Expert e+1 is drawn while expert e is written and applied (two
	// buffers); the values do not depend on the overlap.
	type drawn struct {
		w moeExpertWeights
		g *moeGen
	}
	ready, free, done := make(chan drawn, 1), make(chan *moeGen, 2), make(chan struct{})
	defer close(done)
	free <- new(moeGen)
	free <- new(moeGen)
	go func() {
		defer close(ready)
		for e := range E {
			var g *moeGen
			select {
			case g = <-free:
			case <-done:
				return
			}
			select {
			case ready <- drawn{g.expert(c, p, e, mode), g}:
			case <-done:
				return
			}
		}
	}()
	var inUse *moeGen
	expert := func(e int) (moeExpertWeights, error) {
		if err := c.ctx.Err(); err != nil {
			return moeExpertWeights{}, err
		}
		if inUse != nil {
			free <- inUse // expert e-1 is written and applied
		}
		d := <-ready
		w := d.w
		inUse = d.g
		for i, b := range [][]byte{w.w1c, w.w1s, nil, w.w2c, w.w2s, nil} {
			var err error
			switch i {
			case 2:
				err = outs[i].u16(w.b1)
			case 5:
				err = outs[i].u16(w.b2)
			default:
				err = outs[i].bytes(b)
			}
			if err != nil {
				return w, err
			}
		}
		return w, nil
	}
	out, s, err := moeCombine(p, x.bits, ids, wts, expert, goldenExpert(p), true)
	if err != nil {
		return err
	}
	for _, t := range outs {
		if err := t.close(); err != nil {
			return err
		}
	}
	if err := c.writeOutput("out", "bfloat16", shape2(T, hd), out); err != nil {
		return err
	}
	if err := c.writeRounded(tensorSpec{name: "s", role: roleAux, dtype: "float32", shape: shape2(T, hd)}, s); err != nil {
		return err
	}
	if err := c.writeInts(tensorSpec{name: "topk_ids", role: roleAux, dtype: "int32", shape: shape2(T, k)}, ids); err != nil {
		return err
	}
	return c.writeRounded(tensorSpec{name: "topk_weights", role: roleAux, dtype: "float32", shape: shape2(T, k)}, wts)
}

// moeGen draws experts' weights into buffers reused from one expert to
// the next (each is emitted and applied before the next is drawn).
type moeGen struct {
	w moeExpertWeights
}

// expert draws expert e's weights: W1 [2I, Hd] and W2 [Hd, I] as MXFP4
// blocks (drawMXWeights) at the expert's block offsets in the
// "w1_codes" / "w1_scales" and "w2_codes" / "w2_scales" streams, and the
// bf16 biases.
func (g *moeGen) expert(c *caseCtx, p mxMoEParams, e int, mode golden.ScaleMode) moeExpertWeights {
	hd, in := p.Hd, p.I
	n1, n2 := 2*in*hd, hd*in
	if len(g.w.w1c) != n1/2 {
		g.w = moeExpertWeights{w1c: make([]byte, n1/2), w1s: make([]byte, n1/golden.MXBlock), w2c: make([]byte, n2/2), w2s: make([]byte, n2/golden.MXBlock),
			b1: make([]uint16, 2*in), b2: make([]uint16, hd)}
	}
	w := g.w
	drawMXWeights(c.stream("w1_codes"), c.stream("w1_scales"), w.w1c, w.w1s, int64(e)*int64(n1/golden.MXBlock), mode, p.ScaleW1)
	drawMXWeights(c.stream("w2_codes"), c.stream("w2_scales"), w.w2c, w.w2s, int64(e)*int64(n2/golden.MXBlock), mode, p.ScaleW2)
	gen.Normal(c.stream("b1"), w.b1, int64(e)*int64(2*in), gen.BF16, p.BiasStd)
	gen.Normal(c.stream("b2"), w.b2, int64(e)*int64(hd), gen.BF16, p.BiasStd)
	return w
}

// moeData reloads a built MoE case.
type moeData struct {
	x                  []uint16
	ids                []int32
	wts                []float64
	w1c, w1s, w2c, w2s []byte
	b1, b2             []uint16
}

func loadMoE(d caseData, p mxMoEParams) (*moeData, error) {
	var md moeData
	xf, err := d.f32("x")
	if err != nil {
		return nil, err
	}
	md.x = make([]uint16, len(xf))
	npy.BF16sFromF32s(md.x, xf)
	logits, err := d.f32("router_logits")
	if err != nil {
		return nil, err
	}
	md.ids, md.wts = make([]int32, p.T*p.TopK), make([]float64, p.T*p.TopK)
	if err := golden.MoERoute(md.ids, md.wts, logits, p.T, p.E, p.TopK); err != nil {
		return nil, err
	}
	for _, r := range []struct {
		name string
		dst  *[]byte
	}{{"w1_codes", &md.w1c}, {"w1_scales", &md.w1s}, {"w2_codes", &md.w2c}, {"w2_scales", &md.w2s}} {
		if *r.dst, err = d.raw(r.name); err != nil {
			return nil, err
		}
	}
	for _, r := range []struct {
		name string
		dst  *[]uint16
	}{{"b1", &md.b1}, {"b2", &md.b2}} {
		f, err := d.f32(r.name)
		if err != nil {
			return nil, err
		}
		*r.dst = make([]uint16, len(f))
		npy.BF16sFromF32s(*r.dst, f)
	}
	return &md, nil
}

func (md *moeData) expert(p mxMoEParams) func(e int) (moeExpertWeights, error) {
	hd, in := p.Hd, p.I
	n1, n2 := 2*in*hd, hd*in
	return func(e int) (moeExpertWeights, error) {
		return moeExpertWeights{
			w1c: md.w1c[e*n1/2 : (e+1)*n1/2], w1s: md.w1s[e*n1/golden.MXBlock : (e+1)*n1/golden.MXBlock], b1: md.b1[e*2*in : (e+1)*2*in],
			w2c: md.w2c[e*n2/2 : (e+1)*n2/2], w2s: md.w2s[e*n2/golden.MXBlock : (e+1)*n2/golden.MXBlock], b2: md.b2[e*hd : (e+1)*hd],
		}, nil
	}
}

// lowPrecisionExpert is an MoE expert in float32 arithmetic (acc32) or
// with its first GEMM accumulated in bfloat16 (the negative): dequantized
// weights, GEMMs, SwiGLU in float32, biases added in float32; the
// activations rounded to bf16 where the case says so (act_round).
func lowPrecisionExpert(p mxMoEParams, bf16Acc bool) moeExpertFn {
	return func(o, _ []float64, xs []uint16, nt int, w moeExpertWeights) error {
		hd, in := p.Hd, p.I
		xf := make([]float32, nt*hd)
		npy.BF16sToF32s(xf, xs)
		w1 := make([]float32, 2*in*hd)
		if err := golden.MXFP4Dequantize(w1, w.w1c, w.w1s, 2*in, hd); err != nil {
			return err
		}
		h := make([]float64, nt*2*in)
		if bf16Acc {
			if err := golden.MXFP4GEMMBF16Acc(h, make([]float64, len(h)), xs, w.w1c, w.w1s, nt, 2*in, hd); err != nil {
				return err
			}
		} else {
			golden.MatmulF32(h, xf, w1, nt, hd, 2*in, true)
		}
		a := make([]float32, nt*in)
		for r := range nt {
			for i := range in {
				g := float32(h[r*2*in+2*i]) + float32(npy.BF16ToF64(w.b1[2*i]))
				l := float32(h[r*2*in+2*i+1]) + float32(npy.BF16ToF64(w.b1[2*i+1]))
				g = min(g, float32(golden.SwiGLULimit))
				l = min(max(l, -float32(golden.SwiGLULimit)), float32(golden.SwiGLULimit))
				sig := float32(1 / (1 + detmath.Exp(-float64(float32(golden.SwiGLUAlpha)*g))))
				a[r*in+i] = g * sig * (l + 1)
				if p.roundAct() {
					a[r*in+i] = npy.BF16ToF32(npy.BF16FromF64(float64(a[r*in+i])))
				}
			}
		}
		w2 := make([]float32, hd*in)
		if err := golden.MXFP4Dequantize(w2, w.w2c, w.w2s, hd, in); err != nil {
			return err
		}
		golden.MatmulF32(o, a, w2, nt, in, hd, true)
		for r := range nt {
			for c := range hd {
				o[r*hd+c] = float64(float32(o[r*hd+c]) + float32(npy.BF16ToF64(w.b2[c])))
			}
		}
		return nil
	}
}

func mxMoEControls(d caseData) ([]Control, error) {
	var p mxMoEParams
	if err := json.Unmarshal(d.c.Params, &p); err != nil {
		return nil, err
	}
	md, err := loadMoE(d, p)
	if err != nil {
		return nil, err
	}
	run := func(fn moeExpertFn, expert func(int) (moeExpertWeights, error)) ([]float64, error) {
		out, _, err := moeCombine(p, md.x, md.ids, md.wts, expert, fn, false)
		return out, err
	}
	ctl := []Control{zeros(d, "out")}
	bf, err := run(lowPrecisionExpert(p, true), md.expert(p))
	if err != nil {
		return nil, err
	}
	ctl = append(ctl, Control{Name: "bf16_accumulate", Note: "W1 x accumulated in bfloat16", Outputs: []ControlOutput{d.output("out", bf)}})
	base := md.expert(p)
	bias := func(e int) (moeExpertWeights, error) {
		w, err := base(e)
		s := make([]byte, len(w.w1s))
		for i, b := range w.w1s {
			s[i] = b - 1 // 2^(b-128): W1 halved, as a bias-128 reader sees it
		}
		w.w1s = s
		return w, err
	}
	sb, err := run(goldenExpert(p), bias)
	if err != nil {
		return nil, err
	}
	ctl = append(ctl, Control{Name: "scale_bias_128", Note: "W1's scale bytes read as 2^(b-128)", Outputs: []ControlOutput{d.output("out", sb)}})
	swapped := func(e int) (moeExpertWeights, error) {
		w, err := base(e)
		w.w2c = swapNibbles(w.w2c)
		return w, err
	}
	sw, err := run(goldenExpert(p), swapped)
	if err != nil {
		return nil, err
	}
	ctl = append(ctl, Control{Name: "w2_swapped_nibbles", Note: "W2's element 2i read from the high nibble", Outputs: []ControlOutput{d.output("out", sw)}})
	flipped := p
	flipped.ActRound = map[bool]string{true: "none", false: "bfloat16"}[p.roundAct()]
	fa, err := run(goldenExpert(flipped), md.expert(p))
	if err != nil {
		return nil, err
	}
	ctl = append(ctl, Control{Name: "act_round_" + flipped.ActRound, Note: "the activations rounded as act_round " + flipped.ActRound + " says, not as the case says",
		Outputs: []ControlOutput{d.output("out", fa)}})
	f32, err := run(lowPrecisionExpert(p, false), md.expert(p))
	if err != nil {
		return nil, err
	}
	ctl = append(ctl, Control{Name: "fp32_accumulate", Pass: true, Note: "an honest kernel: dequantized weights, float32 GEMMs, SwiGLU and combine inputs", Outputs: []ControlOutput{d.output("out", f32)}})
	return ctl, nil
}

// mxGEMMWork: the operands the variant's kernel consumes (pre-quantized
// activations for a4w4 and w4a8, not x) read whole, y written whole,
// 2*m*n*k flops in the activations' dtype.
func mxGEMMWork(in []string, flopDType string) func(workIn) (manifests.Work, error) {
	return func(w workIn) (manifests.Work, error) {
		p, err := decodeWork[mxGEMMParams](w)
		if err != nil {
			return manifests.Work{}, err
		}
		return wholeWork(w, in, []string{"y"}, 2*int64(p.M)*int64(p.N)*int64(p.K), flopDType)
	}
}

// mxMoEWork: x and the router logits read whole; the weights, scales and
// biases of the experts some token is routed to read once; out written.
// Each of the t*topk routed (token, expert) pairs costs the gate-up
// product (2*hd*2i) and the down product (2*i*hd).
func mxMoEWork(w workIn) (manifests.Work, error) {
	p, err := decodeWork[mxMoEParams](w)
	if err != nil {
		return manifests.Work{}, err
	}
	var s, per sumErr
	s.add(w.bytes("x", "router_logits"))
	for _, t := range []string{"w1_codes", "w1_scales", "b1", "w2_codes", "w2_scales", "b2"} {
		per.add(w.rowBytes(t))
	}
	experts, err := w.fact("experts")
	s.add(experts*per.v, cmp.Or(err, per.err))
	routed, err := w.fact("routed")
	s.add(0, err)
	wr, err := w.bytes("out")
	s.add(0, err)
	if s.err != nil {
		return manifests.Work{}, s.err
	}
	return manifests.Work{BytesRead: s.v, BytesWritten: wr, Flops: 6 * routed * int64(p.Hd) * int64(p.I), FlopDType: "bfloat16"}, nil
}
