// Package suite turns a versioned recipe (package manifests) into a bundle:
// it generates every case's inputs (package gen), computes the goldens
// (package golden), records tolerances (package compare) and streams the
// tensors into a Sink (an atomic bundle, or hash-only for regeneration).
//
// # The op table
//
// Everything the package knows about an op is one value, defined in the
// op's file (op_matmul.go, op_softmax.go, op_cache.go, op_paged.go,
// op_quest.go, op_mxfp4.go, op_mxfp4_gemm.go) and registered in the table of op.go: its input, output and
// aux tensors; plan (params strictly decoded, defaults filled in, sizes
// checked, a byte estimate, the build); its negative and positive controls
// (Controls); the compare tolerance family of each output; and an optional
// grading mask (Quest kmax/kmin). Planning a case asks each output's
// family for its dtype, so an unknown op, or an output whose family has no
// row for its dtype, fails before anything is built; a builder writing a
// golden the table does not list fails too. OpTable (`goldset list --ops`)
// publishes the table; docs/contributing.md is the recipe for a new op.
// Storage types come from internal/dtype.
//
// # Cases and their tensors
//
// Parameters are JSON objects, checked strictly (unknown fields are
// errors); the manifest records them with every default filled in, which
// is what `goldset gen --from` rebuilds from.
//
//	matmul            m, k, n, dtype, b_layout ("KN" | "NK"), scale_a (1), scale_b (1/sqrt(k))
//	                  a [m,k], b [k,n] or [n,k]  ->  c, c_truth
//	softmax           m, n, dtype, scale, outlier_rows, outlier_magnitude, neg_inf_rows,
//	                  neg_inf_prefix, masked_rows
//	                  x [m,n]  ->  y, y_truth, row_max, row_sum
//	reshape_and_cache t, t_s, hkv, d, bs, nb, dtype, skip_frac, all_negative, slot0, hostile
//	                  key, value [t,hkv,d], slot_mapping [t_s], key_cache, value_cache [nb,bs,hkv,d]
//	                  ->  key_cache_out, value_cache_out (exact)
//	paged_attention   hq, hkv, d, bs, dtype, context_lens | (b, len_mean, len_sigma, len_max),
//	                  max_blocks, pad_value, hostile, shared_blocks, extra_blocks, min_block,
//	                  needle ("first" | "last" | "boundary512"), scale (1/sqrt(d)), negative_q
//	                  query [b,hq,d], key_cache, value_cache [nb,bs,hkv,d], block_tables [b,maxb],
//	                  context_lens [b]  ->  out, out_truth, lse
//	quest             paged_attention's, plus k, anchor_first, anchor_last, granularity
//	                  ("q_head" | "kv_group_sum"), plant, plant_gain, tie, needle "exclude"
//	                  ->  kmax, kmin [b,maxb,hkv,d] (exact), scores [b,hsel,maxb], selected
//	                  [b,hsel,k] (set), out, out_truth, lse, dense_out (aux)
//	mxfp4_quantize    rows, k, dtype, mode (rceil), strict, zero_blocks, coarse_frac, exp_lo, exp_hi
//	                  x [rows,k]  ->  codes [rows,k/2] (float4_e2m1fn_x2), scales [rows,k/32] (e8m0)
//	mxfp4_dequantize  rows, k, dtype, scale_lo, scale_hi, edge, zero_blocks
//	                  codes, scales  ->  y [rows,k] (exact)
//	mxfp4_to_fp8      rows, k, target ("mxfp8" | "fold_group"), g, strict, scale_lo, scale_hi, zero_blocks
//	                  codes, scales  ->  fp8 [rows,k] (e4m3), scale, scale_f32, inexact [rows,groups]
//	mxfp4_gemm        m, n, k, mode, scale_x, scale_w
//	                  x [m,k] (bf16), w_codes, w_scales [n,...]  ->  y, y_truth, s (aux: sum |x*w|)
//	mxfp4_gemm_a4w4   mxfp4_gemm's, plus x_codes, x_scales (x quantized by mode)
//	mxfp4_gemm_w4a8   mxfp4_gemm's, plus x_fp8 [m,k], x_scales [m,ceil(k/128)]
//	mxfp4_moe         t, hd, i, e, topk, mode, router_skew, router_std, scale_x, scale_w1, scale_w2, bias_std
//	                  x, router_logits, w1_codes, w1_scales, b1, w2_codes, w2_scales, b2  ->  out,
//	                  out_truth; aux s, topk_ids, topk_weights; info tokens_per_expert
//	dsa_index_cache   t, di, nb, scale_fmt, skip_frac  (docs/spec.md §8a)
//	                  k [t,di], slot_mapping, index_cache [nb,64*di+256] u8 -> index_cache_out (exact)
//	dsa_indexer       layout "paged": seq_lens, next_n, hi, di, k, scale_fmt, logits_dtype,
//	                  extra_blocks, shuffle, shared_pages, tied, margin
//	                  q [b,nn,hi,di] e4m3, weights, index_cache, block_table, seq_lens ->
//	                  logits, topk_logical, topk_physical, block_header; layout "ragged":
//	                  ctx_lens, query_lens -> q, weights, kv, kv_scale, ks, ke -> logits, topk;
//	                  aux index_scores (float64 I), row_info (visible, kth, gap, A)
//	dsa_sparse_attention  seq_lens, next_n, h, dc, dr, k, index_hi, index_di, empty_rows,
//	                  single_rows, sm_scale, paging params -> q_nope, q_pe, ckv_cache,
//	                  kpe_cache, sparse_indices (the golden indexer's), block_table, seq_lens
//	                  -> out (bf16), lse, block_header; aux row_stats (max|v_sel|, count)
//	block_header      seq_lens and paging params -> block_table, seq_lens -> block_header
//
//	pipeline          chain ("paged" | "quest"), model, hq, hkv, d, dtype, scale, k, schedule
//	                  (package schedule's Config), requests (prompts/outputs or a lognormal
//	                  draw), start ("mixed" | "index" | "seq_len"), steps, graph_mode
//	                  -> one case per stage and step (pipeline.go, docs/spec.md §14);
//	                  chain "dsa": h, dc, dr, hi, di, k, next_n, scale_fmt, scale instead
//	                  of hq, hkv, d, dtype (pipeline_dsa.go)
//
// A pipeline recipe case is not an op: planCase runs the scheduler over
// its requests, and the build writes consecutive sampled steps as stage
// cases (reshape_and_cache, then unified_attention or quest on the updated
// cache), each through caseCtx.beginStage; a stage input that is an
// earlier golden is listed again (caseCtx.ref), the manifest records the
// chain (manifests.Chain), and JudgeChain / ChainControls judge a whole
// chain and name its first diverging stage and step.
//
// The DSA ops hand compare the per-row facts its DSA families need
// (op.judgeData: A, the golden scores, the block table, max|v_sel|); an
// op whose tensors depend on its params lists them per case (op.tensorsOf).
//
// Every floating output is the float64 golden rounded once: to the output
// dtype (role golden) and, for fp16/bf16, to float32 (role truth).
//
// # Structured inputs
//
// Hostile cases put NaN in every cache slot no kernel may read (slots past
// L, unreferenced blocks, a poison block that padding points at). Needles
// set one key per sequence and KV head to 4*sqrt(G) times the group's mean
// query. Quest planting scales the keys of K-anchors random non-anchor
// blocks per (sequence, KV head) by plant_gain, so their scores lead by a
// wide margin, recorded as info.selection_margin; "tie" gives every block
// the same keys; needle "exclude" puts a dominant key into a block no head
// selects, so the sparse output must differ from the dense one
// (info.sparse_dense_rel_l2).
//
// # Streaming and memory
//
// Paged caches are produced one physical block at a time, each a pure
// function of its block id (stream offset plus transforms), straight into
// the tensor's queued write buffers, in id order. The golden gathers each
// sequence's blocks by regenerating them (as raw half bits: the kernels
// widen rows as they read them), two sequences at a time, while the
// caches are still being written (whileWriting; one golden worker until
// the writing is done, since the device is the critical path). Sequences
// are handed out as workers free up and their results emitted in sequence
// order (forOrdered); quest streams its per-sequence outputs to their files
// at once but places their manifest entries after the inputs' (deferred
// tensors), so the manifest order never depends on timing.
// Quest also takes each block's metadata as the key cache is written
// (kvSource.visit): sequences started after the keys are out read it
// instead of regenerating every key, and with no_dense the attention
// regenerates only the rows of the KV heads whose selection holds the
// block (whole generator chunks, so neighbouring rows may come along).
// The MXFP4 GEMMs generate, quantize and multiply W 1024 rows at a time;
// the MoE streams one expert at a time (generated, quantized, written,
// applied to its routed tokens), so neither holds its weight set.
// The DSA builders quantize a sequence's keys block-parallel; an indexer
// case without a margin streams its index cache while its golden runs
// (keys are a pure function of the slot), and sparse MLA draws its
// selected slots once, then fills both caches at once beside the golden
// (fillAsync: the entries keep the creation order).
// Writing runs on one goroutine per tensor, and a large file's sha256 on
// one more, behind its staged copies (manifests). Every parallel loop
// runs under one process-wide bound on helper goroutines
// (internal/cpuslots), so the writer of a large tensor is not starved by
// the cases computing beside it. The case of the most planned bytes
// starts first and alone until it opens its lead tensor (headFirst; the
// plan's lead, else its first tensor; sparse MLA: the ckv cache): its
// writer is the longest, and the process's write queue serves the file
// with the most bytes to come first (manifests). Memory is bounded by the
// longest sequence (plus 8 KiB of Quest metadata per block), not by the
// cache.
//
// # Determinism
//
// Values depend only on (seed, case id, tensor name, generator version) and
// element indices, never on Options.Jobs, GOMAXPROCS or the sink. Hidden
// cases take their seed from HMAC-SHA256(secret, case id); the manifest
// records sha256(secret). Shard i of n takes every n-th selected case from
// the i-th on, so MergeManifests restores the unsharded order exactly.
package suite
