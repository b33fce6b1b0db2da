package main

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/goldset/goldset/internal/testenv"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/goldset/goldset/manifests"
	"github.com/goldset/goldset/npy"
)

// run calls Main and returns the exit code, stdout and stderr.
func run(t testing.TB, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// small builds two small stage1 cases into dir and returns the bundle path.
func small(t testing.TB, dir string) string {
	t.Helper()
	code, _, stderr := run(t, "gen", "stage1-basic", "--out", dir, "--case", "mm-odd-7x129x781-fp16", "--case", "sm-781-bf16", "-q")
	if code != 0 {
		t.Fatalf("gen: exit %d: %s", code, stderr)
	}
	return filepath.Join(dir, "stage1-basic")
}

// smallCase builds small's bundle into dir and returns it with its case id.
func smallCase(t testing.TB, dir, id string) (string, *manifests.Case) {
	t.Helper()
	b := small(t, dir)
	m, err := manifests.ReadManifest(b)
	if err != nil {
		t.Fatal(err)
	}
	return b, m.Case(id)
}

func TestHelpHasExamples(t *testing.T) {
	for _, cmd := range []string{"gen", "verify", "inspect", "compare", "diff", "list", "merge", "negatives", "tokenize", "longbench build"} {
		code, out, _ := run(t, append(strings.Fields(cmd), "--help")...)
		if code != 0 || !strings.Contains(out, "Examples:") || !strings.Contains(out, "goldset ") {
			t.Errorf("%s --help: exit %d, no examples:\n%s", cmd, code, out)
		}
	}
}

// TestExamplesNameRealCases: every runnable command but completion, help
// and version has examples, and every --case, --chain and stage case id an
// example names is a case of an embedded suite (mm-512-bf16,
// pa-l129-g4-bf16 and step s40 of qwen3-8b-mixed were not: copied, they
// failed with "no such case").
func TestExamplesNameRealCases(t *testing.T) {
	ids := map[string]bool{}
	all, err := manifests.Suites()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range all {
		for _, c := range r.Cases {
			ids[c.ID] = true
		}
	}
	caseRE := regexp.MustCompile(`--(?:case|chain)[ =]([A-Za-z0-9][A-Za-z0-9._-]*)`)
	stageRE := regexp.MustCompile(`\b([a-z0-9-]+)\.s([0-9]+)\.(?:reshape_and_cache|unified_attention|quest)\b`)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		name := c.CommandPath()
		if !c.Runnable() || c.HasSubCommands() || c.Name() == "help" || c.Name() == "version" || strings.Contains(name, "completion") {
			return
		}
		if !strings.Contains(c.Example, "goldset ") {
			t.Errorf("%s has no examples", name)
		}
		for _, m := range caseRE.FindAllStringSubmatch(c.Example, -1) {
			if !ids[m[1]] {
				t.Errorf("%s: example names case %q, which no embedded suite has", name, m[1])
			}
		}
		for _, m := range stageRE.FindAllStringSubmatch(c.Example, -1) {
			if !ids[m[1]] {
				t.Errorf("%s: example names stage %q of unknown chain %q", name, m[0], m[1])
			}
		}
	}
	walk(newRootCmd(&streams{}))
	// Step numbers: the stage ids a public chain has.
	dir := t.TempDir()
	if code, _, stderr := run(t, "gen", "stage4-steps", "--case", "qwen3-8b-mixed", "--out", dir, "-q"); code != 0 {
		t.Fatalf("gen: %d %s", code, stderr)
	}
	m, err := manifests.ReadManifest(filepath.Join(dir, "stage4-steps"))
	if err != nil {
		t.Fatal(err)
	}
	c, _, _ := newRootCmd(&streams{}).Find([]string{"compare"})
	for _, s := range stageRE.FindAllString(c.Example, -1) {
		if m.Case(s) == nil {
			t.Errorf("compare's example names stage case %s, which the built chain does not have", s)
		}
	}
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	b := small(t, dir)
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"gen", "no-such-suite", "--out", dir}, exitUsage, "unknown suite"},
		{[]string{"gen", "--bogus"}, exitUsage, "unknown flag"},
		{[]string{"gen", "stage1-basic", "--shard", "5/4"}, exitUsage, "--shard"},
		{[]string{"verify"}, exitUsage, "accepts 1 arg"},
		{[]string{"verify", b}, exitOK, ""},
		{[]string{"verify", filepath.Join(dir, "nothing")}, exitError, "no such file"},
		{[]string{"inspect", b, "--case", "nope"}, exitUsage, "no case"},
		{[]string{"compare", b, "--case", "nope", "--output", "c=x.npy"}, exitUsage, "no case"},
		{[]string{"compare", b, "--case", "mm-odd-7x129x781-fp16", "--output", "zz=x.npy"}, exitUsage, "no golden output"},
		{[]string{"compare", b, "--case", "mm-odd-7x129x781-fp16", "--output", "c"}, exitUsage, "NAME=FILE"},
		{[]string{"diff", b, b}, exitOK, "identical"},
	} {
		code, out, errs := run(t, tc.args...)
		if code != tc.code || !strings.Contains(out+errs, tc.msg) {
			t.Errorf("goldset %v: exit %d (want %d), output %q, want it to mention %q", tc.args, code, tc.code, out+errs, tc.msg)
		}
	}
}

