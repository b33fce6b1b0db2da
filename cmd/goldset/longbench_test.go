package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goldset/goldset/internal/testenv"
)

// Length sets and budget policies through the CLI: every prompt lands on
// its band edge, and budgets that cannot fit fail naming the subset.
func TestLongbenchLengthSetCLI(t *testing.T) {
	tok, data := testenv.Qwen3TokenizerPath(t), testenv.LongBenchSample(t)
	dir := t.TempDir()
	base := []string{"longbench", "build", "--data", data, "--tokenizer", tok, "--model", "Qwen/Qwen3-8B",
		"--subsets", "qasper,multifieldqa_en,hotpotqa,gov_report", "-q"}
	code, out, errs := run(t, append(base, "--buckets", "1024,2048", "--limit", "--max-len", "4096", "--n", "2", "--json", "--out", filepath.Join(dir, "a"))...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res struct {
		Lengths        []int  `json:"lengths"`
		MaxTotal       int    `json:"max_total_tokens"`
		ContextLen     int    `json:"context_len"`
		WorkloadDigest string `json:"workload_digest"`
		Files          []struct {
			Path, Command       string
			AppliesChatTemplate bool `json:"applies_chat_template"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Lengths) != 6 || res.MaxTotal != 4096 || res.ContextLen != 4096 || len(res.WorkloadDigest) != 64 || len(res.Files) < 5 {
		t.Fatalf("result %+v", res)
	}
	if !strings.Contains(res.Files[0].Command, "--num-prompts 6 ") || !strings.Contains(res.Files[0].Command, "--model Qwen/Qwen3-8B") {
		t.Errorf("serve command %q", res.Files[0].Command)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--truncate-at", "40900"}, `subset "qasper": truncation budget 40900 (policy fixed) + chat template 8 + max_new_tokens 128 = 41036 tokens > context_len 40960`},
		{[]string{"--truncation-policy", "longbench"}, `subset "gov_report": truncation budget 40460 (policy longbench)`},
		{[]string{"--truncation-policy", "pred"}, `truncation policy "pred"`},
		{[]string{"--buckets", "4096,2048"}, "ascending band edges"},
		{[]string{"--buckets", "32768", "--n", "3"}, "band (0, 32768]: only 0 of 9 records reach 32768"},
	} {
		code, _, errs := run(t, append(base, append(tc.args, "--out", filepath.Join(dir, "x"))...)...)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %s; want %q", tc.args, code, errs, tc.want)
		}
	}
	if code, _, errs := run(t, "longbench", "build", "--data", data, "--tokenizer", tok, "--subsets", "qasper", "--out", filepath.Join(dir, "y")); code == 0 || !strings.Contains(errs, `"model"`) {
		t.Errorf("no --model: exit %d %s", code, errs)
	}
}
