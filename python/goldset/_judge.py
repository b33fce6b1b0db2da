"""judge: run a kernel on a bundle's cases and grade it with `goldset compare --json`."""
import fnmatch
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from ._bundle import Bundle, open_bundle, save_output

# What a goldset binary without any spec announcement implements: every
# release before `goldset version` printed spec versions was spec 1.
_UNANNOUNCED_SPEC = 1

# The checks whose `observed` is an error over its bound (compare/report.go
# Check; the DSA families in compare/family_dsa.go): the others count
# violations or hold a raw value.
_RATIO_RULES = ("elementwise", "row_rel_l2", "dsa_scaled", "dsa_lse")


class GoldsetBinaryError(RuntimeError):
    """The goldset binary is missing, does not run, or is too old for the bundle."""


def find_goldset(goldset_bin=None):
    """The goldset binary: the argument, else $GOLDSET_BIN, else `goldset` on PATH."""
    cand = goldset_bin or os.environ.get("GOLDSET_BIN") or shutil.which("goldset")
    if not cand:
        raise GoldsetBinaryError(
            "no goldset binary: pass goldset_bin=..., set $GOLDSET_BIN, or put `goldset` on PATH "
            "(go install github.com/goldset/goldset/cmd/goldset, or go build -o goldset ./cmd/goldset in a checkout)")
    path = shutil.which(cand) if os.sep not in cand else cand
    if not path or not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise GoldsetBinaryError(f"goldset binary {cand!r} does not exist or is not executable")
    return path


def goldset_version(goldset_bin):
    """(version text, highest spec version it implements or None when it does not say)."""
    texts = []
    for args in (["--version"], ["version", "--json"], ["version"]):
        try:
            r = subprocess.run([goldset_bin] + args, capture_output=True, text=True, timeout=60)
        except OSError as e:
            raise GoldsetBinaryError(f"{goldset_bin}: cannot run: {e}") from None
        except subprocess.TimeoutExpired:
            raise GoldsetBinaryError(f"{goldset_bin} {' '.join(args)}: no answer in 60 s") from None
        if r.returncode != 0:
            continue
        out = r.stdout.strip()
        texts.append(out)
        spec = _spec_from_version(out)
        if spec is not None:
            return out, spec
    if not texts:
        raise GoldsetBinaryError(f"{goldset_bin}: neither `--version` nor `version` works: is it goldset?")
    return texts[0], None


def _spec_from_version(out):
    try:
        j = json.loads(out)
    except ValueError:
        j = None
    if isinstance(j, dict):
        for key in ("spec_versions", "spec_version", "spec"):
            v = j.get(key)
            if isinstance(v, list) and v and all(isinstance(x, int) for x in v):
                return max(v)
            if isinstance(v, int):
                return v
    # "spec 2", "spec version 2", "spec versions 1-2", "spec_version: 1..2"
    m = re.search(r"spec[ _-]?(?:versions?)?[ :=]*(\d+)(?:\s*(?:-|\.\.|,|to)\s*(\d+))?", out, re.I)
    if m:
        return int(m.group(2) or m.group(1))
    return None


def check_goldset(bundle, goldset_bin=None):
    """Resolve the binary and make sure it implements the bundle's spec version."""
    path = find_goldset(goldset_bin)
    text, spec = goldset_version(path)
    have = spec if spec is not None else _UNANNOUNCED_SPEC
    if bundle.spec_version > have:
        said = f"implements spec version {spec}" if spec is not None else \
            f"does not state its spec version (so spec {_UNANNOUNCED_SPEC})"
        raise GoldsetBinaryError(
            f"{path} ({text.splitlines()[0] if text else 'unknown version'}) {said}, but bundle "
            f"{bundle.dir} is spec version {bundle.spec_version}: install a newer goldset")
    return path, text


class CaseResult:
    """The judgement of one case."""

    def __init__(self, case, status, time_s=None, reports=(), exit_code=None, error=None, files=None):
        self.case = case
        self.id = case.id
        self.op = case.op
        self.status = status  # PASS, FAIL or ERROR
        self.time_s = time_s
        self.reports = list(reports)
        self.exit_code = exit_code
        self.error = error
        self.files = files or {}

    @property
    def ok(self):
        return self.status == "PASS"

    def ratio(self):
        """Largest err/bound over the graded allclose rules of every output
        (elementwise: |c-g|/allowed at the worst element; row_rel_l2: the
        worst row's ||c-g||/allowed); None when no output has one."""
        best = None
        for r in self.reports:
            q = _report_ratio(r)
            if q is not None and (best is None or q > best):
                best = q
        return best

    def binding(self):
        """The failing rule (first failed of the first failing output), or on
        a pass the rule closest to its bound (output: rule err/bound)."""
        if self.status == "ERROR":
            return self.error or "error"
        if self.status == "FAIL":
            for r in self.reports:
                if r.get("status") != "PASS":
                    failed = r.get("failed") or ["(no rule named)"]
                    return f"{r.get('name', '?')}: {failed[0]}"
            return "FAIL"
        best, what = None, ""
        for r in self.reports:
            for c in r.get("checks") or []:
                if c.get("rule") in _RATIO_RULES:
                    q = _num(c.get("observed"))
                    if q is not None and (best is None or q > best):
                        best, what = q, f"{r.get('name', '?')} {c['rule']}"
        if best is None:
            modes = sorted({r.get("mode", "?") for r in self.reports})
            return "all " + "/".join(modes)
        return what

    def row(self):
        q = self.ratio()
        return {
            "case": self.id, "op": self.op, "status": self.status, "binding": self.binding(),
            "err_over_bound": q, "time_s": self.time_s,
        }


