package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/goldset/goldset/manifests"
)

// TestWorkHandChecked builds one small case per op and compares its
// recorded work with numbers worked out by hand from docs/spec.md §13 (the
// arithmetic is in each row's comment). The cases are chosen so that the
// data-dependent counts are known without running the golden: k at least
// the number of blocks (quest, DSA attention select every valid token),
// topk = e (every expert routed), skip_frac 0.2 of 35 slots = 7 skipped.
func TestWorkHandChecked(t *testing.T) {
	cases := []struct {
		op, params string
		want       manifests.Work
	}{
		// 4 real tokens (rows q_len 1 over 5, q_len 3 over 6), 2+2 pages,
		// 11 tokens: query 4*4*8*2 + seq_lens 8 + query_start_loc 12 + 4*4 +
		// 2*11*(1*8*2) = 644; out 4*4*8*2 + lse 4*4*4 = 320; attended
		// 1*4+1 + 3*3+6 = 20 pairs: 4*20*4*8. Graph padding to 8 tokens and
		// zero-length rows adds nothing.
		{"unified_attention", `{"hq": 4, "hkv": 1, "d": 8, "bs": 4, "dtype": "bfloat16", "graph_pad": true, "rows": [{"q_len": 1, "context": 5}, {"q_len": 3, "context": 6}]}`, manifests.Work{BytesRead: 644, BytesWritten: 320, Flops: 2560, FlopDType: "bfloat16"}},
		// A 3x37 + B 37x5 fp16 = (111+185)*2; C 15*2; 2*3*37*5.
		{"matmul", `{"m": 3, "k": 37, "n": 5, "dtype": "float16"}`, manifests.Work{BytesRead: 592, BytesWritten: 30, Flops: 1110, FlopDType: "float16"}},
		// x 2700*2; y 5400 + row_max, row_sum 9*4*2; 4*2700.
		{"softmax", `{"m": 9, "n": 300, "dtype": "float16"}`, manifests.Work{BytesRead: 5400, BytesWritten: 5472, Flops: 10800, FlopDType: "float32"}},
		// 28 of 35 slots written: slot_mapping 35*4 + 2*28*(2*16*2); 2*28*64.
		{"reshape_and_cache", `{"t": 40, "t_s": 35, "hkv": 2, "d": 16, "bs": 4, "nb": 30, "dtype": "float16", "skip_frac": 0.2}`, manifests.Work{BytesRead: 3724, BytesWritten: 3584, FlopDType: "float16"}},
		// 23 tokens, 19 distinct (sequences 0 and 1 share a full block of 4),
		// 1+2+1+4 = 8 pages: query 4*8*16*2 + lens 16 + 8*4 + 2*19*(2*16*2);
		// out 1024 + lse 128; 4*23*8*16.
		{"paged_attention", `{"hq": 8, "hkv": 2, "d": 16, "bs": 4, "dtype": "bfloat16", "context_lens": [4, 5, 1, 13], "shared_blocks": 1}`, manifests.Work{BytesRead: 3504, BytesWritten: 1152, Flops: 11776, FlopDType: "bfloat16"}},
		// 11 tokens, 3 pages (maxb 3), k = 2 selects every block: 44
		// attended (head, token) pairs, 22 (KV head, token) values.
		// Read: query 2*4*8*2 + lens 8 + 3*4 + K 11*16*2 + V 22*8*2 = 852.
		// Written: scores 2*4*3*4 + selected 2*4*2*4 + out 128 + lse 32 +
		// kmax, kmin 2*3*16*2 = 512. Flops: 2*11*16 + 4*8*4*3 + 4*8*44.
		{"quest", `{"hq": 4, "hkv": 2, "d": 8, "bs": 4, "dtype": "float16", "context_lens": [3, 8], "k": 2}`, manifests.Work{BytesRead: 852, BytesWritten: 512, Flops: 2144, FlopDType: "float16"}},
		// block_table 2*2*4 + seq_lens 2*4; header 3 pages * 2 * 4.
		{"block_header", `{"seq_lens": [70, 5]}`, manifests.Work{BytesRead: 24, BytesWritten: 24, FlopDType: "int32"}},
		// k = 16 >= L = 10: 10 selected, 10 slots. q_nope 2*8*2 + q_pe 2*4*2
		// + indices 16*4 + table 4 + lens 4 + 10*(8+4)*2; out 32 + lse 8 +
		// header 8; 10*2*(4*8 + 2*4).
		{"dsa_sparse_attention", `{"seq_lens": [10], "h": 2, "dc": 8, "dr": 4, "k": 16, "index_hi": 2, "index_di": 8}`, manifests.Work{BytesRead: 360, BytesWritten: 48, Flops: 800, FlopDType: "bfloat16"}},
		// 10 slots: slot_mapping 40 + 10*16*2; 10*(16+4); 2*10*16.
		{"dsa_index_cache", `{"t": 10, "di": 16, "nb": 1}`, manifests.Work{BytesRead: 360, BytesWritten: 200, Flops: 320, FlopDType: "bfloat16"}},
		// 70 keys, 2 pages, 70 scored: q 2*16 + weights 2*4 + lens 4 +
		// 70*(16+4) + 2*4; logits 128*4 + topk 2*8*4 + header 2*2*4;
		// 70*2*(2*16+2).
		{"dsa_indexer", `{"seq_lens": [70], "hi": 2, "di": 16, "k": 8}`, manifests.Work{BytesRead: 1452, BytesWritten: 592, Flops: 4760, FlopDType: "float8_e4m3fn"}},
		// x 2*64*2; codes 2*32 + scales 2*2; 2*128.
		{"mxfp4_quantize", `{"rows": 2, "k": 64, "dtype": "bfloat16"}`, manifests.Work{BytesRead: 256, BytesWritten: 68, Flops: 256, FlopDType: "float32"}},
		// codes 64 + scales 4; y 2*64*4; 128.
		{"mxfp4_dequantize", `{"rows": 2, "k": 64, "dtype": "float32"}`, manifests.Work{BytesRead: 68, BytesWritten: 512, Flops: 128, FlopDType: "float32"}},
		// codes 64 + scales 4; fp8 128 + scale 4 + scale_f32 16 + inexact 4.
		{"mxfp4_to_fp8", `{"rows": 2, "k": 64}`, manifests.Work{BytesRead: 68, BytesWritten: 152, Flops: 128, FlopDType: "float32"}},
		// x 2*64*2 + w_codes 3*32 + w_scales 3*2; y 2*3*2; 2*2*3*64.
		{"mxfp4_gemm", `{"m": 2, "n": 3, "k": 64}`, manifests.Work{BytesRead: 358, BytesWritten: 12, Flops: 768, FlopDType: "bfloat16"}},
		// x_codes 2*32 + x_scales 2*2 + w 102; y 12; 768.
		{"mxfp4_gemm_a4w4", `{"m": 2, "n": 3, "k": 64}`, manifests.Work{BytesRead: 170, BytesWritten: 12, Flops: 768, FlopDType: "float4_e2m1fn_x2"}},
		// topk = e = 2: both experts, 4 pairs. Per expert 2i*hd/2 + 2i +
		// 2i*2 + hd*i/2 + hd + hd*2 = 1024+64+128+512+32+64 = 1824; x 128 +
		// router 16; out 128; 6*4*32*32.
		{"mxfp4_moe", `{"t": 2, "hd": 32, "i": 32, "e": 2, "topk": 2}`, manifests.Work{BytesRead: 3792, BytesWritten: 128, Flops: 24576, FlopDType: "bfloat16"}},
	}
	var rc []string
	for i, c := range cases {
		rc = append(rc, fmt.Sprintf(`{"id": "w%d", "op": %q, "split": "public", "params": %s}`, i, c.op, c.params))
	}
	r, err := manifests.ParseRecipe("work", []byte(`{"name": "work", "version": "1", "spec_version": 1, "seed": 3, "cases": [`+strings.Join(rc, ",")+`]}`))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Build(context.Background(), r, HashSink{}, Options{Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, c := range cases {
		seen[c.op] = true
		got := m.Cases[i].Work
		if got == nil || *got != c.want {
			t.Errorf("%s %s: work %+v, want %+v", c.op, c.params, got, c.want)
		}
	}
	// Every op has a formula and a hand-checked case here, except the
	// w4a8 variant (mxGEMMWork with x_fp8, shared with a4w4 above).
	for _, name := range Ops() {
		if opTable[name].work == nil {
			t.Errorf("op %s has no work formula", name)
		}
		if !seen[name] && name != "mxfp4_gemm_w4a8" {
			t.Errorf("op %s has no hand-checked work case", name)
		}
	}
}

// TestWorkEveryCase: every case of the tiny recipes records work, and the
// tensor bytes do not depend on it (work is metadata beside them).
func TestWorkEveryCase(t *testing.T) {
	for _, r := range []*manifests.Recipe{tiny(t), tinyDSA(t), tinyPipeline(t)} {
		m, err := Build(context.Background(), r, HashSink{}, Options{Jobs: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range m.Cases {
			if c.Work == nil || c.Work.BytesRead <= 0 || c.Work.BytesWritten <= 0 {
				t.Errorf("%s/%s: work %+v", r.Name, c.ID, c.Work)
			}
			b, _ := json.Marshal(c.Work)
			if !strings.Contains(string(b), `"bytes_read"`) {
				t.Errorf("%s: work JSON %s", c.ID, b)
			}
		}
	}
}

// TestWorkPipelineHandChecked: a pipeline's stage cases carry their own
// op's work (docs/spec.md §13, §14), worked out by hand for two requests
// of prompts 6 and 3 tokens in blocks of 4 (hq 2, hkv 1, d 4, bf16):
// step 0 prefills both (rows q 6 and 3 over no context), step 1 decodes
// one token of each (contexts 6 and 3); the DSA chain runs the same
// requests in pages of 64. A cache input that is the previous stage's
// golden file is read by the stage's kernel and counts.
func TestWorkPipelineHandChecked(t *testing.T) {
	common := `"hq": 2, "hkv": 1, "d": 4, "dtype": "bfloat16", "schedule": {"max_num_batched_tokens": 64, "block_size": 4, "num_blocks": 16}, "requests": {"prompts": [6, 3], "outputs": [3, 3]}, "start": "index"`
	r, err := manifests.ParseRecipe("w", []byte(`{"name": "w", "version": "1", "spec_version": 1, "seed": 3, "cases": [
	 {"id": "p", "op": "pipeline", "split": "public", "params": {"chain": "paged", `+common+`, "start_step": 0, "steps": 2}},
	 {"id": "q", "op": "pipeline", "split": "public", "params": {"chain": "quest", "k": 2, `+common+`, "start_step": 1, "steps": 1}},
	 {"id": "d", "op": "pipeline", "split": "public", "params": {"chain": "dsa", "h": 2, "dc": 8, "dr": 4, "hi": 2, "di": 8, "k": 64, "schedule": {"max_num_batched_tokens": 64, "block_size": 64, "num_blocks": 4}, "requests": {"prompts": [6, 3], "outputs": [3, 3]}, "start": "index", "start_step": 1, "steps": 1}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Build(context.Background(), r, HashSink{}, Options{Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]manifests.Work{
		// 9 slots: slot_mapping 9*4 + 2*9*(1*4*2); 2*9*8.
		"p.s0.reshape_and_cache": {BytesRead: 180, BytesWritten: 144, FlopDType: "bfloat16"},
		// query 9*2*4*2 + seq_lens 8 + query_start_loc 12 + pages (2+1)*4
		// + 2*9*8 = 320; out+lse 9*2*(8+4) = 216; attended 21 + 6 = 27:
		// 4*27*2*4.
		"p.s0.unified_attention": {BytesRead: 320, BytesWritten: 216, Flops: 864, FlopDType: "bfloat16"},
		// 2 slots: 8 + 2*2*8; 32.
		"p.s1.reshape_and_cache": {BytesRead: 40, BytesWritten: 32, FlopDType: "bfloat16"},
		// query 2*2*4*2 + 8 + 12 + pages (2+1)*4 + 2*(7+4)*8 = 240; out+lse
		// 2*2*12 = 48; attended 7 + 4 = 11: 4*11*2*4.
		"p.s1.unified_attention": {BytesRead: 240, BytesWritten: 48, Flops: 352, FlopDType: "bfloat16"},
		"q.s1.reshape_and_cache": {BytesRead: 40, BytesWritten: 32, FlopDType: "bfloat16"},
		// Decode rows of 7 and 4 tokens, 3 pages, k = 2 selects every
		// block: read query 32 + context_lens 8 + 3*4 + K 11*4*2 + V
		// 11*4*2 = 228; written scores 2*2*2*4 + selected 2*2*2*4 + out 32
		// + lse 16 + kmax, kmin 2*3*4*2 = 160; flops 2*11*4 + 4*4*2*3 +
		// 4*4*(2*11) = 536.
		"q.s1.quest": {BytesRead: 228, BytesWritten: 160, Flops: 536, FlopDType: "bfloat16"},
		// The DSA chain at step 1 (pages of 64, 4 blocks; hi 2, di 8, h
		// 2, dc 8, dr 4): 2 index keys: slot_mapping 8 + 2*8*2; 2*(8+4);
		// 2*2*8.
		"d.s1.dsa_index_cache": {BytesRead: 40, BytesWritten: 24, Flops: 32, FlopDType: "bfloat16"},
		// Decode rows of 7 and 4 keys, a page each: q 2*2*8 + weights
		// 2*2*4 + seq_lens 8 + 11*(8+4) + 2*4 = 196; logits and both
		// topk [2, 1, 64] 3*512 + block_header 4*2*4 = 1568; 11 scored
		// keys: 11*2*(2*8+2).
		"d.s1.dsa_indexer": {BytesRead: 196, BytesWritten: 1568, Flops: 396, FlopDType: "float8_e4m3fn"},
		// k = 64 keeps all 11 keys: q_nope 2*2*8*2 + q_pe 2*2*4*2 +
		// sparse_indices 2*64*4 + block_table 8 + seq_lens 8 + 11*(8+4)*2
		// = 888; out 64 + lse 16 + header 32; 11*2*(4*8+2*4).
		"d.s1.dsa_sparse_attention": {BytesRead: 888, BytesWritten: 112, Flops: 880, FlopDType: "bfloat16"},
	}
	if len(m.Cases) != len(want) {
		t.Fatalf("%d cases, want %d", len(m.Cases), len(want))
	}
	for _, c := range m.Cases {
		w, ok := want[c.ID]
		if !ok {
			t.Errorf("unexpected case %s", c.ID)
			continue
		}
		if c.Work == nil || *c.Work != w {
			t.Errorf("%s: work %+v, want %+v", c.ID, c.Work, w)
		}
	}
}
