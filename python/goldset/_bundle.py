"""Reading a bundle (manifest.json + one .npy per tensor) and writing
candidate outputs that `goldset compare` accepts."""
import hashlib
import json
import os
import tempfile

import numpy as np

from . import _dtypes

ROLES = ("input", "golden", "truth", "aux")
SCHEMA_VERSION = 1


class BundleError(ValueError):
    """A bundle, manifest or tensor file that cannot be used; the message names the file."""


class VerifyError(BundleError):
    """A tensor file whose size, sha256, dtype or shape differs from the manifest."""


class TensorSpec:
    """One tensor of a case as the manifest records it."""

    __slots__ = ("name", "role", "path", "dtype", "shape", "sha256", "bytes", "tolerance", "compression", "raw")

    def __init__(self, d, where):
        try:
            self.name = d["name"]
            self.role = d["role"]
            self.path = d["path"]
            self.dtype = d["dtype"]
            self.shape = tuple(int(x) for x in d["shape"])
        except (KeyError, TypeError, ValueError) as e:
            raise BundleError(f"{where}: tensor entry {d!r} lacks {e}") from None
        if self.role not in ROLES:
            raise BundleError(f"{where}: tensor {self.name!r} has unknown role {self.role!r}")
        if os.path.isabs(self.path) or ".." in self.path.replace("\\", "/").split("/"):
            raise BundleError(f"{where}: tensor {self.name!r} path {self.path!r} is not inside the bundle")
        self.sha256 = d.get("sha256")
        self.bytes = d.get("bytes")
        self.tolerance = d.get("tolerance")
        self.compression = d.get("compression")
        self.raw = d

    def __repr__(self):
        return f"TensorSpec({self.name!r}, {self.role}, {self.dtype}{list(self.shape)})"


class Case:
    """One case: id, op, split, params, info and its tensors."""

    def __init__(self, bundle, d):
        self.bundle = bundle
        try:
            self.id = d["id"]
            self.op = d["op"]
        except KeyError as e:
            raise BundleError(f"{bundle.manifest_path}: a case lacks {e}") from None
        self.split = d.get("split", "")
        self.params = d.get("params") or {}
        self.info = d.get("info") or {}
        # a pipeline stage's place in its chain ({"id", "step", "stage"}), else None
        self.chain = d.get("chain")
        where = f"{bundle.manifest_path}: case {self.id!r}"
        self.tensors = {}
        for t in d.get("tensors") or []:
            ts = TensorSpec(t, where)
            if ts.name in self.tensors:
                raise BundleError(f"{where}: tensor {ts.name!r} listed twice")
            self.tensors[ts.name] = ts

    def __repr__(self):
        return f"Case({self.id!r}, op={self.op!r}, split={self.split!r})"

    def names(self, role):
        return [n for n, t in self.tensors.items() if t.role == role]

    @property
    def outputs(self):
        """Names of the graded outputs (role golden), in manifest order."""
        return self.names("golden")

    def spec(self, name):
        try:
            return self.tensors[name]
        except KeyError:
            raise KeyError(f"case {self.id!r} has no tensor {name!r} (tensors: {', '.join(self.tensors)})") from None

    def path(self, name):
        return os.path.join(self.bundle.dir, self.spec(name).path)

    def load(self, name, backend="numpy", device=None, raw=False, verify=False, mmap=False):
        """One tensor in its logical dtype (numpy: bf16/fp8/fp4 decoded to
        float32; torch: torch.bfloat16 etc.). raw=True gives the stored
        encoding (bf16 as uint16 bits). verify=True checks its sha256 first."""
        ts = self.spec(name)
        stored = self.bundle._read(ts, verify=verify, mmap=mmap and backend == "numpy")
        if backend == "numpy":
            return _dtypes.to_numpy(stored, ts.dtype, raw=raw)
        if backend == "torch":
            return _dtypes.to_torch(stored, ts.dtype, device=device, raw=raw)
        raise ValueError(f"backend {backend!r}: want 'numpy' or 'torch'")

    def inputs(self, backend="numpy", device=None, raw=False, verify=False):
        """Every input tensor of the case, by name."""
        return {n: self.load(n, backend, device, raw, verify) for n in self.names("input")}

    def golden(self, name, backend="numpy", device=None, raw=False, verify=False):
        return self.load(name, backend, device, raw, verify)


