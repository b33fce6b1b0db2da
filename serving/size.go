package serving

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/goldset/goldset/internal/safefile"
)

// ModelConfig is what the KV cache size depends on.
type ModelConfig struct {
	Name       string `json:"name"`
	Layers     int    `json:"layers"`
	QHeads     int    `json:"q_heads"`
	KVHeads    int    `json:"kv_heads"`
	HeadDim    int    `json:"head_dim"`
	DType      string `json:"dtype"` // KV cache dtype
	MaxContext int    `json:"max_context"`
	Source     string `json:"source"`
}

// Built-in models, from their Hugging Face config.json (num_hidden_layers,
// num_attention_heads, num_key_value_heads, head_dim, max_position_embeddings,
// torch_dtype); doc.go cites where each was read.
var builtinModels = map[string]ModelConfig{
	"qwen3-8b":  {Name: "Qwen3-8B", Layers: 36, QHeads: 32, KVHeads: 8, HeadDim: 128, DType: "bfloat16", MaxContext: 40960, Source: "built in (Qwen/Qwen3-8B config.json)"},
	"qwen3-14b": {Name: "Qwen3-14B", Layers: 40, QHeads: 40, KVHeads: 8, HeadDim: 128, DType: "bfloat16", MaxContext: 40960, Source: "built in (Qwen/Qwen3-14B config.json)"},
	"qwen3-32b": {Name: "Qwen3-32B", Layers: 64, QHeads: 64, KVHeads: 8, HeadDim: 128, DType: "bfloat16", MaxContext: 40960, Source: "built in (Qwen/Qwen3-32B config.json)"},
}

