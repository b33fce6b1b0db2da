package suite

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goldset/goldset/compare"
	"github.com/goldset/goldset/manifests"
)

// TestOpTableMatchesBundles checks that every op's table entry (what
// `goldset list --ops` publishes) names exactly the tensors its builder
// writes, role by role and in manifest order, and that every golden and
// truth carries the tolerance of its table family.
func TestOpTableMatchesBundles(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range []*manifests.Recipe{tiny(t), tinyMX(t), tinyDSA(t), tinyUnified(t)} {
		checkOpTable(t, r, seen)
	}
	for _, name := range Ops() {
		if !seen[name] {
			t.Errorf("none of the tiny, tiny-mxfp4, tiny-dsa or tiny-unified recipes has a %s case", name)
		}
	}
}

func checkOpTable(t *testing.T, r *manifests.Recipe, seen map[string]bool) {
	dir := t.TempDir()
	m := buildTo(t, r, dir, Options{Jobs: 2, Splits: []string{"public", "benchmark", "edge"}})
	for i := range m.Cases {
		c := &m.Cases[i]
		o := opTable[c.Op]
		seen[c.Op] = true
		var p struct {
			DType   string `json:"dtype"`
			NoDense bool   `json:"no_dense"`
		}
		if err := json.Unmarshal(c.Params, &p); err != nil {
			t.Fatal(err)
		}
		var wantIn, wantOut, wantAux []string
		wantIn = o.inputs
		for _, out := range o.outputs {
			dt := out.storedDType(p.DType)
			wantOut = append(wantOut, out.name)
			if out.truth && dt != "float32" {
				wantOut = append(wantOut, out.name+"_truth")
			}
		}
		if !p.NoDense {
			wantAux = o.aux
		}
		if o.tensorsOf != nil {
			wantIn, wantOut, wantAux = o.tensorsOf(c.Params)
		}
		var gotIn, gotOut, gotAux []string
		for _, tn := range c.Tensors {
			switch tn.Role {
			case manifests.RoleInput:
				gotIn = append(gotIn, tn.Name)
			case manifests.RoleGolden, manifests.RoleTruth:
				gotOut = append(gotOut, tn.Name)
				base, _ := strings.CutSuffix(tn.Name, "_truth")
				out, _ := o.output(base)
				dt := tn.DType
				fam := out.tol
				if pl, err := planCase(manifests.RecipeCase{ID: c.ID, Op: c.Op, Params: c.Params}); err == nil && pl.family != nil {
					if f, ok := pl.family(base); ok {
						fam = f // the case's override (MXFP4 strict)
					}
				}
				want, err := fam.Tolerance(dt)
				if err != nil {
					t.Fatalf("%s/%s: %v", c.ID, tn.Name, err)
				}
				if b, _ := json.Marshal(want); string(b) != string(tn.Tolerance) {
					t.Errorf("%s/%s: tolerance %s, table %s", c.ID, tn.Name, tn.Tolerance, b)
				}
			case manifests.RoleAux:
				gotAux = append(gotAux, tn.Name)
			}
		}
		// outputs are written in the table's order except quest's, whose
		// attention outputs follow its per-sequence ones: compare as sets
		// for outputs, in order for inputs.
		if !slices.Equal(gotIn, wantIn) || !sameSet(gotOut, wantOut) || !slices.Equal(gotAux, wantAux) {
			t.Errorf("%s (%s): tensors in %v out %v aux %v, table says in %v out %v aux %v", c.ID, c.Op, gotIn, gotOut, gotAux, wantIn, wantOut, wantAux)
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(a, b)
}

// TestOpTableErrors: an unknown op, and an output whose family has no row
// for the case's dtype, fail at plan time; a builder writing a golden the
// table does not list fails instead of recording a made-up tolerance.
func TestOpTableErrors(t *testing.T) {
	if _, err := planCase(manifests.RecipeCase{ID: "x", Op: "matmull", Params: json.RawMessage(`{}`)}); !errors.Is(err, ErrUnknownOp) {
		t.Errorf("unknown op: %v", err)
	}
	// A toy op whose float output is declared in a dtype its family lacks.
	toy := &op{name: "toy", outputs: []output{{name: "y", tol: compare.MatmulLike}}}
	toy.plan = func(json.RawMessage) (*casePlan, error) { return &casePlan{dtype: "int32"}, nil }
	toy.controls = func(caseData) ([]Control, error) { return nil, nil }
	opTable["toy"] = toy
	defer delete(opTable, "toy")
	_, err := planCase(manifests.RecipeCase{ID: "t", Op: "toy", Params: json.RawMessage(`{}`)})
	if !errors.Is(err, compare.ErrTolerance) || !strings.Contains(err.Error(), "output y") {
		t.Errorf("float family at int32: %v", err)
	}
	c := &caseCtx{tols: map[string]*compare.Tolerance{}}
	if err := c.addEntry(tensorSpec{name: "z", role: roleGolden, dtype: "float16"}, "t/z.npy"); err == nil || !strings.Contains(err.Error(), "not an output") {
		t.Errorf("undeclared golden: %v", err)
	}
	tol := compare.Tolerance{Mode: compare.ModeExact, DType: "float32"}
	c.tols["z"] = &tol
	if err := c.addEntry(tensorSpec{name: "z", role: roleGolden, dtype: "float16"}, "t/z.npy"); err == nil {
		t.Errorf("golden in another dtype than planned: accepted")
	}
	if err := c.addEntry(tensorSpec{name: "q", role: roleInput, dtype: "float16"}, "t/q.npy"); err != nil {
		t.Errorf("input: %v", err)
	}
}

// TestJudgeWithoutRecordedTolerance: a manifest without tolerances is
// judged with the op table's, the same rule; an unknown op is an error,
// not the matmul row.
func TestJudgeWithoutRecordedTolerance(t *testing.T) {
	r := tiny(t)
	dir := t.TempDir()
	m := buildTo(t, r, dir, Options{Cases: []string{"quest", "sm"}})
	bdir := filepath.Join(dir, r.Name)
	for i := range m.Cases {
		c := &m.Cases[i]
		for _, name := range []string{"kmax", "selected", "y", "row_sum"} {
			tn := c.Tensor(name)
			if tn == nil {
				continue
			}
			d := caseData{dir: bdir, c: c}
			v, _, err := d.floats(name)
			if err != nil {
				t.Fatal(err)
			}
			v[0] += 0.5 // off by far more than any tolerance
			with, err := JudgeOutput(bdir, c, name, v)
			if err != nil {
				t.Fatal(err)
			}
			saved := tn.Tolerance
			tn.Tolerance = nil
			without, err := JudgeOutput(bdir, c, name, v)
			if err != nil {
				t.Fatal(err)
			}
			if with.OK() || with.Status != without.Status || with.Tol.Basis != without.Tol.Basis {
				t.Errorf("%s/%s: recorded %s (%s), table %s (%s)", c.ID, name, with.Status, with.Tol.Basis, without.Status, without.Tol.Basis)
			}
			tn.Tolerance = saved
		}
		op := c.Op
		c.Op = "no_such_op"
		gi := slices.IndexFunc(c.Tensors, func(tn manifests.Tensor) bool { return tn.Role == manifests.RoleGolden })
		if _, err := JudgeOutput(bdir, c, c.Tensors[gi].Name, nil); !errors.Is(err, ErrUnknownOp) {
			t.Errorf("unknown op: %v", err)
		}
		c.Op = op
	}
}
