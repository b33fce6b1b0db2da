package serving

import (
	"errors"
	"strings"
	"testing"
)

func TestReadTestdataFormats(t *testing.T) {
	for _, tc := range []struct {
		file     string
		format   Format
		detailed bool
		runs     int
	}{
		{"vllm-serve-detailed.json", VLLMServe, true, 1},
		{"vllm-serve.json", VLLMServe, false, 1},
		{"vllm-throughput.json", VLLMThroughput, false, 1},
		{"sglang-serving.jsonl", SGLangServe, true, 2},
		{"sglang-offline.jsonl", SGLangOffline, false, 1},
		{"vllm-offline-goldset.json", GoldsetOffline, true, 1},
	} {
		r, err := ReadResult("testdata/"+tc.file, -1)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if r.Format != tc.format || r.Detailed() != tc.detailed || r.Runs != tc.runs || r.Completed != 4 {
			t.Errorf("%s: format %s detailed %v runs %d completed %d", tc.file, r.Format, r.Detailed(), r.Runs, r.Completed)
		}
	}
	// The first SGLang line has no details: no failure count.
	r, err := ReadResult("testdata/sglang-serving.jsonl", 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Detailed() || r.Failed != -1 || r.Recorded["request_rate"] != "Infinity" {
		t.Errorf("sglang run 0: detailed %v failed %d request_rate %q", r.Detailed(), r.Failed, r.Recorded["request_rate"])
	}
	if _, err := ReadResult("testdata/sglang-serving.jsonl", 2); !errors.Is(err, ErrResult) {
		t.Errorf("run 2 of 2: %v", err)
	}
}

func TestParseResultErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{``, "empty file"},
		{`[1, 2]`, "not an object"},
		{`{"foo": 1}`, "not a vLLM"},
		{`{"completed": 1, "failed": 0, "num_prompts": 1, "input_lens": [1, 2], "output_lens": [1]}`, `"output_lens" has 1 entries, input_lens 2`},
		{`{"completed": 1, "failed": 0, "num_prompts": 1, "input_lens": [-5]}`, "non-negative integer"},
		{`{"completed": 1, "failed": 0, "num_prompts": 1, "input_lens": [1.5]}`, "non-negative integer"},
		{`{"completed": "x", "failed": 0, "num_prompts": 1}`, `"completed": want a number`},
		{`{"completed": 1.5, "failed": 0, "num_prompts": 1}`, `want an integer`},
		{`{"completed": -1, "failed": 0, "num_prompts": 1}`, "negative"},
		{`{"completed": 2, "failed": 0, "num_prompts": 1, "input_lens": [1]}`, "completed+failed = 2"},
		{`{"completed": 1, "failed": 0, "num_prompts": 1, "ttfts": [0.1]}`, "without input_lens"},
		{`{"completed": 1, "failed": 0, "num_prompts": 1} {`, "JSON value 2"},
	} {
		_, err := ParseResult([]byte(tc.in), -1)
		if err == nil || !errors.Is(err, ErrResult) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestPythonJSON(t *testing.T) {
	in := `{"a": Infinity, "b": -Infinity, "c": NaN, "d": "NaN Infinity \" x", "e": [NaN]}`
	want := `{"a": "Infinity", "b": "-Infinity", "c": "NaN", "d": "NaN Infinity \" x", "e": ["NaN"]}`
	if got := string(pythonJSON([]byte(in))); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if b := []byte(`{"a": 1}`); &pythonJSON(b)[0] != &b[0] {
		t.Error("clean input copied")
	}
}

func TestParseWorkloadErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{`, "bad workload"},
		{`{"prompts": []}`, "no prompts"},
		{`{"prompts": [{"custom_id": "a", "prompt_tokens": 0, "max_new_tokens": 5}]}`, `prompts[0] ("a"): prompt_tokens 0`},
	} {
		if _, err := ParseWorkload([]byte(tc.in)); err == nil || !errors.Is(err, ErrWorkload) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.in, err)
		}
	}
	if _, err := ReadWorkload("testdata/nothing"); !errors.Is(err, ErrWorkload) {
		t.Errorf("missing dir: %v", err)
	}
}

// TestWorkloadDigest pins the digest's encoding with a value worked out of
// band: printf '1:a x 3 5\n1:b y 10 7\n' | sha256sum (longbench's encoding).
func TestWorkloadDigest(t *testing.T) {
	got := WorkloadDigest([]Prompt{{CustomID: "a", PromptSHA256: "x", PromptTokens: 3, MaxNewTokens: 5}, {CustomID: "b", PromptSHA256: "y", PromptTokens: 10, MaxNewTokens: 7}})
	if want := "e5be009824b730737476dabe7921f802b031dfba1e4907ddd80fcc6ced10bb33"; got != want {
		t.Errorf("digest %s, want %s", got, want)
	}
}

func TestSplitCommand(t *testing.T) {
	got := splitCommand("vllm bench serve --x 'a b' \"c\\d\" \\\n --y=1")
	want := []string{"vllm", "bench", "serve", "--x", "a b", `c\d`, "--y=1"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("%q", got)
	}
}

func FuzzParseResult(f *testing.F) {
	for _, name := range []string{"vllm-serve-detailed.json", "vllm-serve.json", "vllm-throughput.json", "sglang-serving.jsonl", "sglang-offline.jsonl", "vllm-offline-goldset.json"} {
		f.Add(readTestdata(f, name), -1)
	}
	f.Add([]byte(`{"completed": 1, "failed": 0, "num_prompts": 1, "input_lens": [NaN]}`), 0)
	w := mustWorkload(f, readTestdata(f, "workload/manifest.json"))
	f.Fuzz(func(t *testing.T, b []byte, run int) {
		r, err := ParseResult(b, run)
		if err != nil {
			if !errors.Is(err, ErrResult) {
				t.Fatalf("error without ErrResult: %v", err)
			}
			return
		}
		// Whatever parses can be checked and summarized without panicking.
		Check(w, r, CheckOptions{})
		Check(w, r, CheckOptions{Shuffled: true, EOSAllowed: true})
		s := Summarize(r)
		var sb strings.Builder
		if err := WriteSVG(&sb, []Summary{s}); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzParseWorkload(f *testing.F) {
	f.Add(readTestdata(f, "workload/manifest.json"))
	f.Add([]byte(`{"prompts": [{"custom_id": "a", "prompt_tokens": 3, "max_new_tokens": 5}], "files": [{"command": "vllm bench serve --num-prompts"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := ParseWorkload(b)
		if err != nil {
			if !errors.Is(err, ErrWorkload) {
				t.Fatalf("error without ErrWorkload: %v", err)
			}
			return
		}
		for _, fm := range []Format{VLLMServe, VLLMThroughput, SGLangServe, SGLangOffline} {
			w.PlanFor(fm, "custom")
		}
		m, _ := LoadModel("qwen3-8b")
		if _, err := Size(m, w, SizeOptions{KVBudget: 1 << 30}); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzParseModel(f *testing.F) {
	f.Add(readTestdata(f, "qwen3-8b-config.json"))
	f.Add([]byte(`{"layers": 2, "q_heads": 4, "kv_heads": 2, "head_dim": 4, "dtype": "fp8", "max_context": 10}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseModel(b)
		if err != nil {
			if !errors.Is(err, ErrModel) {
				t.Fatalf("error without ErrModel: %v", err)
			}
			return
		}
		s, err := Size(m, nil, SizeOptions{KVBudget: 1 << 40, ContextLen: 40960, BlockSize: 16})
		if err != nil {
			t.Fatal(err)
		}
		if s.BytesPerToken <= 0 || s.Budget.Blocks < 0 {
			t.Fatalf("sizing %+v", s)
		}
	})
}