// BuiltinModels lists the built-in model names.
func BuiltinModels() []string {
	var out []string
	for k := range builtinModels {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// DTypeBytes is the storage size of a KV cache dtype.
func DTypeBytes(dt string) (int, error) {
	switch strings.ToLower(dt) {
	case "bfloat16", "bf16", "float16", "fp16", "half":
		return 2, nil
	case "float32", "fp32", "float":
		return 4, nil
	case "fp8", "fp8_e4m3", "fp8_e5m2", "float8_e4m3fn", "float8_e5m2", "int8", "uint8":
		return 1, nil
	}
	return 0, fmt.Errorf("%w: unknown dtype %q (bfloat16, float16, float32, fp8)", ErrModel, dt)
}

// maxModelBytes bounds a model JSON or config.json (a few KB), checked
// before reading.
const maxModelBytes = 16 << 20

// LoadModel returns a built-in model by name, or reads a small JSON
// ({"name", "layers", "q_heads", "kv_heads", "head_dim", "dtype", "max_context"})
// or a Hugging Face config.json.
func LoadModel(spec string) (ModelConfig, error) {
	if m, ok := builtinModels[strings.ToLower(spec)]; ok {
		return m, nil
	}
	b, err := safefile.ReadFile(spec, maxModelBytes) // a regular file, size checked before reading
	if errors.Is(err, fs.ErrNotExist) {
		return ModelConfig{}, fmt.Errorf("%w: %q is neither a built-in model (%s) nor a readable file: %w", ErrModel, spec, strings.Join(BuiltinModels(), ", "), err)
	}
	if err != nil {
		return ModelConfig{}, fmt.Errorf("%w: %w", ErrModel, err)
	}
	m, err := ParseModel(b)
	if err != nil {
		return ModelConfig{}, fmt.Errorf("%s: %w", spec, err)
	}
	if m.Source == "" {
		m.Source = spec
	} else {
		m.Source += " " + spec
	}
	return m, nil
}

// ParseModel parses a small model JSON or a Hugging Face config.json.
func ParseModel(b []byte) (ModelConfig, error) {
	var raw struct {
		Name       string `json:"name"`
		Layers     int    `json:"layers"`
		QHeads     int    `json:"q_heads"`
		KVHeads    int    `json:"kv_heads"`
		HeadDim    int    `json:"head_dim"`
		DType      string `json:"dtype"`
		MaxContext int    `json:"max_context"`
		// Hugging Face names.
		NameOrPath string   `json:"_name_or_path"`
		Arch       []string `json:"architectures"`
		HFLayers   int      `json:"num_hidden_layers"`
		HFHeads    int      `json:"num_attention_heads"`
		HFKVHeads  int      `json:"num_key_value_heads"`
		Hidden     int      `json:"hidden_size"`
		TorchDType string   `json:"torch_dtype"`
		HFMax      int      `json:"max_position_embeddings"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return ModelConfig{}, fmt.Errorf("%w: %v", ErrModel, err)
	}
	m := ModelConfig{Name: raw.Name, Layers: raw.Layers, QHeads: raw.QHeads, KVHeads: raw.KVHeads, HeadDim: raw.HeadDim,
		DType: raw.DType, MaxContext: raw.MaxContext}
	if raw.HFLayers > 0 {
		m.Source = "Hugging Face config.json"
		m.Layers, m.QHeads, m.KVHeads, m.MaxContext = raw.HFLayers, raw.HFHeads, raw.HFKVHeads, raw.HFMax
		if m.KVHeads == 0 {
			m.KVHeads = raw.HFHeads // no GQA: one KV head per query head
		}
		if m.HeadDim == 0 && raw.HFHeads > 0 {
			m.HeadDim = raw.Hidden / raw.HFHeads
		}
		// transformers >= 4.56 writes "dtype"; older "torch_dtype".
		m.DType = firstNonEmpty(raw.TorchDType, raw.DType)
		m.Name = firstNonEmpty(raw.NameOrPath, strings.Join(raw.Arch, ","))
	}
	if m.DType == "" {
		m.DType = "bfloat16"
	}
	switch {
	case m.Layers <= 0 || m.KVHeads <= 0 || m.HeadDim <= 0:
		return ModelConfig{}, fmt.Errorf("%w: layers %d, kv_heads %d, head_dim %d must be positive", ErrModel, m.Layers, m.KVHeads, m.HeadDim)
	case m.Layers > 1<<12 || m.KVHeads > 1<<12 || m.HeadDim > 1<<14 || m.QHeads > 1<<14:
		return ModelConfig{}, fmt.Errorf("%w: layers %d, kv_heads %d, head_dim %d, q_heads %d out of range", ErrModel, m.Layers, m.KVHeads, m.HeadDim, m.QHeads)
	case m.QHeads < 0 || m.QHeads > 0 && m.QHeads%m.KVHeads != 0:
		return ModelConfig{}, fmt.Errorf("%w: q_heads %d is not a multiple of kv_heads %d", ErrModel, m.QHeads, m.KVHeads)
	}
	if _, err := DTypeBytes(m.DType); err != nil {
		return ModelConfig{}, err
	}
	return m, nil
}

// KVBytesPerToken is K and V of one token over every layer.
func (m ModelConfig) KVBytesPerToken() int64 {
	b, _ := DTypeBytes(m.DType)
	return 2 * int64(m.Layers) * int64(m.KVHeads) * int64(m.HeadDim) * int64(b)
}

// SizeOptions are the memory figures goldset does not guess.
type SizeOptions struct {
	KVBudget    int64   // bytes for the KV cache; 0: GPUMemory*Utilization - Weights - Framework
	GPUMemory   int64   // bytes
	Utilization float64 // vLLM --gpu-memory-utilization (default 0.9)
	Weights     int64   // model weights, bytes (an input)
	Framework   int64   // activations, CUDA graphs, allocator slack, bytes (an input)
	BlockSize   int     // KV cache block (page) size in tokens (vLLM default 16)
	QuestK      []int   // Quest blocks kept per head, anchors included
	QuestBlock  int     // Quest block size in tokens (default BlockSize)
	ContextLen  int     // context limit to size at (default: the workload's context_len, else the model's)
	KVDType     string  // KV cache dtype (vLLM --kv-cache-dtype); default the model's
}

// Sizing is Size's answer; byte counts are exact integers.
type Sizing struct {
	Model          ModelConfig `json:"model"`
	BlockSize      int         `json:"block_size"`
	BytesPerToken  int64       `json:"kv_bytes_per_token"`
	BytesPerBlock  int64       `json:"kv_bytes_per_block"`
	ContextLen     int         `json:"context_len"`
	BytesAtContext int64       `json:"kv_bytes_at_context_len"`

	Budget       BudgetInfo     `json:"budget"`
	Prompts      []PromptSizing `json:"prompts"`
	Workload     WorkloadSizing `json:"workload"`
	Quest        []QuestSizing  `json:"quest"`
	QuestBlock   int            `json:"quest_block_size"`
	WorkloadName string         `json:"workload_dir"`
	Digest       string         `json:"workload_digest"`
}

// BudgetInfo says where the KV budget comes from and what it admits.
type BudgetInfo struct {
	KVBytes     int64   `json:"kv_bytes"`
	Derivation  string  `json:"derivation"`
	GPUMemory   int64   `json:"gpu_memory_bytes,omitempty"`
	Utilization float64 `json:"gpu_memory_utilization,omitempty"`
	Weights     int64   `json:"weights_bytes,omitempty"`
	Framework   int64   `json:"framework_bytes,omitempty"`
	Blocks      int64   `json:"blocks"`
	// LongestContext is the longest single sequence the budget holds
	// (Blocks*BlockSize); the model's limit is separate.
	LongestContext int64 `json:"longest_context_tokens"`
	// At the context limit, every sequence at context_len tokens.
	ConcurrencyAtContext int64 `json:"concurrency_at_context_len"`
	// For this workload: the c longest requests at once (worst case), and
	// sequences of the workload's mean length.
	ConcurrencyWorstCase int64 `json:"concurrency_workload_worst_case"`
	ConcurrencyMean      int64 `json:"concurrency_workload_mean"`
	WholeWorkloadFits    bool  `json:"whole_workload_fits"`
}

// PromptSizing is one request at its full length (prompt + max_new_tokens).
type PromptSizing struct {
	CustomID     string `json:"custom_id"`
	Tokens       int    `json:"tokens"`
	Blocks       int64  `json:"blocks"`
	KVBytes      int64  `json:"kv_bytes"` // allocated: Blocks * bytes per block
	PromptBlocks int64  `json:"prompt_blocks"`
}

// WorkloadSizing sums the requests.
type WorkloadSizing struct {
	Requests    int     `json:"requests"`
	Tokens      int64   `json:"tokens"`
	Blocks      int64   `json:"blocks"`
	KVBytes     int64   `json:"kv_bytes"` // all requests resident at once
	MaxTokens   int     `json:"max_tokens"`
	MaxBlocks   int64   `json:"max_blocks"`
	MaxKVBytes  int64   `json:"max_kv_bytes"`
	MeanTokens  float64 `json:"mean_tokens"`
	MeanKVBytes float64 `json:"mean_kv_bytes"`
}

// QuestSizing is Quest at one K: per decode step of one request at the
// context limit, and over the workload.
type QuestSizing struct {
	K int `json:"k"`
	// One request at ContextLen tokens, one decode step, all layers.
	DenseReadBytes      int64   `json:"dense_read_bytes"`        // K and V of every token
	MetadataReadBytes   int64   `json:"metadata_read_bytes"`     // kmax and kmin of every block
	SelectedReadBytes   int64   `json:"selected_read_bytes"`     // K and V of the K selected blocks per KV head (kv_group_sum)
	QuestReadBytes      int64   `json:"quest_read_bytes"`        // metadata + selected
	ReadRatio           float64 `json:"quest_over_dense"`        // QuestReadBytes / DenseReadBytes
	QHeadUpperReadBytes int64   `json:"q_head_upper_read_bytes"` // granularity q_head: up to G*K distinct blocks per KV head
	// Workload: mean per decode step at each request's full length.
	WorkloadDenseRead float64 `json:"workload_mean_dense_read_bytes"`
	WorkloadQuestRead float64 `json:"workload_mean_quest_read_bytes"`
	// Memory beside the KV cache.
	MetadataBytesAtContext int64 `json:"metadata_bytes_at_context_len"` // kmax+kmin, all layers, one request
	MetadataBytesWorkload  int64 `json:"metadata_bytes_workload"`       // every request resident
	// Top-k workspace per request and decode step (reused across layers):
	// float32 scores [Hsel, nb] and int32 selected [Hsel, K].
	WorkspaceQHead      int64 `json:"topk_workspace_bytes_q_head"`
	WorkspaceKVGroupSum int64 `json:"topk_workspace_bytes_kv_group_sum"`
	ConcurrencyWithMeta int64 `json:"concurrency_at_context_len_with_metadata"`
}

// Size computes the KV cache figures of a workload for a model. w may be nil
// (then only the context-limit figures are given).
func Size(m ModelConfig, w *Workload, o SizeOptions) (*Sizing, error) {
	if o.BlockSize <= 0 {
		o.BlockSize = 16
	}
	if o.BlockSize > 1<<20 {
		return nil, fmt.Errorf("%w: block size %d out of range", ErrModel, o.BlockSize)
	}
	if o.QuestBlock <= 0 {
		o.QuestBlock = o.BlockSize
	}
	if o.Utilization == 0 {
		o.Utilization = 0.9
	}
	if o.KVDType != "" {
		if _, err := DTypeBytes(o.KVDType); err != nil {
			return nil, err
		}
		m.DType = o.KVDType
	}
	s := &Sizing{Model: m, BlockSize: o.BlockSize, QuestBlock: o.QuestBlock}
	s.BytesPerToken = m.KVBytesPerToken()
	s.BytesPerBlock = s.BytesPerToken * int64(o.BlockSize)
	s.ContextLen = o.ContextLen
	if s.ContextLen == 0 && w != nil {
		s.ContextLen = w.ContextLen
	}
	if s.ContextLen == 0 {
		s.ContextLen = m.MaxContext
	}
	if s.ContextLen <= 0 {
		return nil, fmt.Errorf("%w: no context length (give --context-len, or a model with max_position_embeddings)", ErrModel)
	}
	s.BytesAtContext = s.BytesPerToken * int64(s.ContextLen)

	b := &s.Budget
	switch {
	case o.KVBudget > 0:
		b.KVBytes = o.KVBudget
		b.Derivation = "given (--kv-budget)"
	case o.GPUMemory > 0:
		b.GPUMemory, b.Utilization, b.Weights, b.Framework = o.GPUMemory, o.Utilization, o.Weights, o.Framework
		b.KVBytes = int64(float64(o.GPUMemory)*o.Utilization) - o.Weights - o.Framework
		b.Derivation = fmt.Sprintf("gpu memory x %g - weights - framework (inputs)", o.Utilization)
		if b.KVBytes <= 0 {
			return nil, fmt.Errorf("%w: gpu memory %d x %g - weights %d - framework %d leaves no KV budget", ErrModel, o.GPUMemory, o.Utilization, o.Weights, o.Framework)
		}
	default:
		return nil, fmt.Errorf("%w: no KV budget (give --kv-budget, or --gpu-memory with --weights and --framework)", ErrModel)
	}
	b.Blocks = b.KVBytes / s.BytesPerBlock
	b.LongestContext = b.Blocks * int64(o.BlockSize)
	ctxBlocks := ceilDiv(int64(s.ContextLen), int64(o.BlockSize))
	b.ConcurrencyAtContext = b.Blocks / ctxBlocks

	var fullLens []int
	if w != nil {
		s.WorkloadName, s.Digest = w.Dir, w.Digest
		ws := &s.Workload
		ws.Requests = w.N()
		var blocks []int64
		for _, p := range w.Prompts {
			t := p.PromptTokens + p.MaxNewTokens
			fullLens = append(fullLens, t)
			nb := ceilDiv(int64(t), int64(o.BlockSize))
			s.Prompts = append(s.Prompts, PromptSizing{CustomID: p.CustomID, Tokens: t, Blocks: nb, KVBytes: nb * s.BytesPerBlock,
				PromptBlocks: ceilDiv(int64(p.PromptTokens), int64(o.BlockSize))})
			blocks = append(blocks, nb)
			ws.Tokens += int64(t)
			ws.Blocks += nb
			if nb > ws.MaxBlocks {
				ws.MaxBlocks = nb
			}
			ws.MaxTokens = max(ws.MaxTokens, t)
		}
		ws.KVBytes = ws.Blocks * s.BytesPerBlock
		ws.MaxKVBytes = ws.MaxBlocks * s.BytesPerBlock
		ws.MeanTokens = float64(ws.Tokens) / float64(ws.Requests)
		ws.MeanKVBytes = float64(ws.KVBytes) / float64(ws.Requests)
		slices.Sort(blocks)
		slices.Reverse(blocks)
		var acc int64
		for _, nb := range blocks {
			if acc+nb > b.Blocks {
				break
			}
			acc += nb
			b.ConcurrencyWorstCase++
		}
		b.WholeWorkloadFits = ws.Blocks <= b.Blocks
		b.ConcurrencyMean = int64(float64(b.Blocks) / (float64(ws.Blocks) / float64(ws.Requests)))
	}

	ks := o.QuestK
	if len(ks) == 0 {
		ks = []int{16, 32, 64}
	}
	for _, k := range ks {
		if k < 2 {
			return nil, fmt.Errorf("%w: Quest K %d: K counts both anchors, so it must be at least 2", ErrModel, k)
		}
		q := quest(m, s.ContextLen, k, o.QuestBlock)
		if len(fullLens) > 0 {
			var d, qs float64
			for _, t := range fullLens {
				x := quest(m, t, k, o.QuestBlock)
				d += float64(x.DenseReadBytes)
				qs += float64(x.QuestReadBytes)
				q.MetadataBytesWorkload += x.MetadataBytesAtContext
			}
			q.WorkloadDenseRead = d / float64(len(fullLens))
			q.WorkloadQuestRead = qs / float64(len(fullLens))
		}
		perSeq := ctxBlocks*s.BytesPerBlock + q.MetadataBytesAtContext
		q.ConcurrencyWithMeta = b.KVBytes / perSeq
		s.Quest = append(s.Quest, q)
	}
	return s, nil
}

// quest sizes one decode step of one request at length L (docs/spec.md §5: anchors
// first and last, the last block partial).
func quest(m ModelConfig, L, k, qb int) QuestSizing {
	eb, _ := DTypeBytes(m.DType)
	layers, hkv, d := int64(m.Layers), int64(m.KVHeads), int64(m.HeadDim)
	perTokKV := 2 * hkv * d * int64(eb) // one layer, K and V
	nb := ceilDiv(int64(L), int64(qb))
	last := int64(L) - (nb-1)*int64(qb)
	sel := int64(L)
	if int64(k) < nb {
		sel = int64(k-1)*int64(qb) + last
	}
	q := QuestSizing{K: k}
	q.DenseReadBytes = layers * int64(L) * perTokKV
	q.MetadataReadBytes = layers * nb * 2 * hkv * d * int64(eb) // kmax and kmin per block
	q.SelectedReadBytes = layers * sel * perTokKV
	q.QuestReadBytes = q.MetadataReadBytes + q.SelectedReadBytes
	q.ReadRatio = float64(q.QuestReadBytes) / float64(q.DenseReadBytes)
	g := int64(1)
	if m.QHeads > 0 {
		g = int64(m.QHeads) / hkv
	}
	upperBlocks := min(nb, g*int64(k))
	upperSel := int64(L)
	if upperBlocks < nb {
		upperSel = (upperBlocks-1)*int64(qb) + last
	}
	q.QHeadUpperReadBytes = q.MetadataReadBytes + layers*upperSel*perTokKV
	q.MetadataBytesAtContext = q.MetadataReadBytes
	hq := hkv * g
	q.WorkspaceQHead = hq*nb*4 + hq*int64(k)*4
	q.WorkspaceKVGroupSum = hkv*nb*4 + hkv*int64(k)*4
	return q
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// ParseBytes reads "60GiB", "512MiB", "80GB", "1.5TiB" or a plain byte count.
// A bare "G"/"M"/"K" suffix is binary (GiB), as vLLM's and nvidia-smi's
// memory figures are.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suf string
		mul float64
	}{
		{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
		{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3},
		{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1},
	}
	mul := 1.0
	for _, u := range units {
		if strings.HasSuffix(t, u.suf) {
			t, mul = strings.TrimSpace(strings.TrimSuffix(t, u.suf)), u.mul
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) || v*mul > 1<<62 {
		return 0, fmt.Errorf("bad size %q (e.g. 60GiB, 512MiB, 80GB)", s)
	}
	return int64(v * mul), nil
}

// FormatBytes prints a byte count in binary units with the exact count.
func FormatBytes(n int64) string {
	f := float64(n)
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.3f GiB", f/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.3f MiB", f/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.3f KiB", f/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
