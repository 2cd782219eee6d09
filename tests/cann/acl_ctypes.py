"""ctypes access to the ACL simulator for tests, and a runner for child processes.

ACL state is process-global (aclInit once, env vars read at aclInit), so every test that
drives the simulator directly runs its body in a fresh Python subprocess (``run_child``).
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np

REPO = Path(__file__).resolve().parents[2]  # children run with it on PYTHONPATH (sim_env)

# aclDataType codes (acl/acl_base.h)
ACL_FLOAT, ACL_FLOAT16, ACL_INT8, ACL_INT32, ACL_UINT8 = 0, 1, 2, 3, 4
ACL_INT16, ACL_UINT16, ACL_UINT32, ACL_INT64, ACL_UINT64 = 6, 7, 8, 9, 10
ACL_DOUBLE, ACL_BOOL, ACL_BF16 = 11, 12, 27
ACL_DT_UNDEFINED = -1

# the float dtypes CANN's AI-core ops take, and their test ids
BF16 = ml_dtypes.bfloat16
FLOATS = [np.float32, np.float16, BF16]
FLOAT_IDS = ["float32", "float16", "bfloat16"]
ACL_FORMAT_UNDEFINED, ACL_FORMAT_NCHW, ACL_FORMAT_NHWC, ACL_FORMAT_ND = -1, 0, 1, 2
MEMCPY_H2H, MEMCPY_H2D, MEMCPY_D2H, MEMCPY_D2D = 0, 1, 2, 3

# error codes (acl/acl_base.h, acl/error_codes/rt_error_codes.h)
ACL_ERROR_INVALID_PARAM = 100000
ACL_ERROR_REPEAT_INITIALIZE = 100002
ACL_ERROR_OP_INPUT_NOT_MATCH = 100021
ACL_ERROR_OP_OUTPUT_NOT_MATCH = 100022
ACL_ERROR_OP_ATTR_NOT_MATCH = 100023
ACL_ERROR_OP_NOT_FOUND = 100024
ACL_ERROR_UNSUPPORTED_DATA_TYPE = 100026
ACL_ERROR_FORMAT_NOT_MATCH = 100027
ACL_ERROR_RELATIVE_RESOURCE_NOT_CLEARED = 148051
ACL_ERROR_FEATURE_UNSUPPORTED = 200006
ACL_ERROR_RT_MEMORY_FREE = 207002
ACL_ERROR_RT_AICORE_EXCEPTION = 507015


def acl_dtype(np_dtype) -> int:
    """aclDataType of a NumPy dtype (ml_dtypes.bfloat16 -> ACL_BF16)."""
    dt = np.dtype(np_dtype)
    if dt.name == "bfloat16":
        return ACL_BF16
    return {
        "float32": ACL_FLOAT, "float16": ACL_FLOAT16, "float64": ACL_DOUBLE, "int8": ACL_INT8,
        "int16": ACL_INT16, "int32": ACL_INT32, "int64": ACL_INT64, "uint8": ACL_UINT8,
        "uint16": ACL_UINT16, "uint32": ACL_UINT32, "uint64": ACL_UINT64, "bool": ACL_BOOL,
    }[dt.name]


def numpy_dtype(code: int):
    return {ACL_FLOAT: np.float32, ACL_FLOAT16: np.float16, ACL_DOUBLE: np.float64, ACL_INT8: np.int8,
            ACL_INT16: np.int16, ACL_INT32: np.int32, ACL_INT64: np.int64, ACL_UINT8: np.uint8,
            ACL_UINT16: np.uint16, ACL_UINT32: np.uint32, ACL_UINT64: np.uint64, ACL_BOOL: np.bool_,
            ACL_BF16: BF16}[code]


@dataclass(frozen=True)
class Arg:
    """An op input: ``array`` in device memory (``kind="device"``, what a bare array means), as an
    ``aclSetTensorConst`` input whose data buffer points at the same host data (``"const"``, as the
    EP and ort_ops pass them), in ordinary host memory (``"host"``), or an omitted optional input
    (``"absent"``: an ``ACL_DT_UNDEFINED`` descriptor with no dims and a NULL buffer). ``fmt`` is
    the descriptor's aclFormat."""

    array: np.ndarray | None = None
    kind: str = "device"
    fmt: int = ACL_FORMAT_ND


