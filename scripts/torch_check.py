#!/usr/bin/env python3
"""Cross-check a goldset bundle with numpy and PyTorch (CPU or GPU).

    python3 scripts/torch_check.py BUNDLE [--device cuda] [--goldset PATH]

For every case it (1) loads every tensor with plain numpy.load and checks its
sha256, dtype and shape against the manifest; (2) recomputes the op in
torch float64 from the inputs, independently of goldset's Go kernels, and
reports the distance of goldset's float32 truth (in float32 ulps) and of its
golden (exact ops: bit equality); (3) runs torch's own low-precision kernels
(fp16/bf16 matmul, softmax, SDPA-style attention) and judges them with the
manifest's tolerance, as `goldset compare` would. Prints one line per case
and a JSON summary; exits 1 if any check fails.

DSA (docs/spec.md §8) and MXFP4 (§9) are recomputed in float64 from the
format definitions: e4m3, E8M0 and E2M1 bytes are decoded by tables built
from the bit layouts, checked at start against torch.float8_e4m3fn and
torch.float8_e8m0fnu where this torch has them (the summary's "decoders"
says which; Debian's torch 1.13 has neither). Where goldset's order of
summation is exact or fixed (index-cache quantization, indexer scores, the
block headers, quantize, dequantize, to_fp8, the GEMMs' ascending-k sums)
the goldens must match bit for bit; sparse attention within 1 ulp of a
float64 MLA over the golden selection, the MoE within its truth's float32
rounding. The low-precision GPU kernels for these ops are judged by
scripts/dsa_gpu_check.py and scripts/mxfp4_gpu_check.py.

The op names and each op's tensors come from `goldset list --ops --json`
(--goldset, default `goldset` on PATH). Cases of an op goldset lists but this
script has no torch reference for (REFERENCES below) are reported as
"skip" and named in the summary's unchecked_ops; a case of an op goldset does
not list, or whose tensors are not the ones its op lists, fails.
"""
import argparse, hashlib, json, math, os, subprocess, sys

import numpy as np
import torch


def load(bdir, t):
    path = os.path.join(bdir, t["path"])
    raw = open(path, "rb").read()
    if hashlib.sha256(raw).hexdigest() != t["sha256"]:
        raise SystemExit(f"{path}: sha256 mismatch")
    a = np.load(path, allow_pickle=False)
    want = {"float16": "float16", "bfloat16": "uint16", "float32": "float32", "float64": "float64", "int32": "int32",
            "uint8": "uint8", "float8_e4m3fn": "uint8", "float8_e8m0fnu": "uint8", "float4_e2m1fn_x2": "uint8"}[t["dtype"]]
    if a.dtype.name != want or list(a.shape) != t["shape"]:
        raise SystemExit(f"{path}: numpy sees {a.dtype}{list(a.shape)}, manifest says {t['dtype']}{t['shape']}")
    if t["dtype"] == "bfloat16":
        a = (a.astype(np.uint32) << 16).view(np.float32)
    return a


def ulps32(a, b):
    """max distance in float32 ulps between float32 arrays (NaN == NaN)."""
    a = np.ascontiguousarray(a, np.float32).view(np.int32).astype(np.int64)
    b = np.ascontiguousarray(b, np.float32).view(np.int32).astype(np.int64)
    a = np.where(a < 0, -(a & 0x7FFFFFFF), a)
    b = np.where(b < 0, -(b & 0x7FFFFFFF), b)
    return int(np.abs(a - b).max()) if a.size else 0


def allclose(cand, gold, tol):
    """goldset's elementwise rule: |c-g| <= atol + f*rms(row) + rtol*|g|."""
    c = np.asarray(cand, np.float64)
    g = np.asarray(gold, np.float64)
    fin = np.isfinite(g)
    if not np.array_equal(np.isnan(c), np.isnan(g)) or not np.array_equal(c[~fin & ~np.isnan(g)], g[~fin & ~np.isnan(g)]):
        return False, "nonfinite mismatch"
    gr = g.reshape(-1, g.shape[-1]) if g.ndim else g.reshape(1, 1)
    rms = np.sqrt(np.mean(np.where(np.isfinite(gr), gr, 0) ** 2, axis=1, keepdims=True))
    allowed = tol.get("atol", 0) + tol.get("atol_rms_factor", 0) * np.broadcast_to(rms, gr.shape).reshape(g.shape) + tol.get("rtol", 0) * np.abs(g)
    err = np.where(fin, np.abs(c - g), 0)
    bad = int((err > allowed).sum())
    return bad == 0, f"{bad} of {g.size} outside tolerance, worst {float((err / np.maximum(allowed, 1e-300)).max()):.3g}x allowed"


