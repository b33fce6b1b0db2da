package main

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/goldset/goldset/serving"
	"github.com/goldset/goldset/serving/servingtest"
)

// servingFixture writes a synthetic 100-prompt workload and returns its
// directory and the prompts' lengths.
func servingFixture(t *testing.T) (dir string, in, out []int) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "lb100")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b := servingtest.SynthManifest(100, 1)
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := serving.ParseWorkload(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range w.Prompts {
		in = append(in, p.PromptTokens)
		out = append(out, p.MaxNewTokens)
	}
	return dir, in, out
}

func writeRun(t *testing.T, dir, name string, r *servingtest.VLLMRun, scale float64) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, r.JSON(scale), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestServingCheckCLI runs issue 16's must-show cases through the command
// line; -v prints each verdict as the closing note quotes it.
func TestServingCheckCLI(t *testing.T) {
	wl, in, out := servingFixture(t)
	dir := t.TempDir()
	oversampled := &servingtest.VLLMRun{NumPrompts: 1000}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 1000 {
		k := rng.IntN(len(in))
		oversampled.In = append(oversampled.In, in[k])
		oversampled.Out = append(oversampled.Out, out[k])
		oversampled.Errors = append(oversampled.Errors, "")
	}
	for _, tc := range []struct {
		name   string
		mutate func(r *servingtest.VLLMRun)
		code   int
		want   []string
	}{
		{"consistent", func(r *servingtest.VLLMRun) {}, exitOK, []string{"OK ", "ran workload", "checked: input_lens[i] = prompt_tokens[i] in order"}},
		{"one-failed", func(r *servingtest.VLLMRun) { r.Errors[17] = "Bad Request" }, exitMismatch,
			[]string{"failed: got 1, want 0", `errors[17]: got "Bad Request", want "" (success)`}},
		{"oversampled", func(r *servingtest.VLLMRun) { *r = *oversampled }, exitMismatch,
			[]string{"completed+failed: got 1000, want 100", "num_prompts: got 1000, want 100", "--num-prompts 100 --no-oversample"}},
		{"shuffled", func(r *servingtest.VLLMRun) {
			rand.New(rand.NewPCG(5, 6)).Shuffle(len(r.In), func(i, j int) {
				r.In[i], r.In[j] = r.In[j], r.In[i]
				r.Out[i], r.Out[j] = r.Out[j], r.Out[i]
			})
		}, exitMismatch, []string{"input_lens[0]: got", "the run was shuffled"}},
		{"out256", func(r *servingtest.VLLMRun) {
			for i := range r.Out {
				r.Out[i] = 256
			}
		}, exitMismatch, []string{"output_lens[0]: got 256, want 128 (max_new_tokens)", "--custom-output-len -1"}},
		{"templated-twice", func(r *servingtest.VLLMRun) {
			for i := range r.In {
				r.In[i] += 8
			}
		}, exitMismatch, []string{"input_lens[0]: got " + strconv.Itoa(in[0]+8) + ", want " + strconv.Itoa(in[0]) + " (prompt_tokens)", "every input is 8 tokens longer"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := servingtest.ConsistentRun(in, out)
			tc.mutate(r)
			p := writeRun(t, dir, tc.name+".json", r, 1)
			code, stdout, stderr := run(t, "serving", "check", p, "--workload", wl)
			t.Logf("$ goldset serving check %s.json --workload lb100  # exit %d\n%s", tc.name, code, stdout)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s%s", code, tc.code, stdout, stderr)
			}
			for _, s := range tc.want {
				if !strings.Contains(stdout, s) {
					t.Errorf("missing %q", s)
				}
			}
		})
	}
	// --shuffled accepts the shuffled run and says how it compared.
	r := servingtest.ConsistentRun(in, out)
	r.In[0], r.In[5] = r.In[5], r.In[0]
	r.Out[0], r.Out[5] = r.Out[5], r.Out[0]
	p := writeRun(t, dir, "shuffled2.json", r, 1)
	code, stdout, _ := run(t, "serving", "check", p, "--workload", wl, "--shuffled", "--json")
	var v serving.Verdict
	if err := json.Unmarshal([]byte(stdout), &v); err != nil || code != exitOK || !v.OK || !strings.Contains(strings.Join(v.Notes, "\n"), "as a multiset") {
		t.Errorf("--shuffled --json: exit %d %v\n%s", code, err, stdout)
	}
	// Unreadable: exit 1; usage: exit 2.
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"foo": 1}`), 0o644)
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"serving", "check", bad, "--workload", wl}, exitError, "not a vLLM"},
		{[]string{"serving", "check", filepath.Join(dir, "none.json"), "--workload", wl}, exitError, "no such file"},
		{[]string{"serving", "check", p, "--workload", dir}, exitError, "manifest.json"},
		{[]string{"serving", "check", p}, exitUsage, "required flag"},
		{[]string{"serving", "report", p, "--baseline", p}, exitUsage, "--baseline needs --workload"},
		{[]string{"serving", "size", "--model", "qwen3-8b"}, exitUsage, "--kv-budget"},
		{[]string{"serving", "size", "--model", "qwen3-8b", "--kv-budget", "lots"}, exitUsage, "bad size"},
		{[]string{"serving", "size", "--model", "nope", "--kv-budget", "1GiB"}, exitError, "built-in"},
	} {
		code, _, stderr := run(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d %q", tc.args, code, stderr, tc.code, tc.msg)
		}
	}
}

func TestServingReportCLI(t *testing.T) {
	wl, in, out := servingFixture(t)
	dir := t.TempDir()
	dense := writeRun(t, dir, "dense.json", servingtest.ConsistentRun(in, out), 1)
	sparse := writeRun(t, dir, "sparse.json", servingtest.ConsistentRun(in, out), 0.8)
	svg := filepath.Join(dir, "latency.svg")
	code, stdout, stderr := run(t, "serving", "report", sparse, "--baseline", dense, "--workload", wl, "--svg", svg)
	t.Logf("$ goldset serving report sparse.json --baseline dense.json --workload lb100 --svg latency.svg  # exit %d\n%s", code, stdout)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, s := range []string{"speed-up", "TTFT p99 ms", "1.250x", "check", "OK"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("missing %q", s)
		}
	}
	if b, err := os.ReadFile(svg); err != nil || !strings.Contains(string(b), "<polyline") {
		t.Errorf("svg: %v", err)
	}
	// A run that fails check is refused: exit 3, no speed-up.
	bad := servingtest.ConsistentRun(in, out)
	for i := range bad.Out {
		bad.Out[i] = 256
	}
	badp := writeRun(t, dir, "sparse-256.json", bad, 0.8)
	code, stdout, _ = run(t, "serving", "report", badp, "--baseline", dense, "--workload", wl)
	t.Logf("$ goldset serving report sparse-256.json --baseline dense.json --workload lb100  # exit %d\n%s", code, stdout)
	if code != exitMismatch || !strings.Contains(stdout, "not ranked: ") || strings.Contains(stdout, "1.250x") {
		t.Errorf("a failing run was ranked: exit %d\n%s", code, stdout)
	}
	// Offline and serving are listed apart without --baseline.
	off := filepath.Join(dir, "offline.json")
	total := 0
	for i := range in {
		total += in[i] + out[i]
	}
	os.WriteFile(off, []byte(`{"elapsed_time": 50, "num_requests": 100, "total_num_tokens": `+strconv.Itoa(total)+`, "requests_per_second": 2, "tokens_per_second": 20}`), 0o644)
	code, stdout, _ = run(t, "serving", "report", dense, off, "--json")
	var rep struct {
		Runs []serving.Summary `json:"runs"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != exitOK || len(rep.Runs) != 2 || rep.Runs[1].Kind != serving.Offline {
		t.Errorf("--json: exit %d %v\n%s", code, err, stdout)
	}
	code, stdout, _ = run(t, "serving", "report", off, "--baseline", dense, "--workload", wl)
	t.Logf("$ goldset serving report offline.json --baseline dense.json --workload lb100  # exit %d\n%s", code, stdout)
	if code != exitMismatch || !strings.Contains(stdout, "offline result: never ranked against a serving one") || strings.Contains(stdout, "offline.json: did not pass") {
		t.Errorf("offline against serving: exit %d\n%s", code, stdout)
	}
}

