package export

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/safetensors"
	"github.com/goldset/goldset/suite"
)

// writeSafetensors writes the tensors ts of case c as one safetensors
// file at rel, streaming each tensor from the bundle.
func (e *exporter) writeSafetensors(rel string, c *manifests.Case, ts []*manifests.Tensor) error {
	var heads []safetensors.Tensor
	byName := map[string]*manifests.Tensor{}
	for _, t := range ts {
		sd, ok := stDType(t.DType)
		if !ok {
			return fmt.Errorf("export: case %s tensor %s: %w: dtype %s has no safetensors dtype", c.ID, t.Name, ErrUnsupported, t.DType)
		}
		n, err := dataBytes(t)
		if err != nil {
			return err
		}
		heads = append(heads, safetensors.Tensor{Name: t.Name, DType: sd, Shape: t.Shape, Len: n})
		byName[t.Name] = t
	}
	hdr, sorted, err := safetensors.EncodeHeader(metadata(e.m, c), heads)
	if err != nil {
		return fmt.Errorf("export: case %s: %w", c.ID, err)
	}
	var names []string
	for _, t := range sorted {
		names = append(names, t.Name)
	}
	return e.writeFile(rel, c.ID, names, func(w io.Writer) error {
		if _, err := w.Write(hdr); err != nil {
			return err
		}
		for _, t := range sorted {
			if err := e.copyTensor(byName[t.Name], w, nil); err != nil {
				return err
			}
		}
		return nil
	})
}

func allTensors(c *manifests.Case, roles ...string) []*manifests.Tensor {
	var out []*manifests.Tensor
	for i := range c.Tensors {
		t := &c.Tensors[i]
		if len(roles) == 0 || containsStr(roles, t.Role) {
			out = append(out, t)
		}
	}
	return out
}

