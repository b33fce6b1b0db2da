package serving

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/goldset/goldset/internal/testenv"
	"github.com/goldset/goldset/longbench/tokenizer"
)

const scoreDir = "testdata/score"

func loadScore(t *testing.T, workload, data, result string) (*ScoreReport, *Generations, *Workload) {
	t.Helper()
	w, err := ReadWorkload(filepath.Join(scoreDir, workload))
	if err != nil {
		t.Fatal(err)
	}
	rep, g, err := ScoreRun(context.Background(), w, filepath.Join(scoreDir, data), filepath.Join(scoreDir, result), -1)
	if err != nil {
		t.Fatal(err)
	}
	return rep, g, w
}

// expected.json is printed by make_expected.py: LongBench's own scoring code
// (metrics.py, eval.py, v2 pred.py/result.py, rouge 1.0.1, fuzzywuzzy with
// python-Levenshtein, numpy).
func readExpected(t *testing.T) map[string]map[string]json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(scoreDir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func fmtPtr(p *float64) string {
	if p == nil {
		return "null"
	}
	return strconv.FormatFloat(*p, 'g', -1, 64)
}

func sameNum(got Num, want *float64) bool {
	if want == nil {
		return !got.Known()
	}
	return got.Known() && float64(got) == *want
}

func TestScoreMatchesLongBenchV1(t *testing.T) {
	exp := readExpected(t)
	for _, run := range []string{"dense.json", "sparse.jsonl"} {
		rep, _, _ := loadScore(t, "workload", "data", run)
		if len(rep.Subsets) != len(exp[run]) {
			t.Fatalf("%s: %d subsets scored, LongBench %d", run, len(rep.Subsets), len(exp[run]))
		}
		for _, s := range rep.Subsets {
			var want struct {
				Score float64             `json:"score"`
				E     map[string]*float64 `json:"e"`
			}
			if err := json.Unmarshal(exp[run][s.Subset], &want); err != nil {
				t.Fatalf("%s %s: %v", run, s.Subset, err)
			}
			if s.Subset == "multifieldqa_zh" {
				// jieba-tokenised: reported unsupported, never a number.
				if s.Unsupported == "" || s.Score.Known() {
					t.Errorf("%s %s: want unsupported, got score %v", run, s.Subset, s.Score)
				}
				continue
			}
			if s.Unsupported != "" || float64(s.Score) != want.Score {
				t.Errorf("%s %s: score %v (unsupported %q), LongBench %v", run, s.Subset, s.Score, s.Unsupported, want.Score)
			}
			for _, b := range s.Buckets {
				if !sameNum(b.Score, want.E[b.Bucket]) {
					t.Errorf("%s %s bucket %s: %v, LongBench-E %s", run, s.Subset, b.Bucket, b.Score, fmtPtr(want.E[b.Bucket]))
				}
			}
		}
	}
}

func TestScoreMatchesLongBenchV2(t *testing.T) {
	exp := readExpected(t)
	for _, run := range []string{"v2-dense.json", "v2-sparse.json"} {
		rep, _, _ := loadScore(t, "workload-v2", "data-v2", run)
		var want map[string]*float64
		if err := json.Unmarshal(exp[run]["longbench_v2"], &want); err != nil {
			t.Fatal(err)
		}
		var preds []*string
		json.Unmarshal(exp[run]["preds"], &preds)
		if len(rep.Subsets) != 1 {
			t.Fatalf("%s: %d subsets", run, len(rep.Subsets))
		}
		s := rep.Subsets[0]
		if !sameNum(s.Score, want["overall"]) {
			t.Errorf("%s: overall %v, LongBench %s", run, s.Score, fmtPtr(want["overall"]))
		}
		for _, b := range s.Buckets {
			if !sameNum(b.Score, want[b.Bucket]) {
				t.Errorf("%s %s: %v, LongBench %s", run, b.Bucket, b.Score, fmtPtr(want[b.Bucket]))
			}
		}
		var got []string
		for _, r := range rep.Requests {
			if !r.Skipped {
				got = append(got, r.Choice)
			}
		}
		if len(got) != len(preds) {
			t.Fatalf("%s: %d predictions kept, LongBench %d", run, len(got), len(preds))
		}
		for i, p := range preds {
			w := ""
			if p != nil {
				w = *p
			}
			if got[i] != w {
				t.Errorf("%s pred %d: %q, LongBench %q", run, i, got[i], w)
			}
		}
	}
}

// TestScoreDensePair is the dense/sparse pair: deltas are the differences
// of LongBench's own numbers, the bootstrap is deterministic and brackets
// the observed mean difference, and greedy agreement finds the outputs the
// fixture made identical.
func TestScoreDensePair(t *testing.T) {
	exp := readExpected(t)
	base, bg, w := loadScore(t, "workload", "data", "dense.json")
	run, rg, _ := loadScore(t, "workload", "data", "sparse.jsonl")
	o := BootstrapOptions{Resamples: 4000, Seed: 3}
	ds, err := ScoreDeltas(base, run, o)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := ScoreDeltas(base, run, o)
	other, _ := ScoreDeltas(base, run, BootstrapOptions{Resamples: 4000, Seed: 4})
	moved := false
	for i, d := range ds {
		if d != again[i] {
			t.Errorf("%s: bootstrap not deterministic: %+v vs %+v", d.Subset, d, again[i])
		}
		if d.Lo != other[i].Lo || d.Hi != other[i].Hi {
			moved = true
		}
		if !(float64(d.Lo) <= d.Mean+1e-9 && d.Mean <= float64(d.Hi)+1e-9) {
			t.Errorf("%s: CI [%v, %v] misses the mean difference %v", d.Subset, d.Lo, d.Hi, d.Mean)
		}
		if d.Subset == "overall" {
			continue
		}
		var b, r struct{ Score float64 }
		json.Unmarshal(exp["dense.json"][d.Subset], &b)
		json.Unmarshal(exp["sparse.jsonl"][d.Subset], &r)
		if float64(d.Baseline) != b.Score || float64(d.Run) != r.Score || float64(d.Delta) != pyRound(r.Score-b.Score, 2) {
			t.Errorf("%s: delta %v (%v -> %v), LongBench %v -> %v", d.Subset, d.Delta, d.Baseline, d.Run, b.Score, r.Score)
		}
		if d.Subset == "samsum" && (d.N != 1 || d.Lo != d.Hi || float64(d.Lo) != d.Mean || math.Abs(d.Mean+12.5) > 1e-6) {
			t.Errorf("samsum: one prompt must give the point interval -12.5, got %+v", d)
		}
		if d.Subset == "multifieldqa_zh" {
			t.Errorf("unsupported subset compared: %+v", d)
		}
	}
	if !moved {
		t.Error("another seed gave the same intervals everywhere")
	}
	if ds[len(ds)-1].Subset != "overall" || len(ds) != 11 {
		t.Fatalf("want 10 supported subsets + overall, got %d", len(ds))
	}

	a := GreedyAgreement(w, bg, rg, base, run, nil)
	identical := 0
	byID := map[string]string{}
	for k, id := range rg.CustomIDs {
		byID[id] = rg.Texts[k]
	}
	for i, p := range w.Prompts {
		if bg.Texts[i] == byID[p.CustomID] {
			identical++
		}
	}
	if a.Unit != "characters (Unicode code points)" || a.Compared != w.N() || a.Identical != identical || identical == 0 {
		t.Fatalf("agreement %s %d/%d, want %d/%d in characters", a.Unit, a.Identical, a.Compared, identical, w.N())
	}
	for _, d := range a.Requests {
		switch d.CustomID {
		case w.Prompts[7].CustomID: // "Answer: The Beatles" vs "Answer: the Rolling Stones\n..."
			if d.First != 8 {
				t.Errorf("triviaqa: first divergence %d, want 8", d.First)
			}
		case w.Prompts[4].CustomID: // "Yes, it is." vs "No."
			if d.First != 0 {
				t.Errorf("qasper: first divergence %d, want 0", d.First)
			}
		}
	}
	words := GreedyAgreement(w, bg, rg, base, run, wordEncoder{})
	if words.Unit != "Qwen3 tokens (re-encoded text)" || words.Identical != identical {
		t.Errorf("encoder path: %s %d", words.Unit, words.Identical)
	}
	for _, d := range words.Requests {
		if d.CustomID == w.Prompts[7].CustomID && d.First != 1 {
			t.Errorf("triviaqa in words: first divergence %d, want 1", d.First)
		}
	}
}

// wordEncoder stands in for the Qwen3 tokenizer: one id per space-separated word.
type wordEncoder struct{}

func (wordEncoder) Encode(s string) []int {
	var out []int
	for _, w := range strings.Fields(s) {
		h := 0
		for _, r := range w {
			h = h*31 + int(r)
		}
		out = append(out, h)
	}
	return out
}

func TestScoreV2TokenAgreement(t *testing.T) {
	base, bg, w := loadScore(t, "workload-v2", "data-v2", "v2-dense.json")
	run, rg, _ := loadScore(t, "workload-v2", "data-v2", "v2-sparse.json")
	a := GreedyAgreement(w, bg, rg, base, run, nil)
	if a.Unit != "token ids (recorded)" || a.Identical != 2 || a.Compared != 6 || a.MinDiv != 0 {
		t.Fatalf("%+v", a)
	}
	// "  The correct answer is D.\n" vs "The correct answer is (D)": the
	// fixture's ids are one per character, so they part at 0.
	if d := a.Requests[5]; d.Identical || d.First != 0 {
		t.Errorf("%+v", d)
	}
	if !base.Requests[4].Skipped || base.Subsets[0].N != 5 {
		t.Errorf("v2's empty output must be left out as pred.py does: %+v", base.Requests[4])
	}
}

func TestScoreMatching(t *testing.T) {
	w, err := ReadWorkload(filepath.Join(scoreDir, "workload-v2"))
	if err != nil {
		t.Fatal(err)
	}
	truths, _, err := LoadTruths(context.Background(), w, filepath.Join(scoreDir, "data-v2"))
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"The correct answer is (B)", "x", "x", "x", "x", "The correct answer is (D)"}
	lens := []int{}
	for _, p := range w.Prompts {
		lens = append(lens, p.PromptTokens)
	}
	// SGLang shuffles and names nothing: matched by the distinct lengths.
	perm := []int{5, 0, 1, 2, 3, 4}
	g := &Generations{Format: SGLangServe, Shuffled: true}
	for _, i := range perm {
		g.Texts = append(g.Texts, texts[i])
		g.InputLens = append(g.InputLens, lens[i])
	}
	rep, err := Score(w, truths, g)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requests[0].Choice != "B" || rep.Requests[5].Choice != "D" || !strings.Contains(rep.Matched, "prompt length") {
		t.Errorf("length matching: %+v %q", rep.Requests, rep.Matched)
	}
	g.InputLens[2] = 999999
	if _, err := Score(w, truths, g); !errors.Is(err, ErrScore) {
		t.Errorf("unknown length: %v", err)
	}
	// In order without ids: the count must match.
	if _, err := Score(w, truths, &Generations{Texts: texts[:5]}); !errors.Is(err, ErrScore) {
		t.Errorf("5 texts for 6 prompts: %v", err)
	}
	// A custom_id twice, or one not in the workload.
	ids := []string{}
	for _, p := range w.Prompts {
		ids = append(ids, p.CustomID)
	}
	dup := append([]string{}, ids...)
	dup[1] = dup[0]
	if _, err := Score(w, truths, &Generations{Texts: texts, CustomIDs: dup}); !errors.Is(err, ErrScore) {
		t.Errorf("duplicate custom_id: %v", err)
	}
	// Wrong data: another _id at the manifest's line.
	w2 := *w
	w2.Prompts = append([]Prompt{}, w.Prompts...)
	w2.Prompts[0].ID = "nope"
	if _, _, err := LoadTruths(context.Background(), &w2, filepath.Join(scoreDir, "data-v2")); err == nil || !strings.Contains(err.Error(), `wants "nope"`) {
		t.Errorf("wrong _id: %v", err)
	}
	w2.Prompts[0] = w.Prompts[0]
	w2.Sources = []Source{{Subset: "longbench_v2", SHA256: strings.Repeat("0", 64)}}
	if _, _, err := LoadTruths(context.Background(), &w2, filepath.Join(scoreDir, "data-v2")); err == nil || !strings.Contains(err.Error(), "was built from") {
		t.Errorf("wrong sha256: %v", err)
	}
}