func TestCompareFlow(t *testing.T) {
	dir := t.TempDir()
	b, c := smallCase(t, dir, "mm-odd-7x129x781-fp16")
	golden := filepath.Join(b, c.Tensor("c").Path)
	// The golden itself passes, as JSON too.
	code, out, _ := run(t, "compare", b, "--case", c.ID, "--output", "c="+golden, "--json")
	var res compareResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Status != "PASS" {
		t.Fatalf("golden vs itself: exit %d %s", code, out)
	}
	// Zeros fail with exit 3 and name the binding rule.
	zeros := filepath.Join(dir, "zeros.npy")
	npy.WriteFile(zeros, npy.Header{Descr: npy.Float32, Shape: []int64{7, 781}}, make([]byte, 7*781*4))
	code, out, _ = run(t, "compare", b, "--case", c.ID, "--output", "c="+zeros)
	if code != exitMismatch || !strings.Contains(out, "FAIL") || !strings.Contains(out, "elementwise") {
		t.Errorf("zeros: exit %d\n%s", code, out)
	}
	// Wrong shape is a failure (3), a file that is not .npy an error (1).
	wrong := filepath.Join(dir, "wrong.npy")
	npy.WriteFile(wrong, npy.Header{Descr: npy.Float32, Shape: []int64{781, 7}}, make([]byte, 7*781*4))
	if code, out, _ := run(t, "compare", b, "--case", c.ID, "--output", "c="+wrong); code != exitMismatch || !strings.Contains(out, "shape") {
		t.Errorf("wrong shape: exit %d\n%s", code, out)
	}
	bad := filepath.Join(dir, "bad.npy")
	os.WriteFile(bad, []byte("not numpy"), 0o644)
	if code, _, errs := run(t, "compare", b, "--case", c.ID, "--output", "c="+bad); code != exitError || !strings.Contains(errs, "bad.npy") {
		t.Errorf("not npy: exit %d %s", code, errs)
	}
	// NaN where the golden is finite fails.
	nan := filepath.Join(dir, "nan.npy")
	h, data, _ := npy.ReadFile(golden)
	data[0], data[1] = 0x00, 0x7e // fp16 NaN in the first element
	npy.WriteFile(nan, h, data)
	if code, out, _ := run(t, "compare", b, "--case", c.ID, "--output", "c="+nan); code != exitMismatch || !strings.Contains(out, "NaN") {
		t.Errorf("NaN: exit %d\n%s", code, out)
	}
}

