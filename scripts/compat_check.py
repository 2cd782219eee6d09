#!/usr/bin/env python3
"""Compatibility check of the installed ort-ops wheel against the ONNX Runtime of this environment.

Run it with the Python of an environment where the wheel (and, unless checking the base install,
``onnxruntime`` or ``onnxruntime-cann``) is installed; it prints ONE JSON line with the results
(``scripts/compat_matrix.sh`` runs it in throwaway venvs and makes docs/compatibility.md's table):

    python scripts/compat_check.py [--name NAME] [--mode auto|base|runtime] [--out FILE]

Independent of the test suite: the expectations are written here (an own NumPy formula of EluGrad,
cross-checked against ``ort_ops.reference.elu_grad``). Each check runs in its own child process, so
that a crash of one (a segfault in the native library on some runtime) is recorded as that check's
result and the others still run. A check's status is ``pass``, ``fail`` (with the error text),
``skip`` (not applicable here, with the reason) or ``crash`` (the child died; exit status and the
tail of its stderr).

Checks (``runtime`` mode: onnxruntime importable; ``base`` mode: the install without it):
  exit            ``import ort_ops`` (schemas registered, shape inference run) in a fresh process
                  that exits with status 0 within EXIT_TIMEOUT seconds (onnx 1.19 hung at exit, 1.20-1.22
                  segfaulted there while ort_ops left Python inference functions in onnx's registry)
  import          ort_ops, rewrite (and cann_ep) import from the installed wheel, not a checkout
  schema          onnx.defs.has("EluGrad", 1, "ai.ortops") after ``import ort_ops``; with onnx >= 1.19
                  (Python inference functions) shape inference types EluGrad's output
  reference       ort_ops.reference.elu_grad equals this script's formula bit for bit
  fuse            rewrite.fuse_elu_grad fuses a small ELU training graph (and, with a runtime,
                  the fused model gives the original's dX bit for bit on ONNX Runtime)
  api             registration works; the C API version the library negotiated
                  (OrtOpsApiVersion) is min(runtime's, the library headers' API); IR version used
  float32/float16/bfloat16
                  EluGrad on the CPU EP bit-exact to the formula: alpha 1.0 and 0.5, shapes 0-D to
                  2^20 elements (odd lengths, empty), 1 and 2 intra-op threads; bfloat16 arrays fed
                  and fetched through ort_ops.ort_io.run
  bfloat16_cast   the same bfloat16 cases with float32 graph I/O and Cast nodes around EluGrad:
                  the bfloat16 kernel without ort_io (tells a kernel failure from an ort_io one)
  no_runtime      (base) onnxruntime is really absent; the native library is shipped all the same
  register_twice  ort_ops.register twice on one SessionOptions: sessions still work
  shape_mismatch  grads [4, 2] vs activations [4, 3]: an error naming both shapes; session usable
  cann            onnxruntime-cann only: the CANN EP on the ACL simulator, bit-exact, and ORT's
                  profile shows EluGrad on CANNExecutionProvider
"""

from __future__ import annotations

import os

# ORT >= 1.29: its telemetry thread can crash the process at exit
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
import traceback

# ORT_API_VERSION of the headers the wheel's library was built with (scripts/fetch_ort_headers.sh:
# Debian's libonnxruntime-dev, API 21). The library asks for min(this, the runtime's newest).
HEADER_API = int(os.environ.get("COMPAT_HEADER_API", "21"))
MIN_API = 17
PROVIDER_CANN = "CANNExecutionProvider"
SHAPES = [(), (1,), (17,), (1001,), (3, 5, 7), (0,), (1, 0, 4), (1 << 20,), ((1 << 20) + 3,)]
CANN_SHAPES = [(), (1001,), (3, 5, 7), (1 << 20,)]
ALPHAS = (1.0, 0.5)
THREADS = (1, 2)
EXIT_TIMEOUT = 60
RUNTIME_CHECKS = ["exit", "import", "schema", "reference", "fuse", "api", "float32", "float16", "bfloat16",
                  "bfloat16_cast", "register_twice", "shape_mismatch", "cann"]
