package main

import (
	"encoding/json"
	"fmt"
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
	for _, c := range []string{"compare", "negatives"} {
		if _, out, _ := run(t, "__complete", c, bundle, "--chain", "qwen"); !strings.Contains(out, "qwen3-32b-graph\tpaged public") {
			t.Errorf("%s --chain completion: %q", c, out)
		}
	}
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
	// A stage-case directory that is a link is refused (exit 1), as a
	// bundle's case directory is; it was read through.
	linked := filepath.Join(dir, "linked")
	os.MkdirAll(linked, 0o755)
	os.Symlink(filepath.Join(gold, "qwen3-32b-graph.s29.unified_attention"), filepath.Join(linked, "qwen3-32b-graph.s29.unified_attention"))
	if code, _, stderr := run(t, "compare", bundle, "--chain", "qwen3-32b-graph", "--dir", linked, "--partial"); code != exitError || !strings.Contains(stderr, "symbolic link") {
		t.Errorf("linked stage-case directory: exit %d: %s", code, stderr)
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
	code, stdout, errs := run(t, "longbench", "build", "--data", data, "--tokenizer", tok, "--subsets", "qasper,multifieldqa_en,gov_report,hotpotqa",
		"--n", "4", "--target-mean", "3000", "--truncate-at", "3000", "--no-thinking", "--seed", "5", "--out", out, "-q", "--model", "Qwen/Qwen3-8B", "--steps-suite", "--json")
	if code != 0 {
		t.Fatalf("longbench build --steps-suite: %d %s", code, errs)
	}
	bundle := filepath.Join(out, "kernels", "stage4-steps")
	var res longbenchResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || !res.OK || res.StepsSuite != bundle {
		t.Errorf("--json does not name the steps bundle %s: %v %s", bundle, err, stdout)
	}
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

// TestChainBundleBytes: a chain lists an earlier stage's golden cache again
// as a later stage's input, the same file; gen's and inspect's totals are
// the bundle's bytes on disk, each file once (they said twice the caches).
func TestChainBundleBytes(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := run(t, "gen", "stage4-steps", "--case", "qwen3-32b-graph", "--out", dir, "-q", "--json")
	if code != 0 {
		t.Fatalf("gen: exit %d: %s", code, stderr)
	}
	var sum bundleSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	bundle := filepath.Join(dir, "stage4-steps")
	var disk int64
	files := 0
	filepath.WalkDir(bundle, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && d.Name() != "manifest.json" {
			fi, _ := d.Info()
			disk += fi.Size()
			files++
		}
		return nil
	})
	if sum.Bytes != disk || files >= sum.Tensors {
		t.Errorf("gen --json bytes %d, %d tensor entries; on disk %d bytes in %d files (a chain shares its caches)", sum.Bytes, sum.Tensors, disk, files)
	}
	_, out, _ = run(t, "inspect", bundle)
	if want := humanBytes(disk) + " in tensors"; !strings.Contains(out, want) {
		t.Errorf("inspect does not say %q:\n%.300s", want, out)
	}
}

// TestDiffChainParams: diff names a changed pipeline param (it lives only
// in the manifest's chain list) beside the stage cases it changed.
func TestDiffChainParams(t *testing.T) {
	dir := t.TempDir()
	all, err := manifests.LookupSuite("stage4-steps")
	if err != nil {
		t.Fatal(err)
	}
	r := *all
	for _, c := range all.Cases {
		if c.ID == "qwen3-32b-graph" {
			r.Cases = []manifests.RecipeCase{c}
		}
	}
	var bundles []string
	for i, seed := range []int{2, 3} {
		c := r.Cases[0]
		var p map[string]any
		json.Unmarshal(c.Params, &p)
		p["schedule"].(map[string]any)["seed"] = seed
		c.Params, _ = json.Marshal(p)
		rr := r
		rr.Cases = []manifests.RecipeCase{c}
		b, _ := json.Marshal(rr)
		file := filepath.Join(dir, fmt.Sprintf("r%d.json", i))
		os.WriteFile(file, b, 0o644)
		out := filepath.Join(dir, fmt.Sprint(i))
		if code, _, stderr := run(t, "gen", "--recipe", file, "--out", out, "-q"); code != 0 {
			t.Fatalf("gen: exit %d %s", code, stderr)
		}
		bundles = append(bundles, filepath.Join(out, "stage4-steps"))
	}
	code, out, _ := run(t, "diff", bundles[0], bundles[1])
	if code != exitMismatch || !strings.Contains(out, `chains["qwen3-32b-graph"].params.schedule.seed: 2 -> 3`) {
		t.Errorf("diff: exit %d\n%s", code, out)
	}
	if code, out, _ := run(t, "diff", bundles[0], bundles[0]); code != 0 || strings.Contains(out, "chains") {
		t.Errorf("diff of a bundle with itself: exit %d\n%s", code, out)
	}
}
