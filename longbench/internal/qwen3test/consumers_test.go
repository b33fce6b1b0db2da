package qwen3test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goldset/goldset/internal/testenv"
	. "github.com/goldset/goldset/longbench"
)

var v1Subsets = []string{"qasper", "multifieldqa_en", "hotpotqa", "gov_report"}

// v2SampleDir is the shared LongBench v2 sample beside the v1 one, or skips.
func v2SampleDir(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join(filepath.Dir(sampleDir(tb)), "longbench-v2-sample")
	if _, err := os.Stat(filepath.Join(dir, "longbench_v2.jsonl")); err != nil {
		testenv.SkipOrFail(tb, "LongBench v2 sample not found at %s", dir)
	}
	return dir
}

// Every prompt of the shared v1 sample satisfies prompt + output <= context
// at 4096 and 40960, with and without the empty think block, counted by
// re-encoding the serve.jsonl text with the real tokenizer.
func TestQwen3BudgetOnSample(t *testing.T) {
	tok := qwen3Tokenizer(t)
	dir := sampleDir(t)
	for _, ctxLen := range []int{4096, 40960} {
		for _, noThinking := range []bool{false, true} {
			t.Run(fmt.Sprintf("ctx%d-nothinking=%v", ctxLen, noThinking), func(t *testing.T) {
				opts := BuildOptions{DataDir: dir, Subsets: v1Subsets, N: 9, Seed: 1, Model: "Qwen/Qwen3-8B",
					Out: filepath.Join(t.TempDir(), "o"), Prompt: PromptOptions{ContextLen: ctxLen, NoThinking: noThinking}}
				res, err := Build(context.Background(), opts, tok, nil)
				if err != nil {
					t.Fatal(err)
				}
				m := res.Manifest
				wantChat := 8
				if noThinking {
					wantChat = 12
				}
				if m.Recipe.ChatTokens != wantChat {
					t.Errorf("chat template %d tokens, want %d", m.Recipe.ChatTokens, wantChat)
				}
				serve, err := os.ReadFile(filepath.Join(opts.Out, ServeFile))
				if err != nil {
					t.Fatal(err)
				}
				worst, truncated := 0, 0
				for i, line := range strings.Split(strings.TrimSpace(string(serve)), "\n") {
					var l struct {
						Prompt       string `json:"prompt"`
						OutputTokens int    `json:"output_tokens"`
					}
					if err := json.Unmarshal([]byte(line), &l); err != nil {
						t.Fatal(err)
					}
					total := len(tok.Encode(l.Prompt)) + l.OutputTokens
					worst = max(worst, total)
					if total > ctxLen || total != m.Prompts[i].TotalTokens {
						t.Errorf("%s: prompt + output %d, context %d (manifest %d)", m.Prompts[i].CustomID, total, ctxLen, m.Prompts[i].TotalTokens)
					}
					if m.Prompts[i].Truncated {
						truncated++
						// fit: truncated prompts use the budget up to the seam.
						if total < ctxLen-2 {
							t.Errorf("%s: truncated to %d of %d", m.Prompts[i].CustomID, total, ctxLen)
						}
					}
				}
				if ctxLen == 4096 && truncated == 0 {
					t.Error("no prompt truncated at 4096: the case tests nothing")
				}
				t.Logf("context %d no_thinking=%v: 9 prompts, %d truncated, max prompt + output %d", ctxLen, noThinking, truncated, worst)
			})
		}
	}
}

// The reply texts of sglang.jsonl and sharegpt.json encode to exactly the
// requested token count with Qwen3's tokenizer.
func TestQwen3ReplyTokens(t *testing.T) {
	tok := qwen3Tokenizer(t)
	r := NewReplies(tok)
	for _, n := range []int{1, 2, 32, 64, 96, 128, 512, 1000, 4096} {
		s, err := r.Text(n)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(tok.Encode(s)); got != n {
			t.Errorf("reply for %d tokens encodes to %d", n, got)
		}
	}
}

// python3 with jinja2, or skip.
func jinjaPython(t *testing.T) string {
	t.Helper()
	for _, py := range []string{"python3", testenv.Python} {
		if p, err := exec.LookPath(py); err == nil && exec.Command(p, "-c", "import jinja2.sandbox").Run() == nil {
			return p
		}
	}
	testenv.SkipOrFail(t, "no python3 with jinja2 (pip install jinja2) to render Qwen3's chat template")
	return ""
}