func TestServingSizeCLI(t *testing.T) {
	wl, _, _ := servingFixture(t)
	code, stdout, stderr := run(t, "serving", "size", "--workload", wl, "--model", "qwen3-8b", "--kv-budget", "60GiB")
	t.Logf("$ goldset serving size --workload lb100 --model qwen3-8b --kv-budget 60GiB  # exit %d\n%s", code, stdout)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, s := range []string{"KV per token 144.000 KiB (147456 B)", "at context_len 40960: 5.625 GiB", "concurrency at context_len 40960: 10 sequences"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("missing %q", s)
		}
	}
	code, stdout, _ = run(t, "serving", "size", "--workload", wl, "--model", "qwen3-8b", "--kv-budget", "60GiB", "--json", "--per-prompt")
	var s serving.Sizing
	if err := json.Unmarshal([]byte(stdout), &s); err != nil || code != exitOK || len(s.Prompts) != 100 || s.BytesPerToken != 147456 {
		t.Errorf("--json: exit %d %v", code, err)
	}
}

func TestServingHelp(t *testing.T) {
	for _, cmd := range []string{"serving check", "serving report", "serving size"} {
		code, out, _ := run(t, append(strings.Fields(cmd), "--help")...)
		if code != 0 || !strings.Contains(out, "Examples:") || !strings.Contains(out, "goldset "+cmd) {
			t.Errorf("%s --help: exit %d, no examples:\n%s", cmd, code, out)
		}
	}
}