def const(a) -> Arg:
    """A constant input (aclSetTensorConst)."""
    return Arg(np.asarray(a), "const")


def host(a) -> Arg:
    """An input in ordinary (pageable) host memory."""
    return Arg(np.asarray(a), "host")


def nchw(a) -> Arg:
    """A device input with an ACL_FORMAT_NCHW descriptor."""
    return Arg(np.asarray(a), "device", ACL_FORMAT_NCHW)


ABSENT = Arg(None, "absent")


@dataclass(frozen=True)
class Out:
    """An op output: dtype, dims, descriptor format, and ``alias``: the index of a device input
    whose buffer the output writes (in place) instead of a fresh one."""

    dtype: int
    dims: tuple
    fmt: int = ACL_FORMAT_ND
    alias: int | None = None


class Acl:
    """Thin ctypes wrapper over the simulator's ACL C API (one per child process)."""

    def __init__(self):
        import ort_ops.cann_ep.sim as sim
        self.lib = lib = sim.load()
        vp, sz, i32, i64 = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int32, ctypes.c_int64
        sig = {
            "aclInit": (i32, [ctypes.c_char_p]), "aclFinalize": (i32, []),
            "aclrtSetDevice": (i32, [i32]), "aclrtGetDeviceCount": (i32, [ctypes.POINTER(ctypes.c_uint32)]),
            "aclrtMalloc": (i32, [ctypes.POINTER(vp), sz, ctypes.c_int]), "aclrtFree": (i32, [vp]),
            "aclrtMallocHost": (i32, [ctypes.POINTER(vp), sz]), "aclrtFreeHost": (i32, [vp]),
            "aclrtMemcpy": (i32, [vp, sz, vp, sz, ctypes.c_int]),
            "aclrtMemcpyAsync": (i32, [vp, sz, vp, sz, ctypes.c_int, vp]),
            "aclrtMemsetAsync": (i32, [vp, sz, i32, sz, vp]),
            "aclrtCreateStream": (i32, [ctypes.POINTER(vp)]), "aclrtDestroyStream": (i32, [vp]),
            "aclrtSynchronizeStream": (i32, [vp]), "aclrtSynchronizeDevice": (i32, []),
            "aclrtCreateEvent": (i32, [ctypes.POINTER(vp)]), "aclrtDestroyEvent": (i32, [vp]),
            "aclrtRecordEvent": (i32, [vp, vp]), "aclrtStreamWaitEvent": (i32, [vp, vp]),
            "aclrtSynchronizeEvent": (i32, [vp]),
            "aclCreateTensorDesc": (vp, [ctypes.c_int, ctypes.c_int, ctypes.POINTER(i64), ctypes.c_int]),
            "aclDestroyTensorDesc": (None, [vp]), "aclSetTensorConst": (i32, [vp, vp, sz]),
            "aclCreateDataBuffer": (vp, [vp, sz]), "aclDestroyDataBuffer": (i32, [vp]),
            "aclopCreateAttr": (vp, []), "aclopDestroyAttr": (None, [vp]),
            "aclopSetAttrBool": (i32, [vp, ctypes.c_char_p, ctypes.c_uint8]),
            "aclopSetAttrInt": (i32, [vp, ctypes.c_char_p, i64]),
            "aclopSetAttrFloat": (i32, [vp, ctypes.c_char_p, ctypes.c_float]),
            "aclopSetAttrListInt": (i32, [vp, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(i64)]),
            "aclopSetAttrString": (i32, [vp, ctypes.c_char_p, ctypes.c_char_p]),
            "aclGetRecentErrMsg": (ctypes.c_char_p, []), "aclrtGetSocName": (ctypes.c_char_p, []),
            "aclsimGetStat": (i64, [ctypes.c_char_p]), "aclsimFailNextOp": (None, [ctypes.c_char_p, i32]),
            "aclsimFaultNextOp": (None, [ctypes.c_char_p]), "aclsimSocFamily": (ctypes.c_char_p, []),
            "aclsimOpAvailable": (ctypes.c_int, [ctypes.c_char_p]),
        }
        for name, (res, args) in sig.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        self.op_lib = ctypes.CDLL(os.path.join(sim.library_dir(), "libacl_op_compiler.so"))  # already loaded
        f = self.op_lib.aclopCompileAndExecute
        f.restype = i32
        f.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(vp), ctypes.POINTER(vp), ctypes.c_int,
                      ctypes.POINTER(vp), ctypes.POINTER(vp), vp, ctypes.c_int, ctypes.c_int, ctypes.c_char_p, vp]

    # --- runtime ---------------------------------------------------------------------------
    def init(self) -> None:
        assert self.lib.aclInit(None) == 0
        assert self.lib.aclrtSetDevice(0) == 0

    def err(self) -> str | None:
        m = self.lib.aclGetRecentErrMsg()
        return m.decode() if m is not None else None

    def stat(self, name: str) -> int:
        return self.lib.aclsimGetStat(name.encode())

    def malloc(self, size: int) -> int:
        p = ctypes.c_void_p()
        rc = self.lib.aclrtMalloc(ctypes.byref(p), size, 0)
        assert rc == 0, (rc, self.err())
        return p.value

    def malloc_host(self, size: int) -> int:
        p = ctypes.c_void_p()
        assert self.lib.aclrtMallocHost(ctypes.byref(p), size) == 0
        return p.value

    def stream(self) -> int:
        s = ctypes.c_void_p()
        assert self.lib.aclrtCreateStream(ctypes.byref(s)) == 0
        return s.value

    def to_device(self, a: np.ndarray) -> int:
        a = np.ascontiguousarray(a)
        p = self.malloc(max(a.nbytes, 1))
        if a.nbytes:
            assert self.lib.aclrtMemcpy(p, a.nbytes, a.ctypes.data, a.nbytes, MEMCPY_H2D) == 0
        return p

    def from_device(self, p: int, shape, dtype) -> np.ndarray:
        out = np.empty(shape, dtype=dtype)
        if out.nbytes:
            assert self.lib.aclrtMemcpy(out.ctypes.data, out.nbytes, p, out.nbytes, MEMCPY_D2H) == 0
        return out

    # --- single ops ---------------------------------------------------------------------------
    def _set_attrs(self, attr, attrs) -> None:
        for name, value in (attrs or {}).items():
            key = name.encode()
            if isinstance(value, bool):
                rc = self.lib.aclopSetAttrBool(attr, key, int(value))
            elif isinstance(value, int):
                rc = self.lib.aclopSetAttrInt(attr, key, value)
            elif isinstance(value, float):
                rc = self.lib.aclopSetAttrFloat(attr, key, value)
            elif isinstance(value, str):
                rc = self.lib.aclopSetAttrString(attr, key, value.encode())
            else:
                arr = (ctypes.c_int64 * max(len(value), 1))(*value)
                rc = self.lib.aclopSetAttrListInt(attr, key, len(value), arr)
            assert rc == 0, (name, value, self.err())

    def _desc(self, dt: int, dims, fmt: int):
        d = (ctypes.c_int64 * max(len(dims), 1))(*dims)
        return self.lib.aclCreateTensorDesc(dt, len(dims), d if dims else None, fmt)

    def op(self, op_type: str, inputs, outputs, attrs=None, stream=None, sync=True, read_back=()):
        """Runs one op. inputs: arrays (copied to device), ``Arg`` (const / host / absent / format)
        or (acl_dtype, dims, ptr, nbytes); outputs: (acl_dtype, dims) or ``Out``. attrs: bool, int,
        float, str or list of ints. Returns (rc, message, [output arrays or None]): the enqueue
        result, or, when that succeeded but the stream synchronisation fails (a device fault),
        the synchronisation's code and message with no outputs. ``sync=False`` returns right after
        enqueueing (outputs None; the caller synchronises; buffers are freed with the stream
        still running, which waits for it first). ``read_back``: indices of device inputs whose
        buffers are read after the op too (ops that update an input in place), appended to the
        outputs."""
        descs_in, bufs_in, descs_out, bufs_out, out_ptrs, keep, device_in = [], [], [], [], [], [], []
        attr = self.lib.aclopCreateAttr()
        self._set_attrs(attr, attrs)
        in_ptrs, in_meta = [], []
        for x in inputs:
            if isinstance(x, np.ndarray):
                x = Arg(x)
            if isinstance(x, Arg):
                if x.kind == "absent":
                    descs_in.append(self.lib.aclCreateTensorDesc(ACL_DT_UNDEFINED, 0, None, ACL_FORMAT_UNDEFINED))
                    bufs_in.append(self.lib.aclCreateDataBuffer(None, 0))
                    in_ptrs.append(None)
                    in_meta.append(None)
                    continue
                a = np.require(x.array, requirements="C")  # keeps rank 0 (ascontiguousarray does not)
                dt, dims, nbytes = acl_dtype(a.dtype), list(a.shape), a.nbytes
                if x.kind == "device":
                    ptr = self.to_device(a)
                    device_in.append(ptr)
                else:
                    keep.append(a)
                    ptr = a.ctypes.data if a.nbytes else None
                desc = self._desc(dt, dims, x.fmt)
                if x.kind == "const":
                    assert self.lib.aclSetTensorConst(desc, ptr, nbytes) == 0, self.err()
            else:
                dt, dims, ptr, nbytes = x
                desc = self._desc(dt, dims, ACL_FORMAT_ND)
            descs_in.append(desc)
            bufs_in.append(self.lib.aclCreateDataBuffer(ptr, nbytes))
            in_ptrs.append(ptr)
            in_meta.append((ptr, dims, dt))
        for o in outputs:
            o = o if isinstance(o, Out) else Out(o[0], tuple(o[1]))
            dims = list(o.dims)
            n = int(np.prod(dims)) if dims else 1
            nbytes = n * np.dtype(numpy_dtype(o.dtype)).itemsize
            if o.alias is None:
                ptr = self.malloc(max(nbytes, 1))
                device_in.append(ptr)
            else:
                ptr = in_ptrs[o.alias]
            out_ptrs.append((ptr, dims, o.dtype))
            descs_out.append(self._desc(o.dtype, dims, o.fmt))
            bufs_out.append(self.lib.aclCreateDataBuffer(ptr, nbytes))
        arr = lambda xs: (ctypes.c_void_p * max(len(xs), 1))(*xs)
        rc = self.op_lib.aclopCompileAndExecute(op_type.encode(), len(descs_in), arr(descs_in), arr(bufs_in),
                                                len(descs_out), arr(descs_out), arr(bufs_out), attr, 0, 0, None,
                                                stream)
        msg = self.err()
        results = [None] * (len(outputs) + len(read_back))
        if rc == 0 and sync:
            sync_rc = self.lib.aclrtSynchronizeStream(stream)
            if sync_rc != 0:
                rc, msg = sync_rc, self.err()
            else:
                read = out_ptrs + [in_meta[i] for i in read_back]
                results = [self.from_device(p, dims, numpy_dtype(dt)) for p, dims, dt in read]
        for h in descs_in + descs_out:
            self.lib.aclDestroyTensorDesc(h)
        for h in bufs_in + bufs_out:
            self.lib.aclDestroyDataBuffer(h)
        self.lib.aclopDestroyAttr(attr)
        for p in device_in:
            assert self.lib.aclrtFree(p) == 0, self.err()
        del keep
        return rc, msg, results


