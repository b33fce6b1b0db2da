package suite

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goldset/goldset/manifests"
)

// TestVariants: n variants of a case hold distinct inputs, the sampled
// rows of the reference that a full build of the same variant has, the
// sha256 of that build's golden, and no golden; another secret gives
// other inputs and other rows.
func TestVariants(t *testing.T) {
	r, err := manifests.ParseRecipe("v", []byte(`{"name": "v", "version": "1", "spec_version": 1, "seed": 9, "cases": [
	 {"id": "mm", "op": "matmul", "split": "benchmark", "params": {"m": 200, "k": 16, "n": 8, "dtype": "float16"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	build := func(secret string) (*manifests.Manifest, string) {
		dir := filepath.Join(t.TempDir(), "v.variants")
		bw, err := manifests.CreateBundle(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer bw.Abort()
		m, err := BuildVariants(context.Background(), r, "mm", 3, []byte(secret), bw, Options{Jobs: 2})
		if err != nil {
			t.Fatal(err)
		}
		if err := bw.Commit(m); err != nil {
			t.Fatal(err)
		}
		return m, dir
	}
	m, dir := build("s1")
	if len(m.Cases) != 3 {
		t.Fatalf("%d variants", len(m.Cases))
	}
	var aSHA []string
	for i, c := range m.Cases {
		var names []string
		for _, ts := range c.Tensors {
			names = append(names, ts.Name)
			if ts.Role == manifests.RoleGolden || ts.Role == manifests.RoleTruth {
				t.Errorf("variant %s keeps %s (%s)", c.ID, ts.Name, ts.Role)
			}
		}
		if !slices.Equal(names, []string{"a", "b", "c.rows", "c.values"}) {
			t.Errorf("variant %s tensors %v", c.ID, names)
		}
		aSHA = append(aSHA, c.Tensor("a").SHA256)
		var info VariantInfo
		if err := json.Unmarshal(c.Info, &info); err != nil || info.Index != i || info.VariantOf != "mm" || len(info.Outputs) != 1 {
			t.Fatalf("info %s: %v", c.Info, err)
		}
		// 1.5% of 200 rows = 3.
		if rows := c.Tensor("c.rows"); rows.Shape[0] != 3 {
			t.Errorf("%d sampled rows", rows.Shape[0])
		}
		// The full build of the same variant (a hidden case of that id)
		// has the same inputs, that golden sha256 and those truth rows.
		fr := &manifests.Recipe{Name: "full", Version: "1", SpecVersion: 1, Seed: 9, Cases: []manifests.RecipeCase{{ID: c.ID, Op: "matmul", Split: manifests.SplitHidden, Params: r.Cases[0].Params}}}
		fdir := t.TempDir()
		fm := buildTo(t, fr, fdir, Options{Secret: []byte("s1"), Splits: []string{manifests.SplitHidden}})
		fc := &fm.Cases[0]
		if fc.Tensor("a").SHA256 != c.Tensor("a").SHA256 || fc.Tensor("c").SHA256 != info.Outputs[0].GoldenSHA256 {
			t.Errorf("variant %s differs from its full build", c.ID)
		}
		truth, _, err := caseData{dir: filepath.Join(fdir, "full"), c: fc}.floats("c_truth")
		if err != nil {
			t.Fatal(err)
		}
		rows, _, err := caseData{dir: dir, c: &m.Cases[i]}.floats("c.rows")
		if err != nil {
			t.Fatal(err)
		}
		vals, _, err := caseData{dir: dir, c: &m.Cases[i]}.floats("c.values")
		if err != nil {
			t.Fatal(err)
		}
		for k, row := range rows {
			if !slices.Equal(vals[k*8:(k+1)*8], truth[int(row)*8:(int(row)+1)*8]) {
				t.Errorf("variant %s row %v differs from the truth", c.ID, row)
			}
		}
	}
	if aSHA[0] == aSHA[1] || aSHA[1] == aSHA[2] {
		t.Error("variants share inputs")
	}
	m2, _ := build("s2")
	if m2.Cases[0].Tensor("a").SHA256 == aSHA[0] {
		t.Error("another secret gives the same inputs")
	}
	if slices.Equal(SampleRows([]byte("s1"), "mm.v0", "c", 200), SampleRows([]byte("s2"), "mm.v0", "c", 200)) {
		t.Error("another secret samples the same rows")
	}
	// verify --regenerate rebuilds a variants manifest as variants (as
	// hidden recipe cases it got full goldens and no sampled rows: 10
	// false problems) and names a changed sampled row or golden hash;
	// gen --from (RecipeFromManifest) refuses it, naming gen --variants.
	if probs, err := Regenerate(context.Background(), m, Options{Secret: []byte("s1")}); err != nil || len(probs) != 0 {
		t.Errorf("regenerate variants: %v %v", err, probs)
	}
	if _, err := Regenerate(context.Background(), m, Options{Secret: []byte("s2")}); !errors.Is(err, ErrSecret) {
		t.Errorf("regenerate with another secret: %v", err)
	}
	var bad manifests.Manifest
	b, _ := json.Marshal(m)
	json.Unmarshal(b, &bad)
	bad.Cases[1].Tensor("c.values").SHA256 = strings.Repeat("0", 64)
	bad.Cases[2].Info = json.RawMessage(strings.Replace(string(bad.Cases[2].Info), `"golden_sha256":"`, `"golden_sha256":"0`, 1))
	probs, err := Regenerate(context.Background(), &bad, Options{Secret: []byte("s1")})
	if err != nil || len(probs) != 2 || probs[0].Case != "mm.v1" || probs[0].Tensor != "c.values" || probs[1].Case != "mm.v2" {
		t.Errorf("tampered variants: %v %v", err, probs)
	}
	if _, err := RecipeFromManifest(m); !errors.Is(err, ErrVariants) || !strings.Contains(err.Error(), "--variants 3") {
		t.Errorf("RecipeFromManifest of variants: %v", err)
	}
	if _, err := BuildVariants(context.Background(), r, "mm", 2, nil, nil, Options{}); err == nil {
		t.Error("no secret accepted")
	}
	if _, err := BuildVariants(context.Background(), r, "nope", 2, []byte("s"), nil, Options{}); err == nil {
		t.Error("unknown case accepted")
	}
}
