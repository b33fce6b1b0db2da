package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goldset/goldset/internal/testenv"
	"github.com/goldset/goldset/schedule"
)

type scheduleJSON struct {
	OK             bool             `json:"ok"`
	WorkloadDigest string           `json:"workload_digest"`
	BlocksFrom     string           `json:"num_blocks_from"`
	Summary        schedule.Summary `json:"summary"`
	FirstMixed     *schedule.Step   `json:"first_mixed_step"`
}

func readSteps(t *testing.T, path string) []schedule.Step {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var steps []schedule.Step
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		var s schedule.Step
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		steps = append(steps, s)
	}
	return steps
}

func TestLongbenchScheduleCLI(t *testing.T) {
	dir := t.TempDir()
	m := `{"format":"goldset.longbench/2","recipe":{"context_len":4096},"prompts":[
	  {"custom_id":"a","prompt_tokens":3000,"max_new_tokens":40,"prompt_sha256":"x"},
	  {"custom_id":"b","prompt_tokens":500,"max_new_tokens":60,"prompt_sha256":"y"},
	  {"custom_id":"c","prompt_tokens":1200,"max_new_tokens":20,"prompt_sha256":"z"}]}`
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(m), 0o644)
	out := filepath.Join(dir, "steps.jsonl")
	args := []string{"longbench", "schedule", "--workload", dir, "--num-blocks", "400", "--max-num-batched-tokens", "1024", "-q"}
	code, stdout, stderr := run(t, append(args, "--out", out, "--json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res scheduleJSON
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	// 4700 prompt tokens at 1024 per step take 5 steps with prefill rows;
	// the last request decodes 60 tokens.
	if !res.OK || s.Requests != 3 || s.Finished != 3 || s.Config.MaxModelLen != 4096 || s.Config.NumBlocks != 400 ||
		res.BlocksFrom != "--num-blocks" || len(res.WorkloadDigest) != 64 || s.MixedSteps == 0 || res.FirstMixed == nil || !res.FirstMixed.Mixed() {
		t.Fatalf("result %s", stdout)
	}
	steps := readSteps(t, out)
	if len(steps) != s.Steps {
		t.Fatalf("%d steps in the file, summary %d", len(steps), s.Steps)
	}
	var tokens int64
	for _, st := range steps {
		tokens += int64(st.Tokens)
	}
	if tokens != s.Tokens || tokens != 4700+40+60+20-3 {
		t.Errorf("tokens %d, summary %d", tokens, s.Tokens)
	}
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("out mode %v %v", fi.Mode(), err)
	}
	// Text summary.
	code, stdout, _ = run(t, args...)
	for _, want := range []string{"workload " + dir + ": 3 requests", "KV blocks: 400 of 16 tokens (399 usable; --num-blocks)", "mixed steps", "tokens per step:", "first mixed step"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("text summary lacks %q:\n%s", want, stdout)
		}
	}
	// --out is never replaced without --overwrite, and never when it is not
	// ours: exit 1, as gen's and export's refusals (doc.go's table).
	if code, _, stderr := run(t, append(args, "--out", out)...); code != 1 || !strings.Contains(stderr, "exists") {
		t.Errorf("existing out: exit %d %s", code, stderr)
	}
	code, stdout, _ = run(t, append(args, "--out", out, "--overwrite", "--max-steps", "2", "--json")...)
	if json.Unmarshal([]byte(stdout), &res); code != 0 || !res.Summary.Truncated || len(readSteps(t, out)) != 2 {
		t.Errorf("--max-steps 2: exit %d, %s", code, stdout)
	}
	other := filepath.Join(dir, "notes.txt")
	os.WriteFile(other, []byte("keep me\n"), 0o644)
	if code, _, stderr := run(t, append(args, "--out", other, "--overwrite")...); code != 1 || !strings.Contains(stderr, "not a schedule output") {
		t.Errorf("foreign out: exit %d %s", code, stderr)
	}
	if b, _ := os.ReadFile(other); string(b) != "keep me\n" {
		t.Error("a foreign file was replaced")
	}
	// The KV budget from serving size: 60 GiB / (Qwen3-8B's 144 KiB x 16) = 27306 blocks.
	code, stdout, stderr = run(t, "longbench", "schedule", "--workload", dir, "--model", "qwen3-8b", "--kv-budget", "60GiB", "--json", "-q")
	if json.Unmarshal([]byte(stdout), &res); code != 0 || res.Summary.Config.NumBlocks != 27306 || !strings.Contains(res.BlocksFrom, "Qwen3-8B") {
		t.Errorf("kv budget: exit %d %s %s", code, stdout, stderr)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "give --num-blocks, or --model"},
		{[]string{"--num-blocks", "100", "--model", "qwen3-8b"}, 2, "--num-blocks excludes"},
		{[]string{"--model", "qwen3-8b", "--kv-budget", "lots"}, 2, "--kv-budget"},
		{[]string{"--num-blocks", "100", "--block-size", "0"}, 2, "--block-size"},
		{[]string{"--num-blocks", "100", "--acceptance-rate", "2"}, 2, "acceptance_rate 2 not in [0, 1]"},
		{[]string{"--num-blocks", "20"}, 1, `request 0 ("a") needs up to 3039 KV slots`},
		{[]string{"--num-blocks", "100", "--max-steps", "-1"}, 2, "--max-steps -1"},
	} {
		code, _, stderr := run(t, append([]string{"longbench", "schedule", "--workload", dir, "-q"}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d %s; want %d %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{\"id\":\"a\",\"prompt_tokens\":5,\"output_tokens\":1}\n{\"id\":\"b\",\"prompt_tokens\":-5,\"output_tokens\":1}\n"), 0o644)
	if code, _, stderr := run(t, "longbench", "schedule", "--workload", bad, "--num-blocks", "10"); code != 1 || !strings.Contains(stderr, bad+`: schedule: bad workload: line 2 ("b"): prompt_tokens -5`) {
		t.Errorf("bad workload: exit %d %s", code, stderr)
	}
}

// The schedule of a real LongBench build: every request finishes, prefill
// chunks share steps with decodes, and the steps file is byte-identical
// across runs.
func TestLongbenchScheduleRealBuild(t *testing.T) {
	tok, data := testenv.Qwen3TokenizerPath(t), testenv.LongBenchSample(t)
	dir := t.TempDir()
	lb := filepath.Join(dir, "lb")
	if code, _, errs := run(t, "longbench", "build", "--data", data, "--tokenizer", tok, "--model", "Qwen/Qwen3-8B",
		"--subsets", "qasper,multifieldqa_en,hotpotqa,gov_report", "--n", "9", "--seed", "1", "--out", lb, "-q"); code != 0 {
		t.Fatalf("build: exit %d %s", code, errs)
	}
	var files []string
	for i := range 2 {
		out := filepath.Join(dir, "steps"+string(rune('0'+i))+".jsonl")
		code, stdout, errs := run(t, "longbench", "schedule", "--workload", lb, "--model", "qwen3-8b", "--kv-budget", "60GiB", "--out", out, "--json", "-q")
		if code != 0 {
			t.Fatalf("schedule: exit %d %s", code, errs)
		}
		var res scheduleJSON
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatal(err)
		}
		s := res.Summary
		if s.Requests != 9 || s.Finished != 9 || s.MixedSteps == 0 || s.ChunkRows == 0 || s.DecodeRows == 0 || s.Preemptions != 0 {
			t.Fatalf("summary %+v", s)
		}
		b, _ := os.ReadFile(out)
		files = append(files, string(b))
	}
	if files[0] != files[1] {
		t.Error("two runs wrote different steps")
	}
}