func TestVerifyTamperAndRegenerate(t *testing.T) {
	dir := t.TempDir()
	b := small(t, dir)
	if code, out, errs := run(t, "verify", "--regenerate", b); code != 0 {
		t.Fatalf("verify --regenerate: %d %s %s", code, out, errs)
	}
	m, _ := manifests.ReadManifest(b)
	p := filepath.Join(b, m.Cases[0].Tensors[1].Path)
	data, _ := os.ReadFile(p)
	data[len(data)-1] ^= 1
	os.WriteFile(p, data, 0o644)
	code, out, _ := run(t, "verify", b, "--json")
	var res verifyResult
	if code != exitMismatch || json.Unmarshal([]byte(out), &res) != nil || len(res.Problems) != 1 || res.Problems[0].Path != m.Cases[0].Tensors[1].Path {
		t.Errorf("tampered: exit %d %s", code, out)
	}
}

func TestGenFromManifestAndDiff(t *testing.T) {
	dir := t.TempDir()
	b := small(t, dir)
	rebuilt := filepath.Join(dir, "rebuilt")
	// --dry-run prints the plan and writes nothing (it used to rebuild).
	code, out, errs := run(t, "gen", "--from", filepath.Join(b, "manifest.json"), "--out", rebuilt, "--dry-run")
	if _, err := os.Stat(rebuilt); code != 0 || err == nil || !strings.Contains(out, "will write "+filepath.Join(rebuilt, "stage1-basic")) {
		t.Fatalf("gen --from --dry-run: exit %d, wrote %v: %s %s", code, err == nil, out, errs)
	}
	// --json: one object (the "reproduced" line used to follow the
	// summary on stdout), ok covering the hash check.
	code, out, errs = run(t, "gen", "--from", filepath.Join(b, "manifest.json"), "--out", filepath.Join(dir, "rebuilt-json"), "--json")
	var fromRes verifyResult
	if err := json.Unmarshal([]byte(out), &fromRes); err != nil || code != 0 || !fromRes.OK || fromRes.Tensors != 9 {
		t.Errorf("gen --from --json: exit %d, %v: %s %s", code, err, out, errs)
	}
	// --case rebuilds and checks only that case (it failed the others as
	// "case not rebuilt", after writing the subset).
	code, out, errs = run(t, "gen", "--from", filepath.Join(b, "manifest.json"), "--case", "sm-781-bf16", "--out", filepath.Join(dir, "rebuilt-case"), "-q")
	if code != 0 || !strings.Contains(out, "reproduced") {
		t.Errorf("gen --from --case: exit %d %s %s", code, out, errs)
	}
	for _, extra := range [][]string{{"--recipe", filepath.Join(b, "manifest.json")}, {"--split", "public"}, {"--shard", "1/2"}} {
		if code, _, errs := run(t, append([]string{"gen", "--from", filepath.Join(b, "manifest.json"), "--out", rebuilt}, extra...)...); code != exitUsage {
			t.Errorf("gen --from with %v (ignored before): exit %d %s", extra, code, errs)
		}
	}
	code, out, errs = run(t, "gen", "--from", filepath.Join(b, "manifest.json"), "--out", rebuilt, "-q")
	if code != 0 || !strings.Contains(out, "reproduced") {
		t.Fatalf("gen --from: %d %s %s", code, out, errs)
	}
	if code, out, _ := run(t, "diff", b, filepath.Join(rebuilt, "stage1-basic")); code != 0 {
		t.Errorf("diff of a rebuild: %d %s", code, out)
	}
	// A manifest from a newer schema is refused with a clear message.
	data, _ := os.ReadFile(filepath.Join(b, "manifest.json"))
	newer := filepath.Join(dir, "newer.json")
	os.WriteFile(newer, bytes.Replace(data, []byte(`"schema_version": 1`), []byte(`"schema_version": 2`), 1), 0o644)
	if code, _, errs := run(t, "gen", "--from", newer, "--out", rebuilt); code != exitMismatch || !strings.Contains(errs, "newer") {
		t.Errorf("newer schema: %d %s", code, errs)
	}
	// A different build of goldset warns but still checks hashes.
	other := filepath.Join(dir, "other.json")
	os.WriteFile(other, bytes.Replace(data, []byte(`"version": "`), []byte(`"version": "v0.0.1-other `), 1), 0o644)
	if code, _, errs := run(t, "gen", "--from", other, "--out", filepath.Join(dir, "r2"), "-q"); code != 0 || !strings.Contains(errs, "warning") {
		t.Errorf("other tool version: %d %s", code, errs)
	}
}

