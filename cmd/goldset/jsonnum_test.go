package main

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goldset/goldset/npy"
)

// TestCompareJSONNonFinite: compare --json writes a non-finite value as
// one of the strings "NaN", "+Inf", "-Inf" (internal/jsonnum), never as
// null or another spelling, so that Python's float() and jq's tonumber
// read every numeric field of the report.
func TestCompareJSONNonFinite(t *testing.T) {
	dir := t.TempDir()
	b, c := smallCase(t, dir, "mm-odd-7x129x781-fp16")
	for _, tc := range []struct {
		name  string
		value float32
		want  string // the form the worst candidate value takes
	}{
		{"nan", float32(math.NaN()), `"NaN"`},
		{"plus-inf", float32(math.Inf(1)), `"+Inf"`},
		{"minus-inf", float32(math.Inf(-1)), `"-Inf"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cand := filepath.Join(dir, tc.name+".npy")
			v := make([]float32, 7*781)
			for i := range v {
				v[i] = tc.value
			}
			if err := npy.WriteFile(cand, npy.Header{Descr: npy.Float32, Shape: []int64{7, 781}}, npy.AppendFloat32s(nil, v)); err != nil {
				t.Fatal(err)
			}
			code, out, _ := run(t, "compare", b, "--case", c.ID, "--output", "c="+cand, "--json")
			var doc any
			if code != exitMismatch || json.Unmarshal([]byte(out), &doc) != nil {
				t.Fatalf("exit %d, want %d and JSON:\n%s", code, exitMismatch, out)
			}
			if !strings.Contains(out, `"worst_candidate": `+tc.want) {
				t.Errorf("worst_candidate is not %s:\n%s", tc.want, out)
			}
			walkJSON(t, "", doc)
		})
	}
}

// walkJSON fails t for a null or a non-finite value spelled other than
// "NaN", "+Inf", "-Inf" anywhere in doc.
func walkJSON(t *testing.T, path string, doc any) {
	t.Helper()
	switch d := doc.(type) {
	case nil:
		t.Errorf("%s is null", path)
	case map[string]any:
		for k, v := range d {
			walkJSON(t, path+"."+k, v)
		}
	case []any:
		for i, v := range d {
			walkJSON(t, fmt.Sprintf("%s[%d]", path, i), v)
		}
	case string:
		switch strings.ToLower(strings.TrimLeft(d, "+-")) {
		case "nan", "inf", "infinity":
			if d != "NaN" && d != "+Inf" && d != "-Inf" {
				t.Errorf("%s = %q, want \"NaN\", \"+Inf\" or \"-Inf\"", path, d)
			}
		}
	}
}

// TestJSONHasOK: every command's --json document is an object whose
// top-level "ok" is true exactly when the command exits 0.
func TestJSONHasOK(t *testing.T) {
	b, c := smallCase(t, t.TempDir(), "sm-781-bf16")
	other := filepath.Join(t.TempDir(), "o")
	if code, _, errs := run(t, "gen", "stage1-basic", "--out", other, "--case", "sm-781-bf16", "-q"); code != 0 {
		t.Fatal(errs)
	}
	golden := filepath.Join(b, c.Tensor("y").Path)
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"list", []string{"list", "--json"}, 0},
		{"list suite", []string{"list", "stage5-dsa", "--json"}, 0},
		{"list ops", []string{"list", "--ops", "--json"}, 0},
		{"verify", []string{"verify", b, "--json"}, 0},
		{"compare", []string{"compare", b, "--case", "sm-781-bf16", "--output", "y=" + golden, "--partial", "--json"}, 0},
		{"diff identical", []string{"diff", b, b, "--json"}, 0},
		{"diff different", []string{"diff", b, filepath.Join(other, "stage1-basic"), "--json"}, exitMismatch},
		{"list error", []string{"list", "no-such-suite", "--json"}, exitUsage},
		{"gen dry run", []string{"gen", "stage1-basic", "--case", "sm-781-bf16", "--dry-run", "--json", "--out", filepath.Join(other, "dry")}, 0},
		{"gen from", []string{"gen", "--from", filepath.Join(b, "manifest.json"), "--json", "--out", filepath.Join(other, "from")}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run(t, tc.args...)
			var doc map[string]json.RawMessage
			if code != tc.code || json.Unmarshal([]byte(out), &doc) != nil {
				t.Fatalf("exit %d (want %d), stdout not a JSON object:\n%s\n%s", code, tc.code, out, errs)
			}
			var ok bool
			if err := json.Unmarshal(doc["ok"], &ok); err != nil || ok != (code == 0) {
				t.Errorf(`"ok" = %s, want %v`, doc["ok"], code == 0)
			}
		})
	}
}
