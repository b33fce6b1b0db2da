// Command goldset generates seeded inputs and float64 golden outputs for LLM
// kernels as bundles of .npy files with a manifest, judges kernel outputs
// against them, and builds LongBench serving workloads. Run `goldset --help`.
//
// # Exit codes
//
// Every command maps its result to one of these in one place (exitCode in
// app.go):
//
//	0    ok
//	1    error: unreadable input, I/O failure, not enough free space, a
//	     target that is not goldset's (or exists without --overwrite)
//	2    usage: a bad flag or flag value (--jobs 0, --n 0, --max-len 0, a
//	     malformed --shard, --split nope), an unknown suite, case, split or
//	     output name, a missing or misspelled subcommand, JOB_COMPLETION_INDEX
//	     without GOLDSET_SHARDS, an empty selection, merge --out overlapping
//	     a shard
//	3    a verification or comparison that failed: a tensor whose sha256,
//	     size or header differs, a manifest that is not valid, a candidate of
//	     the wrong shape or dtype, a golden that fails its sha256, a shard
//	     that fails verification in merge, bundles that differ (diff)
//	130  interrupted: the first Ctrl-C (or SIGTERM) cancels, the command
//	     removes its temporaries and exits 130; a command still running
//	     a second later (blocked where no context reaches: an open, a write
//	     to a pipe nobody reads) is ended then by internal/shutdown, which
//	     lets a bundle's final rename finish and removes temporaries; a
//	     second signal exits at once
//
// With --json, gen, merge, verify, compare, diff, list, export, import,
// longbench build, longbench schedule, serving check and serving score print
// JSON objects whose top-level "ok" is true exactly when they exit 0
// (list: {"ok", "suites"}; list --ops: {"ok", "ops"}; diff: "ok" beside
// the report's fields), and a command that fails with an error prints
// {"ok": false, "exit_code": N, "error": "..."} on stdout. A numeric field
// that is NaN or infinite (compare's worst_ratio, rel_l2, worst_candidate;
// diff's max_abs, max_rel) is the string "NaN", "+Inf" or "-Inf", never
// null (internal/jsonnum): Python's float() and jq's tonumber read all
// three.
//
// # Safety
//
// goldset replaces only what it can prove is its own: an existing output
// must be a goldset bundle (or longbench build) of the same kind and nothing
// else, and replacing it needs --overwrite and is announced. Every file read
// from a bundle, a data directory or named on the command line (RESULT,
// --recipe, --tokenizer, --v2-template, --model FILE, --secret-file,
// tokenize FILE, ...) must be a regular file reached without links; FIFOs,
// devices, directories and links are refused by name before any read, exit
// 1, and files with a natural size are refused above it before reading
// (package internal/safefile). Every path flag and argument is marked in
// paths.go; inputs_test.go probes each input with a FIFO, a link and a
// directory.
//
// A forced exit on a signal cuts work as a crash would: a bundle (and a
// longbench build) appears at its target only by renaming a complete
// temporary directory, and that rename is never cut, so the target holds
// the old output or the new complete one. Temporary directories are
// removed on the forced exit; a bundle's that a still-running writer
// refilled is removed by the next gen into the same place.
package main
