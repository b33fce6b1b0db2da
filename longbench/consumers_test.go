package longbench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goldset/goldset/internal/testenv"
)

// The consumer contracts of docs/consumers.md, checked field by field: every
// line decodes strictly (unknown keys are an error) into a struct holding
// exactly the fields the consumer reads, plus custom_id/id where noted.

type contractServe struct { // vllm/benchmarks/datasets.py CustomDataset
	Prompt       string `json:"prompt"`
	OutputTokens *int   `json:"output_tokens"`
	CustomID     string `json:"custom_id"`
}

type contractMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type contractChatBody struct { // ChatCompletionRequest fields we set
	Model               string            `json:"model"`
	Messages            []contractMessage `json:"messages"`
	MaxCompletionTokens *int              `json:"max_completion_tokens"`
	Temperature         *float64          `json:"temperature"`
	IgnoreEOS           *bool             `json:"ignore_eos"`
	ChatTemplateKwargs  map[string]bool   `json:"chat_template_kwargs"`
}

type contractBatch struct { // run_batch.py BatchRequestInput
	CustomID string           `json:"custom_id"`
	Method   string           `json:"method"`
	URL      string           `json:"url"`
	Body     contractChatBody `json:"body"`
}

type contractSGLang struct { // sglang/benchmark/datasets/custom.py
	CustomID      string            `json:"custom_id"`
	Conversations []contractMessage `json:"conversations"`
}

type contractShareGPTTurn struct {
	From  string `json:"from"`
	Value string `json:"value"`
}

type contractShareGPT struct { // sglang/benchmark/datasets/sharegpt.py
	ID            string                 `json:"id"`
	Conversations []contractShareGPTTurn `json:"conversations"`
}

type contractIDs struct {
	CustomID       string `json:"custom_id"`
	PromptTokenIDs []int  `json:"prompt_token_ids"`
	MaxTokens      *int   `json:"max_tokens"`
}

func strictLines[T any](t *testing.T, name string, data []byte) []T {
	t.Helper()
	var out []T
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		var v T
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s line %d: %v", name, i+1, err)
		}
		out = append(out, v)
	}
	return out
}

// consumerBuild builds the toy data with a no-chat subset (trec) in it.
func consumerBuild(t *testing.T, noThinking bool) (map[string][]byte, Manifest) {
	t.Helper()
	opts := toyOptions(toyData(t), filepath.Join(t.TempDir(), "o"))
	opts.Prompt.NoThinking = noThinking
	if _, err := Build(context.Background(), opts, hashedTok{}, nil); err != nil {
		t.Fatal(err)
	}
	files := readDir(t, opts.Out)
	var m Manifest
	if err := json.Unmarshal(files[ManifestFile], &m); err != nil {
		t.Fatal(err)
	}
	return files, m
}

