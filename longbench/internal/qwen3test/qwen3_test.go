package qwen3test

import (
	"bufio"
	"context"
	"encoding/json"
	"github.com/goldset/goldset/internal/testenv"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	. "github.com/goldset/goldset/longbench"
	"github.com/goldset/goldset/longbench/tokenizer"
)

var (
	qwen3Once sync.Once
	qwen3Tok  *tokenizer.Tokenizer
	qwen3Err  error
)

// qwen3Tokenizer loads the real Qwen3 tokenizer, or skips (fails when
// GOLDSET_REQUIRE_TOOLS=1, or when the file exists but does not load).
func qwen3Tokenizer(tb testing.TB) *tokenizer.Tokenizer {
	tb.Helper()
	p := testenv.Qwen3TokenizerPath(tb)
	qwen3Once.Do(func() { qwen3Tok, qwen3Err = tokenizer.Load(p) })
	if qwen3Err != nil {
		tb.Fatal(qwen3Err)
	}
	return qwen3Tok
}

type spectralKVLine struct {
	UID          string `json:"uid"`
	Dataset      string `json:"dataset"`
	SourceID     string `json:"source_id"`
	MaxNewTokens int    `json:"max_new_tokens"`
	InputIDs     []int  `json:"input_ids"`
	PromptTokens int    `json:"prompt_tokens"`
	PromptSHA256 string `json:"prompt_sha256"`
}

// The sample README's recipe, end to end: from
// qwen3/<subset>.reconstructed.jsonl goldset must produce exactly the
// input_ids of qwen3/<subset>.jsonl.
func TestQwen3ReproducesSpectralKV(t *testing.T) {
	tok := qwen3Tokenizer(t)
	dir := sampleDir(t)
	cfg, err := LoadConfig(filepath.Join(dir, "config"))
	if err != nil {
		t.Fatal(err)
	}
	pr, err := NewPrompter(cfg, tok, SpectralKVRecipe())
	if err != nil {
		t.Fatal(err)
	}
	for _, subset := range []string{"gov_report", "hotpotqa", "multifieldqa_en", "qasper"} {
		t.Run(subset, func(t *testing.T) {
			want := readSpectralKV(t, filepath.Join(dir, "qwen3", subset+".jsonl"))
			var got []Prompt
			_, err := ReadFile(context.Background(), filepath.Join(dir, "qwen3", subset+".reconstructed.jsonl"), subset, ReadOptions{},
				func(r *Record) error {
					p, err := pr.Build(r)
					got = append(got, p)
					return err
				})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 {
				t.Fatalf("%d reconstructed records", len(got))
			}
			p := got[0]
			if p.ID != want.SourceID || p.Subset+"-"+p.ID != want.UID || p.MaxNewTokens != want.MaxNewTokens || p.Truncated || !p.Chat {
				t.Errorf("prompt meta %s %s max_new %d truncated %v chat %v; want %s max_new %d", p.Subset, p.ID, p.MaxNewTokens, p.Truncated, p.Chat, want.UID, want.MaxNewTokens)
			}
			if p.SHA256() != want.PromptSHA256 {
				t.Errorf("prompt sha256 %s, want %s", p.SHA256(), want.PromptSHA256)
			}
			if len(p.IDs) != want.PromptTokens || len(p.IDs) != len(want.InputIDs) {
				t.Fatalf("%d tokens, want %d", len(p.IDs), want.PromptTokens)
			}
			for i := range p.IDs {
				if p.IDs[i] != want.InputIDs[i] {
					t.Fatalf("token %d: %d, want %d", i, p.IDs[i], want.InputIDs[i])
				}
			}
			// README: len(input_ids) = len(encode(prompt)) + 12 for these records.
			if p.RawTokens+12 != len(p.IDs) {
				t.Errorf("raw %d + 12 != %d", p.RawTokens, len(p.IDs))
			}
		})
	}
}

func readSpectralKV(t *testing.T, path string) spectralKVLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	if !sc.Scan() {
		t.Fatalf("%s: empty: %v", path, sc.Err())
	}
	var l spectralKVLine
	if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
		t.Fatal(err)
	}
	return l
}

// Middle truncation with the real tokenizer: budgets below the prompt length
// cut it to 2*half tokens of decoded text.
func TestQwen3Truncation(t *testing.T) {
	tok := qwen3Tokenizer(t)
	dir := sampleDir(t)
	cfg, err := LoadConfig(filepath.Join(dir, "config"))
	if err != nil {
		t.Fatal(err)
	}
	pr, _ := NewPrompter(cfg, tok, PromptOptions{MaxLen: 2001, NoThinking: true})
	var p Prompt
	_, err = ReadSubset(context.Background(), dir, "hotpotqa", ReadOptions{}, func(r *Record) error {
		p, err = pr.Build(r)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Truncated || p.RawTokens <= 2001 {
		t.Fatalf("raw %d truncated %v", p.RawTokens, p.Truncated)
	}
	// Re-encoding decoded halves may merge a few tokens at the seam.
	if n := len(p.IDs) - 16; n < 1990 || n > 2000 {
		t.Errorf("%d tokens after truncation and chat template", len(p.IDs))
	}
}

// Build on the raw sample with the real tokenizer: byte-identical twice.
func TestQwen3BuildSample(t *testing.T) {
	if testing.Short() {
		t.Skip("tokenizes ~350 KB twice")
	}
	tok := qwen3Tokenizer(t)
	dir := sampleDir(t)
	root := t.TempDir()
	var outs []map[string][]byte
	for i := 0; i < 2; i++ {
		opts := BuildOptions{DataDir: dir, Subsets: []string{"qasper", "multifieldqa_en", "hotpotqa", "gov_report"},
			N: 5, TargetMean: 10000, Seed: 3, Out: filepath.Join(root, string(rune('a'+i))), Prompt: PromptOptions{NoThinking: true}, Workers: i + 1, Model: "Qwen/Qwen3-8B"}
		res, err := Build(context.Background(), opts, tok, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Manifest.Tokenizer.SHA256 != tok.SHA256() || len(tok.SHA256()) != 64 {
			t.Errorf("tokenizer sha %q", res.Manifest.Tokenizer.SHA256)
		}
		outs = append(outs, readDir(t, opts.Out))
	}
	for name, b := range outs[0] {
		if string(b) != string(outs[1][name]) {
			t.Errorf("%s differs between runs", name)
		}
	}
}

// sampleDir locates the shared LongBench v1 sample, or skips.
func sampleDir(tb testing.TB) string { return testenv.LongBenchSample(tb) }

func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = b
	}
	return m
}

// End-to-end Build on the sample with the real Qwen3 tokenizer.
func BenchmarkBuildSampleQwen3(b *testing.B) {
	tok := qwen3Tokenizer(b)
	dir := sampleDir(b)
	subsets := []string{"qasper", "multifieldqa_en", "hotpotqa", "gov_report"}
	var total int64
	for _, s := range subsets {
		if st, err := os.Stat(SubsetPath(dir, s)); err == nil {
			total += st.Size()
		}
	}
	opts := BuildOptions{DataDir: dir, Subsets: subsets, N: 5, Seed: 1, Prompt: PromptOptions{NoThinking: true}, Model: "Qwen/Qwen3-8B"}
	root := b.TempDir()
	b.SetBytes(total)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		opts.Out = filepath.Join(root, strconv.Itoa(i))
		i++
		if _, err := Build(context.Background(), opts, tok, nil); err != nil {
			b.Fatal(err)
		}
	}
}
