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
        native = (ah @ (bh.T if p["b_layout"] == "NK" else bh)).float().cpu().numpy()
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


# torch references by op name; every op `goldset list --ops` names needs one.
REFERENCES = {
    "matmul": check_matmul,
    "softmax": check_softmax,
    "reshape_and_cache": check_reshape_and_cache,
    "paged_attention": check_attention,
    "quest": check_attention,
}


def op_table(goldset):
    """goldset's op table: {name: {"inputs": [...], "outputs": [...], ...}}."""
    try:
        out = subprocess.run([goldset, "list", "--ops", "--json"], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit(f"{goldset} list --ops --json: {e} (give the goldset binary with --goldset)")
    return {o["name"]: o for o in json.loads(out)}


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
    res["tensors_as_listed"] = want - aux <= got <= want  # aux outputs are optional (quest no_dense)
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
    print(json.dumps({"bundle": a.bundle, "device": a.device, "torch": torch.__version__, "numpy": np.__version__, "cases": len(summary), "failed": failed, "unchecked_ops": sorted(unchecked)}))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
