"""Logical dtypes of a goldset manifest and their stored .npy encodings.

A manifest names each tensor's logical dtype; the .npy file holds its
storage encoding (manifests/doc.go, ops.md §0 and spec 2's header):

    float16 <f2   bfloat16 <u2 (raw bits)   float32 <f4   float64 <f8
    int32 <i4   int64 <i8   uint8 |u1   bool |b1
    float8_e4m3fn |u1 (codes)   float8_e8m0fnu |u1 (scale exponents)
    float4_e2m1fn_x2 |u1 (two E2M1 codes per byte, element 2i in the low
                       nibble, 2i+1 in the high one; the manifest's shape
                       is the byte shape)

numpy has no bf16/fp8/fp4, so the numpy view of those is the exactly
decoded float32 values (fp4 pairs expand the last axis twice); torch gets
its own dtype where the installed torch has it (torch.bfloat16 always,
float8_e4m3fn / float8_e8m0fnu / float4_e2m1fn_x2 in newer releases), else
the same decoded float32 values.
"""
import numpy as np

# logical dtype -> numpy storage dtype of the .npy file
STORAGE = {
    "float16": np.dtype("<f2"),
    "bfloat16": np.dtype("<u2"),
    "float32": np.dtype("<f4"),
    "float64": np.dtype("<f8"),
    "int32": np.dtype("<i4"),
    "int64": np.dtype("<i8"),
    "uint8": np.dtype("|u1"),
    "bool": np.dtype("|b1"),
    "float8_e4m3fn": np.dtype("|u1"),
    "float8_e8m0fnu": np.dtype("|u1"),
    "float4_e2m1fn_x2": np.dtype("|u1"),
}

FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
INT_DTYPES = ("int32", "int64", "uint8")
BYTE_CODED = ("float8_e4m3fn", "float8_e8m0fnu", "float4_e2m1fn_x2")

# torch dtype attribute names for the byte-coded formats (absent in older torch)
TORCH_CODED = {
    "float8_e4m3fn": "float8_e4m3fn",
    "float8_e8m0fnu": "float8_e8m0fnu",
    "float4_e2m1fn_x2": "float4_e2m1fn_x2",
}


class UnsupportedDType(ValueError):
    """A manifest names a dtype this package does not know."""


def storage_dtype(logical):
    try:
        return STORAGE[logical]
    except KeyError:
        raise UnsupportedDType(
            f"dtype {logical!r} is not one this goldset package knows ({', '.join(STORAGE)}); "
            "upgrade the package") from None


def bf16_to_float32(bits):
    """bfloat16 bits (uint16) -> float32 values, exact (NaN payloads kept)."""
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


def float32_to_bf16(x):
    """float32 -> bfloat16 bits, round to nearest even; NaN stays a quiet NaN."""
    x = np.ascontiguousarray(x, np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    if nan.any():
        rounded = np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), rounded)
    return rounded


def e4m3fn_to_float32(codes):
    """OCP float8 E4M3FN codes -> float32: bias 7, no infinities, S.1111.111 is NaN."""
    c = np.asarray(codes, np.uint8).astype(np.int32)
    sign = np.where(c & 0x80, -1.0, 1.0)
    e = (c >> 3) & 0xF
    m = (c & 7).astype(np.float64)
    mag = np.where(e == 0, m / 8.0 * 2.0 ** -6, (1.0 + m / 8.0) * np.exp2(e.astype(np.float64) - 7))
    out = (sign * mag).astype(np.float32)
    out[(c & 0x7F) == 0x7F] = np.nan
    return out


E2M1_VALUES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
                        -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0], np.float32)


def e2m1x2_to_float32(packed):
    """Packed E2M1 pairs [..., n] -> float32 [..., 2n]: byte i holds element
    2i in bits 0-3 and element 2i+1 in bits 4-7 (ops.md §9)."""
    p = np.asarray(packed, np.uint8)
    out = np.empty(p.shape[:-1] + (2 * p.shape[-1],), np.float32) if p.ndim else None
    if out is None:
        raise ValueError("float4_e2m1fn_x2 needs at least one axis")
    out[..., 0::2] = E2M1_VALUES[p & 0xF]
    out[..., 1::2] = E2M1_VALUES[p >> 4]
    return out


def e8m0_to_float32(codes):
    """E8M0 scale bytes -> float32 2^(b-127); 255 is NaN; 0 is 2^-127 (subnormal in float32)."""
    b = np.asarray(codes, np.uint8)
    e = np.where(b == 255, 0, b).astype(np.float64) - 127  # 2^128 would overflow float32
    out = np.exp2(e).astype(np.float32)
    out[b == 255] = np.nan
    return out


DECODERS = {
    "bfloat16": bf16_to_float32,
    "float8_e4m3fn": e4m3fn_to_float32,
    "float4_e2m1fn_x2": e2m1x2_to_float32,
    "float8_e8m0fnu": e8m0_to_float32,
}


def to_numpy(stored, logical, raw=False):
    """The numpy view of a stored array: itself, or decoded float32 values."""
    if raw or logical not in DECODERS:
        return stored
    return DECODERS[logical](stored)


def to_torch(stored, logical, device=None, raw=False):
    """The torch tensor of a stored array, in the logical dtype where torch has it."""
    import torch

    a = np.ascontiguousarray(stored)
    if raw:
        t = torch.from_numpy(a.view(np.int16) if a.dtype == np.uint16 else a)
    elif logical == "bfloat16":
        t = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    elif logical in TORCH_CODED and hasattr(torch, TORCH_CODED[logical]):
        t = torch.from_numpy(a).view(getattr(torch, TORCH_CODED[logical]))
    elif logical in DECODERS:
        t = torch.from_numpy(DECODERS[logical](a))
    else:
        t = torch.from_numpy(a)
    return t.to(device) if device is not None else t