// TestServingScoreCLI is issue 28's must-show report: the dense/sparse pair
// of serving/testdata/score with per-subset deltas, the bootstrap CI and
// greedy agreement; -v prints it.
func TestServingScoreCLI(t *testing.T) {
	d := filepath.Join("..", "..", "serving", "testdata", "score")
	code, out, stderr := run(t, "serving", "score", filepath.Join(d, "sparse.jsonl"), "--workload", filepath.Join(d, "workload"),
		"--data", filepath.Join(d, "data"), "--baseline", filepath.Join(d, "dense.json"), "--resamples", "2000")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	t.Log("\n" + out)
	for _, want := range []string{"texts matched by custom_id", "95% CI", "gov_report   4     31.88   70.28  +38.40",
		"unsupported: multifieldqa_zh: qa_f1_zh_score tokenises with jieba", "paired bootstrap: 2000 resamples, seed 1",
		"greedy agreement (characters (Unicode code points)): 11 of 33 outputs identical"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q", want)
		}
	}
	code, out, _ = run(t, "serving", "score", filepath.Join(d, "v2-sparse.json"), "--workload", filepath.Join(d, "workload-v2"),
		"--baseline", filepath.Join(d, "v2-dense.json"), "--json", "--per-request")
	var doc struct {
		Deltas    []serving.Delta
		Agreement serving.Agreement
		Run       serving.ScoreReport
	}
	if code != exitOK || json.Unmarshal([]byte(out), &doc) != nil {
		t.Fatalf("v2 --json: exit %d\n%s", code, out)
	}
	if doc.Agreement.Unit != "token ids (recorded)" || len(doc.Run.Requests) != 6 || float64(doc.Deltas[0].Delta) != 6.7 {
		t.Errorf("v2 json: %+v %+v", doc.Agreement, doc.Deltas)
	}
	// report: the score beside the throughput, with the difference.
	code, out, stderr = run(t, "serving", "report", filepath.Join(d, "v2-sparse.json"), "--baseline", filepath.Join(d, "v2-dense.json"),
		"--workload", filepath.Join(d, "workload-v2"), "--svg", filepath.Join(t.TempDir(), "r.svg"))
	if code != exitOK || !strings.Contains(out, "LongBench score") || !strings.Contains(out, "+6.70") {
		t.Errorf("report: exit %d %s\n%s", code, stderr, out)
	}
	if code, _, stderr := run(t, "serving", "score", filepath.Join(d, "v2-dense.json"), "--workload", filepath.Join(d, "workload"), "--data", filepath.Join(d, "data")); code != exitError || !strings.Contains(stderr, "not in the workload") {
		t.Errorf("wrong workload: exit %d %s", code, stderr)
	}
}
