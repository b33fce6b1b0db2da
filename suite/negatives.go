package suite

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/goldset/goldset/compare"
	"github.com/goldset/goldset/golden"
	"github.com/goldset/goldset/manifests"
)

// Control is a set of outputs for one case that compare must reject
// (a negative control) or accept (a positive control).
type Control struct {
	Name string `json:"name"`
	// Pass is what compare must say: false for negatives.
	Pass    bool            `json:"pass"`
	Note    string          `json:"note"`
	Outputs []ControlOutput `json:"outputs"`
}

// ControlOutput is one candidate output of a control, as exact float64
// values to be stored in the golden's dtype.
type ControlOutput struct {
	Name   string    `json:"name"`
	DType  string    `json:"dtype"`
	Shape  []int64   `json:"shape"`
	Values []float64 `json:"-"`
}

// caseData loads the tensors of a case from a bundle.
type caseData struct {
	dir string
	c   *manifests.Case
}

func (d caseData) floats(name string) ([]float64, *manifests.Tensor, error) {
	t := d.c.Tensor(name)
	if t == nil {
		return nil, nil, fmt.Errorf("case %s has no tensor %q", d.c.ID, name)
	}
	h, data, err := manifests.LoadTensor(d.dir, t)
	if err != nil {
		return nil, nil, err
	}
	v, err := compare.Decode(h.Descr, t.DType == "bfloat16", data)
	return v, t, err
}

func (d caseData) f32(name string) ([]float32, error) {
	v, _, err := d.floats(name)
	if err != nil {
		return nil, err
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x) // exact: inputs are fp16/bf16/fp32 values
	}
	return out, nil
}

func (d caseData) i32(name string) ([]int32, error) {
	v, _, err := d.floats(name)
	if err != nil {
		return nil, err
	}
	out := make([]int32, len(v))
	for i, x := range v {
		out[i] = int32(x)
	}
	return out, nil
}

// output returns the golden tensor's dtype and shape for name.
func (d caseData) output(name string, v []float64) ControlOutput {
	t := d.c.Tensor(name)
	return ControlOutput{Name: name, DType: t.DType, Shape: t.Shape, Values: v}
}

// bf16RoundTrip rounds v through bfloat16 (the error of a kernel that
// stores an fp32 result in bf16 somewhere on the way).
func bf16RoundTrip(v []float64) []float64 {
	return storedValues(ControlOutput{DType: "bfloat16", Values: v})
}

// Controls computes the negative and positive controls of a case of the
// bundle in dir. Negatives that would equal the golden for this case (a
// wrong GQA mapping with G = 1, an unmasked tail when every L is a multiple
// of BS, ...) are left out.
func Controls(dir string, c *manifests.Case) ([]Control, error) {
	d := caseData{dir: dir, c: c}
	var ctl []Control
	var err error
	switch c.Op {
	case "matmul":
		ctl, err = matmulControls(d)
	case "softmax":
		ctl, err = softmaxControls(d)
	case "reshape_and_cache":
		ctl, err = cacheControls(d)
	case "paged_attention", "quest":
		ctl, err = attentionControls(d)
	default:
		return nil, fmt.Errorf("%w %q", ErrUnknownOp, c.Op)
	}
	if err != nil {
		return nil, fmt.Errorf("controls of case %s: %w", c.ID, err)
	}
	return ctl, nil
}

func zeros(d caseData, name string) Control {
	t := d.c.Tensor(name)
	n := int64(1)
	for _, s := range t.Shape {
		n *= s
	}
	return Control{Name: "zeros", Note: "every element of " + name + " is 0", Outputs: []ControlOutput{d.output(name, make([]float64, n))}}
}

