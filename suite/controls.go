package suite

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/goldset/goldset/compare"
	"github.com/goldset/goldset/internal/dtype"
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
	dt, err := dtype.Parse(t.DType)
	if err != nil {
		return nil, nil, fmt.Errorf("case %s tensor %s: %w", d.c.ID, name, err)
	}
	if dt.Descr() != h.Descr {
		return nil, nil, fmt.Errorf("case %s tensor %s: %s is stored as %s, the file has %s", d.c.ID, name, dt, dt.Descr(), h.Descr)
	}
	n, err := dt.StorageBytes(h.NumElems() * int64(dt.ElemsPerItem()))
	if err != nil || n != int64(len(data)) {
		return nil, nil, fmt.Errorf("case %s tensor %s: %d data bytes for shape %v", d.c.ID, name, len(data), h.Shape)
	}
	v := make([]float64, h.NumElems()*int64(dt.ElemsPerItem()))
	dt.Decode(v, data)
	return v, t, nil
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
	return storedValues(ControlOutput{DType: dtype.BFloat16.Name(), Values: v})
}

// Controls computes the negative and positive controls of a case of the
// bundle in dir. Negatives that would equal the golden for this case (a
// wrong GQA mapping with G = 1, an unmasked tail when every L is a multiple
// of BS, ...) are left out.
func Controls(dir string, c *manifests.Case) ([]Control, error) {
	o, err := lookupOp(c)
	if err != nil {
		return nil, err
	}
	ctl, err := o.controls(caseData{dir: dir, c: c})
	if err != nil {
		return nil, fmt.Errorf("controls of case %s: %w", c.ID, err)
	}
	return ctl, nil
}

func zeros(d caseData, name string) Control {
	t := d.c.Tensor(name)
	n := int64(1)
	for _, s := range elemShape(t) {
		n *= s
	}
	return Control{Name: "zeros", Note: "every element of " + name + " is 0", Outputs: []ControlOutput{d.output(name, make([]float64, n))}}
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
// manifest records (the op table's when it records none), against the
// float32 truth when the case has one (the golden in the output dtype is
// itself one rounding away from it), and only where the op's grading mask
// says (Quest kmax/kmin: logical blocks below ceil(L/BS)).
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
	o, err := lookupOp(c)
	if err != nil {
		return compare.Report{}, err
	}
	var tol compare.Tolerance
	if len(gt.Tolerance) > 0 {
		if err := json.Unmarshal(gt.Tolerance, &tol); err != nil {
			return compare.Report{}, fmt.Errorf("case %s output %s: bad tolerance in manifest: %w", c.ID, name, err)
		}
	} else {
		// A manifest without a recorded tolerance: the op table's, which
		// must know the output.
		out, ok := o.output(name)
		if !ok {
			return compare.Report{}, fmt.Errorf("case %s: op %s has no output %q in its table", c.ID, c.Op, name)
		}
		fam := out.tol
		if pl, err := planCase(manifests.RecipeCase{ID: c.ID, Op: c.Op, Params: c.Params}); err == nil && pl.family != nil {
			if f, ok := pl.family(name); ok {
				fam = f // the case's override (MXFP4 strict)
			}
		}
		if tol, err = fam.Tolerance(gt.DType); err != nil {
			return compare.Report{}, fmt.Errorf("case %s output %s: %w", c.ID, name, err)
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
	if o.mask != nil {
		if opts.Mask, err = o.mask(d, name, gt.Shape); err != nil {
			return compare.Report{}, err
		}
	}
	if tol.Bound != "" {
		// MXFP4 GEMM/MoE: the per-element bound S of the case's aux tensor.
		if opts.Bound, _, err = d.floats(tol.Bound); err != nil {
			return compare.Report{}, err
		}
	}
	if tol.Alt != "" {
		// An accepted alternative convention (the fp32-scale index cache).
		if opts.Alt, _, err = d.floats(tol.Alt); err != nil {
			return compare.Report{}, err
		}
	}
	if o.judgeData != nil {
		if opts.DSA, err = o.judgeData(d, name); err != nil {
			return compare.Report{}, err
		}
	}
	return compare.Compare(want, got, elemShape(gt), tol, opts)
}

// elemShape is a tensor's shape in elements: float4_e2m1fn_x2 holds two
// per byte along the last axis.
func elemShape(t *manifests.Tensor) []int64 {
	dt, err := dtype.Parse(t.DType)
	if err != nil || dt.ElemsPerItem() == 1 || len(t.Shape) == 0 {
		return t.Shape
	}
	s := slices.Clone(t.Shape)
	s[len(s)-1] *= int64(dt.ElemsPerItem())
	return s
}

// storedValues rounds a control's values to its dtype, as a kernel's
// stored output would be.
func storedValues(o ControlOutput) []float64 {
	if !dtypeOf(o.DType).IsFloat() {
		return o.Values // integers are stored exactly
	}
	out := make([]float64, len(o.Values))
	for i, v := range o.Values {
		out[i] = roundTo(o.DType, v)
	}
	return out
}
