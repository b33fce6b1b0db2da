"""Load every file `goldset export` wrote with its consumer's own loader and compare each
tensor, byte for byte, with the bundle's .npy (numpy.load).

Layout (beside this script): bundle/ (a goldset bundle) and exports/safetensors,
exports/flashinfer-trace, exports/msopst written from it by
`goldset export bundle --format F --out exports/F`. Needs torch, safetensors, numpy;
flashinfer_bench when installed (else the FlashInfer Trace schema is checked as transcribed
below). Exit 0 when every check passes. docs/export-h200.log is its output on the H200."""
import ast, glob, json, os, sys
import numpy as np, torch, safetensors, safetensors.torch, safetensors.numpy
from safetensors import safe_open

root = os.path.dirname(os.path.abspath(__file__))
B = os.path.join(root, "bundle")
M = json.load(open(os.path.join(B, "manifest.json")))
cases = {c["id"]: c for c in M["cases"]}
print("python", sys.version.split()[0], "torch", torch.__version__, "safetensors", safetensors.__version__, "numpy", np.__version__)
print("cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")
try:
    import flashinfer_bench  # noqa
    print("flashinfer_bench installed:", flashinfer_bench.__file__)
    HAVE_FIB = True
except ImportError:
    print("flashinfer_bench: not installed; FlashInfer Trace checked against the schema transcribed below")
    HAVE_FIB = False

TORCH = {"F16": torch.float16, "BF16": torch.bfloat16, "F32": torch.float32, "F64": torch.float64,
         "I32": torch.int32, "I64": torch.int64, "U8": torch.uint8, "F8_E4M3": torch.float8_e4m3fn}
ST = {"float16": "F16", "bfloat16": "BF16", "float32": "F32", "float64": "F64", "int32": "I32", "int64": "I64",
      "uint8": "U8", "float8_e8m0fnu": "U8", "float4_e2m1fn_x2": "U8", "float8_e4m3fn": "F8_E4M3"}
fails = []
def fail(msg):
    fails.append(msg); print("FAIL", msg)

def npy_bytes(case, name):
    t = next(t for t in cases[case]["tensors"] if t["name"] == name)
    a = np.load(os.path.join(B, t["path"]))
    assert list(a.shape) == t["shape"], (a.shape, t["shape"])
    return t, np.ascontiguousarray(a).tobytes()

def check_st_file(path, case):
    loaded = safetensors.torch.load_file(path)
    with safe_open(path, framework="pt") as f:
        meta = f.metadata()
    rec = json.loads(meta["goldset.case"])
    if rec["id"] != case or meta["goldset.manifest_digest"] != M["digest"]:
        fail(f"{path}: metadata names case {rec['id']} digest {meta['goldset.manifest_digest']}")
    n = 0
    for name, x in loaded.items():
        t, want = npy_bytes(case, name)
        if x.dtype != TORCH[ST[t["dtype"]]] or list(x.shape) != t["shape"]:
            fail(f"{path}:{name}: torch {x.dtype} {list(x.shape)} for {t['dtype']} {t['shape']}")
        got = x.contiguous().view(torch.uint8).numpy().tobytes() if x.numel() else b""
        if got != want:
            fail(f"{path}:{name}: bytes differ from the bundle's .npy")
        if torch.cuda.is_available():
            y = x.to("cuda")
            if not torch.equal(y.view(torch.uint8).cpu(), x.view(torch.uint8)):
                fail(f"{path}:{name}: changed on the GPU round trip")
        n += 1
    try:
        safetensors.numpy.load_file(path)
        np_ok = True
    except Exception as e:
        np_ok = type(e).__name__ + ": " + str(e)[:80]
    return n, np_ok

# 1. safetensors export
tot = 0; np_res = {}
for p in sorted(glob.glob(os.path.join(root, "exports/safetensors/*.safetensors"))):
    case = os.path.basename(p)[:-len(".safetensors")]
    n, np_ok = check_st_file(p, case); tot += n
    np_res.setdefault(str(np_ok) if np_ok is not True else "ok", []).append(case)
print(f"safetensors export: {len(glob.glob(os.path.join(root, 'exports/safetensors/*.safetensors')))} files, {tot} tensors loaded by safetensors.torch.load_file, byte-equal to numpy.load of the bundle")
for k, v in np_res.items():
    print(f"  safetensors.numpy.load_file: {k}: {v}")

# 2. FlashInfer Trace: the schema of flashinfer_bench/data/definition.py (30545a8d9a67),
# trace.py (06323a42cf94), workload.py (488b310c2b2e), docs/flashinfer_trace/*.md.
FI = os.path.join(root, "exports/flashinfer-trace")
DT = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float8_e4m3fn": torch.float8_e4m3fn,
      "float8_e5m2": torch.float8_e5m2, "int64": torch.int64, "int32": torch.int32, "int16": torch.int16, "int8": torch.int8, "bool": torch.bool}
