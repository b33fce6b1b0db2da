#!/usr/bin/env python3
"""Run goldset's Triton baselines as chains and judge them with `goldset compare --chain`.

    python3 baselines/triton/chain.py BUNDLE --goldset BIN --out DIR [--chains ID,...]
                                      [--wrong-write] [--wrong-attend] [--json FILE]

A pipeline chain (docs/spec.md §14) is consecutive scheduler steps, each a
reshape_and_cache stage and an attention stage (unified_attention or quest).
Here every stage runs the Triton kernel on the chain's OWN state: step s's
reshape_and_cache writes into the cache the kernel produced at step s-1 (the
bundle's cache only at the first step), and the attention stage reads the
cache the kernel just wrote, as a serving engine would. Each stage's outputs
go to DIR/<chain>/<stage-case>/<output>.npy, and `goldset compare BUNDLE
--chain ID --dir DIR/<chain> --json` judges the chain: per stage and step,
naming the first divergence.

--wrong-write runs reshape_and_cache's broken twin (writes slot s+1) at the
chain's second step (its first when it has one): compare must name that
step's reshape_and_cache first, and the later stages still run on the
broken cache. --wrong-attend runs the attention's broken twin at the last
step: compare must name that attention stage.

Exit status 0 when every chain's verdict is as expected (PASS for the
honest run; the first divergence at the broken stage otherwise).

Examples:
  goldset gen stage4-steps --split public --out /tmp/b
  python3 baselines/triton/chain.py /tmp/b/stage4-steps --goldset ./goldset --out /tmp/chain
  python3 baselines/triton/chain.py /tmp/b/stage4-steps --goldset ./goldset --out /tmp/chainw --wrong-write
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)

import goldset  # noqa: E402
import kernels  # noqa: E402


def chain_cases(bundle, chain):
    """The chain's stage cases, grouped by step, in (step, stage) order."""
    steps = {}
    for c in bundle.cases:
        ref = c.chain
        if ref and ref["id"] == chain["id"]:
            steps.setdefault(ref["step"], []).append(c)
    return [sorted(steps[s], key=lambda c: c.chain["stage"]) for s in chain["steps"]]


def run_chain(bundle, chain, out, wrong_write_step=None, wrong_attend_step=None):
    cache = None
    for stages in chain_cases(bundle, chain):
        step = stages[0].chain["step"]
        for case in stages:
            x = case.inputs(backend="torch", device="cuda")
            if cache is not None:
                # the chain's own state: the cache this kernel wrote
                x["key_cache"], x["value_cache"] = cache
            wrong = (case.op == "reshape_and_cache" and step == wrong_write_step) or \
                    (case.op != "reshape_and_cache" and step == wrong_attend_step)
            launch, outs, _ = kernels.PREPARE[case.op](case, x, wrong=wrong)
            launch()
            if case.op == "reshape_and_cache":
                cache = (outs["key_cache_out"], outs["value_cache_out"])
            for name in case.outputs:
                goldset.save_output(case, name, outs[name].cpu(), out_dir=out)


def judge(goldset_bin, bundle_dir, chain_id, out):
    p = subprocess.run([goldset_bin, "compare", bundle_dir, "--chain", chain_id, "--dir", out, "--json"],
                       capture_output=True, text=True)
    if p.returncode not in (0, 3):
        raise RuntimeError(f"goldset compare --chain {chain_id}: exit {p.returncode}: {p.stderr.strip()}")
    return json.loads(p.stdout)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bundle")
    ap.add_argument("--goldset", required=True, help="the goldset binary")
    ap.add_argument("--out", required=True, help="where the chains' outputs go")
    ap.add_argument("--chains", default="", help="comma-separated chain ids (default: all)")
    ap.add_argument("--wrong-write", action="store_true", help="break reshape_and_cache at the second step")
    ap.add_argument("--wrong-attend", action="store_true", help="break the attention at the last step")
    ap.add_argument("--json", help="write the verdicts here")
    a = ap.parse_args(argv)
    b = goldset.open_bundle(a.bundle)
    chains = b.chains
    if a.chains:
        want = set(a.chains.split(","))
        chains = [c for c in chains if c["id"] in want]
    if not chains:
        print(f"{a.bundle}: no chains to run", file=sys.stderr)
        return 2
    results, bad = [], 0
    for ch in chains:
        steps = ch["steps"]
        ww = steps[min(1, len(steps) - 1)] if a.wrong_write else None
        wa = steps[-1] if a.wrong_attend else None
        out = os.path.join(a.out, ch["id"])
        run_chain(b, ch, out, ww, wa)
        v = judge(a.goldset, a.bundle, ch["id"], out)
        first = v.get("first_divergence")
        if ww is not None:
            expect = (ww, 0)
        elif wa is not None:
            expect = (wa, len(ch["stages"]) - 1)
        else:
            expect = None
        got = (first["step"], first["stage"]) if first else None
        ok = got == expect
        bad += not ok
        lines = [f"  step {s['step']:<5} stage {s['stage']} {s['op']:<18} {s['status']}" for s in v["stages"]]
        print(f"{ch['id']} ({ch['kind']}, steps {steps}): {v['status']}, first divergence "
              f"{'none' if got is None else 'step %d stage %d (%s)' % (got[0], got[1], first['op'])}, "
              f"expected {'none' if expect is None else 'step %d stage %d' % expect}: {'OK' if ok else 'WRONG'}")
        print("\n".join(lines))
        results.append({"chain": ch["id"], "expected": expect, "first": got, "ok": ok, "verdict": v})
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