func TestListAndInspectJSON(t *testing.T) {
	code, out, _ := run(t, "list", "--json")
	var doc listResult
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || !doc.OK || len(doc.Suites) < 4 {
		t.Fatalf("list --json: %d %s", code, out)
	}
	dir := t.TempDir()
	b := small(t, dir)
	code, out, _ = run(t, "inspect", b, "--json")
	if _, err := manifests.ParseManifest("stdout", []byte(out)); code != 0 || err != nil {
		t.Errorf("inspect --json is not a manifest: %v", err)
	}
	code, out, _ = run(t, "inspect", b)
	if code != 0 || !strings.Contains(out, "sm-781-bf16") || !strings.Contains(out, "bfloat16") {
		t.Errorf("inspect: %s", out)
	}
}

func TestNegativesCheck(t *testing.T) {
	dir := t.TempDir()
	b := small(t, dir)
	code, out, errs := run(t, "negatives", b, "--case", "sm-781-bf16", "--out", filepath.Join(dir, "neg"), "--check")
	if code != 0 || !strings.Contains(out, "zeros") || !strings.Contains(out, "fp32_online") {
		t.Fatalf("negatives --check: %d %s %s", code, out, errs)
	}
	zeros := filepath.Join(dir, "neg", "zeros", "y.npy")
	if code, _, _ := run(t, "compare", b, "--case", "sm-781-bf16", "--output", "y="+zeros, "--partial"); code != exitMismatch {
		t.Errorf("compare of the zeros control: exit %d, want 3", code)
	}
}

func TestShardEnv(t *testing.T) {
	t.Setenv("JOB_COMPLETION_INDEX", "1")
	t.Setenv("GOLDSET_SHARDS", "3")
	s, err := parseShard("")
	if err != nil || s.Index != 1 || s.Count != 3 {
		t.Fatalf("k8s env: %+v %v", s, err)
	}
	t.Setenv("JOB_COMPLETION_INDEX", "")
	t.Setenv("SLURM_ARRAY_TASK_ID", "3")
	t.Setenv("SLURM_ARRAY_TASK_MIN", "1")
	s, err = parseShard("")
	if err != nil || s.Index != 2 || s.Count != 3 {
		t.Fatalf("slurm env: %+v %v", s, err)
	}
	if _, err := parseShard("0/3"); err == nil {
		t.Error("0/3 accepted")
	}
}

