"""Triton baselines for the DSA ops (docs/spec.md section 8), fp32 accumulation.

Same conventions as kernels.py: each op has prepare(case, x, wrong=False) ->
(launch, outputs, nbytes), x the case's inputs as torch CUDA tensors in their
logical dtypes (goldset.judge(..., backend="torch", device="cuda")).

  dsa_index_cache       one program per token: amax, the scale (ue8m0: the
                        power of two at or above fl32(max(amax, 1e-4)/448);
                        fp32: that quotient), codes = e4m3(RNE, satfinite)(k / sc),
                        written into a copy of the canary-filled cache.
  dsa_indexer (paged)   one program per (query row, 64-token page): the
                        page's e4m3 codes and fp32 scales read through the
                        block table, d = q . k on the tensor cores (DOT = "fp8":
                        native e4m3 operands, as DeepGEMM's fp8_mqa_logits;
                        "fp16": both upcast to fp16, exact), logits =
                        sum_h w_h relu(d_h) * scale; -inf past the visible
                        range; the top-k is torch.topk of the fp32 logits
                        (padding -inf -> -1), physical = block_table[s/64]*64 + s%64.
  dsa_indexer (ragged)  one program per (query row, 64 kv rows), rows [ks, ke).
  dsa_sparse_attention  one program per (token, 16 heads): the selected slots
                        gathered 32 at a time (-1 masked, never loaded), QK in
                        fp32 from bf16, online softmax, P rounded to bf16 for PV
                        (FlashMLA's precision), out bf16, natural-log lse
                        (-inf on an empty row).
  block_header          host-side bookkeeping at prepare time (first reference wins).

The deliberately wrong variants (WRONG_BUG) switch on one classic bug each.
"""
import math

import torch
import triton
import triton.language as tl

PAGE = 64  # tokens per page
PS = tl.constexpr(PAGE)  # the same, for the kernels (they read only constexpr globals)
DOT = "fp8"  # the indexer's tensor-core operands: "fp8" or "fp16" (run.py --dsa-dot)


def _p2(n, lo):
    return max(lo, triton.next_power_of_2(int(n)))


def _u8(t):
    return t.view(torch.uint8) if t.dtype != torch.uint8 else t


# ----------------------------------------------------------------------------- 8a dsa_index_cache