def _num(v):
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v.replace("+Inf", "inf").replace("-Inf", "-inf"))
        except ValueError:
            return None
    return None


def _report_ratio(r):
    qs = [_num(c.get("observed")) for c in r.get("checks") or [] if c.get("rule") in _RATIO_RULES]
    qs = [q for q in qs if q is not None]
    return max(qs) if qs else None


class JudgeResult:
    """Every case's CaseResult, in run order."""

    def __init__(self, bundle, results, goldset_bin, goldset_version):
        self.bundle = bundle
        self.results = results
        self.goldset_bin = goldset_bin
        self.goldset_version = goldset_version

    @property
    def ok(self):
        return bool(self.results) and all(r.ok for r in self.results)

    def counts(self):
        n = {"PASS": 0, "FAIL": 0, "ERROR": 0}
        for r in self.results:
            n[r.status] = n.get(r.status, 0) + 1
        return n

    def table(self):
        return format_table([r.row() for r in self.results])

    def to_json(self):
        return {
            "bundle": self.bundle.dir, "suite": self.bundle.suite, "suite_version": self.bundle.suite_version,
            "goldset": self.goldset_version, "ok": self.ok, "counts": self.counts(),
            "cases": [dict(r.row(), reports=r.reports, exit_code=r.exit_code) for r in self.results],
        }

    def __repr__(self):
        return f"JudgeResult({self.bundle.suite}: {self.counts()})"


def _fmt_ratio(q):
    if q is None:
        return "-"
    if math.isinf(q) or math.isnan(q):
        return str(q)
    return f"{q:.3g}"


def _fmt_time(t):
    if t is None:
        return "-"
    if t < 1e-3:
        return f"{t * 1e6:.1f} us"
    if t < 1:
        return f"{t * 1e3:.2f} ms"
    return f"{t:.2f} s"


HEADER = ("case", "status", "binding rule", "err/bound", "time")


def _cells(row):
    return (row["case"], row["status"], row["binding"], _fmt_ratio(row["err_over_bound"]), _fmt_time(row["time_s"]))


def format_table(rows, case_width=None, binding_width=None):
    """The per-case table as text: a header line, then one line per row.
    Fixed widths (for rows printed as they come) when given."""
    cells = [_cells(r) for r in rows]
    wc = case_width or max([len(HEADER[0])] + [len(c[0]) for c in cells])
    wb = binding_width or min(90, max([len(HEADER[2])] + [len(c[2]) for c in cells]))
    lines = []
    for c in [HEADER] + cells:
        b = c[2] if len(c[2]) <= wb else c[2][:wb - 3] + "..."
        lines.append(f"{c[0]:<{wc}}  {c[1]:<6}  {b:<{wb}}  {c[3]:>9}  {c[4]:>10}")
    return "\n".join(lines)


def select_cases(bundle, ops=None, cases=None, splits=None):
    """Cases with graded outputs, filtered by op names, case ids or glob
    patterns, and splits. A pattern that matches nothing is an error."""
    if isinstance(ops, str):
        ops = [ops]
    if isinstance(cases, str):
        cases = [cases]
    if isinstance(splits, str):
        splits = [splits]
    chosen = []
    for c in bundle.cases:
        if not c.outputs:
            continue
        if ops and c.op not in ops:
            continue
        if splits and c.split not in splits:
            continue
        if cases and not any(fnmatch.fnmatchcase(c.id, p) for p in cases):
            continue
        chosen.append(c)
    for p in cases or ():
        if not any(fnmatch.fnmatchcase(c.id, p) for c in bundle.cases):
            raise KeyError(f"bundle {bundle.dir} has no case matching {p!r}")
    known = {c.op for c in bundle.cases}
    for o in ops or ():
        if o not in known:
            raise KeyError(f"bundle {bundle.dir} has no {o!r} case (ops: {', '.join(sorted(known))})")
    return chosen


def _sync(outputs):
    """Wait for a CUDA kernel to finish before the clock stops."""
    if "torch" not in sys.modules:
        return
    import torch

    for v in outputs.values():
        if isinstance(v, torch.Tensor) and v.is_cuda:
            torch.cuda.synchronize(v.device)
            return


