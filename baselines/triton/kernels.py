"""Triton baselines for goldset's ops (ops.md §1-5, unified attention docs/spec.md §12; DSA §8 in dsa_kernels.py, MXFP4 §9 in mx_kernels.py), fp32 accumulation.

Every wrapper has the judge's calling convention, kernel(case, inputs) ->
{output name: tensor}, with inputs as torch CUDA tensors in their logical
dtypes (goldset.judge(..., backend="torch", device="cuda")). Each op also
has a prepare(case, inputs) -> (launch, outputs) pair for benchmarking:
launch() re-runs only the GPU kernels into preallocated outputs.

Deliberately wrong variants (WRONG) reuse the same kernels with one classic
bug switched on, to show that the judge rejects them.
"""
import math

import torch
import triton
import triton.language as tl

import dsa_kernels
import mx_kernels

# ----------------------------------------------------------------------------- matmul (§1)


@triton.jit
def _matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, IEEE: tl.constexpr,
                   DROP_K_TAIL: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    k_end = K
    if DROP_K_TAIL:  # WRONG: the K tail tile is skipped
        k_end = (K // BK) * BK
    for k0 in range(0, k_end, BK):
        kk = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * sam + kk[None, :] * sak, mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * sbk + rn[None, :] * sbn, mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        if IEEE:
            acc = tl.dot(a, b, acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul_prepare(case, x, wrong=False):
    a, b = x["a"], x["b"]
    if case.params.get("b_layout", "KN") == "NK":
        b = b.t()  # a [K, N] view of the [N, K] weight: strides do the transpose
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    BM = 16 if M <= 16 else 64
    BN, BK = 64, 64
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))

    def launch():
        _matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                             c.stride(0), c.stride(1), BM=BM, BN=BN, BK=BK,
                             IEEE=a.dtype == torch.float32, DROP_K_TAIL=wrong, num_warps=4)

    es = a.element_size()
    return launch, {"c": c}, (M * K + K * N + M * N) * es


# ----------------------------------------------------------------------------- softmax (§2)


