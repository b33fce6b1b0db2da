// Package schedule simulates vLLM V1's scheduler over a workload and yields
// the per-step batch structure: which requests run, how many new tokens
// (q_len) each computes over how much cached context, and the block tables
// of a simulated KV block allocator. Kernel stages use the steps as the
// mixed batches vLLM really runs (chunked prefill, decode and speculative
// verify rows in one forward pass), with slot mappings and block tables a
// paged-attention or reshape_and_cache kernel consumes as-is.
//
// # What it follows
//
// vLLM's V1 engine, read from the vllm-project/vllm source:
//
//   - vllm/v1/core/sched/scheduler.py, Scheduler.schedule(),
//     _preempt_request(), _update_after_schedule() and
//     update_from_output(), at commit 00024d314514900f361ad072af6931e403b7f589.
//   - vllm/v1/core/kv_cache_manager.py, KVCacheManager.allocate_slots() and
//     free(), at commit 003df2961dd8830c317a61f9745ccd557da9fa06.
//   - vllm/v1/core/single_type_kv_cache_manager.py (free() hands the
//     blocks back reversed) and vllm/v1/core/block_pool.py (the null block,
//     get_new_blocks, free_blocks) at commit
//     002f34915134cfd1a7d6ed777edd67dcc2289466; block_pool.py again at
//     c59cb7941357443da7c5eef75cfa8697d683d228 (Config.FreeToFront).
//   - vllm/v1/core/kv_cache_utils.py, FreeKVCacheBlockQueue (popleft_n,
//     append_n), at commit 001cabc1be16a59a70d720ed61a13b678c060a18.
//   - vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults, for the
//     defaults: on a GPU with at least 70 GiB that is not an A100 (H100,
//     H200) `vllm serve` uses max_num_batched_tokens 8192 and max_num_seqs
//     1024 (the LLM class: 16384 and 1024). block_size defaults to 16.
//     The table read at commit 99d7eb5d6a512cfcc5a2b104f24ebf2d6cda772b
//     (there inline in EngineArgs._set_default_args, before the move to
//     get_batch_defaults).
//
// The stored copies differ in commit per file; the parts used here (the
// schedule() loop, allocate_slots' block count, the free-queue order) agree
// across them except where noted.
//
// # One step
//
// A request holds num_tokens (prompt plus the outputs so far),
// num_computed_tokens (tokens whose K/V are in its blocks) and its pending
// draft tokens. Each step, with token_budget = MaxNumBatchedTokens:
//
//  1. Running requests, in admission order, while the budget lasts: n =
//     num_tokens + drafts - num_computed_tokens, capped by
//     LongPrefillTokenThreshold (when > 0), by the budget and, with
//     MaxModelLen, by max_model_len - 1 - num_computed_tokens. Blocks are
//     allocated for num_computed_tokens + n (+ k lookahead slots with
//     Lookahead): ceil(that / BlockSize) minus the blocks held, taken from
//     the free queue's front, all or nothing. If the queue is short, the
//     last running request is preempted (FCFS: lowest priority) and the
//     allocation retried; if the request preempts itself, the running
//     loop stops.
//  2. Only if nothing was preempted this step: waiting requests, FCFS, while
//     the budget lasts and fewer than MaxNumSeqs run: n = num_tokens -
//     num_computed_tokens, capped by LongPrefillTokenThreshold and the
//     budget (chunked prefill is always on in V1). If the blocks cannot be
//     allocated, admission stops (no preemption for waiting requests).
//  3. After the forward pass every row advances num_computed_tokens by its
//     q_len. A row that reaches num_tokens samples a token: a verify row
//     samples 1 + a tokens where a of its d drafts are accepted, and
//     num_computed_tokens drops by d - a (the rejected drafts' slots are
//     overwritten later). Tokens are appended one at a time; a request
//     whose outputs reach OutputTokens (or whose num_tokens reaches
//     MaxModelLen) finishes and its blocks are freed; the others get k new
//     drafts for the next step. A row that does not reach num_tokens is a
//     prefill chunk and samples nothing.
//
// Preemption (recompute) frees the request's blocks, sets
// num_computed_tokens to 0, drops its drafts and puts it at the front of
// the waiting queue; it comes back as a prefill of prompt plus the outputs
// it had.
//
// # Block allocator
//
// vLLM's BlockPool with prefix caching off: block ids 0..NumBlocks-1 start
// in the free queue in id order; block 0 is popped at once as the null
// block and never handed out (NumBlocks-1 are usable). Allocation pops from
// the front. A finished or preempted request's blocks are freed last block
// first (KVCacheManager.free reverses the table) and appended at the tail,
// so they are reused only after the blocks freed before them. At commit
// c59cb794 block_pool.py instead prepended blocks without a hash (with
// prefix caching off: every block) to the front, so the last freed block is
// reused first; Config.FreeToFront selects that order. Later free_blocks
// code quoted elsewhere appends again whenever prefix caching is off.
// Block tables only grow while a request holds them (vLLM's append-only
// tables), so Row.Blocks slices are shared, never rewritten.
//
// # Rows and steps
//
// Rows are in scheduling order: running requests first, then admitted
// waiting ones. (vLLM's model runner may reorder its persistent batch, e.g.
// decodes first for backends with a reorder_batch_threshold; the batch's
// content is the same.) Row.Kind: "prefill" when a request computes its
// whole prompt (or, resumed after preemption, its whole prompt + outputs)
// in one row; "chunk" for any other row before its first sampled token;
// "decode" for one token after it; "verify" for the last sampled token plus
// drafts. Row.Context is num_computed_tokens before the step; the slot of
// new token j is Blocks[(Context+j)/BlockSize]*BlockSize +
// (Context+j)%BlockSize (Row.Slot).
//
// Step.Index counts engine steps from 0; when nothing runs and nothing
// waits, the index jumps to the next ArrivalStep. Step.FreeBlocks is the
// free count after the step's allocation, before finished requests free
// theirs. A step that schedules nothing while requests are left ends the
// simulation with ErrStuck (it cannot happen when every request fits the
// budget alone, which Simulate checks before it starts: ErrRequest).
//
// # Speculative decoding
//
// With NumSpeculativeTokens = k > 0 every request that sampled a token
// gets exactly k drafts (an n-gram proposer can propose fewer; EAGLE
// proposes k). Draft i of a row is accepted with probability
// AcceptanceRate if drafts 0..i-1 were, drawn in step order then row order
// from SplitMix64(Seed) (53-bit uniform doubles), so a run is reproducible
// bit for bit. Lookahead adds vLLM's num_lookahead_tokens = k slots to a
// running request's allocation (EAGLE and draft-model proposers); a waiting
// request gets none, as in schedule().
//
// # Simplifications
//
//   - One process, synchronous scheduling: no async scheduling (no output
//     placeholders), no pipeline parallelism, no KV connector or P/D
//     disaggregation, no data or context parallelism.
//   - Decoder-only text: no encoder inputs or multimodal budgets, no
//     structured output, no LoRA, no pooling, no streaming sessions.
//   - Prefix caching off (the workloads run with --no-enable-prefix-caching),
//     so no cache hits, hashing or eviction; one KV cache group (full
//     attention, no sliding window or Mamba layers).
//   - FCFS policy only (no priorities); no pause states; no watermark or
//     full-sequence admission gate (options some newer commits add, off by
//     default there).
//   - One sampled token per row that completes its prefill or decodes,
//     plus accepted drafts; requests stop only at OutputTokens (vLLM
//     benchmarks run with --ignore-eos) or MaxModelLen.
//   - Deterministic seeded acceptance instead of a model; exactly k drafts.
//   - Time is counted in steps: ArrivalStep stands in for arrival times.
//
// # Workload files
//
// ReadWorkload takes a `goldset longbench build` directory, its
// manifest.json (prompts[].custom_id, prompt_tokens, max_new_tokens; all
// arrive at step 0, as `vllm bench serve` sends them at an infinite request
// rate) or a JSONL file of Request objects. Lengths are checked (1 to
// 2^30), unknown JSONL keys are refused, and errors name the line.
package schedule
