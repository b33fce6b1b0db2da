"""Triton baselines for the MXFP4 ops (docs/spec.md section 9), fp32 accumulation.

Same conventions as kernels.py: prepare(case, x, wrong=False) -> (launch,
outputs, nbytes), x the case's inputs as torch CUDA tensors (the byte-coded
dtypes float4_e2m1fn_x2 / float8_e8m0fnu / float8_e4m3fn are viewed as uint8
here, so any torch works).

  mxfp4_quantize    program (row, 8 blocks): amax on the float32 values, the
                    scale byte by the case's mode on amax's bits, elements
                    x * 2^(127-b) to E2M1 by the RNE thresholds (ties to the
                    even code, saturating at 6, sign kept), packed two per byte.
  mxfp4_dequantize  program (row, 256 columns): E2M1 value * 2^(b-127) in fp32
                    (byte 0: 2^-127, 255: NaN), stored as the case's dtype.
  mxfp4_to_fp8      program (row, group): mxfp8 (the code's e4m3 value, the
                    input scale) or fold_group (S = max e_b - 6 over the group's
                    nonzero blocks, fp8 = (E2M1 * 2^(e_b-S)).to(float8e4nv),
                    inexact where e_b - S < -8).
  mxfp4_gemm*       one fused kernel: x and W tiles decoded in registers from
                    their codes and scales (E2M1 * 2^e is exact in bf16; the
                    w4a8 activations e4m3 * 2^e too), then tl.dot on bf16, fp32
                    accumulator, y rounded once to bf16: online conversion.
  mxfp4_moe         torch routing (top-k, softmax over the k), each expert's W1
                    and W2 GEMMs through the fused kernel (fp32 out), bias,
                    SwiGLU and the weighted combine in fp32, out bf16; the
                    activations enter the second GEMM as the case's act_round
                    says: bf16 (as fused MoE kernels pass them) or fp32 (IEEE
                    fp32 dot); MOE_ACT forces one.

The deliberately wrong variants (WRONG_BUG) switch on one classic bug each.
"""
import torch
import triton
import triton.language as tl

import dsa_kernels

_u8 = dsa_kernels._u8
# The MoE's SwiGLU activations between its two GEMMs: None follows the
# case's act_round ("bfloat16": bf16, as fused MoE kernels hand them to the
# second GEMM; "none": fp32); "bf16" or "fp32" force one (run.py --moe-act).
MOE_ACT = None


@triton.jit
def _e2m1(c):
    """E2M1 code (0..15, int32) -> float32 value: 0, 0.5, 1, 1.5, 2, 3, 4, 6, sign in bit 3."""
    e = (c >> 1) & 3
    m = (c & 1).to(tl.float32)
    mag = tl.where(e == 0, 0.5 * m, tl.where(e == 1, 1.0 + 0.5 * m, tl.where(e == 2, 2.0 + m, 4.0 + 2.0 * m)))
    # the sign as a bit, so code 8 is -0.0 (an arithmetic negation gives +0.0)
    return (mag.to(tl.int32, bitcast=True) | ((c & 8) << 28)).to(tl.float32, bitcast=True)


@triton.jit
def _pow2(e):
    """2^e as float32 for integer e in [-127, 127] (2^-127 is subnormal), exactly."""
    bits = tl.where(e >= -126, (e + 127) << 23, 0x00400000)
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def _e8m0(b):
    """E8M0 byte (int32) -> 2^(b-127), NaN for 255."""
    return tl.where(b == 255, float("nan"), _pow2(b - 127))


# ----------------------------------------------------------------------------- 9a quantize


@triton.jit
def _rne_e2m1(v):
    """|v| to the nearest E2M1 magnitude code 0..7, ties to the even code, saturating at 6."""
    a = tl.abs(v)
    c = tl.where(a <= 0.25, 0, tl.where(a < 0.75, 1, tl.where(a <= 1.25, 2, tl.where(a < 1.75, 3,
        tl.where(a <= 2.5, 4, tl.where(a < 3.5, 5, tl.where(a <= 5.0, 6, 7)))))))
    return c


