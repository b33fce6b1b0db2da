// Package npy reads and writes numpy .npy files, the tensor format of every
// goldset bundle, and converts between float32/float64 and the 16-bit float
// formats (float16, bfloat16) with round-to-nearest-even.
//
// # File layout
//
// A .npy file is a preamble, a header dict padded with spaces and ended by
// '\n', then the raw array data:
//
//	offset  bytes  content
//	0       6      magic "\x93NUMPY"
//	6       1      major version: 1, 2 or 3
//	7       1      minor version: 0
//	8       2|4    HEADER_LEN, little-endian: uint16 for 1.0, uint32 for 2.0/3.0
//	10|12   ...    dict  {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
//	               growth spaces, alignment spaces, '\n'  (HEADER_LEN bytes in all)
//	P+H     ...    data: prod(shape) * itemsize bytes, C order, little-endian
//
// Version 1.0 and 2.0 headers are latin-1, 3.0 headers utf-8; this package
// accepts only ASCII in the dict, which is all numpy writes for the dtypes
// below.
//
// # What the writer emits
//
// EncodeHeader, NewWriter, Create and WriteFile produce exactly the bytes
// numpy.save (numpy >= 1.23, including 2.x) writes for a C-order array of the
// same dtype and shape; the tests compare against numpy byte for byte:
//
//   - the dict keys are sorted and formatted with python repr:
//     'descr': '<f4', 'fortran_order': False, 'shape': S, followed by ", }";
//     S is "()" for 0-d, "(n,)" for 1-d, "(n, m, ...)" otherwise;
//   - growth room: 21 - len(str(shape[0])) spaces follow the dict when the
//     array has at least one dimension (shape[-1] for Fortran order), so the
//     first axis can later be rewritten in place;
//   - alignment: pad = 64 - (P + len(dict+growth) + 1) % 64 spaces, then
//     '\n', where P is 10 for 1.0 and 12 for 2.0. The data offset is thus a
//     multiple of 64, and pad is 64 rather than 0 when the unpadded header is
//     already aligned (numpy's formula);
//   - version 1.0 unless HEADER_LEN would exceed 65535, then 2.0 (3.0 is
//     never needed: the dict is ASCII).
//
// The Writer takes the header up front and the data in chunks of any size;
// it refuses bytes past the promised size and Close reports a short write
// (ErrShape). Create writes to a temporary file in the target directory and
// renames it on a successful Close, so a path never holds a partial array.
// AppendFloat32s and friends append little-endian values to a reused buffer
// (a memory copy on little-endian hosts, byte-by-byte on big-endian ones;
// identical bytes either way).
//
// # What the reader accepts
//
// ReadHeader, Open, ReadFile and ReadArray accept versions 1.0, 2.0 and 3.0,
// with HEADER_LEN at most MaxHeaderLen (1 MiB). The dict is parsed strictly as
// the python literal subset numpy writes: exactly the keys 'descr',
// 'fortran_order' and 'shape', in any order, each once; strings in '...' or
// "..." without escapes; True/False; a tuple of decimal ints (no leading
// zeros; a Python 2 "L" suffix is allowed in 1.0/2.0 files, as numpy allows);
// python whitespace between tokens, an optional trailing comma in dict and
// tuple, and only whitespace after the closing brace. Alignment and the
// final '\n' are not required. The header is then validated:
//
//   - descr: the dtypes below. Byte order '<' is accepted, '=' (native; numpy
//     never writes it) is taken as little-endian so that reading never depends
//     on the host, '|', '<', '=' or '>' are all accepted for one-byte types.
//     Big-endian multi-byte data ('>f4') and every other dtype (complex,
//     int8/int16/uint32/uint64, strings, objects, structured) are rejected
//     with ErrUnsupportedDType;
//   - fortran_order True is rejected with ErrFortranOrder: goldset tensors are
//     C-order by spec, and silently transposing would hide producer bugs;
//   - shape: dimensions >= 0, and itemsize times the product of the non-zero
//     dimensions must fit in int64 (numpy's own rule), else ErrShape.
//
// Open compares the data size the header promises with the file size before
// anything of that size is allocated or read: a short file is ErrTruncated,
// extra bytes after the data are ErrTrailingData. ReadArray reads from a
// stream under a caller's cap and grows its buffer only as bytes arrive.
//
// # Data types
//
//	DType    descr  item  Go type
//	Float16  <f2    2     uint16 bits (F16* converters)
//	Float32  <f4    4     float32
//	Float64  <f8    8     float64
//	Int32    <i4    4     int32
//	Int64    <i8    8     int64
//	Uint16   <u2    2     uint16; also bfloat16 bits, see below
//	Uint8    |u1    1     uint8
//	Bool     |b1    1     0 or 1 (any nonzero byte reads as true)
//	Int8     |i1    1     int8    } read and written, never stored in a
//	Int16    <i2    2     int16   } bundle: kernels' index outputs
//	Uint32   <u4    4     uint32  } (torch int16/uint32/uint64, numpy
//	Uint64   <u8    8     uint64  } int8) given to compare
//
// bfloat16 has no numpy dtype. It is stored as its raw bits with descr '<u2'
// and the manifest records "dtype": "bfloat16"; numpy users read it with
// arr.view(ml_dtypes.bfloat16) or (arr.astype(np.uint32) << 16).view(np.float32).
// DecodeFloat64 with bf16 set decodes such data.
//
// # Half-precision conversion
//
// F16FromF64, F16FromF32, BF16FromF64 and BF16FromF32 round to nearest, ties
// to even, exactly once (float64 inputs never pass through float32), produce
// subnormals, overflow to +-Inf (float16: |x| >= 65520; bfloat16: |x| >=
// 0x1.ffp127) and keep NaN a NaN (quiet, sign and top payload bits kept).
// The widening conversions are exact and keep NaN payloads. They are integer
// operations on the IEEE encodings plus at most one exactly-rounded float
// addition, so results are bit-identical on every architecture. The bulk
// forms (F16sFromF32s, BF16sFromF32s, F16sFromF64s, BF16sFromF64s,
// F16sToF32s, BF16sToF32s) are branch-free loops.
//
// # Errors
//
// Every error names the file ("npy: read header of \"x.npy\": ...", or
// "<stream>" for a reader without a Name method) and wraps exactly one
// sentinel, or the underlying I/O error:
//
//	ErrFormat            not a .npy file: magic, version, header length or dict syntax
//	ErrUnsupportedDType  dtype outside the table above, big-endian, structured
//	ErrTruncated         the file ends before the header or the data does
//	ErrTrailingData      bytes after the data
//	ErrFortranOrder      fortran_order True
//	ErrShape             negative or overflowing shape, data size not matching
//	                     the shape (writers), or over a caller's size cap
//
// Wrong slice lengths passed to the converters and decoders are programmer
// errors and panic.
package npy
