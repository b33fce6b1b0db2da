package suite

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/goldset/goldset/compare"
	"github.com/goldset/goldset/gen"
	"github.com/goldset/goldset/golden"
	"github.com/goldset/goldset/internal/dtype"
	"github.com/goldset/goldset/manifests"
)

// MXFP4 ops (docs/spec.md §9, ops.md §9): quantize, dequantize and the
// FP4 -> FP8 conversion here; the GEMMs and the MoE in op_mxfp4_gemm.go.
// Codes are stored as float4_e2m1fn_x2 [*, K/2] (element 2i in the low
// nibble), scales as float8_e8m0fnu [*, K/32], FP8 as float8_e4m3fn.

const (
	dtE2M1 = "float4_e2m1fn_x2"
	dtE8M0 = "float8_e8m0fnu"
	dtE4M3 = "float8_e4m3fn"
)

// The edge split's convention for scale bytes (recorded in each edge
// case's info): what §9b's dequantize gives for the bytes outside [2, 252].
const edgeConvention = "E8M0 byte b is 2^(b-127): 0 -> 2^-127, 255 -> NaN for every code; products >= 2^128 (b = 253 with values 4 and 6, b = 254 with values >= 2) are +-Inf"

var _ = register(&op{
	name:    "mxfp4_quantize",
	export:  exportSpec{flashinfer: "mxfp4_quant", ascend: "Mxfp4Quantize"},
	inputs:  []string{"x"},
	outputs: []output{{name: "codes", dtype: dtE2M1, tol: compare.MXValue}, {name: "scales", dtype: dtE8M0, tol: compare.MXScale}},
	aux:     []string{mxCodesAlt, mxScalesAlt},
	plan:    planMXQuantize, controls: mxQuantizeControls, mask: mxScaleMask, tensorsOf: mxQuantizeTensors,
	work: mxElementWork([]string{"x"}, []string{"codes", "scales"}, 2),
})

// The accepted alternative of rceil quantize cases that reach float32
// subnormal quotients amax/6 (exp_lo <= mxAltExpLo): triton_kernels'
// ROUND_UP byte 1 where the exact rule gives 0, with the codes of x*2^126
// (golden.MXFP4QuantizeRoundUpBits; docs/spec.md §9a). Codes are accepted
// block by block (all 32 or none), scale bytes one by one.
const (
	mxCodesAlt  = "codes_alt"
	mxScalesAlt = "scales_alt"
	mxAltExpLo  = -100
)

// mxQuantAlt reports whether a quantize case carries the alternative:
// rceil with blocks scaled down to 2^exp_lo <= 2^-100. Blocks of normals
// scaled by 2^u >= 2^-100 stay far above 6*2^-127; a case without the
// alternative whose golden nonetheless reaches such a block is refused
// when it is built.
func mxQuantAlt(p mxQuantParams) bool {
	return p.Mode == "rceil" && p.ExpLo != nil && *p.ExpLo <= mxAltExpLo
}

// mxQuantizeTensors: alternative cases add codes_alt and scales_alt.
func mxQuantizeTensors(raw json.RawMessage) (in, out, aux []string) {
	var p mxQuantParams
	json.Unmarshal(raw, &p)
	if p.Mode == "" {
		p.Mode = "rceil"
	}
	if mxQuantAlt(p) {
		aux = []string{mxCodesAlt, mxScalesAlt}
	}
	return []string{"x"}, []string{"codes", "scales"}, aux
}

var _ = register(&op{
	name:    "mxfp4_dequantize",
	export:  exportSpec{flashinfer: "mxfp4_quant", ascend: "Mxfp4Dequantize"},
	inputs:  []string{"codes", "scales"},
	outputs: []output{{name: "y", tol: compare.MXValue}},
	plan:    planMXDequantize, controls: mxDequantizeControls,
	work: mxElementWork([]string{"codes", "scales"}, []string{"y"}, 1),
})

var _ = register(&op{
	name:   "mxfp4_to_fp8",
	export: exportSpec{flashinfer: "mxfp4_quant", ascend: "Mxfp4ToFp8"},
	inputs: []string{"codes", "scales"},
	outputs: []output{{name: "fp8", dtype: dtE4M3, tol: compare.MXValue}, {name: "scale", dtype: dtE8M0, tol: compare.MXScale},
		{name: "scale_f32", dtype: "float32", tol: compare.MXScale}, {name: "inexact", dtype: "uint8", tol: compare.Exact}},
	plan: planMXToFP8, controls: mxToFP8Controls, mask: mxScaleMask,
	work: mxElementWork([]string{"codes", "scales"}, []string{"fp8", "scale", "scale_f32", "inexact"}, 1),
})

// ---- shared ----

// strictTune swaps the 0 = 8 equality of MXValue outputs for byte identity
// when a case asks for `strict`.
func strictTune(strict bool, names ...string) func(string) (compare.Family, bool) {
	if !strict {
		return nil
	}
	return func(name string) (compare.Family, bool) {
		for _, n := range names {
			if n == name {
				return compare.MXStrict, true
			}
		}
		return compare.Family{}, false
	}
}

func checkMXK(k int) error {
	if k%golden.MXBlock != 0 {
		return errParams("k = %d is not a multiple of %d", k, golden.MXBlock)
	}
	return nil
}

func defFloat(p **float64, v float64) {
	if *p == nil {
		*p = &v
	}
}

