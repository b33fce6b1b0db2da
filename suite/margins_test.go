package suite

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/goldset/goldset/manifests"
)

// marginRecipe adds shipped-like sizes (Qwen3 k, softmax n, decode
// lengths) to the tiny recipes, where accumulation errors grow as they do
// in the contest cases.
const marginRecipe = `{"name": "margins", "version": "1", "spec_version": 1, "seed": 5, "cases": [
 {"id": "mm-4096-fp16", "op": "matmul", "split": "public", "params": {"m": 4, "k": 4096, "n": 64, "dtype": "float16"}},
 {"id": "mm-4096-bf16", "op": "matmul", "split": "public", "params": {"m": 4, "k": 4096, "n": 64, "dtype": "bfloat16"}},
 {"id": "sm-32768-fp16", "op": "softmax", "split": "public", "params": {"m": 4, "n": 32768, "dtype": "float16", "outlier_rows": 1}},
 {"id": "pa-1000-bf16", "op": "paged_attention", "split": "public", "params": {"hq": 8, "hkv": 2, "d": 64, "bs": 16, "dtype": "bfloat16", "context_lens": [1000, 777]}}
]}`

// TestMargins measures every family's discrimination margin on the tiny
// recipes (all splits but edge) and requires margins.json to hold exactly
// those numbers (rewritten by -update), so list --ops never shows stale
// ones. Every allclose family must have a wrong algorithm measured.
func TestMargins(t *testing.T) {
	acc := map[[2]string]*Margin{}
	real, err := manifests.ParseRecipe("margins", []byte(marginRecipe))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*manifests.Recipe{tiny(t), tinyDSA(t), tinyMX(t), real} {
		dir := t.TempDir()
		m := buildTo(t, r, dir, Options{Jobs: 2, Secret: secret, Splits: []string{"public", "benchmark", "hidden"}})
		if err := measureMargins(filepath.Join(dir, r.Name), m, acc); err != nil {
			t.Fatal(err)
		}
	}
	got := sortedMargins(acc)
	for _, m := range got {
		if !m.Exact && m.Control == "" {
			t.Errorf("family %s/%s: no negative control changes it", m.Family, m.DType)
		}
		if m.Weak {
			t.Logf("weak family %s/%s: nearest wrong algorithm %s (%s %s) at %.3g x its bound", m.Family, m.DType, m.Control, m.Case, m.Output, float64(m.Ratio))
		}
	}
	b, err := json.MarshalIndent(got, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	if *update {
		os.WriteFile("margins.json", b, 0o644)
		return
	}
	if !bytes.Equal(b, marginsJSON) {
		t.Errorf("margins.json is stale; run go test ./suite -run TestMargins -update\nmeasured:\n%s", b)
	}
}
