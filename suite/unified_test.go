package suite

import (
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/goldset/goldset/golden"
	"github.com/goldset/goldset/manifests"
)

// tinyUnifiedRecipe covers unified_attention (docs/spec.md §12) at small
// sizes: decode, speculative verify and chunked prefill rows with a cached
// prefix, G = 1, 4, 5, 8, a drawn mix, shared and hostile layouts, and
// graph padding (uniform decode: padded requests; mixed: padded tokens).
// A recipe of its own (pin testdata/tiny-unified.digest) so the tiny
// recipe's digest does not move.
const tinyUnifiedRecipe = `{
 "name": "tiny-unified", "version": "0.1.0", "spec_version": 1, "seed": 11,
 "cases": [
  {"id": "mixed-g4", "op": "unified_attention", "split": "public", "params": {"hq": 8, "hkv": 2, "d": 16, "bs": 16, "dtype": "bfloat16", "rows": [{"q_len": 1, "context": 40}, {"q_len": 3, "context": 19}, {"q_len": 37, "context": 70}]}},
  {"id": "g1-f16-hostile", "op": "unified_attention", "split": "public", "params": {"hq": 2, "hkv": 2, "d": 32, "bs": 8, "dtype": "float16", "hostile": true, "rows": [{"q_len": 9, "context": 9}, {"q_len": 1, "context": 30}]}},
  {"id": "g5-graph", "op": "unified_attention", "split": "public", "params": {"hq": 5, "hkv": 1, "d": 16, "bs": 4, "dtype": "bfloat16", "graph_pad": true, "hostile": true, "rows": [{"q_len": 2, "context": 11}, {"q_len": 1, "context": 5}, {"q_len": 1, "context": 7}, {"q_len": 1, "context": 9}]}},
  {"id": "g8-decode-graph", "op": "unified_attention", "split": "public", "params": {"hq": 16, "hkv": 2, "d": 8, "bs": 8, "dtype": "float32", "graph_pad": true, "shared_blocks": 1, "rows": [{"q_len": 1, "context": 20}, {"q_len": 1, "context": 9}, {"q_len": 1, "context": 33}]}},
  {"id": "mix", "op": "unified_attention", "split": "benchmark", "params": {"hq": 4, "hkv": 1, "d": 16, "bs": 16, "dtype": "bfloat16", "graph_pad": true, "mix": {"decode": 3, "spec": 1, "chunks": 1, "chunk_len": 20, "min_prefix": 5, "context_max": 90}}}
 ]
}`

