#!/usr/bin/python3
"""Independent reimplementation of package gen (generator version 1) from
gen/doc.go, in plain Python + numpy, used by TestPythonReference.

Reads a JSON list of requests on stdin, writes a JSON list of results:
  {"seed": int, "case": str, "tensor": str, "kind": ..., ...}
kinds: key; normal (dtype, at, n, scale) -> bits; uniform (dtype, at, n, lo, hi)
-> bits; ints (at, n, lo, hi); rand (n) -> uint64 words; perm (n); choice (n, k);
zig -> the ziggurat tables; case (op, params: a bundle case's params as its
manifest records them) -> {tensor name: hex of the little-endian .npy data} for
the case's generated inputs, written from docs/spec.md section 10 (structured
inputs: paged layouts, hostile NaN, needles, Quest planting, softmax special
rows, reshape_and_cache prefill and slot mapping).
"""
import hashlib
import json
import math
import struct
import sys

import numpy as np

M64 = (1 << 64) - 1
TAG = b"goldset/gen/v1"
CHUNK = 256
WY_INC = 0xa0761d6478bd642f
WY_XOR = 0xe7037ed1a0b428db


# ---- detmath (fdlibm exp/log, products rounded separately; Python floats
# are IEEE doubles and never fused)
LN2_HI = 6.93147180369123816490e-01
LN2_LO = 1.90821492927058770002e-10
LOG2E = 1.44269504088896338700e+00
P = [1.66666666666666019037e-01, -2.77777777770155933842e-03, 6.61375632143793436117e-05,
     -1.65339022054652515390e-06, 4.13813679705723846039e-08]
LG = [6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01,
      2.222219843214978396e-01, 1.818357216161805012e-01, 1.531383769920937332e-01,
      1.479819860511658591e-01]


def d_exp(x):
    if x != x:
        return x
    if x > 7.09782712893383973096e+02:
        return math.inf
    if x < -7.45133219101941108420e+02:
        return 0.0
    if -3.725290298461914e-09 < x < 3.725290298461914e-09:
        return 1 + x
    k = int(LOG2E * x - 0.5) if x < 0 else int(LOG2E * x + 0.5)
    kf = float(k)
    hi = x - kf * LN2_HI
    lo = kf * LN2_LO
    r = hi - lo
    t = r * r
    poly = t * P[4]
    poly = t * (P[3] + poly)
    poly = t * (P[2] + poly)
    poly = t * (P[1] + poly)
    poly = t * (P[0] + poly)
    c = r - poly
    y = 1 - ((lo - (r * c) / (2 - c)) - hi)
    return math.ldexp(y, k)


def d_log(x):
    if x != x or x == math.inf:
        return x
    if x < 0:
        return math.nan
    if x == 0:
        return -math.inf
    f1, ki = math.frexp(x)
    if f1 < math.sqrt(2) / 2:
        f1 *= 2
        ki -= 1
    f = f1 - 1
    k = float(ki)
    s = f / (2 + f)
    s2 = s * s
    s4 = s2 * s2
    t1 = s4 * LG[6]
    t1 = s4 * (LG[4] + t1)
    t1 = s4 * (LG[2] + t1)
    t1 = s2 * (LG[0] + t1)
    t2 = s4 * LG[5]
    t2 = s4 * (LG[3] + t2)
    t2 = s4 * (LG[1] + t2)
    r = t1 + t2
    hfsq = (0.5 * f) * f
    return k * LN2_HI - ((hfsq - (s * (hfsq + r) + k * LN2_LO)) - f)


# ---- key, chunk state, wyrand
def key(seed, case, tensor):
    msg = b""
    for field in (TAG, struct.pack("<Q", seed), case.encode(), tensor.encode()):
        msg += struct.pack("<I", len(field)) + field
    d = hashlib.sha256(msg).digest()
    return struct.unpack("<4Q", d)


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    return z ^ (z >> 31)


def chunk_state(k, c):
    return mix64((mix64(c ^ k[0]) + k[1]) & M64)


