#!/usr/bin/env python3
"""Judge goldset's Triton baselines on bundles, and time them.

    python3 baselines/triton/run.py BUNDLE... [--goldset BIN] [--ops OP,...] [--cases GLOB,...]
                                    [--split public] [--bench] [--reps 50] [--warmup 10]
                                    [--wrong] [--json FILE] [--markdown FILE]
                                    [--dsa-dot fp8|fp16] [--moe-act bf16|fp32]
                                    [--timing FILE [--profile h200] [--fake-time F]]

Every case runs through goldset.judge (the kernel's outputs go through
`goldset compare --json`). --bench also times each case's GPU kernels: a
CUDA graph of the op's launches (eager launches where capture fails), warm-up,
then the median of --reps replays timed with CUDA events, the L2 cache
flushed (256 MiB written) before each; GB/s is the op's compulsory bytes
(each input read once, each output written once; attention counts the
context's or the selected blocks' tokens) over that median. --wrong runs the
deliberately broken twins instead (kernels.WRONG_BUG names each bug): every
case where the bug changes the result must FAIL, and the others (a K that is
a multiple of the tile, no slot written, no partial last block, a ranking
that cannot matter) must PASS, since the wrong kernel's answer is right there.

With --bench --timing FILE the per-iteration times go to FILE (schema
goldset-timing/1, docs/spec.md §13b) and `goldset compare BUNDLE --timing
FILE` judges them against each case's recorded work: peak_fraction per
device profile, and FAIL for a time below the --profile device's floor.
--fake-time F also judges a copy with every time scaled by F (F = 1e-3: a
time no device can reach, which must FAIL).

Exit status 0 when every verdict is as expected.

Examples:
  goldset gen stage2-paged --split public --out /tmp/b
  python3 baselines/triton/run.py /tmp/b/stage2-paged --goldset ./goldset --bench
  python3 baselines/triton/run.py /tmp/b/stage2-paged --wrong --ops paged_attention
"""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))  # the repository's package when not installed
sys.path.insert(0, HERE)

import torch  # noqa: E402

import goldset  # noqa: E402
import kernels  # noqa: E402

_flush = None


def flush_l2():
    global _flush
    if _flush is None:
        _flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    _flush.zero_()


def bench(launch, reps, warmup):
    """Median kernel time in seconds and the mode used (graph or eager)."""
    for _ in range(3):
        launch()
    torch.cuda.synchronize()
    mode, run = "eager", launch
    try:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            launch()
        torch.cuda.synchronize()
        mode, run = "graph", g.replay
    except Exception:  # capture is best effort: eager launches include launch gaps
        torch.cuda.synchronize()
    for _ in range(warmup):
        run()
    times = []
    for _ in range(reps):
        flush_l2()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        run()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1e-3)
    return times, mode


