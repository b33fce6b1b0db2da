// Package schedule simulates vLLM V1's scheduler over a workload and
// yields the per-step batch structure: which requests run, how many new
// tokens (q_len) each computes over how much cached context, and the block
// tables of a simulated KV block allocator. Kernel stages use the steps as
// realistic mixed batches (chunked prefill + decode + speculative verify
// rows).
//
// (Spec in progress: see the rest of this file as it is filled in.)
package schedule
