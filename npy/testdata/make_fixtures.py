#!/usr/bin/python3
"""Make the numpy cross-check fixtures of package npy, or check Go-written files.

    make_fixtures.py --out DIR      write DIR/*.npy, DIR/cases.json, DIR/headers.json
    make_fixtures.py --check DIR    np.load every case from DIR (written by the Go
                                    tests), compare values and bytes with np.save

Array values come from a splitmix64 stream of (seed, element index) so that the
Go test regenerates them bit for bit. Everything is deterministic: rerunning
with the same numpy gives the same bytes. Run with the interpreter that has
numpy (/usr/bin/python3 on Debian); the Go tests run it with -update.
"""
import argparse
import io
import json
import os
import sys

import numpy as np
import numpy.lib.format as npformat

M64 = (1 << 64) - 1

# name, descr, shape, seed. Values: the low itemsize bytes of splitmix64(seed<<32 | k)
# (bool: its lowest bit), so floats cover NaN, Inf, subnormals and all exponents.
CASES = [
    ("f32_0d", "<f4", (), 1),
    ("f16_1", "<f2", (1,), 2),
    ("f64_5", "<f8", (5,), 3),
    ("f32_empty", "<f4", (0,), 4),
    ("i32_0x3", "<i4", (0, 3), 5),
    ("i64_3x0x2", "<i8", (3, 0, 2), 6),
    ("u2_2x3x4", "<u2", (2, 3, 4), 7),
    ("u1_7x11", "|u1", (7, 11), 8),
    ("b1_3x5", "|b1", (3, 5), 9),
    ("f16_1x1x1x1x1", "<f2", (1, 1, 1, 1, 1), 10),
    ("f32_129x257", "<f4", (129, 257), 11),
    ("i32_1000x17", "<i4", (1000, 17), 12),
    ("f64_wide_0", "<f8", (1000000007, 0), 13),
    ("f16_0_wide", "<f2", (0, 1000000007), 14),
    ("i64_4x3x2x1", "<i8", (4, 3, 2, 1), 15),
]

# Files numpy writes that are not plain numpy.save output of a C-order array.
# name: (descr, shape, seed, how)
SPECIAL = {
    "v2_f32_3x4": ("<f4", (3, 4), 21, "v2"),
    "v3_i32_5": ("<i4", (5,), 22, "v3"),
    "fortran_f64_3x4": ("<f8", (3, 4), 23, "fortran"),
    "bigendian_f4_6": ("<f4", (6,), 24, "bigendian"),
}


def splitmix(seed, n):
    k = np.arange(n, dtype=np.uint64)
    z = (np.uint64(seed) << np.uint64(32)) | k
    with np.errstate(over="ignore"):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def make_array(descr, shape, seed):
    dt = np.dtype(descr)
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    z = splitmix(seed, n)
    if dt == np.bool_:
        a = (z & np.uint64(1)).astype(np.bool_)
    else:
        raw = z.astype("<u8").view(np.uint8).reshape(n, 8)[:, : dt.itemsize]
        a = np.ascontiguousarray(raw).view(dt).reshape(-1)
    return a.reshape(shape)


def save_bytes(a, version=None):
    buf = io.BytesIO()
    if version is None:
        np.save(buf, a)
    else:
        npformat.write_array(buf, a, version=version)
    return buf.getvalue()


def conversion_inputs():
    """float64 and float32 inputs for the float16 rounding cross-check."""
    specials = [0.0, -0.0, 1.0, -2.0, 65504.0, 65519.99, 65520.0, 65536.0, 1e300,
                np.inf, -np.inf, 2.0**-14, 2.0**-24, 2.0**-25, 3 * 2.0**-25,
                2.0**-14 - 2.0**-25, 1 + 2.0**-11, 1 + 3 * 2.0**-11,
                1 + 2.0**-11 + 2.0**-40, 5e-324]
    z = splitmix(31, 6000)
    rnd = z.view(np.float64)
    rnd = rnd[np.isfinite(rnd) | np.isinf(rnd)]  # numpy's NaN conversion is not compared
    # Random doubles whose exponent lies around the float16 range.
    m = splitmix(32, 6000)
    e = (splitmix(33, 6000) % np.uint64(50)) + np.uint64(1023 - 30)
    s = splitmix(34, 6000) & np.uint64(1 << 63)
    near = (s | (e << np.uint64(52)) | (m & np.uint64((1 << 52) - 1))).view(np.float64)
    # Halfway points between neighbouring float16 values, and one float64 ulp
    # either side of them.
    h = np.arange(0, 0x7C00, 7, dtype=np.uint16).view(np.float16).astype(np.float64)
    mid = (h[:-1] + h[1:]) / 2
    f64 = np.concatenate([np.array(specials), rnd, near, mid,
                          np.nextafter(mid, np.inf), np.nextafter(mid, -np.inf)])
    f32 = splitmix(35, 6000).astype(np.uint32).view(np.float32)
    f32 = f32[~np.isnan(f32)]
    f32 = np.concatenate([f64.astype(np.float32), f32])
    return f64.astype("<f8"), f32.astype("<f4")


