package serving

import (
	"strings"
	"testing"

	"github.com/goldset/goldset/serving/servingtest"
)

// TestQwen3HandCheck: Qwen3-8B in bf16 keeps 2 (K, V) x 36 layers x 8 KV
// heads x 128 x 2 bytes = 147456 B = 144 KiB per token, 5.625 GiB at 40960.
func TestQwen3HandCheck(t *testing.T) {
	for _, tc := range []struct {
		model      string
		perToken   int64
		at40960GiB float64
	}{
		{"qwen3-8b", 144 << 10, 5.625},
		{"qwen3-14b", 160 << 10, 6.25}, // 2*40*8*128*2
		{"qwen3-32b", 256 << 10, 10.0}, // 2*64*8*128*2
	} {
		m, err := LoadModel(tc.model)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.KVBytesPerToken(); got != tc.perToken {
			t.Errorf("%s: %d B per token, want %d", tc.model, got, tc.perToken)
		}
		s, err := Size(m, nil, SizeOptions{KVBudget: 60 << 30})
		if err != nil {
			t.Fatal(err)
		}
		if got := float64(s.BytesAtContext) / (1 << 30); got != tc.at40960GiB || s.ContextLen != 40960 {
			t.Errorf("%s: %g GiB at %d tokens, want %g at 40960", tc.model, got, s.ContextLen, tc.at40960GiB)
		}
	}
}

