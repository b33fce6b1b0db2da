// Package serving proves that a vLLM or SGLang benchmark result ran a
// workload built by `goldset longbench build`, reports its figures, and sizes
// the KV cache the workload needs (serving.md sections 5 and 6, issue 16),
// and scores what the run generated with LongBench's metrics (issue 28).
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
//
// # Score (issue 28)
//
// A sparse attention kernel is judged end to end by the model's accuracy on
// the workload. ReadGenerations reads what a run generated: vLLM bench serve
// --save-detailed and SGLang bench_serving --output-details generated_texts
// (one per request, "" for a failed one), run_vllm_offline.py's
// requests[].text and requests[].output_token_ids (written since issue 28; an
// older script's output has neither and is refused with ErrNoTexts),
// and `vllm run-batch` output (vllm-project/vllm
// vllm/entrypoints/openai/run_batch.py @
// 0056ae7b2144abbc7b4916a43491c154567e0b76: one BatchRequestOutput line
// {id, custom_id, response: {status_code, request_id, body:
// ChatCompletionResponse}, error} per request, in input order; the text is
// choices[0].message.content; a line with an error, no body or a status other
// than 200 is a failed request). Run-batch output has no timings, so check
// and report refuse it and name score. Texts are matched to the prompts by
// custom_id when the file names them, else in order (N texts: serving check
// proves the order), else, for SGLang (its custom loader shuffles and names
// nothing), by input length when every prompt length in the workload is
// distinct; anything else fails with ErrScore.
//
// The answers are not in the manifest: it records, per prompt, subset, _id
// and the record's line, and the sources' sha256. LoadTruths reads
// <data>/<subset>.jsonl (--data; default the manifest's data_dir, as given
// to longbench build, else relative to the manifest's directory), takes the
// record at that line, requires its _id and, where the manifest lists it,
// the file's sha256. So no outside data is copied into a workload.
//
// v1 scoring is LongBench's eval.py (THUDM/LongBench LongBench/eval.py @
// 072a5a739b05ab3c98ff1ea922c5293ebe317b75) with metrics.py @
// f6227eb7a25cacbd96310aea2c59af003f8d8925, transcribed in metrics.go:
// dataset2metric picks the metric ("<task>_e" uses "<task>"'s); trec,
// triviaqa, samsum and lsht keep prediction.lstrip('\n').split('\n')[0]; a
// request scores max(0, metric(pred, answer)) over its answers; a subset
// scores round(100 * sum / n, 2) (Python's round: ties to even on the exact
// binary value), summed in workload order. qa_f1_score: normalize_answer
// (Python str.lower, string.punctuation removed, \b(a|an|the)\b with
// Python's Unicode \b, str.split() whitespace including U+001C..U+001F),
// token F1 by Counter intersection (Go's lower-casing differs from Python's
// only for a word-final capital sigma, which Python lowers to ς). rouge_score: the rouge package 1.0.1's
// Rouge().get_scores([pred], [ans], avg=True)["rouge-l"]["f"]
// (pltrdy/rouge rouge/rouge.py @ 53a6fc59474648d95c1a45a1f660d15eafcdebb6,
// rouge/rouge_score.py @ 12ed0ade0350fbd211e73b8c524b09e1266c598f): sentences
// are the non-empty pieces of text.split(".") with whitespace collapsed;
// summary-level LCS with exclusive (set) counts; f = 2 (p r) / (p + r +
// 1e-8); no sentence in either raises and scores 0.0. The package rebuilds
// each LCS recursively, one Python frame per step, so a walk over about 990
// steps raises RecursionError, which the bare except turns into 0.0 (seen
// here: 992 steps pass, 1002 fail from a shallow stack); goldset scores the
// LCS and notes such requests (over 950 steps), and scores 0 a sentence pair
// over 2^25 LCS cells. classification_score as written: the match list is
// mutated while iterated (the element after a removed one is skipped) and
// `em_match_list != 0` is always true, so the difflib fallback never runs.
// retrieval_score ("Paragraph (\d+)") and retrieval_zh_score ("段落(\d+)"),
// regex-based, supported; \d is any Unicode Nd digit; an answer without the
// pattern is an error (LongBench raises IndexError). count_score.
// code_sim_score: the first line without '`', '#', "//"; fuzzywuzzy 0.18.0
// fuzz.ratio with python-Levenshtein (100 for equal strings, 0 for an empty
// one, else int(round(100 x (lensum - d) / lensum)) with d the Levenshtein
// distance at substitution cost 2, over code points). Without
// python-Levenshtein, fuzzywuzzy falls back to difflib.SequenceMatcher, whose
// ratio can differ: goldset matches the Levenshtein backend only.
// Unsupported, reported as such with no number (never 0): multifieldqa_zh
// (qa_f1_zh_score), dureader and vcsum (rouge_zh_score), which tokenise with
// jieba; lsht and passage_retrieval_zh need no jieba and are scored. eval.py
// passes the file's last all_classes to every line; goldset passes each
// record's own (the same within a LongBench subset).
//
// Length buckets are LongBench-E's scorer_e on the record's "length" (words):
// 0-4k (< 4000), 4-8k (< 8000), 8k+, each round(100 * np.mean(x), 2) as
// numpy does it: np.mean is pairwise summation (npSum) and round() on an
// np.float64 is rint(x * 100) / 100, not Python's round; an empty bucket is
// null (numpy: NaN). The overall score is goldset's: the mean of the
// supported subsets' scores.
//
// v2 is LongBench v2's pred.py @ c5ea10bcd06285223c58dfed76bbc92d22273709
// (an empty output is skipped, pred.py's if-output-is-empty continue; else
// extract_answer(output.strip()): remove '*', then "The correct answer is
// \(([A-D])\)", then "The correct answer is ([A-D])") and result.py @
// 5214a555c1096fae7fc2ffbe7bf1a0f3295e25aa (accuracy round(100 * correct /
// n, 1) overall, easy/hard, short/medium/long; a length other than short or
// medium counts as long; an empty column is null where result.py divides by
// zero).
//
// testdata/score holds synthetic records, two workloads (v1: every
// supported metric, a jieba subset, edge cases; v2), a dense and a sparse
// run of each (vLLM --save-detailed and run-batch; run_vllm_offline.py with
// texts and token ids), and expected.json printed by make_expected.py, which
// holds LongBench's scoring functions transcribed from the files above (the
// rouge package transcribed, as Debian does not package it) and runs them with
// Debian's fuzzywuzzy + python-Levenshtein, jieba and numpy. The tests
// require equality with it per subset and bucket.
//
// Against a baseline (ScoreDeltas), per supported subset: run - baseline of
// the rounded scores, and a paired bootstrap CI of 100 x mean(run_i - base_i):
// Resamples (default 10000) rounds, each drawing, subset by subset in report
// order, n indices with replacement from SplitMix64(Seed, default 1) with
// Lemire's bounded integers (longbench.SplitMix64.IntN); the interval is the
// (1-level)/2 and (1+level)/2 quantiles, numpy's linear percentile; "overall"
// takes the mean over subsets of each round's subset means. GreedyAgreement
// compares, per prompt both runs completed, the share of identical texts and
// the first diverging position, in the recorded token ids when both files
// have them (run_vllm_offline.py), else in Qwen3 tokens of the re-encoded
// texts (--tokenizer; a re-encoding can merge differently from what was
// sampled), else in Unicode code points; it says which, and notes a run whose
// temperature is not recorded as 0.
//
// Report shows, when given the workload and the run carries texts, the
// LongBench score overall and per subset beside throughput and latency, with
// the difference from the baseline, and WriteSVG adds a bar panel of them.
package serving