func TestLongbenchBuildCLI(t *testing.T) {
	tok, data := testenv.Qwen3TokenizerPath(t), testenv.LongBenchSample(t)
	dir := t.TempDir()
	args := func(out string) []string {
		return []string{"longbench", "build", "--data", data, "--tokenizer", tok, "--subsets", "qasper,multifieldqa_en,gov_report,hotpotqa",
			"--n", "4", "--target-mean", "3000", "--truncate-at", "3000", "--no-thinking", "--seed", "5", "--out", out, "-q", "--json", "--model", "Qwen/Qwen3-8B"}
	}
	code, out, errs := run(t, args(filepath.Join(dir, "a"))...)
	if code != 0 {
		t.Fatalf("longbench build: %d %s %s", code, out, errs)
	}
	var res struct {
		Lengths []int `json:"lengths"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Lengths) != 4 {
		t.Fatalf("result %s: %v", out, err)
	}
	for _, l := range res.Lengths {
		// Truncated to 3000 tokens, plus the 12-token no-thinking chat template.
		if l > 3000+12 {
			t.Errorf("prompt of %d tokens exceeds the truncation budget", l)
		}
	}
	if code, _, errs := run(t, args(filepath.Join(dir, "b"))...); code != 0 {
		t.Fatal(errs)
	}
	for _, f := range []string{"serve.jsonl", "batch.chat.jsonl", "sglang.jsonl", "sharegpt.json", "prompt_ids.jsonl", "histogram.png", "prompt_ids.npy", "prompt_lens.npy", "manifest.json"} {
		a, _ := os.ReadFile(filepath.Join(dir, "a", f))
		b, _ := os.ReadFile(filepath.Join(dir, "b", f))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s differs between two runs with the same seed", f)
		}
	}
	// Asking for more prompts than records is a clear error, no output.
	code, _, errs = run(t, "longbench", "build", "--data", data, "--tokenizer", tok, "--subsets", "qasper", "--n", "50", "--out", filepath.Join(dir, "c"), "-q", "--model", "m")
	if code == 0 || !strings.Contains(errs, "not enough records") {
		t.Errorf("n > records: exit %d %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "c")); !os.IsNotExist(err) {
		t.Errorf("partial output left at %s", filepath.Join(dir, "c"))
	}
	// tokenize counts the ids of a text, no special tokens added.
	txt := filepath.Join(dir, "t.txt")
	os.WriteFile(txt, []byte("Hello, 世界"), 0o644)
	code, out, _ = run(t, "tokenize", "--tokenizer", tok, "--ids", txt)
	if code != 0 || strings.TrimSpace(out) != "[9707,11,220,99489]" {
		t.Errorf("tokenize --ids: %d %q", code, out)
	}
}

func TestHiddenSplitCLI(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	os.WriteFile(secret, []byte("s3cret\n"), 0o600)
	// Hidden cases need the secret.
	if code, _, errs := run(t, "gen", "stage1-basic", "--split", "hidden", "--out", dir, "-q"); code != exitUsage || !strings.Contains(errs, "secret") {
		t.Fatalf("hidden without secret: %d %s", code, errs)
	}
	code, _, errs := run(t, "gen", "stage1-basic", "--split", "hidden", "--out", dir, "-q", "--secret-file", secret)
	if code != 0 {
		t.Fatalf("hidden build: %d %s", code, errs)
	}
	b := filepath.Join(dir, "stage1-basic")
	m, _ := manifests.ReadManifest(b)
	if m.HiddenCommitment == "" || len(m.Cases) == 0 {
		t.Fatalf("hidden bundle: commitment %q, %d cases", m.HiddenCommitment, len(m.Cases))
	}
	if code, _, _ := run(t, "verify", "--regenerate", b, "--secret-file", secret); code != 0 {
		t.Errorf("verify --regenerate with the secret: %d", code)
	}
	wrong := filepath.Join(dir, "wrong")
	os.WriteFile(wrong, []byte("other"), 0o600)
	if code, _, errs := run(t, "verify", "--regenerate", b, "--secret-file", wrong); code != exitError || !strings.Contains(errs, "commitment") {
		t.Errorf("wrong secret: %d %s", code, errs)
	}
}

func TestGenRecipeFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "mine.json")
	os.WriteFile(good, []byte(`{"name": "mine", "version": "0.1.0", "spec_version": 1, "seed": 3,
 "cases": [{"id": "sm", "op": "softmax", "split": "public", "params": {"m": 4, "n": 300, "dtype": "float16"}}]}`), 0o644)
	if code, _, errs := run(t, "gen", "--recipe", good, "--out", dir, "-q"); code != 0 {
		t.Fatalf("gen --recipe: %d %s", code, errs)
	}
	if code, _, _ := run(t, "verify", filepath.Join(dir, "mine")); code != 0 {
		t.Errorf("bundle from a recipe file does not verify")
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"name": "bad", "version": "1", "spec_version": 1,
 "cases": [{"id": "sm", "op": "softmax", "split": "public", "params": {"m": 4, "n": 300, "dtype": "int8"}}]}`), 0o644)
	code, _, errs := run(t, "gen", "--recipe", bad, "--out", dir)
	if code != exitError || !strings.Contains(errs, "bad.json") || !strings.Contains(errs, "int8") {
		t.Errorf("malformed recipe: %d %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad")); !os.IsNotExist(err) {
		t.Errorf("a bundle was written for a malformed recipe")
	}
}