// TestSizeHandComputed checks every figure of a small case by hand.
func TestSizeHandComputed(t *testing.T) {
	m := ModelConfig{Name: "tiny", Layers: 2, QHeads: 4, KVHeads: 2, HeadDim: 4, DType: "float16", MaxContext: 100}
	// per token: 2*2*2*4*2 = 64 B; block 16 tokens: 1024 B.
	w := mustWorkload(t, []byte(`{"prompts": [
		{"custom_id": "a", "prompt_tokens": 30, "max_new_tokens": 3, "prompt_sha256": "x"},
		{"custom_id": "b", "prompt_tokens": 10, "max_new_tokens": 6, "prompt_sha256": "y"},
		{"custom_id": "c", "prompt_tokens": 60, "max_new_tokens": 5, "prompt_sha256": "z"}],
		"recipe": {"context_len": 100}}`))
	s, err := Size(m, w, SizeOptions{KVBudget: 5 * 1024, BlockSize: 16, QuestK: []int{2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	// a: 33 tokens -> 3 blocks; b: 16 -> 1; c: 65 -> 5. 9 blocks, 9216 B.
	if s.BytesPerToken != 64 || s.BytesPerBlock != 1024 || s.Workload.Blocks != 9 || s.Workload.KVBytes != 9216 ||
		s.Workload.MaxBlocks != 5 || s.Workload.Tokens != 114 || s.Prompts[0].Blocks != 3 || s.Prompts[0].PromptBlocks != 2 {
		t.Errorf("workload: %+v prompts %+v", s.Workload, s.Prompts)
	}
	// Budget 5 blocks: longest context 80 tokens; 100-token contexts need 7
	// blocks: 0 fit; the longest first: c (5) fits, then b? 5+3 > 5 stops:
	// worst case 1; mean 3 blocks -> 1.
	b := s.Budget
	if b.Blocks != 5 || b.LongestContext != 80 || b.ConcurrencyAtContext != 0 || b.ConcurrencyWorstCase != 1 || b.ConcurrencyMean != 1 || b.WholeWorkloadFits {
		t.Errorf("budget: %+v", b)
	}
	// Quest at L = 100, block 16: nb = 7, last block 4 tokens. K = 2: the
	// two anchors, 16 + 4 = 20 tokens. Per layer one token of K+V is
	// 2*2*4*2 = 32 B: dense 2*100*32 = 6400; selected 2*20*32 = 1280;
	// metadata 2 layers * 7 blocks * kmax+kmin (2*2*4*2 = 32 B) = 448.
	q := s.Quest[0]
	if q.DenseReadBytes != 6400 || q.SelectedReadBytes != 1280 || q.MetadataReadBytes != 448 || q.QuestReadBytes != 1728 {
		t.Errorf("quest K=2: %+v", q)
	}
	// q_head upper bound: G = 2 query heads per KV head, up to 4 blocks:
	// 3*16 + 4 = 52 tokens: 2*52*32 + 448 = 3776.
	if q.QHeadUpperReadBytes != 3776 {
		t.Errorf("q_head upper %d, want 3776", q.QHeadUpperReadBytes)
	}
	// Workspace: q_head 4 heads x (7 float32 scores + 2 int32) = 144 B;
	// kv_group_sum 2 x (7 + 2) x 4 = 72 B.
	if q.WorkspaceQHead != 144 || q.WorkspaceKVGroupSum != 72 {
		t.Errorf("workspace %d %d", q.WorkspaceQHead, q.WorkspaceKVGroupSum)
	}
	// Workload means at full lengths 33, 16, 65 with K = 2:
	// dense (33+16+65)*64/3 = 2432; Quest: a nb 3 last 1 -> 17 tokens,
	// b nb 1 -> all 16, c nb 5 last 1 -> 17; (17+16+17)*64 = 3200 plus
	// metadata (3+1+5)*64 = 576 -> 3776/3.
	if q.WorkloadDenseRead != 2432 || q.WorkloadQuestRead != 3776.0/3 || q.MetadataBytesWorkload != 576 {
		t.Errorf("workload quest: dense %g quest %g meta %d", q.WorkloadDenseRead, q.WorkloadQuestRead, q.MetadataBytesWorkload)
	}
	// K >= nb reads everything plus the metadata.
	s2, _ := Size(m, nil, SizeOptions{KVBudget: 1 << 20, BlockSize: 16, QuestK: []int{8}})
	if q := s2.Quest[0]; q.SelectedReadBytes != q.DenseReadBytes {
		t.Errorf("K >= nb: selected %d, dense %d", q.SelectedReadBytes, q.DenseReadBytes)
	}
}

func TestSizeBudgetFromInputs(t *testing.T) {
	m, _ := LoadModel("qwen3-8b")
	s, err := Size(m, nil, SizeOptions{GPUMemory: 100 << 30, Utilization: 0.9, Weights: 16 << 30, Framework: 4 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(90<<30) - 20<<30; s.Budget.KVBytes != want {
		t.Errorf("budget %d, want %d", s.Budget.KVBytes, want)
	}
	if _, err := Size(m, nil, SizeOptions{GPUMemory: 10 << 30, Weights: 16 << 30}); err == nil {
		t.Error("weights over the GPU memory gave a budget")
	}
	if _, err := Size(m, nil, SizeOptions{}); err == nil {
		t.Error("no budget accepted")
	}
}

func TestParseModel(t *testing.T) {
	hf := readTestdata(t, "qwen3-8b-config.json")
	m, err := ParseModel(hf)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := LoadModel("qwen3-8b")
	if m.Layers != b.Layers || m.KVHeads != b.KVHeads || m.HeadDim != b.HeadDim || m.QHeads != b.QHeads || m.MaxContext != b.MaxContext {
		t.Errorf("HF config %+v differs from the built-in %+v", m, b)
	}
	for _, bad := range []string{`{}`, `{"layers": 2, "kv_heads": 0, "head_dim": 4}`, `{"layers": 2, "kv_heads": 2, "head_dim": 4, "dtype": "int3"}`,
		`{"layers": 2, "q_heads": 3, "kv_heads": 2, "head_dim": 4}`, `[`} {
		if _, err := ParseModel([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if _, err := LoadModel("qwen9-1t"); err == nil || !strings.Contains(err.Error(), "qwen3-8b") {
		t.Errorf("unknown model: %v", err)
	}
}

func TestParseBytes(t *testing.T) {
	for s, want := range map[string]int64{"60GiB": 60 << 30, "60G": 60 << 30, "80GB": 80e9, "512MiB": 512 << 20, "1.5KiB": 1536, "1000": 1000} {
		if got, err := ParseBytes(s); err != nil || got != want {
			t.Errorf("%s: %d %v, want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "-1GiB", "GiB", "1e30TiB", "NaN"} {
		if _, err := ParseBytes(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

// TestSynth100 keeps testdata/synth100/manifest.json, the synthetic 100-prompt
// workload the report's size figures are quoted for, equal to its generator.
func TestSynth100(t *testing.T) {
	golden(t, "synth100/manifest.json", servingtest.SynthManifest(100, 1))
}
