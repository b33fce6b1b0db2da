package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExportImportCLI(t *testing.T) {
	dir := t.TempDir()
	b := small(t, dir)
	mm := "mm-odd-7x129x781-fp16"
	for _, cmd := range []string{"export", "import"} {
		if code, out, _ := run(t, cmd, "--help"); code != 0 || !strings.Contains(out, "Examples:") {
			t.Errorf("%s --help: exit %d:\n%s", cmd, code, out)
		}
	}
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"export", b, "--format", "onnx", "--out", filepath.Join(dir, "x")}, exitUsage},
		{[]string{"export", b, "--format", "msopst"}, exitUsage},
		{[]string{"export", b, "--format", "msopst", "--out", filepath.Join(dir, "x"), "--case", "nope"}, exitUsage},
		{[]string{"export", b, "--format", "msopst", "--out", dir}, exitError}, // not empty
		{[]string{"export", b, "--format", "msopst", "--out", filepath.Join(dir, "ms"), "-q"}, exitOK},
		{[]string{"export", b, "--format", "safetensors", "--out", filepath.Join(dir, "st"), "-q"}, exitOK},
		{[]string{"import", filepath.Join(dir, "ms"), "--bundle", b}, exitOK},
		{[]string{"import", dir}, exitError},
		{[]string{"compare", b, "--case", mm, "--output", "c=" + filepath.Join(dir, "ms", "MatMul", "data", mm, "c.bin")}, exitOK},
		{[]string{"compare", b, "--case", mm, "--output", "c=" + filepath.Join(dir, "st", mm+".safetensors")}, exitOK},
		{[]string{"compare", b, "--case", mm, "--output", "c=" + filepath.Join(dir, "ms", "MatMul", "data", mm, "a.bin")}, exitMismatch},
	} {
		if code, out, errs := run(t, tc.args...); code != tc.code {
			t.Errorf("%v: exit %d, want %d\n%s%s", tc.args, code, tc.code, out, errs)
		}
	}
	// One flipped byte: import fails with exit 3 and names the file.
	p := filepath.Join(dir, "st", mm+".safetensors")
	data, _ := os.ReadFile(p)
	data[len(data)-1] ^= 0x40
	os.WriteFile(p, data, 0o644)
	code, out, _ := run(t, "import", filepath.Join(dir, "st"), "--json")
	var res struct {
		OK       bool `json:"ok"`
		Problems []struct {
			Path, What string
		} `json:"problems"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != exitMismatch || res.OK || len(res.Problems) == 0 || res.Problems[0].Path != mm+".safetensors" {
		t.Fatalf("tampered import: exit %d, %v:\n%s", code, err, out)
	}
	// A bundle file that fails its sha256 stops an export with exit 3.
	mp := filepath.Join(b, mm, "c.npy")
	g, _ := os.ReadFile(mp)
	g[len(g)-1] ^= 1
	os.WriteFile(mp, g, 0o644)
	if code, _, errs := run(t, "export", b, "--format", "safetensors", "--out", filepath.Join(dir, "bad"), "-q"); code != exitMismatch {
		t.Fatalf("export of a tampered bundle: exit %d: %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad")); !os.IsNotExist(err) {
		t.Fatal("a failed export left its directory")
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, ".bad.goldset-export-tmp-*")); len(tmp) > 0 {
		t.Fatalf("a failed export left %v", tmp)
	}
}