def sim_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACLSIM_") or k == "ACLSIM_LIBRARY_DIR"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(Path(__file__).parent)])
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_child(body: str, timeout: float = 120, **env) -> tuple[dict, str]:
    """Runs `body` in a fresh interpreter with `acl = Acl()` and `np` defined; the body sets
    `result` (JSON-serialisable). Returns (result, stderr)."""
    code = "import json, ctypes, numpy as np\nfrom acl_ctypes import *\nacl = Acl()\nresult = None\n"
    code += textwrap.dedent(body)
    code += "\nprint('@@RESULT@@' + json.dumps(result))\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                          env=sim_env(**env))
    if proc.returncode != 0:
        raise AssertionError(f"child failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("@@RESULT@@")][-1]
    return json.loads(line[len("@@RESULT@@"):]), proc.stderr


def run_script_on(soc: str, script: str, timeout: float = 300) -> dict:
    """Runs `script` (it prints its JSON result on a line starting with "@@") in a fresh
    interpreter on the simulated `soc` (ACLSIM_SOC_NAME is read at aclInit); returns that result."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                          timeout=timeout, env=sim_env(ACLSIM_SOC_NAME=soc))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("@@")][-1][2:])


def _pack(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def run_ops(tmp_dir, cases, **env):
    """Runs single ops in one child process, in order (a later case shows the runtime still works
    after an earlier one failed).

    cases: list of (op_type, [inputs: arrays or ``Arg``], [outputs: (acl_dtype, dims) or ``Out``],
    attrs or None[, read_back: indices of device inputs to read after the op]). Returns a list of
    (rc, message, [output arrays, then read-back inputs, or None]) in the same order (see
    ``Acl.op``: a device fault gives the synchronisation's code and message).
    """
    tmp_dir = Path(tmp_dir)
    arrays, spec = {}, []
    for ci, (op, ins, outs, attrs, *rest) in enumerate(cases):
        read_back = [int(i) for i in (rest[0] if rest else ())]
        names = []
        for ii, a in enumerate(ins):
            a = a if isinstance(a, Arg) else Arg(np.asarray(a))
            if a.kind == "absent":
                names.append([None, None, None, "absent", a.fmt])
                continue
            key = f"c{ci}_i{ii}"
            arrays[key] = _pack(a.array)
            names.append([key, acl_dtype(a.array.dtype), list(a.array.shape), a.kind, a.fmt])
        outs = [o if isinstance(o, Out) else Out(o[0], tuple(o[1])) for o in outs]
        spec.append([op, names, [[int(o.dtype), [int(d) for d in o.dims], o.fmt, o.alias] for o in outs],
                     attrs or {}, read_back])
    np.savez(tmp_dir / "ops_in.npz", **arrays)
    (tmp_dir / "ops_spec.json").write_text(json.dumps(spec))
    result, _ = run_child(f"""
        from acl_ctypes import _pack
        from pathlib import Path
        d = Path({str(tmp_dir)!r})
        data = np.load(d / "ops_in.npz")
        spec = json.loads((d / "ops_spec.json").read_text())
        acl.init()
        out, result = {{}}, []
        for ci, (op, names, outs, attrs, read_back) in enumerate(spec):
            ins = [ABSENT if kind == "absent" else
                   Arg(np.frombuffer(data[k].tobytes(), numpy_dtype(code)).reshape(shape), kind, fmt)
                   for k, code, shape, kind, fmt in names]
            rc, msg, ys = acl.op(op, ins, [Out(dt, tuple(dims), fmt, alias) for dt, dims, fmt, alias in outs], attrs,
                                 read_back=read_back)
            for oi, y in enumerate(ys):
                if y is not None:
                    out[f"c{{ci}}_o{{oi}}"] = _pack(y)
            result.append([rc, msg])
        np.savez(d / "ops_out.npz", **out)
    """, **env)
    data = np.load(tmp_dir / "ops_out.npz")
    res = []
    for ci, ((rc, msg), (_, ins, outs, _, *rest)) in enumerate(zip(result, cases)):
        ys = []
        back = [ins[i] if isinstance(ins[i], Arg) else Arg(np.asarray(ins[i])) for i in (rest[0] if rest else ())]
        shapes = [(o.dtype, o.dims) if isinstance(o, Out) else o for o in outs]
        shapes += [(acl_dtype(a.array.dtype), a.array.shape) for a in back]
        for oi, (code, dims) in enumerate(shapes):
            key = f"c{ci}_o{oi}"
            ys.append(np.frombuffer(data[key].tobytes(), numpy_dtype(code)).reshape(dims) if key in data else None)
        res.append((rc, msg, ys))
    return res


# --- comparing simulator outputs with NumPy references -----------------------------------------

# Tolerances of the simulator's transcendental float32 steps against float64 references: glibc's
# expf/logf/erff (the model of the NPU's Exp/Log/Erf) are within one float32 ulp of the exact value; a
# float16/bfloat16 output may round a within-tolerance float32 result one ulp of its own dtype
# differently. Tests derive their bounds from this table and say how.
ULPS = {"expf": 1, "logf": 1, "erff": 1, "half_output": 1}


def bits(a: np.ndarray) -> np.ndarray:
    """The raw bit patterns of an array (unsigned ints of the same width)."""
    return np.ascontiguousarray(a).view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def assert_bits_equal(actual: np.ndarray, expected: np.ndarray, nan_payload: bool = True) -> None:
    """Bit-for-bit equality (so -0.0 != +0.0). ``nan_payload=False``: NaN positions must match and
    their payloads are not compared (for ops whose NaN payload CANN does not define)."""
    assert actual is not None, "no output (the op failed)"
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, (actual.dtype, actual.shape,
                                                                               expected.dtype, expected.shape)
    a, e = bits(actual).reshape(-1), bits(expected).reshape(-1)
    if not nan_payload and actual.dtype.kind in "fV":
        na = np.isnan(actual.astype(np.float32)).reshape(-1)
        ne = np.isnan(expected.astype(np.float32)).reshape(-1)
        bad = np.flatnonzero(na != ne)
        assert bad.size == 0, (f"NaN at {bad[0]}: got {actual.reshape(-1)[bad[0]]}, "
                               f"expected {expected.reshape(-1)[bad[0]]}")
        a, e = a[~na], e[~na]
    bad = np.flatnonzero(a != e)
    assert bad.size == 0, (f"{bad.size} of {a.size} differ, first at {bad[0]}: got {a[bad[0]]:#x}, "
                           f"expected {e[bad[0]]:#x}")


def ulp(x, dtype=np.float32) -> np.ndarray:
    """The spacing of `dtype` at |x| (float64 array; NaN for NaN, inf beyond the dtype's range)."""
    import ml_dtypes
    x = np.abs(np.asarray(x, np.float64))
    with np.errstate(all="ignore"):
        if np.dtype(dtype) == np.dtype(ml_dtypes.bfloat16):
            e = np.floor(np.log2(np.maximum(x, 2.0 ** -126)))
            return 2.0 ** (e - 7)
        return np.spacing(np.asarray(x, dtype)).astype(np.float64)


def assert_within(actual: np.ndarray, expected: np.ndarray, atol) -> None:
    """|actual - expected| <= atol elementwise (float64), with NaN exactly where expected is NaN and
    infinities equal."""
    assert actual is not None, "no output (the op failed)"
    a, e = actual.astype(np.float64), np.asarray(expected, np.float64)
    assert a.shape == e.shape, (a.shape, e.shape)
    assert np.array_equal(np.isnan(a), np.isnan(e)), "NaN positions differ"
    fin = np.isfinite(e)
    assert np.array_equal(a[~fin & ~np.isnan(e)], e[~fin & ~np.isnan(e)]), "infinities differ"
    with np.errstate(invalid="ignore"):
        err = np.where(fin, np.abs(a - e), 0.0)
    tol = np.broadcast_to(np.asarray(atol, np.float64), e.shape)
    bad = np.flatnonzero((err > tol) & fin)
    if bad.size:
        w = bad[np.argmax(err.reshape(-1)[bad])]
        raise AssertionError(f"{bad.size} of {e.size} outside tolerance, worst at {w}: got {a.reshape(-1)[w]!r}, "
                             f"expected {e.reshape(-1)[w]!r} (atol {tol.reshape(-1)[w]:.3g})")
