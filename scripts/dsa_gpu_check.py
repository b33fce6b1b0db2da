#!/usr/bin/env python3
"""GPU calibration of the DSA tolerances (docs/spec.md section 8).

Builds nothing itself: run it on a bundle of stage5-dsa (public split), e.g.

    ./goldset gen stage5-dsa --split public -o /tmp/b
    python3 scripts/dsa_gpu_check.py --goldset ./goldset --bundle /tmp/b/stage5-dsa --work /tmp/w

For every paged and ragged dsa_indexer case it runs a torch fp32 indexer
(fp32 matmul of the e4m3 values, fp32 weighted ReLU sum and scale, torch.topk)
and a bf16 one (bf16 matmul, bf16 logits), and for every dsa_sparse_attention
case a torch fp32 and a bf16 MLA over the golden selection, writes their
outputs as .npy and judges each through `goldset compare --json`, printing one
line per (kernel, case, output): status and worst error / bound.
"""
import argparse, json, os, subprocess, sys
import numpy as np
import torch
import ml_dtypes

dev = "cuda"


def load(bdir, case, name):
    t = next(t for t in case["tensors"] if t["name"] == name)
    a = np.load(os.path.join(bdir, t["path"]))
    if t["dtype"] == "float8_e4m3fn":
        a = a.view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    elif t["dtype"] == "bfloat16":
        a = a.view(ml_dtypes.bfloat16).astype(np.float32)
    return a


def topk_rows(scores, k):
    # (score desc, position asc): torch.topk is not stable, sort by key instead
    n = scores.shape[-1]
    v, i = torch.sort(scores, dim=-1, descending=True, stable=True)
    out = torch.full((k,), -1, dtype=torch.int32, device=scores.device)
    m = min(k, n)
    out[:m] = i[:m].to(torch.int32)
    return out


