#!/usr/bin/python3
"""Writes fixtures.json: small inputs and numpy float64 reference outputs
for each golden kernel. Run with Debian's numpy: /usr/bin/python3
make_fixtures.py (go test ./golden -run Fixtures -update does it).

Floats are stored as float.hex strings (exact; Go's strconv.ParseFloat
reads them, and 'inf'/'-inf'). Inputs are float32 values (rounded to
bfloat16 for the attention caches), so the Go kernels see exactly the same
numbers. References are computed independently here, in float64."""
import json
import math
import os

import numpy as np

rng = np.random.default_rng(20240601)


def hexes(a):
    return [float(x).hex() for x in np.asarray(a, dtype=np.float64).ravel()]


def bf16(a):
    a = np.asarray(a, dtype=np.float32)
    u = a.view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16  # round to nearest even
    return u.astype(np.uint32).view(np.float32)


cases = []

# matmul
for (m, k, n, nk) in [(1, 7, 5, False), (3, 33, 17, True), (5, 129, 9, False)]:
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = (rng.standard_normal((k, n)) / math.sqrt(k)).astype(np.float32)
    c = a.astype(np.float64) @ b.astype(np.float64)
    bin_ = b.T.copy() if nk else b
    cases.append({"op": "matmul", "m": m, "k": k, "n": n, "bNK": nk,
                  "a": hexes(a), "b": hexes(bin_), "c": hexes(c)})

# softmax: normal, +-1e4, near fp16 max, first half -inf, one fully masked row
m, n = 5, 300
x = rng.standard_normal((m, n)).astype(np.float32) * 3
x[1] = rng.uniform(-1e4, 1e4, n).astype(np.float32)
x[2] = (65504 - rng.uniform(0, 30, n)).astype(np.float32)
x[3, : n // 2] = -np.inf
x[4] = -np.inf
x64 = x.astype(np.float64)
mx = x64.max(axis=1)
y = np.zeros_like(x64)
s = np.zeros(m)
for i in range(m):
    if np.isinf(mx[i]):
        continue
    e = np.exp(x64[i] - mx[i])
    s[i] = e.sum()
    y[i] = e / s[i]
cases.append({"op": "softmax", "m": m, "n": n, "x": hexes(x), "y": hexes(y),
              "rowMax": hexes(mx), "rowSum": hexes(s)})

# paged attention + quest on one case (quest cases reuse its inputs): B=3, Hq=8, Hkv=2 (G=4), D=16, BS=8
B, Hq, Hkv, D, BS = 3, 8, 2, 16, 8
lens = [1, 29, 64]
nbs = [(l + BS - 1) // BS for l in lens]
MAXB = max(nbs) + 1
NB = sum(nbs) + 2
perm = rng.permutation(NB)
bt = np.full((B, MAXB), -1, dtype=np.int32)
kc = np.zeros((NB, BS, Hkv, D), dtype=np.float32)
vc = np.zeros((NB, BS, Hkv, D), dtype=np.float32)
nxt = 0
for b in range(B):
    for i in range(nbs[b]):
        bt[b, i] = perm[nxt]
        nxt += 1
kc[:] = bf16(rng.standard_normal(kc.shape))
vc[:] = bf16(rng.standard_normal(vc.shape))
q = bf16(rng.standard_normal((B, Hq, D)))
q[1] = -np.abs(q[1])  # negative q: the min bound carries the signal
scale = 1 / math.sqrt(D)
G = Hq // Hkv


def rows(cache, b, kvh, blocks):
    out = []
    for i in blocks:
        for off in range(BS):
            if i * BS + off < lens[b]:
                out.append(cache[bt[b, i], off, kvh].astype(np.float64))
    return np.array(out)


def attend(b, h, blocks):
    K = rows(kc, b, h // G, blocks)
    V = rows(vc, b, h // G, blocks)
    s = scale * (K @ q[b, h].astype(np.float64))
    m = s.max()
    p = np.exp(s - m)
    return (p @ V) / p.sum(), m + math.log(p.sum())


out = np.zeros((B, Hq, D))
lse = np.zeros((B, Hq))
for b in range(B):
    for h in range(Hq):
        out[b, h], lse[b, h] = attend(b, h, range(nbs[b]))
att = {"batch": B, "Hq": Hq, "Hkv": Hkv, "D": D, "NB": NB, "BS": BS, "MAXB": MAXB,
       "scale": scale.hex(), "q": hexes(q), "kCache": hexes(kc), "vCache": hexes(vc),
       "blockTables": bt.ravel().tolist(), "contextLens": lens}
cases.append(dict(att, op="paged_attention", out=hexes(out), lse=hexes(lse)))

kmax = np.zeros((B, MAXB, Hkv, D))
kmin = np.zeros((B, MAXB, Hkv, D))
for b in range(B):
    for i in range(nbs[b]):
        for kvh in range(Hkv):
            r = rows(kc, b, kvh, [i])
            kmax[b, i, kvh] = r.max(axis=0)
            kmin[b, i, kvh] = r.min(axis=0)
for gran, hsel in [("q_head", Hq), ("kv_group_sum", Hkv)]:
    K = 3
    scores = np.full((B, hsel, MAXB), -np.inf)
    sel = np.full((B, hsel, K), -1, dtype=np.int32)
    for b in range(B):
        for r in range(hsel):
            heads = [r] if gran == "q_head" else range(r * G, (r + 1) * G)
            for i in range(nbs[b]):
                tot = 0.0
                for h in heads:
                    qh = q[b, h].astype(np.float64)
                    tot += np.maximum(qh * kmax[b, i, h // G], qh * kmin[b, i, h // G]).sum()
                scores[b, r, i] = tot
            nb = nbs[b]
            if K >= nb:
                chosen = list(range(nb))
            else:
                chosen = sorted({0, nb - 1})
                rest = sorted((i for i in range(nb) if i not in chosen),
                              key=lambda i: (-scores[b, r, i], i))
                chosen = sorted(chosen + rest[: K - len(chosen)])
            sel[b, r, : len(chosen)] = chosen
    sout = np.zeros((B, Hq, D))
    slse = np.zeros((B, Hq))
    for b in range(B):
        for h in range(Hq):
            r = h if gran == "q_head" else h // G
            sout[b, h], slse[b, h] = attend(b, h, [i for i in sel[b, r] if i >= 0])
    cases.append(dict(op="quest", granularity=gran, K=K, kmax=hexes(kmax), kmin=hexes(kmin),
                      scores=hexes(scores), selected=sel.ravel().tolist(),
                      out=hexes(sout), lse=hexes(slse)))

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "fixtures.json"), "w") as f:
    json.dump({"numpy": np.__version__, "cases": cases}, f, separators=(",", ":"))
    f.write("\n")
