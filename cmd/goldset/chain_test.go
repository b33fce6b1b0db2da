package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goldset/goldset/internal/testenv"
	"github.com/goldset/goldset/manifests"
)

// TestCompareChainCLI builds the public stage4-steps graph chain and the
// DSA chain, writes their chain negatives, and checks that compare
// --chain passes the goldens and names each negative's stage and step
// (exit 3), in text and JSON.
func TestCompareChainCLI(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := run(t, "gen", "stage4-steps", "--case", "qwen3-32b-graph", "--case", "deepseek-v32-dsa", "--out", dir, "-q"); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, stderr)
	}
	bundle := filepath.Join(dir, "stage4-steps")
	for _, ch := range []struct {
		id     string
		stages int
		want   []string // stage ops some negative is named at
	}{
		{"qwen3-32b-graph", 6, []string{"reshape_and_cache", "unified_attention"}},
		{"deepseek-v32-dsa", 9, []string{"dsa_index_cache", "dsa_indexer", "dsa_sparse_attention"}},
	} {
		neg := filepath.Join(dir, "neg-"+ch.id)
		code, out, stderr := run(t, "negatives", bundle, "--chain", ch.id, "--out", neg, "--check")
		if code != 0 {
			t.Fatalf("negatives --chain %s --check: exit %d: %s%s", ch.id, code, out, stderr)
		}
		var ctls []chainControlResult
		data, err := os.ReadFile(filepath.Join(neg, "controls.json"))
		if err != nil || json.Unmarshal(data, &ctls) != nil || len(ctls) < 3 {
			t.Fatalf("%s controls.json: %v, %d controls", ch.id, err, len(ctls))
		}
		named := map[string]bool{}
		for _, k := range ctls {
			code, out, _ := run(t, "compare", bundle, "--chain", ch.id, "--dir", k.Dir, "--json")
			var res compareChainResult
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("%s: %v: %s", k.Name, err, out)
			}
			if code != 3 || res.OK || res.First == nil || res.First.Case != k.Case || len(res.Stages) != ch.stages {
				t.Errorf("%s: exit %d, first %+v, want %s", k.Name, code, res.First, k.Case)
				continue
			}
			named[res.First.Op] = true
		}
		for _, op := range ch.want {
			if !named[op] {
				t.Errorf("%s: no chain negative named at %s (%v)", ch.id, op, named)
			}
		}
	}
	// The goldens themselves, as candidates: pass. Only some: --partial.
	gold := filepath.Join(dir, "gold")
	for _, c := range []string{"qwen3-32b-graph.s29.reshape_and_cache", "qwen3-32b-graph.s29.unified_attention"} {
		os.MkdirAll(filepath.Join(gold, c), 0o755)
		for _, o := range []string{"key_cache_out", "value_cache_out", "out", "lse"} {
			if b, err := os.ReadFile(filepath.Join(bundle, c, o+".npy")); err == nil {
				os.WriteFile(filepath.Join(gold, c, o+".npy"), b, 0o644)
			}
		}
	}
	if code, _, stderr := run(t, "compare", bundle, "--chain", "qwen3-32b-graph", "--dir", gold); code != 2 || !strings.Contains(stderr, "--partial") {
		t.Errorf("missing candidates without --partial: exit %d: %s", code, stderr)
	}
	code, out, stderr := run(t, "compare", bundle, "--chain", "qwen3-32b-graph", "--dir", gold, "--partial")
	if code != 0 || !strings.Contains(out, "SKIPPED") || !strings.Contains(out, "PASS") {
		t.Errorf("partial goldens: exit %d: %s%s", code, out, stderr)
	}
	if code, _, _ := run(t, "compare", bundle, "--chain", "nope", "--dir", gold); code != 2 {
		t.Errorf("unknown chain: exit %d, want 2", code)
	}
}

// TestLongbenchStepsSuite: --steps-suite schedules a real LongBench
// sample build's prompts and builds their pipeline chain.
func TestLongbenchStepsSuite(t *testing.T) {
	tok, data := testenv.Qwen3TokenizerPath(t), testenv.LongBenchSample(t)
	out := filepath.Join(t.TempDir(), "lb")
	code, _, errs := run(t, "longbench", "build", "--data", data, "--tokenizer", tok, "--subsets", "qasper,multifieldqa_en,gov_report,hotpotqa",
		"--n", "4", "--target-mean", "3000", "--truncate-at", "3000", "--no-thinking", "--seed", "5", "--out", out, "-q", "--model", "Qwen/Qwen3-8B", "--steps-suite")
	if code != 0 {
		t.Fatalf("longbench build --steps-suite: %d %s", code, errs)
	}
	bundle := filepath.Join(out, "kernels", "stage4-steps")
	if code, _, errs := run(t, "verify", bundle); code != 0 {
		t.Fatalf("verify: %s", errs)
	}
	m, err := manifests.ReadManifest(bundle)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Chains) != 1 || len(m.Cases) != 4 {
		t.Fatalf("%d chains, %d cases", len(m.Chains), len(m.Cases))
	}
	var info struct {
		Mixed bool `json:"mixed"`
	}
	json.Unmarshal(m.Cases[0].Info, &info)
	if !info.Mixed {
		t.Errorf("the first sampled step does not mix prefill and decode: %s", m.Cases[0].Info)
	}
}