class Bundle:
    """A bundle directory and its manifest."""

    def __init__(self, path):
        path = os.fspath(path)
        if os.path.isdir(path):
            self.dir, self.manifest_path = path, os.path.join(path, "manifest.json")
        else:
            self.dir, self.manifest_path = os.path.dirname(path) or ".", path
        try:
            with open(self.manifest_path, "rb") as f:
                m = json.load(f)
        except FileNotFoundError:
            raise BundleError(f"{self.manifest_path}: no manifest (is {path!r} a goldset bundle?)") from None
        except (OSError, ValueError) as e:
            raise BundleError(f"{self.manifest_path}: cannot read the manifest: {e}") from None
        if not isinstance(m, dict):
            raise BundleError(f"{self.manifest_path}: not a JSON object")
        if m.get("schema_version") != SCHEMA_VERSION:
            raise BundleError(f"{self.manifest_path}: schema_version {m.get('schema_version')!r}; "
                              f"this package reads schema version {SCHEMA_VERSION}")
        self.manifest = m
        self.suite = m.get("suite", "")
        self.suite_version = m.get("suite_version", "")
        self.spec_version = int(m.get("spec_version") or 1)
        self.digest = m.get("digest", "")
        # pipeline chains (docs/spec.md §14): id, kind, stages, steps, params
        self.chains = m.get("chains") or []
        self.cases = []
        self._by_id = {}
        for d in m.get("cases") or []:
            c = Case(self, d)
            if c.id in self._by_id:
                raise BundleError(f"{self.manifest_path}: case {c.id!r} listed twice")
            self._by_id[c.id] = c
            self.cases.append(c)

    def __repr__(self):
        return f"Bundle({self.dir!r}, suite={self.suite!r} {self.suite_version}, {len(self.cases)} cases)"

    def __iter__(self):
        return iter(self.cases)

    def __len__(self):
        return len(self.cases)

    def case(self, case_id):
        try:
            return self._by_id[case_id]
        except KeyError:
            raise KeyError(f"bundle {self.dir} has no case {case_id!r} (cases: {', '.join(self._by_id)})") from None

    def _read(self, ts, verify=False, mmap=False):
        path = os.path.join(self.dir, ts.path)
        if ts.compression:
            raise BundleError(f"{path}: {ts.compression}-compressed tensors are not read by this package; "
                              "decompress the bundle first (zstd -d)")
        want = _dtypes.storage_dtype(ts.dtype)
        if verify:
            verify_file(path, ts)
        try:
            a = np.load(path, allow_pickle=False, mmap_mode="r" if mmap else None)
        except FileNotFoundError:
            raise BundleError(f"{path}: missing (tensor {ts.name!r})") from None
        except (OSError, ValueError) as e:
            raise BundleError(f"{path}: not a readable .npy file: {e}") from None
        if a.dtype != want or tuple(a.shape) != ts.shape:
            raise BundleError(f"{path}: holds {a.dtype.str}{list(a.shape)}, the manifest says "
                              f"{ts.dtype} (stored {want.str}){list(ts.shape)}")
        return a

    def verify(self, cases=None):
        """Check size and sha256 of every tensor file (of the given case ids);
        raises VerifyError naming the first bad file, returns the count checked."""
        n = 0
        for c in self.cases:
            if cases is not None and c.id not in cases:
                continue
            for ts in c.tensors.values():
                verify_file(os.path.join(self.dir, ts.path), ts)
                n += 1
        return n


def verify_file(path, ts):
    if not ts.sha256:
        raise VerifyError(f"{path}: the manifest records no sha256 for tensor {ts.name!r}")
    h = hashlib.sha256()
    size = 0
    try:
        with open(path, "rb") as f:
            while True:
                chunk = f.read(1 << 22)
                if not chunk:
                    break
                size += len(chunk)
                h.update(chunk)
    except FileNotFoundError:
        raise VerifyError(f"{path}: missing (tensor {ts.name!r})") from None
    if ts.bytes is not None and size != ts.bytes:
        raise VerifyError(f"{path}: {size} bytes, the manifest says {ts.bytes}")
    if h.hexdigest() != ts.sha256:
        raise VerifyError(f"{path}: sha256 {h.hexdigest()}, the manifest says {ts.sha256}")


