package serving

import (
	"bytes"
	"flag"
	"github.com/goldset/goldset/serving/servingtest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

func mustWorkload(t testing.TB, b []byte) *Workload {
	t.Helper()
	w, err := ParseWorkload(b)
	if err != nil {
		t.Fatal(err)
	}
	w.Dir = "synthetic"
	return w
}

func mustResult(t testing.TB, b []byte) *Result {
	t.Helper()
	r, err := ParseResult(b, -1)
	if err != nil {
		t.Fatal(err)
	}
	r.Path = "synthetic.json"
	return r
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// golden compares got with testdata/name, rewriting it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the generated output (run with -update after checking the change)", path)
	}
}

func verdictText(v *Verdict) string {
	var b strings.Builder
	for _, f := range v.Failures {
		b.WriteString(f.String() + "\n")
	}
	for _, c := range v.Causes {
		b.WriteString("cause: " + c + "\n")
	}
	for _, n := range v.Notes {
		b.WriteString("note: " + n + "\n")
	}
	return b.String()
}

func consistentRun(w *Workload) *servingtest.VLLMRun {
	var in, out []int
	for _, p := range w.Prompts {
		in = append(in, p.PromptTokens)
		out = append(out, p.MaxNewTokens)
	}
	return servingtest.ConsistentRun(in, out)
}
