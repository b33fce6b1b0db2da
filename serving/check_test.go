package serving

import (
	"github.com/goldset/goldset/serving/servingtest"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestCheckMustShow is issue 16's list: a consistent run passes, and each
// way of not running the workload fails naming the field, the index and both
// values, with the cause.
func TestCheckMustShow(t *testing.T) {
	w := mustWorkload(t, servingtest.SynthManifest(100, 1))
	p := w.Prompts
	for _, tc := range []struct {
		name   string
		mutate func(r *servingtest.VLLMRun)
		opts   CheckOptions
		ok     bool
		want   []string // substrings of the failures, causes and notes
	}{
		{name: "consistent", mutate: func(r *servingtest.VLLMRun) {}, ok: true},
		{name: "one failed request", mutate: func(r *servingtest.VLLMRun) {
			r.Errors[17] = "Bad Request"
		}, want: []string{
			"failed: got 1, want 0",
			`errors[17]: got "Bad Request", want "" (success) (` + p[17].CustomID + ")",
			"cause: failed requests drop out of every metric",
		}},
		{name: "1000 oversampled from 100", mutate: func(r *servingtest.VLLMRun) {
			rng := rand.New(rand.NewPCG(3, 4))
			*r = servingtest.VLLMRun{NumPrompts: 1000}
			for range 1000 {
				k := rng.IntN(len(p))
				r.In = append(r.In, p[k].PromptTokens)
				r.Out = append(r.Out, p[k].MaxNewTokens)
				r.Errors = append(r.Errors, "")
			}
		}, want: []string{
			"completed+failed: got 1000, want 100 (the workload's prompts)",
			"num_prompts: got 1000, want 100",
			"input_lens: got 1000 entries, want 100 entries",
			"cause: 1000 requests from a 100-prompt workload: vLLM's loaders oversample with replacement up to --num-prompts (default 1000); run with --num-prompts 100 --no-oversample",
		}},
		{name: "shuffled run compared in order", mutate: func(r *servingtest.VLLMRun) {
			rng := rand.New(rand.NewPCG(5, 6))
			rng.Shuffle(len(r.In), func(i, j int) {
				r.In[i], r.In[j] = r.In[j], r.In[i]
				r.Out[i], r.Out[j] = r.Out[j], r.Out[i]
			})
		}, want: []string{
			"input_lens[0]: got ",
			"cause: the input lengths match the manifest's as a multiset but not in order: the run was shuffled",
			"note: output_lens: not compared in order",
		}},
		{name: "256-token outputs for per-prompt lengths", mutate: func(r *servingtest.VLLMRun) {
			for i := range r.Out {
				r.Out[i] = 256
			}
		}, want: []string{
			"output_lens[0]: got 256, want 128 (max_new_tokens) (" + p[0].CustomID + ")",
			"output_lens[1]: got 256, want 64 (max_new_tokens)",
			"output_lens: got 100 of 100 requests differ, want 0 (90 more not listed)",
			"cause: every output has 256 tokens while the workload asks per-prompt lengths: vLLM's custom dataset default --custom-output-len 256",
		}},
		{name: "prompt templated twice", mutate: func(r *servingtest.VLLMRun) {
			for i := range r.In {
				r.In[i] += 8
			}
		}, want: []string{
			"input_lens[0]: got " + itoa(p[0].PromptTokens+8) + ", want " + itoa(p[0].PromptTokens) + " (prompt_tokens) (" + p[0].CustomID + ")",
			"cause: every input is 8 tokens longer than the manifest's; input_lens is vLLM: the server's usage.prompt_tokens where the client reads it",
			"Counted by the client: a chat template applied on top of the already templated prompts (Qwen3's adds 8 tokens, 12 with the empty think block; vLLM: --skip-chat-template",
			"counted by the server: the server tokenized or templated differently",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := consistentRun(w)
			tc.mutate(run)
			v := Check(w, mustResult(t, run.JSON(1)), tc.opts)
			text := verdictText(v)
			if v.OK != tc.ok {
				t.Fatalf("OK = %v, want %v:\n%s", v.OK, tc.ok, text)
			}
			for _, s := range tc.want {
				if !strings.Contains(text, s) {
					t.Errorf("missing %q in:\n%s", s, text)
				}
			}
			if strings.Contains(text, "end at EOS") {
				t.Errorf("an EOS cause without short outputs:\n%s", text)
			}
			if tc.ok && len(v.Checked) < 5 {
				t.Errorf("only %d checks ran: %v", len(v.Checked), v.Checked)
			}
		})
	}
}

func TestCheckOneFailedRequest(t *testing.T) {
	w := mustWorkload(t, servingtest.SynthManifest(100, 1))
	run := consistentRun(w)
	run.Errors[17] = "Traceback (most recent call last):\n  ...\naiohttp.ClientResponseError: 400, message='Bad Request'"
	v := Check(w, mustResult(t, run.JSON(1)), CheckOptions{})
	if v.OK {
		t.Fatal("a failed request passed")
	}
	want := []Failure{
		{Field: "failed", Index: -1, Got: "1", Want: "0"},
		{Field: "errors", Index: 17, Got: `"aiohttp.ClientResponseError: 400, message='Bad Request'"`, Want: `"" (success)`, Note: w.Prompts[17].CustomID},
	}
	if !slices.Equal(v.Failures, want) {
		t.Errorf("failures:\n%s\nwant\n%v", verdictText(v), want)
	}
}

func TestCheckShuffledAsMultiset(t *testing.T) {
	w := mustWorkload(t, servingtest.SynthManifest(100, 1))
	run := consistentRun(w)
	rng := rand.New(rand.NewPCG(5, 6))
	rng.Shuffle(len(run.In), func(i, j int) {
		run.In[i], run.In[j] = run.In[j], run.In[i]
		run.Out[i], run.Out[j] = run.Out[j], run.Out[i]
	})
	v := Check(w, mustResult(t, run.JSON(1)), CheckOptions{Shuffled: true})
	if !v.OK {
		t.Fatalf("shuffled run with --shuffled failed:\n%s", verdictText(v))
	}
	if !strings.Contains(verdictText(v), "compared as a multiset of (input, output) pairs, not in order (--shuffled)") {
		t.Errorf("the verdict does not say it compared as a multiset:\n%s", verdictText(v))
	}
	// A multiset check still catches a wrong pairing of lengths and a
	// templated-twice run.
	run.Out[0], run.Out[1] = run.Out[1], run.Out[0]
	if run.Out[0] != run.Out[1] {
		if v := Check(w, mustResult(t, run.JSON(1)), CheckOptions{Shuffled: true}); v.OK {
			t.Error("swapped output lengths passed as a multiset")
		}
	}
	run.Out[0], run.Out[1] = run.Out[1], run.Out[0]
	// One prompt sent twice and another never: same count, the multiset
	// differs (with EOS allowed only the input multiset is compared).
	dup := consistentRun(w)
	dup.In[0], dup.Out[0] = dup.In[1], dup.Out[1]
	for _, eos := range []bool{false, true} {
		if v := Check(w, mustResult(t, dup.JSON(1)), CheckOptions{Shuffled: true, EOSAllowed: eos}); v.OK {
			t.Errorf("a duplicated request passed as a multiset (EOS allowed %v)", eos)
		}
	}
	run.In[3] += 8
	v = Check(w, mustResult(t, run.JSON(1)), CheckOptions{Shuffled: true})
	if v.OK || !strings.Contains(verdictText(v), "input_lens[3]: got "+itoa(run.In[3])) {
		t.Errorf("a +8 input passed the multiset check:\n%s", verdictText(v))
	}
	// Every input templated twice, shuffled: the cause is still named.
	for i := range run.In {
		if i != 3 {
			run.In[i] += 8
		}
	}
	v = Check(w, mustResult(t, run.JSON(1)), CheckOptions{Shuffled: true})
	if v.OK || !strings.Contains(verdictText(v), "sorted, every input is 8 tokens longer") {
		t.Errorf("shuffled and templated twice:\n%s", verdictText(v))
	}
}

func TestCheckEOSAllowed(t *testing.T) {
	w := mustWorkload(t, servingtest.SynthManifest(20, 2))
	run := consistentRun(w)
	run.Out[4] = 3 // ended at EOS
	if v := Check(w, mustResult(t, run.JSON(1)), CheckOptions{}); v.OK || !strings.Contains(verdictText(v), "output_lens[4]: got 3") {
		t.Errorf("a short output passed with EOS ignored:\n%s", verdictText(v))
	}
	if v := Check(w, mustResult(t, run.JSON(1)), CheckOptions{EOSAllowed: true}); !v.OK {
		t.Errorf("a short output failed with --eos-allowed:\n%s", verdictText(v))
	}
	run.Out[4] = w.Prompts[4].MaxNewTokens + 1
	if v := Check(w, mustResult(t, run.JSON(1)), CheckOptions{EOSAllowed: true}); v.OK {
		t.Error("an output over max_new_tokens passed with --eos-allowed")
	}
}

func TestCheckMetadata(t *testing.T) {
	w := mustWorkload(t, servingtest.SynthManifest(10, 3))
	run := consistentRun(w)
	run.Metadata = map[string]string{"workload_digest": w.Digest, "temperature": "0", "disable_shuffle": "true"}
	if v := Check(w, mustResult(t, run.JSON(1)), CheckOptions{}); !v.OK {
		t.Fatalf("matching metadata failed:\n%s", verdictText(v))
	}
	run.Metadata = map[string]string{"workload_digest": strings.Repeat("0", 64), "temperature": "0.7"}
	v := Check(w, mustResult(t, run.JSON(1)), CheckOptions{})
	text := verdictText(v)
	for _, s := range []string{"workload_digest: got " + strings.Repeat("0", 64) + ", want " + w.Digest, "temperature: got 0.7, want 0"} {
		if !strings.Contains(text, s) {
			t.Errorf("missing %q:\n%s", s, text)
		}
	}
}

// TestCheckPlanFromCommand reads the workload's own command (issue 12's
// "files" list): without --disable-shuffle the lengths are compared as a
// multiset, and its --temperature is what metadata must match.
func TestCheckPlanFromCommand(t *testing.T) {
	m := strings.Replace(string(servingtest.SynthManifest(10, 3)), `"format":`, `"files": [{"path": "serve.jsonl", "consumer": "vllm bench serve",
	  "command": "vllm bench serve --backend openai --endpoint /v1/completions --dataset-name custom --dataset-path serve.jsonl \\\n --skip-chat-template --custom-output-len -1 --num-prompts 10 --no-oversample --ignore-eos --temperature=0.5", "applies_chat_template": false}],
	  "workload_digest": "abc", "format":`, 1)
	w := mustWorkload(t, []byte(m))
	if w.Digest != "abc" || w.DigestComputed {
		t.Errorf("digest %q computed %v: the manifest's workload_digest must be used", w.Digest, w.DigestComputed)
	}
	p := w.PlanFor(VLLMServe, "")
	if p.NumPrompts != 10 || !p.NoOversample || p.DisableShuffle || p.CustomOutputLen != -1 || !p.SkipChatTemplate || !p.IgnoreEOS || p.Temperature == nil || *p.Temperature != 0.5 {
		t.Errorf("plan %+v", p)
	}
	run := consistentRun(w)
	run.In[0], run.In[1] = run.In[1], run.In[0]
	run.Out[0], run.Out[1] = run.Out[1], run.Out[0]
	run.Metadata = map[string]string{"temperature": "0.5"}
	v := Check(w, mustResult(t, run.JSON(1)), CheckOptions{})
	if !v.OK || !strings.Contains(verdictText(v), "does not pass --disable-shuffle") {
		t.Errorf("a shuffled run of a shuffling command:\n%s", verdictText(v))
	}
	if !strings.Contains(verdictText(v), "differs from the one computed here") {
		t.Errorf("a recorded digest that differs from the prompts' is not noted:\n%s", verdictText(v))
	}
}

func TestCheckAggregates(t *testing.T) {
	w := mustWorkload(t, readTestdata(t, "workload/manifest.json"))
	sumIn, sumOut := w.TotalPromptTokens(), w.TotalMaxNewTokens()
	for _, tc := range []struct {
		name, json string
		want       string
	}{
		{"throughput templated twice", `{"elapsed_time": 9.8, "num_requests": 4, "total_num_tokens": ` + i64(sumIn+sumOut+32) + `, "requests_per_second": 0.4, "tokens_per_second": 3000}`,
			"total_num_tokens: got " + i64(sumIn+sumOut+32)},
		{"throughput oversampled", `{"elapsed_time": 9.8, "num_requests": 1000, "total_num_tokens": 1, "requests_per_second": 100, "tokens_per_second": 1}`,
			"completed+failed: got 1000, want 4"},
		{"sglang offline 256 outputs", `{"backend": "engine", "successful_requests": 4, "total_latency": 3, "total_input_tokens": ` + i64(sumIn) + `, "total_output_tokens": 1024, "request_throughput": 1, "input_throughput": 1, "output_throughput": 1, "total_throughput": 1}`,
			"total_output_tokens: got 1024, want " + i64(sumOut)},
		{"sglang serving fixed output len", `{"backend": "sglang-oai", "dataset_name": "sharegpt", "sharegpt_output_len": 256, "completed": 4, "total_input_tokens": ` + i64(sumIn) + `, "total_output_tokens": ` + i64(sumOut) + `, "duration": 1}`,
			"sharegpt_output_len: got 256, want null"},
		{"vllm serve without details, one short", `{"num_prompts": 4, "completed": 3, "failed": 1, "total_input_tokens": 1, "total_output_tokens": 1, "endpoint_type": "openai"}`,
			"failed: got 1, want 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustResult(t, []byte(tc.json))
			v := Check(w, r, CheckOptions{})
			if v.OK || !strings.Contains(verdictText(v), tc.want) {
				t.Errorf("want a failure %q:\n%s", tc.want, verdictText(v))
			}
		})
	}
}

