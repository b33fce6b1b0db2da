// Package e2e proves goldset's promises by building and running the real
// binary. It has no code outside its tests; `go test ./internal/e2e`
// builds ./cmd/goldset with the go command on PATH (the repository root
// is found from the test's working directory) into a temporary directory
// and runs it as a user would. Linux only.
//
// # Cross-architecture identity (TestCrossArchIdentity)
//
// The CLI is built with CGO_ENABLED=0 for GOARCH=amd64 GOAMD64=v1, for
// GOAMD64=v3 (only when /proc/cpuinfo lists avx2 and fma, which v3
// binaries need) and for GOARCH=arm64, run under qemu user mode
// (qemu-aarch64-static or qemu-aarch64, Debian package qemu-user-static).
// On an arm64 host the native build is compared with amd64 v1 under
// qemu-x86_64. Each build generates the same reduced selection of the
// embedded suites stage1-basic and stage2-paged, with a different
// --jobs each (1, 2, 3). The selection is chosen by size, not by id, so
// it survives recipe edits: for every (op, dtype) the smallest public or
// benchmark case, and for every op the smallest "hostile" (NaN-poisoned)
// one; the test fails if it does not cover every op the build lists
// (`goldset list --ops --json`, read from the binary). Every build's
// bundles must pass `goldset verify` (run by that build), record their
// own GOARCH in the provenance, have identical manifest digests and
// identical sha256 for every file except manifest.json (whose
// provenance differs by design). The digests are logged (go test -v).
// arm64 is where Go fuses x*y+z into one rounding, so this is the
// dynamic proof of the explicit-conversion rule.
//
// TestNoFusionInArm64Binary is the static proof, covering code the
// selection does not reach: it disassembles the arm64 binary (go tool
// objdump, functions of this module only) and fails on any fused
// multiply-add instruction (FMADDD, FMSUBD, FNMADDD, FNMSUBD and the
// single-precision forms) and on any call of math's exp/log/pow family,
// naming file:line and function.
//
// TestPinnedTestsUnderQEMU cross-compiles the pinned-vector tests of
// internal/detmath (TestPinnedBits), gen (TestRegressionVectors,
// TestZigTablesFile and other bit-exact tests) and suite
// (TestDeterministicAcrossWorkers, which compares the tiny suite's digest
// with suite/testdata/tiny.digest) for arm64, runs them under qemu from
// their package directories and natively, and requires the same results
// and messages from both: a stale pin fails both alike (the package's own
// failure, logged), any difference is an architecture dependence.
//
// When qemu is missing these tests skip with a message naming the
// package to install, after comparing the builds that could run; with
// GOLDSET_REQUIRE_TOOLS=1 they fail instead. All three skip with -short.
//
// # Crash safety
//
// TestKillDuringGen starts `goldset gen` on a stage2-paged selection
// (--jobs 1, a couple of seconds) and sends SIGKILL at: 50 ms after
// start; when the first .npy appears in the temporary directory
// (.<suite>.goldset-tmp-<pid>-<hex> beside the target); when
// manifest.json appears there (the commit: fsyncs and rename pending);
// when manifest.json appears at the target (just after the rename); and,
// with an older bundle of fewer cases already at the target, at the
// commit and when the old bundle is moved aside (.goldset-old-). After
// every kill the target must either not exist or pass `goldset verify`
// with the digest of a clean run (or of the old bundle, when replacing).
// A rerun must succeed, say "removed stale temporary directory <path>"
// for every leftover, leave none, and produce the clean digest. The log
// says which state each kill left. With -short only the tensor-write
// point runs.
//
// TestInterruptDuringGen sends SIGINT (and, without -short, SIGTERM)
// while tensors are being written: exit 1, stderr "interrupted: no
// bundle written", no bundle at the target, no temporary directory.
//
// TestDiskFull (root only; skipped when mount fails) mounts an 8 MiB
// tmpfs and generates into it: exit 1, "no space left on device" on
// stderr, and nothing left on the file system. Without -short it also
// sizes a tmpfs one page short of a one-case bundle, so the tensors fit
// and the manifest write, inside the commit, fails the same way.
//
// TestBuildFailingSink drives suite.Build (the Go API) into a Sink that
// runs out of space after N bytes (0, 1, around the .npy header, a third,
// a half, one byte short), whose Close fails, or whose first or last
// Create fails, with 1 and 3 jobs: Build must return an error wrapping
// the cause and naming the case, never panic, and close every file it
// opened.
//
// # Exit codes and bad input (TestCLIExitCodes)
//
// Through the real binary: 2 for an unknown suite, command or flag, a
// malformed --jobs, --shard or --output, --case with two suites, a
// missing argument; 0 for verify of a good bundle and compare of a golden
// with itself; 3 for verify of a bundle with a flipped bit or a missing
// file (stdout names the file), a wrong-shape candidate, gen --from a
// manifest with an edited sha256 (names the tensor) and diff of bundles
// that differ; 1 for compare with a missing case, an unknown output or a
// file that is not .npy, verify of a missing bundle, gen --from a
// manifest with schema_version 99 (stderr says "newer", no output
// directory created), an output below a regular file ("not a
// directory"), and a target that is a regular file or a foreign
// non-empty directory ("not a goldset bundle"; the directory is left
// untouched). gen --from a manifest whose provenance.version differs
// warns on stderr and exits 0 when the hashes match; diff of identical
// bundles exits 0.
//
// # Cost
//
// With a warm build cache the package takes about 100 s without -short
// (two thirds of it qemu and the arm64 test builds) and about 10 s with
// -short. A cold cache adds the standard library for GOAMD64=v3 and
// arm64 (a minute or two each on two cores).
package e2e
