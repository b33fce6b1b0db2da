package tokenizer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// benchText is the concatenated contexts of the raw LongBench sample lines
// (about 330 KB of English prose).
func benchText(b *testing.B) string {
	dir := sharedData(b)
	var sb strings.Builder
	for _, sub := range subsets {
		for _, r := range readJSONL[longbenchRecord](b, filepath.Join(dir, sub+".jsonl")) {
			sb.WriteString(r.Context)
		}
	}
	return sb.String()
}

// reportCPURate adds MB per CPU-second (user+system) since start: on a
// loaded machine wall-clock MB/s understates single-core speed.
func reportCPURate(b *testing.B, start time.Duration, bytes int) {
	if cpu := processCPU() - start; cpu > 0 {
		b.ReportMetric(float64(bytes)*float64(b.N)/cpu.Seconds()/1e6, "MB/cpu-s")
	}
}

func BenchmarkEncode(b *testing.B) {
	tk := qwen3(b)
	text := benchText(b)
	tk.Encode(text) // warm the word cache, as in steady use
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	start := processCPU()
	for b.Loop() {
		tk.Encode(text)
	}
	reportCPURate(b, start, len(text))
}

// BenchmarkEncodeColdCache empties the word cache before every pass.
func BenchmarkEncodeColdCache(b *testing.B) {
	tk := qwen3(b)
	text := benchText(b)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	start := processCPU()
	for b.Loop() {
		tk.model.cache.clear()
		tk.Encode(text)
	}
	reportCPURate(b, start, len(text))
}

func BenchmarkEncodeParallel(b *testing.B) {
	tk := qwen3(b)
	text := benchText(b)
	tk.Encode(text)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tk.Encode(text)
		}
	})
}

func BenchmarkPreTokenize(b *testing.B) {
	text := benchText(b)
	for _, bc := range []struct {
		name string
		s    splitter
	}{{"hand", qwenSplitter{onig: true}}, {"regexp2", qwenRegexp2}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			start := processCPU()
			for b.Loop() {
				bc.s.split(text, func(string) {})
			}
			reportCPURate(b, start, len(text))
		})
	}
}

func BenchmarkLoad(b *testing.B) {
	benchQwen3File(b, func(data []byte) error { _, err := FromJSON(data); return err })
}

// benchQwen3File times f on the bytes of Qwen3's tokenizer.json, in CPU
// time too (the machine may be shared); it skips when the file is absent.
func benchQwen3File(b *testing.B, f func([]byte) error) {
	qwen3(b)
	data, err := os.ReadFile(qwen3Path())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	start := processCPU()
	for b.Loop() {
		if err := f(data); err != nil {
			b.Fatal(err)
		}
	}
	if cpu := processCPU() - start; cpu > 0 {
		b.ReportMetric(cpu.Seconds()*1e3/float64(b.N), "cpu-ms/op")
	}
}