func TestConsumerFiles(t *testing.T) {
	for _, noThinking := range []bool{false, true} {
		t.Run(fmt.Sprintf("no_thinking=%v", noThinking), func(t *testing.T) {
			files, m := consumerBuild(t, noThinking)
			tok := byteTok{}
			ctxLen := m.Recipe.ContextLen
			n := len(m.Prompts)
			if n != 20 || ctxLen != 400 {
				t.Fatalf("%d prompts, context %d", n, ctxLen)
			}

			// Budget: every prompt fits, counted from the file's own text.
			serve := strictLines[contractServe](t, ServeFile, files[ServeFile])
			if len(serve) != n {
				t.Fatalf("%d serve lines", len(serve))
			}
			for i, s := range serve {
				p := m.Prompts[i]
				if s.OutputTokens == nil || *s.OutputTokens != p.MaxNewTokens || s.CustomID != p.CustomID {
					t.Errorf("serve %d: %+v vs %+v", i, s, p)
				}
				got := len(tok.Encode(s.Prompt))
				if got != p.PromptTokens || got+p.MaxNewTokens > ctxLen || p.TotalTokens != got+p.MaxNewTokens {
					t.Errorf("serve %d: %d + %d tokens, context %d (manifest %d)", i, got, p.MaxNewTokens, ctxLen, p.PromptTokens)
				}
				if sum := sha256.Sum256([]byte(s.Prompt)); hex.EncodeToString(sum[:]) != p.PromptSHA256 {
					t.Errorf("serve %d: prompt sha256 differs from the manifest", i)
				}
			}

			// Chat batch: only chat prompts; user message + Qwen3 template is the hashed prompt.
			batch := strictLines[contractBatch](t, ChatBatchFile, files[ChatBatchFile])
			var chat []PromptInfo
			var excluded []string
			for _, p := range m.Prompts {
				if p.Chat {
					chat = append(chat, p)
				} else {
					excluded = append(excluded, p.CustomID)
				}
			}
			if len(batch) != len(chat) || len(chat) == 0 || len(excluded) == 0 || m.ChatBatch.Requests != len(chat) ||
				strings.Join(m.ChatBatch.ExcludedCustomIDs, ",") != strings.Join(excluded, ",") || strings.Join(m.ChatBatch.ExcludedSubsets, ",") != "trec" {
				t.Fatalf("%d batch lines for %d chat prompts; chat_batch %+v", len(batch), len(chat), m.ChatBatch)
			}
			for i, b := range batch {
				p := chat[i]
				body := b.Body
				if b.CustomID != p.CustomID || b.Method != "POST" || b.URL != "/v1/chat/completions" || body.Model != "toy" ||
					len(body.Messages) != 1 || body.Messages[0].Role != "user" || body.MaxCompletionTokens == nil || *body.MaxCompletionTokens != p.MaxNewTokens ||
					body.Temperature == nil || *body.Temperature != 0 || body.IgnoreEOS == nil || !*body.IgnoreEOS ||
					len(body.ChatTemplateKwargs) != 1 || body.ChatTemplateKwargs["enable_thinking"] != !noThinking || m.ChatBatch.EnableThinking != !noThinking {
					t.Errorf("batch %d: %+v", i, b)
				}
				rendered := ApplyChat(body.Messages[0].Content, !body.ChatTemplateKwargs["enable_thinking"])
				if sum := sha256.Sum256([]byte(rendered)); hex.EncodeToString(sum[:]) != p.PromptSHA256 {
					t.Errorf("batch %d: user message + chat template does not reproduce prompt_sha256", i)
				}
				if strings.Contains(body.Messages[0].Content, "<|im_start|>") {
					t.Errorf("batch %d: user message already templated", i)
				}
			}

			// SGLang custom: user turn is the templated prompt, the reply encodes to max_new_tokens.
			sgl := strictLines[contractSGLang](t, SGLangFile, files[SGLangFile])
			for i, s := range sgl {
				p := m.Prompts[i]
				if s.CustomID != p.CustomID || len(s.Conversations) != 2 || s.Conversations[0].Role != "user" || s.Conversations[1].Role != "assistant" ||
					s.Conversations[0].Content != serve[i].Prompt || len(tok.Encode(s.Conversations[1].Content)) != p.MaxNewTokens {
					t.Errorf("sglang %d: %+v", i, s.Conversations[1])
				}
			}

			// ShareGPT: one JSON list.
			dec := json.NewDecoder(bytes.NewReader(files[ShareGPTFile]))
			dec.DisallowUnknownFields()
			var sg []contractShareGPT
			if err := dec.Decode(&sg); err != nil || len(sg) != n {
				t.Fatalf("sharegpt: %v, %d entries", err, len(sg))
			}
			for i, e := range sg {
				p := m.Prompts[i]
				if e.ID != p.CustomID || len(e.Conversations) != 2 || e.Conversations[0].From != "human" || e.Conversations[1].From != "gpt" ||
					e.Conversations[0].Value != serve[i].Prompt || len(tok.Encode(e.Conversations[1].Value)) != p.MaxNewTokens {
					t.Errorf("sharegpt %d: %+v", i, e)
				}
			}

			// Token ids: the encoding of the hashed prompt.
			ids := strictLines[contractIDs](t, PromptIDsFile, files[PromptIDsFile])
			for i, l := range ids {
				p := m.Prompts[i]
				want := tok.Encode(serve[i].Prompt)
				if l.CustomID != p.CustomID || l.MaxTokens == nil || *l.MaxTokens != p.MaxNewTokens || fmt.Sprint(l.PromptTokenIDs) != fmt.Sprint(want) ||
					len(l.PromptTokenIDs)+*l.MaxTokens > ctxLen {
					t.Errorf("prompt_ids %d", i)
				}
			}

			// files[]: every consumer file listed with its command, and the
			// template applied on exactly one side.
			listed := map[string]ConsumerFile{}
			for _, f := range m.Files {
				listed[f.Path+" "+f.Consumer] = f
				if f.Command == "" || f.Consumer == "" || !strings.Contains(m.Description, f.Command) {
					t.Errorf("file entry %+v (or not in the description)", f)
				}
				if _, ok := files[f.Path]; !ok {
					t.Errorf("files[] lists %s, not written", f.Path)
				}
				if f.AppliesChatTemplate != (f.Path == ChatBatchFile) {
					t.Errorf("%s: applies_chat_template %v", f.Path, f.AppliesChatTemplate)
				}
			}
			var paths []string
			for _, f := range m.Files {
				paths = append(paths, f.Path)
			}
			if got := strings.Join(paths, " "); got != "serve.jsonl batch.chat.jsonl sglang.jsonl sharegpt.json sharegpt.json prompt_ids.jsonl prompt_ids.npy" {
				t.Errorf("files %s", got)
			}
			f := m.Files[0]
			for _, flag := range []string{"--backend openai", "--endpoint /v1/completions", "--dataset-name custom", "--dataset-path serve.jsonl",
				"--skip-chat-template", "--custom-output-len -1", fmt.Sprintf("--num-prompts %d ", n), "--no-oversample", "--disable-shuffle",
				"--ignore-eos", "--temperature 0", "--save-result", "--save-detailed", "--percentile-metrics ttft,tpot,itl,e2el",
				"--metric-percentiles 50,90,99", "--model toy", "--metadata workload_digest=" + m.WorkloadDigest} {
				if !strings.Contains(f.Command+" ", flag) {
					t.Errorf("vllm bench serve command lacks %q: %s", flag, f.Command)
				}
			}
			if !strings.Contains(f.Server, "--max-model-len 400") || !strings.Contains(m.Files[1].Command, "--model toy") {
				t.Errorf("server %q / batch %q", f.Server, m.Files[1].Command)
			}

			// The digest is recomputed here from the manifest's own fields.
			h := sha256.New()
			for _, p := range m.Prompts {
				fmt.Fprintf(h, "%d:%s %s %d %d\n", len(p.CustomID), p.CustomID, p.PromptSHA256, p.PromptTokens, p.MaxNewTokens)
			}
			if got := hex.EncodeToString(h.Sum(nil)); got != m.WorkloadDigest || len(got) != 64 {
				t.Errorf("workload_digest %s, recomputed %s", m.WorkloadDigest, got)
			}

			// The histogram is a PNG.
			img, err := png.Decode(bytes.NewReader(files[HistogramFile]))
			if err != nil || img.Bounds().Dx() != 960 || m.HistogramPNG != HistogramFile {
				t.Errorf("histogram.png: %v %v", err, img)
			}
		})
	}
}

