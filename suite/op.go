package suite

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"github.com/goldset/goldset/compare"
	"github.com/goldset/goldset/manifests"
)

// op is everything this package knows about one op, defined in one file
// per op (op_<name>.go) and added to the table by register: its tensors,
// how a case is planned (params, defaults, size estimate, build), its
// negative and positive controls, the tolerance family of each output and
// its grading mask. Nothing else in the package switches on op names.
type op struct {
	name string
	// inputs, outputs and aux list the case's tensors by role, in
	// manifest order (outputs: the goldens; a half-dtype output with truth
	// also gets a float32 <name>_truth).
	inputs  []string
	outputs []output
	aux     []string
	// plan validates a case's params, fills in their defaults and returns
	// the plan (canonical params, dtype, size estimate, build).
	plan func(raw json.RawMessage) (*casePlan, error)
	// controls computes the case's negative and positive controls from a
	// built bundle (Controls).
	controls func(d caseData) ([]Control, error)
	// mask returns which elements of an output are graded (nil: all); nil
	// when no output of the op has a mask.
	mask func(d caseData, output string, shape []int64) ([]bool, error)
	// judgeData returns the per-row facts compare's DSA families need for
	// an output (nil when it needs none); nil for the other ops.
	judgeData func(d caseData, output string) (*compare.DSAData, error)
	// tensorsOf, when set, names the tensors of a case whose set depends
	// on its params (dsa_indexer's paged and ragged layouts), in manifest
	// order; inputs, outputs and aux are then their union.
	tensorsOf func(params json.RawMessage) (in, out, aux []string)
	// export names the op in other tools' formats (package export).
	export exportSpec
	// work is the case's exact work (docs/spec.md §13) from its params,
	// tensor entries and the counts its builder recorded (addFact).
	work func(w workIn) (manifests.Work, error)
	// probes, when set, computes wrong algorithms whose verdict is not
	// fixed (a half-precision accumulator may pass at small k): measured
	// by the discrimination margins (§13c) beside the negative controls.
	probes func(d caseData) ([]Control, error)
}

// exportSpec is what the exporters need of an op beyond its tensors.
type exportSpec struct {
	// flashinfer is the FlashInfer Trace definition's op_type.
	flashinfer string
	// ascend is the msOpST case's "op" (an Ascend op type, CamelCase).
	ascend string
	// axes names each dimension of a tensor (FlashInfer axes); a tensor
	// not listed gets one axis per dimension, <tensor>_<i>.
	axes map[string][]string
}

// ExportSpec is an op's names in other tools' formats (package export).
type ExportSpec struct {
	Op string
	// FlashInferOpType is the op_type of its FlashInfer Trace definitions.
	FlashInferOpType string
	// AscendOp is the "op" of its msOpST cases.
	AscendOp string
	// Axes names the dimensions of some tensors; the others have none.
	Axes map[string][]string
}

// ExportSpecOf returns the export names of op (ErrUnknownOp for an op the
// table does not have).
func ExportSpecOf(op string) (ExportSpec, error) {
	o, ok := opTable[op]
	if !ok {
		return ExportSpec{}, fmt.Errorf("%w %q (known: %v)", ErrUnknownOp, op, Ops())
	}
	return ExportSpec{Op: o.name, FlashInferOpType: o.export.flashinfer, AscendOp: o.export.ascend, Axes: o.export.axes}, nil
}

// output is one golden output of an op.
type output struct {
	name string
	// dtype is the stored dtype; "" means the case's dtype param.
	dtype string
	// truth: a float32 <name>_truth is written beside a half-dtype golden.
	truth bool
	// tol is the compare family the output is judged with.
	tol compare.Family
}

// opTable holds every op, by name (register fills it at init).
var opTable = map[string]*op{}

// register adds o to the op table; a duplicate or an output without a
// tolerance family is a programming error caught at init.
func register(o *op) *op {
	if _, dup := opTable[o.name]; dup || o.plan == nil || o.controls == nil || o.export.flashinfer == "" || o.export.ascend == "" {
		panic("suite: op " + o.name + " registered twice or without plan/controls/export names")
	}
	for _, out := range o.outputs {
		if out.tol.Name() == "" {
			panic("suite: op " + o.name + " output " + out.name + " has no tolerance family")
		}
	}
	opTable[o.name] = o
	return o
}

// casePlan is a validated case: canonical params, a size estimate, the
// tolerance of every golden and truth tensor, and the function that builds
// it.
type casePlan struct {
	params json.RawMessage
	dtype  string // the case's dtype param: the dtype of outputs without a fixed one
	bytes  int64
	// lead, when set, is the size of the tensor whose opening ends the
	// case's head start (see headFirst): its critical stage begins there.
	// Zero: the first tensor.
	lead  int64
	build func(*caseCtx) error
	tols  map[string]*compare.Tolerance // by tensor name
	// chain, for a pipeline case (pipeline.go), is its chain's record
	// (id and split are the recipe case's); the build emits one manifest
	// case per stage and step.
	chain *manifests.Chain
	// family, when set, overrides the op table's family of an output for
	// this case (MXFP4's strict: byte identity instead of 0 = 8).
	family func(output string) (compare.Family, bool)
}

