package suite

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/goldset/goldset/gen"
	"github.com/goldset/goldset/golden"

	"github.com/goldset/goldset/manifests"
)

// BenchmarkBuild measures whole cases (generation, golden, encoding and
// sha256; no disk) with SetBytes = the bytes of tensors produced.
func BenchmarkBuild(b *testing.B) {
	lens := `[8192, 4096, 12000, 6000]`
	for _, bc := range []struct{ name, op, params string }{
		{"matmul-512x4096x1024-bf16", "matmul", `{"m": 512, "k": 4096, "n": 1024, "dtype": "bfloat16", "b_layout": "NK"}`},
		{"softmax-64x32768-fp16", "softmax", `{"m": 64, "n": 32768, "dtype": "float16", "outlier_rows": 3}`},
		{"reshape_and_cache-nb1024-fp16", "reshape_and_cache", `{"t": 4096, "hkv": 8, "d": 128, "bs": 128, "nb": 1024, "dtype": "float16", "skip_frac": 0.05}`},
		{"paged_attention-qwen3-4seq-bf16", "paged_attention", `{"hq": 32, "hkv": 8, "d": 128, "bs": 128, "dtype": "bfloat16", "context_lens": ` + lens + `}`},
		{"quest-qwen3-4seq-k32-bf16", "quest", `{"hq": 32, "hkv": 8, "d": 128, "bs": 128, "dtype": "bfloat16", "context_lens": ` + lens + `, "k": 32}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := &manifests.Recipe{Name: "bench", Version: "1", SpecVersion: 1, Cases: []manifests.RecipeCase{{ID: "c", Op: bc.op, Split: "public", Params: json.RawMessage(bc.params)}}}
			var bytes int64
			b.ReportAllocs()
			for b.Loop() {
				m, err := Build(context.Background(), r, HashSink{}, Options{Jobs: 1})
				if err != nil {
					b.Fatal(err)
				}
				bytes = 0
				for _, t := range m.Cases[0].Tensors {
					bytes += t.Bytes
				}
			}
			b.SetBytes(bytes)
		})
	}
}

// BenchmarkDrawMXWeights: one gpt-oss W1 expert [5760, 2880] drawn as
// MXFP4 codes and scale bytes (bytes: the codes and scales written).
func BenchmarkDrawMXWeights(b *testing.B) {
	const rows, k = 5760, 2880
	codes, scales := make([]byte, rows*k/2), make([]byte, rows*k/golden.MXBlock)
	cs, ss := gen.NewStream(1, "b", "w_codes"), gen.NewStream(1, "b", "w_scales")
	b.SetBytes(int64(len(codes) + len(scales)))
	b.ReportAllocs()
	for b.Loop() {
		drawMXWeights(cs, ss, codes, scales, 0, golden.ScaleRceil, 1/math.Sqrt(k))
	}
}