func containsStr(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// ---- safetensors: one file per case ----

type stWriter struct{}

func (stWriter) unsupported(c *manifests.Case) string {
	for _, t := range c.Tensors {
		if _, ok := stDType(t.DType); !ok {
			return "tensor " + t.Name + " has dtype " + t.DType + ", which safetensors has no type for"
		}
	}
	return ""
}

func (stWriter) writeCase(e *exporter, c *manifests.Case) error {
	return e.writeSafetensors(c.ID+".safetensors", c, allTensors(c))
}

func (stWriter) finish(*exporter) error { return nil }

// ---- FlashInfer Trace ----

// fiDTypes are the dtypes a FlashInfer Trace TensorSpec can name
// (flashinfer-bench docs/flashinfer_trace/definition.md, "dtype: Data
// Types"), for the goldset dtypes that have one.
var fiDTypes = map[string]string{
	"float32": "float32", "float16": "float16", "bfloat16": "bfloat16",
	"float8_e4m3fn": "float8_e4m3fn", "int64": "int64", "int32": "int32",
}

type fiWriter struct {
	defs  map[string]*fiDef
	order []string
}

// fiDef is one definition and the workload lines that use it.
type fiDef struct {
	name      string
	body      []byte
	workloads [][]byte
}

// orderedObject is a JSON object whose keys keep their order (FlashInfer
// matches run()'s parameters to the inputs in order).
type orderedObject []kv

type kv struct {
	k string
	v any
}

func (o orderedObject) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, p := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := marshal(p.k, false)
		v, err := marshal(p.v, false)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

func (fiWriter) unsupported(c *manifests.Case) string {
	for _, t := range c.Tensors {
		if t.Role != manifests.RoleInput && t.Role != manifests.RoleGolden {
			continue
		}
		if _, ok := fiDTypes[t.DType]; !ok {
			return "tensor " + t.Name + " has dtype " + t.DType + ", which FlashInfer Trace has no dtype for (float32, float16, bfloat16, float8_e4m3fn, float8_e5m2, float4_e2m1, int64, int32, int16, int8, bool)"
		}
	}
	if !isIdentifiers(c) {
		return "a tensor name is not a Python identifier (run()'s parameters)"
	}
	return ""
}

func isIdentifiers(c *manifests.Case) bool {
	for _, t := range c.Tensors {
		for i, r := range t.Name {
			if !(r == '_' || unicode.IsLetter(r) || i > 0 && unicode.IsDigit(r)) {
				return false
			}
		}
	}
	return true
}

// axesOf names every dimension of the case's inputs and goldens and
// binds each axis to its size; an op's axis named twice with two sizes is
// an error (the op table's axes are wrong).
func axesOf(c *manifests.Case, spec suite.ExportSpec) (map[string][]string, map[string]int64, error) {
	names := map[string][]string{}
	sizes := map[string]int64{}
	for _, t := range allTensors(c, manifests.RoleInput, manifests.RoleGolden) {
		ax := spec.Axes[t.Name]
		if len(ax) != len(t.Shape) {
			ax = make([]string, len(t.Shape))
			for i := range ax {
				ax[i] = t.Name + "_" + strconv.Itoa(i)
			}
		}
		for i, a := range ax {
			if s, ok := sizes[a]; ok && s != t.Shape[i] {
				return nil, nil, fmt.Errorf("export: case %s: axis %s is %d in one tensor and %d in %s (op table axes of %s)", c.ID, a, s, t.Shape[i], t.Name, c.Op)
			}
			sizes[a] = t.Shape[i]
		}
		names[t.Name] = ax
	}
	return names, sizes, nil
}

const fiReference = `import torch


def run(%s):
    """goldset %s (suite %s %s): no Python reference is shipped.

    The reference is goldset's float64 Go kernel (goldset docs/spec.md); its
    outputs, rounded once into each output's dtype, are stored per workload
    in blob/goldens/%s/<case>.safetensors beside this trace (float32
    <name>_truth tensors hold the exact values of half-precision outputs).
    Judge a solution's outputs with: goldset compare BUNDLE --case CASE
    --output NAME=outputs.safetensors
    """
    raise NotImplementedError("goldset goldens are precomputed: blob/goldens/%s/<case>.safetensors")
`

func (w *fiWriter) writeCase(e *exporter, c *manifests.Case) error {
	spec, err := suite.ExportSpecOf(c.Op)
	if err != nil {
		return err
	}
	axNames, sizes, err := axesOf(c, spec)
	if err != nil {
		return err
	}
	tensorSpecs := func(role string) (orderedObject, []string) {
		var o orderedObject
		var names []string
		for _, t := range allTensors(c, role) {
			o = append(o, kv{t.Name, orderedObject{{"shape", axNames[t.Name]}, {"dtype", fiDTypes[t.DType]}}})
			names = append(names, t.Name)
		}
		return o, names
	}
	inputs, inNames := tensorSpecs(manifests.RoleInput)
	outputs, _ := tensorSpecs(manifests.RoleGolden)
	var axisList []string
	for a := range sizes {
		axisList = append(axisList, a)
	}
	sort.Strings(axisList)
	var axes orderedObject
	for _, a := range axisList {
		axes = append(axes, kv{a, orderedObject{{"type", "var"}}})
	}
	// The definition's identity is everything but its name: cases with
	// the same tensors, dtypes and axes share one.
	shape := orderedObject{{"op", c.Op}, {"axes", axes}, {"inputs", inputs}, {"outputs", outputs}}
	key, _ := json.Marshal(shape)
	sum := sha256.Sum256(key)
	name := "goldset_" + c.Op + "_" + hex.EncodeToString(sum[:4])
	d := w.defs[name]
	if d == nil {
		body := orderedObject{
			{"name", name},
			{"op_type", spec.FlashInferOpType},
			{"description", fmt.Sprintf("goldset op %s from suite %s %s (manifest %s): fixed inputs and golden outputs; every axis is bound per workload.", c.Op, e.m.Suite, e.m.SuiteVersion, e.m.Digest)},
			{"tags", []string{"goldset_op:" + c.Op, "goldset_suite:" + e.m.Suite, "goldset_version:" + e.m.SuiteVersion, "goldset_manifest:" + e.m.Digest}},
			{"axes", axes},
			{"inputs", inputs},
			{"outputs", outputs},
			{"reference", fmt.Sprintf(fiReference, strings.Join(inNames, ", "), c.Op, e.m.Suite, e.m.SuiteVersion, name, name)},
		}
		b, err := marshal(body, true)
		if err != nil {
			return err
		}
		d = &fiDef{name: name, body: b}
		w.defs[name] = d
		w.order = append(w.order, name)
	}
	inRel := "blob/workloads/" + name + "/" + c.ID + ".safetensors"
	if err := e.writeSafetensors(inRel, c, allTensors(c, manifests.RoleInput)); err != nil {
		return err
	}
	if err := e.writeSafetensors("blob/goldens/"+name+"/"+c.ID+".safetensors", c, allTensors(c, manifests.RoleGolden, manifests.RoleTruth, manifests.RoleAux)); err != nil {
		return err
	}
	var wax orderedObject
	for _, a := range axisList {
		wax = append(wax, kv{a, sizes[a]})
	}
	var ins orderedObject
	for _, n := range inNames {
		ins = append(ins, kv{n, orderedObject{{"type", "safetensors"}, {"path", inRel}, {"tensor_key", n}}})
	}
	line := orderedObject{
		{"definition", name},
		{"workload", orderedObject{{"uuid", "goldset-" + e.m.Suite + "-" + e.m.SuiteVersion + "-" + c.ID}, {"axes", wax}, {"inputs", ins}}},
		{"solution", nil},
		{"evaluation", nil},
	}
	b, err := marshal(line, false)
	if err != nil {
		return err
	}
	d.workloads = append(d.workloads, append(b, '\n'))
	return nil
}

func (w *fiWriter) finish(e *exporter) error {
	for _, name := range w.order {
		d := w.defs[name]
		if err := e.writeFile("definitions/"+name+".json", "", nil, func(wr io.Writer) error { _, err := wr.Write(d.body); return err }); err != nil {
			return err
		}
		if err := e.writeFile("workloads/"+name+".jsonl", "", nil, func(wr io.Writer) error {
			for _, l := range d.workloads {
				if _, err := wr.Write(l); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// ---- msOpST ----

// msTypes are the msOpST "type" strings of goldset's dtypes: the CANN
// names ("float" for float32 as in the CANN msOpST case examples; float8
// and float4 names as CANN's op compiler spells them).
var msTypes = map[string]string{
	"float16": "float16", "bfloat16": "bfloat16", "float32": "float", "float64": "double",
	"int32": "int32", "int64": "int64", "uint8": "uint8",
	"float8_e4m3fn": "float8_e4m3fn", "float8_e8m0fnu": "float8_e8m0", "float4_e2m1fn_x2": "float4_e2m1",
}

type msWriter struct {
	ops   map[string]*msOp
	order []string
}

type msOp struct {
	cases  []any
	checks []any
}

func (msWriter) unsupported(c *manifests.Case) string {
	for _, t := range c.Tensors {
		if _, ok := msTypes[t.DType]; !ok {
			return "tensor " + t.Name + " has dtype " + t.DType + ", which msOpST has no type for"
		}
	}
	return ""
}

// msShape is the shape msOpST sees: float4_e2m1 counts elements, two per
// stored byte.
func msShape(t *manifests.Tensor) []int64 {
	s := append([]int64{}, t.Shape...)
	if t.DType == "float4_e2m1fn_x2" && len(s) > 0 {
		s[len(s)-1] *= 2
	}
	return s
}

func (w *msWriter) writeCase(e *exporter, c *manifests.Case) error {
	spec, err := suite.ExportSpecOf(c.Op)
	if err != nil {
		return err
	}
	op := w.ops[spec.AscendOp]
	if op == nil {
		op = &msOp{}
		w.ops[spec.AscendOp] = op
		w.order = append(w.order, spec.AscendOp)
	}
	caseName := "Test_" + spec.AscendOp + "_" + sanitize(c.ID)
	var inDesc, outDesc, inFiles, outFiles []any
	for i := range c.Tensors {
		t := &c.Tensors[i]
		rel := "data/" + c.ID + "/" + t.Name + ".bin"
		var vr *valueRange
		if t.Role == manifests.RoleInput {
			if vr, err = newValueRange(t.DType); err != nil {
				return err
			}
		}
		var visit func([]byte)
		if vr != nil {
			visit = vr.visit
		}
		if err := e.writeFile(spec.AscendOp+"/"+rel, c.ID, []string{t.Name}, func(wr io.Writer) error { return e.copyTensor(t, wr, visit) }); err != nil {
			return err
		}
		desc := orderedObject{{"name", t.Name}, {"format", []string{"ND"}}, {"type", []string{msTypes[t.DType]}}, {"shape", msShape(t)}}
		file := orderedObject{{"name", t.Name}, {"role", t.Role}, {"bin", rel}, {"type", msTypes[t.DType]}, {"goldset_dtype", t.DType}, {"shape", msShape(t)}, {"npy_sha256", t.SHA256}}
		switch t.Role {
		case manifests.RoleInput:
			r := vr.rangeOf()
			desc = append(desc, kv{"data_distribute", []string{"uniform"}}, kv{"value_range", [][2]float64{r}})
			inDesc = append(inDesc, desc)
			inFiles = append(inFiles, file)
		case manifests.RoleGolden:
			outDesc = append(outDesc, desc)
			if len(t.Tolerance) > 0 {
				file = append(file, kv{"tolerance", json.RawMessage(t.Tolerance)})
			}
			if e.m.Case(c.ID).Tensor(t.Name+"_truth") != nil {
				file = append(file, kv{"truth_bin", "data/" + c.ID + "/" + t.Name + "_truth.bin"})
			}
			file = append(file, kv{"compare", fmt.Sprintf("goldset compare BUNDLE --case %s --output %s=<your %s output>.bin", c.ID, t.Name, t.Name)})
			outFiles = append(outFiles, file)
		}
	}
	op.cases = append(op.cases, orderedObject{{"case_name", caseName}, {"op", spec.AscendOp}, {"input_desc", inDesc}, {"output_desc", outDesc}})
	op.checks = append(op.checks, orderedObject{
		{"case_name", caseName}, {"goldset_case", c.ID}, {"goldset_op", c.Op},
		{"suite", e.m.Suite}, {"suite_version", e.m.SuiteVersion}, {"seed", e.m.Seed}, {"manifest_digest", e.m.Digest},
		{"inputs", inFiles}, {"outputs", outFiles},
	})
	return nil
}

// sanitize keeps letters, digits and '_' of a case id (msOpST case names).
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return r
		}
		return '_'
	}, s)
}

func (w *msWriter) finish(e *exporter) error {
	for _, name := range w.order {
		op := w.ops[name]
		for _, f := range []struct {
			rel string
			v   any
		}{{name + "/" + name + "_case.json", op.cases}, {name + "/" + name + "_goldset_check.json", op.checks}} {
			b, err := marshal(f.v, true)
			if err != nil {
				return err
			}
			if err := e.writeFile(f.rel, "", nil, func(wr io.Writer) error { _, err := wr.Write(b); return err }); err != nil {
				return err
			}
		}
	}
	return nil
}

// marshal encodes v as JSON without HTML escaping ('<' stays '<' in the
// reference code and commands), indented or compact, with a trailing
// newline when indented.
func marshal(v any, indent bool) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	out := b.Bytes()
	if !indent {
		out = bytes.TrimSuffix(out, []byte("\n"))
	}
	return out, nil
}
