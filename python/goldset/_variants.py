"""Replay-proof variants (docs/spec.md §13d): run a kernel on the
variants `goldset gen --variants N --case ID` built, one variant per timed
iteration, and check the sampled rows of every output.

    v = goldset.open_bundle("out/stage1-basic.variants.mm-qwen3-q-16x4096x4096-bf16")
    res = goldset.judge_variants("out/stage1-basic", v, my_kernel, warmup=3)
    res["ok"], res["failed"]      # iterations whose sampled rows fail

The warm-up runs on the fixed bundle's inputs; timed iteration i runs on
variant i, never repeated. A kernel that caches an output by input content,
or replays one output across iterations, passes the fixed bundle and fails
here. The rows checked were chosen with the organiser's secret, so a kernel
cannot compute only those.
"""
import math

import numpy as np

from ._bundle import open_bundle


def _as_numpy(x):
    """A kernel output as a float64 numpy array (torch tensors copied to the host)."""
    if hasattr(x, "detach"):  # torch
        x = x.detach()
        if str(x.dtype) in ("torch.bfloat16", "torch.float16"):
            x = x.float()
        x = x.cpu().numpy()
    return np.asarray(x, dtype=np.float64)


def _same_nonfinite(c, g):
    """NaN exactly where g is NaN, and the same infinities."""
    return bool(np.all(np.isnan(c) == np.isnan(g)) and np.all(np.isposinf(c) == np.isposinf(g))
                and np.all(np.isneginf(c) == np.isneginf(g)))


def check_rows(tol, cand, ref, bound=None):
    """Judges sampled rows (k, n) of a candidate against the reference rows
    under a recorded tolerance; returns (ok, reason). allclose: the
    nonfinite, elementwise (with the bound term) and row_rel_l2 rules of
    compare; exact: equal values; set: equal multisets per row. Other modes
    (the DSA families) are not checked here: (True, "not checked")."""
    mode = tol.get("mode")
    if cand.shape != ref.shape:
        return False, f"shape {cand.shape}, want {ref.shape}"
    if mode == "exact":
        same = (cand == ref) | (np.isnan(cand) & np.isnan(ref))
        return (True, "") if same.all() else (False, f"{int((~same).sum())} elements differ (exact)")
    if mode == "set":
        ign = set(tol.get("set_ignore") or [])
        for i, (c, g) in enumerate(zip(cand, ref)):
            if sorted(x for x in c if x not in ign) != sorted(x for x in g if x not in ign):
                return False, f"sampled row {i}: sets differ"
        return True, ""
    if mode != "allclose":
        return True, "not checked"
    if not _same_nonfinite(cand, ref):
        return False, "NaN/Inf where the reference has none (or the reverse)"
    rtol, atol = tol.get("rtol", 0.0), tol.get("atol", 0.0)
    fac, rl2 = tol.get("atol_rms_factor", 0.0), tol.get("row_rel_l2", 0.0)
    for i, (c, g) in enumerate(zip(cand, ref)):
        fin = np.isfinite(g) & np.isfinite(c)
        if not fin.any():
            continue
        gf, cf = g[fin], c[fin]
        rms = math.sqrt(float(np.mean(gf * gf)))
        allow = atol + fac * rms + rtol * np.abs(gf)
        if bound is not None:
            b = bound[i][fin]
            allow = allow + tol.get("bound_factor", 0.0) * np.where(np.isfinite(b) & (b > 0), b, 0.0)
        err = np.abs(cf - gf)
        if (err > allow).any():
            j = int(np.argmax(err - allow))
            return False, f"sampled row {i}: |c-g| = {err[j]:.3g} > {allow[j] if np.ndim(allow) else allow:.3g} (elementwise)"
        if rl2 > 0 and float(np.linalg.norm(cf - gf)) > rl2 * float(np.linalg.norm(gf)) + atol * math.sqrt(len(gf)):
            return False, f"sampled row {i}: row_rel_l2 exceeded"
    return True, ""


def check_variant(variant_case, outputs):
    """Checks a kernel's outputs for one variant; returns (ok, reasons)."""
    info = variant_case.info
    ok, why = True, []
    for o in info["outputs"]:
        if o["name"] not in outputs:
            ok = False
            why.append(f"{o['name']}: missing")
            continue
        rows = variant_case.load(o["rows"]).astype(np.int64)
        ref = variant_case.load(o["values"]).astype(np.float64)
        bound = variant_case.load(o["bound"]).astype(np.float64) if o.get("bound") else None
        n = ref.shape[1]
        c = _as_numpy(outputs[o["name"]]).reshape(-1, n)
        if rows.size and rows.max() >= c.shape[0]:
            ok = False
            why.append(f"{o['name']}: {c.shape[0]} rows, the sample needs row {int(rows.max())}")
            continue
        good, reason = check_rows(o["tolerance"], c[rows], ref, bound)
        if not good:
            ok = False
            why.append(f"{o['name']}: {reason}")
    return ok, why


def judge_variants(bundle, variants, kernel, warmup=1, backend="numpy", device=None, timer=None):
    """Runs kernel(case, inputs) warmup times on the fixed case, then once
    per variant (iteration i on variant i), checking each variant's sampled
    rows. timer, when given, wraps each timed call: timer(fn) -> (outputs,
    seconds). Returns a dict: ok, case, iterations, failed (indices),
    reasons, times_ms."""
    if isinstance(bundle, str):
        bundle = open_bundle(bundle)
    if isinstance(variants, str):
        variants = open_bundle(variants)
    vcases = sorted(variants, key=lambda c: c.info["index"])
    if not vcases:
        raise ValueError("the variants bundle holds no variant")
    case_id = vcases[0].info["variant_of"]
    base = bundle.case(case_id)
    for vc in vcases:
        if vc.info["variant_of"] != case_id or vc.op != base.op:
            raise ValueError(f"variant {vc.id} is not a variant of {case_id}")
    fixed = base.inputs(backend=backend, device=device)
    for _ in range(warmup):
        kernel(base, fixed)
    failed, reasons, times = [], {}, []
    for i, vc in enumerate(vcases):
        inputs = vc.inputs(backend=backend, device=device)
        if timer is not None:
            out, t = timer(lambda: kernel(base, inputs))
            times.append(t * 1e3)
        else:
            out = kernel(base, inputs)
        good, why = check_variant(vc, out)
        if not good:
            failed.append(i)
            reasons[i] = why
    return {"ok": not failed, "case": case_id, "iterations": len(vcases), "failed": failed, "reasons": reasons,
            "times_ms": times}