// TestCheckTestdata: every sample file is consistent with the sample
// workload, in today's manifest format and in issue 12's (workload_digest,
// files with commands).
func TestCheckTestdata(t *testing.T) {
	for _, dir := range []string{"testdata/workload", "testdata/workload-v2"} {
		w, err := ReadWorkload(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"vllm-serve-detailed.json", "vllm-serve.json", "vllm-throughput.json", "sglang-serving.jsonl", "sglang-offline.jsonl", "vllm-offline-goldset.json"} {
			r, err := ReadResult("testdata/"+name, -1)
			if err != nil {
				t.Fatal(err)
			}
			if v := Check(w, r, CheckOptions{}); !v.OK {
				t.Errorf("%s against %s:\n%s", name, dir, verdictText(v))
			}
		}
	}
	w, _ := ReadWorkload("testdata/workload-v2")
	if w.DigestComputed || w.Digest != WorkloadDigest(w.Prompts) || len(w.Files) != 7 {
		t.Errorf("workload-v2: digest %s computed %v, %d files", w.Digest, w.DigestComputed, len(w.Files))
	}
}

// TestCheckGoldsetOffline: run_vllm_offline.py names every request, so the
// order is checked by custom_id, and its prompt file by sha256.
func TestCheckGoldsetOffline(t *testing.T) {
	w, err := ReadWorkload("testdata/workload-v2")
	if err != nil {
		t.Fatal(err)
	}
	w.Outputs["prompt_ids.jsonl"] = strings.Repeat("ab", 32)
	b := readTestdata(t, "vllm-offline-goldset.json")
	r := mustResult(t, b)
	v := Check(w, r, CheckOptions{})
	if v.OK || !strings.Contains(verdictText(v), "prompts_sha256: got ") {
		t.Errorf("a different prompt file passed:\n%s", verdictText(v))
	}
	delete(w.Outputs, "prompt_ids.jsonl")
	r.CustomIDs[0], r.CustomIDs[1] = r.CustomIDs[1], r.CustomIDs[0]
	v = Check(w, r, CheckOptions{})
	if v.OK || !strings.Contains(verdictText(v), `custom_id[0]: got "`+w.Prompts[1].CustomID+`", want "`+w.Prompts[0].CustomID+`"`) {
		t.Errorf("swapped custom_ids passed:\n%s", verdictText(v))
	}
}

