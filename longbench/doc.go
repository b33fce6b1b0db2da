// Package longbench turns LongBench records into reproducible, tokenized
// long-context serving workloads: it reads LongBench JSONL, formats prompts
// as LongBench's pred.py does, truncates them in the middle so that every
// prompt plus its output fits the model's context, applies the Qwen3 chat
// template, tokenizes them, selects N prompts to a target mean length (or N
// per length band) and writes one input file per consumer (vLLM and SGLang
// benchmarks, vLLM run-batch, token-id drivers) plus token ids as .npy.
//
// # Input formats
//
// One JSONL file per subset, <dir>/<subset>.jsonl, one JSON object per line
// (UTF-8; a leading BOM, CRLF line ends and blank lines are tolerated).
// Keys match exactly, as in Python; unknown keys are ignored.
//
//   - LongBench v1 (THUDM/LongBench): "input" (string, required), "context"
//     (string, required), "_id" (string, required), "answers" (list of
//     strings or null), "length" (number: a word count, not tokens),
//     "dataset", "language" (strings), "all_classes" (list or null).
//   - LongBench v2 (THUDM/LongBench-v2): "_id", "context", "question",
//     "choice_A".."choice_D" (strings, required), "answer", "domain",
//     "sub_domain", "difficulty", "length" (strings: short/medium/long).
//
// Lines are streamed (a 1 MiB bufio reader, lines up to ReadOptions.MaxLineBytes,
// 64 MiB by default), and each file's sha256 is computed in the same pass.
// A bad line yields a *LineError ("file:line: ...") wrapping ErrMalformed;
// ReadOptions.SkipMalformed skips such lines instead and reports them.
//
// Configuration, as in LongBench's config/ directory (by default
// <data>/config, else <data>/../config): dataset2prompt.json maps a subset to a
// Python str.format template; dataset2maxlen.json maps it to the maximum
// generation length. A LongBench-E subset "<task>_e" falls back to the
// "<task>" entries.
//
// # Prompt recipe
//
// For each record of subset s (pred.py semantics):
//
//  1. prompt = dataset2prompt[s].format(**record). Supported: literal text,
//     "{{" and "}}" escapes, named fields "{name}" (also "{name!s}" and
//     "{name:}"). A field the record schema lacks fails with
//     ErrUnknownField naming template and field; positional fields,
//     attribute/index access, !r/!a, format specs and nested fields fail
//     with ErrTemplate. Only string fields (and v1 "length") can be
//     formatted; v1 templates use {context} and {input}. An absent optional
//     key formats as "" (Python would raise KeyError). v2 fields are
//     substituted as stored by the str.format form. LongBench v2's own
//     prompt files (prompts/0shot.txt: $DOC$, $Q$, $C_A$..$C_D$) are read
//     with BuildOptions.V2Template (DollarTemplate) and filled as v2's
//     pred.py does: template.replace('$DOC$', context.strip())
//     .replace('$Q$', question.strip()).replace('$C_A$', ...)... in that
//     order, each replacing every occurrence in the string built so far,
//     each field stripped as Python's str.strip() does (PyStrip: Unicode
//     White_Space plus U+001C..U+001F); the file is read in text mode
//     (CRLF and CR become LF), as Python's open().read() does.
//  2. ids = Encode(prompt). If len(ids) > max_len: with half = max_len/2,
//     prompt = Decode(ids[:half], skip_special=true) +
//     Decode(ids[len-half:], skip_special=true). max_len comes from the
//     truncation policy (PromptOptions.Policy; manifest recipe.truncation_policy):
//     "fit" (default) ContextLen - max_new_tokens - T, where T is the chat
//     template's token count (Encode of the template around an empty
//     prompt: Qwen3 8, 12 with the think block); "longbench" ContextLen -
//     500, LongBench pred.py's config/model2maxlen.json; "fixed"
//     PromptOptions.MaxLen (--truncate-at). Plan fails with ErrBudget,
//     naming the subset, when max_len + T + max_new_tokens > ContextLen.
//     Truncation happens before step 3.
//  3. Unless s is one of trec, triviaqa, samsum, lsht, lcc, repobench-p (or
//     NoChat is set), the Qwen3 chat template for one user message:
//     "<|im_start|>user\n" + prompt + "<|im_end|>\n<|im_start|>assistant\n",
//     plus "<think>\n\n</think>\n\n" when NoThinking (enable_thinking=False).
//  4. input_ids = Encode(final prompt); special-token text maps to its ids
//     and no BOS is added (Qwen3). The prompt's sha256 is that of its UTF-8
//     bytes.
//  5. Budget by construction: if len(input_ids) + max_new_tokens >
//     ContextLen (re-encoding the decoded halves, or the template's seam
//     with the prompt, can add tokens), max_len is lowered by the excess and
//     steps 2-4 repeat (at most 8 times, else ErrBudget). Every prompt Build
//     writes satisfies prompt_tokens + max_new_tokens <= ContextLen.
//
// SpectralKVRecipe (max_len fixed at 40900, half 20450, thinking disabled)
// reproduces the Qwen3 prefill ids of the spectralKV LongBench files
// exactly; the test suite checks this against the shared sample. Those
// prompts plus their outputs can exceed 40960, so the recipe sets
// AllowOverBudget, which skips step 5 and the budget check and which Build
// refuses: it serves only to reproduce reference files.
//
// # Selection
//
// Build tokenizes every record of the chosen subsets (phase 1 keeps only
// lengths), then Select picks N of the prompt lengths (chat template
// included) deterministically:
//
//  1. Candidates are prompts with prompt_tokens + max_new_tokens <=
//     ContextLen (always true after step 5) and length <= MaxPromptTokens
//     (when set). N > candidates fails with ErrNotEnough.
//  2. With a target mean T and tolerance tol (default 2%): if the mean of
//     the N shortest candidates exceeds T(1+tol), or the mean of the N
//     longest is below T(1-tol), fail with ErrUnreachable.
//  3. Seeded uniform sample: a partial Fisher-Yates shuffle of the
//     candidates driven by SplitMix64(seed) with Lemire's unbiased bounded
//     integers (no library PRNG, so the stream never changes).
//  4. Greedy swaps: while |sum - N*T| > tol*N*T/2, replace one selected
//     prompt by one unselected prompt so that the new sum is as close to N*T
//     as possible (ties: lower selected position, then shorter then
//     lower-index replacement); stop when no swap improves. Few swaps are
//     made, so the result stays close to the random sample.
//  5. If the mean is still off by more than tol (sparse lengths), restart
//     step 4 from the window of N consecutive candidates in length order
//     whose mean is closest to T. Still off: ErrUnreachable.
//
// Without a target, the selection is the seeded sample of step 3. Selected
// prompts are written in candidate order (subsets in the order given, then
// file order). Stats reports count, min, p50, p90 (nearest rank), max, mean
// and total; Histogram renders equal-width bins as text.
//
// # Length sets
//
// With BuildOptions.Buckets (ascending band edges E_1 < ... <= ContextLen;
// Limit adds E = ContextLen) Build makes N prompts per band instead of a
// target mean. A record is eligible for band E when its untruncated prompt
// plus template plus output reaches E; band k takes a seeded sample
// (SplitMix64(seed + k), as in step 3 above) of N eligible records, which
// are then middle-truncated so that prompt_tokens + max_new_tokens == E: the
// budget starts at E - max_new_tokens - T and moves by the difference until
// the total is E; since pred.py's halves keep an even count, length sets
// give the head the odd token (head = ceil(b/2), tail = floor(b/2)), and if
// the seam still skips E the cut point moves by up to 4 tokens. A total that
// cannot reach E exactly stays the closest below it (in the band; the
// manifest counts the exact ones). Fewer than N eligible records fails with
// ErrNotEnough and the counts; records are never repeated within a band
// (one record may appear in several bands, with custom_id suffix -t<E>).
// Output order: bands ascending, then candidate order. The manifest's
// length_sets lists every band (lower, upper, eligible, selected, exact).
//
// # Outputs
//
// Build writes into a temporary directory beside Out and renames it into
// place only when everything succeeded, so a failed build leaves no partial
// output. Same inputs, options, tokenizer and seed give byte-identical files
// for any number of workers:
//
//   - serve.jsonl: {"prompt": P, "output_tokens": max_new_tokens,
//     "custom_id": id} per line, P with the chat template: vllm bench serve
//     --dataset-name custom --skip-chat-template --custom-output-len -1.
//   - batch.chat.jsonl: vllm run-batch lines {"custom_id", "method":
//     "POST", "url": "/v1/chat/completions", "body": {"model": Model,
//     "messages": [{"role": "user", "content": prompt before the template}],
//     "max_completion_tokens", "temperature": 0, "ignore_eos": true,
//     "chat_template_kwargs": {"enable_thinking": !NoThinking}}}, only for
//     prompts built with a chat template (the no-chat subsets are listed in
//     the manifest's chat_batch; the file is absent when none is left).
//   - sglang.jsonl: {"custom_id", "conversations": [{"role": "user",
//     "content": P}, {"role": "assistant", "content": A}]}, A a text that
//     encodes to exactly max_new_tokens tokens (Replies: a one-token unit
//     such as " the" repeated, verified by encoding).
//   - sharegpt.json: a JSON list of {"id", "conversations": [{"from":
//     "human", "value": P}, {"from": "gpt", "value": A}]}.
//   - prompt_ids.jsonl: {"custom_id", "prompt_token_ids", "max_tokens"};
//     run_vllm_offline.py drives vLLM's LLM.generate(TokensPrompt) over it.
//   - prompt_ids.npy int32 [total] (all prompts' ids concatenated),
//     prompt_offsets.npy int64 [N+1] (prompt i is ids[off[i]:off[i+1]]),
//     prompt_lens.npy int32 [N].
//   - histogram.png: the prompt lengths, band edges (red) and context
//     (blue), drawn with image/png only.
//   - manifest.json: source files with sha256, size and record counts,
//     template file sha256s, tokenizer sha256 (from an optional
//     SHA256() string method), the recipe (context_len, truncation policy,
//     chat template and its token count, per-subset template key, max_len
//     and max_new_tokens), the selection (seed, target, tolerance,
//     algorithm, swaps, candidate and selected stats, text histogram),
//     length_sets, chat_batch, files (every consumer file with its
//     consumer, server and client command, applies_chat_template, versions
//     needed), workload_digest, the sha256 of every other output file, and
//     per prompt in output order: custom_id, subset, _id, line, token counts
//     before truncation and final, total_tokens (prompt + output), band,
//     truncated flag, max_new_tokens, prompt_sha256.
//
// custom_id is "<subset>-<_id>", with "-t<E>" in a length set and
// "-L<line>" appended when two prompts would share one. docs/consumers.md
// states each file's contract as read in the consumer's source (repository,
// path, commit) and whether the consumer applies the chat template.
//
// # Workload digest
//
// manifest.json's workload_digest is the lowercase hex sha256 of the
// concatenation, over the prompts in output order, of the UTF-8 bytes
//
//	<L>:<custom_id> <prompt_sha256> <prompt_tokens> <max_new_tokens>\n
//
// where L is the byte length of custom_id, numbers are decimal without
// leading zeros or signs, the separators are one ':' and single spaces
// (0x20), and every prompt ends with one '\n' (0x0A). Python:
//
//	h = hashlib.sha256()
//	for p in manifest["prompts"]:
//	    c = p["custom_id"].encode()
//	    h.update(b"%d:%s %s %d %d\n" % (len(c), c, p["prompt_sha256"].encode(), p["prompt_tokens"], p["max_new_tokens"]))
//
// WorkloadDigest computes it. Two runs measured the same requests only if
// the manifests they were checked against have the same digest.
//
// Strings in JSON output are written without HTML escaping.
package longbench
