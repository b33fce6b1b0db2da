package main

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/npy"
)

// TestCompareJSONNonFinite: compare --json writes a non-finite value as
// one of the strings "NaN", "+Inf", "-Inf" (internal/jsonnum), never as
// null or another spelling, so that Python's float() and jq's tonumber
// read every numeric field of the report.
func TestCompareJSONNonFinite(t *testing.T) {
	dir := t.TempDir()
	b := small(t, dir)
	m, err := manifests.ReadManifest(b)
	if err != nil {
		t.Fatal(err)
	}
	c := m.Case("mm-odd-7x129x781-fp16")
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