class Wy:
    def __init__(self, s):
        self.s = s
        self.pending = None

    def next64(self):
        self.s = (self.s + WY_INC) & M64
        p = self.s * (self.s ^ WY_XOR)
        return (p >> 64) ^ (p & M64)

    def next32(self):
        if self.pending is not None:
            r, self.pending = self.pending, None
            return r
        w = self.next64()
        self.pending = w >> 32
        return w & 0xffffffff


# ---- ziggurat
ZR = 3.6541528853610088
ZV = 4.92867323399e-3


def zig_tables():
    m = float(1 << 23)
    K = [0] * 256
    W = [0.0] * 256
    F = [0.0] * 256
    dn = ZR
    tn = dn
    q = ZV / d_exp(-0.5 * dn * dn)
    K[0] = int(dn / q * m)
    K[1] = 0
    W[0] = q / m
    W[255] = dn / m
    F[0] = 1.0
    F[255] = d_exp(-0.5 * dn * dn)
    for i in range(254, 0, -1):
        dn = math.sqrt(-2 * d_log(ZV / dn + d_exp(-0.5 * dn * dn)))
        K[i + 1] = int(dn / tn * m)
        tn = dn
        F[i] = d_exp(-0.5 * dn * dn)
        W[i] = dn / m
    return K, W, F


ZK, ZW, ZF = zig_tables()


def u32open(u):
    return (u + 0.5) * 2.0 ** -32


def candidate(r):
    idx = r & 0xff
    mag = r >> 9
    x = mag * ZW[idx]
    if (r >> 8) & 1:
        x = -x
    return x, mag < ZK[idx]


def finish(o, r):
    """Complete an element whose primary draw r was rejected (overflow draws)."""
    while True:
        idx = r & 0xff
        x, ok = candidate(r)
        if ok:
            return x
        if idx == 0:
            while True:
                xx = -d_log(u32open(o.next32())) / ZR
                yy = -d_log(u32open(o.next32()))
                if yy + yy > xx * xx:
                    return -(ZR + xx) if (r >> 8) & 1 else ZR + xx
        u = u32open(o.next32())
        if (ZF[idx - 1] - ZF[idx]) * u + ZF[idx] < d_exp(-0.5 * x * x):
            return x
        r = o.next32()


