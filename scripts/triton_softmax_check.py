#!/usr/bin/env python3
"""Run a Triton online-softmax kernel on a bundle's softmax cases and judge
it with `goldset compare` (exit status 0 when every verdict is as expected).

    python3 scripts/triton_softmax_check.py GOLDSET_BINARY BUNDLE OUTDIR

For every softmax case it writes two candidates and compares each with the
golden through the CLI, as a contestant would:
  online  - tiled online softmax, fp32 running max and sum: must PASS
  nomax   - the same without subtracting the row max: must FAIL on cases
            with outlier rows (exp overflows), and is skipped elsewhere
"""
import json, os, subprocess, sys

import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr, SUB_MAX: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * n_cols
    y_row = y_ptr + row * n_cols
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        if SUB_MAX:
            m_new = tl.maximum(m, x)
            scale = tl.where(m_new == float("-inf"), 0.0, tl.exp(m - m_new))
            p = tl.where(m_new == float("-inf"), 0.0, tl.exp(x - m_new))
            s = s * scale + p
            m = m_new
        else:
            s = s + tl.exp(x)
    if SUB_MAX:
        row_m = tl.max(m, 0)
        s = tl.where(m == float("-inf"), 0.0, s * tl.exp(m - row_m))
    else:
        row_m = 0.0
    row_s = tl.sum(s, 0)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        y = tl.exp(x - row_m) / row_s
        if SUB_MAX:
            y = tl.where(row_m == float("-inf"), 0.0, y)
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=cols < n_cols)


def main():
    gs, bundle, out = sys.argv[1:4]
    os.makedirs(out, exist_ok=True)
    m = json.load(open(os.path.join(bundle, "manifest.json")))
    wrong = 0
    for c in m["cases"]:
        if c["op"] != "softmax":
            continue
        t = next(t for t in c["tensors"] if t["name"] == "x")
        x = np.load(os.path.join(bundle, t["path"]))
        dt = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}[t["dtype"]]
        xt = torch.from_numpy(x.view(np.int16) if t["dtype"] == "bfloat16" else x).cuda()
        if t["dtype"] == "bfloat16":
            xt = xt.view(torch.bfloat16)
        outliers = bool(c.get("info", {}).get("special_rows", {}).get("outlier_uniform"))
        for name, sub in (("online", True), ("nomax", False)):
            if name == "nomax" and not outliers:
                continue
            y = torch.empty_like(xt)
            softmax_kernel[(xt.shape[0],)](xt, y, xt.shape[1], BLOCK=1024, SUB_MAX=sub)
            ya = y.cpu()
            ya = ya.view(torch.int16).numpy().view(np.uint16) if t["dtype"] == "bfloat16" else ya.numpy()
            f = os.path.join(out, f"{c['id']}-{name}.npy")
            np.save(f, ya)
            r = subprocess.run([gs, "compare", bundle, "--case", c["id"], "--output", f"y={f}", "--partial", "--json"], capture_output=True, text=True)
            rep = json.loads(r.stdout)["reports"][0] if r.stdout.strip().startswith("{") else {}
            want = 0 if name == "online" else 3
            ok = r.returncode == want
            wrong += not ok
            print(f"{'ok  ' if ok else 'BAD '} {c['id']:<28} {name:<7} exit {r.returncode} (want {want}) "
                  f"max_ulp {rep.get('max_ulp')} worst_ratio {rep.get('worst_ratio')} failed {rep.get('failed', [])[:1]}", flush=True)
    print(json.dumps({"triton": triton.__version__, "torch": torch.__version__, "misjudged": wrong}))
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
