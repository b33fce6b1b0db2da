// Package safetensors writes and reads the safetensors file format, byte
// for byte as the reference implementation (huggingface/safetensors,
// safetensors/src/tensor.rs at commit 000a16f45cff, functions prepare,
// serialize and read_metadata) writes and reads it. No part of the Rust or
// Python code is used: the format is small and fixed.
//
// # Layout
//
//	offset 0       8 bytes   N, the header length, unsigned 64-bit little-endian
//	offset 8       N bytes   the header: UTF-8 JSON, then ' ' (0x20) padding
//	offset 8+N     ...       the tensor data, back to back, no gaps
//
// The header is one JSON object, compact (no spaces), keys in this order:
//
//	"__metadata__": {"key": "value", ...}   string to string, keys sorted; left out when empty
//	"<tensor>": {"dtype": "BF16", "shape": [3, 5], "data_offsets": [begin, end]}
//	...                                      one entry per tensor, in data order
//
// data_offsets are relative to the start of the data (offset 8+N); the first
// tensor begins at 0, each next one where the previous ended, and the last
// ends at the end of the file. The data of a tensor is its elements in C
// (row-major) order, little-endian.
//
// Padding: the JSON is followed by (8 - len%8) % 8 spaces so that N is a
// multiple of 8 and the data starts 8-byte aligned (tensor.rs prepare,
// "Force alignment to 8 bytes"). Data order: tensors sorted by descending
// dtype rank (the order of tensor.rs's Dtype enum: BOOL, U8, I8, F8_E5M2,
// F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64), then by name
// ascending; the header lists them in the same order. This puts 8-byte
// types first, so every tensor's data stays aligned to its item size.
//
// Because both the order and the padding are fixed, Encode of the same
// tensors and metadata gives the same bytes on every run.
//
// # Reading
//
// ReadHeader applies read_metadata's checks before any data is read: the
// file has at least 8 bytes, N is at most MaxHeader (100,000,000, the
// reference's MAX_HEADER_SIZE) and fits the file, the header is valid UTF-8
// JSON starting with '{', every dtype is known, shapes are non-negative and
// their byte counts do not overflow, offsets are contiguous from 0 and end
// exactly at the end of the file (ErrFormat otherwise). Duplicate tensor
// names are refused (JSON objects with repeated keys are ambiguous).
package safetensors