def attention64(q, kc, vc, bt, lens, scale, blocks=None):
    """float64 reference: out [B,Hq,D], lse [B,Hq]; blocks[b][h] = logical blocks to use."""
    B, Hq, D = q.shape
    NB, BS, Hkv, _ = kc.shape
    G = Hq // Hkv
    out = torch.zeros(B, Hq, D, dtype=torch.float64, device=q.device)
    lse = torch.zeros(B, Hq, dtype=torch.float64, device=q.device)
    for b in range(B):
        L = int(lens[b]); nb = (L + BS - 1) // BS
        phys = bt[b, :nb].long()
        K = kc[phys].reshape(nb * BS, Hkv, D)[:L].double()
        V = vc[phys].reshape(nb * BS, Hkv, D)[:L].double()
        for h in range(Hq):
            idx = torch.arange(L, device=q.device)
            if blocks is not None:
                sel = blocks[b][h]
                idx = torch.cat([torch.arange(i * BS, min(L, (i + 1) * BS), device=q.device) for i in sel])
            s = scale * (K[idx, h // G] @ q[b, h].double())
            m = s.max()
            p = torch.exp(s - m)
            out[b, h] = (p @ V[idx, h // G]) / p.sum()
            lse[b, h] = m + torch.log(p.sum())
    return out, lse


def check_matmul(op, p, T, A, td, dev, res):
    a, b = td("a").double(), td("b").double()
    ref = a @ (b.T if p["b_layout"] == "NK" else b)
    truth = A.get("c_truth", A["c"])
    res["truth_ulps"] = ulps32(ref.float().cpu().numpy(), truth)
    if p["dtype"] != "float32":
        dt = torch.float16 if p["dtype"] == "float16" else torch.bfloat16
        ah, bh = td("a").to(dt), td("b").to(dt)
        try:
            native = (ah @ (bh.T if p["b_layout"] == "NK" else bh)).float().cpu().numpy()
        except RuntimeError as e:  # CPU torch before 2.x has no float16 matmul
            res["torch_kernel"] = f"not run: {e}"
            return
        res["torch_kernel_pass"], res["torch_kernel"] = allclose(native, truth, T["c"]["tolerance"])


def check_softmax(op, p, T, A, td, dev, res):
    x = td("x").double()
    ref = torch.softmax(x, -1)
    ref = torch.nan_to_num(ref, nan=0.0)  # fully masked rows are defined as 0
    truth = A.get("y_truth", A["y"])
    res["truth_ulps"] = ulps32(ref.float().cpu().numpy(), truth)
    mx = x.max(-1).values
    res["row_max_ulps"] = ulps32(mx.float().cpu().numpy(), A["row_max"])
    native = torch.softmax(td("x").float(), -1).cpu().numpy()
    native = np.nan_to_num(native, nan=0.0)
    res["torch_kernel_pass"], res["torch_kernel"] = allclose(native, truth, T["y"]["tolerance"])


def check_reshape_and_cache(op, p, T, A, td, dev, res):
    sm = A["slot_mapping"]
    for kv in ("key", "value"):
        cache = np.array(A[kv + "_cache"], copy=True)
        flat = cache.reshape(-1, cache.shape[2], cache.shape[3])
        for t_, s in enumerate(sm):
            if s >= 0:
                flat[s] = A[kv][t_]
        raw = lambda a: a.view(np.uint32) if a.dtype == np.float32 else a.view(np.uint16)
        res[kv + "_bit_exact"] = bool(np.array_equal(raw(cache), raw(A[kv + "_cache_out"])))


def check_attention(op, p, T, A, td, dev, res):
    q, kc, vc = td("query"), td("key_cache"), td("value_cache")
    bt, lens = td("block_tables"), A["context_lens"]
    blocks = None
    if op == "quest":
        sel = A["selected"]
        B, Hsel, K = sel.shape
        G = p["hq"] // Hsel
        blocks = [[[int(i) for i in sel[b, h // G] if i >= 0] for h in range(p["hq"])] for b in range(B)]
        # independent selection: scores from kmax/kmin in float64, stable sort
        BS = p["bs"]
        ok = True
        for b in range(B):
            L = int(lens[b]); nb = (L + BS - 1) // BS
            phys = bt[b, :nb].long()
            Kb = kc[phys].double()  # [nb, BS, Hkv, D]
            valid = (torch.arange(nb * BS, device=dev).reshape(nb, BS) < L)[:, :, None, None]
            kmax = torch.where(valid, Kb, -math.inf).amax(1)
            kmin = torch.where(valid, Kb, math.inf).amin(1)
            qd = q[b].double()
            Hkv = kc.shape[2]; Gq = p["hq"] // Hkv
            sc = torch.stack([torch.maximum(qd[h] * kmax[:, h // Gq], qd[h] * kmin[:, h // Gq]).sum(-1) for h in range(p["hq"])])
            if Hsel == Hkv and Gq > 1:
                sc = sc.reshape(Hkv, Gq, nb).sum(1)
            for h in range(Hsel):
                if nb <= K:
                    want = list(range(nb))
                else:
                    anchors = []
                    if p.get("anchor_first", True): anchors.append(0)
                    if p.get("anchor_last", True) and nb - 1 not in anchors: anchors.append(nb - 1)
                    rest = sorted((i for i in range(nb) if i not in anchors), key=lambda i: (-float(sc[h, i]), i))
                    want = sorted(anchors + rest[: K - len(anchors)])
                got = [int(i) for i in sel[b, h] if i >= 0]
                ok = ok and want == got
        res["selection_exact"] = ok
    out, lse = attention64(q, kc, vc, bt, lens, p["scale"], blocks)
    res["truth_ulps"] = ulps32(out.float().cpu().numpy(), A.get("out_truth", A["out"]))
    res["lse_ulps"] = ulps32(lse.float().cpu().numpy(), A["lse"])
    # torch's low-precision path: scores and softmax in fp32, P rounded to the input dtype.
    dt = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}[p["dtype"]]
    o32, _ = attention64(q.float().to(dt).float(), kc.to(dt).float(), vc.to(dt).float(), bt, lens, p["scale"], blocks)
    res["torch_kernel_pass"], res["torch_kernel"] = allclose(o32.to(dt).float().cpu().numpy(), A.get("out_truth", A["out"]), T["out"]["tolerance"])


def unified64(q, kc, vc, bt, sl, qsl, scale, pdt=None):
    """vLLM's ref_paged_attn (tests/kernels/attention/test_triton_unified_attention.py)
    over query_start_loc/seq_lens: out [T,Hq,D], lse [T,Hq] in q's dtype,
    padded tokens 0; pdt rounds P to that dtype before the PV product."""
    T, Hq, D = q.shape
    NB, BS, Hkv, _ = kc.shape
    G = Hq // Hkv
    out = torch.zeros(T, Hq, D, dtype=q.dtype, device=q.device)
    lse = torch.zeros(T, Hq, dtype=q.dtype, device=q.device)
    for s in range(len(sl)):
        t0, t1, L = int(qsl[s]), int(qsl[s + 1]), int(sl[s])
        Q = t1 - t0
        if Q == 0:
            continue
        nb = -(-L // BS)
        phys = torch.as_tensor(np.asarray(bt[s, :nb], np.int64), device=q.device)
        K = kc[phys].reshape(nb * BS, Hkv, D)[:L].to(q.dtype).repeat_interleave(G, dim=1)
        V = vc[phys].reshape(nb * BS, Hkv, D)[:L].to(q.dtype).repeat_interleave(G, dim=1)
        S = scale * torch.einsum("qhd,khd->hqk", q[t0:t1], K)
        mask = torch.triu(torch.ones(Q, L, dtype=torch.bool, device=q.device), diagonal=L - Q + 1)
        S = S.masked_fill(mask, -math.inf)
        m = S.amax(-1, keepdim=True)
        P = torch.exp(S - m)
        den = P.sum(-1)
        if pdt is not None:
            P = P.to(pdt).to(q.dtype)
        out[t0:t1] = torch.einsum("hqk,khd->qhd", P, V) / den.T[..., None]
        lse[t0:t1] = (m[..., 0] + torch.log(den)).T
    return out, lse


def check_unified(op, p, T, A, td, dev, res):
    q, kc, vc = td("query"), td("key_cache"), td("value_cache")
    bt, sl, qsl = A["block_table"], A["seq_lens"], A["query_start_loc"]
    n = int(qsl[-1])  # tokens past it are graph padding: not graded
    res["padded_tokens"] = int(q.shape[0]) - n
    out, lse = unified64(q.double(), kc, vc, bt, sl, qsl, p["scale"])
    truth = A.get("out_truth", A["out"])
    res["truth_ulps"] = ulps32(out[:n].float().cpu().numpy(), truth[:n])
    res["lse_ulps"] = ulps32(lse[:n].float().cpu().numpy(), A["lse"][:n])
    # torch's low-precision path: fp32 scores and softmax, P rounded to the input dtype.
    dt = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}[p["dtype"]]
    o32, _ = unified64(q.float(), kc, vc, bt, sl, qsl, p["scale"], pdt=dt)
    res["torch_kernel_pass"], res["torch_kernel"] = allclose(o32[:n].to(dt).float().cpu().numpy(), truth[:n], T["out"]["tolerance"])


# ---- byte formats (docs/spec.md §8, §9): value tables from the formats'
# definitions, cross-checked at start against torch's own dtypes where this
# torch has them (torch >= 2.1 float8_e4m3fn, >= 2.7 float8_e8m0fnu) ----

E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], np.float64)


def _e4m3_table():
    b = np.arange(256)
    e, m = (b >> 3) & 15, (b & 7).astype(np.float64)
    v = np.where(e == 0, m / 8 * 2.0 ** -6, (1 + m / 8) * 2.0 ** (e - 7))
    v = np.where(b & 0x80, -v, v)
    v[(b & 0x7F) == 0x7F] = np.nan
    return v


E4M3 = _e4m3_table()
E8M0 = np.where(np.arange(256) == 255, np.nan, 2.0 ** (np.arange(256) - 127.0))


def same(a, b):
    """equal values, NaN for NaN (-0 == +0)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return a.shape == b.shape and bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


def decoders():
    """how each byte format is decoded: the table, and whether torch agrees."""
    out = {}
    for name, table in (("float8_e4m3fn", E4M3), ("float8_e8m0fnu", E8M0)):
        dt = getattr(torch, name, None)
        if dt is None:
            out[name] = f"table (torch {torch.__version__} has no {name})"
            continue
        t = torch.arange(256, dtype=torch.uint8).view(dt).to(torch.float64).numpy()
        if not same(t, table):
            raise SystemExit(f"torch.{name} disagrees with the format's table")
        out[name] = f"table = torch.{name}"
    out["float4_e2m1fn_x2"] = "table (OCP E2M1)"
    return out


def e2m1(packed):
    """E2M1 values [..., 2n] of packed codes [..., n] (element 2i in bits 0-3)."""
    return np.stack([E2M1[packed & 15], E2M1[packed >> 4]], axis=-1).reshape(*packed.shape[:-1], -1)


def mx_values(codes, scales):
    """MXFP4 codes times their E8M0 block scales, float64."""
    v = e2m1(codes)
    return (v.reshape(*scales.shape, 32) * E8M0[scales][..., None]).reshape(v.shape)


def rne_to_grid(a, grid, even):
    """|a| (float64, >= 0) to the nearest grid value (ascending), ties to
    where even is True, saturating at the last: the grid index."""
    a = np.minimum(a, grid[-1])
    hi = np.minimum(np.searchsorted(grid, a), len(grid) - 1)
    lo = np.maximum(hi - 1, 0)
    dl, dh = a - grid[lo], grid[hi] - a
    return np.where(dh < dl, hi, np.where(dl < dh, lo, np.where(even[hi], hi, lo)))


def e4m3_bytes(x):
    """RNE e4m3fn bytes of float64 x (finite), saturating at +-448, sign kept."""
    pos = E4M3[:0x7F]  # bytes 0..126 ascending, the last 448
    i = rne_to_grid(np.abs(x), pos, np.arange(0x7F) % 2 == 0)
    return (i | np.where(np.signbit(x), 0x80, 0)).astype(np.uint8)


def e2m1_nibbles(x):
    """RNE E2M1 codes (0..15) of float64 x, saturating at 6, sign kept."""
    i = rne_to_grid(np.abs(x), E2M1[:8], np.arange(8) % 2 == 0)
    return (i | np.where(np.signbit(x), 8, 0)).astype(np.uint8)


def bf16_of64(x):
    """float64 to bf16 values (as float64) with one RNE rounding (normal range);
    torch's .to(bfloat16) from float64 goes through float32 (two roundings)."""
    m, e = np.frexp(x)
    return np.ldexp(np.rint(np.ldexp(m, 8)), e - 8)


def ulps(a, b, bf16=False):
    """max distance in float32 (or bf16) ulps (NaN == NaN, -inf == -inf)."""
    d = ulps32(np.asarray(a, np.float32), np.asarray(b, np.float32))
    return d >> 16 if bf16 else d


# ---- DSA (docs/spec.md §8) ----

def block_header(bt, lens, nb):
    """(valid tokens, logical start) per physical block, first reference wins."""
    h = np.tile(np.array([0, -1], np.int32), (nb, 1))
    seen = np.zeros(nb, bool)
    for b in range(len(lens)):
        L = int(lens[b])
        for i in range((L + 63) // 64):
            ph = int(bt[b, i])
            if not seen[ph]:
                seen[ph] = True
                h[ph] = (min(64, L - 64 * i), 64 * i)
    return h


def check_header(A, res):
    if "block_header" in A:
        res["block_header_exact"] = bool(np.array_equal(block_header(A["block_table"], A["seq_lens"], A["block_header"].shape[0]), A["block_header"]))


def check_block_header(op, p, T, A, td, dev, res):
    check_header(A, res)


def dsa_scale(amax, fmt):
    """fl32(max(amax, fl32(1e-4)) / 448), ue8m0: up to a power of two."""
    q = (torch.from_numpy(np.maximum(amax, np.float32(1e-4)).astype(np.float32)) / torch.tensor(448, dtype=torch.float32)).numpy()
    if fmt == "fp32":
        return q
    m, e = np.frexp(q.astype(np.float64))
    return np.ldexp(1.0, np.where(m == 0.5, e - 1, e)).astype(np.float32)


def check_dsa_index_cache(op, p, T, A, td, dev, res):
    k = A["k"]  # bf16 values as float32
    di = k.shape[1]
    sc = dsa_scale(np.abs(k).max(1), p.get("scale_fmt", "ue8m0"))
    q = (torch.from_numpy(k) / torch.from_numpy(sc)[:, None]).numpy()  # float32 division, as the kernel
    codes = e4m3_bytes(q.astype(np.float64))
    out = np.array(A["index_cache"], copy=True)
    for t_, s in enumerate(A["slot_mapping"]):
        if s >= 0:
            blk, o = divmod(int(s), 64)
            out[blk, o * di:(o + 1) * di] = codes[t_]
            out[blk, 64 * di + 4 * o: 64 * di + 4 * o + 4] = np.frombuffer(sc[t_:t_ + 1].astype("<f4").tobytes(), np.uint8)
    res["index_cache_exact"] = bool(np.array_equal(out, A["index_cache_out"]))


def index_scores(q, w, K, sc):
    """I[s] = sc[s] * sum over heads ascending of float64(w*max(0, q.k)):
    the dots are exact in float64 (e4m3 values), so this is goldset's I bit for bit."""
    dot = torch.clamp(K @ q.T, min=0)  # [S, HI]
    acc = torch.zeros(K.shape[0], dtype=torch.float64, device=K.device)
    for h in range(q.shape[0]):
        acc += w[h] * dot[:, h]
    return sc * acc


def topk_of(I, k):
    """positions by (score desc, position asc), -1 padded to k."""
    o = np.lexsort((np.arange(I.size), -I))[:k]
    return np.concatenate([o, np.full(k - o.size, -1)]).astype(np.int32)


def check_dsa_indexer(op, p, T, A, td, dev, res):
    f64 = lambda a: torch.from_numpy(np.ascontiguousarray(a, np.float64)).to(dev)
    bf = p.get("logits_dtype", "float32") == "bfloat16"
    logits, scores = A["logits"], A["index_scores"]
    ok_i = ok_l = ok_t = True
    lulps = 0
    if p.get("layout", "paged") == "ragged":
        q, w, kv = E4M3[A["q"]], A["weights"], E4M3[A["kv"]]
        rows = [(q[r], w[r], slice(int(A["ks"][r]), int(A["ke"][r])), (r,)) for r in range(q.shape[0])]
        K_all, sc_all = f64(kv), f64(A["kv_scale"])
        keys = lambda sl: (K_all[sl], sc_all[sl], None)
        tnames = [("topk", lambda t, sl: np.where(t >= 0, t + sl.start, t))]
    else:
        cache, bt, lens = A["index_cache"], A["block_table"], A["seq_lens"]
        di = p.get("di", 128)
        nb = cache.shape[0]
        K_all = f64(E4M3[cache[:, :64 * di].reshape(nb * 64, di)])
        sc_all = f64(cache[:, 64 * di:].copy().view("<f4").reshape(nb * 64))
        q, w = E4M3[A["q"]], A["weights"]
        B, NN = q.shape[:2]
        rows = []
        for b in range(B):
            L = int(lens[b])
            pos = np.arange(L)
            slots = (bt[b, pos // 64].astype(np.int64) * 64 + pos % 64)
            for j in range(NN):
                rows.append((q[b, j], w[b, j], slice(0, L - NN + j + 1), (b, j), slots))
        keys = None
        tnames = [("topk_logical", lambda t, sl, slots=None: t), ("topk_physical", None)]
    k = A[tnames[0][0]].shape[-1]
    for row in rows:
        qr, wr, sl, at = row[:4]
        if keys is None:
            slots = torch.from_numpy(row[4][sl]).to(dev)
            K, sc = K_all[slots], sc_all[slots]
        else:
            K, sc, _ = keys(sl)
        I = index_scores(f64(qr), f64(wr), K, sc).cpu().numpy()
        g = scores[at][sl]
        ok_i = ok_i and np.array_equal(I.view(np.int64), g.view(np.int64))
        want = bf16_of64(I) if bf else I.astype(np.float32)
        lg = logits[at]
        lulps = max(lulps, ulps(want, lg[sl], bf))
        ok_l = ok_l and bool(np.all(np.isneginf(np.delete(lg, np.arange(sl.start, sl.stop)))))
        t = topk_of(I, k)
        if keys is None:
            phys = np.where(t >= 0, row[4][np.maximum(t, 0)], -1)
            ok_t = ok_t and np.array_equal(t, A["topk_logical"][at]) and np.array_equal(phys, A["topk_physical"][at])
        else:
            ok_t = ok_t and np.array_equal(np.where(t >= 0, t + sl.start, t), A["topk"][at])
    res["index_scores_exact"] = bool(ok_i)
    res["logits_ulps"] = int(lulps)
    res["logits_masked"] = bool(ok_l)
    res["topk_exact"] = bool(ok_t)
    check_header(A, res)


def check_dsa_sparse_attention(op, p, T, A, td, dev, res):
    qn, qp = td("q_nope").double(), td("q_pe").double()
    TT, H, DC = qn.shape
    ckv, kpe = td("ckv_cache").double().reshape(-1, DC), td("kpe_cache").double().reshape(-1, qp.shape[-1])
    out = np.zeros((TT, H, DC))
    lse = np.full((TT, H), -np.inf)
    for r in range(TT):
        sel = np.unique(A["sparse_indices"][r][A["sparse_indices"][r] >= 0])
        if sel.size == 0:
            continue
        sl = torch.from_numpy(sel.astype(np.int64)).to(dev)
        kc, kp = ckv[sl], kpe[sl]
        x = p["sm_scale"] * (qn[r] @ kc.T + qp[r] @ kp.T)
        m = x.max(-1, keepdim=True).values
        e = torch.exp(x - m)
        den = e.sum(-1, keepdim=True)
        out[r] = ((e @ kc) / den).cpu().numpy()
        lse[r] = (m + torch.log(den)).squeeze(-1).cpu().numpy()
    res["out_bf16_ulps"] = ulps(torch.from_numpy(out.astype(np.float32)).to(torch.bfloat16).float().numpy(), A["out"], bf16=True)
    res["lse_ulps"] = ulps(lse, A["lse"])
    check_header(A, res)


# ---- MXFP4 (docs/spec.md §9) ----

def check_mxfp4_dequantize(op, p, T, A, td, dev, res):
    with np.errstate(over="ignore", invalid="ignore"):
        y = mx_values(A["codes"], A["scales"]).astype(np.float32)  # exact but for overflow to +-Inf
    if p["dtype"] == "bfloat16":
        y = torch.from_numpy(y).to(torch.bfloat16).float().numpy()  # exact: 2 significant bits
    res["y_equal"] = same(y, A["y"])


def mx_scale_bytes(x, mode):
    """§9a's block exponent from amax's float32 bits, as a byte."""
    rows = x.shape[0]
    amax = np.abs(x.astype(np.float32).reshape(rows, -1, 32)).max(-1)
    bits = amax.view(np.int32).astype(np.int64)
    if mode == "even":
        bits = bits + (1 << 21)
    fr, ex = np.frexp(bits.astype(np.int32).view(np.float32).astype(np.float64))
    E, f = ex - 1, (fr * 2 - 1) * 2.0 ** 23  # value 2^E * (1 + f/2^23), subnormals normalized
    e = E - 2
    if mode == "rceil":
        e = e + (f > 2 ** 22)
    elif mode == "ceil":
        e = e + (f > 0)
    return np.where(amax == 0, 0, np.clip(e + 127, 0, 254)).astype(np.uint8)


def check_mxfp4_quantize(op, p, T, A, td, dev, res):
    x = A["x"].astype(np.float64)
    b = mx_scale_bytes(A["x"], p["mode"])
    rows = x.shape[0]
    nib = e2m1_nibbles((x.reshape(rows, -1, 32) * 2.0 ** (127.0 - b)[..., None]).reshape(x.shape))
    codes = (nib[:, 0::2] | (nib[:, 1::2] << 4)).astype(np.uint8)
    gc, gs = A["codes"], A["scales"]
    fold = lambda c: np.where((c & 15) == 8, c & 0xF0, c) & np.where((c >> 4) == 8, 0x0F, 0xFF)
    res["codes_equal"] = bool(np.array_equal(codes, gc) if p.get("strict") else np.array_equal(fold(codes), fold(gc)))
    nz = (gc.reshape(rows, -1, 16) & 0x77).any(-1)  # blocks with a nonzero code: the graded scales
    res["scales_equal"] = bool(np.array_equal(b[nz], gs[nz]))


def check_mxfp4_to_fp8(op, p, T, A, td, dev, res):
    v, sc = e2m1(A["codes"]), A["scales"]
    rows, k = v.shape
    nb = k // 32
    if p.get("target", "mxfp8") == "mxfp8":
        want, S = e4m3_bytes(v), sc
        inexact = np.zeros_like(A["inexact"])
        has = np.ones(sc.shape, bool)
    else:
        g = p["g"]
        ng = -(-nb // g)
        eb = sc.astype(np.int64) - 127
        nzb = (A["codes"].reshape(rows, nb, 16) & 0x77).any(-1)
        pad = lambda a, fill: np.concatenate([a, np.full((rows, ng * g - nb), fill, a.dtype)], 1).reshape(rows, ng, g)
        S = np.where(pad(nzb, False), pad(eb, -1 << 20), -1 << 20).max(-1) - 6
        has = pad(nzb, False).any(-1)
        S = np.where(has, np.maximum(S, -127), 0)
        nan = (pad(sc.astype(np.int64), 0) == 255).any(-1)
        Sb = np.repeat(S, g, axis=1)[:, :nb]
        want = e4m3_bytes((v.reshape(rows, nb, 32) * np.exp2(eb - Sb)[..., None]).reshape(rows, k))
        nanel = np.repeat(np.repeat(nan, g, axis=1)[:, :nb], 32, axis=1)
        want = np.where(nanel, 0x7F | (want & 0x80), want).astype(np.uint8)
        inexact = (pad(nzb & (eb - Sb < -8), False).any(-1)).astype(np.uint8)
        S = np.where(nan, 128, S) + 127
    strict = p.get("strict")
    gf = A["fp8"]
    res["fp8_equal"] = bool(np.array_equal(want, gf) if strict else same(E4M3[want], E4M3[gf]))
    res["scale_exact"] = bool(np.array_equal(np.asarray(S)[has], A["scale"][has]))
    res["scale_f32_exact"] = same(E8M0[A["scale"]][has].astype(np.float32), A["scale_f32"][has])
    res["inexact_exact"] = bool(np.array_equal(inexact, A["inexact"]))


def ascending_k(x, w):
    """x [M, K] @ w[N, K]^T and sum |x*w| as float64 sums over ascending k (goldset's order)."""
    y = torch.zeros(x.shape[0], w.shape[0], dtype=torch.float64, device=x.device)
    s = torch.zeros_like(y)
    for i in range(x.shape[1]):
        pr = x[:, i:i + 1] * w[:, i]
        y += pr
        s += pr.abs()
    return y, s


def check_mxfp4_gemm(op, p, T, A, td, dev, res):
    w = mx_values(A["w_codes"], A["w_scales"])
    if op == "mxfp4_gemm_a4w4":
        x = mx_values(A["x_codes"], A["x_scales"])
    elif op == "mxfp4_gemm_w4a8":
        x = E4M3[A["x_fp8"]] * np.repeat(E8M0[A["x_scales"]], 128, axis=1)[:, :A["x_fp8"].shape[1]]
    else:
        x = A["x"].astype(np.float64)
    f64 = lambda a: torch.from_numpy(np.ascontiguousarray(a)).to(dev)
    y, s = ascending_k(f64(x), f64(w))
    y, s = y.cpu().numpy(), s.cpu().numpy()
    res["truth_ulps"] = ulps(y, A["y_truth"])
    res["y_bf16_ulps"] = ulps(bf16_of64(y), A["y"], bf16=True)
    res["s_ulps"] = ulps(s, A["s"])


def check_mxfp4_moe(op, p, T, A, td, dev, res):
    x = td("x").double()
    logits = A["router_logits"].astype(np.float64)
    k = p["topk"]
    ids = np.argsort(-logits, axis=1, kind="stable")[:, :k]  # ties to the lower expert
    v = np.take_along_axis(logits, ids, 1)
    wts = np.exp(v - v[:, :1])
    wts /= wts.sum(1, keepdims=True)
    res["topk_ids_exact"] = bool(np.array_equal(ids, A["topk_ids"]))
    res["topk_weights_ulps"] = ulps(wts, A["topk_weights"])
    out = torch.zeros_like(x)
    b1, b2 = td("b1").double(), td("b2").double()
    wt = torch.from_numpy(wts).to(dev)
    for e in np.unique(ids):
        tok, rank = np.nonzero(ids == e)
        tk = torch.from_numpy(tok).to(dev)
        w1 = torch.from_numpy(mx_values(A["w1_codes"][e], A["w1_scales"][e])).to(dev)
        w2 = torch.from_numpy(mx_values(A["w2_codes"][e], A["w2_scales"][e])).to(dev)
        h = x[tk] @ w1.T + b1[e]
        glu, lin = h[:, 0::2].clamp(max=7.0), h[:, 1::2].clamp(-7.0, 7.0)
        a = glu * torch.sigmoid(1.702 * glu) * (lin + 1)
        if p.get("act_round", "bfloat16") == "bfloat16":  # §9e: a rounded once to bf16 before W2
            a = torch.from_numpy(bf16_of64(a.cpu().numpy())).to(dev)
        out.index_add_(0, tk, (a @ w2.T + b2[e]) * wt[tk, torch.from_numpy(rank).to(dev)][:, None])
    # float64 in another order than goldset's: within the truth's own float32
    # rounding plus 2^-40 of the bound s.
    out = out.cpu().numpy()
    err = np.abs(out - A["out_truth"])
    bound = 2.0 ** -24 * np.abs(A["out_truth"]) + 2.0 ** -40 * A["s"]
    res["truth_within_f32_rounding"] = bool(np.all(err <= bound))
    res["truth_worst_ratio"] = float((err / bound).max())


# torch references by op name; every op `goldset list --ops` names needs one.
REFERENCES = {
    "matmul": check_matmul,
    "softmax": check_softmax,
    "reshape_and_cache": check_reshape_and_cache,
    "paged_attention": check_attention,
    "quest": check_attention,
    "unified_attention": check_unified,
    "block_header": check_block_header,
    "dsa_index_cache": check_dsa_index_cache,
    "dsa_indexer": check_dsa_indexer,
    "dsa_sparse_attention": check_dsa_sparse_attention,
    "mxfp4_dequantize": check_mxfp4_dequantize,
    "mxfp4_quantize": check_mxfp4_quantize,
    "mxfp4_to_fp8": check_mxfp4_to_fp8,
    "mxfp4_gemm": check_mxfp4_gemm,
    "mxfp4_gemm_a4w4": check_mxfp4_gemm,
    "mxfp4_gemm_w4a8": check_mxfp4_gemm,
    "mxfp4_moe": check_mxfp4_moe,
}


def op_table(goldset):
    """goldset's op table: {name: {"inputs": [...], "outputs": [...], ...}}."""
    try:
        out = subprocess.run([goldset, "list", "--ops", "--json"], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit(f"{goldset} list --ops --json: {e} (give the goldset binary with --goldset)")
    doc = json.loads(out)
    return {o["name"]: o for o in (doc["ops"] if isinstance(doc, dict) else doc)}  # a list before "ok" was added


def expected_tensors(o, c):
    """the tensor names op table entry o gives case c, as a set."""
    dt = c["params"].get("dtype")
    names = set(o["inputs"]) | set(o.get("aux") or [])
    for t in o["outputs"]:
        names.add(t["name"])
        if t.get("truth") and (t.get("dtype") or dt) != "float32":
            names.add(t["name"] + "_truth")
    return names


def check_case(bdir, c, dev, ops):
    T = {t["name"]: t for t in c["tensors"]}
    op = c["op"]
    if op not in ops:
        return {"known_op": False}
    res = {}
    got, want = set(T), expected_tensors(ops[op], c)
    aux = set(ops[op].get("aux") or [])
    # aux outputs are optional (quest no_dense); a by_params op's params pick a subset (dsa_indexer's layout)
    res["tensors_as_listed"] = (ops[op].get("by_params") or want - aux <= got) and got <= want
    if op not in REFERENCES:
        return res
    A = {n: load(bdir, t) for n, t in T.items()}
    td = lambda n: torch.from_numpy(np.ascontiguousarray(A[n])).to(dev)
    REFERENCES[op](op, c["params"], T, A, td, dev, res)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bundle")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--goldset", default="goldset", help="the goldset binary whose op table is used")
    a = ap.parse_args()
    ops = op_table(a.goldset)
    dec = decoders()
    torch.backends.cuda.matmul.allow_tf32 = False
    m = json.load(open(os.path.join(a.bundle, "manifest.json")))
    summary, failed, unchecked = {}, 0, set()
    for c in m["cases"]:
        r = check_case(a.bundle, c, a.device, ops)
        bad = [k for k, v in r.items() if (k.endswith("_ulps") and v > 1) or (isinstance(v, bool) and not v)]
        failed += bool(bad)
        skip = not bad and c["op"] not in REFERENCES
        if skip:
            unchecked.add(c["op"])
        print(f"{'FAIL' if bad else 'skip' if skip else 'ok  '} {c['id']:<40} {json.dumps(r)}", flush=True)
        summary[c["id"]] = r
    print(json.dumps({"bundle": a.bundle, "device": a.device, "torch": torch.__version__, "numpy": np.__version__, "decoders": dec,
                      "cases": len(summary), "failed": failed, "unchecked_ops": sorted(unchecked)}))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