defs = {}
for p in sorted(glob.glob(os.path.join(FI, "definitions/*.json"))):
    d = json.load(open(p))
    for k in ("name", "op_type", "axes", "inputs", "outputs", "reference"):
        if not d.get(k):
            fail(f"{p}: {k} missing or empty")
    for a, ax in d["axes"].items():
        if ax.get("type") not in ("const", "var") or (ax["type"] == "const" and not (isinstance(ax.get("value"), int) and ax["value"] >= 0)):
            fail(f"{p}: axis {a} {ax}")
    for role in ("inputs", "outputs"):
        for n, ts in d[role].items():
            if ts["dtype"] not in DT:
                fail(f"{p}: {role}.{n} dtype {ts['dtype']}")
            for a in ts["shape"] or []:
                if a not in d["axes"]:
                    fail(f"{p}: {role}.{n} references undefined axis {a}")
    if set(d["inputs"]) & set(d["outputs"]):
        fail(f"{p}: input and output names overlap")
    mod = ast.parse(d["reference"], mode="exec")
    run = [x for x in mod.body if isinstance(x, ast.FunctionDef) and x.name == "run"]
    if not run or [a.arg for a in run[0].args.args] != list(d["inputs"]):
        fail(f"{p}: reference run() parameters do not match inputs in order")
    for t in d.get("tags") or []:
        if not isinstance(t, str) or not t.strip():
            fail(f"{p}: tag {t!r}")
    defs[d["name"]] = d
nw = 0
for p in sorted(glob.glob(os.path.join(FI, "workloads/*.jsonl"))):
    for line in open(p):
        tr = json.loads(line); nw += 1
        if tr["solution"] is not None or tr["evaluation"] is not None:
            fail(f"{p}: not a workload trace")
        d = defs.get(tr["definition"])
        if d is None:
            fail(f"{p}: definition {tr['definition']} missing"); continue
        w = tr["workload"]
        if not w.get("uuid") or any(not isinstance(v, int) or v < 0 for v in w["axes"].values()):
            fail(f"{p}: uuid/axes {w.get('uuid')} {w['axes']}")
        var = {a for a, ax in d["axes"].items() if ax["type"] == "var"}
        if set(w["axes"]) != var:
            fail(f"{p}: workload axes {sorted(w['axes'])} != var axes {sorted(var)}")
        if list(w["inputs"]) != list(d["inputs"]):
            fail(f"{p}: workload inputs {list(w['inputs'])}")
        case = w["uuid"].rsplit("-" + M["suite_version"] + "-", 1)[1]
        for n, spec in w["inputs"].items():
            if spec["type"] != "safetensors":
                fail(f"{p}: input {n} type {spec['type']}"); continue
            x = safetensors.torch.load_file(os.path.join(FI, spec["path"]))[spec["tensor_key"]]
            shape = [w["axes"][a] for a in d["inputs"][n]["shape"]]
            if list(x.shape) != shape or x.dtype != DT[d["inputs"][n]["dtype"]]:
                fail(f"{p}: {case}.{n}: {x.dtype} {list(x.shape)} vs definition {d['inputs'][n]['dtype']} {shape}")
            _, want = npy_bytes(case, n)
            if x.contiguous().view(torch.uint8).numpy().tobytes() != want:
                fail(f"{p}: {case}.{n}: bytes differ from the bundle")
        gold = safetensors.torch.load_file(os.path.join(FI, "blob/goldens", d["name"], case + ".safetensors"))
        for n, o in d["outputs"].items():
            shape = [w["axes"][a] for a in o["shape"]]
            x = gold[n]
            if list(x.shape) != shape or x.dtype != DT[o["dtype"]]:
                fail(f"{p}: golden {case}.{n}: {x.dtype} {list(x.shape)} vs {o['dtype']} {shape}")
            _, want = npy_bytes(case, n)
            if x.contiguous().view(torch.uint8).numpy().tobytes() != want:
                fail(f"{p}: golden {case}.{n}: bytes differ from the bundle")
print(f"flashinfer-trace export: {len(defs)} definitions, {nw} workloads checked (schema transcribed from flashinfer-bench; its loader is not installed here)")
idx = json.load(open(os.path.join(FI, "goldset-export.json")))
print(f"  skipped by the exporter: {[(s['case'], s['op']) for s in idx['skipped']]}")

# 3. msOpST: every .bin equals the bundle's .npy data; case files have the documented fields.
MS = os.path.join(root, "exports/msopst"); nb = 0
for p in sorted(glob.glob(os.path.join(MS, "*/*_goldset_check.json"))):
    for ck in json.load(open(p)):
        for e in ck["inputs"] + ck["outputs"]:
            got = open(os.path.join(os.path.dirname(p), e["bin"]), "rb").read()
            _, want = npy_bytes(ck["goldset_case"], e["name"]); nb += 1
            if got != want:
                fail(f"{p}: {e['bin']} differs from the bundle")
ncase = 0
for p in sorted(glob.glob(os.path.join(MS, "*/*_case.json"))):
    for c in json.load(open(p)):
        ncase += 1
        for k in ("case_name", "op", "input_desc", "output_desc"):
            if k not in c: fail(f"{p}: {k}")
        for dsc in c["input_desc"]:
            for k in ("format", "type", "shape", "data_distribute", "value_range"):
                if k not in dsc: fail(f"{p}: input {k}")
print(f"msopst export: {ncase} cases, {nb} input/golden .bin files byte-equal to numpy.load of the bundle")
print("RESULT", "FAIL" if fails else "PASS", len(fails), "failures")
sys.exit(1 if fails else 0)
