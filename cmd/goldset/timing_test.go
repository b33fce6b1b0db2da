package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goldset/goldset/judge"
	"github.com/goldset/goldset/manifests"
)

// TestCompareTiming: inspect --json shows each case's work; compare
// --timing passes an honest time, fails one below the H200 floor with exit
// 3 and a message naming the floor, and refuses a bad file with exit 2.
func TestCompareTiming(t *testing.T) {
	dir := t.TempDir()
	b := small(t, dir)
	code, out, _ := run(t, "inspect", b, "--json")
	var m manifests.Manifest
	if code != 0 || json.Unmarshal([]byte(out), &m) != nil {
		t.Fatalf("inspect: exit %d", code)
	}
	for _, c := range m.Cases {
		if c.Work == nil || c.Work.BytesRead == 0 {
			t.Fatalf("inspect --json: case %s has no work", c.ID)
		}
	}
	w := m.Case("mm-odd-7x129x781-fp16").Work
	// 7x129 + 129x781 fp16 in, 7x781 out; 2*7*129*781 flops.
	if w.BytesRead != (7*129+129*781)*2 || w.BytesWritten != 7*781*2 || w.Flops != 2*7*129*781 {
		t.Errorf("mm work %+v", *w)
	}
	h200, _ := judge.LookupProfile("h200")
	floorMS := h200.Floor(w.BytesRead+w.BytesWritten, w.Flops, w.FlopDType) * 1e3
	write := func(ms float64) string {
		f := filepath.Join(dir, fmt.Sprintf("t%g.json", ms))
		os.WriteFile(f, []byte(fmt.Sprintf(`{"schema": "goldset-timing/1", "device": "test", "cases": [{"case": "mm-odd-7x129x781-fp16", "times_ms": [%g, %g, %g], "warmup": 2, "l2_flushed": true}]}`, ms, ms*1.1, ms*0.95)), 0o644)
		return f
	}
	code, out, _ = run(t, "compare", b, "--timing", write(10*floorMS), "--profile", "h200", "--json")
	var res timingResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || !res.OK || res.Cases[0].Profiles[0].PeakFraction <= 0 {
		t.Errorf("honest time: exit %d\n%s", code, out)
	}
	code, out, _ = run(t, "compare", b, "--timing", write(floorMS/2), "--profile", "h200")
	if code != exitMismatch || !strings.Contains(out, "FAIL") || !strings.Contains(out, "faster than the h200 floor") {
		t.Errorf("fake time: exit %d\n%s", code, out)
	}
	// Outputs and times at once: one JSON object, ok covering both (it
	// printed two objects, and a fast time after a passing output).
	gold := filepath.Join(b, m.Case("mm-odd-7x129x781-fp16").Tensor("c").Path)
	for _, tc := range []struct {
		ms   float64
		code int
	}{{10 * floorMS, 0}, {floorMS / 2, exitMismatch}} {
		code, out, _ = run(t, "compare", b, "--case", "mm-odd-7x129x781-fp16", "--output", "c="+gold, "--timing", write(tc.ms), "--profile", "h200", "--json")
		var both compareResult
		if err := json.Unmarshal([]byte(out), &both); err != nil || code != tc.code || both.Status != "PASS" || both.Timing == nil || both.OK != (tc.code == 0) || both.Timing.OK != both.OK {
			t.Errorf("outputs and timing %g ms: exit %d, %v\n%s", tc.ms, code, err, out)
		}
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"schema": "goldset-timing/1", "cases": [{"case": "nope", "times_ms": [1]}]}`), 0o644)
	if code, _, stderr := run(t, "compare", b, "--timing", bad); code != exitUsage || !strings.Contains(stderr, "nope") {
		t.Errorf("unknown case: exit %d %s", code, stderr)
	}
	if code, _, _ := run(t, "compare", b); code != exitUsage {
		t.Errorf("no --case/--timing: exit %d", code)
	}
	// --profile without --timing was ignored, even an unknown one.
	if code, _, stderr := run(t, "compare", b, "--case", "mm-odd-7x129x781-fp16", "--output", "c="+gold, "--profile", "nope"); code != exitUsage || !strings.Contains(stderr, "--timing") {
		t.Errorf("--profile without --timing: exit %d %s", code, stderr)
	}
}

// TestListOpsMargins: list --ops shows every family's margin and reports
// the weak ones; --json carries them.
func TestListOpsMargins(t *testing.T) {
	code, out, _ := run(t, "list", "--ops")
	if code != 0 || !strings.Contains(out, "Discrimination margins") || !strings.Contains(out, "weak (margin below 2x)") || !strings.Contains(out, "half_accumulate") {
		t.Errorf("list --ops: exit %d\n%s", code, out)
	}
	code, out, _ = run(t, "list", "--ops", "--json")
	var res opsResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || len(res.Margins) == 0 {
		t.Fatalf("list --ops --json: exit %d", code)
	}
	for _, m := range res.Margins {
		if !m.Exact && m.Control == "" {
			t.Errorf("family %s/%s has no nearest wrong algorithm", m.Family, m.DType)
		}
	}
	// A suite name was ignored.
	if code, _, _ := run(t, "list", "--ops", "stage4-mixed"); code != exitUsage {
		t.Errorf("list --ops SUITE: exit %d", code)
	}
}

// TestGenVariants: --variants builds a verifiable variants bundle and
// refuses to run without a secret or a case.
func TestGenVariants(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	os.WriteFile(secret, []byte("s\n"), 0o644)
	code, _, stderr := run(t, "gen", "stage1-basic", "--case", "mm-odd-7x129x781-fp16", "--variants", "2", "--secret-file", secret, "--out", dir, "-q")
	if code != 0 {
		t.Fatalf("gen --variants: exit %d %s", code, stderr)
	}
	vdir := filepath.Join(dir, "stage1-basic.variants.mm-odd-7x129x781-fp16")
	if code, _, stderr := run(t, "verify", vdir); code != 0 {
		t.Errorf("verify: exit %d %s", code, stderr)
	}
	// --regenerate rebuilds the variants as variants (it used to fail them
	// as hidden recipe cases); gen --from and compare say what a variants
	// bundle is instead of failing on it.
	if code, out, stderr := run(t, "verify", "--regenerate", "--secret-file", secret, vdir); code != 0 {
		t.Errorf("verify --regenerate: exit %d %s%s", code, out, stderr)
	}
	if code, _, stderr := run(t, "gen", "--from", filepath.Join(vdir, "manifest.json"), "--secret-file", secret, "--out", filepath.Join(dir, "rebuilt")); code != exitError || !strings.Contains(stderr, "--variants 2") {
		t.Errorf("gen --from a variants manifest: exit %d %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "rebuilt")); err == nil {
		t.Error("gen --from a variants manifest wrote a bundle")
	}
	if code, _, stderr := run(t, "compare", vdir, "--case", "mm-odd-7x129x781-fp16.v0", "--output", "c="+secret); code != exitUsage || !strings.Contains(stderr, "judge_variants") {
		t.Errorf("compare a variant: exit %d %s", code, stderr)
	}
	// --dry-run names the bundle and writes nothing (it used to build it).
	dry := filepath.Join(dir, "dry")
	code, out, _ := run(t, "gen", "stage1-basic", "--case", "sm-781-fp16", "--variants", "2", "--secret-file", secret, "--out", dry, "--dry-run")
	if _, err := os.Stat(dry); code != 0 || err == nil || !strings.Contains(out, "stage1-basic.variants.sm-781-fp16") {
		t.Errorf("gen --variants --dry-run: exit %d, wrote %v: %s", code, err == nil, out)
	}
	t.Setenv("GOLDSET_HIDDEN_SECRET", "")
	for _, args := range [][]string{
		{"gen", "stage1-basic", "--case", "mm-odd-7x129x781-fp16", "--variants", "2", "--out", dir},
		{"gen", "stage1-basic", "--variants", "2", "--secret-file", secret, "--out", dir},
		{"gen", "stage1-basic", "--case", "mm-odd-7x129x781-fp16", "--variants", "-1", "--secret-file", secret, "--out", dir},
		{"gen", "stage4-steps", "--case", "qwen3-32b-graph", "--variants", "2", "--secret-file", secret, "--out", dir},
		{"gen", "stage1-basic", "--case", "sm-781-fp16", "--variants", "2", "--secret-file", secret, "--out", dir, "--shard", "1/2"},
		{"gen", "stage1-basic", "--case", "sm-781-fp16", "--variants", "2", "--secret-file", secret, "--out", dir, "--compress", "zstd"},
	} {
		if code, _, _ := run(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
}
