#!/usr/bin/env python3
"""Cross-check a stage6-mxfp4 bundle with torch and ml_dtypes (GPU or CPU).

    python3 scripts/mxfp4_gpu_check.py BUNDLE --goldset PATH [--device cuda] [--out DIR]

Run on the H200 on 2026-12-01; its output is docs/mxfp4-h200.log.

Independently of goldset's Go code and of python/goldset's decoders:
  1. decodes every E2M1 code (ml_dtypes.float4_e2m1fn on the unpacked
     nibbles, and torch.float4_e2m1fn_x2 where this torch converts it),
     E8M0 scale (torch.float8_e8m0fnu and ml_dtypes.float8_e8m0fnu) and
     e4m3 byte (torch.float8_e4m3fn and ml_dtypes.float8_e4m3fn) of the
     bundle, requiring both libraries to give the same values;
  2. requires the goldens to hold: mxfp4_dequantize's y equals code value
     times scale (bit for bit, NaN for NaN); mxfp4_quantize's codes and
     scales equal a torch quantizer written from ops.md §9a (scale exponent
     from amax's float32 bits, elements by ml_dtypes' RNE cast of the
     exactly scaled values); mxfp4_to_fp8's fp8 values equal code value
     times 2^(e_b - S) for every group not flagged inexact;
  3. runs torch GEMMs (bf16 inputs over the dequantized weights, fp32
     accumulation; and a Triton tl.dot kernel when triton imports) and a
     torch fp32 MoE (gpt-oss routing, SwiGLU), writes their outputs as .npy
     and judges them with `goldset compare --json`, which must PASS;
     records error / bound per case (the worst elementwise ratio, <= 1).
Prints one line per case and a JSON summary; exits 1 if anything fails.
"""
import argparse, json, os, subprocess, sys, time

import ml_dtypes
import numpy as np
import torch

E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], np.float32)


def load(bdir, case, name):
    t = next(t for t in case["tensors"] if t["name"] == name)
    return np.load(os.path.join(bdir, t["path"]), allow_pickle=False), t


def bf16(a):
    return (a.astype(np.uint32) << 16).view(np.float32)


