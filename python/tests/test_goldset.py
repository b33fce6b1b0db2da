"""Tests of the goldset Python package against bundles built by the goldset
binary in the test (python3 -m pytest python/tests, or python3 -m unittest).

The binary: $GOLDSET_BIN, else built with `go build` from this checkout into
a temporary directory. Without Go, numpy or torch the tests that need them
skip with the reason; GOLDSET_REQUIRE_TOOLS=1 (CI) turns those skips into
failures.
"""
import hashlib
import io
import json
import math
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import goldset
from goldset import reference

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
RECIPE = os.path.join(HERE, "testdata", "small.json")
REQUIRE = os.environ.get("GOLDSET_REQUIRE_TOOLS") == "1"

try:
    import torch
except ImportError:  # Debian without python3-torch
    torch = None

_state = {}


def _missing(why):
    if REQUIRE:
        raise RuntimeError(f"GOLDSET_REQUIRE_TOOLS=1 but {why}")
    raise unittest.SkipTest(why)


def setUpModule():
    tmp = tempfile.mkdtemp(prefix="goldset-pytest-")
    _state["tmp"] = tmp
    gs = os.environ.get("GOLDSET_BIN")
    if not gs:
        go = shutil.which("go")
        if not go:
            _missing("no Go toolchain to build the goldset binary (or set $GOLDSET_BIN)")
        gs = os.path.join(tmp, "goldset")
        env = dict(os.environ, CGO_ENABLED="0")
        r = subprocess.run([go, "build", "-o", gs, "./cmd/goldset"], cwd=REPO, env=env, capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(f"go build ./cmd/goldset failed:\n{r.stderr}")
    _state["gs"] = gs
    out = os.path.join(tmp, "bundles")
    r = subprocess.run([gs, "gen", "--recipe", RECIPE, "--out", out, "-q"], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"goldset gen --recipe {RECIPE} failed:\n{r.stderr}")
    _state["bundle"] = os.path.join(out, "pysmall")


def tearDownModule():
    if "tmp" in _state:
        shutil.rmtree(_state["tmp"], ignore_errors=True)


def judge(kernel, **kw):
    kw.setdefault("print_table", False)
    kw.setdefault("goldset_bin", _state["gs"])
    return goldset.judge(_state["bundle"], kernel, **kw)


def copy_bundle():
    d = tempfile.mkdtemp(prefix="bundle-", dir=_state["tmp"])
    dst = os.path.join(d, "pysmall")
    shutil.copytree(_state["bundle"], dst)
    return dst


class BundleTest(unittest.TestCase):
    def test_manifest_and_tensors(self):
        b = goldset.open_bundle(_state["bundle"])
        self.assertEqual((b.suite, b.suite_version, b.spec_version), ("pysmall", "1.0.0", 1))
        self.assertEqual(len(b), 12)
        with open(RECIPE) as f:
            self.assertEqual([c.id for c in b], [c["id"] for c in json.load(f)["cases"]])
        c = b.case("quest-bf16")
        self.assertEqual(c.op, "quest")
        self.assertEqual(c.outputs, ["kmax", "kmin", "scores", "selected", "out", "lse"])
        x = c.inputs()
        self.assertEqual(sorted(x), ["block_tables", "context_lens", "key_cache", "query", "value_cache"])
        self.assertEqual(x["query"].dtype, np.float32)  # bf16 decoded
        self.assertEqual(x["query"].shape, (4, 8, 16))
        self.assertEqual(x["block_tables"].dtype, np.int32)
        # the same manifest.json path opens the same bundle
        self.assertEqual(len(goldset.open_bundle(os.path.join(_state["bundle"], "manifest.json"))), 12)

    def test_bf16_decoding_is_exact(self):
        c = goldset.open_bundle(_state["bundle"]).case("pa-bf16")
        bits = c.load("query", raw=True)
        self.assertEqual(bits.dtype, np.uint16)
        vals = c.load("query")
        np.testing.assert_array_equal(vals.view(np.uint32), bits.astype(np.uint32) << 16)
        np.testing.assert_array_equal(goldset.float32_to_bf16(vals), bits)

    def test_float32_to_bf16_rounds_to_nearest_even(self):
        x = np.array([1.0, 1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -8 + 2 ** -20, -0.0, np.inf, 3.4e38], np.float32)
        got = goldset.bf16_to_float32(goldset.float32_to_bf16(x))
        want = np.array([1.0, 1.0, 1 + 2 ** -6, 1 + 2 ** -7, -0.0, np.inf, np.inf], np.float32)
        np.testing.assert_array_equal(got, want)
        self.assertTrue(np.signbit(got[4]))
        self.assertTrue(np.isnan(goldset.bf16_to_float32(goldset.float32_to_bf16(np.array([np.nan], np.float32))))[0])

    @unittest.skipIf(torch is None and not REQUIRE, "python3-torch is not installed: the torch backend is untested")
    def test_torch_inputs_have_logical_dtypes(self):
        c = goldset.open_bundle(_state["bundle"]).case("pa-bf16")
        x = c.inputs(backend="torch")
        self.assertEqual(x["query"].dtype, torch.bfloat16)
        self.assertEqual(x["block_tables"].dtype, torch.int32)
        np.testing.assert_array_equal(x["query"].float().numpy(), c.load("query"))
        self.assertEqual(goldset.open_bundle(_state["bundle"]).case("pa-hostile-fp16").load("query", "torch").dtype,
                         torch.float16)

    def test_verify(self):
        b = goldset.open_bundle(_state["bundle"])
        self.assertEqual(b.verify(), sum(len(c.tensors) for c in b))
        d = copy_bundle()
        path = os.path.join(d, "mm-kn-fp16", "a.npy")
        with open(path, "r+b") as f:
            f.seek(-1, 2)
            last = f.read(1)
            f.seek(-1, 2)
            f.write(bytes([last[0] ^ 1]))
        bad = goldset.open_bundle(d)
        with self.assertRaisesRegex(goldset.VerifyError, r"mm-kn-fp16/a\.npy: sha256"):
            bad.verify()
        with self.assertRaisesRegex(goldset.VerifyError, "a.npy: sha256"):
            bad.case("mm-kn-fp16").load("a", verify=True)
        bad.case("mm-kn-fp16").load("a")  # without verify the file is read as it is

    def test_bad_bundles_name_the_file(self):
        with self.assertRaisesRegex(goldset.BundleError, "no manifest"):
            goldset.open_bundle(_state["tmp"])
        d = copy_bundle()
        m = os.path.join(d, "manifest.json")
        with open(m) as f:
            doc = json.load(f)
        doc["cases"][0]["tensors"][0]["shape"] = [4, 37]
        with open(m, "w") as f:
            json.dump(doc, f)
        with self.assertRaisesRegex(goldset.BundleError, r"a\.npy: holds <f2\[3, 37\], the manifest says float16"):
            goldset.open_bundle(d).case("mm-kn-fp16").load("a")
        doc["cases"][0]["tensors"][0]["path"] = "../../etc/passwd"
        with open(m, "w") as f:
            json.dump(doc, f)
        with self.assertRaisesRegex(goldset.BundleError, "not inside the bundle"):
            goldset.open_bundle(d)
        doc["schema_version"] = 9
        with open(m, "w") as f:
            json.dump(doc, f)
        with self.assertRaisesRegex(goldset.BundleError, "schema_version 9"):
            goldset.open_bundle(d)

    def test_select_cases(self):
        b = goldset.open_bundle(_state["bundle"])
        self.assertEqual([c.id for c in goldset.select_cases(b, ops=["quest"])],
                         ["quest-bf16", "quest-group-bf16", "quest-ties-fp16"])
        self.assertEqual([c.id for c in goldset.select_cases(b, cases=["mm-*"], splits=["public"])],
                         ["mm-kn-fp16", "mm-nk-bf16", "mm-fp32"])
        with self.assertRaisesRegex(KeyError, "no case matching 'nope'"):
            goldset.select_cases(b, cases=["nope"])
        with self.assertRaisesRegex(KeyError, "no 'dsa' case"):
            goldset.select_cases(b, ops=["dsa"])


class DTypeTest(unittest.TestCase):
    def test_byte_coded_decoders(self):
        from goldset import _dtypes as d

        e4 = d.e4m3fn_to_float32(np.array([0x38, 0x7E, 0x01, 0x08, 0xB8, 0x00, 0x80, 0x7F, 0xFF], np.uint8))
        np.testing.assert_array_equal(e4[:7], np.array([1.0, 448.0, 2.0 ** -9, 2.0 ** -6, -1.0, 0.0, -0.0], np.float32))
        self.assertTrue(np.isnan(e4[7:]).all())
        pairs = d.e2m1x2_to_float32(np.array([[0x21, 0xF7]], np.uint8))
        np.testing.assert_array_equal(pairs, np.array([[0.5, 1.0, 6.0, -6.0]], np.float32))
        sc = d.e8m0_to_float32(np.array([127, 128, 0, 255], np.uint8))
        np.testing.assert_array_equal(sc[:3], np.array([1.0, 2.0, 2.0 ** -127], np.float32))
        self.assertTrue(np.isnan(sc[3]))
        with self.assertRaisesRegex(goldset.UnsupportedDType, "float7"):
            d.storage_dtype("float7")

    def test_decoders_match_ml_dtypes_and_torch_on_every_code(self):
        # internal/dtype/testdata/codes.txt: every code as ml_dtypes 0.6 and torch 2.11 decode it
        from goldset import _dtypes as d

        fixture = os.path.join(REPO, "internal", "dtype", "testdata", "codes.txt")
        if not os.path.exists(fixture):
            self.skipTest(f"{fixture} is not in this checkout")
        ours = {
            "float8_e4m3fn": lambda c: d.e4m3fn_to_float32(np.array([c], np.uint8))[0],
            "float8_e8m0fnu": lambda c: d.e8m0_to_float32(np.array([c], np.uint8))[0],
            "float4_e2m1fn": lambda c: d.e2m1x2_to_float32(np.array([c], np.uint8))[0],  # the low nibble
        }
        seen = {}
        with open(fixture) as f:
            for line in f:
                parts = line.split()
                if len(parts) != 5 or parts[0] != "decode" or parts[2] not in ours:
                    continue
                _, lib, name, code, value = parts
                want = float("nan") if value == "nan" else float.fromhex(value)
                got = float(ours[name](int(code, 16)))
                if math.isnan(want):
                    self.assertTrue(math.isnan(got), f"{lib} {name} {code}: {got}, want NaN")
                else:
                    self.assertEqual((got, math.copysign(1, got)), (want, math.copysign(1, want)), f"{lib} {name} {code}")
                seen[(lib, name)] = seen.get((lib, name), 0) + 1
        self.assertEqual(seen, {("ml_dtypes", "float8_e4m3fn"): 256, ("torch", "float8_e4m3fn"): 256,
                                ("ml_dtypes", "float8_e8m0fnu"): 256, ("torch", "float8_e8m0fnu"): 256,
                                ("ml_dtypes", "float4_e2m1fn"): 16})
        self.assertEqual(d.storage_dtype("float4_e2m1fn_x2"), np.dtype("|u1"))  # internal/dtype's manifest name

    @unittest.skipIf(torch is None and not REQUIRE, "python3-torch is not installed")
    def test_torch_fp8_where_torch_has_it(self):
        from goldset import _dtypes as d

        codes = np.array([0x38, 0xB8], np.uint8)
        t = d.to_torch(codes, "float8_e4m3fn")
        if hasattr(torch, "float8_e4m3fn"):
            self.assertEqual(t.dtype, torch.float8_e4m3fn)
            np.testing.assert_array_equal(t.float().numpy(), [1.0, -1.0])
        else:  # Debian 12's torch 1.13: decoded values
            self.assertEqual(t.dtype, torch.float32)
            np.testing.assert_array_equal(t.numpy(), [1.0, -1.0])


class SaveOutputTest(unittest.TestCase):
    def setUp(self):
        self.b = goldset.open_bundle(_state["bundle"])
        self.dir = tempfile.mkdtemp(dir=_state["tmp"])

    def header(self, path):
        a = np.load(path)
        return a.dtype.str, a.shape, a.flags.c_contiguous

    def test_encodings(self):
        c = self.b.case("quest-bf16")
        big = np.arange(4 * 8 * 16, dtype=">f4").reshape(4, 8, 16)
        self.assertEqual(self.header(goldset.save_output(c, "out", big, self.dir)), ("<f4", (4, 8, 16), True))
        fort = np.asfortranarray(np.ones((4, 8), np.float32))
        self.assertEqual(self.header(goldset.save_output(c, "lse", fort, self.dir)), ("<f4", (4, 8), True))
        self.assertEqual(self.header(goldset.save_output(c, "selected", np.zeros((4, 8, 4), np.int64), self.dir))[0], "<i8")
        self.assertEqual(self.header(goldset.save_output(c, "selected", np.zeros((4, 8, 4), np.uint8), self.dir))[0], "<i4")
        self.assertEqual(self.header(goldset.save_output(c, "out", np.zeros((4, 8, 16), np.float16), self.dir))[0], "<f4")
        self.assertEqual(self.header(goldset.save_output(c, "out", np.zeros((4, 8, 16), np.uint16), self.dir))[0], "<u2")
        self.assertEqual(os.path.dirname(goldset.save_output(c, "out", big, self.dir)), os.path.join(self.dir, "quest-bf16"))
        with self.assertRaisesRegex(ValueError, "'query' is a input tensor, not a graded output"):
            goldset.save_output(c, "query", big, self.dir)
        with self.assertRaisesRegex(TypeError, "integer"):
            goldset.save_output(c, "selected", np.zeros((4, 8, 4), np.float32), self.dir)
        self.assertEqual([f for f in os.listdir(os.path.join(self.dir, "quest-bf16")) if f.endswith(".tmp")], [])

    @unittest.skipIf(torch is None and not REQUIRE, "python3-torch is not installed")
    def test_torch_bf16_is_written_as_bits(self):
        c = self.b.case("pa-bf16")
        t = torch.tensor([[1.0, -2.5]], dtype=torch.bfloat16).expand(4 * 8, 2).reshape(4, 8, 2)
        t = torch.cat([t] * 8, dim=2)
        p = goldset.save_output(c, "out", t, self.dir)
        a = np.load(p)
        self.assertEqual(a.dtype.str, "<u2")
        np.testing.assert_array_equal(a[0, 0, :2], [0x3F80, 0xC020])
        f16 = self.b.case("pa-hostile-fp16")
        p = goldset.save_output(f16, "out", torch.zeros(3, 6, 8, dtype=torch.bfloat16), self.dir)
        self.assertEqual(np.load(p).dtype.str, "<f4")  # compare takes no bf16 bits for an fp16 golden


def _torch_matmul(case, x):
    a, b = x["a"].double(), x["b"].double()
    if case.params.get("b_layout", "KN") == "NK":
        b = b.t()
    return {"c": (a @ b).to(x["a"].dtype)}  # rounded into the output dtype, as a real kernel returns it


def _torch_softmax(case, x):
    z = x["x"].double()
    m = z.max(-1).values
    e = torch.exp(z - torch.where(torch.isfinite(m), m, torch.zeros_like(m))[:, None])
    s = e.sum(-1)
    y = torch.where(s[:, None] > 0, e / torch.where(s > 0, s, torch.ones_like(s))[:, None], torch.zeros_like(e))
    return {"y": y.to(x["x"].dtype), "row_max": m.float(), "row_sum": s.float()}


# A wrong kernel must fail every case of the small suite except these, where
# its bug does not change the result: the tie case selects the lowest indices
# whichever way scores are sorted.
WRONG_PASSES = {"quest-ties-fp16"}


class JudgeTest(unittest.TestCase):
    def test_reference_kernels_pass(self):
        res = judge(reference.kernel)
        self.assertEqual([r.status for r in res.results], ["PASS"] * 12, res.table())
        self.assertTrue(res.ok)
        for r in res.results:
            self.assertEqual(sorted(rep["name"] for rep in r.reports), sorted(r.case.outputs))
            self.assertIsNotNone(r.time_s)
            q = r.ratio()
            if r.op != "reshape_and_cache":
                self.assertIsNotNone(q, r.id)
                self.assertLessEqual(q, 1.0, r.id)

    def test_wrong_kernels_fail(self):
        res = judge(reference.wrong_kernel)
        got = {r.id: r.status for r in res.results}
        want = {c.id: ("PASS" if c.id in WRONG_PASSES else "FAIL") for c in goldset.open_bundle(_state["bundle"])}
        self.assertEqual(got, want, res.table())
        self.assertFalse(res.ok)
        by_id = {r.id: r for r in res.results}
        self.assertIn("key_cache_out", by_id["rc-fp16"].binding())
        self.assertIn("selected", by_id["quest-bf16"].binding())
        self.assertIn("nonfinite", by_id["sm-fp16"].binding())  # exp overflow without the max
        self.assertGreater(by_id["pa-bf16"].ratio(), 1.0)
        self.assertEqual(by_id["mm-fp32"].exit_code, 3)

    @unittest.skipIf(torch is None and not REQUIRE, "python3-torch is not installed: the torch judge path is untested")
    def test_torch_kernels(self):
        def kernel(case, x):
            return (_torch_matmul if case.op == "matmul" else _torch_softmax)(case, x)

        res = judge(kernel, ops=["matmul", "softmax"], backend="torch")
        self.assertEqual([r.status for r in res.results], ["PASS"] * 5, res.table())

        def off_by_one_ulp(case, x):
            out = kernel(case, x)
            if case.op == "softmax":
                out["y"] = out["y"] * 1.02  # 2% too large: outside every softmax tolerance
            else:
                out["c"] = out["c"] + out["c"].abs().max() * 0.05
            return out

        res = judge(off_by_one_ulp, ops=["matmul", "softmax"], backend="torch")
        self.assertEqual([r.status for r in res.results], ["FAIL"] * 5, res.table())

    def test_table_and_json(self):
        buf = io.StringIO()
        res = judge(reference.kernel, cases=["mm-*", "rc-fp16"], print_table=True, stream=buf)
        text = buf.getvalue()
        self.assertIn("case", text.splitlines()[1])
        for cid in ("mm-kn-fp16", "mm-nk-bf16", "mm-fp32", "rc-fp16"):
            self.assertRegex(text, cid + r"\s+PASS")
        self.assertIn("4 passed, 0 failed, 0 errors", text)
        doc = res.to_json()
        self.assertEqual(doc["counts"], {"PASS": 4, "FAIL": 0, "ERROR": 0})
        json.dumps(doc)
        self.assertEqual(len(res.table().splitlines()), 5)

    def test_dsa_rules_report_their_ratio(self):
        # the DSA families' scaled/lse checks are err/bound like elementwise; counts are not
        from goldset._judge import CaseResult
        case = type("C", (), {"id": "ix", "op": "dsa_indexer"})()
        reports = [{"name": "logits", "status": "PASS", "mode": "dsa", "checks": [
            {"rule": "nonfinite", "observed": 3}, {"rule": "dsa_scaled", "observed": 0.54}]},
            {"name": "topk_logical", "status": "PASS", "mode": "dsa", "checks": [{"rule": "dsa_selection", "observed": 2}]},
            {"name": "lse", "status": "PASS", "mode": "dsa", "checks": [{"rule": "dsa_lse", "observed": "0.25"}]}]
        r = CaseResult(case, "PASS", reports=reports)
        self.assertEqual(r.ratio(), 0.54)
        self.assertEqual(r.binding(), "logits dsa_scaled")

    def test_kernel_errors_are_reported_per_case(self):
        def broken(case, x):
            if case.op == "matmul":
                raise RuntimeError("boom")
            if case.op == "softmax":
                return {"nope": 1}
            return {}

        res = judge(broken, cases=["mm-kn-fp16", "sm-fp16", "rc-fp16"])
        self.assertEqual([r.status for r in res.results], ["ERROR"] * 3)
        self.assertIn("boom", res.results[0].binding())
        self.assertIn("not outputs", res.results[1].binding())
        self.assertIn("no output", res.results[2].binding())
        with self.assertRaisesRegex(RuntimeError, "boom"):
            judge(broken, cases=["mm-kn-fp16"], raise_errors=True)

    def test_every_graded_output_is_required(self):
        only_out = lambda c, x: {"out": reference.paged_attention(c, x)["out"]}
        res = judge(only_out, cases=["pa-bf16"])
        self.assertEqual(res.results[0].status, "ERROR")
        self.assertIn("did not return ['lse']", res.results[0].binding())
        if _supports_partial(_state["gs"]):
            res = judge(only_out, cases=["pa-bf16"], partial=True)
            self.assertEqual(res.results[0].status, "PASS", res.table())
            self.assertEqual([r["name"] for r in res.results[0].reports], ["out"])

    def test_wrong_shape_is_a_failure_not_a_crash(self):
        res = judge(lambda c, x: {"c": np.zeros((2, 2), np.float32)}, cases=["mm-kn-fp16"])
        self.assertEqual(res.results[0].status, "FAIL")
        self.assertIn("shape", res.results[0].binding())

    def test_out_dir_keeps_the_candidates(self):
        d = tempfile.mkdtemp(dir=_state["tmp"])
        judge(reference.kernel, cases=["pa-bf16"], out_dir=d)
        self.assertEqual(sorted(os.listdir(os.path.join(d, "pa-bf16"))), ["lse.npy", "out.npy"])


class CLITest(unittest.TestCase):
    def cli(self, *args):
        # the goldset package this test imported, installed or not
        pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(goldset.__file__)))
        env = dict(os.environ, GOLDSET_BIN=_state["gs"],
                   PYTHONPATH=os.pathsep.join([pkg_root] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
        r = subprocess.run([sys.executable, "-m", "goldset"] + list(args), capture_output=True, text=True, env=env,
                           cwd=_state["tmp"])
        return r.returncode, r.stdout, r.stderr

    def test_judge_exit_codes_and_json(self):
        code, out, err = self.cli("judge", _state["bundle"], "--kernel", "goldset.reference:kernel", "--json")
        self.assertEqual(code, 0, err)
        doc = json.loads(out)
        self.assertEqual(doc["counts"], {"PASS": 12, "FAIL": 0, "ERROR": 0})
        self.assertIn("12 passed, 0 failed, 0 errors", err)  # the table goes to stderr with --json
        code, out, err = self.cli("judge", _state["bundle"], "--kernel", "goldset.reference:wrong_kernel", "--ops", "quest")
        self.assertEqual(code, 3, out + err)
        self.assertIn("2 failed", out)

    def test_kernel_from_a_file(self):
        d = tempfile.mkdtemp(dir=_state["tmp"])
        f = os.path.join(d, "mine.py")
        with open(f, "w") as fh:
            fh.write("from goldset import reference\ndef softmax(case, x):\n    return reference.softmax(case, x)\n"
                     "def boom(case, x):\n    raise RuntimeError('kaput')\n")
        code, out, err = self.cli("judge", _state["bundle"], "--kernel", f + ":softmax", "--ops", "softmax")
        self.assertEqual(code, 0, out + err)
        code, out, err = self.cli("judge", _state["bundle"], "--kernel", f + ":boom", "--ops", "softmax")
        self.assertEqual(code, 1)
        self.assertIn("kaput", out)
        code, out, err = self.cli("judge", _state["bundle"], "--kernel", f + ":nothing")
        self.assertEqual((code, err.strip()), (1, f"goldset: --kernel '{f}:nothing': {f} has no 'nothing'"))

    def test_cases_verify_usage(self):
        code, out, _ = self.cli("cases", _state["bundle"], "--op", "matmul", "--json")
        self.assertEqual(code, 0)
        self.assertEqual([c["id"] for c in json.loads(out)["cases"]], ["mm-kn-fp16", "mm-nk-bf16", "mm-fp32"])
        self.assertEqual(self.cli("verify", _state["bundle"])[0], 0)
        d = copy_bundle()
        with open(os.path.join(d, "rc-fp16", "slot_mapping.npy"), "ab") as fh:
            fh.write(b"x")
        code, _, err = self.cli("verify", d)
        self.assertEqual(code, 3)
        self.assertIn("slot_mapping.npy", err)
        self.assertEqual(self.cli("judge", _state["bundle"])[0], 2)  # --kernel missing
        code, _, err = self.cli("cases", _state["tmp"])
        self.assertEqual(code, 1)
        self.assertIn("no manifest", err)


TORCH_CHECK = os.path.join(REPO, "scripts", "torch_check.py")
# small cases of every DSA and MXFP4 op (both indexer layouts, a fold_group to_fp8, each GEMM variant)
TORCH_CHECK_CASES = {
    "stage4-mixed": ["graph-spec-qwen3-32b-bf16", "mixed-g1-fp16"],
    "stage5-dsa": ["ic-fp32", "bh-shared", "ix-small", "ix-small-ragged", "sa-small"],
    "stage6-mxfp4": ["q-k96-floor-f32", "dq-k32-f32", "fp8-fold4-k96", "gemm-k32", "a4w4-k96", "w4a8-k96", "moe-tail-skew"],
}


class TorchCheckTest(unittest.TestCase):
    """scripts/torch_check.py on CPU torch: every op goldset lists has a
    reference, the goldens check out, and a flipped byte fails its case."""

    @classmethod
    def setUpClass(cls):
        if torch is None:
            _missing("python3-torch is not installed: scripts/torch_check.py is untested")
        cls.out = tempfile.mkdtemp(prefix="torch-check-", dir=_state["tmp"])
        for suite, cases in TORCH_CHECK_CASES.items():
            args = [_state["gs"], "gen", suite, "--out", cls.out, "-q"]
            for c in cases:
                args += ["--case", c]
            subprocess.run(args, check=True, capture_output=True)

    def run_check(self, bundle):
        r = subprocess.run([sys.executable, TORCH_CHECK, bundle, "--device", "cpu", "--goldset", _state["gs"]],
                           capture_output=True, text=True)
        lines = r.stdout.splitlines()
        if not lines:
            self.fail(f"torch_check.py printed nothing (exit {r.returncode}):\n{r.stderr}")
        rows = {ln.split()[1]: (ln.split()[0], json.loads(ln.split(None, 2)[2])) for ln in lines[:-1]}
        return r.returncode, rows, json.loads(lines[-1]), r.stderr

    def test_every_op_has_a_reference(self):
        ops = json.loads(subprocess.run([_state["gs"], "list", "--ops", "--json"], check=True, capture_output=True, text=True).stdout)["ops"]
        sys.path.insert(0, os.path.dirname(TORCH_CHECK))
        try:
            import torch_check
        finally:
            sys.path.pop(0)
        self.assertEqual(sorted(o["name"] for o in ops if o["name"] not in torch_check.REFERENCES), [])

    def test_bundles_pass(self):
        for bundle in [_state["bundle"]] + [os.path.join(self.out, s) for s in TORCH_CHECK_CASES]:
            code, rows, summary, err = self.run_check(bundle)
            self.assertEqual((code, summary["failed"], summary["unchecked_ops"]), (0, 0, []), f"{bundle}: {rows}\n{err}")
            self.assertEqual({st for st, _ in rows.values()}, {"ok"}, rows)
            self.assertEqual(sorted(summary["decoders"]), ["float4_e2m1fn_x2", "float8_e4m3fn", "float8_e8m0fnu"])

    def test_flipped_golden_fails(self):
        for suite, case, tensor, key in [
            ("stage5-dsa", "ic-fp32", "index_cache_out", "index_cache_exact"),
            ("stage5-dsa", "bh-shared", "block_header", "block_header_exact"),
            ("stage5-dsa", "ix-small", "topk_logical", "topk_exact"),
            ("stage5-dsa", "ix-small-ragged", "logits", "logits_masked"),  # the last logit is outside every window
            ("stage5-dsa", "sa-small", "lse", "lse_ulps"),
            ("stage6-mxfp4", "q-k96-floor-f32", "codes", "codes_equal"),
            ("stage6-mxfp4", "dq-k32-f32", "y", "y_equal"),
            ("stage6-mxfp4", "fp8-fold4-k96", "inexact", "inexact_exact"),
            ("stage6-mxfp4", "gemm-k32", "y_truth", "truth_ulps"),
            ("stage6-mxfp4", "moe-tail-skew", "out_truth", "truth_within_f32_rounding"),
        ]:
            with self.subTest(case=case, tensor=tensor):
                d = os.path.join(tempfile.mkdtemp(dir=self.out), suite)
                shutil.copytree(os.path.join(self.out, suite), d)
                man = os.path.join(d, "manifest.json")
                with open(man) as f:
                    m = json.load(f)
                t = next(t for c in m["cases"] if c["id"] == case for t in c["tensors"] if t["name"] == tensor)
                path = os.path.join(d, t["path"])
                with open(path, "r+b") as f:  # the last data byte: a value's high byte
                    f.seek(-1, os.SEEK_END)
                    b = f.read(1)[0]
                    f.seek(-1, os.SEEK_END)
                    f.write(bytes([b ^ 0x41]))
                with open(path, "rb") as f:
                    t["sha256"] = hashlib.sha256(f.read()).hexdigest()
                m["cases"] = [c for c in m["cases"] if c["id"] == case]
                with open(man, "w") as f:
                    json.dump(m, f)
                code, rows, summary, err = self.run_check(d)
                status, res = rows[case]
                self.assertEqual((code, status, summary["failed"]), (1, "FAIL", 1), f"{res}\n{err}")
                self.assertTrue(res[key] is False or (key.endswith("_ulps") and res[key] > 1), res)


def _fake_goldset(dirname, version_line, flag_ok):
    """A shell script that answers --version/version like a goldset build would."""
    p = os.path.join(dirname, "goldset")
    with open(p, "w") as f:
        f.write("#!/bin/sh\n")
        if flag_ok:
            f.write(f'if [ "$1" = --version ]; then echo "{version_line}"; exit 0; fi\n')
        f.write(f'if [ "$1" = version ]; then echo "{version_line}"; exit 0; fi\n')
        f.write('echo "unknown command" >&2; exit 2\n')
    os.chmod(p, os.stat(p).st_mode | stat.S_IXUSR)
    return p


class BinaryTest(unittest.TestCase):
    def test_missing_binary(self):
        with self.assertRaisesRegex(goldset.GoldsetBinaryError, "does not exist"):
            judge(reference.kernel, goldset_bin=os.path.join(_state["tmp"], "no-such-goldset"))
        old = os.environ.pop("GOLDSET_BIN", None)
        path = os.environ.get("PATH", "")
        try:
            os.environ["PATH"] = _state["tmp"] + "/empty-dir"
            with self.assertRaisesRegex(goldset.GoldsetBinaryError, "no goldset binary"):
                goldset.find_goldset()
        finally:
            os.environ["PATH"] = path
            if old is not None:
                os.environ["GOLDSET_BIN"] = old

    def spec2_bundle(self):
        d = copy_bundle()
        m = os.path.join(d, "manifest.json")
        with open(m) as f:
            doc = json.load(f)
        doc["spec_version"] = 2
        with open(m, "w") as f:
            json.dump(doc, f)
        return goldset.open_bundle(d)

    def test_too_old_for_the_spec_version(self):
        b = self.spec2_bundle()
        # the real binary of this checkout, and a build that says nothing about specs: spec 1
        if _spec_of(_state["gs"]) is None or _spec_of(_state["gs"]) < 2:
            with self.assertRaisesRegex(goldset.GoldsetBinaryError, "spec version 2: install a newer goldset"):
                goldset.check_goldset(b, _state["gs"])
        d = tempfile.mkdtemp(dir=_state["tmp"])
        silent = _fake_goldset(d, "goldset v0.9.0 (go1.26.8, linux/amd64)", flag_ok=False)
        with self.assertRaisesRegex(goldset.GoldsetBinaryError, r"does not state its spec version .*spec version 2"):
            goldset.check_goldset(b, silent)
        d = tempfile.mkdtemp(dir=_state["tmp"])
        new = _fake_goldset(d, "goldset v1.2.0 (spec versions 1-2, go1.26.8)", flag_ok=True)
        self.assertEqual(goldset.check_goldset(b, new)[0], new)
        d = tempfile.mkdtemp(dir=_state["tmp"])
        one = _fake_goldset(d, "goldset v1.1.0 spec 1", flag_ok=True)
        with self.assertRaisesRegex(goldset.GoldsetBinaryError, "implements spec version 1, but bundle"):
            goldset.check_goldset(b, one)

    def test_not_goldset(self):
        d = tempfile.mkdtemp(dir=_state["tmp"])
        p = os.path.join(d, "goldset")
        with open(p, "w") as f:
            f.write("#!/bin/sh\nexit 1\n")
        os.chmod(p, 0o755)
        with self.assertRaisesRegex(goldset.GoldsetBinaryError, "is it goldset"):
            goldset.check_goldset(goldset.open_bundle(_state["bundle"]), p)


def _supports_partial(gs):
    r = subprocess.run([gs, "compare", "--help"], capture_output=True, text=True)
    return "--partial" in r.stdout


def _spec_of(gs):
    return goldset.goldset_version(gs)[1]


if __name__ == "__main__":
    unittest.main()
