package gen_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/goldset/goldset/gen"
	"github.com/goldset/goldset/internal/testenv"
	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/suite"
)

// structuredRecipe exercises every structured input of docs/spec.md §10:
// hostile NaN (past L, unreferenced, min_block and poison blocks), shared
// blocks, needles at all three paged_attention placements, G = 5, pad 0,
// negative q, Quest planting (with needle "exclude", without anchors, on a
// shared block), the all-tied keys, softmax special rows and the
// reshape_and_cache prefill and slot mapping.
const structuredRecipe = `{"name": "structref", "version": "0.1.0", "spec_version": 1, "seed": 20261201, "cases": [
  {"id": "pa-hostile-shared-last-g5-bf16", "op": "paged_attention", "split": "public", "params": {"hq": 10, "hkv": 2, "d": 16, "bs": 8, "dtype": "bfloat16",
    "context_lens": [20, 19, 8, 37], "shared_blocks": 1, "hostile": true, "needle": "last", "extra_blocks": 2, "min_block": 3}},
  {"id": "pa-first-pad0-negq-f16", "op": "paged_attention", "split": "public", "params": {"hq": 4, "hkv": 1, "d": 32, "bs": 16, "dtype": "float16",
    "context_lens": [1, 50, 23], "pad_value": 0, "needle": "first", "negative_q": true, "max_blocks": 6}},
  {"id": "pa-boundary512-f32", "op": "paged_attention", "split": "public", "params": {"hq": 2, "hkv": 2, "d": 8, "bs": 32, "dtype": "float32",
    "context_lens": [600, 100], "needle": "boundary512"}},
  {"id": "quest-exclude-hostile-f16", "op": "quest", "split": "public", "params": {"hq": 8, "hkv": 2, "d": 64, "bs": 16, "dtype": "float16",
    "context_lens": [200, 130, 9], "k": 4, "needle": "exclude", "hostile": true}},
  {"id": "quest-noanchor-shared-negq-bf16", "op": "quest", "split": "public", "params": {"hq": 5, "hkv": 1, "d": 16, "bs": 4, "dtype": "bfloat16",
    "context_lens": [40, 28], "k": 3, "anchor_first": false, "anchor_last": false, "shared_blocks": 1, "negative_q": true, "plant_gain": 2.5}},
  {"id": "quest-tie-kvsum-f32", "op": "quest", "split": "public", "params": {"hq": 4, "hkv": 2, "d": 8, "bs": 4, "dtype": "float32",
    "context_lens": [17, 30], "k": 3, "tie": true, "granularity": "kv_group_sum"}},
  {"id": "sm-special-bf16", "op": "softmax", "split": "public", "params": {"m": 12, "n": 300, "dtype": "bfloat16",
    "outlier_rows": 4, "neg_inf_rows": 2, "neg_inf_prefix": 256, "masked_rows": 1}},
  {"id": "sm-outlier-f16", "op": "softmax", "split": "public", "params": {"m": 6, "n": 200, "dtype": "float16", "scale": 2, "outlier_rows": 3}},
  {"id": "rc-hostile-f16", "op": "reshape_and_cache", "split": "public", "params": {"t": 30, "t_s": 25, "hkv": 2, "d": 8, "bs": 4, "nb": 12,
    "dtype": "float16", "skip_frac": 0.3, "slot0": true, "hostile": true}},
  {"id": "rc-f32", "op": "reshape_and_cache", "split": "public", "params": {"t": 20, "hkv": 1, "d": 8, "bs": 4, "nb": 9, "dtype": "float32", "skip_frac": 0.2}}]}`

// TestStructuredInputsReference builds a bundle with package suite and
// checks every generated input tensor byte for byte against
// testdata/gen_ref.py, which reimplements the structured inputs from
// docs/spec.md §10 (and the streams from this package's doc.go) in
// numpy, given only each case's recorded params.
func TestStructuredInputsReference(t *testing.T) {
	py := testenv.PythonNumpy(t)
	r, err := manifests.ParseRecipe("structref", []byte(structuredRecipe))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), r.Name)
	bw, err := manifests.CreateBundle(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer bw.Abort()
	m, err := suite.Build(context.Background(), r, suite.BundleSink{W: bw}, suite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := bw.Commit(m); err != nil {
		t.Fatal(err)
	}
	type req struct {
		Kind   string          `json:"kind"`
		Seed   uint64          `json:"seed"`
		Case   string          `json:"case"`
		Op     string          `json:"op"`
		Params json.RawMessage `json:"params"`
	}
	reqs := make([]req, len(m.Cases))
	for i, c := range m.Cases {
		reqs[i] = req{Kind: "case", Seed: suite.CaseSeed(r, r.Cases[i], nil), Case: c.ID, Op: c.Op, Params: c.Params}
	}
	var got []map[string]string
	gen.RunGenRef(t, py, reqs, &got)
	if len(got) != len(m.Cases) {
		t.Fatalf("%d results for %d cases", len(got), len(m.Cases))
	}
	for i, c := range m.Cases {
		t.Run(c.ID, func(t *testing.T) {
			var inputs []string
			for _, ts := range c.Tensors {
				if ts.Role != "input" {
					continue
				}
				inputs = append(inputs, ts.Name)
				want, ok := got[i][ts.Name]
				if !ok {
					t.Errorf("%s: the reference does not produce this input", ts.Name)
					continue
				}
				_, data, err := manifests.LoadTensor(dir, &ts)
				if err != nil {
					t.Fatal(err)
				}
				if h := hex.EncodeToString(data); h != want {
					t.Errorf("%s (%s %v): bundle bytes differ from the numpy reference, first at byte %d of %d",
						ts.Name, ts.DType, ts.Shape, firstHexDiff(h, want)/2, len(data))
				}
			}
			for name := range got[i] {
				if !slices.Contains(inputs, name) {
					t.Errorf("the reference produces %s, which the bundle does not hold as an input", name)
				}
			}
		})
	}
}

func firstHexDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