@triton.jit
def _softmax_state(x_row, lo, hi, n_cols, BLOCK: tl.constexpr, SUB_MAX: tl.constexpr):
    """The online state of columns [lo, hi): (max, sum of exp(x - max)), per lane, then merged."""
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(lo, hi, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        if SUB_MAX:
            m_new = tl.maximum(m, x)
            alive = m_new != float("-inf")
            s = tl.where(alive, s * tl.exp2((m - m_new) * 1.4426950408889634)
                         + tl.exp2((x - m_new) * 1.4426950408889634), 0.0)
            m = m_new
        else:  # WRONG: no max subtraction, exp overflows on large logits
            s = s + tl.exp(x)
    if SUB_MAX:
        mx = tl.max(m, 0)
        s = tl.where(m == float("-inf"), 0.0, s * tl.exp2((m - mx) * 1.4426950408889634))
    else:
        mx = tl.max(tl.zeros([BLOCK], tl.float32), 0)
    return mx, tl.sum(s, 0)


@triton.jit
def _softmax_normalise(x_row, y_row, lo, hi, n_cols, row_m, row_s, BLOCK: tl.constexpr, SUB_MAX: tl.constexpr):
    """y = exp(x - row_m) / row_s over columns [lo, hi); an all -inf row gives 0."""
    inv = tl.where(row_s > 0, 1.0 / row_s, 0.0)
    for start in range(lo, hi, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        y = tl.exp2((x - row_m) * 1.4426950408889634) * inv
        if SUB_MAX:
            y = tl.where(row_m == float("-inf"), 0.0, y)
        tl.store(y_row + cols, y.to(y_row.dtype.element_ty), mask=cols < n_cols)


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, max_ptr, sum_ptr, n_cols, BLOCK: tl.constexpr, SUB_MAX: tl.constexpr):
    """Rows up to SOFTMAX_CHUNK: one program per row, two passes."""
    row = tl.program_id(0).to(tl.int64)
    row_m, row_s = _softmax_state(x_ptr + row * n_cols, 0, n_cols, n_cols, BLOCK, SUB_MAX)
    tl.store(max_ptr + row, row_m)
    tl.store(sum_ptr + row, row_s)
    _softmax_normalise(x_ptr + row * n_cols, y_ptr + row * n_cols, 0, n_cols, n_cols, row_m, row_s, BLOCK, SUB_MAX)


@triton.jit
def _softmax_chunk_state(x_ptr, st_m_ptr, st_s_ptr, n_cols, n_chunks, CHUNK: tl.constexpr, BLOCK: tl.constexpr,
                         SUB_MAX: tl.constexpr):
    """Long rows, pass 1: program (row, chunk) stores its chunk's online state."""
    row = tl.program_id(0).to(tl.int64)
    ch = tl.program_id(1)
    cm, cs = _softmax_state(x_ptr + row * n_cols, ch * CHUNK, tl.minimum(ch * CHUNK + CHUNK, n_cols), n_cols,
                            BLOCK, SUB_MAX)
    tl.store(st_m_ptr + row * n_chunks + ch, cm)
    tl.store(st_s_ptr + row * n_chunks + ch, cs)


@triton.jit
def _softmax_chunk_finish(x_ptr, y_ptr, max_ptr, sum_ptr, st_m_ptr, st_s_ptr, n_cols, n_chunks,
                          CHUNK: tl.constexpr, BLOCK: tl.constexpr, CP: tl.constexpr, SUB_MAX: tl.constexpr):
    """Long rows, pass 2: every program merges the row's chunk states, then normalises its chunk."""
    row = tl.program_id(0).to(tl.int64)
    ch = tl.program_id(1)
    ci = tl.arange(0, CP)
    cm = tl.load(st_m_ptr + row * n_chunks + ci, mask=ci < n_chunks, other=float("-inf"))
    cs = tl.load(st_s_ptr + row * n_chunks + ci, mask=ci < n_chunks, other=0.0)
    if SUB_MAX:
        row_m = tl.max(cm, 0)
        row_s = tl.sum(tl.where(cm == float("-inf"), 0.0, cs * tl.exp2((cm - row_m) * 1.4426950408889634)), 0)
    else:
        row_m = tl.max(tl.zeros([CP], tl.float32), 0)
        row_s = tl.sum(cs, 0)
    if ch == 0:
        tl.store(max_ptr + row, row_m)
        tl.store(sum_ptr + row, row_s)
    _softmax_normalise(x_ptr + row * n_cols, y_ptr + row * n_cols, ch * CHUNK, tl.minimum(ch * CHUNK + CHUNK, n_cols),
                       n_cols, row_m, row_s, BLOCK, SUB_MAX)


SOFTMAX_CHUNK = 8192  # rows longer than this are split over several programs


def softmax_prepare(case, x, wrong=False):
    xt = x["x"]
    M, N = xt.shape
    y = torch.empty_like(xt)
    rmax = torch.empty(M, dtype=torch.float32, device=xt.device)
    rsum = torch.empty(M, dtype=torch.float32, device=xt.device)
    BLOCK = min(4096, triton.next_power_of_2(N))
    if N <= SOFTMAX_CHUNK:
        def launch():
            _softmax_kernel[(M,)](xt, y, rmax, rsum, N, BLOCK=BLOCK, SUB_MAX=not wrong, num_warps=8)
    else:
        C = triton.cdiv(N, SOFTMAX_CHUNK)
        st_m = torch.empty((M, C), dtype=torch.float32, device=xt.device)
        st_s = torch.empty_like(st_m)

        def launch():
            _softmax_chunk_state[(M, C)](xt, st_m, st_s, N, C, CHUNK=SOFTMAX_CHUNK, BLOCK=BLOCK, SUB_MAX=not wrong,
                                         num_warps=8)
            _softmax_chunk_finish[(M, C)](xt, y, rmax, rsum, st_m, st_s, N, C, CHUNK=SOFTMAX_CHUNK, BLOCK=BLOCK,
                                          CP=max(2, triton.next_power_of_2(C)), SUB_MAX=not wrong, num_warps=8)

    return launch, {"y": y, "row_max": rmax, "row_sum": rsum}, 2 * M * N * xt.element_size() + 8 * M


# ----------------------------------------------------------------------------- reshape_and_cache (§3)


@triton.jit
def _rc_kernel(k_ptr, v_ptr, kc_ptr, vc_ptr, slot_ptr, n_slots_total, ROW: tl.constexpr, BLOCK: tl.constexpr,
               SHIFT: tl.constexpr):
    t = tl.program_id(0)
    s = tl.load(slot_ptr + t).to(tl.int64)
    if s >= 0:  # any negative slot is skipped; slot 0 is real
        if SHIFT:  # WRONG: off by one slot
            s = (s + 1) % n_slots_total
        offs = tl.arange(0, BLOCK)
        mask = offs < ROW
        src = t.to(tl.int64) * ROW + offs
        dst = s * ROW + offs
        # raw bits: a copy, never a conversion (NaN payloads and -0 survive)
        tl.store(kc_ptr + dst, tl.load(k_ptr + src, mask=mask), mask=mask)
        tl.store(vc_ptr + dst, tl.load(v_ptr + src, mask=mask), mask=mask)


def _bits(t):
    return t.view({2: torch.int16, 4: torch.int32, 8: torch.int64, 1: torch.uint8}[t.element_size()])


def rc_prepare(case, x, wrong=False):
    k, v, sm = x["key"], x["value"], x["slot_mapping"]
    kc, vc = x["key_cache"].clone(), x["value_cache"].clone()  # the op writes in place
    NB, BS, Hkv, D = kc.shape
    ROW = Hkv * D
    Ts = sm.shape[0]

    def launch():
        if Ts:
            _rc_kernel[(Ts,)](_bits(k), _bits(v), _bits(kc), _bits(vc), sm, NB * BS, ROW=ROW,
                              BLOCK=triton.next_power_of_2(ROW), SHIFT=wrong, num_warps=4)

    written = int((sm >= 0).sum())
    return launch, {"key_cache_out": kc, "value_cache_out": vc}, 4 * written * ROW * k.element_size() + 4 * Ts


# ----------------------------------------------------------------------------- paged attention (§4)
# Split-K decode (vLLM's paged_attention_v2 / flash-decoding): program
# (b, kv head, partition) runs online softmax over its blocks for the G
# query heads of the group at once (tl.dot, fp32 accumulation), then a
# second kernel merges the partitions' (max, sum, acc).


@triton.jit
def _online_step(m, l, acc, q, k, v, keep, scale, IEEE: tl.constexpr):
    """One tile of an online softmax: running max m, sum l and accumulator
    acc [rows, D] updated with the scores scale*q.k of q [rows, D] and k
    [tile, D] where keep [rows or 1, tile] holds (-inf elsewhere) and values
    v [tile, D]; P is rounded to v's dtype for the PV dot unless IEEE (fp32:
    IEEE dots). A row with nothing kept yet keeps max 0 (no NaN)."""
    if IEEE:
        s = tl.dot(q, tl.trans(k), input_precision="ieee")
    else:
        s = tl.dot(q, tl.trans(k))
    s = tl.where(keep, s * scale, float("-inf"))
    m_new = tl.maximum(m, tl.max(s, 1))
    m_new = tl.where(m_new > float("-inf"), m_new, 0.0)
    alpha = tl.exp2((m - m_new) * 1.4426950408889634)
    p = tl.exp2((s - m_new[:, None]) * 1.4426950408889634)
    l = l * alpha + tl.sum(p, 1)
    if IEEE:
        acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
    else:
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
    return m_new, l, acc


@triton.jit
def _pa_partial_kernel(q_ptr, kc_ptr, vc_ptr, bt_ptr, lens_ptr, m_ptr, l_ptr, acc_ptr, scale,
                       Hq, Hkv, MAXB, NPART,
                       sq_b, sq_h, sc_n, sc_t, sc_h, sbt_b,
                       G: tl.constexpr, GP: tl.constexpr, D: tl.constexpr, BS: tl.constexpr, BSP: tl.constexpr,
                       BLOCKS_PER_PART: tl.constexpr, IEEE: tl.constexpr, NO_TAIL_MASK: tl.constexpr):
    b = tl.program_id(0)
    kvh = tl.program_id(1)
    part = tl.program_id(2)
    L = tl.load(lens_ptr + b)
    nb = tl.cdiv(L, BS)
    blk0 = part * BLOCKS_PER_PART
    gi = tl.arange(0, GP)
    di = tl.arange(0, D)
    ti = tl.arange(0, BSP)
    heads = kvh * G + gi
    q = tl.load(q_ptr + b.to(tl.int64) * sq_b + heads[:, None] * sq_h + di[None, :], mask=gi[:, None] < G, other=0.0)
    m = tl.full([GP], float("-inf"), tl.float32)
    l = tl.zeros([GP], tl.float32)
    acc = tl.zeros([GP, D], tl.float32)
    for i in range(blk0, tl.minimum(blk0 + BLOCKS_PER_PART, nb)):
        phys = tl.load(bt_ptr + b.to(tl.int64) * sbt_b + i).to(tl.int64)
        tok = i * BS + ti
        valid = (ti < BS) & (tok < L)  # slots past L may hold NaN: never load them
        if NO_TAIL_MASK:  # WRONG: the last block's slots past L are attended to
            valid = ti < BS
        base = phys * sc_n + ti[:, None] * sc_t + kvh * sc_h + di[None, :]
        k = tl.load(kc_ptr + base, mask=valid[:, None], other=0.0)
        v = tl.load(vc_ptr + base, mask=valid[:, None], other=0.0)
        m, l, acc = _online_step(m, l, acc, q, k, v, valid[None, :], scale, IEEE)
    o = ((b * Hkv + kvh) * NPART + part).to(tl.int64)
    tl.store(m_ptr + o * GP + gi, m)
    tl.store(l_ptr + o * GP + gi, l)
    tl.store(acc_ptr + (o * GP + gi[:, None]) * D + di[None, :], acc)


@triton.jit
def _pa_reduce_kernel(m_ptr, l_ptr, acc_ptr, out_ptr, lse_ptr, Hkv, NPART, so_b, so_h,
                      G: tl.constexpr, GP: tl.constexpr, D: tl.constexpr, NPART_P: tl.constexpr):
    b = tl.program_id(0)
    kvh = tl.program_id(1)
    g = tl.program_id(2)
    pi = tl.arange(0, NPART_P)
    di = tl.arange(0, D)
    o = (b * Hkv + kvh).to(tl.int64) * NPART + pi
    pm = pi < NPART
    m = tl.load(m_ptr + o * GP + g, mask=pm, other=float("-inf"))
    l = tl.load(l_ptr + o * GP + g, mask=pm, other=0.0)
    mx = tl.max(m, 0)
    w = tl.where(m == float("-inf"), 0.0, tl.exp2((m - mx) * 1.4426950408889634))
    den = tl.sum(l * w, 0)
    acc = tl.load(acc_ptr + (o[:, None] * GP + g) * D + di[None, :], mask=pm[:, None], other=0.0)
    out = tl.sum(acc * w[:, None], 0) / den
    h = kvh * G + g
    tl.store(out_ptr + b.to(tl.int64) * so_b + h * so_h + di, out.to(out_ptr.dtype.element_ty))
    tl.store(lse_ptr + b * (Hkv * G) + h, mx + tl.log(den))


BLOCKS_PER_PART = 4  # 512 tokens per partition at block size 128


def pa_prepare(case, x, wrong=False):
    q, kc, vc = x["query"], x["key_cache"], x["value_cache"]
    bt, lens = x["block_tables"], x["context_lens"]
    B, Hq, D = q.shape
    NB, BS, Hkv, _ = kc.shape
    G = Hq // Hkv
    GP = max(16, triton.next_power_of_2(G))  # tl.dot wants >= 16 rows
    MAXB = bt.shape[1]
    scale = float(case.params.get("scale", 1 / math.sqrt(D)))
    bpp = max(1, BLOCKS_PER_PART * 128 // BS)
    lmax = int(lens.max())
    NPART = max(1, triton.cdiv(triton.cdiv(lmax, BS), bpp))
    dev = q.device
    mbuf = torch.empty(B * Hkv * NPART * GP, dtype=torch.float32, device=dev)
    lbuf = torch.empty_like(mbuf)
    abuf = torch.empty(B * Hkv * NPART * GP * D, dtype=torch.float32, device=dev)
    out = torch.empty((B, Hq, D), dtype=q.dtype, device=dev)
    lse = torch.empty((B, Hq), dtype=torch.float32, device=dev)

    def launch():
        _pa_partial_kernel[(B, Hkv, NPART)](
            q, kc, vc, bt, lens, mbuf, lbuf, abuf, scale, Hq, Hkv, MAXB, NPART,
            q.stride(0), q.stride(1), kc.stride(0), kc.stride(1), kc.stride(2), bt.stride(0),
            G=G, GP=GP, D=D, BS=BS, BSP=max(16, triton.next_power_of_2(BS)), BLOCKS_PER_PART=bpp,
            IEEE=q.dtype == torch.float32, NO_TAIL_MASK=wrong, num_warps=4)
        _pa_reduce_kernel[(B, Hkv, G)](mbuf, lbuf, abuf, out, lse, Hkv, NPART, out.stride(0), out.stride(1),
                                       G=G, GP=GP, D=D, NPART_P=triton.next_power_of_2(NPART), num_warps=4)

    es = q.element_size()
    nbytes = int(lens.sum()) * Hkv * D * 2 * es + 2 * B * Hq * D * es + 4 * B * Hq + 4 * bt.numel()
    return launch, {"out": out, "lse": lse}, nbytes


# ----------------------------------------------------------------------------- quest (§5)


@triton.jit
def _quest_meta_kernel(kc_ptr, bt_ptr, lens_ptr, kmax_ptr, kmin_ptr, MAXB, Hkv, sc_n, sc_t, sc_h, sbt_b,
                       D: tl.constexpr, BS: tl.constexpr, BSP: tl.constexpr):
    b = tl.program_id(0)
    i = tl.program_id(1)
    h = tl.program_id(2)
    L = tl.load(lens_ptr + b)
    nb = tl.cdiv(L, BS)
    ti = tl.arange(0, BSP)
    di = tl.arange(0, D)
    o = ((b * MAXB + i) * Hkv + h).to(tl.int64) * D + di
    if i < nb:
        phys = tl.load(bt_ptr + b.to(tl.int64) * sbt_b + i).to(tl.int64)
        valid = (ti < BS) & (i * BS + ti < L)
        ptr = kc_ptr + phys * sc_n + ti[:, None] * sc_t + h * sc_h + di[None, :]
        k = tl.load(ptr, mask=valid[:, None], other=0.0).to(tl.float32)
        kmax = tl.max(tl.where(valid[:, None], k, float("-inf")), 0)
        kmin = tl.min(tl.where(valid[:, None], k, float("inf")), 0)
        tl.store(kmax_ptr + o, kmax.to(kmax_ptr.dtype.element_ty))
        tl.store(kmin_ptr + o, kmin.to(kmin_ptr.dtype.element_ty))
    else:  # logical blocks past nb are 0 (ops.md §7)
        tl.store(kmax_ptr + o, tl.zeros([D], tl.float32).to(kmax_ptr.dtype.element_ty))
        tl.store(kmin_ptr + o, tl.zeros([D], tl.float32).to(kmin_ptr.dtype.element_ty))


@triton.jit
def _quest_score_kernel(q_ptr, kmax_ptr, kmin_ptr, lens_ptr, score_ptr, Hq, Hkv, MAXB, Hsel,
                        G: tl.constexpr, GROUP_SUM: tl.constexpr, NH: tl.constexpr, D: tl.constexpr,
                        BS: tl.constexpr, BI: tl.constexpr):
    b = tl.program_id(0)
    hs = tl.program_id(1)
    ib = tl.program_id(2)
    L = tl.load(lens_ptr + b)
    nb = tl.cdiv(L, BS)
    ii = ib * BI + tl.arange(0, BI)
    di = tl.arange(0, D)
    if GROUP_SUM:  # kv_group_sum: one row per KV head, summed over its G query heads
        kvh = hs
        h0 = hs * G
    else:
        kvh = hs // G
        h0 = hs
    meta = ((b * MAXB + ii[:, None]) * Hkv + kvh).to(tl.int64) * D + di[None, :]
    im = ii[:, None] < nb
    kmax = tl.load(kmax_ptr + meta, mask=im, other=0.0).to(tl.float32)
    kmin = tl.load(kmin_ptr + meta, mask=im, other=0.0).to(tl.float32)
    sc = tl.zeros([BI], tl.float32)
    for g in range(NH):
        q = tl.load(q_ptr + (b * Hq + h0 + g).to(tl.int64) * D + di).to(tl.float32)
        sc += tl.sum(tl.maximum(q[None, :] * kmax, q[None, :] * kmin), 1)
    sc = tl.where(ii < nb, sc, float("-inf"))
    tl.store(score_ptr + (b * Hsel + hs).to(tl.int64) * MAXB + ii, sc, mask=ii < MAXB)


@triton.jit
def _quest_topk_kernel(score_ptr, lens_ptr, sel_ptr, MAXB, Hsel, K,
                       BS: tl.constexpr, MAXBP: tl.constexpr, ANCHOR_FIRST: tl.constexpr,
                       ANCHOR_LAST: tl.constexpr, LOWEST: tl.constexpr):
    b = tl.program_id(0)
    hs = tl.program_id(1)
    L = tl.load(lens_ptr + b)
    nb = tl.cdiv(L, BS)
    ii = tl.arange(0, MAXBP)
    row = (b * Hsel + hs).to(tl.int64)
    sc = tl.load(score_ptr + row * MAXB + ii, mask=ii < nb, other=float("-inf"))
    if LOWEST:  # WRONG: keeps the lowest-scoring blocks
        sc = tl.where(ii < nb, -sc, float("-inf"))
    chosen = ii < 0
    if K >= nb:
        chosen = ii < nb
    else:
        if ANCHOR_FIRST:
            chosen = chosen | (ii == 0)
        if ANCHOR_LAST:
            chosen = chosen | (ii == nb - 1)
        n_anchor = tl.sum(chosen.to(tl.int32), 0)  # nb = 1: both anchors are one block
        sc = tl.where(chosen, float("-inf"), sc)
        # (score descending, index ascending): argmax keeps the lowest index among equals
        for _ in range(K - n_anchor):
            j = tl.argmax(sc, 0, tie_break_left=True)
            chosen = chosen | (ii == j)
            sc = tl.where(ii == j, float("-inf"), sc)
    pos = tl.cumsum(chosen.to(tl.int32), 0) - 1
    tl.store(sel_ptr + row * K + pos, ii, mask=chosen)


@triton.jit
def _quest_attn_kernel(q_ptr, kc_ptr, vc_ptr, bt_ptr, lens_ptr, sel_ptr, out_ptr, lse_ptr, scale,
                       Hq, Hsel, K, sc_n, sc_t, sc_h, sbt_b,
                       G: tl.constexpr, GROUP_SUM: tl.constexpr, D: tl.constexpr, BS: tl.constexpr,
                       BSP: tl.constexpr):
    b = tl.program_id(0)
    h = tl.program_id(1)
    L = tl.load(lens_ptr + b)
    kvh = h // G
    if GROUP_SUM:
        hs = kvh
    else:
        hs = h
    ti = tl.arange(0, BSP)
    di = tl.arange(0, D)
    q = tl.load(q_ptr + (b * Hq + h).to(tl.int64) * D + di).to(tl.float32)
    m = tl.full([BSP], float("-inf"), tl.float32)
    l = tl.zeros([BSP], tl.float32)
    acc = tl.zeros([BSP, D], tl.float32)
    for j in range(K):
        i = tl.load(sel_ptr + (b * Hsel + hs).to(tl.int64) * K + j)
        if i >= 0:
            phys = tl.load(bt_ptr + b.to(tl.int64) * sbt_b + i).to(tl.int64)
            valid = (ti < BS) & (i * BS + ti < L)
            base = phys * sc_n + ti[:, None] * sc_t + kvh * sc_h + di[None, :]
            k = tl.load(kc_ptr + base, mask=valid[:, None], other=0.0).to(tl.float32)
            v = tl.load(vc_ptr + base, mask=valid[:, None], other=0.0).to(tl.float32)
            s = tl.where(valid, tl.sum(k * q[None, :], 1) * scale, float("-inf"))
            # per-lane online softmax: lane t keeps its own max over the blocks
            m_new = tl.maximum(m, s)
            alpha = tl.where(m_new == float("-inf"), 1.0, tl.exp2((m - m_new) * 1.4426950408889634))
            p = tl.where(m_new == float("-inf"), 0.0, tl.exp2((s - m_new) * 1.4426950408889634))
            l = l * alpha + p
            acc = acc * alpha[:, None] + p[:, None] * v
            m = m_new
    mx = tl.max(m, 0)
    w = tl.where(m == float("-inf"), 0.0, tl.exp2((m - mx) * 1.4426950408889634))
    den = tl.sum(l * w, 0)
    out = tl.sum(acc * w[:, None], 0) / den
    tl.store(out_ptr + (b * Hq + h).to(tl.int64) * D + di, out.to(out_ptr.dtype.element_ty))
    tl.store(lse_ptr + b * Hq + h, mx + tl.log(den))


def quest_prepare(case, x, wrong=False):
    p = case.params
    q, kc, vc = x["query"], x["key_cache"], x["value_cache"]
    bt, lens = x["block_tables"], x["context_lens"]
    B, Hq, D = q.shape
    NB, BS, Hkv, _ = kc.shape
    G = Hq // Hkv
    MAXB = bt.shape[1]
    K = int(p["k"])
    group = p.get("granularity", "q_head") == "kv_group_sum"
    Hsel = Hkv if group else Hq
    scale = float(p.get("scale", 1 / math.sqrt(D)))
    dev = q.device
    kmax = torch.empty((B, MAXB, Hkv, D), dtype=kc.dtype, device=dev)
    kmin = torch.empty_like(kmax)
    scores = torch.empty((B, Hsel, MAXB), dtype=torch.float32, device=dev)
    sel = torch.empty((B, Hsel, K), dtype=torch.int32, device=dev)
    out = torch.empty((B, Hq, D), dtype=q.dtype, device=dev)
    lse = torch.empty((B, Hq), dtype=torch.float32, device=dev)
    BSP = triton.next_power_of_2(BS)
    BI = 16

    def launch():
        _quest_meta_kernel[(B, MAXB, Hkv)](kc, bt, lens, kmax, kmin, MAXB, Hkv, kc.stride(0), kc.stride(1),
                                           kc.stride(2), bt.stride(0), D=D, BS=BS, BSP=BSP, num_warps=4)
        _quest_score_kernel[(B, Hsel, triton.cdiv(MAXB, BI))](q, kmax, kmin, lens, scores, Hq, Hkv, MAXB, Hsel, G=G,
                                                              GROUP_SUM=group, NH=G if group else 1, D=D, BS=BS, BI=BI,
                                                              num_warps=4)
        sel.fill_(-1)
        _quest_topk_kernel[(B, Hsel)](scores, lens, sel, MAXB, Hsel, K, BS=BS,
                                      MAXBP=max(16, triton.next_power_of_2(MAXB)),
                                      ANCHOR_FIRST=bool(p.get("anchor_first", True)),
                                      ANCHOR_LAST=bool(p.get("anchor_last", True)), LOWEST=wrong, num_warps=4)
        _quest_attn_kernel[(B, Hq)](q, kc, vc, bt, lens, sel, out, lse, scale, Hq, Hsel, K,
                                    kc.stride(0), kc.stride(1), kc.stride(2), bt.stride(0),
                                    G=G, GROUP_SUM=group, D=D, BS=BS, BSP=BSP, num_warps=4)

    es = q.element_size()
    L = lens.to(torch.int64)
    nb = (L + BS - 1) // BS
    sel_tokens = torch.minimum(nb, torch.full_like(nb, K)) * BS  # upper bound: whole selected blocks
    nbytes = (int(L.sum()) * Hkv * D * es                      # keys read once for the metadata
              + 2 * 2 * B * MAXB * Hkv * D * es                 # kmax/kmin written, then read
              + int(torch.minimum(sel_tokens, L).sum()) * Hq * D * 2 * es  # selected K/V per query head
              + 2 * B * Hq * D * es)
    return launch, {"kmax": kmax, "kmin": kmin, "scores": scores, "selected": sel, "out": out, "lse": lse}, nbytes


# ----------------------------------------------------------------------------- unified attention (docs/spec.md §12)
# vLLM V1's mixed-batch kernel structure (vllm/attention/ops/
# triton_unified_attention.py, kernel_unified_attention_2d): program
# (q block, kv head) finds its sequence by binary search over
# query_start_loc (q-block mode: qsl[s] // BLOCK_Q + s), takes BLOCK_Q
# query tokens x G heads as BLOCK_M rows, and runs an online softmax over
# TILE-token tiles of the sequence's keys up to the block's causal limit,
# fp32 accumulation, P rounded to the cache dtype for the PV product. Zero-
# length rows and padded tokens are never touched (their out and lse stay as
# torch.empty left them: not graded).


@triton.jit
def _ua_kernel(out_ptr, lse_ptr, q_ptr, kc_ptr, vc_ptr, bt_ptr, sl_ptr, qsl_ptr, scale, num_seqs,
               sq_t, sq_h, so_t, so_h, sc_n, sc_t, sc_h, sbt,
               Hq: tl.constexpr, G: tl.constexpr, D: tl.constexpr, BS: tl.constexpr,
               BLOCK_M: tl.constexpr, BLOCK_Q: tl.constexpr, TILE: tl.constexpr,
               IEEE: tl.constexpr, CAUSAL_SHIFT: tl.constexpr):
    qb = tl.program_id(0)
    kvh = tl.program_id(1)
    lo: tl.int32 = 0
    hi = num_seqs
    while lo < hi:  # the last s with qsl[s] // BLOCK_Q + s <= qb
        mid = (lo + hi) // 2
        if tl.load(qsl_ptr + mid) // BLOCK_Q + mid <= qb:
            lo = mid + 1
        else:
            hi = mid
    s = lo - 1
    q0 = tl.load(qsl_ptr + s)
    qlen = tl.load(qsl_ptr + s + 1) - q0
    local = qb - (q0 // BLOCK_Q + s)
    if local * BLOCK_Q >= qlen:
        return
    rm = tl.arange(0, BLOCK_M)
    di = tl.arange(0, D)
    qpos = local * BLOCK_Q + rm // G
    head = kvh * G + rm % G
    row_ok = (rm // G < BLOCK_Q) & (qpos < qlen)
    tok = (q0 + qpos).to(tl.int64)
    Q = tl.load(q_ptr + tok[:, None] * sq_t + head[:, None] * sq_h + di[None, :], mask=row_ok[:, None], other=0.0)
    L = tl.load(sl_ptr + s)
    ctx = L - qlen
    # keys the block's last row may see (the causal limit), never past L
    limit = tl.minimum(ctx + tl.minimum(local * BLOCK_Q + BLOCK_Q, qlen) + CAUSAL_SHIFT, L)
    m = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    ti = tl.arange(0, TILE)
    for j in range(0, tl.cdiv(limit, TILE)):
        kpos = j * TILE + ti
        kvalid = kpos < limit  # slots past L may hold NaN: never load them
        phys = tl.load(bt_ptr + s.to(tl.int64) * sbt + kpos // BS, mask=kvalid, other=0).to(tl.int64)
        off = phys[:, None] * sc_n + (kpos % BS)[:, None] * sc_t + kvh * sc_h + di[None, :]
        k = tl.load(kc_ptr + off, mask=kvalid[:, None], other=0.0)
        v = tl.load(vc_ptr + off, mask=kvalid[:, None], other=0.0)
        keep = (kpos[None, :] < ctx + qpos[:, None] + 1 + CAUSAL_SHIFT) & kvalid[None, :] & row_ok[:, None]
        m, l, acc = _online_step(m, l, acc, Q, k, v, keep, scale, IEEE)
    o = acc / l[:, None]
    tl.store(out_ptr + tok[:, None] * so_t + head[:, None] * so_h + di[None, :], o.to(out_ptr.dtype.element_ty), mask=row_ok[:, None])
    tl.store(lse_ptr + tok * Hq + head, m + tl.log(l), mask=row_ok)


UA_TILE = 32


def ua_prepare(case, x, wrong=False):
    q, kc, vc = x["query"], x["key_cache"], x["value_cache"]
    bt, sl, qsl = x["block_table"], x["seq_lens"], x["query_start_loc"]
    T, Hq, D = q.shape
    NB, BS, Hkv, _ = kc.shape
    S = sl.shape[0]
    G = Hq // Hkv
    BLOCK_M = 16 if G <= 16 else triton.next_power_of_2(G)
    BLOCK_Q = BLOCK_M // G
    scale = float(case.params.get("scale", 1 / math.sqrt(D)))
    out = torch.empty((T, Hq, D), dtype=q.dtype, device=q.device)
    lse = torch.empty((T, Hq), dtype=torch.float32, device=q.device)
    grid = (T // BLOCK_Q + S, Hkv)  # vLLM's upper bound on the q blocks

    def launch():
        _ua_kernel[grid](out, lse, q, kc, vc, bt, sl, qsl, scale, S,
                         q.stride(0), q.stride(1), out.stride(0), out.stride(1),
                         kc.stride(0), kc.stride(1), kc.stride(2), bt.stride(0),
                         Hq=Hq, G=G, D=D, BS=BS, BLOCK_M=BLOCK_M, BLOCK_Q=BLOCK_Q, TILE=UA_TILE,
                         IEEE=q.dtype == torch.float32, CAUSAL_SHIFT=1 if wrong else 0, num_warps=4)

    es = q.element_size()
    n = int(qsl[-1])
    nbytes = int(sl.sum()) * Hkv * D * 2 * es + 2 * n * Hq * D * es + 4 * n * Hq + 4 * bt.numel()
    return launch, {"out": out, "lse": lse}, nbytes


PREPARE = {
    "matmul": matmul_prepare,
    "softmax": softmax_prepare,
    "reshape_and_cache": rc_prepare,
    "paged_attention": pa_prepare,
    "quest": quest_prepare,
    "unified_attention": ua_prepare,
    **dsa_kernels.PREPARE,
    **mx_kernels.PREPARE,
}

# the bug each WRONG variant switches on
WRONG_BUG = {
    "matmul": "skips the K tail tile",
    "softmax": "no max subtraction",
    "reshape_and_cache": "writes slot s+1",
    "paged_attention": "does not mask the last block past the context length",
    "quest": "keeps the lowest-scoring blocks",
    "unified_attention": "causal mask off by one (query token i also attends key ctx+i+1)",
    **dsa_kernels.WRONG_BUG,
    **mx_kernels.WRONG_BUG,
}


def kernel(case, inputs):
    launch, outputs, _ = PREPARE[case.op](case, inputs)
    launch()
    return outputs


def wrong_kernel(case, inputs):
    launch, outputs, _ = PREPARE[case.op](case, inputs, wrong=True)
    launch()
    return outputs


def _context_lens(case):
    return case.info.get("context_lens") or case.params.get("context_lens") or []


def wrong_applies(case):
    """Whether the WRONG bug changes this case's result (else the wrong
    kernel returns the right answer, and the judge must pass it)."""
    if case.op in dsa_kernels.PREPARE:
        return dsa_kernels.wrong_applies(case)
    if case.op in mx_kernels.PREPARE:
        return mx_kernels.wrong_applies(case)
    p = case.params
    if case.op == "matmul":
        return int(p["k"]) % 64 != 0  # the K tail tile exists only then
    if case.op == "softmax":
        return True  # exp overflows on outlier rows, and the row_max it reports (0) is never the max
    if case.op == "reshape_and_cache":
        return int(case.info.get("slots_written", 0 if p.get("all_negative") else 1)) > 0
    if case.op == "unified_attention":
        rows = p.get("rows") or case.info.get("rows") or []
        return any(int(r["q_len"]) >= 2 for r in rows)  # a token with a later one in its row
    bs = int(p["bs"])
    if case.op == "paged_attention":
        return any(int(L) % bs for L in _context_lens(case))  # a partial last block
    if case.op == "quest":
        # the ranking matters when some row has more blocks than it keeps and the scores differ
        return not p.get("tie") and any(-(-int(L) // bs) > int(p["k"]) for L in _context_lens(case))
    return True
