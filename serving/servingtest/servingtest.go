// Package servingtest builds synthetic workloads and vLLM results for the
// serving package's tests and the CLI's: lengths and timings only, laid out
// as longbench's manifest.json and vllm/benchmarks/serve.py's result JSON.
package servingtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/goldset/goldset/longbench"
)

// subsetMaxLen is LongBench's config/dataset2maxlen.json for the subsets the
// synthetic workload draws from.
var subsetMaxLen = []struct {
	name string
	max  int
}{{"qasper", 128}, {"multifieldqa_en", 64}, {"gov_report", 512}, {"hotpotqa", 32}, {"2wikimqa", 32}, {"musique", 32}}

// SynthManifest builds a manifest.json with longbench's own PromptInfo (no
// workload_digest, no files) with n prompts whose lengths spread from about
// 1K to 31K tokens around a mean of about 8K.
func SynthManifest(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 0x5e41))
	m := map[string]any{"format": "goldset.longbench/1", "longbench_version": "v1", "model": "Qwen/Qwen3-8B",
		"recipe":      map[string]any{"context_len": 40960, "chat_template": "qwen3", "truncation": "middle"},
		"description": fmt.Sprintf("synthetic %d-prompt workload for serving tests (seed %d): lengths only, no prompt text", n, seed)}
	var ps []longbench.PromptInfo
	for i := range n {
		s := subsetMaxLen[i%len(subsetMaxLen)]
		// log-uniform-ish lengths: 1024 * 2^(u*5), mean near 8K.
		u := rng.Float64()
		pt := int(1024*math.Pow(2, u*4.9)) + rng.IntN(97)
		id := fmt.Sprintf("%016x", rng.Uint64())
		h := sha256.Sum256([]byte(s.name + id))
		ps = append(ps, longbench.PromptInfo{Index: i, CustomID: s.name + "-" + id, Subset: s.name, ID: id, Line: i + 1, PromptTokens: pt,
			RawTokens: pt, Chat: true, MaxNewTokens: s.max, TotalTokens: pt + s.max, InChatBatch: true, PromptSHA256: hex.EncodeToString(h[:])})
	}
	m["prompts"] = ps
	b, _ := json.MarshalIndent(m, "", "  ")
	return append(b, '\n')
}

// VLLMRun is a vllm bench serve --save-result --save-detailed result in
// serve.py's layout, built from a list of (input, output) lengths.
type VLLMRun struct {
	NumPrompts int
	In, Out    []int
	Errors     []string
	Metadata   map[string]string
}

// ConsistentRun is what a correct run of the prompts sends: every prompt once, in
// order, outputs of exactly max_new_tokens.
func ConsistentRun(promptTokens, maxNewTokens []int) *VLLMRun {
	r := &VLLMRun{NumPrompts: len(promptTokens)}
	r.In = append([]int(nil), promptTokens...)
	r.Out = append([]int(nil), maxNewTokens...)
	r.Errors = make([]string, len(promptTokens))
	return r
}

// JSON renders the run with deterministic latencies (TTFT grows with the
// prompt, ITL about 12 ms) and summary statistics computed the way serve.py
// does.
func (v *VLLMRun) JSON(scale float64) []byte {
	n := len(v.In)
	var ttfts, lats, starts []float64
	itls := make([][]float64, n)
	completed, failed := 0, 0
	var totIn, totOut int
	outs := make([]int, n)
	for i := range n {
		starts = append(starts, 1000+0.002*float64(i))
		if v.Errors[i] != "" {
			failed++
			ttfts = append(ttfts, 0)
			lats = append(lats, 0)
			itls[i] = []float64{}
			continue
		}
		completed++
		outs[i] = v.Out[i]
		totIn += v.In[i]
		totOut += v.Out[i]
		ttft := scale * (0.04 + float64(v.In[i])*0.00008 + float64(i%7)*0.003)
		itl := make([]float64, max(v.Out[i]-1, 0))
		sum := 0.0
		for j := range itl {
			itl[j] = scale * (0.011 + float64((i*31+j*17)%13)*0.0003)
			sum += itl[j]
		}
		ttfts = append(ttfts, ttft)
		itls[i] = itl
		lats = append(lats, ttft+sum)
	}
	dur := 0.0
	for i := range n {
		dur = max(dur, starts[i]-1000+lats[i])
	}
	dur += 0.05
	res := map[string]any{"date": "20261201-201500", "endpoint_type": "openai", "backend": "openai", "label": nil,
		"model_id": "Qwen/Qwen3-8B", "tokenizer_id": "Qwen/Qwen3-8B", "num_prompts": v.NumPrompts,
		"request_rate": "inf", "burstiness": 1.0, "max_concurrency": nil,
		"duration": dur, "completed": completed, "failed": failed, "total_input_tokens": totIn, "total_output_tokens": totOut,
		"request_throughput": float64(completed) / dur, "request_goodput": nil, "output_throughput": float64(totOut) / dur,
		"total_token_throughput": float64(totIn+totOut) / dur,
		"input_lens":             v.In, "output_lens": outs, "ttfts": ttfts, "itls": itls, "latencies": lats, "start_times": starts,
		"queue_times": make([]float64, n), "generated_texts": make([]string, n), "errors": v.Errors,
		"max_output_tokens_per_s": 0.0, "max_concurrent_requests": completed, "rtfx": 0.0}
	for k, val := range v.Metadata {
		res[k] = val
	}
	b, err := json.Marshal(res)
	if err != nil {
		panic(err)
	}
	return b
}