def header_cases():
    """(descr, fortran, shape) tuples whose headers cover every length mod 64."""
    out = []
    descrs = ["<f2", "<f4", "<f8", "<i4", "<i8", "<u2", "|u1", "|b1"]
    for i in range(200):
        ndim = i % 7
        # Up to 15 decimal digits in all, so that the byte count fits in
        # int64 (numpy and the Go encoder both refuse more).
        shape, budget = [], 15
        for j in range(ndim):
            e = min((i * 7 + j * 3) % 19, budget)
            budget -= e
            shape.append(10**e + j)
        if ndim and i % 11 == 0:
            shape[-1] = 0
        shape = tuple(shape)
        out.append((descrs[i % len(descrs)], i % 5 == 0, shape))
    return out


def header_bytes(descr, fortran, shape):
    buf = io.BytesIO()
    npformat._write_array_header(buf, {"descr": descr, "fortran_order": fortran, "shape": shape}, None)
    return buf.getvalue()


def write_fixtures(out):
    os.makedirs(out, exist_ok=True)
    cases = []
    for name, descr, shape, seed in CASES:
        a = make_array(descr, shape, seed)
        with open(os.path.join(out, name + ".npy"), "wb") as f:
            f.write(save_bytes(a))
        cases.append({"name": name, "descr": descr, "shape": list(shape), "seed": seed, "kind": "save"})
    for name, (descr, shape, seed, how) in sorted(SPECIAL.items()):
        a = make_array(descr, shape, seed)
        if how == "v2":
            data = save_bytes(a, (2, 0))
        elif how == "v3":
            data = save_bytes(a, (3, 0))
        elif how == "fortran":
            data = save_bytes(np.asfortranarray(a.T))
        elif how == "bigendian":
            data = save_bytes(a.astype(">f4"))
        with open(os.path.join(out, name + ".npy"), "wb") as f:
            f.write(data)
        cases.append({"name": name, "descr": descr, "shape": list(shape), "seed": seed, "kind": how})
    with np.errstate(over="ignore"):  # overflow to Inf is part of the test
        f64, f32 = conversion_inputs()
        np.save(os.path.join(out, "conv_in_f64.npy"), f64)
        np.save(os.path.join(out, "conv_f64_to_f16.npy"), f64.astype(np.float16).view("<u2"))
        np.save(os.path.join(out, "conv_in_f32.npy"), f32)
        np.save(os.path.join(out, "conv_f32_to_f16.npy"), f32.astype(np.float16).view("<u2"))
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump({"numpy": np.__version__, "cases": cases}, f, indent=1, sort_keys=True)
        f.write("\n")
    headers = [{"descr": d, "fortran": fo, "shape": list(s), "hex": header_bytes(d, fo, s).hex()}
               for d, fo, s in header_cases()]
    with open(os.path.join(out, "headers.json"), "w") as f:
        json.dump(headers, f, indent=0, sort_keys=True)
        f.write("\n")


def check(dir_):
    """Load the Go-written DIR/<case>.npy files; compare with numpy's own."""
    bad = 0
    for name, descr, shape, seed in CASES:
        path = os.path.join(dir_, name + ".npy")
        want = make_array(descr, shape, seed)
        got = np.load(path, allow_pickle=False)
        if got.dtype != want.dtype or got.shape != want.shape or got.tobytes() != want.tobytes():
            print(f"{name}: np.load gives {got.dtype} {got.shape}, want {want.dtype} {want.shape} and equal bytes")
            bad += 1
        with open(path, "rb") as f:
            if f.read() != save_bytes(want):
                print(f"{name}: file bytes differ from np.save")
                bad += 1
    print(f"checked {len(CASES)} files with numpy {np.__version__}: {bad} problems")
    return bad == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--out")
    g.add_argument("--check")
    args = ap.parse_args()
    if args.out:
        write_fixtures(args.out)
        return 0
    return 0 if check(args.check) else 1


if __name__ == "__main__":
    sys.exit(main())
