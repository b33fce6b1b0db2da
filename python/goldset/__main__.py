"""python3 -m goldset: judge a Python kernel on a bundle, list or verify a bundle.

Exit status: 0 every case passed (or the bundle verified), 3 a case failed
(or a file differs from the manifest), 1 an error (unreadable bundle, no
goldset binary, a kernel that raised), 2 bad usage.
"""
import argparse
import importlib
import importlib.util
import json
import os
import sys

from . import BundleError, GoldsetBinaryError, VerifyError, judge, open_bundle

EXAMPLES = """examples:
  python3 -m goldset judge out/stage1-basic --kernel goldset.reference:kernel
  python3 -m goldset judge out/stage2-paged --kernel my_kernels.py:paged --ops paged_attention \\
      --backend torch --device cuda --json > report.json
  python3 -m goldset cases out/stage2-paged --op quest
  python3 -m goldset verify out/stage2-paged
"""


def load_kernel(spec):
    """MODULE:FUNC (an importable module) or FILE.py:FUNC."""
    mod_name, sep, func = spec.rpartition(":")
    if not sep or not mod_name or not func:
        raise ValueError(f"--kernel {spec!r}: want MODULE:FUNCTION or FILE.py:FUNCTION")
    if mod_name.endswith(".py"):
        if not os.path.isfile(mod_name):
            raise ValueError(f"--kernel {spec!r}: no file {mod_name}")
        s = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(mod_name))[0], mod_name)
        mod = importlib.util.module_from_spec(s)
        sys.path.insert(0, os.path.dirname(os.path.abspath(mod_name)))
        s.loader.exec_module(mod)
    else:
        mod = importlib.import_module(mod_name)
    try:
        fn = getattr(mod, func)
    except AttributeError:
        raise ValueError(f"--kernel {spec!r}: {mod_name} has no {func!r}") from None
    if not callable(fn):
        raise ValueError(f"--kernel {spec!r}: {func!r} is not callable")
    return fn


def _list(v):
    return [x for x in v.split(",") if x] if v else None


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m goldset", description=__doc__.split("\n\n")[0],
                                 epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    j = sub.add_parser("judge", help="run kernel(case, inputs) on every case and judge it with goldset compare",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    j.add_argument("bundle")
    j.add_argument("--kernel", required=True, help="MODULE:FUNCTION or FILE.py:FUNCTION, called as f(case, inputs)")
    j.add_argument("--ops", help="comma-separated op names")
    j.add_argument("--cases", help="comma-separated case ids or glob patterns")
    j.add_argument("--split", help="only cases of this split (public, benchmark, hidden)")
    j.add_argument("--backend", choices=("numpy", "torch"), default="numpy")
    j.add_argument("--device", help="torch device for the inputs, e.g. cuda")
    j.add_argument("--goldset", help="the goldset binary (default $GOLDSET_BIN, then goldset on PATH)")
    j.add_argument("--out-dir", help="keep the candidate .npy files here (default: a temporary directory)")
    j.add_argument("--partial", action="store_true", help="judge only the outputs the kernel returns")
    j.add_argument("--verify", action="store_true", help="check the sha256 of every input before use")
    j.add_argument("--json", action="store_true", help="print the results as JSON (the table goes to stderr)")
    c = sub.add_parser("cases", help="list a bundle's cases (JSON with --json)")
    c.add_argument("bundle")
    c.add_argument("--op")
    c.add_argument("--json", action="store_true")
    v = sub.add_parser("verify", help="check size and sha256 of every tensor file")
    v.add_argument("bundle")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "judge":
            return _judge(a)
        b = open_bundle(a.bundle)
        if a.cmd == "verify":
            n = b.verify()
            print(f"{b.dir}: {n} tensor files match the manifest")
            return 0
        rows = [{"id": x.id, "op": x.op, "split": x.split, "outputs": x.outputs,
                 "tensors": {t.name: {"role": t.role, "dtype": t.dtype, "shape": list(t.shape)} for t in x.tensors.values()}}
                for x in b if not a.op or x.op == a.op]
        if a.json:
            json.dump({"bundle": b.dir, "suite": b.suite, "suite_version": b.suite_version,
                       "spec_version": b.spec_version, "cases": rows}, sys.stdout, indent=1)
            print()
        else:
            for r in rows:
                print(f"{r['id']:<40} {r['op']:<18} {r['split']:<10} outputs: {', '.join(r['outputs'])}")
        return 0
    except VerifyError as e:
        print(f"goldset: {e}", file=sys.stderr)
        return 3
    except (BundleError, GoldsetBinaryError, ValueError, KeyError, OSError) as e:
        print(f"goldset: {e}", file=sys.stderr)
        return 1


def _judge(a):
    kernel = load_kernel(a.kernel)
    res = judge(a.bundle, kernel, ops=_list(a.ops), cases=_list(a.cases), splits=[a.split] if a.split else None,
                backend=a.backend, device=a.device, goldset_bin=a.goldset, out_dir=a.out_dir, partial=a.partial,
                verify=a.verify, stream=sys.stderr if a.json else sys.stdout)
    if a.json:
        json.dump(res.to_json(), sys.stdout, indent=1, default=str)
        print()
    n = res.counts()
    if n["ERROR"] or not res.results:
        return 1
    return 3 if n["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