func checkFrac(name string, v float64) error {
	if !(v >= 0 && v <= 1) {
		return errParams("%s = %v: want a fraction in [0, 1]", name, v)
	}
	return nil
}

// writeBytes writes a tensor whose data are the given bytes (byte-coded
// dtypes: uint8, E2M1 pairs, E8M0 and e4m3 codes).
func (c *caseCtx) writeBytes(ts tensorSpec, b []byte) error {
	return c.write(ts, func(t *tensorOut) error { return t.bytes(b) })
}

func (t *tensorOut) bytes(b []byte) error {
	for len(b) > 0 {
		n := min(len(b), 4*emitChunk)
		if err := t.emit(b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

func shape2(a, b int) []int64 { return []int64{int64(a), int64(b)} }

// raw returns a tensor's data bytes (packed codes, scale bytes).
func (d caseData) raw(name string) ([]byte, error) {
	t := d.c.Tensor(name)
	if t == nil {
		return nil, errParams("case %s has no tensor %q", d.c.ID, name)
	}
	_, data, err := manifests.LoadTensor(d.dir, t)
	return data, err
}

// codesScales returns the case's input codes and scales bytes.
func (d caseData) codesScales() (codes, scales []byte, err error) {
	if codes, err = d.raw("codes"); err != nil {
		return nil, nil, err
	}
	scales, err = d.raw("scales")
	return codes, scales, err
}

// mxRandomCodes draws packed codes [rows, k/2] (every nibble uniform in
// 0..15) and scale bytes [rows, k/32] uniform in [lo, hi]; with edge, a
// quarter of the blocks take a byte from {0, 1, 253, 254, 255} instead; a
// zeroBlocks fraction of blocks get only codes 0 and 8.
func mxRandomCodes(c *caseCtx, rows, k, lo, hi int, edge bool, zeroBlocks float64) (codes, scales []byte) {
	nb := rows * k / golden.MXBlock
	nib := make([]int32, rows*k)
	gen.Ints(c.stream("codes"), nib, 0, 0, 16)
	sc := make([]int32, nb)
	gen.Ints(c.stream("scales"), sc, 0, int64(lo), int64(hi)+1)
	pick := make([]float32, 2*nb)
	gen.Uniform(c.stream("blocks"), pick, 0, gen.F32, 0, 1)
	edgeBytes := [5]int32{0, 1, 253, 254, 255}
	for b := range nb {
		if edge && pick[b] < 0.25 {
			sc[b] = edgeBytes[int(pick[b]*20)%5]
		}
		if float64(pick[nb+b]) < zeroBlocks {
			for i := b * golden.MXBlock; i < (b+1)*golden.MXBlock; i++ {
				nib[i] &= 8
			}
		}
	}
	codes = make([]byte, rows*k/2)
	for i := range codes {
		codes[i] = byte(nib[2*i]) | byte(nib[2*i+1])<<4
	}
	scales = make([]byte, nb)
	for i, v := range sc {
		scales[i] = byte(v)
	}
	return codes, scales
}

// mxScaleMask grades the scale of a block (or fold group) only where the
// golden codes hold a nonzero value: an all-zero block's byte is read by
// no consumer (ops.md §9a).
func mxScaleMask(d caseData, output string, shape []int64) ([]bool, error) {
	if output != "scales" && output != "scale" && output != "scale_f32" {
		return nil, nil
	}
	src := "codes"
	if d.c.Op == "mxfp4_to_fp8" {
		src = "codes" // the input codes: a group's scale matters where its blocks hold a nonzero code
	}
	codes, err := d.raw(src)
	if err != nil {
		return nil, err
	}
	rows, ng := int(shape[0]), int(shape[1])
	k := 2 * len(codes) / max(rows, 1)
	per := k / max(ng, 1) // elements per graded scale
	if d.c.Op == "mxfp4_to_fp8" {
		var p mxFP8Params
		if err := json.Unmarshal(d.c.Params, &p); err != nil {
			return nil, err
		}
		per = golden.MXBlock * p.G
	}
	mask := make([]bool, rows*ng)
	for r := range rows {
		for j := range ng {
			for e := j * per; e < min((j+1)*per, k); e++ {
				if codes[(r*k+e)/2]>>(4*uint(e%2))&7 != 0 {
					mask[r*ng+j] = true
					break
				}
			}
		}
	}
	return mask, nil
}

// codeValues decodes packed codes to their E2M1 values (with signed zero).
func codeValues(codes []byte) []float64 {
	v := make([]float64, 2*len(codes))
	for i, b := range codes {
		v[2*i], v[2*i+1] = dtype.E2M1ToF64(b&15), dtype.E2M1ToF64(b>>4)
	}
	return v
}

func byteValues(b []byte, dt dtype.DType) []float64 {
	v := make([]float64, len(b))
	dt.Decode(v, b)
	return v
}

func swapNibbles(codes []byte) []byte {
	out := make([]byte, len(codes))
	for i, p := range codes {
		out[i] = p<<4 | p>>4
	}
	return out
}

func foldNegZero(codes []byte) []byte {
	out := make([]byte, len(codes))
	golden.FoldNegZero(out, codes)
	return out
}

// ---- mxfp4_quantize (§9a) ----

type mxQuantParams struct {
	Rows   int    `json:"rows"`
	K      int    `json:"k"`
	DType  string `json:"dtype"` // of x: bfloat16 or float32
	Mode   string `json:"mode"`  // rceil (default), floor, ceil, even
	Strict bool   `json:"strict"`
	// ZeroBlocks: fraction of blocks set to +-0 (default 1/16).
	ZeroBlocks *float64 `json:"zero_blocks"`
	// CoarseFrac: fraction of elements rounded to 3 significant bits, which
	// puts them on E2M1 midpoints and on the modes' 1.5 / 1.75 boundaries
	// (default 0.25).
	CoarseFrac *float64 `json:"coarse_frac"`
	// ExpLo, ExpHi: each block is scaled by 2^u, u uniform in [ExpLo,
	// ExpHi] (default -8, 8; the edge split uses -140 .. -120 and 120 ..
	// 127 for scale bytes 0, 1 and 253).
	ExpLo *int `json:"exp_lo"`
	ExpHi *int `json:"exp_hi"`
}

func planMXQuantize(raw json.RawMessage) (*casePlan, error) {
	var p mxQuantParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if p.Mode == "" {
		p.Mode = "rceil"
	}
	defFloat(&p.ZeroBlocks, 1.0/16)
	defFloat(&p.CoarseFrac, 0.25)
	if p.ExpLo == nil {
		v := -8
		p.ExpLo = &v
	}
	if p.ExpHi == nil {
		v := 8
		p.ExpHi = &v
	}
	for _, e := range []error{checkRange("rows", p.Rows, 1, maxDim), checkRange("k", p.K, 32, maxDim), checkMXK(p.K),
		checkFrac("zero_blocks", *p.ZeroBlocks), checkFrac("coarse_frac", *p.CoarseFrac),
		checkRange("exp_lo", *p.ExpLo, -160, 127), checkRange("exp_hi", *p.ExpHi, *p.ExpLo, 127)} {
		if e != nil {
			return nil, e
		}
	}
	if p.DType != "bfloat16" && p.DType != "float32" {
		return nil, errParams("dtype %q: want bfloat16 or float32", p.DType)
	}
	if _, err := golden.ParseScaleMode(p.Mode); err != nil {
		return nil, errParams("%v", err)
	}
	if err := checkHeld("x", p.Rows, p.K); err != nil {
		return nil, err
	}
	n := int64(p.Rows) * int64(p.K)
	bytes := n*dtypeSize(p.DType) + n/2 + n/32
	pl := &casePlan{params: canonical(p), dtype: p.DType, bytes: bytes, family: strictTune(p.Strict, "codes"),
		build: func(c *caseCtx) error { return buildMXQuantize(c, p) }}
	if mxQuantAlt(p) {
		pl.bytes += n/2 + n/32
		strict := pl.family
		pl.family = func(out string) (compare.Family, bool) {
			switch out {
			case "codes":
				f := compare.MXValue
				if strict != nil {
					f, _ = strict(out)
				}
				return f.WithAlt(mxCodesAlt, golden.MXBlock), true
			case "scales":
				return compare.MXScale.WithAlt(mxScalesAlt, 1), true
			}
			return compare.Family{}, false
		}
	}
	return pl, nil
}

// mxQuantInput draws x [rows, k]: N(0, 1) values, a CoarseFrac of them
// rounded to 3 significant bits, each block scaled by 2^u, ZeroBlocks of
// the blocks set to +-0 (the normal's sign), magnitudes clamped to the
// dtype's largest finite value.
func mxQuantInput(c *caseCtx, p mxQuantParams) floatTensor {
	n := p.Rows * p.K
	nb := n / golden.MXBlock
	x := normalTensor(c.stream("x"), p.DType, n, 0, 1)
	coarse := make([]float32, n)
	gen.Uniform(c.stream("x_coarse"), coarse, 0, gen.F32, 0, 1)
	exps := make([]int32, nb)
	gen.Ints(c.stream("x_block_exp"), exps, 0, int64(*p.ExpLo), int64(*p.ExpHi)+1)
	zero := make([]float32, nb)
	gen.Uniform(c.stream("x_zero"), zero, 0, gen.F32, 0, 1)
	maxF := dtypeOf(p.DType).MaxFinite()
	for i, v := range x.vals {
		b := i / golden.MXBlock
		f := float64(v)
		if float64(coarse[i]) < *p.CoarseFrac {
			fr, e := math.Frexp(f)
			f = math.Ldexp(math.RoundToEven(fr*8)/8, e)
		}
		f = math.Ldexp(f, int(exps[b]))
		if float64(zero[b]) < *p.ZeroBlocks {
			f = math.Copysign(0, f)
		}
		if math.Abs(f) > maxF {
			f = math.Copysign(maxF, f)
		}
		x.set(i, f)
	}
	return x
}

func buildMXQuantize(c *caseCtx, p mxQuantParams) error {
	mode, _ := golden.ParseScaleMode(p.Mode)
	x := mxQuantInput(c, p)
	if err := c.writeFloat(tensorSpec{name: "x", role: roleInput, dtype: p.DType, shape: shape2(p.Rows, p.K)}, &x); err != nil {
		return err
	}
	codes := make([]byte, p.Rows*p.K/2)
	scales := make([]byte, p.Rows*p.K/golden.MXBlock)
	if err := golden.MXFP4Quantize(codes, scales, x.vals, p.Rows, p.K, mode); err != nil {
		return err
	}
	hist := make(map[string]int)
	for i, b := range scales {
		switch b {
		case 0, 1, 253, 254:
			if !allZeroBlock(codes, i) {
				hist[strconv.Itoa(int(b))]++
			}
		}
	}
	if len(hist) > 0 {
		c.setInfo("edge_scale_bytes", hist)
		c.setInfo("scale_convention", edgeConvention)
	}
	var altCodes, altScales []byte
	if mode == golden.ScaleRceil {
		altCodes, altScales = make([]byte, len(codes)), make([]byte, len(scales))
		if err := golden.MXFP4QuantizeRoundUpBits(altCodes, altScales, x.vals, p.Rows, p.K); err != nil {
			return err
		}
		n := 0
		for i := range scales {
			if altScales[i] != scales[i] {
				n++
			}
		}
		switch {
		case mxQuantAlt(p):
			c.setInfo("round_up_bits_blocks", n) // blocks where triton_kernels' byte 1 is accepted beside 0
		case n > 0:
			return errParams("%d blocks have amax <= 6*2^-127, where triton_kernels' rceil byte (1) differs from the exact rule's (0); such cases carry the accepted alternative only with exp_lo <= %d", n, mxAltExpLo)
		}
	}
	if err := c.writeBytes(tensorSpec{name: "codes", role: roleGolden, dtype: dtE2M1, shape: shape2(p.Rows, p.K/2)}, codes); err != nil {
		return err
	}
	if err := c.writeBytes(tensorSpec{name: "scales", role: roleGolden, dtype: dtE8M0, shape: shape2(p.Rows, p.K/golden.MXBlock)}, scales); err != nil {
		return err
	}
	if !mxQuantAlt(p) {
		return nil
	}
	if err := c.writeBytes(tensorSpec{name: mxCodesAlt, role: roleAux, dtype: dtE2M1, shape: shape2(p.Rows, p.K/2)}, altCodes); err != nil {
		return err
	}
	return c.writeBytes(tensorSpec{name: mxScalesAlt, role: roleAux, dtype: dtE8M0, shape: shape2(p.Rows, p.K/golden.MXBlock)}, altScales)
}

func mxQuantizeControls(d caseData) ([]Control, error) {
	var p mxQuantParams
	if err := json.Unmarshal(d.c.Params, &p); err != nil {
		return nil, err
	}
	mode, err := golden.ParseScaleMode(p.Mode)
	if err != nil {
		return nil, err
	}
	x, err := d.f32("x")
	if err != nil {
		return nil, err
	}
	gc, err := d.raw("codes")
	if err != nil {
		return nil, err
	}
	gs, err := d.raw("scales")
	if err != nil {
		return nil, err
	}
	rows, k := p.Rows, p.K
	nb := rows * k / golden.MXBlock
	quant := func(name, note string, pass bool, f func(codes, scales []byte) error) (Control, error) {
		codes, scales := make([]byte, rows*k/2), make([]byte, nb)
		if err := f(codes, scales); err != nil {
			return Control{}, err
		}
		return Control{Name: name, Pass: pass, Note: note, Outputs: []ControlOutput{
			d.output("codes", codeValues(codes)), d.output("scales", byteValues(scales, dtype.Float8E8M0))}}, nil
	}
	var ctl []Control
	add := func(k Control, err error) error {
		if err == nil {
			ctl = append(ctl, k)
		}
		return err
	}
	ctl = append(ctl, zeros(d, "codes"))
	steps := []struct {
		name, note string
		pass, on   bool
		f          func(codes, scales []byte) error
	}{
		{"swapped_nibbles", "element 2i in the high nibble", false, true, func(c, s []byte) error {
			return golden.MXFP4QuantizeSwappedNibbles(c, s, x, rows, k, mode)
		}},
		{"floor_for_rceil", "the floor mode's scales where rceil is asked", false, mode == golden.ScaleRceil, func(c, s []byte) error {
			return golden.MXFP4QuantizeFloorForRceil(c, s, x, rows, k)
		}},
		{"half_away", "element ties rounded away from zero", false, true, func(c, s []byte) error {
			return golden.MXFP4QuantizeHalfAway(c, s, x, rows, k, mode)
		}},
		{"half_down", "element ties rounded toward zero (DeepGEMM's bucketize)", false, true, func(c, s []byte) error {
			return golden.MXFP4QuantizeHalfDown(c, s, x, rows, k, mode)
		}},
		{"neg_zero_dropped", "-0 (code 8) folded to +0: rejected under strict, accepted otherwise", !p.Strict, true, func(c, s []byte) error {
			return golden.MXFP4QuantizeNoNegZero(c, s, x, rows, k, mode)
		}},
		{"scale_per16", "NVFP4's 16-element blocks with E8M0 scales (the first scale of each pair read)", false, true, func(c, s []byte) error {
			s16 := make([]byte, 2*nb)
			if err := golden.MXFP4QuantizeScalePer16(c, s16, x, rows, k, mode); err != nil {
				return err
			}
			for i := range s {
				s[i] = s16[2*i]
			}
			return nil
		}},
		{"naive_quantizer", "an independent quantizer: float64 amax, the mode's exponent by Frexp, dtype.E2M1FromF64", true, true, func(c, s []byte) error {
			naiveQuantize(c, s, x, mode)
			return nil
		}},
		{"zero_block_scale_free", "the golden with every all-zero block's scale byte set to 127 (ungraded)", true, true, func(c, s []byte) error {
			copy(c, gc)
			copy(s, gs)
			for b := range s {
				if allZeroBlock(gc, b) {
					s[b] = 127
				}
			}
			return nil
		}},
	}
	for _, st := range steps {
		if !st.on {
			continue
		}
		if err := add(quant(st.name, st.note, st.pass, st.f)); err != nil {
			return nil, err
		}
	}
	if !mxQuantAlt(p) {
		return ctl, nil
	}
	return mxRoundUpBitsControls(d, ctl, gc, gs)
}

// mxRoundUpBitsControls: triton_kernels' rceil (byte 1 and the codes of
// x*2^126 in the subnormal-quotient blocks) must pass; a differing block
// with one code from each convention, or a scale byte of neither, must
// fail.
func mxRoundUpBitsControls(d caseData, ctl []Control, gc, gs []byte) ([]Control, error) {
	ac, err := d.raw(mxCodesAlt)
	if err != nil {
		return nil, err
	}
	as, err := d.raw(mxScalesAlt)
	if err != nil {
		return nil, err
	}
	out := func(name, note string, pass bool, codes, scales []byte) Control {
		return Control{Name: name, Pass: pass, Note: note, Outputs: []ControlOutput{
			d.output("codes", codeValues(codes)), d.output("scales", byteValues(scales, dtype.Float8E8M0))}}
	}
	ctl = append(ctl, out("round_up_bits", "triton_kernels' rceil: byte 1 and the codes of x*2^126 where amax <= 6*2^-127", true, ac, as))
	for b := range gs {
		if as[b] == gs[b] || allZeroBlock(gc, b) {
			continue
		}
		// a graded block where the conventions differ
		var diff []int
		for i := b * golden.MXBlock / 2; i < (b+1)*golden.MXBlock/2; i++ {
			if gc[i]&0x77 != ac[i]&0x77 {
				diff = append(diff, i)
			}
		}
		if len(diff) < 2 {
			continue // mixing needs two differing code bytes
		}
		c := append([]byte(nil), ac...)
		c[diff[0]] = gc[diff[0]] // one byte (two codes) from the exact rule, the rest triton's
		ctl = append(ctl, out("round_up_bits_mixed_block", "one block's codes taken partly from each convention", false, c, as))
		s := append([]byte(nil), as...)
		s[b] = 2
		ctl = append(ctl, out("round_up_bits_byte2", "byte 2 in a block where the conventions give 0 and 1", false, ac, s))
		break
	}
	return ctl, nil
}

func allZeroBlock(codes []byte, b int) bool {
	for _, p := range codes[b*golden.MXBlock/2 : (b+1)*golden.MXBlock/2] {
		if p&0x77 != 0 {
			return false
		}
	}
	return true
}

// naiveQuantize is §9a written from the spec's formulas in float64: the
// scale exponent from Frexp of amax, elements by dtype.E2M1FromF64 of the
// exactly scaled value (ties to even, saturating, sign kept).
func naiveQuantize(codes, scales []byte, x []float32, mode golden.ScaleMode) {
	for b := range scales {
		blk := x[b*golden.MXBlock : (b+1)*golden.MXBlock]
		var amax float64
		for _, v := range blk {
			amax = max(amax, math.Abs(float64(v)))
		}
		var byt int
		if amax > 0 {
			fr, e := math.Frexp(amax) // amax = fr*2^e, fr in [0.5, 1)
			f, E := 2*fr, e-1         // f in [1, 2)
			var ex int
			switch mode {
			case golden.ScaleRceil:
				ex = E - 2
				if f > 1.5 {
					ex++
				}
			case golden.ScaleFloor:
				ex = E - 2
			case golden.ScaleCeil:
				ex = E - 2
				if f > 1 {
					ex++
				}
			case golden.ScaleEven:
				ex = E - 2
				if f >= 1.75 {
					ex++
				}
			}
			byt = min(max(ex+127, 0), 254)
		}
		scales[b] = byte(byt)
		for i := 0; i < golden.MXBlock; i += 2 {
			lo := dtype.E2M1FromF64(math.Ldexp(float64(blk[i]), 127-byt))
			hi := dtype.E2M1FromF64(math.Ldexp(float64(blk[i+1]), 127-byt))
			codes[(b*golden.MXBlock+i)/2] = lo | hi<<4
		}
	}
}

// ---- mxfp4_dequantize (§9b) ----

type mxDequantParams struct {
	Rows  int    `json:"rows"`
	K     int    `json:"k"`
	DType string `json:"dtype"` // of y: float32 or bfloat16
	// ScaleLo, ScaleHi: the range of the scale bytes (default 2, 252).
	ScaleLo int `json:"scale_lo"`
	ScaleHi int `json:"scale_hi"`
	// Edge: a quarter of the blocks take a byte from {0, 1, 253, 254, 255}.
	Edge bool `json:"edge"`
	// ZeroBlocks: fraction of blocks with only codes 0 and 8 (default 1/16).
	ZeroBlocks *float64 `json:"zero_blocks"`
}

func planMXDequantize(raw json.RawMessage) (*casePlan, error) {
	var p mxDequantParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if p.ScaleLo == 0 && p.ScaleHi == 0 {
		p.ScaleLo, p.ScaleHi = 2, 252
	}
	defFloat(&p.ZeroBlocks, 1.0/16)
	for _, e := range []error{checkRange("rows", p.Rows, 1, maxDim), checkRange("k", p.K, 32, maxDim), checkMXK(p.K),
		checkRange("scale_lo", p.ScaleLo, 0, 255), checkRange("scale_hi", p.ScaleHi, p.ScaleLo, 255), checkFrac("zero_blocks", *p.ZeroBlocks)} {
		if e != nil {
			return nil, e
		}
	}
	if p.DType != "bfloat16" && p.DType != "float32" {
		return nil, errParams("dtype %q: want float32 or bfloat16", p.DType)
	}
	if err := checkHeld("y", p.Rows, p.K); err != nil {
		return nil, err
	}
	n := int64(p.Rows) * int64(p.K)
	return &casePlan{params: canonical(p), dtype: p.DType, bytes: n/2 + n/32 + n*dtypeSize(p.DType),
		build: func(c *caseCtx) error { return buildMXDequantize(c, p) }}, nil
}

func buildMXDequantize(c *caseCtx, p mxDequantParams) error {
	codes, scales := mxRandomCodes(c, p.Rows, p.K, p.ScaleLo, p.ScaleHi, p.Edge, *p.ZeroBlocks)
	if p.Edge || p.ScaleLo < 2 || p.ScaleHi > 252 {
		c.setInfo("scale_convention", edgeConvention)
	}
	if err := c.writeBytes(tensorSpec{name: "codes", role: roleInput, dtype: dtE2M1, shape: shape2(p.Rows, p.K/2)}, codes); err != nil {
		return err
	}
	if err := c.writeBytes(tensorSpec{name: "scales", role: roleInput, dtype: dtE8M0, shape: shape2(p.Rows, p.K/golden.MXBlock)}, scales); err != nil {
		return err
	}
	ts := tensorSpec{name: "y", role: roleGolden, dtype: p.DType, shape: shape2(p.Rows, p.K)}
	if p.DType == "float32" {
		y := make([]float32, p.Rows*p.K)
		if err := golden.MXFP4Dequantize(y, codes, scales, p.Rows, p.K); err != nil {
			return err
		}
		return c.write(ts, func(t *tensorOut) error { return t.f32(y) })
	}
	y := make([]uint16, p.Rows*p.K)
	if err := golden.MXFP4DequantizeBF16(y, codes, scales, p.Rows, p.K); err != nil {
		return err
	}
	return c.write(ts, func(t *tensorOut) error { return t.u16(y) })
}

func mxDequantizeControls(d caseData) ([]Control, error) {
	var p mxDequantParams
	if err := json.Unmarshal(d.c.Params, &p); err != nil {
		return nil, err
	}
	codes, scales, err := d.codesScales()
	if err != nil {
		return nil, err
	}
	rows, k := p.Rows, p.K
	deq := func(name, note string, f func(dst []float32) error) (Control, error) {
		dst := make([]float32, rows*k)
		if err := f(dst); err != nil {
			return Control{}, err
		}
		v := make([]float64, len(dst))
		for i, x := range dst {
			v[i] = float64(x)
		}
		return Control{Name: name, Note: note, Outputs: []ControlOutput{d.output("y", v)}}, nil
	}
	ctl := []Control{zeros(d, "y")}
	type step struct {
		name, note string
		f          func([]float32) error
	}
	steps := []step{
		{"scale_bias_128", "scale byte b read as 2^(b-128)", func(y []float32) error { return golden.MXFP4DequantizeBias128(y, codes, scales, rows, k) }},
		{"scale_as_e4m3", "the E8M0 byte read as an e4m3 value", func(y []float32) error { return golden.MXFP4DequantizeScaleAsE4M3(y, codes, scales, rows, k) }},
		{"swapped_nibbles", "element 2i read from the high nibble", func(y []float32) error {
			return golden.MXFP4Dequantize(y, swapNibbles(codes), scales, rows, k)
		}},
	}
	if transposeDiffers(scales, rows, k/golden.MXBlock) {
		steps = append(steps, step{"scales_transposed", "scales read as [k/32, rows]", func(y []float32) error {
			return golden.MXFP4DequantizeScalesTransposed(y, codes, scales, rows, k)
		}})
	}
	for _, st := range steps {
		k, err := deq(st.name, st.note, st.f)
		if err != nil {
			return nil, err
		}
		ctl = append(ctl, k)
	}
	// An independent decode: the dtype table's E2M1 value times its E8M0
	// value in float64, stored in y's dtype (which makes overflow +-Inf).
	vals := codeValues(codes)
	naive := make([]float64, len(vals))
	for i, v := range vals {
		naive[i] = float64(v * dtype.E8M0ToF64(scales[i/golden.MXBlock]))
	}
	ctl = append(ctl, Control{Name: "naive_decode", Pass: true, Note: "E2M1 value times 2^(b-127) in float64 (dtype table), rounded to y's dtype", Outputs: []ControlOutput{d.output("y", naive)}})
	return ctl, nil
}

// ---- mxfp4_to_fp8 (§9c) ----

type mxFP8Params struct {
	Rows   int    `json:"rows"`
	K      int    `json:"k"`
	Target string `json:"target"` // mxfp8 (default) or fold_group
	// G: blocks of 32 per fold group (fold_group; default 4, DeepGEMM's
	// 1x128); 1 for mxfp8, whose "groups" are the blocks.
	G       int  `json:"g"`
	Strict  bool `json:"strict"`
	ScaleLo int  `json:"scale_lo"` // scale byte range (default 107 .. 147: 40 binades, so some blocks fall > 14 below their group's max)
	ScaleHi int  `json:"scale_hi"`
	// ZeroBlocks: fraction of blocks with only codes 0 and 8 (default 1/8).
	ZeroBlocks *float64 `json:"zero_blocks"`
}

func planMXToFP8(raw json.RawMessage) (*casePlan, error) {
	var p mxFP8Params
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if p.Target == "" {
		p.Target = "mxfp8"
	}
	switch p.Target {
	case "mxfp8":
		if p.G == 0 {
			p.G = 1
		}
		if p.G != 1 {
			return nil, errParams("target mxfp8 keeps one scale per block: g = %d must be 1", p.G)
		}
	case "fold_group":
		if p.G == 0 {
			p.G = 4
		}
	default:
		return nil, errParams("target %q: want mxfp8 or fold_group", p.Target)
	}
	if p.ScaleLo == 0 && p.ScaleHi == 0 {
		p.ScaleLo, p.ScaleHi = 107, 147
	}
	defFloat(&p.ZeroBlocks, 1.0/8)
	for _, e := range []error{checkRange("rows", p.Rows, 1, maxDim), checkRange("k", p.K, 32, maxDim), checkMXK(p.K),
		checkRange("g", p.G, 1, 1<<10), checkRange("scale_lo", p.ScaleLo, 0, 254), checkRange("scale_hi", p.ScaleHi, p.ScaleLo, 254),
		checkFrac("zero_blocks", *p.ZeroBlocks)} {
		if e != nil {
			return nil, e
		}
	}
	if err := checkHeld("fp8", p.Rows, p.K); err != nil {
		return nil, err
	}
	n := int64(p.Rows) * int64(p.K)
	ng := int64(p.Rows) * int64(golden.FoldGroups(p.K, p.G))
	return &casePlan{params: canonical(p), dtype: "float32", bytes: n/2 + n/32 + n + 6*ng, family: strictTune(p.Strict, "fp8"),
		build: func(c *caseCtx) error { return buildMXToFP8(c, p) }}, nil
}

// mxToFP8 runs the golden of a target: fp8 [rows, k], the group scale
// bytes and their float32 values, inexact flags (0/1) [rows, groups].
func mxToFP8(p mxFP8Params, codes, scales []byte, fold func(fp8, gs []uint8, gsf []float32, inexact []bool, codes, scales []uint8, rows, k, g int) (int, error)) (fp8, gs []byte, gsf []float32, inexact []byte, count int, err error) {
	rows, k := p.Rows, p.K
	fp8 = make([]byte, rows*k)
	if p.Target == "mxfp8" {
		if err = golden.MXFP4ToMXFP8(fp8, codes, rows, k); err != nil {
			return
		}
		gs = append([]byte(nil), scales...)
		gsf = make([]float32, len(gs))
		for i, b := range gs {
			gsf[i] = float32(dtype.E8M0ToF64(b))
		}
		return fp8, gs, gsf, make([]byte, len(gs)), 0, nil
	}
	ng := rows * golden.FoldGroups(k, p.G)
	gs, gsf, flags := make([]byte, ng), make([]float32, ng), make([]bool, ng)
	if count, err = fold(fp8, gs, gsf, flags, codes, scales, rows, k, p.G); err != nil {
		return
	}
	inexact = make([]byte, ng)
	for i, f := range flags {
		if f {
			inexact[i] = 1
		}
	}
	return fp8, gs, gsf, inexact, count, nil
}

func buildMXToFP8(c *caseCtx, p mxFP8Params) error {
	codes, scales := mxRandomCodes(c, p.Rows, p.K, p.ScaleLo, p.ScaleHi, false, *p.ZeroBlocks)
	if err := c.writeBytes(tensorSpec{name: "codes", role: roleInput, dtype: dtE2M1, shape: shape2(p.Rows, p.K/2)}, codes); err != nil {
		return err
	}
	if err := c.writeBytes(tensorSpec{name: "scales", role: roleInput, dtype: dtE8M0, shape: shape2(p.Rows, p.K/golden.MXBlock)}, scales); err != nil {
		return err
	}
	fp8, gs, gsf, inexact, count, err := mxToFP8(p, codes, scales, golden.MXFP4FoldGroup)
	if err != nil {
		return err
	}
	c.setInfo("inexact_groups", count)
	ng := len(gs) / p.Rows
	if err := c.writeBytes(tensorSpec{name: "fp8", role: roleGolden, dtype: dtE4M3, shape: shape2(p.Rows, p.K)}, fp8); err != nil {
		return err
	}
	if err := c.writeBytes(tensorSpec{name: "scale", role: roleGolden, dtype: dtE8M0, shape: shape2(p.Rows, ng)}, gs); err != nil {
		return err
	}
	if err := c.write(tensorSpec{name: "scale_f32", role: roleGolden, dtype: "float32", shape: shape2(p.Rows, ng)}, func(t *tensorOut) error { return t.f32(gsf) }); err != nil {
		return err
	}
	return c.writeBytes(tensorSpec{name: "inexact", role: roleGolden, dtype: "uint8", shape: shape2(p.Rows, ng)}, inexact)
}

func mxToFP8Controls(d caseData) ([]Control, error) {
	var p mxFP8Params
	if err := json.Unmarshal(d.c.Params, &p); err != nil {
		return nil, err
	}
	codes, scales, err := d.codesScales()
	if err != nil {
		return nil, err
	}
	outputs := func(fp8, gs []byte, gsf []float32, inexact []byte) []ControlOutput {
		f := make([]float64, len(gsf))
		for i, v := range gsf {
			f[i] = float64(v)
		}
		return []ControlOutput{d.output("fp8", byteValues(fp8, dtype.Float8E4M3FN)), d.output("scale", byteValues(gs, dtype.Float8E8M0)),
			d.output("scale_f32", f), d.output("inexact", byteValues(inexact, dtype.Uint8))}
	}
	run := func(name, note string, pass bool, codes []byte, fold func(fp8, gs []uint8, gsf []float32, inexact []bool, codes, scales []uint8, rows, k, g int) (int, error)) (Control, error) {
		fp8, gs, gsf, inexact, _, err := mxToFP8(p, codes, scales, fold)
		if err != nil {
			return Control{}, err
		}
		return Control{Name: name, Pass: pass, Note: note, Outputs: outputs(fp8, gs, gsf, inexact)}, nil
	}
	ctl := []Control{zeros(d, "fp8")}
	for _, st := range []struct {
		name, note string
		pass, on   bool
		codes      []byte
		fold       func(fp8, gs []uint8, gsf []float32, inexact []bool, codes, scales []uint8, rows, k, g int) (int, error)
	}{
		{"swapped_nibbles", "element 2i read from the high nibble", false, true, swapNibbles(codes), golden.MXFP4FoldGroup},
		{"fold_offset7", "the group's largest block at 2^7 without regrouping (codes 4 and 6 saturate)", false, p.Target == "fold_group", codes, golden.MXFP4FoldGroupOffset7},
		{"neg_zero_dropped", "-0 converted to +0: rejected under strict, accepted otherwise", !p.Strict, true, foldNegZero(codes), golden.MXFP4FoldGroup},
		{"naive_fold", "an independent conversion: dtype.E4M3FromF64 of each value at the group scale", true, true, codes, naiveFold},
	} {
		if !st.on {
			continue
		}
		k, err := run(st.name, st.note, st.pass, st.codes, st.fold)
		if err != nil {
			return nil, err
		}
		ctl = append(ctl, k)
	}
	if p.Target == "mxfp8" {
		// The mxfp8 target has no fold; its independent form is the e4m3
		// rounding of each code's value, scale bytes unchanged.
		fp8 := make([]byte, len(codes)*2)
		for i, v := range codeValues(codes) {
			fp8[i] = dtype.E4M3FromF64(v)
		}
		gsf := make([]float32, len(scales))
		for i, b := range scales {
			gsf[i] = float32(dtype.E8M0ToF64(b))
		}
		ctl[len(ctl)-1] = Control{Name: "naive_fp8", Pass: true, Note: "dtype.E4M3FromF64 of each code's E2M1 value, scales unchanged", Outputs: outputs(fp8, scales, gsf, make([]byte, len(scales)))}
	}
	return ctl, nil
}

// naiveFold is §9c's fold_group from its formulas: per group, S = max e_b
// - 6 over the blocks with a nonzero code (0 if none, at least -127), fp8
// = E4M3FromF64(E2M1 value * 2^(e_b - S)), inexact where some nonzero
// block has e_b - S < -8. Groups holding byte 255 are NaN (as the golden).
func naiveFold(fp8, gs []uint8, gsf []float32, inexact []bool, codes, scales []uint8, rows, k, g int) (int, error) {
	nb := k / golden.MXBlock
	ng := golden.FoldGroups(k, g)
	vals := codeValues(codes)
	count := 0
	for r := range rows {
		for j := range ng {
			b0, b1 := j*g, min((j+1)*g, nb)
			emax, any, nan := math.MinInt, false, false
			for b := b0; b < b1; b++ {
				sb := scales[r*nb+b]
				nan = nan || sb == 255
				if !allZeroBlock(codes[r*nb*golden.MXBlock/2:], b) {
					any = true
					emax = max(emax, int(sb)-127)
				}
			}
			s := 0
			if any {
				s = max(emax-6, -127)
			}
			gi := r*ng + j
			gs[gi], gsf[gi] = uint8(s+127), float32(math.Ldexp(1, s))
			for b := b0; b < b1; b++ {
				e := int(scales[r*nb+b]) - 127
				if !allZeroBlock(codes[r*nb*golden.MXBlock/2:], b) && e-s < -8 {
					inexact[gi] = true
				}
				for i := (r*nb + b) * golden.MXBlock; i < (r*nb+b+1)*golden.MXBlock; i++ {
					fp8[i] = dtype.E4M3FromF64(math.Ldexp(vals[i], e-s))
				}
			}
			if nan {
				gs[gi], gsf[gi] = 255, float32(math.NaN())
				for i := (r*nb + b0) * golden.MXBlock; i < (r*nb+b1)*golden.MXBlock; i++ {
					fp8[i] = 0x7f | fp8[i]&0x80
				}
			}
			if inexact[gi] {
				count++
			}
		}
	}
	return count, nil
}

// mxElementWork: the MXFP4 element ops read their inputs and write their
// outputs whole, at perElem float32 operations an element (quantize: an
// abs-max and a scale; dequantize and fp8: a scale).
func mxElementWork(in, out []string, perElem int64) func(workIn) (manifests.Work, error) {
	return func(w workIn) (manifests.Work, error) {
		p, err := decodeWork[struct {
			Rows int `json:"rows"`
			K    int `json:"k"`
		}](w)
		if err != nil {
			return manifests.Work{}, err
		}
		return wholeWork(w, in, out, perElem*int64(p.Rows)*int64(p.K), "float32")
	}
}
