// Package serving proves that a vLLM or SGLang benchmark result ran a
// workload built by `goldset longbench build`, reports its figures, and sizes
// the KV cache the workload needs (serving.md sections 5 and 6, issue 16).
//
// A comparison of dense and sparse attention explains nothing unless both
// runs sent the same requests with the same lengths, and the result files
// carry no request ids (vLLM's num_prompts is the CLI value, not what ran).
// What they do carry per request is lengths; Check compares those, in order,
// with the manifest.
//
// # The workload
//
// ReadWorkload reads DIR/manifest.json with its own small struct: per prompt
// custom_id, prompt_tokens, max_new_tokens, prompt_sha256, chat_template;
// recipe.context_len; and, where issue 12's manifest has them, the top-level
// workload_digest and files [{path, consumer, command,
// applies_chat_template}]. Missing additions are tolerated: without
// workload_digest the digest is computed here and the verdict says so; without
// a command for the result's consumer the plan is serving.md §3's command
// (--num-prompts N --no-oversample --disable-shuffle --custom-output-len -1
// --skip-chat-template --ignore-eos --temperature 0).
//
// The workload digest is longbench's (issue 12): the hex sha256 of the
// concatenation, over the prompts in order, of
// "<len(custom_id)>:<custom_id> <prompt_sha256> <prompt_tokens> <max_new_tokens>\n"
// (decimal numbers, single spaces). When the manifest records its own digest
// it is the one used, and a difference from the recomputed one is noted.
//
// # Result formats (read from the producers' source)
//
// vLLM `vllm bench serve --save-result [--save-detailed]`:
// vllm-project/vllm vllm/benchmarks/serve.py @ 009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1
// (main_async's result_json and benchmark()'s result), with
// vllm/benchmarks/lib/endpoint_request_func.py @ 02cfb534df5674737558730b10f23d1b7aef9b7c.
// One JSON object (--append-result appends one per line). Always: date,
// endpoint_type, backend, label, model_id, tokenizer_id, num_prompts (the
// --num-prompts value), any --metadata KEY=VALUE as top-level strings,
// request_rate ("inf" as a string), burstiness, max_concurrency, duration,
// completed, failed, total_input_tokens, total_output_tokens,
// request_throughput, request_goodput, output_throughput,
// total_token_throughput, latencies, queue_times, max_output_tokens_per_s,
// max_concurrent_requests (an exact sweep over [start, start+latency)), rtfx,
// and mean_/median_/std_/pNN_{ttft,tpot,itl,e2el}_ms for --percentile-metrics
// and --metric-percentiles. Only with --save-detailed (otherwise deleted):
// input_lens, output_lens, start_times, ttfts, itls, generated_texts, errors,
// one entry per request in send order (start_times where benchmark()
// records them, as at 009e6d4a beside latencies and queue_times; Check
// never needs them). Who counted input_lens depends on the version of the
// request function: at 02cfb534 it is the server's usage.prompt_tokens when
// the stream's usage chunk arrived (the client's count otherwise, e.g. for
// a failed request); endpoint_request_func.py @
// 3aee4a4f4c4d1a2a7af3ebdb88c768e459e6c602 never reads it and keeps the
// client's tokenizer count (SampleRequest.prompt_len) for every request.
// output_lens[i] is usage.completion_tokens, 0 for a failed request;
// errors[i] is "" on success. Times are seconds; the summary fields
// milliseconds. --metadata KEY=VALUE pairs land as top-level strings, so
// the manifest's command passes --metadata workload_digest=<digest>.
//
// vLLM `vllm bench throughput --output-json`:
// vllm-project/vllm vllm/benchmarks/throughput.py @ 020283147c84ad8cc97eadffcdb033ea56322563.
// {elapsed_time, num_requests, total_num_tokens, requests_per_second,
// tokens_per_second}; total_num_tokens is the prompt_token_ids plus the
// generated token_ids of every RequestOutput, and run_vllm samples with
// ignore_eos=True, temperature=1.0, max_tokens = the request's output length.
// No per-request data: Check compares num_requests and total_num_tokens.
//
// SGLang `python -m sglang.bench_serving --output-file F [--output-details]`:
// sgl-project/sglang python/sglang/bench_serving.py @ 0033168f0f58b2bc05aa0273bd475d9c01bafb1c
// (benchmark()'s result, appended to F as one JSON line per run). backend,
// dataset_name, request_rate (Python writes float("inf") as the bare token
// Infinity, which this package reads), max_concurrency, sharegpt_output_len,
// random_input_len, random_output_len, random_range_ratio, duration,
// completed, total_input_tokens, total_output_tokens,
// total_output_tokens_retokenized, request_throughput, input_throughput,
// output_throughput, mean/median/std/p99_e2e_latency_ms, mean/median/std/
// p99_{ttft,tpot,itl}_ms, p95_itl_ms, concurrency (sum of latencies /
// duration: a mean, not a peak), accept_length; newer versions add tag,
// server_info, total_throughput, max_output_tokens_per_s,
// max_concurrent_requests. No failure count. With --output-details also
// input_lens, output_lens, ttfts, itls, generated_texts, errors per request:
// at this commit --backend sglang runs bench_serving.py's own
// async_request_sglang_generate (ASYNC_REQUEST_FUNCS["sglang"]), whose
// RequestFuncOutput.init_new keeps the client's DatasetRow.prompt_len
// (bench_serving's tokenizer, not the server's) as input_lens, as does
// python/sglang/benchmark/backends/sglang_client.py @
// 4bae336aa20d84dd46f95de9299cea2d2a756479 (RequestFuncOutput.from_input)
// that sglang.benchmark.serving's CLI uses; issue 24's run of a later
// client found the server's count there, so Check names both; output_lens
// is the server's completion_tokens (0 when failed), and there are no
// per-request latencies, so TPOT and E2EL come from the recorded summary.
// Requests are shuffled with random.seed(--seed); --seed defaults to 1 in
// this commit's argparse and in benchmark/args.py @
// 6117f3f53fdc545a384f8917df67d795a4f02414 (issue 24 reports 42 in a later
// runnable CLI); Check compares SGLang's lengths as a multiset, so the
// seed never matters to it. The openai backends send temperature 0 and
// ignore_eos unless --disable-ignore-eos. Its custom loader
// (sgl-project/sglang python/sglang/benchmark/datasets/custom.py @
// 3c1efe01121bfb7d223c6ae03024bb3d1e7c1f75) always random.shuffle()s the
// lines, takes the output length from the assistant turn's token count (or
// --sharegpt-output-len), applies the chat template only with
// --apply-chat-template and counts prompt_len with the client's tokenizer: so
// SGLang results are compared as a multiset. The older bench_serving.py
// ShareGPT loader also shuffles and drops prompts over 1024 tokens (prompt +
// output over 2048), as vLLM's.
//
// Extra requests per run, in neither tool's result: vLLM's ready check
// (serve.py @ 009e6d4a benchmark(): "initial single prompt test run",
// wait_for_endpoint, unless --ready-check-timeout-sec is 0) sends request
// 0 in full (its prompt, prompt_len and expected_output_len) before the
// timed run, and --num-warmups more copies of it when given; SGLang's bench_serving.py @ 0033168f sends
// --warmup-requests (default 1) copies of request 0 with output_len
// min(output_len, 32). Both prefill request 0's prompt, so the server must
// run with prefix caching off (vllm serve --no-enable-prefix-caching,
// sglang.launch_server --disable-radix-cache, as the manifest's server
// commands do): with it on, request 0 of the timed run is a cache hit and
// its TTFT, and every figure built on it, is too low.
//
// SGLang `python -m sglang.bench_offline_throughput --result-filename F`:
// sgl-project/sglang python/sglang/bench_offline_throughput.py @ 00d02fb4531984a2a7bb94a33977053d29af6c39.
// One appended JSON line per run: {backend, successful_requests,
// total_latency, total_input_tokens (client counts), total_output_tokens
// (server meta_info.completion_tokens), request_throughput, input_throughput,
// output_throughput, total_throughput}; sampling at temperature 0,
// ignore_eos unless --disable-ignore-eos.
//
// goldset's own vLLM offline driver, run_vllm_offline.py (written by
// `goldset longbench build` beside prompt_ids.jsonl; read in the workloads
// branch's longbench/offline.go @ 7a81b42, issue 12, not yet on main): one
// JSON object {tool, model, max_model_len, prompts_file, prompts_sha256,
// num_requests, completed, failed (requests that came back with other
// lengths), elapsed_s, requests_per_s, input_tokens, output_tokens,
// output_tokens_per_s, total_tokens_per_s, requests: [{custom_id,
// prompt_tokens, output_tokens}]}. It names every request, so Check compares
// custom_id in order too, and prompts_sha256 against the manifest's sha256
// of that file. It is the offline route that keeps long prompts: vLLM's
// ShareGPT loader (bench throughput) drops every prompt over 1024 tokens.
//
// testdata/ holds a sample of each, written from these schemas, and a
// README saying where each field comes from.
//
// # Check
//
// The plan is read from the manifest's files[].command for the result's
// consumer ("vllm bench serve", "sglang.bench_serving" with the result's
// dataset_name, "sglang.bench_offline_throughput", "run_vllm_offline.py"):
// --num-prompts, --no-oversample, --disable-shuffle (vLLM; SGLang has none, so
// its lengths are compared as a multiset), --custom-output-len,
// --skip-chat-template, --ignore-eos / --disable-ignore-eos, --temperature,
// --dataset-name.
//
// Check(w, r) fails, naming the field, the request index (or the whole run)
// and both values, when: completed + failed (SGLang without details:
// completed) differs from the workload's prompts; failed > 0, and each
// request whose errors[i] is not empty; vLLM's num_prompts differs from N;
// a recorded --metadata workload_digest, no_oversample, disable_shuffle,
// custom_output_len, skip_chat_template, ignore_eos or temperature differs
// from the plan; SGLang's sharegpt_output_len is set or its dataset_name is
// not the plan's; per request, input_lens[i] != prompt_tokens[i] in order
// and, when EOS is ignored, output_lens[i] != max_new_tokens[i]
// (output_lens[i] > max_new_tokens[i] with CheckOptions.EOSAllowed or a
// command without --ignore-eos). When the plan does not pass
// --disable-shuffle, or with CheckOptions.Shuffled, the (input, output)
// pairs are compared as a multiset and the verdict says the order was not
// checked. Without per-request data the totals are compared instead. Failed
// requests are not length-checked (they already failed). Each field lists at
// most MaxPerField requests and counts the rest. Causes name the usual
// culprits from the failures' shape: oversampling to --num-prompts, a shuffle
// (lengths equal as a multiset), a constant input offset (worded by who
// counted input_lens: a client count +8 is Qwen3's chat template applied a
// second time, a server count may be another tokenizer or template), every output 256 (vLLM's default
// --custom-output-len), outputs ended at EOS. The vLLM defaults behind them
// were read in vllm-project/vllm vllm/benchmarks/datasets.py @
// 0056b87fc1fda2642f39dda4392824c425dd1638 (add_dataset_parser:
// --num-prompts 1000, --custom-output-len 256, --no-oversample,
// --skip-chat-template, --disable-shuffle; the loaders shuffle unless
// disable_shuffle and maybe_oversample_requests pads to --num-prompts). Settings a format does not
// record are listed as notes, never assumed to match.
//
// # Report
//
// Summarize gives successes, failures, duration, request/output/total token
// throughput, peak concurrency and TTFT, TPOT ((latency - ttft) / (output - 1)
// for outputs over one token), ITL (every inter-token gap) and E2EL
// p50/p90/p99 over successful requests, recomputed with numpy.percentile's
// linear method from per-request data when the file has it (so they equal
// vLLM's own), else read from the file's summary (Dist.Source "recorded").
// Compare ranks runs against a baseline (throughput ratio; baseline latency
// over the run's, so > 1 is better) only when the baseline and the run passed
// Check against the same workload digest and are the same Kind: an offline
// result is never ranked against a serving one. WriteSVG draws each
// metric's empirical CDF per run, p50/p90/p99 marked.
//
// # Size
//
// For a model config (layers, query and KV heads, head dim, KV dtype) and a
// block size BS: KV bytes per token = 2 (K, V) x layers x kv_heads x head_dim
// x dtype bytes (Qwen3-8B bf16: 2 x 36 x 8 x 128 x 2 = 147456 B = 144 KiB,
// 5.625 GiB at 40960 tokens); a request of prompt + max_new_tokens tokens
// holds ceil(tokens / BS) blocks. A KV budget (given, or GPU memory x
// utilization - weights - framework, all inputs) holds floor(budget /
// block bytes) blocks: the longest single context is blocks x BS tokens,
// the concurrency at context_len is blocks / ceil(context_len / BS), the
// workload's worst case packs its longest requests first. Quest (docs/spec.md §5,
// anchors first and last, the last block partial) per decode step of one
// request of L tokens, all layers: metadata read nb x 2 (kmax, kmin) x
// kv_heads x head_dim x dtype bytes with nb = ceil(L / block); selected read
// the K and V of (K-1) full blocks plus the last (all L when K >= nb), one
// selection per KV head (kv_group_sum); with per-query-head selection
// (q_head) up to G x K distinct blocks per KV head (an upper bound). The
// metadata is memory beside the KV cache; the top-k workspace per request
// and step is float32 scores [Hsel, nb] + int32 selected [Hsel, K], reused
// across layers. Built-in models (their Hugging Face config.json:
// num_hidden_layers, num_attention_heads, num_key_value_heads, head_dim,
// max_position_embeddings 40960, torch_dtype bfloat16): Qwen3-8B 36 layers,
// 32 heads, 8 KV heads, head_dim 128 (read in
// sanjithudupa/compute-aware-arch-search Qwen3-8B/config.json @
// 38147a2fa897d01d267ce4876b216d00804e8797, a copy of
// huggingface.co/Qwen/Qwen3-8B's); Qwen3-14B 40 layers, 40 heads, 8 KV heads,
// head_dim 128 and Qwen3-32B 64 layers, 64 heads, 8 KV heads, head_dim 128
// (huggingface.co/Qwen/Qwen3-14B and Qwen3-32B config.json, as quoted in
// several public repositories; no copy of those two files was found in the
// code index to cite by commit).
package serving
