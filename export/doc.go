// Package export writes a bundle's cases in the formats kernel teams
// already run (safetensors for torch, FlashInfer Trace for
// FlashInfer-Bench, msOpST case files for Ascend) and reads an export
// back, proving every tensor in it bit-identical to the source manifest.
// Everything per op it needs comes from the op table (suite.ExportSpecOf:
// FlashInfer op_type, msOpST op type, axis names); nothing here switches
// on op names.
//
// # Every export
//
//	goldset-manifest.json   the source manifest.json, byte for byte
//	goldset-export.json     the index (Index): format, suite, version, seed,
//	                        manifest digest, exported and skipped cases, and
//	                        every other file with its size, sha256, case and
//	                        the case tensors it holds
//
// Exports are deterministic: the same bundle and options give the same
// bytes (no times, hosts or paths; JSON keys in fixed or sorted order;
// files in manifest order). An export is written into a temporary
// directory beside --out and renamed onto it when complete; an existing
// --out must be empty (nothing is ever replaced).
//
// # Tensor storage
//
// A tensor's data is its .npy data bytes unchanged: little-endian, C
// order, bfloat16 as its 16 bits. In safetensors files the dtypes are
// float16 F16, bfloat16 BF16, float32 F32, float64 F64, int32 I32,
// int64 I64, float8_e4m3fn F8_E4M3, and uint8, float8_e8m0fnu and
// float4_e2m1fn_x2 U8 with the manifest's shape (bytes; two FP4 codes per
// byte, element 2i in the low nibble). safetensors 0.8's torch table has
// no F8_E8M0 and its F4 counts 4-bit elements, so bytes are what every
// loader reads the same way; the manifest record in the metadata names the
// real dtype. Every safetensors file carries __metadata__ (strings):
//
//	format                  "pt"
//	goldset.case            the manifest's case record, compact JSON (params, every
//	                        tensor's dtype, shape, sha256, tolerance)
//	goldset.case_id, goldset.op, goldset.suite, goldset.suite_version,
//	goldset.seed, goldset.manifest_digest, goldset.spec_version,
//	goldset.generator, goldset.export_version
//
// # safetensors
//
//	<case>.safetensors      every tensor of the case: inputs, goldens, truth, aux
//
// # flashinfer-trace
//
// The FlashInfer Trace dataset layout that flashinfer-bench's
// TraceSet.from_path reads (flashinfer_bench/data/trace_set.py, commit
// 15bfeb4d7a03): definitions/*.json, workloads/*.jsonl.
//
//	definitions/<def>.json                     one Definition (flashinfer_bench/data/definition.py,
//	                                           commit 30545a8d9a67; docs/flashinfer_trace/definition.md)
//	workloads/<def>.jsonl                      one workload Trace per case (trace.py commit 06323a42cf94,
//	                                           workload.py commit 488b310c2b2e): definition, workload
//	                                           {uuid, axes, inputs}, solution null, evaluation null
//	blob/workloads/<def>/<case>.safetensors    the case's inputs (SafetensorsInput: type
//	                                           "safetensors", path relative to the dataset root, tensor_key)
//	blob/goldens/<def>/<case>.safetensors      its goldens, truth and aux tensors
//
// A definition is named goldset_<op>_<8 hex of sha256 of its op, axes,
// inputs and outputs>: cases with the same tensors, dtypes and axes share
// one. Its op_type is the op table's; tags carry goldset_op:,
// goldset_suite:, goldset_version:, goldset_manifest: (the doc's
// "<namespace>:<value>" form); every axis is "var" and each workload binds
// them all; axis names are the op table's where it names them, else
// <tensor>_<dim>. inputs and outputs list the case's inputs and goldens in
// manifest order with FlashInfer dtypes: the list of
// docs/flashinfer_trace/definition.md (commit 0d4284acd80e), whose
// float8_e4m3fn definition.py at 30545a8d9a67 still spells float8_e4m3
// (only the ragged dsa_indexer case has such tensors). reference is valid Python with a
// top-level run() whose parameters are the inputs in order (the
// definition validators' rules); it raises NotImplementedError and says
// where the goldens are, since goldset's reference is its float64 Go
// kernel, not Python. The workload uuid is goldset-<suite>-<version>-<case>.
// The seed and every tensor's sha256 are in the safetensors metadata.
//
// FlashInfer Trace has no dtype for uint8, float8_e8m0fnu, float4 packed
// as bytes or float64: a case with such an input or golden (the MXFP4 ops,
// dsa_index_cache, the paged dsa_indexer) is skipped and listed in the
// index's "skipped" with the reason; asking for it with --case is an
// error.
//
// # msopst
//
//	<Op>/<Op>_case.json              the msOpST test case definition file: a JSON array, one
//	                                 object per case: case_name, op, input_desc, output_desc
//	<Op>/data/<case>/<tensor>.bin    every tensor, raw (no header)
//	<Op>/<Op>_goldset_check.json     the result check: per case, every input and golden .bin
//	                                 with its type, shape and .npy sha256, each golden's
//	                                 tolerance, truth file and goldset compare command
//
// <Op> is the op table's Ascend op type. A desc is {name, format ["ND"],
// type [t], shape}; inputs add data_distribute ["uniform"] and
// value_range [[min, max]] of the exported data, as the CANN msOpST case
// examples have them (CANN 8.0.0 "Test Case Definition File",
// hiascend.com/document/detail/en/canncommercial/800/devaids/optool/
// atlasopdev_16_0035.html and _0036.html). Types are CANN's names: float
// (float32), float16, bfloat16, double, int32, int64, uint8,
// float8_e4m3fn, float8_e8m0, float4_e2m1 (whose shape counts elements,
// twice the stored bytes of its last dimension). The full field table of
// that page (how msOpST takes input data from files, its expected-output
// and comparison keys) was not available to check against, so the case
// file holds only the fields those examples show, the .bin data and the
// check live beside it, and testdata/msopst_case.schema.json is the JSON
// Schema of what is written (a test validates every export against it).
//
// # Import
//
// Import reads IndexFile and ManifestFile and, for every file of case
// tensors, rebuilds each tensor's .npy bytes (goldset's header for the
// manifest's dtype and shape, then the exported data) and compares their
// sha256 with the manifest's: equal means the exported tensor is the
// bundle's bit for bit. Every file's sha256 must be the index's, every
// tensor of every exported case must be found, the carried manifest's
// digest must match its content, no unlisted file may be present, and
// with a source bundle its digest must be the carried one. Differences
// are reported as Problems, not errors.
package export
