package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goldset/goldset/manifests"
)

// TestDSACommands runs gen, verify, inspect, gen --from + diff, negatives
// --check and compare on the small stage5-dsa cases (every DSA op, both
// indexer layouts).
func TestDSACommands(t *testing.T) {
	dir := t.TempDir()
	cases := []string{"ic-fp32", "bh-shared", "ix-small", "ix-small-ragged", "sa-small"}
	args := []string{"gen", "stage5-dsa", "--out", dir, "-q"}
	for _, c := range cases {
		args = append(args, "--case", c)
	}
	if code, _, errs := run(t, args...); code != 0 {
		t.Fatalf("gen: %d %s", code, errs)
	}
	b := filepath.Join(dir, "stage5-dsa")
	if code, out, errs := run(t, "verify", b); code != 0 || !strings.Contains(out, "OK") {
		t.Fatalf("verify: %d %s %s", code, out, errs)
	}
	code, out, _ := run(t, "inspect", b, "--json")
	m, err := manifests.ParseManifest("stdout", []byte(out))
	if code != 0 || err != nil || len(m.Cases) != len(cases) {
		t.Fatalf("inspect --json: %d %v", code, err)
	}
	if code, out, _ := run(t, "inspect", b); code != 0 || !strings.Contains(out, "topk_physical") || !strings.Contains(out, "float8_e4m3fn") {
		t.Errorf("inspect: %s", out)
	}
	rebuilt := filepath.Join(dir, "rebuilt")
	if code, out, errs := run(t, "gen", "--from", filepath.Join(b, "manifest.json"), "--out", rebuilt, "-q"); code != 0 {
		t.Fatalf("gen --from: %d %s %s", code, out, errs)
	}
	if code, out, _ := run(t, "diff", b, filepath.Join(rebuilt, "stage5-dsa")); code != 0 {
		t.Errorf("diff of a rebuild: %d %s", code, out)
	}
	for _, c := range cases {
		neg := filepath.Join(dir, "neg-"+c)
		code, out, errs := run(t, "negatives", b, "--case", c, "--out", neg, "--check")
		if code != 0 || !strings.Contains(out, "must FAIL -> FAIL") || !strings.Contains(out, "must PASS -> PASS") {
			t.Errorf("negatives --check %s: %d %s %s", c, code, out, errs)
		}
	}
	// compare: the golden itself passes; a negative fails with exit 3.
	gold := func(c, n string) string { return n + "=" + filepath.Join(b, c, n+".npy") }
	if code, out, errs := run(t, "compare", b, "--case", "ix-small", "--output", gold("ix-small", "logits"), "--output", gold("ix-small", "topk_logical"),
		"--output", gold("ix-small", "topk_physical"), "--output", gold("ix-small", "block_header")); code != 0 {
		t.Errorf("compare of the golden: %d %s %s", code, out, errs)
	}
	off := filepath.Join(dir, "neg-ix-small", "topk_physical_off_by_one", "topk_physical.npy")
	if _, err := os.Stat(off); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := run(t, "compare", b, "--case", "ix-small", "--output", "topk_physical="+off, "--partial"); code != exitMismatch {
		t.Errorf("compare of off_by_one: exit %d, want %d", code, exitMismatch)
	}
	canary := filepath.Join(dir, "neg-sa-small", "read_canary", "out.npy")
	if code, _, _ := run(t, "compare", b, "--case", "sa-small", "--output", "out="+canary, "--partial"); code != exitMismatch {
		t.Errorf("compare of read_canary: exit %d, want %d", code, exitMismatch)
	}
}
