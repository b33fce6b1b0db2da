// Package longbench turns LongBench records into reproducible, tokenized
// long-context prompts: it reads LongBench JSONL, formats prompts as
// LongBench's pred.py does, truncates them in the middle, applies the Qwen3
// chat template, tokenizes them, selects N prompts to a target mean length
// and writes serving/batch inputs plus token ids as .npy.
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
//     substituted as stored: LongBench-v2's own pred.py uses $DOC$-style
//     placeholders and strips each field, so a v2 template for goldset is
//     written in str.format form ({context}, {question}, {choice_A}, ...)
//     and does not strip.
//  2. ids = Encode(prompt). If len(ids) > max_len: with half = max_len/2,
//     prompt = Decode(ids[:half], skip_special=true) +
//     Decode(ids[len-half:], skip_special=true). max_len is
//     PromptOptions.MaxLen when set, else ContextLen (40960) minus the
//     subset's max generation length. Truncation happens before step 3.
//  3. Unless s is one of trec, triviaqa, samsum, lsht, lcc, repobench-p (or
//     NoChat is set), the Qwen3 chat template for one user message:
//     "<|im_start|>user\n" + prompt + "<|im_end|>\n<|im_start|>assistant\n",
//     plus "<think>\n\n</think>\n\n" when NoThinking (enable_thinking=False).
//  4. input_ids = Encode(final prompt); special-token text maps to its ids
//     and no BOS is added (Qwen3). The prompt's sha256 is that of its UTF-8
//     bytes.
//
// SpectralKVRecipe (max_len fixed at 40900, half 20450, thinking disabled)
// reproduces the Qwen3 prefill ids of the spectralKV LongBench files
// exactly; the test suite checks this against the shared sample.
//
// # Selection
//
// Build tokenizes every record of the chosen subsets (phase 1 keeps only
// lengths), then Select picks N of the prompt lengths (chat template
// included) deterministically:
//
//  1. Candidates are lengths <= MaxLen (when set). N > candidates fails
//     with ErrNotEnough.
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
// # Outputs
//
// Build writes into a temporary directory beside Out and renames it into
// place only when everything succeeded, so a failed build leaves no partial
// output. Same inputs, options, tokenizer and seed give byte-identical files
// for any number of workers:
//
//   - serve.jsonl: {"prompt": P, "output_tokens": max_gen} per line. P
//     already holds the chat template: run
//     vllm bench serve --dataset-name custom --dataset-path serve.jsonl
//     --skip-chat-template --custom-output-len -1 (per-line output lengths;
//     or give one --custom-output-len). vLLM shuffles custom datasets unless
//     told otherwise.
//   - batch.jsonl: OpenAI batch format for vllm run-batch:
//     {"custom_id": "<subset>-<_id>", "method": "POST", "url":
//     "/v1/completions", "body": {"model": M, "prompt": P, "max_tokens":
//     max_gen}} ("-L<line>" is appended to a duplicated custom_id).
//   - prompt_ids.npy int32 [total] (all prompts' ids concatenated),
//     prompt_offsets.npy int64 [N+1] (prompt i is ids[off[i]:off[i+1]]),
//     prompt_lens.npy int32 [N].
//   - manifest.json: source files with sha256, size and record counts,
//     template file sha256s, tokenizer sha256 (from an optional
//     SHA256() string method), the recipe (truncation policy, chat
//     template, per-subset template key, max_len and max_new_tokens), the
//     selection (seed, target, tolerance, algorithm, swaps, candidate and
//     selected stats, histogram), the sha256 of every other output file,
//     and per prompt: custom_id, subset, _id, line, token counts before
//     truncation and final, truncated flag, prompt sha256.
//
// Strings in JSON output are written without HTML escaping.
package longbench