BASE_CHECKS = ["exit", "import", "schema", "reference", "fuse", "no_runtime"]


class Skip(Exception):
    """The check does not apply in this environment."""


# ---------------------------------------------------------------------------------------------
# helpers (child side)

_state: dict = {"ir": None, "ir_note": None}


def np_dtype(name):
    import ml_dtypes
    import numpy as np

    return {"float32": np.dtype(np.float32), "float16": np.dtype(np.float16),
            "bfloat16": np.dtype(ml_dtypes.bfloat16)}[name]


def formula(grads, activations, alpha, dtype):
    """EluGrad written out independently: in float32, strict less-than, one cast back."""
    import numpy as np

    g = np.asarray(grads).astype(np.float32)
    a = np.asarray(activations).astype(np.float32)
    with np.errstate(all="ignore"):
        y = np.where(a < np.float32(0), g * (a + np.float32(alpha)), g)
    return np.asarray(y, dtype=np.float32).astype(dtype)


def make_inputs(shape, dtype, seed, alpha=1.0):
    """Finite (never NaN) grads and activations of ``dtype``: random values over several decades,
    with -0.0, 0.0, -alpha, tiny and large values (products that overflow float16) mixed in."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    a = (rng.uniform(-4, 4, n) * 10.0 ** rng.integers(-3, 3, n)).astype(np.float32)
    g = (rng.uniform(-4, 4, n) * 10.0 ** rng.integers(-3, 3, n)).astype(np.float32)
    special_a = np.array([-0.0, 0.0, -alpha, -1.0, -1e-3, -1e-40, 1e-40, -3000.0, 3000.0, -0.5],
                         np.float32)
    special_g = np.array([1.5, -2.0, 0.0, -0.0, 7.0, 1e-5, -3.0, 60000.0, -60000.0, 1e-40],
                         np.float32)
    k = min(n, special_a.size)
    if n >= 2 * special_a.size:
        a[:k], g[:k] = special_a[:k], special_g[:k]
        a[-k:], g[-k:] = special_a[::-1][:k], special_g[:k]
    if not shape:
        a[0], g[0] = -0.75, 1.3
    dt = np_dtype(dtype)
    return g.reshape(shape).astype(dt), a.reshape(shape).astype(dt)


def bits_equal(actual, expected) -> str | None:
    """None when equal bit for bit; else a description of the first difference."""
    import numpy as np

    actual = np.asarray(actual)
    if actual.dtype != expected.dtype or actual.shape != expected.shape:
        return (f"got {actual.dtype}{list(actual.shape)}, expected "
                f"{expected.dtype}{list(expected.shape)}")
    width = {2: np.uint16, 4: np.uint32}[expected.dtype.itemsize]
    x = np.ascontiguousarray(actual).view(width).ravel()
    y = np.ascontiguousarray(expected).view(width).ravel()
    diff = np.flatnonzero(x != y)
    if diff.size == 0:
        return None
    i = int(diff[0])
    return (f"{diff.size} of {x.size} elements differ; first at flat index {i}: got bits "
            f"0x{int(x[i]):0{2 * expected.dtype.itemsize}x}, expected 0x{int(y[i]):0{2 * expected.dtype.itemsize}x}")


def ort_minor() -> int:
    import onnxruntime as ort

    return int(ort.__version__.split(".")[1])


def set_ir(model, ir):
    model.ir_version = ir
    return model


def new_options(threads=None):
    import onnxruntime as ort

    import ort_ops

    so = ort.SessionOptions()
    if threads is not None:
        so.intra_op_num_threads = threads
    return ort_ops.register(so)


def cpu_session(model, so=None, threads=None):
    """A CPU session of ``model`` with the library registered, at the highest IR version the runtime
    reads: the project's (ort_ops.domain.IR_VERSION, 10), else 9 (ORT < 1.18 reads IR <= 9)."""
    import onnxruntime as ort

    from ort_ops.domain import IR_VERSION

    if so is None:
        so = new_options(threads)
    tries = [_state["ir"]] if _state["ir"] is not None else sorted({IR_VERSION, 9}, reverse=True)
    for ir in tries:
        try:
            session = ort.InferenceSession(set_ir(model, ir).SerializeToString(), so,
                                           providers=["CPUExecutionProvider"])
        except Exception as error:
            if "Unsupported model IR version" in str(error) and ir != tries[-1]:
                _state["ir_note"] = f"IR {ir} refused: {first_line(error)}"
                continue
            raise
        _state["ir"] = ir
        return session
    raise AssertionError("unreachable")