func matmulControls(d caseData) ([]Control, error) {
	var p matmulParams
	if err := json.Unmarshal(d.c.Params, &p); err != nil {
		return nil, err
	}
	a, err := d.f32("a")
	if err != nil {
		return nil, err
	}
	b, err := d.f32("b")
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

func cacheControls(d caseData) ([]Control, error) {
	var p cacheParams
	if err := json.Unmarshal(d.c.Params, &p); err != nil {
		return nil, err
	}
	ctl := []Control{zeros(d, "key_cache_out")}
	sm, err := d.i32("slot_mapping")
	if err != nil {
		return nil, err
	}
	t := slices.IndexFunc(sm, func(s int32) bool { return s >= 0 })
	if t >= 0 && p.NB > 1 {
		gold, _, err := d.floats("key_cache_out")
		if err != nil {
			return nil, err
		}
		in, _, err := d.floats("key_cache")
		if err != nil {
			return nil, err
		}
		row := p.Hkv * p.D
		s := int(sm[t])
		wrong := ((s/p.BS+1)%p.NB)*p.BS + s%p.BS
		bad := slices.Clone(gold)
		copy(bad[s*row:(s+1)*row], in[s*row:(s+1)*row])           // the right slot keeps its old value
		copy(bad[wrong*row:(wrong+1)*row], gold[s*row:(s+1)*row]) // the key lands one block over
		ctl = append(ctl, Control{Name: "wrong_block", Note: fmt.Sprintf("token %d written to slot %d instead of %d", t, wrong, s), Outputs: []ControlOutput{d.output("key_cache_out", bad)}})
	}
	gold, _, err := d.floats("value_cache_out")
	if err != nil {
		return nil, err
	}
	ctl = append(ctl, Control{Name: "golden_copy", Pass: true, Note: "the golden value cache itself", Outputs: []ControlOutput{d.output("value_cache_out", gold)}})
	return ctl, nil
}

func attentionControls(d caseData) ([]Control, error) {
	var p questParams
	if err := json.Unmarshal(d.c.Params, &p); err != nil {
		return nil, err
	}
	q, err := d.f32("query")
	if err != nil {
		return nil, err
	}
	kc, err := d.f32("key_cache")
	if err != nil {
		return nil, err
	}
	vc, err := d.f32("value_cache")
	if err != nil {
		return nil, err
	}
	bt, err := d.i32("block_tables")
	if err != nil {
		return nil, err
	}
	cl, err := d.i32("context_lens")
	if err != nil {
		return nil, err
	}
	btT := d.c.Tensor("block_tables")
	kT := d.c.Tensor("key_cache")
	dims := golden.AttentionDims{B: len(cl), Hq: p.Hq, Hkv: p.Hkv, D: p.D, NB: int(kT.Shape[0]), BS: p.BS, MAXB: int(btT.Shape[1])}
	B, Hq, D := dims.B, p.Hq, p.D
	quest := d.c.Op == "quest"
	var sel []int32
	var qp golden.QuestParams
	if quest {
		if sel, err = d.i32("selected"); err != nil {
			return nil, err
		}
		qp = p.golden()
	}
	type attnFn func(out, lse []float64) error
	run := func(dense, sparse func(out, lse []float64, q, k, v []float32, bt, cl, sel []int32) error) attnFn {
		return func(out, lse []float64) error {
			if quest {
				return sparse(out, lse, q, kc, vc, bt, cl, sel)
			}
			return dense(out, lse, q, kc, vc, bt, cl, nil)
		}
	}
	variant := func(name, note string, pass bool, f attnFn) (Control, error) {
		out, lse := make([]float64, B*Hq*D), make([]float64, B*Hq)
		if err := f(out, lse); err != nil {
			return Control{}, fmt.Errorf("%s: %w", name, err)
		}
		outs := []ControlOutput{d.output("out", out)}
		if pass {
			outs = append(outs, d.output("lse", lse))
		}
		return Control{Name: name, Pass: pass, Note: note, Outputs: outs}, nil
	}
	wrap := func(f func(out, lse []float64, q, k, v []float32, bt, cl []int32, dims golden.AttentionDims, scale float64) error) func(out, lse []float64, q, k, v []float32, bt, cl, sel []int32) error {
		return func(out, lse []float64, q, k, v []float32, bt, cl, _ []int32) error {
			return f(out, lse, q, k, v, bt, cl, dims, p.Scale)
		}
	}
	wrapS := func(f func(out, lse []float64, q, k, v []float32, bt, cl, sel []int32, dims golden.AttentionDims, p golden.QuestParams, scale float64) error) func(out, lse []float64, q, k, v []float32, bt, cl, sel []int32) error {
		return func(out, lse []float64, q, k, v []float32, bt, cl, sel []int32) error {
			return f(out, lse, q, k, v, bt, cl, sel, dims, qp, p.Scale)
		}
	}
	ctl := []Control{zeros(d, "out")}
	type spec struct {
		name, note string
		pass, when bool
		f          attnFn
	}
	tail := false
	for _, L := range cl {
		tail = tail || int(L)%p.BS != 0
	}
	specs := []spec{
		{"wrong_gqa", "query head h reads KV head h % Hkv instead of h / G", false, p.Hkv > 1 && p.Hq > p.Hkv,
			run(wrap(golden.PagedAttentionWrongGQA), wrapS(golden.SparseAttentionWrongGQA))},
		{"unmasked_tail", "the slots past L in the last block are attended", false, tail,
			run(wrap(golden.PagedAttentionTailUnmasked), wrapS(golden.SparseAttentionTailUnmasked))},
		{"skip_block", "the selected block with the largest softmax mass is left out", false, quest,
			run(nil, wrapS(golden.SparseAttentionSkipBlock))},
		{"fp32_accumulate", "an honest kernel: fp32 dot products, online softmax and accumulation", true, true,
			run(wrap(golden.PagedAttentionF32), wrapS(golden.SparseAttentionF32))},
	}
	for _, s := range specs {
		if !s.when {
			continue
		}
		c, err := variant(s.name, s.note, s.pass, s.f)
		if err != nil {
			return nil, err
		}
		ctl = append(ctl, c)
	}
	// lse is float32: a bf16 round trip of it must fail.
	lseT, _, err := d.floats("lse")
	if err != nil {
		return nil, err
	}
	ctl = append(ctl, Control{Name: "bf16_roundtrip", Note: "the float32 lse rounded through bfloat16", Outputs: []ControlOutput{d.output("lse", bf16RoundTrip(lseT))}})
	if quest {
		if bad, ok := wrongSelection(sel, cl, p.BS, p.K); ok {
			ctl = append(ctl, Control{Name: "wrong_selection", Note: "one selected block replaced by an unselected one", Outputs: []ControlOutput{d.output("selected", bad)}})
		}
	}
	return ctl, nil
}

// wrongSelection swaps the first selected block of the first row that
// leaves a block out for the lowest unselected one.
func wrongSelection(sel, cl []int32, bs, k int) ([]float64, bool) {
	rows := len(sel) / k
	perSeq := rows / len(cl)
	out := make([]float64, len(sel))
	for i, s := range sel {
		out[i] = float64(s)
	}
	for r := 0; r < rows; r++ {
		nb := (int(cl[r/perSeq]) + bs - 1) / bs
		row := sel[r*k : (r+1)*k]
		if nb <= k {
			continue
		}
		for cand := 0; cand < nb; cand++ {
			if !slices.Contains(row, int32(cand)) {
				out[r*k] = float64(cand)
				return out, true
			}
		}
	}
	return nil, false
}

// Judge compares a control's outputs with the case's goldens (JudgeOutput
// for each) and reports whether every output passed, with the reports.
func Judge(dir string, c *manifests.Case, ctl Control) (bool, []compare.Report, error) {
	ok := true
	var reps []compare.Report
	for _, o := range ctl.Outputs {
		rep, err := JudgeOutput(dir, c, o.Name, storedValues(o))
		if err != nil {
			return false, nil, err
		}
		ok = ok && rep.OK()
		reps = append(reps, rep)
	}
	return ok, reps, nil
}

// ErrNoOutput is returned when a case has no golden output of that name.
var ErrNoOutput = errors.New("no golden output")

// JudgeOutput judges candidate values for the golden output name of case c
// of the bundle in dir, as `goldset compare` does: under the tolerance the
// manifest records, against the float32 truth when the case has one (the
// golden in the output dtype is itself one rounding away from it), and,
// for Quest kmax/kmin, grading only logical blocks below ceil(L/BS).
func JudgeOutput(dir string, c *manifests.Case, name string, got []float64) (compare.Report, error) {
	gt := c.Tensor(name)
	if gt == nil || gt.Role != manifests.RoleGolden {
		var outs []string
		for _, t := range c.Tensors {
			if t.Role == manifests.RoleGolden {
				outs = append(outs, t.Name)
			}
		}
		return compare.Report{}, fmt.Errorf("case %s has %w %q (outputs: %s)", c.ID, ErrNoOutput, name, strings.Join(outs, ", "))
	}
	tol := compare.DefaultTolerance(c.Op, name, gt.DType)
	if len(gt.Tolerance) > 0 {
		if err := json.Unmarshal(gt.Tolerance, &tol); err != nil {
			return compare.Report{}, fmt.Errorf("case %s output %s: bad tolerance in manifest: %w", c.ID, name, err)
		}
	}
	ref := name
	if t := c.Tensor(name + "_truth"); t != nil && t.Role == manifests.RoleTruth && tol.Mode == compare.ModeAllclose {
		ref = t.Name
	}
	d := caseData{dir: dir, c: c}
	want, _, err := d.floats(ref)
	if err != nil {
		return compare.Report{}, err
	}
	opts := compare.Options{Name: name}
	if c.Op == "quest" && (name == "kmax" || name == "kmin") {
		if opts.Mask, err = questMetaMask(d, gt.Shape); err != nil {
			return compare.Report{}, err
		}
	}
	return compare.Compare(want, got, gt.Shape, tol, opts)
}

// questMetaMask grades kmax/kmin [B, MAXB, Hkv, D] only for logical blocks
// i < ceil(L/BS) (docs/spec.md §5a).
func questMetaMask(d caseData, shape []int64) ([]bool, error) {
	lens, err := d.i32("context_lens")
	if err != nil {
		return nil, err
	}
	var p questParams
	if err := json.Unmarshal(d.c.Params, &p); err != nil || p.BS <= 0 || len(shape) != 4 {
		return nil, fmt.Errorf("case %s: params or kmax shape do not describe a quest case", d.c.ID)
	}
	B, maxb, inner := int(shape[0]), int(shape[1]), int(shape[2]*shape[3])
	if len(lens) != B {
		return nil, fmt.Errorf("case %s: context_lens has %d entries, kmax %d sequences", d.c.ID, len(lens), B)
	}
	mask := make([]bool, B*maxb*inner)
	for b, l := range lens {
		nb := min((int(l)+p.BS-1)/p.BS, maxb)
		for i := range mask[b*maxb*inner : (b*maxb+nb)*inner] {
			mask[b*maxb*inner+i] = true
		}
	}
	return mask, nil
}

// storedValues rounds a control's values to its dtype, as a kernel's
// stored output would be.
func storedValues(o ControlOutput) []float64 {
	if o.DType != "float16" && o.DType != "bfloat16" && o.DType != "float32" {
		return o.Values // integers are stored exactly
	}
	out := make([]float64, len(o.Values))
	for i, v := range o.Values {
		out[i] = roundTo(o.DType, v)
	}
	return out
}
