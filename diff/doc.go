// Package diff compares two goldset bundles (see package manifests), so that
// maintainers who regenerate goldens after a spec or generator change see
// exactly what changed. It backs `goldset diff OLD NEW`.
//
// # What is compared
//
// Manifest level: schema_version, suite, suite_version, spec_version,
// generator, seed, hidden_commitment, shard and digest; each changed field
// is listed with its old and new JSON value (an empty optional field is
// absent). Provenance is ignored: it changes on every run. Pipeline chains
// (manifests.Chain) are compared by id key by key, as chains["ID"].params
// .schedule.seed and so on: a chain's recipe params are recorded only there.
//
// Cases are matched by id, tensors within a case by name. A case is added,
// removed, unchanged or changed. For a case in both bundles: op and split,
// then params and info as a field-level JSON diff (see JSON): every leaf
// that differs is one Change named by its key path, e.g.
// params.block_tables[2] or info.selection_margin.
//
// A tensor in both cases is unchanged when its sha256 and every manifest
// field are equal; its file is then not opened (diff trusts the manifests;
// `goldset verify` checks files against them). Otherwise it is changed, and
// the report lists which of role, dtype, shape, bytes, path, compression
// and tolerance.* differ, and whether the data (sha256) differs.
//
// JSON returns ErrJSON (wrapped) for a value that is not one valid JSON
// value; manifests.ReadManifest has already checked params and info, so
// Bundles only meets it for hand-edited manifests.
//
// # Value comparison
//
// When the data differs and dtype and shape agree, both files are streamed
// in matching chunks of Options.ChunkElems elements (1 Mi by default, so
// memory stays at two chunks per worker whatever the tensor size); chunks
// whose bytes are equal are skipped. Each .npy header is checked against its
// manifest entry and the file's length against the manifest's byte count
// (manifests.ErrMismatch otherwise). Per tensor the report gives:
//
//   - changed: elements whose stored bits differ, and their share. So -0 vs
//     +0 and a changed NaN payload count as changes (with an absolute
//     change of 0): goldens are bit-exact, and a sha256 change with no
//     changed element means the files differ outside the values (header).
//   - nan_mismatch: elements NaN on exactly one side; inf_mismatch: elements
//     infinite on at least one side (and NaN on neither). Both are left out
//     of max_abs and max_rel; first_non_finite is the first of them.
//   - max_abs = max |new - old| and max_rel = max |new - old| / max(|old|,
//     RelFloor), RelFloor = 1e-6 by default (Options.RelFloor), over the
//     other changed elements, values decoded exactly to float64 through the
//     dtype table (internal/dtype) named by the manifest's dtype: bfloat16
//     is the <u2 tensor whose manifest dtype is "bfloat16"; float8_e4m3fn,
//     float8_e8m0fnu and float4_e2m1fn_x2 are |u1 tensors decoded per byte
//     (a float4 pair counts as one element: the first nibble that differs).
//   - first: index of the first changed element; worst: of the largest
//     absolute change; max_rel_at: of the largest relative change. Indices
//     are row-major multi-dimensional ([] for a 0-d tensor); ties keep the
//     first.
//
// Integer tensors (int32, int64, uint8) are compared
// exactly as integers; their max_abs is the exact difference converted to
// float64 (exact below 2**53), and integer is true.
//
// Value comparison is skipped, with values_skipped saying why, when the
// dtype or shape changed, when Options.ValuesLimit is negative, or when it
// is positive and the old or new .npy is larger than that many bytes.
//
// # Order, parallelism and errors
//
// Cases are reported in the old manifest's order (changed and removed ones),
// then added cases in the new manifest's order; tensors likewise within a
// case. Unchanged cases and tensors are only counted. Tensors are compared
// by Options.Jobs workers; every result lands in its fixed slot, so the
// report is the same for any number of jobs. A missing or unreadable file
// fails the whole diff with an error naming the bundle (old or new), the
// case, the tensor and the file path; when several fail, the error of the
// first in manifest order is returned.
//
// # Output
//
// Report marshals to JSON (float statistics that are not finite become the
// strings "+Inf", "-Inf", "NaN"). WriteText prints the counts of unchanged,
// changed, added and removed cases and tensors, then one line per change:
// "~" changed, "+" added, "-" removed. Report.Identical is true when
// nothing differs; the CLI exits 0 then and 3 otherwise.
package diff
