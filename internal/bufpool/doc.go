// Package bufpool keeps a bounded number of large byte buffers for reuse.
//
// goldset writes bundles of many large tensors one after another; a fresh
// multi-megabyte buffer costs zeroing and a page fault per 4 KiB (several
// times more on virtual machines), so the write paths (the suite's queued
// tensor buffers, the bundle writer's aligned direct-I/O buffers) hand
// their buffers back here. Unlike sync.Pool the kept buffers survive
// garbage collections, and at most Max are kept: a pool never holds more
// than Max buffers' memory beyond what is in use.
package bufpool
