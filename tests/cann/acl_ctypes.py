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
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]  # children run with it on PYTHONPATH (sim_env)

# aclDataType codes (acl/acl_base.h)
ACL_FLOAT, ACL_FLOAT16, ACL_INT8, ACL_INT32, ACL_UINT8 = 0, 1, 2, 3, 4
ACL_INT16, ACL_UINT16, ACL_UINT32, ACL_INT64, ACL_UINT64 = 6, 7, 8, 9, 10
ACL_DOUBLE, ACL_BOOL, ACL_BF16 = 11, 12, 27
ACL_FORMAT_ND = 2
MEMCPY_H2H, MEMCPY_H2D, MEMCPY_D2H, MEMCPY_D2D = 0, 1, 2, 3

# error codes (acl/acl_base.h, acl/error_codes/rt_error_codes.h)
ACL_ERROR_INVALID_PARAM = 100000
ACL_ERROR_REPEAT_INITIALIZE = 100002
ACL_ERROR_OP_INPUT_NOT_MATCH = 100021
ACL_ERROR_OP_OUTPUT_NOT_MATCH = 100022
ACL_ERROR_OP_NOT_FOUND = 100024
ACL_ERROR_UNSUPPORTED_DATA_TYPE = 100026
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
    import ml_dtypes
    return {ACL_FLOAT: np.float32, ACL_FLOAT16: np.float16, ACL_DOUBLE: np.float64, ACL_INT8: np.int8,
            ACL_INT16: np.int16, ACL_INT32: np.int32, ACL_INT64: np.int64, ACL_UINT8: np.uint8,
            ACL_UINT16: np.uint16, ACL_UINT32: np.uint32, ACL_UINT64: np.uint64, ACL_BOOL: np.bool_,
            ACL_BF16: ml_dtypes.bfloat16}[code]


class Acl:
    """Thin ctypes wrapper over the simulator's ACL C API (one per child process)."""

    def __init__(self):
        import cann_ep.sim as sim
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
            "aclGetRecentErrMsg": (ctypes.c_char_p, []), "aclrtGetSocName": (ctypes.c_char_p, []),
            "aclsimGetStat": (i64, [ctypes.c_char_p]), "aclsimFailNextOp": (None, [ctypes.c_char_p, i32]),
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
    def op(self, op_type: str, inputs, outputs, attrs=None, stream=None):
        """Runs one op. inputs: arrays (copied to device) or (acl_dtype, dims, ptr, nbytes);
        outputs: (acl_dtype, dims). Returns (rc, message, [output arrays or None])."""
        descs_in, bufs_in, descs_out, bufs_out, out_ptrs, keep = [], [], [], [], [], []
        attr = self.lib.aclopCreateAttr()
        for name, value in (attrs or {}).items():
            if isinstance(value, bool):
                self.lib.aclopSetAttrBool(attr, name.encode(), int(value))
            elif isinstance(value, int):
                self.lib.aclopSetAttrInt(attr, name.encode(), value)
            elif isinstance(value, float):
                self.lib.aclopSetAttrFloat(attr, name.encode(), value)
            else:
                arr = (ctypes.c_int64 * len(value))(*value)
                self.lib.aclopSetAttrListInt(attr, name.encode(), len(value), arr)
        device_in = []
        for x in inputs:
            if isinstance(x, np.ndarray):
                dt, dims, ptr, nbytes = acl_dtype(x.dtype), list(x.shape), self.to_device(x), x.nbytes
                device_in.append(ptr)
            else:
                dt, dims, ptr, nbytes = x
            d = (ctypes.c_int64 * max(len(dims), 1))(*dims)
            descs_in.append(self.lib.aclCreateTensorDesc(dt, len(dims), d, ACL_FORMAT_ND))
            bufs_in.append(self.lib.aclCreateDataBuffer(ptr, nbytes))
        for dt, dims in outputs:
            n = int(np.prod(dims)) if dims else 1
            nbytes = n * np.dtype(numpy_dtype(dt)).itemsize
            ptr = self.malloc(max(nbytes, 1))
            out_ptrs.append((ptr, dims, dt))
            d = (ctypes.c_int64 * max(len(dims), 1))(*dims)
            descs_out.append(self.lib.aclCreateTensorDesc(dt, len(dims), d, ACL_FORMAT_ND))
            bufs_out.append(self.lib.aclCreateDataBuffer(ptr, nbytes))
        arr = lambda xs: (ctypes.c_void_p * max(len(xs), 1))(*xs)
        rc = self.op_lib.aclopCompileAndExecute(op_type.encode(), len(inputs), arr(descs_in), arr(bufs_in),
                                                len(outputs), arr(descs_out), arr(bufs_out), attr, 0, 0, None,
                                                stream)
        msg = self.err()
        results = [None] * len(outputs)
        if rc == 0:
            assert self.lib.aclrtSynchronizeStream(stream) == 0, self.err()
            results = [self.from_device(p, dims, numpy_dtype(dt)) for p, dims, dt in out_ptrs]
        for h in descs_in + descs_out:
            self.lib.aclDestroyTensorDesc(h)
        for h in bufs_in + bufs_out:
            self.lib.aclDestroyDataBuffer(h)
        self.lib.aclopDestroyAttr(attr)
        for p in device_in + [p for p, _, _ in out_ptrs]:
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


def _pack(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def run_ops(tmp_dir, cases, **env):
    """Runs single ops in one child process.

    cases: list of (op_type, [input arrays], [(acl_dtype, dims)], attrs or None).
    Returns a list of (rc, message, [output arrays]) in the same order.
    """
    tmp_dir = Path(tmp_dir)
    arrays, spec = {}, []
    for ci, (op, ins, outs, attrs) in enumerate(cases):
        names = []
        for ii, a in enumerate(ins):
            key = f"c{ci}_i{ii}"
            arrays[key] = _pack(a)
            names.append([key, acl_dtype(a.dtype), list(a.shape)])
        spec.append([op, names, [[d, list(s)] for d, s in outs], attrs or {}])
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
        for ci, (op, names, outs, attrs) in enumerate(spec):
            ins = [np.frombuffer(data[k].tobytes(), numpy_dtype(code)).reshape(shape) for k, code, shape in names]
            rc, msg, ys = acl.op(op, ins, [tuple(o) for o in outs], attrs)
            for oi, y in enumerate(ys):
                if y is not None:
                    out[f"c{{ci}}_o{{oi}}"] = _pack(y)
            result.append([rc, msg])
        np.savez(d / "ops_out.npz", **out)
    """, **env)
    data = np.load(tmp_dir / "ops_out.npz")
    res = []
    for ci, ((rc, msg), (_, _, outs, _)) in enumerate(zip(result, cases)):
        ys = []
        for oi, (code, dims) in enumerate(outs):
            key = f"c{ci}_o{oi}"
            ys.append(np.frombuffer(data[key].tobytes(), numpy_dtype(code)).reshape(dims) if key in data else None)
        res.append((rc, msg, ys))
    return res