def chunk_normals(state):
    """The CHUNK standard normals of one chunk."""
    g = Wy(state)
    prim = [g.next32() for _ in range(CHUNK)]  # element k's primary draw
    o = Wy((state + (CHUNK // 2) * WY_INC) & M64)  # overflow draws
    out = []
    for r in prim:
        x, ok = candidate(r)
        out.append(x if ok else finish(o, r))
    return out


def normals(k, at, n):
    out = []
    for c in range(at // CHUNK, (at + n - 1) // CHUNK + 1):
        out.extend(chunk_normals(chunk_state(k, c)))
    off = at - (at // CHUNK) * CHUNK
    return out[off:off + n]


def chunked(k, at, n, one, skip_fn=None):
    out = []
    i = at
    while i < at + n:
        c, skip = divmod(i, CHUNK)
        cnt = min(CHUNK - skip, at + n - i)
        g = Wy(chunk_state(k, c))
        vals = [one(g) for _ in range(skip + cnt)]
        out.extend(vals[skip:])
        i += cnt
    return out


def bf16_bits(x):
    # RNE from float64 via integer rounding of the float64 bits (normal and
    # subnormal bf16 alike: go through float32-free exact arithmetic).
    a = np.array([x], np.float64)
    if np.isnan(a[0]):
        return 0x7fc0 | (0x8000 if math.copysign(1, x) < 0 else 0)
    sign = 0x8000 if math.copysign(1, x) < 0 else 0
    ax = abs(x)
    if ax >= float.fromhex("0x1.ffp127"):
        return sign | 0x7f80
    if ax < 2.0 ** -126:
        return sign | int(np.rint(ax * 2.0 ** 133))
    m, e = math.frexp(ax)
    q = int(np.rint(m * 256)) - 128
    ex = e - 1 + 127
    if q == 128:
        q, ex = 0, ex + 1
    return sign | (ex << 7) | q


def to_bits(vals, dtype):
    if dtype == "float16":
        return [int(v) for v in np.array(vals, np.float64).astype(np.float16).view(np.uint16)]
    if dtype == "bfloat16":
        return [bf16_bits(v) for v in vals]
    if dtype == "float32":
        return [int(v) for v in np.array(vals, np.float64).astype(np.float32).view(np.uint32)]
    return [int(v) for v in np.array(vals, np.float64).view(np.uint64)]


def lemire(g, n):
    p = g.next64() * n
    lo = p & M64
    if lo < n:
        t = ((1 << 64) - n) % n
        while lo < t:
            p = g.next64() * n
            lo = p & M64
    return p >> 64


def choice(g, n, k):
    a = list(range(n))
    for i in range(k):
        j = i + lemire(g, n - i)
        a[i], a[j] = a[j], a[i]
    return a[:k]


# ---- structured inputs (docs/spec.md section 10), from the primitives above
NAN = float("nan")


def rand_gen(seed, case, tensor):
    """The sequential generator of a stream (gen §5)."""
    return Wy(chunk_state(key(seed, case, tensor), M64))


def rnd(vals, dtype):
    """Round float64 values once (RNE) to dtype; returns their exact values."""
    if dtype == "float16":
        return [float(v) for v in np.array(vals, np.float64).astype(np.float16)]
    if dtype == "float32":
        return [float(v) for v in np.array(vals, np.float64).astype(np.float32)]
    return [float(np.array([b << 16], np.uint32).view(np.float32)[0]) for b in to_bits(vals, "bfloat16")]


def data_hex(vals, dtype):
    """The little-endian .npy data of a tensor given its exact values."""
    if dtype == "int32":
        return np.array(vals, "<i4").tobytes().hex()
    if dtype == "float32":
        return np.array(vals, np.float64).astype("<f4").tobytes().hex()
    return np.array(to_bits(vals, dtype), "<u2").tobytes().hex()


def normal_tensor(seed, case, name, n, dtype, scale=1.0, at=0):
    return rnd([v * scale for v in normals(key(seed, case, name), at, n)], dtype)


def slot_mapping(g, tokens, num_slots, neg_frac, all_neg, force0):
    """gen §8."""
    n_neg = tokens if all_neg else int(math.floor(neg_frac * tokens + 0.5))
    n_valid = tokens - n_neg
    valid = choice(g, num_slots, n_valid)
    if force0 and n_valid > 0 and 0 not in valid:
        valid[n_valid - 1] = 0
    out = [None] * tokens
    for j, t in enumerate(choice(g, tokens, n_neg)):
        out[t] = (-1, -7, -(1 << 31))[j % 3]
    it = iter(valid)
    return [v if v is not None else next(it) for v in out]


def case_reshape_and_cache(seed, case, p):
    dt, row = p["dtype"], p["hkv"] * p["d"]
    g = rand_gen(seed, case, "slot_mapping")
    sm = slot_mapping(g, p["t_s"], p["nb"] * p["bs"], p["skip_frac"], p.get("all_negative", False), p.get("slot0", False))
    n = p["nb"] * p["bs"] * row
    out = {"key": data_hex(normal_tensor(seed, case, "key", p["t"] * row, dt), dt),
           "value": data_hex(normal_tensor(seed, case, "value", p["t"] * row, dt), dt),
           "slot_mapping": data_hex(sm, "int32")}
    for name in ("key_cache", "value_cache"):
        vals = [NAN] * n if p.get("hostile") else normal_tensor(seed, case, name, n, dt)
        out[name] = data_hex(vals, dt)
    return out


def case_softmax(seed, case, p):
    m, n, dt = p["m"], p["n"], p["dtype"]
    x = normal_tensor(seed, case, "x", m * n, dt, p["scale"])
    no, ni, nm = p["outlier_rows"], p["neg_inf_rows"], p["masked_rows"]
    big = p["outlier_magnitude"]
    ko = key(seed, case, "x.outlier")
    for i, r in enumerate(choice(rand_gen(seed, case, "rows"), m, no + ni + nm)):
        base = r * n
        if i < no:
            kind = i % 3
            if kind == 0:  # uniform(-big, big): lo + fl(fl(hi - lo) * u)
                w = big - -big
                row = chunked(ko, base, n, lambda g: -big + w * ((g.next64() >> 11) * 2.0 ** -53))
            else:  # (+-big) + N(0, 1), one rounding
                sgn = 1.0 if kind == 1 else -1.0
                row = [sgn * big + z for z in normals(ko, base, n)]
            x[base:base + n] = rnd(row, dt)
        elif i < no + ni:
            x[base:base + p["neg_inf_prefix"]] = [-math.inf] * p["neg_inf_prefix"]
        else:
            x[base:base + n] = [-math.inf] * n
    return {"x": data_hex(x, dt)}


def case_paged(seed, case, p, quest):
    dt, hq, hkv, D, BS = p["dtype"], p["hq"], p["hkv"], p["d"], p["bs"]
    lens = p["context_lens"]
    B = len(lens)
    nb = [(L + BS - 1) // BS for L in lens]
    maxb = p.get("max_blocks", 0) or max(nb) + 1
    shared, extra, minb = p.get("shared_blocks", 0), p.get("extra_blocks", 0), p.get("min_block", 0)
    hostile = p.get("hostile", False)
    distinct = sum(nb) - shared
    num = minb + distinct + extra
    poison = -1
    if hostile:
        poison, num = num, num + 1
    # Block tables: one permutation of the distinct + extra ids, handed out
    # sequence by sequence, logical block by logical block.
    perm = choice(rand_gen(seed, case, "block_tables"), distinct + extra, distinct + extra)
    bt = [[0] * maxb for _ in range(B)]
    owner, logical = [-1] * num, [0] * num
    nxt = 0
    for b in range(B):
        for i in range(maxb):
            if i >= nb[b]:
                bid = poison if hostile else p.get("pad_value", -1)
            elif i == 0 and b % 2 == 1 and b // 2 < shared:
                bid = bt[b - 1][0]
            else:
                bid = minb + perm[nxt]
                nxt += 1
                owner[bid], logical[bid] = b, i
            bt[b][i] = bid
    q = normal_tensor(seed, case, "query", B * hq * D, dt)
    if p.get("negative_q"):
        q = [-v if v > 0 else v for v in q]
    # Needle positions (paged_attention placements).
    needle = None
    place = p.get("needle", "")
    if place in ("first", "last", "boundary512"):
        needle = [{"first": min(3, L - 1), "last": L - 1, "boundary512": 512 if L > 512 else -1}[place] for L in lens]
    # Quest planting: per (sequence, KV head) K - anchors non-anchor blocks
    # whose keys are multiplied by plant_gain.
    hot, gain = None, 0.0
    if quest and p["plant"]:
        g = rand_gen(seed, case, "plant")
        gain = p["plant_gain"]
        hot = [[False] * (nb[b] * hkv) for b in range(B)]
        if place == "exclude":
            needle = [-1] * B
        for b in range(B):
            if nb[b] <= p["k"]:
                continue
            af, al = p["anchor_first"], p["anchor_last"]
            free = [i for i in range(nb[b]) if not ((i == 0 and af) or (i == nb[b] - 1 and al))]
            want = p["k"] - int(af) - int(al)
            hot_any = [False] * nb[b]
            for kv in range(hkv):
                for j in choice(g, len(free), want):
                    hot[b][free[j] * hkv + kv] = True
                    hot_any[free[j]] = True
            if place == "exclude":
                for k in range(nb[b]):
                    i = (nb[b] // 2 + k) % nb[b]
                    if not hot_any[i] and i in free:
                        needle[b] = i * BS
                        break
    # Needle keys: per KV head, 4*sqrt(G) times the mean of its query rows.
    G = hq // hkv
    a = 4 * math.sqrt(G)
    nkeys = [None] * B
    for b in range(B if needle else 0):
        if needle[b] < 0:
            continue
        kk = []
        for kv in range(hkv):
            for d in range(D):
                s = 0.0
                for h in range(kv * G, (kv + 1) * G):
                    s += q[(b * hq + h) * D + d]
                kk.append(a * s / G)
        nkeys[b] = rnd(kk, dt)
    be, hd = BS * hkv * D, hkv * D

    def cache(name, is_key):
        tie = is_key and quest and p.get("tie", False)
        allv = normal_tensor(seed, case, name, be if tie else num * be, dt)
        out = []
        for pb in range(num):
            blk = list(allv[:be] if tie else allv[pb * be:(pb + 1) * be])
            b = owner[pb]
            if b < 0:
                if hostile:
                    blk = [NAN] * be
                out.extend(blk)
                continue
            i, L = logical[pb], lens[b]
            if is_key and hot is not None:
                for kv in range(hkv):
                    if hot[b][i * hkv + kv]:
                        for t in range(BS):
                            o = t * hd + kv * D
                            blk[o:o + D] = rnd([v * gain for v in blk[o:o + D]], dt)
            if is_key and nkeys[b] is not None and needle[b] // BS == i:
                o = (needle[b] % BS) * hd
                blk[o:o + hd] = nkeys[b]
            if hostile and i == nb[b] - 1:
                for t in range(L - i * BS, BS):
                    blk[t * hd:(t + 1) * hd] = [NAN] * hd
            out.extend(blk)
        return out

    return {"query": data_hex(q, dt), "key_cache": data_hex(cache("key_cache", True), dt),
            "value_cache": data_hex(cache("value_cache", False), dt),
            "block_tables": data_hex([v for row in bt for v in row], "int32"),
            "context_lens": data_hex(lens, "int32")}


def run_case(req):
    op, p, seed, case = req["op"], req["params"], req["seed"], req["case"]
    if op == "reshape_and_cache":
        return case_reshape_and_cache(seed, case, p)
    if op == "softmax":
        return case_softmax(seed, case, p)
    if op in ("paged_attention", "quest"):
        return case_paged(seed, case, p, op == "quest")
    raise SystemExit("no structured reference for op " + op)


def run(req):
    if req["kind"] == "case":
        return run_case(req)
    k = key(req["seed"], req["case"], req["tensor"])
    kind = req["kind"]
    if kind == "key":
        return [str(v) for v in k]
    if kind == "zig":
        return {"k": ZK, "w": [struct.unpack("<Q", struct.pack("<d", v))[0] for v in ZW],
                "f": [struct.unpack("<Q", struct.pack("<d", v))[0] for v in ZF]}
    if kind == "normal":
        sc = req["scale"]
        vals = normals(k, req["at"], req["n"])
        return to_bits([v * sc for v in vals], req["dtype"])
    if kind == "uniform":
        lo, hi = req["lo"], req["hi"]
        w = hi - lo
        vals = chunked(k, req["at"], req["n"], lambda g: lo + w * ((g.next64() >> 11) * 2.0 ** -53))
        return to_bits(vals, req["dtype"])
    if kind == "ints":
        lo, hi = req["lo"], req["hi"]
        return chunked(k, req["at"], req["n"], lambda g: lo + lemire(g, hi - lo))
    g = Wy(chunk_state(k, M64))
    if kind == "rand":
        return [str(g.next64()) for _ in range(req["n"])]
    if kind == "perm":
        return choice(g, req["n"], req["n"])
    if kind == "choice":
        return choice(g, req["n"], req["k"])
    raise SystemExit("unknown kind " + kind)


def main():
    reqs = json.load(sys.stdin)
    json.dump([run(r) for r in reqs], sys.stdout)


if __name__ == "__main__":
    main()