def make_kernel(args, timings):
    wrong = args.wrong

    def kernel(case, inputs):
        launch, outputs, nbytes = kernels.PREPARE[case.op](case, inputs, wrong=wrong)
        launch()
        torch.cuda.synchronize()
        if args.bench:
            # outputs are final: a replay writes the same values again
            snap = {k: v.clone() for k, v in outputs.items()}
            times, mode = bench(launch, args.reps, args.warmup)
            t = statistics.median(times)
            timings[case.id] = {"time_s": t, "bytes": nbytes, "gbps": nbytes / t / 1e9, "mode": mode,
                                "times_ms": [x * 1e3 for x in times]}
            outputs = snap
        return outputs

    return kernel


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bundles", nargs="+")
    ap.add_argument("--goldset", help="the goldset binary (default $GOLDSET_BIN or goldset on PATH)")
    ap.add_argument("--ops", help="comma-separated ops")
    ap.add_argument("--cases", help="comma-separated case ids or globs")
    ap.add_argument("--split", default="public", help="split to judge ('' for every case with goldens)")
    ap.add_argument("--bench", action="store_true", help="time each case's kernels (CUDA events)")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--wrong", action="store_true", help="judge the deliberately wrong kernels (must all FAIL)")
    ap.add_argument("--dsa-dot", choices=["fp8", "fp16"], default="fp8",
                    help="the DSA indexer's tensor-core operands: native e4m3 (DeepGEMM's) or upcast to fp16")
    ap.add_argument("--moe-act", choices=["bf16", "fp32"],
                    help="force the MXFP4 MoE's activations between its GEMMs to bf16 or fp32 "
                         "(default: as the case's act_round says)")
    ap.add_argument("--timing", help="with --bench: write the per-iteration times (goldset-timing/1) here "
                                     "and judge them with goldset compare --timing (peak_fraction, the floor)")
    ap.add_argument("--profile", default="h200", help="the device profile whose time floor is enforced")
    ap.add_argument("--fake-time", type=float,
                    help="also judge a copy of the timing file with every time scaled by this factor "
                         "(e.g. 1e-3: a time below the floor, which goldset must reject)")
    ap.add_argument("--json", help="write every result here")
    ap.add_argument("--markdown", help="write the results table (markdown) here")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("run.py: no CUDA device (the Triton baselines need a GPU)")
    import triton

    torch.backends.cuda.matmul.allow_tf32 = False
    kernels.dsa_kernels.DOT = args.dsa_dot
    kernels.mx_kernels.MOE_ACT = args.moe_act
    rows, docs, unexpected = [], [], 0
    for path in args.bundles:
        timings = {}
        res = goldset.judge(path, make_kernel(args, timings), ops=args.ops.split(",") if args.ops else None,
                            cases=args.cases.split(",") if args.cases else None,
                            splits=[args.split] if args.split else None, backend="torch", device="cuda",
                            goldset_bin=args.goldset)
        for r in res.results:
            row = r.row()
            row.update(suite=res.bundle.suite, **timings.get(r.id, {}))
            rows.append(row)
            # a wrong kernel must FAIL where its bug changes the result, and PASS where it does not
            want = ("FAIL" if kernels.wrong_applies(r.case) else "PASS") if args.wrong else "PASS"
            row["expected"] = want
            if r.status != want:
                unexpected += 1
                print(f"UNEXPECTED {r.id}: {r.status} ({r.binding()})", flush=True)
        docs.append(res.to_json())
        if args.bench and args.timing:
            judge_timing(args, path, res.bundle.digest, timings)
    if args.bench:
        print("\nbench (median of %d, L2 flushed):" % args.reps)
        for r in rows:
            if "time_s" in r:
                print(f"  {r['case']:<36} {r['time_s'] * 1e6:10.1f} us  {r['gbps']:8.1f} GB/s  ({r['mode']})")
    summary = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
               "wrong": args.wrong, "cases": len(rows), "unexpected": unexpected,
               "pass": sum(r["status"] == "PASS" for r in rows), "fail": sum(r["status"] == "FAIL" for r in rows)}
    print(json.dumps(summary))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": summary, "rows": rows, "judge": docs}, f, indent=1, default=str)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(rows, args))
    sys.exit(1 if unexpected or not rows else 0)


def judge_timing(args, bundle, digest, timings):
    """Writes the timing file for one bundle and judges it (and a faked copy)."""
    import subprocess
    doc = {"schema": "goldset-timing/1", "bundle_digest": digest, "profile": args.profile,
           "device": torch.cuda.get_device_name(), "kernel": "goldset triton baseline",
           "cases": [{"case": cid, "times_ms": t["times_ms"], "warmup": args.warmup, "l2_flushed": True}
                     for cid, t in timings.items()]}
    gs = args.goldset or os.environ.get("GOLDSET_BIN") or "goldset"
    runs = [(args.timing, doc)]
    if args.fake_time:
        fake = json.loads(json.dumps(doc))
        for c in fake["cases"]:
            c["times_ms"] = [x * args.fake_time for x in c["times_ms"]]
        runs.append((args.timing + ".fake.json", fake))
    for path, d in runs:
        with open(path, "w") as f:
            json.dump(d, f)
        p = subprocess.run([gs, "compare", bundle, "--timing", path], capture_output=True, text=True)
        print(f"\n$ goldset compare {bundle} --timing {path}  (exit {p.returncode})")
        print(p.stdout + p.stderr, flush=True)


def markdown(rows, args):
    """The results table; time and GB/s are the --bench medians ('-' without --bench)."""
    out = ["| suite | case | op | verdict | binding rule (closest to its bound) | max err / bound | time | GB/s |",
           "|---|---|---|---|---|---:|---:|---:|"]
    for r in rows:
        q = r["err_over_bound"]
        bench = "gbps" in r
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["suite"], r["case"], r["op"], r["status"], r["binding"].replace("|", "\\|"),
            "-" if q is None else f"{q:.3g}", f"{r['time_s'] * 1e6:.1f} us" if bench else "-",
            f"{r['gbps']:.0f}" if bench else "-"))
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