// planCase looks the case's op up and plans it. An unknown op, or an
// output whose family has no row for its dtype, is an error here, before
// anything is built.
func planCase(c manifestsRecipeCase) (*casePlan, error) {
	if c.Op == PipelineOp {
		p, err := planPipeline(c.Params)
		if err != nil {
			return nil, errCase(c, err)
		}
		return p, nil
	}
	o, ok := opTable[c.Op]
	if !ok {
		return nil, errUnknownOp(c)
	}
	p, err := o.plan(c.Params)
	if err != nil {
		return nil, errCase(c, err)
	}
	if p.tols, err = o.tolerancesFor(p.dtype, p.family); err != nil {
		return nil, errCase(c, err)
	}
	return p, nil
}

// tolerances returns the tolerance of each golden and truth tensor of a
// case whose dtype param is dtype.
func (o *op) tolerances(dtype string) (map[string]*compare.Tolerance, error) {
	return o.tolerancesFor(dtype, nil)
}

// tolerancesFor is tolerances with a case's family overrides.
func (o *op) tolerancesFor(dtype string, family func(string) (compare.Family, bool)) (map[string]*compare.Tolerance, error) {
	tols := make(map[string]*compare.Tolerance)
	for _, out := range o.outputs {
		dt := out.storedDType(dtype)
		if family != nil {
			if f, ok := family(out.name); ok {
				out.tol = f
			}
		}
		t, err := out.tol.Tolerance(dt)
		if err != nil {
			return nil, fmt.Errorf("output %s: %w", out.name, err)
		}
		tols[out.name] = &t
		if out.truth && dt != "float32" {
			t, err := out.tol.Tolerance("float32")
			if err != nil {
				return nil, fmt.Errorf("output %s_truth: %w", out.name, err)
			}
			tols[out.name+"_truth"] = &t
		}
	}
	return tols, nil
}

func (o output) storedDType(caseDType string) string {
	if o.dtype != "" {
		return o.dtype
	}
	return caseDType
}

// output returns o's output called name.
func (o *op) output(name string) (output, bool) {
	i := slices.IndexFunc(o.outputs, func(out output) bool { return out.name == name })
	if i < 0 {
		return output{}, false
	}
	return o.outputs[i], true
}

// Ops returns the names of the ops this package builds, sorted.
func Ops() []string {
	var out []string
	for k := range opTable {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// OpInfo describes an op's tensors (goldset list --ops).
type OpInfo struct {
	Name    string     `json:"name"`
	Inputs  []string   `json:"inputs"`
	Outputs []OpOutput `json:"outputs"`
	Aux     []string   `json:"aux,omitempty"`
	// ByParams: a case holds the subset of these tensors its params
	// choose (dsa_indexer's layout), not all of them.
	ByParams bool `json:"by_params,omitempty"`
}

// OpOutput is one golden output of an op.
type OpOutput struct {
	Name string `json:"name"`
	// DType is the stored dtype, or "" for the case's dtype param.
	DType string `json:"dtype,omitempty"`
	// Truth: a float32 <name>_truth sits beside a half-dtype golden.
	Truth bool `json:"truth,omitempty"`
	// Tolerance names the compare family the output is judged with.
	Tolerance string `json:"tolerance"`
}

// OpTable lists every op with its tensors, sorted by name.
func OpTable() []OpInfo {
	var out []OpInfo
	for _, name := range Ops() {
		o := opTable[name]
		info := OpInfo{Name: o.name, Inputs: slices.Clone(o.inputs), Aux: slices.Clone(o.aux), ByParams: o.tensorsOf != nil}
		for _, t := range o.outputs {
			info.Outputs = append(info.Outputs, OpOutput{Name: t.name, DType: t.dtype, Truth: t.truth, Tolerance: t.tol.Name()})
		}
		out = append(out, info)
	}
	return out
}

// lookupOp returns the op of a manifest case.
func lookupOp(c *manifests.Case) (*op, error) {
	o, ok := opTable[c.Op]
	if !ok {
		return nil, fmt.Errorf("case %s: %w %q (known: %v)", c.ID, ErrUnknownOp, c.Op, Ops())
	}
	return o, nil
}

// writeOutput writes an exact float64 output: the golden in dtype and,
// for half types, the float32 truth (tolerances from the op table).
func (c *caseCtx) writeOutput(name, dtype string, shape []int64, v []float64) error {
	if err := c.writeRounded(tensorSpec{name: name, role: roleGolden, dtype: dtype, shape: shape}, v); err != nil {
		return err
	}
	if dtype == "float32" {
		return nil
	}
	return c.writeRounded(tensorSpec{name: name + "_truth", role: roleTruth, dtype: "float32", shape: shape}, v)
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
