#!/usr/bin/env python3
"""Run goldset's Triton baselines as chains and judge them with `goldset compare --chain`.

    python3 baselines/triton/chain.py BUNDLE --goldset BIN --out DIR [--chains ID,...]
                                      [--wrong-write] [--wrong-select] [--wrong-attend] [--json FILE]

A pipeline chain (docs/spec.md §14) is consecutive scheduler steps, each a
cache-write stage and the stages that read the cache: reshape_and_cache ->
unified_attention or quest; dsa_index_cache -> dsa_indexer ->
dsa_sparse_attention (the DSA chain). Here every stage runs the Triton
kernel on the chain's OWN state: step s's cache write writes into the cache
the kernel produced at step s-1 (the bundle's cache only at the first step),
and the stages after it read the cache the kernel just wrote, as a serving
engine would. The DSA attention reads the bundle's sparse_indices (the golden
selection): a top-k may legally differ from the golden inside the tie band
(docs/spec.md §8), and attention over another legal selection has another
exact answer; the rows where the kernel's own selection differs are counted.
The MLA caches are the bundle's (their write is not a stage). Each stage's
outputs go to DIR/<chain>/<stage-case>/<output>.npy, and `goldset compare
BUNDLE --chain ID --dir DIR/<chain> --json` judges the chain: per stage and
step, naming the first divergence.

--wrong-write runs the cache write's broken twin (reshape_and_cache: writes
slot s+1; dsa_index_cache: fp32 scales for ue8m0) at the chain's second step
(its first when it has one): compare must name that step's write first, and
the later stages still run on the broken cache. --wrong-select runs the DSA
indexer's broken twin (forgets the key scale) at the last step and
--wrong-attend the last stage's broken twin at the last step: compare must
name that stage.

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


def run_chain(bundle, chain, out, wrong=()):
    """Runs the chain's stages on its own state; wrong holds the (step, stage)
    pairs that run their broken twin. Returns the rows where the DSA
    indexer's own selection differs (as a set) from the golden one."""
    cache, icache, sel_rows = None, None, 0
    for stages in chain_cases(bundle, chain):
        step = stages[0].chain["step"]
        for case in stages:
            x = case.inputs(backend="torch", device="cuda")
            if cache is not None and "key_cache" in x:
                # the chain's own state: the cache this kernel wrote
                x["key_cache"], x["value_cache"] = cache
            if icache is not None and "index_cache" in x:
                x["index_cache"] = icache
            launch, outs, _ = kernels.PREPARE[case.op](case, x, wrong=(step, case.chain["stage"]) in wrong)
            launch()
            if case.op == "reshape_and_cache":
                cache = (outs["key_cache_out"], outs["value_cache_out"])
            if case.op == "dsa_index_cache":
                icache = outs["index_cache_out"]
            if case.op == "dsa_indexer":
                own = outs["topk_physical"].view(-1, outs["topk_physical"].shape[-1])
            if case.op == "dsa_sparse_attention":
                gold = x["sparse_indices"]
                sel_rows += int((own.sort(-1).values != gold.sort(-1).values).any(-1).sum())
            for name in case.outputs:
                goldset.save_output(case, name, outs[name].cpu(), out_dir=out)
    return sel_rows


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
    ap.add_argument("--wrong-write", action="store_true", help="break the cache write at the second step")
    ap.add_argument("--wrong-select", action="store_true", help="break the DSA indexer at the last step")
    ap.add_argument("--wrong-attend", action="store_true", help="break the last stage at the last step")
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
        steps, last = ch["steps"], len(ch["stages"]) - 1
        expect = None
        if a.wrong_write:
            expect = (steps[min(1, len(steps) - 1)], 0)
        elif a.wrong_select and last == 2:
            expect = (steps[-1], 1)
        elif a.wrong_attend:
            expect = (steps[-1], last)
        out = os.path.join(a.out, ch["id"])
        sel_rows = run_chain(b, ch, out, {expect} if expect else set())
        v = judge(a.goldset, a.bundle, ch["id"], out)
        first = v.get("first_divergence")
        got = (first["step"], first["stage"]) if first else None
        ok = got == expect
        bad += not ok
        lines = [f"  step {s['step']:<5} stage {s['stage']} {s['op']:<18} {s['status']}" for s in v["stages"]]
        print(f"{ch['id']} ({ch['kind']}, steps {steps}): {v['status']}, first divergence "
              f"{'none' if got is None else 'step %d stage %d (%s)' % (got[0], got[1], first['op'])}, "
              f"expected {'none' if expect is None else 'step %d stage %d' % expect}: {'OK' if ok else 'WRONG'}"
              + (f"; own top-k differs from the golden in {sel_rows} rows" if ch["kind"] == "dsa" else ""))
        print("\n".join(lines))
        results.append({"chain": ch["id"], "expected": expect, "first": got, "ok": ok, "verdict": v,
                        "own_selection_rows_differing": sel_rows})
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