def first_line(error, limit=400) -> str:
    text = " ".join(str(error).split())
    return text[:limit] + ("..." if len(text) > limit else "")


def run_y(session, grads, activations, dtype):
    """EluGrad's output: bfloat16 through ort_ops.ort_io.run, float32/float16 through session.run."""
    if dtype == "bfloat16":
        from ort_ops import ort_io

        return ort_io.run(session, {"grads": grads, "activations": activations})[0]
    return session.run(None, {"grads": grads, "activations": activations})[0]


def common_info() -> dict:
    info = {}
    if _state["ir"] is not None:
        info["ir_version"] = _state["ir"]
    if _state["ir_note"]:
        info["ir_note"] = _state["ir_note"]
    try:
        import ctypes

        import ort_ops

        fn = ctypes.CDLL(ort_ops.get_library_path()).OrtOpsApiVersion
        fn.restype = ctypes.c_uint32
        if fn():
            info["api_version"] = int(fn())
    except Exception:
        pass
    return info


# ---------------------------------------------------------------------------------------------
# checks (each returns a detail string; raises AssertionError/any exception to fail, Skip to skip)

def check_import(info, with_runtime):
    import ort_ops
    from ort_ops import rewrite

    paths = {"ort_ops": ort_ops.__file__, "rewrite": rewrite.__file__}
    try:
        from ort_ops import cann_ep

        paths["cann_ep"] = cann_ep.__file__
    except ImportError as error:
        if with_runtime:
            raise AssertionError(f"from ort_ops import cann_ep: {error}") from error
        # the base install: cann_ep is the CANN EP's helper package and needs onnxruntime(-cann)
        info["cann_ep_import"] = f"{type(error).__name__}: {error}"
    lib = ort_ops.get_library_path()
    paths["library"] = lib
    info["paths"] = paths
    import importlib.metadata

    version = getattr(ort_ops, "__version__", None)
    info["ort_ops_version"] = version
    dist = importlib.metadata.version("ort-ops")
    assert version == dist, f"ort_ops.__version__ {version!r} but the installed distribution is ort-ops {dist}"
    prefix = os.path.realpath(sys.prefix)
    outside = [k for k, p in paths.items() if not os.path.realpath(p).startswith(prefix + os.sep)]
    assert not outside, f"not imported from this environment ({prefix}): " + ", ".join(
        f"{k}={paths[k]}" for k in outside)
    detail = f"ort_ops {version} from {os.path.dirname(ort_ops.__file__)}"
    if "cann_ep_import" in info:
        detail += f"; (import cann_ep without onnxruntime: {info['cann_ep_import']})"
    return detail


EXIT_PROBE = """
import onnx, ort_ops
from ort_ops.model_builder import make_elu_grad_model
model = make_elu_grad_model("float32", (2, 3), 0.5)
model.graph.output[0].type.tensor_type.ClearField("shape")
onnx.shape_inference.infer_shapes(model, strict_mode=True)
print("imported", onnx.__version__, flush=True)
"""


def check_exit(info):
    import onnx

    info["onnx_version"] = onnx.__version__
    try:
        proc = subprocess.run([sys.executable, "-c", EXIT_PROBE], capture_output=True, text=True,
                              timeout=EXIT_TIMEOUT)
    except subprocess.TimeoutExpired as error:
        out = error.stdout.decode(errors="replace") if isinstance(error.stdout, bytes) else (error.stdout or "")
        raise AssertionError(f"onnx {onnx.__version__}: `import ort_ops` process still running after "
                             f"{EXIT_TIMEOUT} s (stdout: {out.strip()!r})") from None
    assert proc.returncode == 0, (f"onnx {onnx.__version__}: `import ort_ops` process exited {proc.returncode} "
                                  f"(stdout {proc.stdout.strip()!r}; stderr: {tail(proc.stderr)})")
    assert proc.stdout.startswith("imported"), f"stdout {proc.stdout!r}"
    return f"onnx {onnx.__version__}: import, shape inference, exit status 0"