// TestCheckInputOffsetBySource: a constant input offset names who counted
// input_lens for the result's tool, and the tool's own fix (issue 24: an
// SGLang result was told to use vLLM's flag, and a server that counts
// differently was diagnosed as a second template only).
func TestCheckInputOffsetBySource(t *testing.T) {
	w := mustWorkload(t, readTestdata(t, "workload/manifest.json"))
	r, err := ReadResult("testdata/sglang-serving.jsonl", -1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range r.InputLens {
		r.InputLens[i] += 8
	}
	text := verdictText(Check(w, r, CheckOptions{}))
	for _, want := range []string{
		"every input is 8 tokens longer than the manifest's; input_lens is SGLang: the client's tokenizer count",
		"SGLang: drop --apply-chat-template",
		"counted by the server: the server tokenized or templated differently",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in:\n%s", want, text)
		}
	}
	if strings.Contains(text, "--skip-chat-template") {
		t.Errorf("an SGLang result told to use vLLM's flag:\n%s", text)
	}
	// The extra request 0 each client sends is named, with the server flag.
	if !strings.Contains(text, "copies of request 0 with at most 32 output tokens") || !strings.Contains(text, "--disable-radix-cache") {
		t.Errorf("no SGLang warm-up note:\n%s", text)
	}
	vw := mustWorkload(t, servingtest.SynthManifest(20, 3))
	vt := verdictText(Check(vw, mustResult(t, consistentRun(vw).JSON(1)), CheckOptions{}))
	if !strings.Contains(vt, "vLLM's ready check sent request 0 in full") || !strings.Contains(vt, "--no-enable-prefix-caching") {
		t.Errorf("no vLLM ready-check note:\n%s", vt)
	}
}
