#!/usr/bin/env python3
"""ml_dtypes' (and torch's, where installed) view of MXFP4 blocks, for
golden's TestMXFP4Fixture.

    python3 mxfp4_fixture.py > mxfp4_fixture.txt

The scale byte of each block is computed here from ops.md 9a's formulas
with exact Python float arithmetic (float32 values are exact Python
floats); the element codes are ml_dtypes' own round-to-nearest-even
conversion (astype float4_e2m1fn) of x * 2^(127-b), after clipping to
[-6, 6] (the saturation rule); decodes are ml_dtypes' (and torch's)
float4_e2m1fn and float8_e8m0fnu values multiplied in float32.

Lines:
    # comment
    block <mode> <byte> <x0 .. x31 as float32 hex bits> <16 packed code bytes, hex>
    decode <lib> <byte> <float32 hex bits of code 0 .. 15 times the scale>
"""
import math
import random
import struct
import sys

import numpy as np
import ml_dtypes

try:
    import torch
except Exception:  # noqa: BLE001
    torch = None

out = sys.stdout
print("# python", sys.version.split()[0], "numpy", np.__version__, "ml_dtypes", ml_dtypes.__version__,
      "torch", torch.__version__ if torch is not None else "unavailable", file=out)


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def f32bits(v):
    return struct.unpack("<I", struct.pack("<f", v))[0]


def scale_byte(amax, mode):
    if amax == 0:
        return 0
    m, E = math.frexp(amax)  # amax = m * 2^E, m in [0.5, 1)
    E -= 1                   # floor(log2 amax)
    if mode == "rceil":
        e = -200
        while math.ldexp(6, e) < amax:
            e += 1
    elif mode == "floor":
        e = E - 2
    elif mode == "ceil":
        e = E - 2 + (1 if amax > math.ldexp(1, E) else 0)
    else:  # even
        e = E - 2 + (1 if amax >= math.ldexp(1.75, E) else 0)
    return min(max(e + 127, 0), 254)


def blocks():
    mids = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0, 6.5, 7.0, 7.5, 0.5, 1.0, 3.0]
    r = random.Random(20261201)
    for e in (-127, -126, -100, -3, 0, 1, 17, 100, 125):
        for amax in (6.0, 1.5, 1.75, 7.0, 4.0):
            vals = [amax * 2.0 ** e] + [mids[(i * 5 + e) % len(mids)] * 2.0 ** e * (-1) ** i for i in range(31)]
            yield [f32(v) for v in vals]
    for _ in range(40):
        e = r.randint(-130, 110)
        vals = [f32(r.gauss(0, 1) * 2.0 ** e) for _ in range(32)]
        if r.random() < 0.3:
            vals[r.randrange(32)] = -0.0
        yield vals
    yield [0.0] * 16 + [-0.0] * 16
    yield [f32(math.ldexp(k, -149)) for k in range(1, 33)]  # float32 subnormals


for vals in blocks():
    amax = max(abs(v) for v in vals)
    x = np.array(vals, dtype=np.float64)
    for mode in ("rceil", "floor", "ceil", "even"):
        b = scale_byte(amax, mode)
        # x * 2^(127-b) is exact and, at most 8 in magnitude, a float32; np.clip keeps -0.0
        scaled = np.clip(x * 2.0 ** (127 - b), -6.0, 6.0).astype(np.float32)
        codes = scaled.astype(ml_dtypes.float4_e2m1fn).view(np.uint8) & 0xF
        packed = bytes(int(codes[2 * i]) | int(codes[2 * i + 1]) << 4 for i in range(16))
        print("block", mode, b, " ".join("%08x" % f32bits(v) for v in vals), packed.hex(), file=out)

e2m1 = np.arange(16, dtype=np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float32)
for b in range(256):
    s = np.array([b], dtype=np.uint8).view(ml_dtypes.float8_e8m0fnu).astype(np.float32)[0]
    with np.errstate(over="ignore", invalid="ignore"):
        vals = (e2m1 * np.float32(s)).astype(np.float32)
    print("decode ml_dtypes", b, " ".join("%08x" % v for v in vals.view(np.uint32)), file=out)
    if torch is not None and hasattr(torch, "float8_e8m0fnu"):
        ts = torch.tensor([b], dtype=torch.uint8).view(torch.float8_e8m0fnu).float()
        tv = (torch.from_numpy(e2m1.copy()) * ts).numpy().view(np.uint32)
        print("decode torch", b, " ".join("%08x" % v for v in tv), file=out)