def check_schema(info):
    import onnx

    import ort_ops  # noqa: F401  (registers the schemas)
    from ort_ops.model_builder import make_elu_grad_model
    from ort_ops.schemas import HAS_PYTHON_INFERENCE

    assert onnx.defs.has("EluGrad", 1, "ai.ortops"), 'onnx.defs.has("EluGrad", 1, "ai.ortops") is False'
    schema = onnx.defs.get_schema("EluGrad", 1, "ai.ortops")
    inputs = [i.name for i in schema.inputs]
    assert inputs == ["grads", "activations"], f"schema inputs {inputs}"
    info["onnx_version"] = onnx.__version__
    model = make_elu_grad_model("float16", (2, 3), 0.5)
    model.graph.output[0].type.tensor_type.ClearField("shape")
    model.graph.output[0].type.tensor_type.elem_type = 0
    out = onnx.shape_inference.infer_shapes(model, strict_mode=True).graph.output[0].type.tensor_type
    got = (out.elem_type, [d.dim_value for d in out.shape.dim] if out.HasField("shape") else None)
    if HAS_PYTHON_INFERENCE:
        assert got == (onnx.TensorProto.FLOAT16, [2, 3]), (f"shape inference of EluGrad gave (elem_type, dims) {got}, "
                                                           "expected float16 (10), [2, 3]")
        inference = "shape inference: float16 [2, 3]"
    else:
        inference = "no Python shape inference in this onnx (OpSchema.set_type_and_shape_inference_function)"
    return f"onnx {onnx.__version__}: EluGrad-1 registered, inputs {inputs}; {inference}"


def check_reference(info):
    from ort_ops.reference import elu_grad

    count = 0
    for dtype in ("float32", "float16", "bfloat16"):
        for alpha in ALPHAS:
            for shape in [(), (1001,), (3, 5, 7), (1 << 16,)]:
                g, a = make_inputs(shape, dtype, seed=count, alpha=alpha)
                diff = bits_equal(elu_grad(g, a, alpha), formula(g, a, alpha, g.dtype))
                assert diff is None, f"{dtype} alpha={alpha} shape={list(shape)}: {diff}"
                count += 1
    return f"{count} cases equal"