def indexer_paged(bdir, case, bf16):
    p = case["params"]
    q = torch.tensor(load(bdir, case, "q"), device=dev)
    w = torch.tensor(load(bdir, case, "weights"), device=dev)
    cache = np.load(os.path.join(bdir, next(t for t in case["tensors"] if t["name"] == "index_cache")["path"]))
    di = p["di"]
    nb = cache.shape[0]
    codes = cache[:, : 64 * di].reshape(nb * 64, di).view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    scales = cache[:, 64 * di:].copy().view(np.float32).reshape(nb * 64)
    codes, scales = torch.tensor(codes, device=dev), torch.tensor(scales, device=dev)
    bt = load(bdir, case, "block_table")
    lens = load(bdir, case, "seq_lens")
    B, NN, HI, _ = q.shape
    W = bt.shape[1] * 64
    K = p["k"]
    logits = torch.full((B, NN, W), float("-inf"), device=dev)
    tl = torch.empty((B, NN, K), dtype=torch.int32, device=dev)
    tp = torch.empty((B, NN, K), dtype=torch.int32, device=dev)
    for b in range(B):
        L = int(lens[b])
        pos = np.arange(L)
        slots = torch.tensor(bt[b, pos // 64] * 64 + pos % 64, device=dev, dtype=torch.long)
        kk, sc = codes[slots], scales[slots]
        for j in range(NN):
            vis = L - NN + j + 1
            if bf16:
                d = (q[b, j].bfloat16() @ kk[:vis].bfloat16().T)
                I = ((w[b, j].bfloat16()[:, None] * torch.relu(d)).sum(0) * sc[:vis].bfloat16()).float()
            else:
                d = q[b, j] @ kk[:vis].T
                I = (w[b, j][:, None] * torch.relu(d)).sum(0) * sc[:vis]
            logits[b, j, :vis] = I
            t = topk_rows(I, K)
            tl[b, j] = t
            phys = torch.where(t >= 0, slots[t.clamp(min=0).long()].to(torch.int32), t)
            tp[b, j] = phys
    return {"logits": logits, "topk_logical": tl, "topk_physical": tp}


def indexer_ragged(bdir, case, bf16):
    p = case["params"]
    q = torch.tensor(load(bdir, case, "q"), device=dev)
    w = torch.tensor(load(bdir, case, "weights"), device=dev)
    kv = torch.tensor(load(bdir, case, "kv"), device=dev)
    sc = torch.tensor(load(bdir, case, "kv_scale"), device=dev)
    ks, ke = load(bdir, case, "ks"), load(bdir, case, "ke")
    T, S, K = q.shape[0], kv.shape[0], p["k"]
    logits = torch.full((T, S), float("-inf"), device=dev)
    topk = torch.empty((T, K), dtype=torch.int32, device=dev)
    for r in range(T):
        lo, hi = int(ks[r]), int(ke[r])
        if bf16:
            d = q[r].bfloat16() @ kv[lo:hi].bfloat16().T
            I = ((w[r].bfloat16()[:, None] * torch.relu(d)).sum(0) * sc[lo:hi].bfloat16()).float()
        else:
            d = q[r] @ kv[lo:hi].T
            I = (w[r][:, None] * torch.relu(d)).sum(0) * sc[lo:hi]
        logits[r, lo:hi] = I
        t = topk_rows(I, K)
        topk[r] = torch.where(t >= 0, t + lo, t)
    return {"logits": logits, "topk": topk}


def attention(bdir, case, mode):
    """mode: False (fp32 throughout); True (FlashMLA's precision: fp32 QK
    accumulation of the bf16 inputs, P rounded to bf16 for PV, out bf16);
    "bf16-logits" (also the QK logits rounded to bf16: a harsher kernel)."""
    p = case["params"]
    qn = torch.tensor(load(bdir, case, "q_nope"), device=dev)
    qp = torch.tensor(load(bdir, case, "q_pe"), device=dev)
    ckv = torch.tensor(load(bdir, case, "ckv_cache"), device=dev).reshape(-1, qn.shape[-1])
    kpe = torch.tensor(load(bdir, case, "kpe_cache"), device=dev).reshape(-1, qp.shape[-1])
    idx = load(bdir, case, "sparse_indices")
    T, H, DC = qn.shape
    out = torch.zeros((T, H, DC), device=dev)
    lse = torch.full((T, H), float("inf"), device=dev)  # FlashMLA: +inf on an empty row
    for r in range(T):
        sel = torch.tensor(idx[r][idx[r] >= 0], device=dev, dtype=torch.long)
        if sel.numel() == 0:
            continue
        kc, kp = ckv[sel], kpe[sel]
        if mode:
            if mode == "bf16-logits":
                x = (qn[r].bfloat16() @ kc.bfloat16().T + qp[r].bfloat16() @ kp.bfloat16().T).float() * p["sm_scale"]
            else:
                x = (qn[r] @ kc.T + qp[r] @ kp.T) * p["sm_scale"]
            m = x.max(-1, keepdim=True).values
            e = torch.exp(x - m)
            o = (e.bfloat16().float() @ kc) / e.sum(-1, keepdim=True)
        else:
            x = (qn[r] @ kc.T + qp[r] @ kp.T) * p["sm_scale"]
            m = x.max(-1, keepdim=True).values
            e = torch.exp(x - m)
            o = (e @ kc) / e.sum(-1, keepdim=True)
        out[r] = o
        lse[r] = (m + torch.log(e.sum(-1, keepdim=True))).squeeze(-1)
    return {"out": out, "lse": lse}


def judge(goldset, bundle, cid, files):
    args = [goldset, "compare", bundle, "--case", cid, "--json", "--partial"]
    for n, f in files.items():
        args += ["--output", f"{n}={f}"]
    r = subprocess.run(args, capture_output=True, text=True)
    try:
        return r.returncode, json.loads(r.stdout)
    except json.JSONDecodeError:
        return r.returncode, {"error": r.stderr.strip()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--goldset", required=True)
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    m = json.load(open(os.path.join(a.bundle, "manifest.json")))
    os.makedirs(a.work, exist_ok=True)
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
    print(f"{'kernel':<17} {'case':<22} {'output':<14} {'status':<5} {'worst err/bound':>16} {'max_abs':>12} {'mismatch':>9} checks: observed (FAIL: marks a failing one)")
    for c in m["cases"]:
        if c["op"] == "dsa_indexer":
            f = indexer_ragged if c["params"].get("layout") == "ragged" else indexer_paged
        elif c["op"] == "dsa_sparse_attention":
            f = attention
        else:
            continue
        kernels = [("torch-fp32", False), ("torch-bf16", True)]
        if f is attention:
            kernels.append(("torch-bf16-logits", "bf16-logits"))
        for kern, bf in kernels:
            torch.backends.cuda.matmul.allow_tf32 = False
            outs = f(a.bundle, c, bf)
            torch.cuda.synchronize()
            files = {}
            for n, t in outs.items():
                path = os.path.join(a.work, f"{c['id']}.{kern}.{n}.npy")
                arr = t.cpu().numpy()
                if n == "out":
                    arr = arr.astype(ml_dtypes.bfloat16).astype(np.float32)
                np.save(path, arr)
                files[n] = path
            rc, rep = judge(a.goldset, a.bundle, c["id"], files)
            reps = rep.get("outputs") or rep.get("reports") or []
            if not reps:
                print(f"{kern:<17} {c['id']:<22} {'-':<14} rc={rc} {json.dumps(rep)[:300]}")
            for r in reps:
                failed = " ".join(("" if ch["pass"] else "FAIL:") + ch["rule"] + "=" + f"{float(ch['observed']):.3g}" for ch in r.get("checks", []))
                print(f"{kern:<17} {c['id']:<22} {r.get('name',''):<14} {r.get('status',''):<5} {str(r.get('worst_ratio','')):>16} {str(r.get('max_abs','')):>12} {str(r.get('mismatch_count','')):>9} {failed}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
