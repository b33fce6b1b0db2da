package longbench

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Consumer files inside BuildOptions.Out (see docs/consumers.md for the
// contract of each, as read in the consumer's source).
const (
	ServeFile     = "serve.jsonl"         // vllm bench serve --dataset-name custom
	ChatBatchFile = "batch.chat.jsonl"    // vllm run-batch (/v1/chat/completions)
	SGLangFile    = "sglang.jsonl"        // python -m sglang.bench_serving --dataset-name custom
	ShareGPTFile  = "sharegpt.json"       // SGLang bench_offline_throughput / bench_serving --dataset-name sharegpt
	PromptIDsFile = "prompt_ids.jsonl"    // LLM.generate(TokensPrompt) drivers, SGLang /generate input_ids
	OfflineScript = "run_vllm_offline.py" // vLLM offline throughput over prompt_ids.jsonl
	HistogramFile = "histogram.png"
)

// ConsumerFile is one entry of the manifest's "files": an output file, the
// tool that reads it and the exact command that runs it.
type ConsumerFile struct {
	Path     string `json:"path"`
	Consumer string `json:"consumer"`
	// Server, when the consumer is a load client, starts the server it talks to.
	Server  string `json:"server_command,omitempty"`
	Command string `json:"command"`
	// AppliesChatTemplate says whether the consumer wraps the prompt in the
	// model's chat template itself. Exactly one side does: where it is
	// false the file already holds the templated prompt (or its token ids).
	AppliesChatTemplate bool   `json:"applies_chat_template"`
	Versions            string `json:"versions,omitempty"`
	Notes               string `json:"notes,omitempty"`
}

// commandParams are what the printed commands depend on.
type commandParams struct {
	Model      string
	ContextLen int
	N          int // prompts in serve.jsonl, sglang.jsonl, sharegpt.json, prompt_ids.jsonl
	NChat      int // lines of batch.chat.jsonl
	// Digest is the manifest's workload_digest: vllm bench serve records
	// it in its result (--metadata KEY=VALUE becomes a top-level string),
	// where goldset serving check compares it.
	Digest string
}

// Versions needed, as read in the consumers' source (docs/consumers.md).
const (
	vllmServeVersions = "vLLM whose vllm/benchmarks/datasets.py has --skip-chat-template, --custom-output-len -1 (per-line output_tokens), --no-oversample and --disable-shuffle (read at vllm-project/vllm f2e97ddaf5902a9727f48b70d001b6117b8b8b12; vLLM after PR #31881, Jan 2026; older releases spell --custom-skip-chat-template and lack -1): check with vllm bench serve --help"
	vllmBatchVersions = "vLLM whose run-batch routes /v1/chat/completions to ChatCompletionRequest with max_completion_tokens and chat_template_kwargs (read at vllm-project/vllm 773dc86d8bf12bc18ab1ba06b1208f4d90a8ba02 vllm/entrypoints/launchers/run_batch.py and d5dba2d7b0ab9b98096560c69db7126b54b14d79 vllm/entrypoints/openai/chat_completion/protocol.py)"
	sglangVersions    = "SGLang with python/sglang/benchmark/datasets/{custom,sharegpt}.py (read at sgl-project/sglang ba0b2706088195d511fe9845ada0dbde25a01a2e and 515b8b311b9e64a4d5994fb35d32e2131b115cf5), whose ShareGPT loader prunes only with --sharegpt-context-len; older bench_serving.py (e.g. 50a613687fe1ffc6f1bb630c684a24c428a54a74) drops every prompt over 1024 tokens: check that python -m sglang.bench_serving --help lists --sharegpt-context-len and --dataset-name custom"
	vllmOfflineVers   = "vLLM with vllm.inputs.TokensPrompt and SamplingParams(ignore_eos=...) (LLM.generate as in vllm/benchmarks/throughput.py at 1a91bc2dc0dd379cb803bfcadd8a312e0da5d45f)"
)

func (c commandParams) files(noThinking bool, haveChat bool) []ConsumerFile {
	m, ctx, n := c.Model, strconv.Itoa(c.ContextLen), strconv.Itoa(c.N)
	vllmServer := "vllm serve " + m + " --max-model-len " + ctx + " --no-enable-prefix-caching"
	sglServer := "python -m sglang.launch_server --model-path " + m + " --context-length " + ctx + " --disable-radix-cache"
	think := "true"
	if noThinking {
		think = "false"
	}
	fs := []ConsumerFile{{
		Path: ServeFile, Consumer: "vllm bench serve --dataset-name custom (online serving)", Server: vllmServer,
		Command: "vllm bench serve --backend openai --endpoint /v1/completions --model " + m +
			" --dataset-name custom --dataset-path " + ServeFile + " --skip-chat-template --custom-output-len -1 --num-prompts " + n +
			" --no-oversample --disable-shuffle --ignore-eos --temperature 0 --save-result --save-detailed" +
			" --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,99 --metadata workload_digest=" + c.Digest,
		AppliesChatTemplate: false, Versions: vllmServeVersions,
		Notes: "prompt already holds the chat template (--skip-chat-template, /v1/completions); output_tokens read only with --custom-output-len -1 (default 256 otherwise); without --num-prompts N --no-oversample vLLM samples up to 1000 requests with replacement; without --disable-shuffle it reorders them; custom_id is an extra key the loader keeps but does not use",
	}}
	if haveChat {
		fs = append(fs, ConsumerFile{
			Path: ChatBatchFile, Consumer: "vllm run-batch (offline, OpenAI batch format, /v1/chat/completions)",
			Command:             "vllm run-batch -i " + ChatBatchFile + " -o batch.chat.out.jsonl --model " + m + " --max-model-len " + ctx + " --no-enable-prefix-caching",
			AppliesChatTemplate: true, Versions: vllmBatchVersions,
			Notes: fmt.Sprintf("%d requests; the user message is the prompt before the chat template, which vLLM applies with chat_template_kwargs.enable_thinking=%s; the subsets LongBench runs without a chat template (%s) are left out (listed in the manifest's chat_batch); body.model must be the --model given here", c.NChat, think, strings.Join(NoChatSubsets, ", ")),
		})
	}
	fs = append(fs,
		ConsumerFile{
			Path: SGLangFile, Consumer: "python -m sglang.bench_serving --dataset-name custom (online serving)", Server: sglServer,
			Command:             "python -m sglang.bench_serving --backend sglang --model " + m + " --dataset-name custom --dataset-path " + SGLangFile + " --num-prompts " + n + " --output-file sglang.result.jsonl --output-details",
			AppliesChatTemplate: false, Versions: sglangVersions,
			Notes: "the user turn already holds the chat template (do not pass --apply-chat-template); the output length is len(tokenizer.encode(assistant turn)), which is exactly max_new_tokens; SGLang shuffles the requests with random.seed(--seed), ignores EOS unless --disable-ignore-eos and samples at temperature 0",
		},
		ConsumerFile{
			Path: ShareGPTFile, Consumer: "python -m sglang.bench_offline_throughput --dataset-name sharegpt (offline throughput)",
			Command:             "python -m sglang.bench_offline_throughput --model-path " + m + " --context-length " + ctx + " --disable-radix-cache --dataset-name sharegpt --dataset-path " + ShareGPTFile + " --num-prompts " + n + " --result-filename sglang.offline.jsonl",
			AppliesChatTemplate: false, Versions: sglangVersions,
			Notes: "the human turn already holds the chat template (no --apply-chat-template); output length from the gpt turn (exactly max_new_tokens tokens); temperature 0, EOS ignored unless --disable-ignore-eos",
		},
		ConsumerFile{
			Path: ShareGPTFile, Consumer: "python -m sglang.bench_serving --dataset-name sharegpt (online serving)", Server: sglServer,
			Command:             "python -m sglang.bench_serving --backend sglang --model " + m + " --dataset-name sharegpt --dataset-path " + ShareGPTFile + " --num-prompts " + n + " --output-file sglang.sharegpt.result.jsonl --output-details",
			AppliesChatTemplate: false, Versions: sglangVersions,
			Notes: "not for vllm bench throughput / vllm bench serve --dataset-name sharegpt: vLLM's ShareGPT loader (is_valid_sequence in vllm/benchmarks/datasets.py) drops every prompt over 1024 tokens or prompt + output over 2048; use " + OfflineScript + " for vLLM offline throughput",
		},
		ConsumerFile{
			Path: PromptIDsFile, Consumer: "vLLM LLM.generate(TokensPrompt) via " + OfflineScript + " (offline throughput)",
			Command:             "python " + OfflineScript + " --model " + m + " --max-model-len " + ctx + " --prompts " + PromptIDsFile + " --output vllm.offline.json",
			AppliesChatTemplate: false, Versions: vllmOfflineVers,
			Notes: "token ids of the templated prompt; the script sends every request at once with SamplingParams(max_tokens=max_tokens, temperature=0, ignore_eos=True), prefix caching off, and fails unless every request's prompt and output token counts equal the file's; for SGLang POST /generate {\"input_ids\": prompt_token_ids, \"sampling_params\": {\"max_new_tokens\": max_tokens, \"temperature\": 0, \"ignore_eos\": true}} (the payload of async_request_sglang_generate, python/sglang/bench_serving.py at 0033168f0f58b2bc05aa0273bd475d9c01bafb1c, the request function bench_serving --backend sglang runs)",
		},
		ConsumerFile{
			Path: IDsFile, Consumer: "numpy / kernel benches (int32 ids of every prompt, concatenated; " + OffsetsFile + " and " + LensFile + " index it)",
			Command:             "python -c \"import numpy as np; ids = np.load('" + IDsFile + "'); off = np.load('" + OffsetsFile + "'); print([len(ids[off[i]:off[i+1]]) for i in range(len(off)-1)])\"",
			AppliesChatTemplate: false,
		},
	)
	return fs
}

// Description is the manifest's description: every file with its command.
func describe(files []ConsumerFile) string {
	var b strings.Builder
	b.WriteString("Every prompt satisfies prompt_tokens + max_new_tokens <= recipe.context_len (chat template included). Files and the commands that run them:")
	for _, f := range files {
		fmt.Fprintf(&b, " [%s] %s:", f.Path, f.Consumer)
		if f.Server != "" {
			fmt.Fprintf(&b, " server: %s;", f.Server)
		}
		fmt.Fprintf(&b, " run: %s (applies chat template: %v).", f.Command, f.AppliesChatTemplate)
	}
	return b.String()
}

// WorkloadDigest is the manifest's workload_digest: the hex sha256 of, for
// each prompt in output order, the UTF-8 bytes
//
//	<len(custom_id) in bytes, decimal>:<custom_id> <prompt_sha256> <prompt_tokens> <max_new_tokens>\n
//
// (numbers in decimal without leading zeros, single spaces, one '\n' per
// prompt). Two runs measured the same requests only if their workloads
// have the same digest.
func WorkloadDigest(prompts []PromptInfo) string {
	h := sha256.New()
	for _, p := range prompts {
		io.WriteString(h, workloadLine(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func workloadLine(p PromptInfo) string {
	return strconv.Itoa(len(p.CustomID)) + ":" + p.CustomID + " " + p.PromptSHA256 + " " +
		strconv.Itoa(p.PromptTokens) + " " + strconv.Itoa(p.MaxNewTokens) + "\n"
}