@triton.jit
def _index_cache_kernel(k_ptr, slot_ptr, cache_ptr, BB, DI: tl.constexpr, DP: tl.constexpr,
                        UE8M0: tl.constexpr):
    t = tl.program_id(0)
    s = tl.load(slot_ptr + t)
    if s >= 0:
        d = tl.arange(0, DP)
        dm = d < DI
        x = tl.load(k_ptr + t.to(tl.int64) * DI + d, mask=dm, other=0.0).to(tl.float32)
        amax = tl.max(tl.abs(x), 0)
        q = tl.math.div_rn(tl.maximum(amax, 1e-4), 448.0)
        if UE8M0:
            bits = q.to(tl.int32, bitcast=True)
            e = (bits >> 23) + ((bits & 0x7FFFFF) != 0).to(tl.int32)
            q = (e << 23).to(tl.float32, bitcast=True)
        codes = tl.math.div_rn(x, q).to(tl.float8e4nv).to(tl.uint8, bitcast=True)
        base = cache_ptr + (s // PS).to(tl.int64) * BB
        o = s % PS
        tl.store(base + o * DI + d, codes, mask=dm)
        tl.store((base + PS * DI + 4 * o).to(tl.pointer_type(tl.float32)), q)


def index_cache_prepare(case, x, wrong=False):
    k, slots, cache = x["k"], x["slot_mapping"], x["index_cache"]
    T, DI = k.shape
    out = torch.empty_like(cache)
    ue8m0 = case.params.get("scale_fmt", "ue8m0") == "ue8m0"
    if wrong:  # WRONG: the scale is never rounded to a power of two
        ue8m0 = False

    def launch():
        out.copy_(cache)
        if T:
            _index_cache_kernel[(T,)](k, slots, out, cache.shape[1], DI=DI, DP=_p2(DI, 16), UE8M0=ue8m0, num_warps=1)

    nbytes = k.numel() * 2 + slots.numel() * 4 + int((slots >= 0).sum()) * (DI + 4)
    return launch, {"index_cache_out": out}, nbytes


# ----------------------------------------------------------------------------- 8b dsa_indexer


@triton.jit
def _scores(q_ptr, w_ptr, r, HI, kcodes, valid, FP8: tl.constexpr, DI: tl.constexpr, HP: tl.constexpr,
            DP: tl.constexpr):
    """sum_h w[r,h] * relu(q[r,h] . k) for the 64 keys of kcodes (uint8 e4m3 codes)."""
    hi = tl.arange(0, HP)
    di = tl.arange(0, DP)
    qc = tl.load(q_ptr + (r.to(tl.int64) * HI + hi[:, None]) * DI + di[None, :],
                 mask=(hi[:, None] < HI) & (di[None, :] < DI), other=0)
    qf = qc.to(tl.float8e4nv, bitcast=True)
    kf = kcodes.to(tl.float8e4nv, bitcast=True)
    if FP8:
        d = tl.dot(qf, tl.trans(kf))
    else:
        d = tl.dot(qf.to(tl.float16), tl.trans(kf.to(tl.float16)))
    w = tl.load(w_ptr + r.to(tl.int64) * HI + hi, mask=hi < HI, other=0.0)
    return tl.sum(tl.maximum(d, 0.0) * w[:, None], 0)


@triton.jit
def _indexer_paged_kernel(q_ptr, w_ptr, cache_ptr, bt_ptr, lens_ptr, out_ptr, NN, HI, MAXB, W, BB,
                          DI: tl.constexpr, HP: tl.constexpr, DP: tl.constexpr, FP8: tl.constexpr,
                          NO_SCALE: tl.constexpr):
    r = tl.program_id(0)  # query row b*NN + j
    pg = tl.program_id(1)  # page of the request
    b = r // NN
    vis = tl.load(lens_ptr + b) - NN + r % NN + 1
    ti = tl.arange(0, PS)
    di = tl.arange(0, DP)
    pos = pg * PS + ti
    valid = pos < vis  # slots past the visible range may hold NaN canaries: never load them
    blk = tl.load(bt_ptr + b.to(tl.int64) * MAXB + pg, mask=pg * PS < vis, other=0).to(tl.int64)
    base = cache_ptr + blk * BB
    kc = tl.load(base + ti[:, None] * DI + di[None, :], mask=valid[:, None] & (di[None, :] < DI), other=0)
    s = _scores(q_ptr, w_ptr, r, HI, kc, valid, FP8, DI, HP, DP)
    if not NO_SCALE:
        s = s * tl.load((base + PS * DI + 4 * ti).to(tl.pointer_type(tl.float32)), mask=valid, other=0.0)
    s = tl.where(valid, s, float("-inf"))
    tl.store(out_ptr + r.to(tl.int64) * W + pos, s)


@triton.jit
def _indexer_ragged_kernel(q_ptr, w_ptr, kv_ptr, sc_ptr, ks_ptr, ke_ptr, out_ptr, HI, S,
                           DI: tl.constexpr, HP: tl.constexpr, DP: tl.constexpr, FP8: tl.constexpr,
                           NO_SCALE: tl.constexpr):
    r = tl.program_id(0)
    c = tl.program_id(1)
    lo = tl.load(ks_ptr + r)
    hi = tl.load(ke_ptr + r)
    pos = c * PS + tl.arange(0, PS)
    di = tl.arange(0, DP)
    valid = (pos >= lo) & (pos < hi)  # the canary rows after each window are never loaded
    kc = tl.load(kv_ptr + pos[:, None].to(tl.int64) * DI + di[None, :], mask=valid[:, None] & (di[None, :] < DI),
                 other=0)
    s = _scores(q_ptr, w_ptr, r, HI, kc, valid, FP8, DI, HP, DP)
    if not NO_SCALE:
        s = s * tl.load(sc_ptr + pos, mask=valid, other=0.0)
    s = tl.where(valid, s, float("-inf"))
    tl.store(out_ptr + r.to(tl.int64) * S + pos, s, mask=pos < S)


def _topk(logits, k):
    """torch.topk of each row, -1 where the row has fewer than k visible tokens."""
    rows, W = logits.shape
    kk = min(k, W)
    v, i = torch.topk(logits, kk, dim=-1)
    i = torch.where(v == float("-inf"), -1, i).to(torch.int32)
    if kk < k:
        i = torch.cat([i, torch.full((rows, k - kk), -1, dtype=torch.int32, device=i.device)], 1)
    return i


def indexer_prepare(case, x, wrong=False):
    p = case.params
    fp8 = DOT == "fp8"
    K = int(p.get("k", 2048))
    bf16_logits = p.get("logits_dtype", "float32") == "bfloat16"
    q, w = _u8(x["q"]), x["weights"]
    outs = {}
    if p.get("layout") == "ragged":
        kv, sc, ks, ke = _u8(x["kv"]), x["kv_scale"], x["ks"], x["ke"]
        T, HI, DI = x["q"].shape
        S = kv.shape[0]
        logits = torch.empty((T, S), dtype=torch.float32, device=q.device)

        def launch():
            _indexer_ragged_kernel[(T, triton.cdiv(S, PAGE))](
                q, w, kv, sc, ks, ke, logits, HI, S, DI=DI, HP=_p2(HI, 16), DP=_p2(DI, 32), FP8=fp8,
                NO_SCALE=wrong, num_warps=4)
            outs["topk"] = _topk(logits, K)
            outs["logits"] = logits.to(torch.bfloat16) if bf16_logits else logits

        nbytes = q.numel() + w.numel() * 4 + int((ke - ks).sum()) * (DI + 4) + logits.numel() * 4
    else:
        cache, bt, lens = _u8(x["index_cache"]), x["block_table"], x["seq_lens"]
        B, NN, HI, DI = x["q"].shape
        MAXB = bt.shape[1]
        W = MAXB * PAGE
        logits = torch.empty((B, NN, W), dtype=torch.float32, device=q.device)
        outs["block_header"] = _header(bt, lens, cache.shape[0])

        def launch():
            _indexer_paged_kernel[(B * NN, MAXB)](
                q, w, cache, bt, lens, logits, NN, HI, MAXB, W, cache.shape[1], DI=DI, HP=_p2(HI, 16),
                DP=_p2(DI, 32), FP8=fp8, NO_SCALE=wrong, num_warps=4)
            tl_ = _topk(logits.view(B * NN, W), K)
            page = torch.gather(bt.long(), 1, (tl_.clamp(min=0) // PAGE).long().view(B, NN * K)).view(B * NN, K)
            phys = torch.where(tl_ >= 0, page * PAGE + tl_ % PAGE, -1).to(torch.int32)
            outs["topk_logical"] = tl_.view(B, NN, K)
            outs["topk_physical"] = phys.view(B, NN, K)
            outs["logits"] = logits.to(torch.bfloat16) if bf16_logits else logits

        nbytes = q.numel() + w.numel() * 4 + int(lens.sum()) * (DI + 4) * NN + logits.numel() * 4
    return launch, outs, nbytes


# ----------------------------------------------------------------------------- 8c dsa_sparse_attention


@triton.jit
def _sparse_mla_kernel(qn_ptr, qp_ptr, ckv_ptr, kpe_ptr, idx_ptr, out_ptr, lse_ptr, sm_scale, H, K,
                       DC: tl.constexpr, DR: tl.constexpr, DRP: tl.constexpr, BH: tl.constexpr, BN: tl.constexpr,
                       MINUS_ONE_AS_SLOT0: tl.constexpr):
    t = tl.program_id(0)
    h = tl.program_id(1) * BH + tl.arange(0, BH)
    hm = h < H
    dc = tl.arange(0, DC)
    dr = tl.arange(0, DRP)
    row = (t * H + h).to(tl.int64)
    qn = tl.load(qn_ptr + row[:, None] * DC + dc[None, :], mask=hm[:, None], other=0.0)
    qp = tl.load(qp_ptr + row[:, None] * DR + dr[None, :], mask=hm[:, None] & (dr[None, :] < DR), other=0.0)
    m = tl.full([BH], float("-inf"), tl.float32)
    l = tl.zeros([BH], tl.float32)
    acc = tl.zeros([BH, DC], tl.float32)
    for n0 in range(0, K, BN):
        ni = n0 + tl.arange(0, BN)
        ids = tl.load(idx_ptr + t.to(tl.int64) * K + ni, mask=ni < K, other=-1)
        if MINUS_ONE_AS_SLOT0:  # WRONG: -1 padding read as slot 0
            valid = ni < K
            ids = tl.maximum(ids, 0)
        else:
            valid = ids >= 0  # unselected slots hold NaN canaries: never load them
        ids = ids.to(tl.int64)
        kc = tl.load(ckv_ptr + ids[:, None] * DC + dc[None, :], mask=valid[:, None], other=0.0)
        kp = tl.load(kpe_ptr + ids[:, None] * DR + dr[None, :], mask=valid[:, None] & (dr[None, :] < DR), other=0.0)
        s = tl.dot(qn, tl.trans(kc)) + tl.dot(qp, tl.trans(kp))
        s = tl.where(valid[None, :], s * sm_scale, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, 1))
        m_use = tl.where(m_new == float("-inf"), 0.0, m_new)  # nothing valid yet: keep everything 0
        alpha = tl.exp(m - m_use)
        pr = tl.exp(s - m_use[:, None])
        l = l * alpha + tl.sum(pr, 1)
        acc = acc * alpha[:, None] + tl.dot(pr.to(tl.bfloat16), kc)
        m = m_new
    nonempty = l > 0
    o = tl.where(nonempty[:, None], acc / tl.where(nonempty, l, 1.0)[:, None], 0.0)
    tl.store(out_ptr + row[:, None] * DC + dc[None, :], o.to(tl.bfloat16), mask=hm[:, None])
    tl.store(lse_ptr + row, tl.where(nonempty, m + tl.log(tl.where(nonempty, l, 1.0)), float("-inf")), mask=hm)


def sparse_attention_prepare(case, x, wrong=False):
    p = case.params
    qn, qp, ckv, kpe, idx = x["q_nope"], x["q_pe"], x["ckv_cache"], x["kpe_cache"], x["sparse_indices"]
    T, H, DC = qn.shape
    DR = qp.shape[2]
    K = idx.shape[1]
    sm_scale = float(p.get("sm_scale") or 1 / math.sqrt(192))
    out = torch.empty((T, H, DC), dtype=torch.bfloat16, device=qn.device)
    lse = torch.empty((T, H), dtype=torch.float32, device=qn.device)
    BH = 16
    hdr = _header(x["block_table"], x["seq_lens"], ckv.shape[0])

    def launch():
        _sparse_mla_kernel[(T, triton.cdiv(H, BH))](
            qn, qp, ckv, kpe, idx, out, lse, sm_scale, H, K, DC=DC, DR=DR, DRP=_p2(DR, 16), BH=BH, BN=32,
            MINUS_ONE_AS_SLOT0=wrong, num_warps=8, num_stages=1)

    sel = int((idx >= 0).sum())
    nbytes = (qn.numel() + qp.numel()) * 2 + idx.numel() * 4 + sel * (DC + DR) * 2 + out.numel() * 2 + lse.numel() * 4
    return launch, {"out": out, "lse": lse, "block_header": hdr}, nbytes


# ----------------------------------------------------------------------------- 8d block_header


def _header(bt, lens, nb, unreferenced_start=-1):
    """header [NB, 2] int32: (valid tokens, logical start) of every referenced
    page, (0, unreferenced_start) elsewhere; a shared page keeps its first
    reference. Bookkeeping from the block table, computed once on the host
    at prepare time, so the timed launches stay capturable in a CUDA graph."""
    h = [[0, unreferenced_start] for _ in range(nb)]
    seen = set()
    for b, L in enumerate(lens.cpu().tolist()):
        row = bt[b].cpu().tolist()
        for i in range(-(-int(L) // PAGE)):
            if row[i] not in seen:
                seen.add(row[i])
                h[row[i]] = [min(PAGE, int(L) - i * PAGE), i * PAGE]
    return torch.tensor(h, dtype=torch.int32).view(nb, 2).to(bt.device)


def block_header_prepare(case, x, wrong=False):
    bt, lens = x["block_table"], x["seq_lens"]
    nb = case.spec("block_header").shape[0]
    hdr = _header(bt, lens, nb, unreferenced_start=0 if wrong else -1)  # WRONG: start 0, not -1
    return (lambda: None), {"block_header": hdr}, bt.numel() * 4 + lens.numel() * 4 + nb * 8


PREPARE = {
    "dsa_index_cache": index_cache_prepare,
    "dsa_indexer": indexer_prepare,
    "dsa_sparse_attention": sparse_attention_prepare,
    "block_header": block_header_prepare,
}

WRONG_BUG = {
    "dsa_index_cache": "never rounds the scale to a power of two (fp32 scales for ue8m0)",
    "dsa_indexer": "forgets the key scale",
    "dsa_sparse_attention": "reads -1 padding as slot 0",
    "block_header": "marks unreferenced pages (0, 0) instead of (0, -1)",
}


def wrong_applies(case):
    p = case.params
    if case.op == "dsa_index_cache":
        return p.get("scale_fmt", "ue8m0") == "ue8m0"
    if case.op == "dsa_sparse_attention":
        nn, k = int(p.get("next_n", 1)), int(p.get("k", 2048))
        vis = [int(L) - nn + j + 1 for L in p["seq_lens"] for j in range(nn)]
        return bool(p.get("empty_rows") or p.get("single_rows")) or min(vis) < k
    if case.op == "block_header":
        return int(p.get("extra_blocks", 0)) > 0  # only then is some page unreferenced
    return True
