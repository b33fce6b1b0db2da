// Package manifests defines goldset's bundle format and its versioned suite
// recipes.
//
// # Bundle layout
//
// A bundle is a directory, by default <out>/<suite>/, holding:
//
//	manifest.json                 the manifest (this package's Manifest)
//	<case-id>/<tensor>.npy        one .npy file per tensor (package npy)
//	<case-id>/<tensor>.npy.zst    the same, zstd-compressed, when asked for
//
// # Manifest
//
// manifest.json is JSON with a schema_version (currently 1). It records the
// suite (name, version, seed), the spec and generator versions, and per case
// its id, op, split and params; per tensor its name, role (input, golden,
// truth, aux), path relative to the bundle directory, logical dtype
// (float16, bfloat16, float32, float64, int32, int64, uint8, bool; bfloat16
// is stored as <u2 bits), shape, the sha256 and byte count of the
// uncompressed .npy bytes, and for outputs the tolerance used to judge
// them (see package compare).
//
// The digest field is the sha256 of the canonical manifest: the manifest
// marshalled by encoding/json (compact, fixed field order) with digest set
// to "" and provenance removed. Provenance holds what may change from run to
// run (time, host, tool build, command line), so the same recipe gives the
// same digest on every machine and every run.
//
// # Chains
//
// A pipeline case (docs/spec.md §14) becomes one case per stage and
// scheduler step; chains lists each pipeline (id, split, kind, the stage
// ops, the step indices, the recipe params that rebuild it) and every
// stage case has chain {id, step, stage}. Validate requires a chain's
// cases to be consecutive, in step then stage order, one per (step,
// stage), with the stage's op and the chain's split, and every named
// chain to be listed. A stage input that is an earlier stage's golden is
// that file, listed again: a path may appear twice only for an input of a
// chain case whose sha256, size, dtype, shape and compression equal the
// first entry's; Verify reads such a file once. A manifest without chains
// marshals no chains field, so earlier digests are unchanged.
//
// # Atomic writes
//
// A bundle is written into a temporary sibling directory named
// .<name>.goldset-tmp-<pid>-<random>. Every file is fsynced, the manifest is
// written last, the temporary directory is fsynced and then renamed onto the
// target. An interrupted write therefore never leaves a directory at the
// target path; temporaries left by a killed process are recognised by their
// name and removed by the next write to the same parent (only when the pid
// in the name is no longer running).
//
// Files are written with direct I/O where the filesystem allows it
// (O_DIRECT on Linux; see direct.go): whole 4 KiB blocks go from aligned
// staging buffers to the device, several 4 MiB writes in flight per file,
// and only a file's last partial block passes through the page cache. A
// bundle is usually larger than the page cache, and on virtual machines
// filling the cache costs about as much CPU as computing the data. Such a
// file's sha256 is taken from the staging buffers: from its first write of
// 1 MiB or more, on a goroutine of its own that hands them in order to
// the process's hashing workers (hashpair.go: two files' pieces are hashed
// together by internal/sha256x2, which keeps the SHA unit busy where one
// message leaves it waiting), and a buffer is refilled only once written
// and hashed. Set
// BundleWriter.Buffered for plain buffered writes; with NoSync, or for
// zstd files, writes are buffered anyway.
//
// # Reading
//
// ReadManifest rejects unknown schema versions, tensor paths that are not
// local (filepath.IsLocal), duplicate ids, unknown roles and dtypes, and
// negative shapes. Verify checks every file's presence, size, sha256, and
// that its .npy header matches the manifest's dtype and shape.
package manifests
