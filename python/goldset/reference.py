"""numpy reference kernels, one per op, in the judge's calling convention
kernel(case, inputs) -> {output: array}. They accumulate in float64 (ops.md
§0) and return float32 or exact results, so they pass every case: the CPU
baseline, a template for a new kernel, and the judged callables of the
package's tests. WRONG holds one deliberately broken twin per op (a classic
bug each), which the judge must reject.

Inputs arrive as the numpy backend gives them: bf16 decoded to float32.
"""
import numpy as np

from ._dtypes import float32_to_bf16


def _f64(a):
    return np.asarray(a, np.float64)


def matmul(case, x, drop_last_k=False):
    a, b = _f64(x["a"]), _f64(x["b"])
    if case.params.get("b_layout", "KN") == "NK":
        b = b.T
    if drop_last_k:  # WRONG: an off-by-one K loop
        a, b = a[:, :-1], b[:-1]
    return {"c": (a @ b).astype(np.float32)}


def softmax(case, x, subtract_max=True):
    z = _f64(x["x"])
    if not subtract_max:  # WRONG: exp overflows on outlier rows (fp32 arithmetic, as a GPU kernel would)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            e = np.exp(z.astype(np.float32))
            s = e.sum(-1, dtype=np.float32)
            return {"y": e / s[:, None], "row_max": np.zeros(len(z), np.float32), "row_sum": s}
    m = z.max(-1)
    finite = np.isfinite(m)
    e = np.exp(z - np.where(finite, m, 0)[:, None])
    e[~finite] = 0
    s = e.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        y = np.where(s[:, None] > 0, e / np.where(s > 0, s, 1)[:, None], 0)
    return {"y": y.astype(np.float32), "row_max": m.astype(np.float32), "row_sum": s.astype(np.float32)}


def _bits(a, dtype):
    """The stored bits of a cache whose numpy view decoded bf16 to float32."""
    return float32_to_bf16(a) if dtype == "bfloat16" else np.array(a, copy=True)


def reshape_and_cache(case, x, slot_shift=0):
    dt = case.spec("key_cache").dtype
    out = {}
    sm = np.asarray(x["slot_mapping"], np.int64)
    for kv in ("key", "value"):
        cache = _bits(x[kv + "_cache"], dt)
        src = _bits(x[kv], dt)
        nb, bs = cache.shape[:2]
        flat = cache.reshape(nb * bs, *cache.shape[2:])
        for t, s in enumerate(sm):
            if s >= 0:
                flat[(s + slot_shift) % (nb * bs)] = src[t]  # WRONG with slot_shift=1
        out[kv + "_cache_out"] = cache
    return out