def same(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return a.shape == b.shape and bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


CHECK_ELEMS = 1 << 24  # bytes decoded by both libraries; the rest by the table (checked on the prefix)


def decode_codes(packed, dev):
    """E2M1 values [.., 2n]: ml_dtypes on the unpacked nibbles (the first
    CHECK_ELEMS bytes of a large tensor, the OCP table for the rest), and
    torch's float4_e2m1fn_x2 where this torch converts it."""
    flat = packed.reshape(-1)
    head = flat[:CHECK_ELEMS]
    nib = np.stack([head & 15, head >> 4], axis=-1).reshape(-1)
    v = nib.view(ml_dtypes.float4_e2m1fn).astype(np.float32)
    if not same(v, E2M1[nib]):
        raise SystemExit("ml_dtypes float4_e2m1fn disagrees with the OCP table")
    note = "ml_dtypes" + ("" if flat.size <= CHECK_ELEMS else f" (first {CHECK_ELEMS} bytes)")
    try:
        tv = torch.from_numpy(head.copy()).view(torch.float4_e2m1fn_x2)
        tf = tv.to(torch.float32).numpy().reshape(-1)  # not every torch converts x2
        if tf.size == v.size and same(tf, v):
            note += "+torch"
        else:
            raise SystemExit("torch float4_e2m1fn_x2 disagrees with ml_dtypes")
    except (RuntimeError, TypeError, NotImplementedError, AttributeError) as e:
        note += f"; torch x2 .to(float32): {type(e).__name__}"
    t = torch.from_numpy(flat).to(dev)
    tab = torch.from_numpy(E2M1).to(dev)
    full = torch.stack([tab[(t & 15).long()], tab[(t >> 4).long()]], dim=-1).reshape(*packed.shape[:-1], -1)
    return full.cpu().numpy(), note


def decode_byte_coded(b, ml_type, torch_type, what):
    """float32 values of byte codes, decoded by ml_dtypes and torch, which must agree."""
    m = b.view(ml_type).astype(np.float32)
    t = torch.from_numpy(b.copy()).view(torch_type).to(torch.float32).numpy()
    if not same(m, t):
        raise SystemExit(f"torch and ml_dtypes disagree on {what}")
    return t


def decode_e8m0(b, dev):
    return decode_byte_coded(b, ml_dtypes.float8_e8m0fnu, torch.float8_e8m0fnu, "E8M0")


def decode_e4m3(b, dev):
    return decode_byte_coded(b, ml_dtypes.float8_e4m3fn, torch.float8_e4m3fn, "e4m3")


def deq(codes, scales, dev):
    v, note = decode_codes(codes, dev)
    s = decode_e8m0(scales, dev)
    return (v.reshape(*v.shape[:-1], -1, 32) * s[..., None]).reshape(v.shape), note


def torch_quantize(x, mode, dev):
    """ops.md §9a in torch: scale exponent on amax's float32 bits."""
    xt = torch.from_numpy(x).to(dev).reshape(x.shape[0], -1, 32)
    amax = xt.abs().amax(-1)
    bits = amax.view(torch.int32).to(torch.int64)
    if mode == "even":
        bits = bits + (1 << 21)
    E = torch.where(bits >= (1 << 23), (bits >> 23) - 127, torch.zeros_like(bits))
    f_bits = bits & 0x7FFFFF
    sub = bits < (1 << 23)  # subnormal amax: normalize
    if sub.any():
        fr, ex = torch.frexp(amax[sub].double())
        E[sub] = ex.to(torch.int64) - 1
        f_bits[sub] = ((fr * 2 - 1) * 2**23).round().to(torch.int64)
    e = E - 2
    if mode == "rceil":
        e = e + (f_bits > (1 << 22)).to(torch.int64)
    elif mode == "ceil":
        e = e + (f_bits > 0).to(torch.int64)
    b = torch.clamp(e + 127, 0, 254)
    b = torch.where(amax == 0, torch.zeros_like(b), b)
    scaled = (xt.double() * torch.exp2((127 - b).double())[..., None]).cpu().numpy()
    codes = np.clip(scaled, -6, 6).astype(ml_dtypes.float4_e2m1fn).view(np.uint8) & 15
    codes = codes.reshape(x.shape[0], -1)
    return (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8), b.cpu().numpy().astype(np.uint8)


def judge(gs, bdir, cid, outs, odir):
    args = [gs, "compare", bdir, "--case", cid, "--json"]
    for name, arr in outs.items():
        p = os.path.join(odir, f"{cid}.{name}.npy")
        np.save(p, arr)
        args += ["--output", f"{name}={p}"]
    r = subprocess.run(args, capture_output=True, text=True)
    try:
        rep = json.loads(r.stdout)
    except json.JSONDecodeError:
        return False, {"error": r.stderr.strip()[-300:]}
    info = {}
    for rp in rep["reports"]:
        chk = {c["rule"]: c for c in rp.get("checks", [])}
        info = {"status": rp["status"], "worst_ratio": rp.get("worst_ratio"), "max_abs": rp.get("max_abs"),
                "worst_row_rel_l2": rp.get("worst_row_rel_l2"),
                "allclose_1e-2_violations": chk.get("allclose_gpumode", {}).get("violations")}
    return rep["status"] == "PASS", info


def to_bf16_bits(t):
    return t.to(torch.bfloat16).view(torch.int16).cpu().numpy().view(np.uint16)


_kernel = None


def triton_matmul(a, b):
    """C = A @ B^T with tl.dot on bf16 tiles, fp32 accumulator."""
    global _kernel
    import triton
    import triton.language as tl

    if _kernel is None:
        _kernel = _make_kernel(triton, tl)
    M, K = a.shape
    N = b.shape[0]
    c = torch.empty((M, N), device=a.device, dtype=torch.float32)
    _kernel[(triton.cdiv(M, 64), triton.cdiv(N, 64))](a, b, c, M, N, K, BM=64, BN=64, BK=32)
    return c


def _make_kernel(triton, tl):
    @triton.jit
    def k(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pm, pn = tl.program_id(0), tl.program_id(1)
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, K, BK):
            rk = k0 + tl.arange(0, BK)
            x = tl.load(A + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
            w = tl.load(B + rn[:, None] * K + rk[None, :], mask=(rn[:, None] < N) & (rk[None, :] < K), other=0.0)
            acc += tl.dot(x, tl.trans(w))
        tl.store(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))

    return k


def torch_moe(x, logits, w1, b1, w2, b2, topk, round_act=True):
    """gpt-oss MoE in fp32 (weights dequantized, exact in fp32); the SwiGLU
    activations rounded to bf16 before W2 where the case's act_round says so."""
    vals, ids = torch.topk(logits, topk, dim=-1)
    wts = torch.softmax(vals, dim=-1)
    out = torch.zeros_like(x)
    for e in ids.unique().tolist():
        tok, rank = (ids == e).nonzero(as_tuple=True)
        h = x[tok] @ w1[e].T + b1[e]
        glu, lin = h[:, 0::2].clamp(max=7.0), h[:, 1::2].clamp(-7.0, 7.0)
        a = glu * torch.sigmoid(1.702 * glu) * (lin + 1)
        if round_act:
            a = a.to(torch.bfloat16).to(torch.float32)
        out.index_add_(0, tok, (a @ w2[e].T + b2[e]) * wts[tok, rank][:, None])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bundle")
    ap.add_argument("--goldset", default="goldset")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--out", default="/tmp/mxfp4_cands")
    a = ap.parse_args()
    dev = a.device
    os.makedirs(a.out, exist_ok=True)
    # An honest fp32-accumulating GEMM: no bf16 split-K reductions, no TF32.
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    m = json.load(open(os.path.join(a.bundle, "manifest.json")))
    try:
        import triton  # noqa: F401
        have_triton = dev == "cuda"
    except ImportError:
        have_triton = False
    print(f"torch {torch.__version__}, ml_dtypes {ml_dtypes.__version__}, numpy {np.__version__}, device {dev}"
          + (f" ({torch.cuda.get_device_name()})" if dev == "cuda" else "") + f", triton {have_triton}")
    fails, rows = 0, []
    for c in m["cases"]:
        op, cid, p = c["op"], c["id"], c["params"]
        t0 = time.time()
        try:
            ok, info = check_case(a, c, dev, have_triton)
        except Exception as e:  # one broken case must not hide the others
            ok, info = False, {"error": f"{type(e).__name__}: {e}"[:400]}
        info["seconds"] = round(time.time() - t0, 2)
        fails += not ok
        rows.append({"case": cid, "op": op, "ok": bool(ok), **info})
        print(f"{'ok  ' if ok else 'FAIL'} {cid:32s} {op:18s} {json.dumps(info)}", flush=True)
    print(json.dumps({"cases": len(rows), "failed": fails}))
    sys.exit(1 if fails else 0)


def check_case(a, c, dev, have_triton):
    op, cid, p = c["op"], c["id"], c["params"]
    ok, info = True, {}
    L = lambda n: load(a.bundle, c, n)[0]
    if True:
        if op == "mxfp4_dequantize":
            v, note = deq(L("codes"), L("scales"), dev)
            y = L("y")
            y = bf16(y) if p["dtype"] == "bfloat16" else y
            ok = same(v.astype(np.float32) if p["dtype"] == "float32" else
                      torch.from_numpy(v).to(torch.bfloat16).to(torch.float32).numpy(), y)
            info = {"decode": note, "y_equal": ok}
        elif op == "mxfp4_quantize":
            x = L("x")
            x = bf16(x) if p["dtype"] == "bfloat16" else x
            codes, scales = torch_quantize(x, p["mode"], dev)
            gc, gsc = L("codes"), L("scales")
            fold = lambda q: np.where((q & 15) == 8, q & 0xF0, q) & np.where((q >> 4) == 8, 0x0F, 0xFF)
            cm = np.array_equal(codes, gc) if p["strict"] else np.array_equal(fold(codes), fold(gc))
            nz = (gc.reshape(gc.shape[0], -1, 16) & 0x77).any(-1)  # blocks with a nonzero code
            sm = np.array_equal(scales[nz], gsc[nz])
            v, note = deq(gc, gsc, dev)
            ok = cm and sm
            info = {"codes_equal": cm, "scales_equal": sm, "decode": note}
        elif op == "mxfp4_to_fp8":
            v, note = decode_codes(L("codes"), dev)
            sc = L("scales")
            f8 = decode_e4m3(L("fp8"), dev)
            gs = decode_e8m0(L("scale"), dev)
            inexact = L("inexact").astype(bool)
            rows_, k = f8.shape
            if p["target"] == "mxfp8":
                ok = same(f8, v) and np.array_equal(L("scale"), sc)
            else:
                g, nb = p["g"], k // 32
                blk = decode_e8m0(sc, dev).reshape(rows_, nb)
                grp = np.repeat(gs, g, axis=1)[:, :nb]
                want = (v.reshape(rows_, nb, 32) * (blk / grp)[..., None]).reshape(rows_, k)
                exact = ~np.repeat(np.repeat(inexact, g, axis=1)[:, :nb], 32, axis=1)
                ok = same(np.where(exact, f8, 0), np.where(exact, want, 0))
            info = {"fp8_equal": ok, "inexact_groups": int(inexact.sum()), "decode": note}
        elif op.startswith("mxfp4_gemm"):
            w, note = deq(L("w_codes"), L("w_scales"), dev)
            if op == "mxfp4_gemm_a4w4":
                x, _ = deq(L("x_codes"), L("x_scales"), dev)
            elif op == "mxfp4_gemm_w4a8":
                q = decode_e4m3(L("x_fp8"), dev)
                s = decode_e8m0(L("x_scales"), dev)
                x = q * np.repeat(s, 128, axis=1)[:, : q.shape[1]]
            else:
                x = bf16(L("x"))
            xt = torch.from_numpy(np.ascontiguousarray(x)).to(dev).to(torch.bfloat16)  # exact: <= 8 significant bits
            wt = torch.from_numpy(np.ascontiguousarray(w)).to(dev).to(torch.bfloat16)  # exact: E2M1 * 2^e
            y = torch.matmul(xt, wt.T)  # bf16 inputs, fp32 accumulation (cuBLAS)
            ok, info = judge(a.goldset, a.bundle, cid, {"y": to_bf16_bits(y)}, a.out)
            info["decode"] = note
            info["kernel"] = "torch.matmul bf16"
            if have_triton:
                ok2, info2 = judge(a.goldset, a.bundle, cid, {"y": to_bf16_bits(triton_matmul(xt, wt))}, a.out)
                info["triton"] = info2
                ok = ok and ok2
        elif op == "mxfp4_moe":
            x = torch.from_numpy(bf16(L("x"))).to(dev)
            logits = torch.from_numpy(L("router_logits")).to(dev)
            w1, note = deq(L("w1_codes"), L("w1_scales"), dev)
            w2, _ = deq(L("w2_codes"), L("w2_scales"), dev)
            T = lambda n: torch.from_numpy(np.ascontiguousarray(n)).to(dev)
            out = torch_moe(x, logits, T(w1), T(bf16(L("b1"))), T(w2), T(bf16(L("b2"))), p["topk"],
                            round_act=p.get("act_round", "bfloat16") == "bfloat16")
            ok, info = judge(a.goldset, a.bundle, cid, {"out": to_bf16_bits(out)}, a.out)
            info["decode"] = note
            info["kernel"] = "torch fp32 MoE" + (", bf16 activations" if p.get("act_round", "bfloat16") == "bfloat16" else "")
        else:
            info = {"skip": op}
    return ok, info


if __name__ == "__main__":
    main()