func TestReadGenerationsNoTexts(t *testing.T) {
	for _, f := range []string{"vllm-serve.json", "vllm-throughput.json", "sglang-offline.jsonl", "vllm-offline-goldset.json"} {
		if _, err := ReadGenerations(filepath.Join("testdata", f), -1); !errors.Is(err, ErrNoTexts) {
			t.Errorf("%s: %v, want ErrNoTexts", f, err)
		}
	}
	g, err := ReadGenerations(filepath.Join("testdata", "vllm-serve-detailed.json"), -1)
	if err != nil || len(g.Texts) != 4 {
		t.Fatalf("detailed vLLM: %v", err)
	}
	if _, err := ReadResult(filepath.Join(scoreDir, "sparse.jsonl"), -1); err == nil || !strings.Contains(err.Error(), "run-batch") {
		t.Errorf("run-batch in check/report: %v", err)
	}
}

// The Qwen3 tokenizer path of greedy agreement (skipped without the
// tokenizer; .ci/run installs it): identical texts stay identical, and the
// triviaqa pair that parts at character 8 parts at a token before it.
func TestScoreAgreementQwen3(t *testing.T) {
	tok, err := tokenizer.Load(testenv.Qwen3TokenizerPath(t))
	if err != nil {
		t.Fatal(err)
	}
	base, bg, w := loadScore(t, "workload", "data", "dense.json")
	run, rg, _ := loadScore(t, "workload", "data", "sparse.jsonl")
	chars := GreedyAgreement(w, bg, rg, base, run, nil)
	toks := GreedyAgreement(w, bg, rg, base, run, tok)
	if toks.Unit != "Qwen3 tokens (re-encoded text)" || toks.Identical != chars.Identical || toks.Compared != chars.Compared {
		t.Fatalf("tokens %+v vs chars %d/%d", toks, chars.Identical, chars.Compared)
	}
	for _, d := range toks.Requests {
		if d.CustomID == w.Prompts[7].CustomID && (d.First <= 0 || d.First >= 8) {
			t.Errorf("triviaqa: first divergence at token %d, want in (0, 8)", d.First)
		}
	}
}