def _tokens(kc, bt_row, L, bs):
    nb = -(-L // bs)
    return kc[np.asarray(bt_row[:nb], np.int64)].reshape(nb * bs, *kc.shape[2:])[:L]


def _attend(q, k, v, scale):
    """q [Hg, D], k/v [L, D] -> out [Hg, D], lse [Hg] in float64."""
    s = scale * (_f64(q) @ _f64(k).T)
    m = s.max(-1, keepdims=True)
    p = np.exp(s - m)
    den = p.sum(-1)
    return (p @ _f64(v)) / den[:, None], m[:, 0] + np.log(den)


def _attn_setup(case, x):
    """query, caches, block size, Hkv, G, scale, and zeroed float64 out and lse for every query row."""
    q, kc, vc = x["query"], x["key_cache"], x["value_cache"]
    rows, Hq, D = q.shape
    bs, Hkv = kc.shape[1], kc.shape[2]
    scale = float(case.params.get("scale", 1 / np.sqrt(D)))
    return q, kc, vc, bs, Hkv, Hq // Hkv, scale, np.zeros((rows, Hq, D), np.float64), np.zeros((rows, Hq), np.float64)


def paged_attention(case, x, wrong_gqa=False):
    q, kc, vc, bs, Hkv, G, scale, out, lse = _attn_setup(case, x)
    bt, lens = x["block_tables"], x["context_lens"]
    Hq = q.shape[1]
    for b in range(q.shape[0]):
        L = int(lens[b])
        K, V = _tokens(kc, bt[b], L, bs), _tokens(vc, bt[b], L, bs)
        for h in range(Hq):
            kvh = h % Hkv if wrong_gqa else h // G  # WRONG: h % Hkv
            o, l = _attend(q[b, h:h + 1], K[:, kvh], V[:, kvh], scale)
            out[b, h], lse[b, h] = o[0], l[0]
    return {"out": out.astype(np.float32), "lse": lse.astype(np.float32)}


def unified_attention(case, x, causal_shift=0):
    """vLLM V1 unified attention over query_start_loc/seq_lens (docs/spec.md §12);
    padded tokens (past query_start_loc[-1]) get 0. causal_shift=1 is the
    WRONG twin: query token i also attends key ctx+i+1."""
    q, kc, vc, bs, Hkv, G, scale, out, lse = _attn_setup(case, x)
    bt, sl, qsl = x["block_table"], x["seq_lens"], x["query_start_loc"]
    for s in range(len(sl)):
        t0, t1, L = int(qsl[s]), int(qsl[s + 1]), int(sl[s])
        if t1 == t0:
            continue
        K, V = _tokens(kc, bt[s], L, bs), _tokens(vc, bt[s], L, bs)
        ctx = L - (t1 - t0)
        for t in range(t0, t1):
            n = min(L, ctx + t - t0 + 1 + causal_shift)  # keys 0..n-1
            for g in range(Hkv):
                o, l = _attend(q[t, g * G:(g + 1) * G], K[:n, g], V[:n, g], scale)
                out[t, g * G:(g + 1) * G], lse[t, g * G:(g + 1) * G] = o, l
    return {"out": out.astype(np.float32), "lse": lse.astype(np.float32)}


def quest_select(scores_row, nb, k, anchor_first=True, anchor_last=True, lowest=False):
    """ops.md §5c on float64 scores of one row."""
    if k >= nb:
        return list(range(nb))
    anchors = []
    if anchor_first:
        anchors.append(0)
    if anchor_last and nb - 1 not in anchors:
        anchors.append(nb - 1)
    sign = 1 if lowest else -1  # WRONG with lowest=True: ascending scores
    rest = sorted((i for i in range(nb) if i not in anchors), key=lambda i: (sign * scores_row[i], i))
    return sorted(anchors + rest[:k - len(anchors)])


def quest(case, x, lowest=False):
    p = case.params
    q, kc, vc = x["query"], x["key_cache"], x["value_cache"]
    bt, lens = x["block_tables"], x["context_lens"]
    B, Hq, D = q.shape
    bs, Hkv = kc.shape[1], kc.shape[2]
    G = Hq // Hkv
    maxb = bt.shape[1]
    K = int(p["k"])
    group = p.get("granularity", "q_head") == "kv_group_sum"
    Hsel = Hkv if group else Hq
    dt = case.spec("key_cache").dtype
    scale = float(p.get("scale", 1 / np.sqrt(D)))
    kmax = np.zeros((B, maxb, Hkv, D), np.float32)
    kmin = np.zeros((B, maxb, Hkv, D), np.float32)
    scores = np.full((B, Hsel, maxb), -np.inf, np.float64)
    selected = np.full((B, Hsel, K), -1, np.int32)
    out = np.zeros((B, Hq, D), np.float64)
    lse = np.zeros((B, Hq), np.float64)
    for b in range(B):
        L = int(lens[b])
        nb = -(-L // bs)
        Kt, Vt = _tokens(kc, bt[b], L, bs), _tokens(vc, bt[b], L, bs)
        for i in range(nb):
            blk = Kt[i * bs:min(L, (i + 1) * bs)]
            kmax[b, i], kmin[b, i] = blk.max(0), blk.min(0)
        qd = _f64(q[b])  # [Hq, D]
        mx, mn = _f64(kmax[b, :nb]), _f64(kmin[b, :nb])  # [nb, Hkv, D]
        sc = np.stack([np.maximum(qd[h] * mx[:, h // G], qd[h] * mn[:, h // G]).sum(-1) for h in range(Hq)])
        if group:
            sc = sc.reshape(Hkv, G, nb).sum(1)
        scores[b, :, :nb] = sc
        for hs in range(Hsel):
            sel = quest_select(sc[hs], nb, K, p.get("anchor_first", True), p.get("anchor_last", True), lowest)
            selected[b, hs, :len(sel)] = sel
        for h in range(Hq):
            sel = selected[b, h // G if group else h]
            idx = np.concatenate([np.arange(i * bs, min(L, (i + 1) * bs)) for i in sel if i >= 0])
            o, l = _attend(q[b, h:h + 1], Kt[idx, h // G], Vt[idx, h // G], scale)
            out[b, h], lse[b, h] = o[0], l[0]
    meta = (lambda a: float32_to_bf16(a)) if dt == "bfloat16" else (lambda a: a.astype(dt))
    return {"kmax": meta(kmax), "kmin": meta(kmin), "scores": scores.astype(np.float32), "selected": selected,
            "out": out.astype(np.float32), "lse": lse.astype(np.float32)}


KERNELS = {
    "matmul": matmul,
    "softmax": softmax,
    "reshape_and_cache": reshape_and_cache,
    "paged_attention": paged_attention,
    "quest": quest,
    "unified_attention": unified_attention,
}

WRONG = {
    "matmul": lambda c, x: matmul(c, x, drop_last_k=True),
    "softmax": lambda c, x: softmax(c, x, subtract_max=False),
    "reshape_and_cache": lambda c, x: reshape_and_cache(c, x, slot_shift=1),
    "paged_attention": lambda c, x: paged_attention(c, x, wrong_gqa=True),
    "quest": lambda c, x: quest(c, x, lowest=True),
    "unified_attention": lambda c, x: unified_attention(c, x, causal_shift=1),
}


def kernel(case, inputs):
    """Dispatch on case.op to the reference kernel."""
    return KERNELS[case.op](case, inputs)


def wrong_kernel(case, inputs):
    """Dispatch on case.op to the deliberately wrong twin."""
    return WRONG[case.op](case, inputs)