def small_training_graph(alpha=0.5):
    """Y = Elu(X); dX = Where(Less(Y, 0), dY * (Y + alpha), dY): EluGrad's own formula, which the
    strict fuse must replace."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    shape = [4, 6]
    nodes = [
        helper.make_node("Elu", ["X"], ["Y"], name="elu", alpha=alpha),
        helper.make_node("Less", ["Y", "zero"], ["neg"], name="less"),
        helper.make_node("Add", ["Y", "alpha"], ["shifted"], name="add"),
        helper.make_node("Mul", ["dY", "shifted"], ["prod"], name="mul"),
        helper.make_node("Where", ["neg", "prod", "dY"], ["dX"], name="where"),
    ]
    inits = [numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
             numpy_helper.from_array(np.array(alpha, np.float32), "alpha")]
    graph = helper.make_graph(
        nodes, "elu_step",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in ("X", "dY")],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in ("Y", "dX")], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 10
    onnx.checker.check_model(model)
    return model


def check_fuse(info, with_runtime):
    import numpy as np
    import onnx

    from ort_ops import rewrite

    model = small_training_graph(0.5)
    report = rewrite.RewriteReport()
    fused = rewrite.fuse_elu_grad(model, strict=True, report=report)
    ops = [(n.domain, n.op_type) for n in fused.graph.node]
    assert ("ai.ortops", "EluGrad") in ops, f"no EluGrad after fuse: {ops}; report: {report.summary()}"
    assert not any(op == "Where" for _, op in ops), f"Where left after fuse: {ops}"
    onnx.checker.check_model(fused)
    detail = f"fused to {[op for _, op in ops]}"
    if not with_runtime:
        return detail
    rng = np.random.default_rng(1)
    feeds = {"X": rng.uniform(-3, 3, (4, 6)).astype(np.float32),
             "dY": rng.uniform(-3, 3, (4, 6)).astype(np.float32)}
    original = cpu_session(model).run(["dX"], feeds)[0]
    got = cpu_session(fused).run(["dX"], feeds)[0]
    diff = bits_equal(got, original)
    assert diff is None, f"fused model's dX differs from the original's on ORT: {diff}"
    return detail + "; ORT: fused dX == original dX bit for bit"


def check_no_runtime(info):
    import importlib.util

    spec = importlib.util.find_spec("onnxruntime")
    assert spec is None, f"onnxruntime is installed here ({spec.origin}) in a base-install check"
    try:
        import onnxruntime  # noqa: F401
    except ImportError as error:
        message = f"{type(error).__name__}: {error}"
    else:
        raise AssertionError("import onnxruntime worked in a base-install check")
    import ort_ops

    lib = ort_ops.get_library_path()
    assert os.path.isfile(lib), lib
    return f"no onnxruntime ({message}); the native library is shipped: {os.path.basename(lib)}"


def check_api(info):
    import ctypes

    import numpy as np
    import onnxruntime as ort

    import ort_ops
    from ort_ops.model_builder import make_elu_grad_model

    fn = ctypes.CDLL(ort_ops.get_library_path()).OrtOpsApiVersion
    fn.restype = ctypes.c_uint32
    before = int(fn())
    so = new_options()
    after_register = int(fn())
    session = cpu_session(make_elu_grad_model("float32", (4, 2)), so=so)
    g, a = make_inputs((4, 2), "float32", 0)
    diff = bits_equal(session.run(None, {"grads": g, "activations": a})[0], formula(g, a, 1.0, np.float32))
    assert diff is None, f"EluGrad (4, 2) float32: {diff}"
    api = int(fn())
    minor = ort_minor()
    expected = min(minor, HEADER_API)
    info.update(api_version=api, api_expected=expected, ort_version=ort.__version__,
                providers=ort.get_available_providers(), cpu_loops=ort_ops.library.elu_grad_cpu_loops())
    assert before == 0, f"OrtOpsApiVersion() was {before} before any registration (expected 0)"
    assert after_register == api, f"OrtOpsApiVersion() {after_register} after register, {api} after the session"
    assert api == expected, (f"negotiated API {api}, expected {expected} = min(runtime {ort.__version__} "
                             f"-> API {minor}, headers API {HEADER_API})")
    return f"API {api} (runtime offers {minor}, headers {HEADER_API}); IR {_state['ir']}; loops {info['cpu_loops']}"


def check_dtype(info, dtype):
    from ort_ops.model_builder import make_elu_grad_model
    from ort_ops.reference import elu_grad

    cases = 0
    for threads in THREADS:
        for alpha in ALPHAS:
            for i, shape in enumerate(SHAPES):
                session = cpu_session(make_elu_grad_model(dtype, shape, alpha), threads=threads)
                g, a = make_inputs(shape, dtype, seed=100 * i + threads, alpha=alpha)
                expected = formula(g, a, alpha, g.dtype)
                where = f"{dtype} alpha={alpha} shape={list(shape)} threads={threads}"
                diff = bits_equal(elu_grad(g, a, alpha), expected)
                assert diff is None, f"ort_ops.reference.elu_grad differs from the formula, {where}: {diff}"
                diff = bits_equal(run_y(session, g, a, dtype), expected)
                assert diff is None, f"{where}: {diff}"
                cases += 1
    return f"{cases} cases bit-exact (shapes {[list(s) for s in SHAPES]}, alpha {ALPHAS}, threads {THREADS})"


def cast_wrapped_model(dtype, shape, alpha):
    """float32 graph inputs -> Cast(dtype) -> EluGrad -> Cast(float32): the kernel of ``dtype``
    without feeding ``dtype`` arrays from Python (ort_ops.ort_io needs ORT >= 1.20 for bfloat16)."""
    from onnx import TensorProto, helper

    from ort_ops import dtypes
    from ort_ops.model_builder import make_model

    elem = dtypes.onnx_type(dtype)
    nodes = [helper.make_node("Cast", ["grads"], ["g"], name="cast_g", to=elem),
             helper.make_node("Cast", ["activations"], ["a"], name="cast_a", to=elem),
             helper.make_node("EluGrad", ["g", "a"], ["y_t"], name="EluGrad", domain="ai.ortops", alpha=alpha),
             helper.make_node("Cast", ["y_t"], ["y"], name="cast_y", to=TensorProto.FLOAT)]
    graph = helper.make_graph(
        nodes, "elu_grad_cast",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in ("grads", "activations")],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    return make_model(graph)


def check_dtype_cast(info, dtype):
    import numpy as np

    cases = 0
    for threads in THREADS:
        for alpha in ALPHAS:
            for i, shape in enumerate(SHAPES):
                session = cpu_session(cast_wrapped_model(dtype, shape, alpha), threads=threads)
                g, a = make_inputs(shape, dtype, seed=100 * i + threads, alpha=alpha)
                expected = formula(g, a, alpha, g.dtype).astype(np.float32)  # exact widening
                y = session.run(None, {"grads": g.astype(np.float32), "activations": a.astype(np.float32)})[0]
                diff = bits_equal(y, expected)
                where = f"{dtype} (Cast in graph) alpha={alpha} shape={list(shape)} threads={threads}"
                assert diff is None, f"{where}: {diff}"
                cases += 1
    return f"{cases} cases bit-exact with float32 I/O and Cast nodes around EluGrad({dtype})"


def check_register_twice(info):
    import numpy as np

    import ort_ops
    from ort_ops.model_builder import make_elu_grad_model

    so = new_options()
    ort_ops.register(so)
    model = make_elu_grad_model("float32", (3, 5), 0.5)
    for n in range(2):  # two sessions from the same twice-registered options
        session = cpu_session(model, so=so)
        g, a = make_inputs((3, 5), "float32", 7, alpha=0.5)
        diff = bits_equal(session.run(None, {"grads": g, "activations": a})[0], formula(g, a, 0.5, np.float32))
        assert diff is None, f"session {n + 1}: {diff}"
    return "register(so) x2, then 2 sessions from those options: both bit-exact"


def check_shape_mismatch(info):
    import numpy as np

    from ort_ops.model_builder import make_elu_grad_model

    session = cpu_session(make_elu_grad_model("float32", ["n", "m"]))
    g, _ = make_inputs((4, 2), "float32", 1)
    _, a = make_inputs((4, 3), "float32", 2)
    try:
        session.run(None, {"grads": g, "activations": a})
    except Exception as error:
        message = str(error)
    else:
        raise AssertionError("grads [4, 2] with activations [4, 3] ran without an error")
    info["message"] = first_line(message, 600)
    assert "[4, 2]" in message and "[4, 3]" in message, f"error does not name both shapes: {first_line(message)}"
    g, a = make_inputs((4, 2), "float32", 3)
    diff = bits_equal(session.run(None, {"grads": g, "activations": a})[0], formula(g, a, 1.0, np.float32))
    assert diff is None, f"session unusable after the error: {diff}"
    return f"error: {first_line(message, 200)}"


def check_cann(info):
    import onnxruntime as ort

    if PROVIDER_CANN not in ort.get_available_providers():
        raise Skip(f"no {PROVIDER_CANN} in this onnxruntime ({ort.__version__})")
    from ort_ops import cann_ep, ort_io
    from ort_ops.model_builder import make_elu_grad_model

    simulated = cann_ep.use_simulator()
    info["simulator"] = simulated
    # the IR version this runtime reads, found on the CPU EP first
    cpu_session(make_elu_grad_model("float32", (2,)))
    cases = 0
    with tempfile.TemporaryDirectory(prefix="compat_cann_") as tmp:
        for dtype in ("float32", "float16", "bfloat16"):
            for alpha in ALPHAS:
                for i, shape in enumerate(CANN_SHAPES):
                    threads = THREADS[(i + cases) % len(THREADS)]
                    so = ort.SessionOptions()
                    so.intra_op_num_threads = threads
                    model = set_ir(make_elu_grad_model(dtype, shape, alpha), _state["ir"])
                    session = cann_ep.session(model, session_options=so,
                                              profile_prefix=os.path.join(tmp, f"p{cases}"))
                    g, a = make_inputs(shape, dtype, seed=50 + i, alpha=alpha)
                    y = ort_io.run(session, {"grads": g, "activations": a})[0]
                    where = f"{dtype} alpha={alpha} shape={list(shape)} threads={threads}"
                    diff = bits_equal(y, formula(g, a, alpha, g.dtype))
                    assert diff is None, f"CANN EP {where}: {diff}"
                    runs = {(r.op_type, r.provider) for r in cann_ep.node_runs(session) if r.op_type == "EluGrad"}
                    assert runs == {("EluGrad", PROVIDER_CANN)}, f"CANN EP {where}: EluGrad ran on {sorted(runs)}"
                    cases += 1
    return (f"{cases} cases on {PROVIDER_CANN} ({'ACL simulator' if simulated else 'real CANN'}): bit-exact, "
            f"profile shows EluGrad on {PROVIDER_CANN}")


def run_check(name: str, mode: str) -> dict:
    info: dict = {}
    started = time.monotonic()
    try:
        if name == "exit":
            detail = check_exit(info)
        elif name == "import":
            detail = check_import(info, with_runtime=mode == "runtime")
        elif name == "schema":
            detail = check_schema(info)
        elif name == "reference":
            detail = check_reference(info)
        elif name == "fuse":
            detail = check_fuse(info, with_runtime=mode == "runtime")
        elif name == "no_runtime":
            detail = check_no_runtime(info)
        elif name == "api":
            detail = check_api(info)
        elif name in ("float32", "float16", "bfloat16"):
            detail = check_dtype(info, name)
        elif name == "bfloat16_cast":
            detail = check_dtype_cast(info, "bfloat16")
        elif name == "register_twice":
            detail = check_register_twice(info)
        elif name == "shape_mismatch":
            detail = check_shape_mismatch(info)
        elif name == "cann":
            detail = check_cann(info)
        else:
            raise ValueError(f"unknown check {name!r}")
        status = "pass"
    except Skip as why:
        status, detail = "skip", str(why)
    except Exception as error:
        status = "fail"
        detail = f"{type(error).__name__}: {first_line(error, 1200)}"
        traceback.print_exc(file=sys.stderr)
    for key, value in common_info().items():
        info.setdefault(key, value)
    return {"status": status, "detail": detail, "info": info, "seconds": round(time.monotonic() - started, 2)}


# ---------------------------------------------------------------------------------------------
# parent side

def environment(mode: str) -> dict:
    import importlib.metadata as md

    env = {"python": platform.python_version(), "prefix": sys.prefix, "mode": mode}
    for dist in ("onnxruntime", "onnxruntime-cann", "onnxruntime-training-cpu", "onnx", "numpy", "ml-dtypes",
                 "onnx-graphsurgeon", "protobuf", "ort-ops"):
        try:
            env.setdefault("packages", {})[dist] = md.version(dist)
        except md.PackageNotFoundError:
            pass
    runtimes = [d for d in ("onnxruntime", "onnxruntime-cann", "onnxruntime-training-cpu")
                if d in env.get("packages", {})]
    env["runtime"] = " + ".join(f"{d} {env['packages'][d]}" for d in runtimes) or "none"
    return env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--name", default=None, help="name of this matrix entry (recorded)")
    parser.add_argument("--mode", choices=("auto", "base", "runtime"), default="auto")
    parser.add_argument("--only", action="append", help="run only these checks (repeatable)")
    parser.add_argument("--out", help="also write the JSON line to this file")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per check")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-result", help=argparse.SUPPRESS)
    args = parser.parse_args()

    mode = args.mode
    if mode == "auto":
        import importlib.util

        mode = "runtime" if importlib.util.find_spec("onnxruntime") else "base"

    if args.child:
        result = run_check(args.child, mode)
        with open(args.child_result, "w", encoding="utf-8") as f:
            json.dump(result, f)
        return 0

    started = time.monotonic()
    checks = args.only or (RUNTIME_CHECKS if mode == "runtime" else BASE_CHECKS)
    child_env = dict(os.environ)
    for var in ("ORTOPS_LIBRARY", "ACLSIM_LIBRARY_DIR", "ORTOPS_FORCE_PORTABLE", "PYTHONPATH"):
        child_env.pop(var, None)  # test what the wheel installs, nothing else
    child_env["ORT_DISABLE_TELEMETRY"] = "1"
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="compat_check_") as tmp:
        for name in checks:
            print(f"[compat_check] {args.name or ''} {name} ...", file=sys.stderr, flush=True)
            out = os.path.join(tmp, f"{name}.json")
            cmd = [sys.executable, os.path.abspath(__file__), "--mode", mode, "--child", name,
                   "--child-result", out]
            t0 = time.monotonic()
            try:
                proc = subprocess.run(cmd, cwd=tmp, env=child_env, capture_output=True, text=True,
                                      timeout=args.timeout)
                rc, stderr = proc.returncode, proc.stderr
            except subprocess.TimeoutExpired as error:
                err = error.stderr or ""
                stderr = err.decode(errors="replace") if isinstance(err, bytes) else err
                rc = f"timeout ({args.timeout} s)"
            if os.path.isfile(out):
                with open(out, encoding="utf-8") as f:
                    result = json.load(f)
                if rc != 0:  # wrote its result, then died (at exit)
                    result["status"] = "crash" if result["status"] == "pass" else result["status"]
                    result["detail"] += f" [child exited {rc} after writing its result: {tail(stderr)}]"
            else:
                result = {"status": "crash", "detail": f"child exited {rc} without a result; stderr: {tail(stderr)}",
                          "info": {}, "seconds": round(time.monotonic() - t0, 2)}
            if result["status"] not in ("pass", "skip"):
                sys.stderr.write(stderr[-4000:])
            print(f"[compat_check] {args.name or ''} {name}: {result['status']} ({result['seconds']} s) "
                  f"{result['detail'][:300]}", file=sys.stderr, flush=True)
            results[name] = result

    summary = environment(mode)
    summary["name"] = args.name
    for key in ("api_version", "api_expected", "ir_version", "ort_version", "providers", "cpu_loops",
                "onnx_version"):
        values = {json.dumps(r["info"][key]) for r in results.values() if key in r["info"]}
        if len(values) == 1:
            summary[key] = json.loads(values.pop())
        elif values:
            summary[key] = sorted(json.loads(v) for v in values)  # should not happen: recorded as is
    notes = sorted({r["info"]["ir_note"] for r in results.values() if "ir_note" in r["info"]})
    if notes:
        summary["ir_note"] = notes[0]
    summary["checks"] = {name: {k: r[k] for k in ("status", "detail", "seconds")} for name, r in results.items()}
    if "shape_mismatch" in results and "message" in results["shape_mismatch"]["info"]:
        summary["shape_mismatch_message"] = results["shape_mismatch"]["info"]["message"]
    summary["ok"] = all(r["status"] in ("pass", "skip") for r in results.values())
    summary["seconds"] = round(time.monotonic() - started, 1)
    line = json.dumps(summary, sort_keys=False)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(line + "\n")
    print(line, flush=True)
    return 0 if summary["ok"] else 1


def tail(text: str, limit: int = 600) -> str:
    lines = [ln for ln in (text or "").strip().splitlines() if ln.strip()]
    return first_line(" | ".join(lines[-6:])[-limit:], limit) if lines else "(no stderr)"


if __name__ == "__main__":
    sys.exit(main())
