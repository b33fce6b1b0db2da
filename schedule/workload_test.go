package schedule

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseWorkload(t *testing.T) {
	manifest := `{"format":"goldset.longbench/2","recipe":{"context_len":40960},
	  "prompts":[{"custom_id":"qasper-a","prompt_tokens":3500,"max_new_tokens":128,"_id":"x"},
	             {"custom_id":"gov_report-b","prompt_tokens":9000,"max_new_tokens":512}]}`
	jsonl := "\ufeff{\"id\":\"a\",\"prompt_tokens\":10,\"output_tokens\":2}\r\n\n{\"id\":\"b\",\"prompt_tokens\":5,\"output_tokens\":1,\"arrival_step\":3}\n"
	for _, tc := range []struct {
		name, in string
		want     []Request
	}{
		{"manifest", manifest, []Request{{"qasper-a", 3500, 128, 0}, {"gov_report-b", 9000, 512, 0}}},
		{"jsonl", jsonl, []Request{{"a", 10, 2, 0}, {"b", 5, 1, 3}}},
		{"one jsonl line", `{"id":"a","prompt_tokens":1,"output_tokens":1}`, []Request{{"a", 1, 1, 0}}},
	} {
		got, err := ParseWorkload([]byte(tc.in))
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v %v", tc.name, got, err)
		}
	}
	for _, tc := range []struct{ in, msg string }{
		{``, "no requests"},
		{`{"prompts":[]}`, "manifest has no prompts"},
		{`{"prompts":[{"custom_id":"q","prompt_tokens":0,"max_new_tokens":5}]}`, `prompts[0] ("q"): prompt_tokens 0`},
		{`{"prompts":[{"custom_id":"q","prompt_tokens":5,"max_new_tokens":-1}]}`, `output_tokens -1`},
		{"{\"id\":\"a\",\"prompt_tokens\":1,\"output_tokens\":1}\n{\"id\":\"b\",\"prompt_tokens\":1}", "line 2: prompt_tokens and output_tokens are required"},
		{`{"id":"a","prompt_tokens":1,"output_tokens":1,"extra":2}`, `line 1: json: unknown field "extra"`},
		{`{"id":"a","prompt_tokens":1,"output_tokens":1} {}`, "line 1: more than one JSON value"},
		{`{"id":"a","prompt_tokens":1,"output_tokens":1}}`, "line 1: more than one JSON value"},
		{`{"id":"a","prompt_tokens":1,"output_tokens":1}]`, "line 1: more than one JSON value"},
		{`{"id":"a","prompt_tokens":1,"output_tokens":1,"arrival_step":-2}`, "arrival_step -2"},
		{`{"id":"a","prompt_tokens":2000000000,"output_tokens":1}`, "prompt_tokens 2000000000 out of range"},
		{`[1,2]`, "line 1:"},
	} {
		_, err := ParseWorkload([]byte(tc.in))
		if !errors.Is(err, ErrWorkload) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%q: %v, want %q", tc.in, err, tc.msg)
		}
	}
}

func TestReadWorkload(t *testing.T) {
	dir := t.TempDir()
	m := `{"prompts":[{"custom_id":"a","prompt_tokens":7,"max_new_tokens":3}]}`
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Join(dir, ManifestFile)} {
		got, err := ReadWorkload(p)
		if err != nil || len(got) != 1 || got[0] != (Request{"a", 7, 3, 0}) {
			t.Errorf("%s: %+v %v", p, got, err)
		}
	}
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"id":"a"`), 0o644)
	if _, err := ReadWorkload(bad); !errors.Is(err, ErrWorkload) || !strings.Contains(err.Error(), bad+": ") {
		t.Errorf("bad file: %v", err)
	}
	if _, err := ReadWorkload(filepath.Join(dir, "missing")); !errors.Is(err, ErrWorkload) {
		t.Errorf("missing file: %v", err)
	}
}

// FuzzParseWorkload: any input parses to valid requests or fails with
// ErrWorkload, never panics; what parses simulates without error on a
// pool large enough for it.
func FuzzParseWorkload(f *testing.F) {
	f.Add([]byte(`{"prompts":[{"custom_id":"a","prompt_tokens":7,"max_new_tokens":3}]}`))
	f.Add([]byte("{\"id\":\"a\",\"prompt_tokens\":10,\"output_tokens\":2}\n{\"id\":\"b\",\"prompt_tokens\":5,\"output_tokens\":1,\"arrival_step\":3}\n"))
	f.Add([]byte(`{"prompts":null}`))
	f.Add([]byte("\ufeff\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		reqs, err := ParseWorkload(b)
		if err != nil {
			if !errors.Is(err, ErrWorkload) {
				t.Fatalf("error without ErrWorkload: %v", err)
			}
			return
		}
		if len(reqs) == 0 {
			t.Fatal("no requests and no error")
		}
		total := 0
		for _, r := range reqs {
			if checkParsed(r) != nil {
				t.Fatalf("invalid request parsed: %+v", r)
			}
			total += r.PromptTokens + r.OutputTokens
			if total > 1<<12 || r.ArrivalStep > 1<<12 {
				return // too large to simulate in a fuzz iteration
			}
		}
		cfg := Config{MaxNumBatchedTokens: 64, MaxNumSeqs: 4, BlockSize: 4, NumBlocks: total/4 + 8}
		c := newChecker(t, cfg, reqs)
		sum, err := Simulate(cfg, reqs, c.visit)
		if err == nil {
			err = c.finish(sum)
		}
		if err != nil {
			t.Fatal(err)
		}
	})
}