// batch.chat.jsonl's user message, rendered by Qwen3's own Jinja chat
// template (tokenizer_config.json, as transformers' apply_chat_template
// does, with the line's chat_template_kwargs), reproduces exactly the
// prompt whose sha256 the manifest records: vLLM's run-batch sees the same
// prompt as vllm bench serve.
func TestQwen3ChatBatchRendersManifestPrompt(t *testing.T) {
	tok := qwen3Tokenizer(t)
	py := jinjaPython(t)
	cfg := filepath.Join(filepath.Dir(testenv.Qwen3TokenizerPath(t)), "tokenizer_config.json")
	if _, err := os.Stat(cfg); err != nil {
		testenv.SkipOrFail(t, "no tokenizer_config.json beside the tokenizer: %v", err)
	}
	script := filepath.Join("testdata", "qwen3_chat.py")
	for _, noThinking := range []bool{false, true} {
		opts := BuildOptions{DataDir: sampleDir(t), Subsets: v1Subsets, N: 9, Seed: 1, Model: "Qwen/Qwen3-8B",
			Out: filepath.Join(t.TempDir(), "o"), Prompt: PromptOptions{ContextLen: 4096, NoThinking: noThinking}}
		res, err := Build(context.Background(), opts, tok, nil)
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(py, script, cfg, filepath.Join(opts.Out, ChatBatchFile)).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		want := map[string]string{}
		for _, p := range res.Manifest.Prompts {
			if p.Chat {
				want[p.CustomID] = p.PromptSHA256
			}
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != len(want) || len(want) != 9 {
			t.Fatalf("%d rendered, %d chat prompts", len(lines), len(want))
		}
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) != 2 || want[f[0]] != f[1] {
				t.Errorf("no_thinking=%v: %s: Qwen3 template renders sha256 %s, manifest %s", noThinking, f[0], f[1], want[f[0]])
			}
		}
	}
}

// LongBench v2: goldset's $DOC$ formatting equals v2 pred.py's (run in
// Python) for all 26 records, and a length-set build over the v2 sample
// lands every prompt + output exactly on its band edge, up to the context.
func TestQwen3V2LengthSet(t *testing.T) {
	tok := qwen3Tokenizer(t)
	dir := v2SampleDir(t)
	tmplPath := filepath.Join(dir, "config", "0shot.txt")
	tmpl, _, err := LoadDollarTemplate(tmplPath)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	if _, err := ReadSubset(context.Background(), dir, "longbench_v2", ReadOptions{Version: V2}, func(r *Record) error {
		s, err := tmpl.FormatRecord(r)
		sum := sha256.Sum256([]byte(s))
		got[r.ID] = hex.EncodeToString(sum[:])
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if py, err := exec.LookPath("python3"); err == nil {
		out, err := exec.Command(py, filepath.Join("testdata", "v2_pred_format.py"), tmplPath, filepath.Join(dir, "longbench_v2.jsonl")).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		n := 0
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 2 || got[f[0]] != f[1] {
				t.Errorf("%v: goldset %s", f, got[f[0]])
			}
			n++
		}
		if n != 26 || len(got) != 26 {
			t.Errorf("%d records formatted by pred.py, %d by goldset", n, len(got))
		}
	} else {
		testenv.SkipOrFail(t, "python3 not found")
	}

	opts := BuildOptions{DataDir: dir, Subsets: []string{"longbench_v2"}, Version: V2, V2Template: tmplPath, N: 5, Seed: 1,
		Buckets: []int{4096, 8192, 16384, 32768}, Limit: true, Model: "Qwen/Qwen3-8B",
		Out: filepath.Join(t.TempDir(), "o"), Prompt: PromptOptions{NoThinking: true}}
	res, err := Build(context.Background(), opts, tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := res.Manifest
	if m.LengthSets == nil || len(m.LengthSets.Bands) != 5 || len(m.Prompts) != 25 || m.Recipe.V2Template == nil ||
		m.Recipe.V2Template.SHA256 != "68a162252bc9ff71d5d7abca3d69bb31aac3c35f832d657a2866f2018b8a6950" {
		t.Fatalf("length sets %+v, %d prompts, template %+v", m.LengthSets, len(m.Prompts), m.Recipe.V2Template)
	}
	ids, err := os.ReadFile(filepath.Join(opts.Out, PromptIDsFile))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(strings.TrimSpace(string(ids)), "\n") {
		var l struct {
			IDs       []int `json:"prompt_token_ids"`
			MaxTokens int   `json:"max_tokens"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		p := m.Prompts[i]
		if len(l.IDs)+l.MaxTokens != p.Band || p.TotalTokens != p.Band || !p.Truncated {
			t.Errorf("%s: %d + %d tokens, band %d", p.CustomID, len(l.IDs), l.MaxTokens, p.Band)
		}
	}
	if b := m.LengthSets.Bands[4]; !b.Limit || b.Upper != 40960 || b.Exact != 5 {
		t.Errorf("limit band %+v", b)
	}
}