// A known digest: the encoding is fixed (docs: longbench/doc.go), so this
// value must never change.
func TestWorkloadDigestVector(t *testing.T) {
	ps := []PromptInfo{
		{CustomID: "qasper-a1", PromptSHA256: strings.Repeat("ab", 32), PromptTokens: 4000, MaxNewTokens: 96},
		{CustomID: "gov_report-x:y", PromptSHA256: strings.Repeat("01", 32), PromptTokens: 12, MaxNewTokens: 512},
	}
	// python3 -c 'import hashlib;print(hashlib.sha256(("9:qasper-a1 "+"ab"*32+" 4000 96\n"+"14:gov_report-x:y "+"01"*32+" 12 512\n").encode()).hexdigest())'
	const want = "e5d7d33d19d398fc7ef94118c09c12ba82d8c04000196a05c4df553b25eaab26"
	if got := WorkloadDigest(ps); got != want {
		t.Errorf("digest %s, want %s", got, want)
	}
	if WorkloadDigest(ps[:1]) == WorkloadDigest(ps) || WorkloadDigest([]PromptInfo{ps[1], ps[0]}) == WorkloadDigest(ps) {
		t.Error("digest ignores a prompt or the order")
	}
}

// run_vllm_offline.py, run against a stand-in for vLLM's LLM API
// (testdata/stubvllm), reads prompt_ids.jsonl, sends every request with its
// own max_tokens, and fails when a request came back short.
func TestOfflineScriptWithStubVLLM(t *testing.T) {
	py := testenv.Python
	if _, err := exec.LookPath(py); err != nil {
		testenv.SkipOrFail(t, "%s not found", py)
	}
	opts := toyOptions(toyData(t), filepath.Join(t.TempDir(), "o"))
	if _, err := Build(context.Background(), opts, byteTok{}, nil); err != nil {
		t.Fatal(err)
	}
	stub, _ := filepath.Abs(filepath.Join("testdata", "stubvllm"))
	run := func(short string) (string, error) {
		cmd := exec.Command(py, OfflineScript, "--model", "toy", "--max-model-len", "400", "--output", "r.json")
		cmd.Dir = opts.Out
		cmd.Env = append(os.Environ(), "PYTHONPATH="+stub, "GOLDSET_STUB_SHORT="+short, "PYTHONDONTWRITEBYTECODE=1")
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	if out, err := run("0"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var res struct {
		NumRequests  int `json:"num_requests"`
		Failed       int `json:"failed"`
		OutputTokens int `json:"output_tokens"`
		Requests     []struct {
			OutputTokens int    `json:"output_tokens"`
			Text         string `json:"text"`
			TokenIDs     []int  `json:"output_token_ids"`
		} `json:"requests"`
	}
	b, err := os.ReadFile(filepath.Join(opts.Out, "r.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil || res.NumRequests != 20 || res.Failed != 0 {
		t.Fatalf("result %s: %v", b, err)
	}
	want := 0
	for _, p := range readManifest(t, opts.Out).Prompts {
		want += p.MaxNewTokens
	}
	if res.OutputTokens != want {
		t.Errorf("output tokens %d, want %d", res.OutputTokens, want)
	}
	for i, q := range res.Requests { // kept for goldset serving score
		if len(q.TokenIDs) != q.OutputTokens || len(q.Text) != q.OutputTokens {
			t.Errorf("requests[%d]: %d ids, text %q for %d output tokens", i, len(q.TokenIDs), q.Text, q.OutputTokens)
		}
	}
	if out, err := run("1"); err == nil || !strings.Contains(out, "did not run as written") {
		t.Errorf("short outputs accepted: %v %s", err, out)
	}
}

func readManifest(t *testing.T, dir string) Manifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