def compare_case(goldset_bin, bundle, case, files, partial=False, timeout=None):
    """Run `goldset compare --json` on written candidates; (status, reports, exit code, error)."""
    cmd = [goldset_bin, "compare", bundle.dir, "--case", case.id, "--json"]
    for name, path in files.items():
        cmd += ["--output", f"{name}={path}"]
    if partial:
        cmd.append("--partial")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    doc = None
    out = r.stdout.strip()
    if out.startswith("{"):
        try:
            doc = json.loads(out)
        except ValueError:
            doc = None
    if r.returncode in (0, 3) and isinstance(doc, dict):
        reports = doc.get("reports") or []
        status = "PASS" if r.returncode == 0 else "FAIL"
        if doc.get("status") not in (None, status):
            return "ERROR", reports, r.returncode, f"compare exit {r.returncode} but status {doc.get('status')!r}"
        return status, reports, r.returncode, None
    msg = (r.stderr.strip() or out or f"exit {r.returncode}").splitlines()
    err = msg[-1] if msg else f"exit {r.returncode}"
    if r.returncode == 3:
        return "FAIL", [], 3, err  # a failed verification with no report (e.g. a golden's sha256)
    return "ERROR", [], r.returncode, f"goldset compare exit {r.returncode}: {err}"


def judge(bundle, kernel, ops=None, cases=None, splits=None, backend="numpy", device=None,
          goldset_bin=None, out_dir=None, partial=False, verify=False, print_table=True,
          stream=None, raise_errors=False):
    """Run kernel(case, inputs) -> {output name: array} on every selected case,
    write its outputs, judge them with `goldset compare --json` and return a
    JudgeResult (printing a per-case table as it goes unless print_table=False).

    bundle: a path or an open Bundle. ops / cases: op names / case ids or
    glob patterns. backend 'numpy' or 'torch' (device: e.g. 'cuda') decides
    what inputs the kernel gets. Outputs go to out_dir/<case>/<name>.npy (a
    temporary directory, removed afterwards, when out_dir is None). The time
    is the kernel call's wall time (CUDA synchronised), inputs excluded.
    Every graded output must be returned unless partial=True (passes
    --partial to compare). An exception in the kernel makes the case ERROR
    (raise_errors=True re-raises it)."""
    if not isinstance(bundle, Bundle):
        bundle = open_bundle(bundle)
    stream = stream or sys.stdout
    gs, version = check_goldset(bundle, goldset_bin)
    chosen = select_cases(bundle, ops, cases, splits)
    tmp = None
    if out_dir is None:
        tmp = tempfile.mkdtemp(prefix="goldset-judge-")
        out_dir = tmp
    results = []
    wc = max([len(HEADER[0])] + [len(c.id) for c in chosen])
    try:
        if print_table:
            print(f"judging {len(chosen)} case(s) of {bundle.suite} {bundle.suite_version} ({bundle.dir}) "
                  f"with {gs}", file=stream, flush=True)
        for case in chosen:
            res = _judge_one(gs, bundle, case, kernel, backend, device, out_dir, partial, verify, raise_errors)
            results.append(res)
            if print_table:
                lines = format_table([res.row()], wc, 72).splitlines()
                if len(results) == 1:
                    print(lines[0], file=stream)
                print(lines[1], file=stream, flush=True)
        jr = JudgeResult(bundle, results, gs, version)
        if print_table:
            n = jr.counts()
            print(f"{n['PASS']} passed, {n['FAIL']} failed, {n['ERROR']} errors", file=stream, flush=True)
        return jr
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _judge_one(gs, bundle, case, kernel, backend, device, out_dir, partial, verify, raise_errors):
    try:
        inputs = case.inputs(backend=backend, device=device, verify=verify)
        t0 = time.perf_counter()
        outputs = kernel(case, inputs)
        if not isinstance(outputs, dict):
            raise TypeError(f"the kernel returned {type(outputs).__name__}, want a dict of output name -> array")
        _sync(outputs)
        elapsed = time.perf_counter() - t0
        unknown = [n for n in outputs if n not in case.outputs]
        if unknown:
            raise KeyError(f"the kernel returned {unknown}, not outputs of case {case.id} ({', '.join(case.outputs)})")
        missing = [n for n in case.outputs if n not in outputs]
        if missing and outputs and not partial:
            # every graded output is judged (older goldset binaries would silently judge fewer)
            raise KeyError(f"the kernel did not return {missing} (case {case.id} grades {', '.join(case.outputs)}; "
                           "judge(..., partial=True) judges only the returned ones)")
        files = {n: save_output(case, n, outputs[n], out_dir) for n in case.outputs if n in outputs}
    except Exception as e:
        if raise_errors:
            raise
        return CaseResult(case, "ERROR", error=f"{type(e).__name__}: {e}")
    if not files:
        return CaseResult(case, "ERROR", time_s=elapsed, error="the kernel returned no output")
    status, reports, code, err = compare_case(gs, bundle, case, files, partial=partial)
    r = CaseResult(case, status, elapsed, reports, code, err, files)
    return r