func tinyUnified(t testing.TB) *manifests.Recipe {
	t.Helper()
	r, err := manifests.ParseRecipe("tiny-unified", []byte(tinyUnifiedRecipe))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestControlsTinyUnified: the goldens pass, every negative fails and
// every positive passes (checkControls), and each case has the controls
// its batch calls for.
func TestControlsTinyUnified(t *testing.T) {
	r := tinyUnified(t)
	dir := t.TempDir()
	m := buildTo(t, r, dir, Options{Jobs: 2, Splits: []string{"public", "benchmark"}})
	bdir := filepath.Join(dir, r.Name)
	checkControls(t, bdir, m)
	want := map[string][]string{
		"mixed-g4":        {"zeros", "causal_off_by_one", "prefix_ignored", "wrong_query_start_loc", "wrong_gqa", "fp32_accumulate", "bf16_roundtrip"},
		"g1-f16-hostile":  {"zeros", "causal_off_by_one", "prefix_ignored", "wrong_query_start_loc", "fp32_accumulate"},
		"g5-graph":        {"zeros", "causal_off_by_one", "wrong_query_start_loc", "pad_as_tokens", "pad_garbage", "fp32_accumulate"},
		"g8-decode-graph": {"zeros", "prefix_ignored", "wrong_gqa", "pad_as_tokens", "pad_garbage"},
		"mix":             {"zeros", "causal_off_by_one", "prefix_ignored", "pad_garbage"},
	}
	for i := range m.Cases {
		c := &m.Cases[i]
		ctl, err := Controls(bdir, c)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, k := range ctl {
			names = append(names, k.Name)
		}
		for _, n := range want[c.ID] {
			if !slices.Contains(names, n) {
				t.Errorf("%s: no control %s (has %v)", c.ID, n, names)
			}
		}
	}
	// Graph padding of a uniform decode batch of 3: 4 tokens and 4
	// requests, query_start_loc repeating and seq_len 0 (g5-graph, mixed,
	// pads only its 5 tokens to 8).
	for i := range m.Cases {
		c := &m.Cases[i]
		if c.ID != "g8-decode-graph" {
			continue
		}
		d := caseData{dir: bdir, c: c}
		qsl, _ := d.i32("query_start_loc")
		sl, _ := d.i32("seq_lens")
		if !slices.Equal(qsl, []int32{0, 1, 2, 3, 3}) || !slices.Equal(sl, []int32{20, 9, 33, 0}) {
			t.Errorf("graph padding: query_start_loc %v seq_lens %v", qsl, sl)
		}
		if s := c.Tensor("query").Shape; s[0] != 4 {
			t.Errorf("graph padding: query shape %v, want 4 tokens", s)
		}
		var p unifiedParams
		json.Unmarshal(c.Params, &p)
		if p.PadTokens != 4 || p.PadSeqs != 1 {
			t.Errorf("recorded params pad_tokens %d pad_seqs %d, want 4 1", p.PadTokens, p.PadSeqs)
		}
	}
}

// TestUnifiedDeterministic pins the tiny-unified digest across GOMAXPROCS
// and jobs (testdata/tiny-unified.digest, refreshed only with -update).
func TestUnifiedDeterministic(t *testing.T) {
	checkPinnedDigest(t, tinyUnified(t), "tiny-unified.digest", Options{Secret: secret, Splits: []string{"public", "benchmark"}})
}

func TestUnifiedParamErrors(t *testing.T) {
	for _, raw := range []string{
		`{"hq": 4, "hkv": 2, "d": 8, "bs": 4, "dtype": "bfloat16"}`,
		`{"hq": 4, "hkv": 2, "d": 8, "bs": 4, "dtype": "bfloat16", "rows": [{"q_len": 3, "context": 2}]}`,
		`{"hq": 4, "hkv": 3, "d": 8, "bs": 4, "dtype": "bfloat16", "rows": [{"q_len": 1, "context": 2}]}`,
		`{"hq": 4, "hkv": 2, "d": 8, "bs": 4, "dtype": "bfloat16", "rows": [{"q_len": 1, "context": 2}], "pad_tokens": 0, "graph_pad": true, "pad_seqs": -1}`,
		`{"hq": 4, "hkv": 2, "d": 8, "bs": 4, "dtype": "bfloat16", "rows": [{"q_len": 3, "context": 5}], "graph_pad": true, "pad_tokens": 8}`,
		`{"hq": 4, "hkv": 2, "d": 8, "bs": 4, "dtype": "bfloat16", "rows": [{"q_len": 3, "context": 5}], "pad_tokens": 2}`,
		`{"hq": 4, "hkv": 2, "d": 8, "bs": 4, "dtype": "bfloat16", "mix": {"spec": 1, "spec_len": 5, "context_max": 9}}`,
		`{"hq": 4, "hkv": 2, "d": 8, "bs": 4, "dtype": "bfloat16", "mix": {"chunks": 1, "chunk_len": 10, "context_max": 9}}`,
		`{"hq": 4, "hkv": 2, "d": 8, "bs": 4, "dtype": "bfloat16", "rows": [{"q_len": 1, "context": 2}], "mix": {"decode": 1, "context_max": 9}}`,
	} {
		if _, err := planUnified(json.RawMessage(raw)); err == nil {
			t.Errorf("planUnified(%s) accepted", raw)
		}
	}
}

// TestUnifiedBundleRecompute recomputes every tiny-unified golden from the
// bundle's own files, the whole cache at once through the real block
// table, query_start_loc and seq_lens (the builder computes per sequence
// on gathered blocks), and requires the stored bits: out, out_truth and
// lse, padded tokens included (0).
func TestUnifiedBundleRecompute(t *testing.T) {
	r := tinyUnified(t)
	dir := t.TempDir()
	m := buildTo(t, r, dir, Options{Splits: []string{"public", "benchmark"}})
	bdir := filepath.Join(dir, r.Name)
	for i := range m.Cases {
		c := &m.Cases[i]
		d := caseData{dir: bdir, c: c}
		in, err := loadUnified(d)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]float64, in.dims.T*in.dims.Hq*in.dims.D)
		lse := make([]float64, in.dims.T*in.dims.Hq)
		if err := golden.UnifiedAttention(out, lse, in.q, in.kc, in.vc, in.bt, in.sl, in.qsl, in.dims, in.scale); err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		for name, v := range map[string][]float64{"out": out, "out_truth": out, "lse": lse} {
			tn := c.Tensor(name)
			if tn == nil {
				continue // float32 cases have no out_truth
			}
			stored, _, err := d.floats(name)
			if err != nil {
				t.Fatal(err)
			}
			want := storedValues(ControlOutput{DType: tn.DType, Values: v})
			for j := range want {
				if math.Float64bits(stored[j]) != math.Float64bits(want[j]) {
					t.Errorf("%s %s[%d] = %v, recomputed %v", c.ID, name, j, stored[j], want[j])
					break
				}
			}
		}
	}
}
