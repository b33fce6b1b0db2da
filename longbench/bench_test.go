package longbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func synthJSONL(records, ctxBytes int) []byte {
	var b bytes.Buffer
	word := "lorem “ipsum” dolor é sit amet\n"
	ctx := strings.Repeat(word, ctxBytes/len(word))
	for i := 0; i < records; i++ {
		line, _ := json.Marshal(map[string]any{"input": "question?", "context": ctx, "answers": []string{"a"}, "length": 12345,
			"dataset": "qasper", "language": "en", "all_classes": nil, "_id": fmt.Sprintf("%048d", i)})
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func BenchmarkScan(b *testing.B) {
	data := synthJSONL(64, 128<<10) // ~9 MB
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		_, err := Scan(context.Background(), bytes.NewReader(data), "bench.jsonl", "qasper", ReadOptions{}, func(*Record) error { n++; return nil })
		if err != nil || n != 64 {
			b.Fatal(err, n)
		}
	}
}

func sampleOptions(dir string) (BuildOptions, int64) {
	subsets := []string{"qasper", "multifieldqa_en", "hotpotqa", "gov_report"}
	var total int64
	for _, s := range subsets {
		if st, err := os.Stat(SubsetPath(dir, s)); err == nil {
			total += st.Size()
		}
	}
	return BuildOptions{DataDir: dir, Subsets: subsets, N: 5, Seed: 1, Prompt: PromptOptions{NoThinking: true}, Model: "Qwen/Qwen3-8B"}, total
}

func benchBuild(b *testing.B, tok Tokenizer) {
	dir := sampleDir(b)
	opts, total := sampleOptions(dir)
	root := b.TempDir()
	b.SetBytes(total)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		opts.Out = filepath.Join(root, fmt.Sprint(i))
		i++
		if _, err := Build(context.Background(), opts, tok, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// End-to-end Build on the sample with the byte-level toy tokenizer.
func BenchmarkBuildSample(b *testing.B) { benchBuild(b, byteTok{}) }

func BenchmarkSelect(b *testing.B) {
	lengths := synthLengths(5000, 3)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Select(lengths, 1000, SelectOptions{Seed: 1, TargetMean: 8000}); err != nil {
			b.Fatal(err)
		}
	}
}
