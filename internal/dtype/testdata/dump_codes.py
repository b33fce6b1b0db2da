#!/usr/bin/env python3
"""Print ml_dtypes' and torch's decodes of every code of the byte types, and
their conversions of a probe list, for internal/dtype's fixture tests.

    python3 dump_codes.py > codes.txt

Lines (values are Python float.hex(), which Go's strconv.ParseFloat reads):
    # comment (versions)
    decode <lib> <type> <code> <value>
    round <lib> <type> <input> <code>
lib is ml_dtypes, torch (x.to(dtype)) or torch_clamp (x.clamp(-448, 448).to(dtype),
how vLLM and DeepGEMM quantize to e4m3). torch converts from float32, so its
probes are the float32-exact ones; ml_dtypes converts float64 directly.
"""
import math
import struct
import sys

out = sys.stdout
print("# python", sys.version.split()[0], file=out)
try:
    import numpy as np
    print("# numpy", np.__version__, file=out)
except Exception as e:  # noqa: BLE001
    np = None
    print("# numpy unavailable:", repr(e), file=out)
try:
    import ml_dtypes
    print("# ml_dtypes", ml_dtypes.__version__, file=out)
except Exception as e:  # noqa: BLE001
    ml_dtypes = None
    print("# ml_dtypes unavailable:", repr(e), file=out)
try:
    import torch
    print("# torch", torch.__version__, file=out)
except Exception as e:  # noqa: BLE001
    torch = None
    print("# torch unavailable:", repr(e), file=out)

TYPES = ["float8_e4m3fn", "float8_e8m0fnu", "float4_e2m1fn", "uint8"]


def f32exact(x):
    if math.isnan(x) or math.isinf(x):
        return True
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0] == x
    except OverflowError:
        return False


def probes(values):
    """Every code's value, midpoints between neighbours, their float64 and
    float32 neighbours, values past the ends, specials; both signs."""
    fin = sorted({v for v in values if math.isfinite(v)})
    ps = set(fin)
    for a, b in zip(fin, fin[1:]):
        m = (a + b) / 2
        ps.update([m, math.nextafter(m, -math.inf), math.nextafter(m, math.inf)])
        m32 = struct.unpack("<f", struct.pack("<f", m))[0]
        if m32 == m:
            lo = struct.unpack("<f", struct.pack("<I", struct.unpack("<I", struct.pack("<f", m))[0] - 1))[0] if m > 0 else m
            hi = struct.unpack("<f", struct.pack("<I", struct.unpack("<I", struct.pack("<f", m))[0] + 1))[0] if m > 0 else m
            ps.update([lo, hi])
    top, pos = fin[-1], [v for v in fin if v > 0]
    low = pos[0] if pos else 1.0
    gap = top - fin[-2]
    # Past the largest value: where the next binade's first step would be,
    # the midpoint to it, and far beyond.
    for x in [top + gap / 2, top + gap, top + 3 * gap / 2, 2 * top, 4 * top, 1e10, 3.4e38, 1e300,
              low / 2, low / 4, low * 0.75, low * 0.25, 1e-30, 1e-45, 5e-324, 0.0]:
        ps.add(x)
        ps.add(math.nextafter(x, math.inf))
        if x > 0:
            ps.add(math.nextafter(x, -math.inf))
    ps.update([-x for x in list(ps)])
    ps.update([math.inf, -math.inf, math.nan])
    return sorted(ps, key=lambda v: (math.isnan(v), v))


def mlname(t):
    return getattr(ml_dtypes, t, None) if ml_dtypes else None


def ml_decode(t):
    dt = mlname(t) if t != "uint8" else np.uint8
    codes = np.arange(256 if t != "float4_e2m1fn" else 16, dtype=np.uint8)
    return codes.view(dt).astype(np.float64).tolist()


def torch_dtype(t):
    if torch is None:
        return None
    return getattr(torch, t, None)


for t in TYPES:
    vals = None
    if ml_dtypes is not None and (t == "uint8" or mlname(t) is not None):
        vals = ml_decode(t)
        for c, v in enumerate(vals):
            print("decode ml_dtypes", t, "0x%02x" % c, float(v).hex(), file=out)
    tdt = torch_dtype(t)
    if tdt is not None and t != "float4_e2m1fn":
        codes = torch.arange(256, dtype=torch.int32).to(torch.uint8)
        tv = codes.view(tdt).to(torch.float64).tolist()
        for c, v in enumerate(tv):
            print("decode torch", t, "0x%02x" % c, float(v).hex(), file=out)
        if vals is None:
            vals = tv
    if vals is None or t == "uint8":
        continue
    ps = probes(vals)
    if ml_dtypes is not None and mlname(t) is not None:
        with np.errstate(all="ignore"):
            got = np.array(ps, dtype=np.float64).astype(mlname(t)).view(np.uint8).tolist()
        for x, c in zip(ps, got):
            print("round ml_dtypes", t, float(x).hex(), "0x%02x" % c, file=out)
    if tdt is not None and t != "float4_e2m1fn":
        p32 = [x for x in ps if f32exact(x)]
        x = torch.tensor(p32, dtype=torch.float32)
        for lib, y in [("torch", x), ("torch_clamp", x.clamp(-448, 448))]:
            if lib == "torch_clamp" and t != "float8_e4m3fn":
                continue
            got = y.to(tdt).view(torch.uint8).tolist()
            for xv, c in zip(p32, got):
                print("round", lib, t, float(xv).hex(), "0x%02x" % c, file=out)
        if torch.cuda.is_available():
            got = x.cuda().to(tdt).view(torch.uint8).cpu().tolist()
            for xv, c in zip(p32, got):
                print("round torch_cuda", t, float(xv).hex(), "0x%02x" % c, file=out)