@triton.jit
def _quantize_kernel(x_ptr, codes_ptr, scales_ptr, K, NBK, MODE: tl.constexpr, NB: tl.constexpr):
    r = tl.program_id(0)
    b0 = tl.program_id(1) * NB
    bi = b0 + tl.arange(0, NB)
    bm = bi < NBK
    j = tl.arange(0, 16)
    off = r.to(tl.int64) * K + bi[:, None] * 32 + 2 * j[None, :]
    xe = tl.load(x_ptr + off, mask=bm[:, None], other=0.0).to(tl.float32)
    xo = tl.load(x_ptr + off + 1, mask=bm[:, None], other=0.0).to(tl.float32)
    amax = tl.maximum(tl.max(tl.abs(xe), 1), tl.max(tl.abs(xo), 1))
    bits = amax.to(tl.int32, bitcast=True)
    if MODE == 3:  # even: round amax's mantissa to one bit first
        bits = bits + (1 << 21)
    e = (bits >> 23) - 127 - 2
    if MODE == 0:  # rceil: ceil(log2(amax/6))
        e = e + ((bits & 0x7FFFFF) > (1 << 22)).to(tl.int32)
    elif MODE == 2:  # ceil
        e = e + ((bits & 0x7FFFFF) > 0).to(tl.int32)
    b = tl.minimum(tl.maximum(e + 127, 0), 254)  # subnormal and zero amax land on 0
    f = _pow2(127 - b)[:, None]
    ce = _rne_e2m1(xe * f) | tl.where(xe.to(tl.int32, bitcast=True) < 0, 8, 0)
    co = _rne_e2m1(xo * f) | tl.where(xo.to(tl.int32, bitcast=True) < 0, 8, 0)
    tl.store(codes_ptr + r.to(tl.int64) * (K // 2) + bi[:, None] * 16 + j[None, :], (ce | (co << 4)).to(tl.uint8),
             mask=bm[:, None])
    tl.store(scales_ptr + r.to(tl.int64) * NBK + bi, b.to(tl.uint8), mask=bm)


_MODES = {"rceil": 0, "floor": 1, "ceil": 2, "even": 3}


def quantize_prepare(case, x, wrong=False):
    xin = x["x"]
    rows, K = xin.shape
    nbk = K // 32
    codes = torch.empty((rows, K // 2), dtype=torch.uint8, device=xin.device)
    scales = torch.empty((rows, nbk), dtype=torch.uint8, device=xin.device)
    mode = _MODES["floor" if wrong else case.params.get("mode", "rceil")]  # WRONG: floor whatever the mode

    def launch():
        _quantize_kernel[(rows, triton.cdiv(nbk, 8))](xin, codes, scales, K, nbk, MODE=mode, NB=8, num_warps=2)

    return launch, {"codes": codes, "scales": scales}, xin.numel() * xin.element_size() + codes.numel() + scales.numel()


# ----------------------------------------------------------------------------- 9b dequantize


@triton.jit
def _dequantize_kernel(codes_ptr, scales_ptr, y_ptr, K, BIAS: tl.constexpr, BK: tl.constexpr):
    r = tl.program_id(0)
    k = tl.program_id(1) * BK + tl.arange(0, BK)
    km = k < K
    byte = tl.load(codes_ptr + r.to(tl.int64) * (K // 2) + k // 2, mask=km, other=0).to(tl.int32)
    c = (byte >> ((k % 2) * 4)) & 15
    b = tl.load(scales_ptr + r.to(tl.int64) * (K // 32) + k // 32, mask=km, other=127).to(tl.int32)
    s = tl.where(b == 255, float("nan"), _pow2(b - BIAS))
    tl.store(y_ptr + r.to(tl.int64) * K + k, (_e2m1(c) * s).to(y_ptr.dtype.element_ty), mask=km)


def dequantize_prepare(case, x, wrong=False):
    codes, scales = _u8(x["codes"]), _u8(x["scales"])
    rows = codes.shape[0]
    K = codes.shape[1] * 2
    dt = torch.bfloat16 if case.params.get("dtype", "float32") == "bfloat16" else torch.float32
    y = torch.empty((rows, K), dtype=dt, device=codes.device)

    def launch():
        # WRONG: a bias of 128 (2^(b-128), half of every value)
        _dequantize_kernel[(rows, triton.cdiv(K, 256))](codes, scales, y, K, BIAS=128 if wrong else 127, BK=256,
                                                        num_warps=4)

    return launch, {"y": y}, codes.numel() + scales.numel() + y.numel() * y.element_size()


# ----------------------------------------------------------------------------- 9c to_fp8


@triton.jit
def _to_fp8_kernel(codes_ptr, scales_ptr, fp8_ptr, scale_ptr, scale_f32_ptr, inexact_ptr, K, NBK, NG,
                   G: tl.constexpr, GP: tl.constexpr, MXFP8: tl.constexpr, FIRST_BLOCK: tl.constexpr):
    r = tl.program_id(0)
    g = tl.program_id(1)
    bi = g * G + tl.arange(0, GP)
    bm = (tl.arange(0, GP) < G) & (bi < NBK)
    j = tl.arange(0, 16)
    byte = tl.load(codes_ptr + r.to(tl.int64) * (K // 2) + bi[:, None] * 16 + j[None, :], mask=bm[:, None],
                   other=0).to(tl.int32)
    lo, hi = byte & 15, byte >> 4
    eb = tl.load(scales_ptr + r.to(tl.int64) * NBK + bi, mask=bm, other=127).to(tl.int32) - 127
    nonzero = bm & (tl.max(((lo | hi) & 7), 1) > 0)
    if MXFP8:
        S = eb
    else:
        if FIRST_BLOCK:  # WRONG: the group's scale from its first block, not its largest
            smax = tl.max(tl.where(tl.arange(0, GP) == 0, eb, -1000), 0)
        else:
            smax = tl.max(tl.where(nonzero, eb, -1000), 0)
        S = tl.where(smax == -1000, 0, tl.maximum(smax - 6, -127))
    d = eb - S  # per block (MXFP8: 0)
    # clamped: an all-zero block may sit far above S (its values stay 0), and
    # below 2^-127 every E2M1 value rounds to an e4m3 zero either way
    f = _pow2(tl.minimum(tl.maximum(d, -127), 127))[:, None]
    ve = (_e2m1(lo) * f).to(tl.float8e4nv).to(tl.uint8, bitcast=True)
    vo = (_e2m1(hi) * f).to(tl.float8e4nv).to(tl.uint8, bitcast=True)
    base = fp8_ptr + r.to(tl.int64) * K + bi[:, None] * 32 + 2 * j[None, :]
    tl.store(base, ve, mask=bm[:, None])
    tl.store(base + 1, vo, mask=bm[:, None])
    if MXFP8:
        tl.store(scale_ptr + r.to(tl.int64) * NG + bi, (eb + 127).to(tl.uint8), mask=bm)
        tl.store(scale_f32_ptr + r.to(tl.int64) * NG + bi, _pow2(eb), mask=bm)
        tl.store(inexact_ptr + r.to(tl.int64) * NG + bi, tl.zeros([GP], tl.uint8), mask=bm)
    else:
        inexact = tl.max((nonzero & (d < -8)).to(tl.int32), 0)
        tl.store(scale_ptr + r.to(tl.int64) * NG + g, (S + 127).to(tl.uint8))
        tl.store(scale_f32_ptr + r.to(tl.int64) * NG + g, _pow2(S))
        tl.store(inexact_ptr + r.to(tl.int64) * NG + g, inexact.to(tl.uint8))


def to_fp8_prepare(case, x, wrong=False):
    p = case.params
    codes, scales = _u8(x["codes"]), _u8(x["scales"])
    rows = codes.shape[0]
    K = codes.shape[1] * 2
    nbk = K // 32
    mxfp8 = p.get("target", "mxfp8") == "mxfp8"
    G = 1 if mxfp8 else int(p.get("g", 4))
    ng = nbk if mxfp8 else triton.cdiv(nbk, G)
    dev = codes.device
    fp8 = torch.empty((rows, K), dtype=torch.uint8, device=dev)
    scale = torch.empty((rows, ng), dtype=torch.uint8, device=dev)
    scale_f32 = torch.empty((rows, ng), dtype=torch.float32, device=dev)
    inexact = torch.empty((rows, ng), dtype=torch.uint8, device=dev)
    # mxfp8: one program per row covers GP blocks at a time
    GP = 16 if mxfp8 else triton.next_power_of_2(G)
    grid = (rows, triton.cdiv(nbk, GP)) if mxfp8 else (rows, ng)

    def launch():
        _to_fp8_kernel[grid](codes, scales, fp8, scale, scale_f32, inexact, K, nbk, ng, G=GP if mxfp8 else G, GP=GP,
                             MXFP8=mxfp8, FIRST_BLOCK=wrong, num_warps=1)

    return launch, {"fp8": fp8, "scale": scale, "scale_f32": scale_f32, "inexact": inexact}, \
        codes.numel() + scales.numel() + fp8.numel() + 6 * scale.numel()


# ----------------------------------------------------------------------------- 9d/9e GEMMs and the MoE


@triton.jit
def _decode_tile(codes_ptr, scales_ptr, rows, ks, row_ok, k_ok, K, SWAP: tl.constexpr):
    """[R, BK] bf16 tile of an MXFP4 matrix: rows x ks, zero outside."""
    m = row_ok[:, None] & k_ok[None, :]
    byte = tl.load(codes_ptr + rows[:, None] * (K // 2) + ks[None, :] // 2, mask=m, other=0).to(tl.int32)
    shift = (ks[None, :] % 2) * 4
    if SWAP:  # WRONG: element 2i read from the high nibble
        shift = 4 - shift
    c = (byte >> shift) & 15
    b = tl.load(scales_ptr + rows[:, None] * (K // 32) + ks[None, :] // 32, mask=m, other=127).to(tl.int32)
    return tl.where(m, _e2m1(c) * _pow2(b - 127), 0.0).to(tl.bfloat16)


@triton.jit
def _mx_gemm_kernel(x_ptr, xc_ptr, xs_ptr, wc_ptr, ws_ptr, y_ptr, M, N, K,
                    XKIND: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SWAP: tl.constexpr):
    """y = x W^T, W [N, K] MXFP4. XKIND 0: x bf16; 1: x MXFP4 (codes, scales);
    2: x e4m3 (x_ptr) with one E8M0 byte per 128 of K (xs_ptr); 3: x float32,
    W decoded to float32 and an IEEE fp32 dot (no TF32)."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    mm, nm = rm < M, rn < N
    rm64, rn64 = rm.to(tl.int64), rn.to(tl.int64)
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + tl.arange(0, BK)
        km = ks < K
        if XKIND == 0 or XKIND == 3:
            a = tl.load(x_ptr + rm64[:, None] * K + ks[None, :], mask=mm[:, None] & km[None, :], other=0.0)
        elif XKIND == 1:
            a = _decode_tile(xc_ptr, xs_ptr, rm64, ks, mm, km, K, False)  # the bug is W's alone: both swapped cancel
        else:
            q = tl.load(x_ptr + rm64[:, None] * K + ks[None, :], mask=mm[:, None] & km[None, :], other=0)
            sb = tl.load(xs_ptr + rm64[:, None] * tl.cdiv(K, 128) + ks[None, :] // 128, mask=mm[:, None] & km[None, :],
                         other=127).to(tl.int32)
            a = (q.to(tl.float8e4nv, bitcast=True).to(tl.float32) * _pow2(sb - 127)).to(tl.bfloat16)
        w = _decode_tile(wc_ptr, ws_ptr, rn64, ks, nm, km, K, SWAP)
        if XKIND == 3:
            acc = tl.dot(a, tl.trans(w.to(tl.float32)), acc, input_precision="ieee")
        else:
            acc = tl.dot(a, tl.trans(w), acc)
    tl.store(y_ptr + rm64[:, None] * N + rn64[None, :], acc.to(y_ptr.dtype.element_ty), mask=mm[:, None] & nm[None, :])


def _mx_gemm(y, wc, ws, x=None, xc=None, xs=None, kind=0, swap=False):
    M, N = y.shape
    K = wc.shape[-1] * 2
    BM = 16 if M <= 16 else 64
    dummy = wc
    _mx_gemm_kernel[(triton.cdiv(M, BM), triton.cdiv(N, 64))](
        x if x is not None else dummy, xc if xc is not None else dummy, xs if xs is not None else dummy,
        wc, ws, y, M, N, K, XKIND=kind, BM=BM, BN=64, BK=32, SWAP=swap, num_warps=4)


def gemm_prepare(case, x, wrong=False):
    wc, ws = _u8(x["w_codes"]), _u8(x["w_scales"])
    N = wc.shape[0]
    if case.op == "mxfp4_gemm_a4w4":
        xc, xs = _u8(x["x_codes"]), _u8(x["x_scales"])
        M, kind, args = xc.shape[0], 1, {"xc": xc, "xs": xs}
    elif case.op == "mxfp4_gemm_w4a8":
        xq, xs = _u8(x["x_fp8"]), _u8(x["x_scales"])
        M, kind, args = xq.shape[0], 2, {"x": xq, "xs": xs}
    else:
        xb = x["x"]
        M, kind, args = xb.shape[0], 0, {"x": xb}
    y = torch.empty((M, N), dtype=torch.bfloat16, device=wc.device)

    def launch():
        _mx_gemm(y, wc, ws, kind=kind, swap=wrong, **args)

    K = wc.shape[1] * 2
    return launch, {"y": y}, M * K * 2 + wc.numel() + ws.numel() + y.numel() * 2


def moe_prepare(case, x, wrong=False):
    p = case.params
    xb, logits = x["x"], x["router_logits"]
    w1c, w1s, b1 = _u8(x["w1_codes"]), _u8(x["w1_scales"]), x["b1"].float()
    w2c, w2s, b2 = _u8(x["w2_codes"]), _u8(x["w2_scales"]), x["b2"].float()
    T, Hd = xb.shape
    E, I2 = w1c.shape[0], w1c.shape[1]
    k = int(p["topk"])
    out = torch.empty((T, Hd), dtype=torch.bfloat16, device=xb.device)
    act = MOE_ACT or ("bf16" if p.get("act_round", "bfloat16") == "bfloat16" else "fp32")

    def launch():
        vals, ids = torch.topk(logits, k, dim=-1)
        if wrong:  # WRONG: softmax over every expert, then the top-k of those weights
            wts = torch.softmax(logits, dim=-1).gather(1, ids)
        else:
            wts = torch.softmax(vals, dim=-1)
        acc = torch.zeros((T, Hd), dtype=torch.float32, device=xb.device)
        for e in ids.unique().tolist():
            tok, rank = (ids == e).nonzero(as_tuple=True)
            h = torch.empty((tok.numel(), I2), dtype=torch.float32, device=xb.device)
            _mx_gemm(h, w1c[e], w1s[e], x=xb[tok].contiguous())
            h += b1[e]
            glu, lin = h[:, 0::2].clamp(max=7.0), h[:, 1::2].clamp(-7.0, 7.0)
            a = glu * torch.sigmoid(1.702 * glu) * (lin + 1)
            o = torch.empty((tok.numel(), Hd), dtype=torch.float32, device=xb.device)
            if act == "bf16":
                _mx_gemm(o, w2c[e], w2s[e], x=a.to(torch.bfloat16).contiguous())
            else:
                _mx_gemm(o, w2c[e], w2s[e], x=a.contiguous(), kind=3)
            acc.index_add_(0, tok, (o + b2[e]) * wts[tok, rank][:, None])
        out.copy_(acc)

    nbytes = xb.numel() * 2 + w1c.numel() + w1s.numel() + w2c.numel() + w2s.numel() + out.numel() * 2
    return launch, {"out": out}, nbytes


PREPARE = {
    "mxfp4_quantize": quantize_prepare,
    "mxfp4_dequantize": dequantize_prepare,
    "mxfp4_to_fp8": to_fp8_prepare,
    "mxfp4_gemm": gemm_prepare,
    "mxfp4_gemm_a4w4": gemm_prepare,
    "mxfp4_gemm_w4a8": gemm_prepare,
    "mxfp4_moe": moe_prepare,
}

WRONG_BUG = {
    "mxfp4_quantize": "floor scales whatever the case's mode",
    "mxfp4_dequantize": "an exponent bias of 128",
    "mxfp4_to_fp8": "a fold group's scale from its first block, not its largest",
    "mxfp4_gemm": "element 2i read from the high nibble",
    "mxfp4_gemm_a4w4": "element 2i read from the high nibble",
    "mxfp4_gemm_w4a8": "element 2i read from the high nibble",
    "mxfp4_moe": "softmax over every expert instead of the top k",
}


def wrong_applies(case):
    p = case.params
    if case.op == "mxfp4_quantize":
        return p.get("mode", "rceil") != "floor"
    if case.op == "mxfp4_to_fp8":  # a group of one block has its first block as its largest
        return p.get("target", "mxfp8") == "fold_group" and int(p.get("g", 4)) > 1 and int(p["k"]) > 32
    return True