def open_bundle(path):
    """Open a bundle directory (or its manifest.json)."""
    return Bundle(path)


# ---------------------------------------------------------------------------
# Writing candidates


def _to_numpy_candidate(array):
    """numpy array of a candidate; torch tensors leave the device, bf16 as bits."""
    mod = type(array).__module__
    if mod.startswith("torch"):
        import torch

        t = array.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        t = t.contiguous()
        if t.dtype == torch.bfloat16:
            return t.view(torch.int16).numpy().view(np.uint16), "bfloat16"
        for logical, attr in _dtypes.TORCH_CODED.items():
            if hasattr(torch, attr) and t.dtype == getattr(torch, attr):
                return t.view(torch.uint8).numpy(), logical
        if t.dtype == torch.bool:
            return t.numpy(), None
        return t.numpy(), None
    return np.asarray(array), None


def encode_candidate(case, name, array):
    """The numpy array that save_output writes for output name: little-endian,
    C order, in an encoding `goldset compare` accepts for the golden's dtype
    (floats: <f2/<f4/<f8, bf16 as <u2 bits; integers of any width kept
    within <i4/<i8; byte-coded formats as |u1)."""
    ts = case.spec(name)
    if ts.role != "golden":
        raise ValueError(f"case {case.id!r}: {name!r} is a {ts.role} tensor, not a graded output "
                         f"(outputs: {', '.join(case.outputs)})")
    a, tagged = _to_numpy_candidate(array)
    g = ts.dtype
    if g in ("float16", "float32", "float64"):
        if tagged == "bfloat16":
            a = _dtypes.bf16_to_float32(a)  # exact widening: compare accepts any float
        elif a.dtype.kind in "iub":
            a = a.astype(np.float64)
        elif a.dtype.kind == "f" and a.dtype.itemsize not in (2, 4, 8):
            a = a.astype(np.float64)
        elif a.dtype.kind not in "f":
            raise TypeError(f"output {name!r}: {a.dtype} for a {g} golden")
    elif g == "bfloat16":
        if tagged == "bfloat16":
            pass
        elif a.dtype == np.uint16:
            pass  # already bf16 bits
        elif a.dtype == np.float16:
            a = a.astype(np.float32)  # compare takes <u2, <f4 or <f8 for bf16: widen exactly
        elif a.dtype.kind == "f":
            a = a.astype(np.float32) if a.dtype.itemsize < 4 else a
        else:
            raise TypeError(f"output {name!r}: {a.dtype} for a bfloat16 golden (want bf16, float32 or bf16 bits as uint16)")
    elif g in ("int32", "int64"):
        if a.dtype.kind not in "iu":
            raise TypeError(f"output {name!r}: {a.dtype} for an integer ({g}) golden")
        if a.dtype.itemsize not in (4, 8) or a.dtype.kind == "u":
            wide = a.astype(np.int64)
            if a.dtype.kind == "u" and a.size and int(a.max()) > np.iinfo(np.int64).max:
                raise ValueError(f"output {name!r}: values above int64")
            a = wide.astype(np.int32) if (not a.size or (wide.min() >= -2**31 and wide.max() < 2**31)) else wide
    elif g in ("uint8",) + _dtypes.BYTE_CODED:
        if a.dtype != np.uint8:
            raise TypeError(f"output {name!r}: {a.dtype} for a {g} golden (want its raw bytes, uint8)")
    elif g == "bool":
        if a.dtype != np.bool_:
            a = a.astype(np.bool_)
    else:
        _dtypes.storage_dtype(g)  # raises UnsupportedDType
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return np.ascontiguousarray(a)


def save_output(case, name, array, out_dir="."):
    """Write a candidate for output name of case to OUT_DIR/<case-id>/<name>.npy
    (atomically: a temporary file renamed into place) and return the path."""
    a = encode_candidate(case, name, array)
    d = os.path.join(os.fspath(out_dir), case.id)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, name + ".npy")
    fd, tmp = tempfile.mkstemp(prefix="." + name + ".", suffix=".tmp", dir=d)
    try:
        with os.fdopen(fd, "wb") as f:
            np.save(f, a, allow_pickle=False)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path
