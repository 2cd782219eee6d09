"""Every kernel of the CANN EP's table that placement may leave to the EP runs on the simulator.

For each (op type, opset range, dtype) of :mod:`ort_ops.rewrite.placement.cann_ep_kernels` for which
``rewrite.placement.place.ep_runs`` is true, a one-node model at the range's first opset runs on a
CANN session (single-op mode, ``place=False`` so the EP's own kernel runs it) and is compared with
the CPU EP (ONNX's reference evaluator where the CPU EP has no kernel): exact for data movement and
exact arithmetic, else within ``ort_ops.tolerances``. The ACL op types the run executed (the
simulator's per-op-type counters) must be among those :mod:`ort_ops.rewrite.placement.ep_launches` says the
kernel launches, and the node must have run on the CANN EP. A kernel that cannot run is listed in
``NOT_RUN`` with the reason; one neither run nor listed fails ``test_every_kernel_is_covered``.
Known EP defects are the table :mod:`ort_ops.rewrite.placement.ep_defects`, checked both ways here: each of
``DEFECT_CASES`` must be flagged by ``defect_of`` and fail on the EP (strict xfail, the reason taken
from the table), and the generic cases and ``NEAR_MISSES`` must not be flagged and must match the
reference (so the table can be neither missing a defect seen here nor too broad on these). Kernels
that fail for another known reason are in ``KNOWN_FAILURES``.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ort_ops.rewrite.placement.cann_ep_kernels import KERNELS
from ort_ops.rewrite.placement.ep_defects import defect_of
from ort_ops.rewrite.placement.ep_launches import LAUNCHES
from ort_ops.rewrite.placement.place import _Values, ep_runs

ort = pytest.importorskip("onnxruntime")
if "CANNExecutionProvider" not in ort.get_available_providers():
    pytest.skip("needs the onnxruntime-cann wheel (.venv-cann)", allow_module_level=True)

from ort_ops import cann_ep  # noqa: E402
from ort_ops.cann_ep import sim  # noqa: E402
from ort_ops.domain import IR_VERSION  # noqa: E402
from ort_ops.tolerances import check, tolerance_of  # noqa: E402

pytestmark = pytest.mark.usefixtures("sim_dir")

_NP = {"float32": np.float32, "float16": np.float16, "float64": np.float64, "bfloat16": ml_dtypes.bfloat16,
       "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64, "uint8": np.uint8,
       "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64, "bool": np.bool_}
_ELEM = {name: helper.np_dtype_to_tensor_dtype(np.dtype(t)) for name, t in _NP.items()}

#: (op, first opset, dtype) -> why the kernel is not run here (checked: each entry must be a kernel
#: placement leaves to the EP, so the list cannot go stale silently)
NOT_RUN: dict[tuple[str, int, str], str] = {
    ("MatMul", 13, "bfloat16"): "onnxruntime's Python binding cannot feed or return bfloat16 arrays "
                                "(\"Numpy_type 256 can't be converted to MLDataType\")",
}


def kernels() -> list[tuple[str, int, int | None, str]]:
    """(op, first, last, dtype) of every kernel ``ep_runs`` says placement may leave to the EP."""
    out = []
    for op, entries in KERNELS.items():
        for first, last, dtypes in entries:
            for dtype in dtypes:
                concrete = "float32" if dtype == "any" else dtype
                if ep_runs(op, first, concrete):
                    out.append((op, first, last, concrete))
    return out


def _sample(rng, shape, dtype, positive=False, nonzero=False):
    t = _NP[dtype]
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if np.issubdtype(np.dtype(t), np.integer):
        info = np.iinfo(t)
        lo = 1 if (positive or nonzero) and info.min == 0 else (1 if positive else max(info.min, -9))
        x = rng.integers(lo, min(info.max, 9) + 1, shape).astype(t)
        if nonzero:
            x[x == 0] = 1
        return x
    x = rng.uniform(0.25, 3.0, shape) if positive else rng.uniform(-3.0, 3.0, shape)
    return x.astype(t)


_UNARY = {"Abs", "Ceil", "Cos", "Erf", "Exp", "Floor", "Log", "Neg", "Reciprocal", "Relu", "Round", "Sin", "Sqrt"}
_BINARY = {"Add", "Sub", "Mul", "Div"}
_EXACT = {"Abs", "Neg", "Relu", "Floor", "Ceil", "Round", "Cast", "Flatten", "Identity", "Reshape", "Transpose",
          "Dropout", "MaxPool", "GlobalMaxPool", "Add", "Sub", "Mul", "Div"}


def build(op: str, opset: int, dtype: str, rng) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """A one-node model of ``op`` at ``opset`` for ``dtype`` and its feeds (NCHW ops: rank 4)."""
    attrs: dict = {}
    inits: list[onnx.TensorProto] = []
    x4 = (2, 3, 4, 5)
    if op in _UNARY:
        feeds = {"x": _sample(rng, x4, dtype, positive=op in ("Log", "Sqrt", "Reciprocal"))}
    elif op in _BINARY:
        feeds = {"x": _sample(rng, x4, dtype), "b": _sample(rng, x4, dtype, nonzero=op == "Div")}
    elif op == "Cast":
        feeds = {"x": _sample(rng, x4, dtype)}
        attrs["to"] = TensorProto.FLOAT16 if dtype == "float32" else TensorProto.FLOAT
    elif op == "Conv":
        feeds = {"x": _sample(rng, (1, 2, 5, 5), dtype), "w": _sample(rng, (3, 2, 3, 3), dtype),
                 "bias": _sample(rng, (3,), dtype)}
        attrs.update(kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    elif op == "Gemm":
        feeds = {"a": _sample(rng, (3, 4), dtype), "b": _sample(rng, (4, 5), dtype), "c": _sample(rng, (5,), dtype)}
    elif op == "MatMul":
        feeds = {"a": _sample(rng, (3, 4), dtype), "b": _sample(rng, (4, 5), dtype)}
    elif op in ("AveragePool", "MaxPool"):
        feeds = {"x": _sample(rng, (2, 3, 6, 8), dtype)}
        attrs.update(kernel_shape=[2, 2], strides=[2, 2])
    elif op in ("GlobalAveragePool", "GlobalMaxPool"):
        feeds = {"x": _sample(rng, x4, dtype)}
    elif op == "BatchNormalization":
        feeds = {"x": _sample(rng, x4, dtype)}
        for name, positive in (("scale", False), ("bias", False), ("mean", False), ("var", True)):
            inits.append(numpy_helper.from_array(_sample(rng, (3,), dtype, positive=positive), name))
        attrs["epsilon"] = 1e-3
    elif op == "Dropout":
        feeds = {"x": _sample(rng, x4, dtype)}
    elif op == "Flatten":
        feeds = {"x": _sample(rng, x4, dtype)}
        attrs["axis"] = 2
    elif op == "Identity":
        feeds = {"x": _sample(rng, x4, dtype)}
    elif op == "Reshape":
        feeds = {"x": _sample(rng, x4, dtype)}
        if opset < 5:
            attrs["shape"] = [6, 20]
        else:
            inits.append(numpy_helper.from_array(np.array([6, -1], np.int64), "shape"))
    elif op == "Transpose":
        feeds = {"x": _sample(rng, x4, dtype)}
        attrs["perm"] = [0, 2, 3, 1]
    else:
        raise KeyError(f"no one-node case for {op}: add one to build() or list the kernel in NOT_RUN")
    inputs = list(feeds) + [t.name for t in inits]
    if op == "BatchNormalization":
        inputs = ["x", "scale", "bias", "mean", "var"]
    node = helper.make_node(op, inputs, ["y"], **attrs)
    graph = helper.make_graph([node], f"{op}_{opset}_{dtype}",
                              [helper.make_tensor_value_info(k, _ELEM[str(v.dtype)], v.shape)
                               for k, v in feeds.items()],
                              [helper.make_tensor_value_info("y", attrs.get("to", _ELEM[dtype]), None)],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(IR_VERSION, 10)
    return model, feeds


def reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    """The CPU EP's result; ONNX's reference evaluator where the CPU EP has no kernel."""
    try:
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        return sess.run(None, feeds)[0]
    except Exception:  # NOT_IMPLEMENTED: no CPU kernel for this type
        from onnx.reference import ReferenceEvaluator

        return np.asarray(ReferenceEvaluator(model).run(None, feeds)[0])


_PROFILE_DIR = tempfile.mkdtemp(prefix="ep_kernels_on_sim_")  # ORT's profile files (also of failed runs)
atexit.register(shutil.rmtree, _PROFILE_DIR, True)


def run_on_cann(model: onnx.ModelProto, feeds: dict[str, np.ndarray]):
    """(result, provider of the node, {ACL op type: count} the run executed)."""
    sess = cann_ep.session(model, place=False, profile_prefix=os.path.join(_PROFILE_DIR, "ep_kernel"))
    sess.run(None, feeds)  # a first run: one-time work (constant copies) out of the counted one
    before = sim.op_counts()
    y = sess.run(None, feeds)[0]
    after = sim.op_counts()
    runs = cann_ep.node_runs(sess)
    launched = {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}
    provider = next((r.provider for r in runs if r.op_type == model.graph.node[0].op_type), None)
    return y, provider, launched


#: (op, first opset, dtype) -> why the kernel fails on the simulator today (an EP defect or a gap of the
#: simulator outside this test's reach); test_known_failures_still_fail keeps the list honest
KNOWN_FAILURES: dict[tuple[str, int, str], str] = {}


def node_info(model: onnx.ModelProto):
    """The placement pass's NodeInfo of ``model``'s first node (what ``defect_of`` is asked)."""
    return _Values.of_model(model).info(model.graph.node[0], model.opset_import[0].version)


def _case_id(k):
    op, first, last, dtype = k
    return f"{op}-{first}-{last}-{dtype}"


@pytest.mark.parametrize("kernel", kernels(), ids=_case_id)
def test_kernel_runs_on_the_simulator(kernel):
    op, first, last, dtype = kernel
    key = (op, first, dtype)
    if key in NOT_RUN:
        pytest.skip(NOT_RUN[key])
    if key in KNOWN_FAILURES:
        pytest.xfail(KNOWN_FAILURES[key])  # (strictness: test_known_failures_still_fail)
    model, feeds = build(op, first, dtype, np.random.default_rng(abs(hash(_case_id(kernel))) % 2**32))
    assert defect_of(node_info(model)) is None, f"{op}-{first} {dtype}: the generic case hits a listed EP defect"
    want = reference(model, feeds)
    got, provider, launched = run_on_cann(model, feeds)
    assert provider == "CANNExecutionProvider", f"{op}-{first} {dtype} ran on {provider}, not the CANN EP"
    assert set(launched) <= set(LAUNCHES[op]), (
        f"{op}-{first} {dtype} launched {sorted(launched)}; ep_launches.LAUNCHES says {LAUNCHES[op]}")
    if LAUNCHES[op] and op not in ("Dropout",):
        assert launched, f"{op}-{first} {dtype} launched no CANN op; expected one of {LAUNCHES[op]}"
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    if op in _EXACT or np.issubdtype(want.dtype, np.integer) or want.dtype == np.bool_:
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8),
                                      err_msg=f"{op}-{first} {dtype}: not bit-exact against the reference")
    else:
        verdict = check(got, want, tolerance_of(str(want.dtype) if want.dtype != ml_dtypes.bfloat16 else "bfloat16"))
        assert verdict.ok, f"{op}-{first} {dtype}: {verdict.message or verdict}"


def test_known_failures_still_fail():
    """Each listed kernel still fails or differs (strict: a fixed one must leave the list)."""
    for (op, first, dtype), why in KNOWN_FAILURES.items():
        model, feeds = build(op, first, dtype, np.random.default_rng(0))
        try:
            got, _, _ = run_on_cann(model, feeds)
        except Exception:
            continue
        want = reference(model, feeds)
        assert not np.array_equal(got, want), f"{op}-{first} {dtype} now works; drop it from KNOWN_FAILURES ({why})"


def test_every_kernel_is_covered():
    """Every kernel placement leaves to the EP has a one-node case or a listed reason; every ONNX op
    of the table has an ep_launches entry; the lists name only such kernels."""
    runnable = {(op, first, dtype) for op, first, _, dtype in kernels()}
    for op, first, _, dtype in kernels():
        if (op, first, dtype) not in NOT_RUN:
            build(op, first, dtype, np.random.default_rng(0))  # KeyError: neither run nor listed
    assert set(NOT_RUN) <= runnable, sorted(set(NOT_RUN) - runnable)
    assert set(KNOWN_FAILURES) <= runnable, sorted(set(KNOWN_FAILURES) - runnable)
    assert set(LAUNCHES) == set(KERNELS), set(LAUNCHES) ^ set(KERNELS)


# --- hand-made cases: inputs the generic cases do not reach -----------------------------------

def _model(nodes, inputs, inits=(), opset=13):
    graph = helper.make_graph(nodes, "hand", [helper.make_tensor_value_info(k, _ELEM[d], s) for k, d, s in inputs],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(IR_VERSION, 10)
    return model


def test_flatten_inside_an_if_body_runs_on_cann():
    """Without placement (which now places If bodies too) an If body's Flatten runs on the EP's
    Flatten kernel (the CANN op Flatten, which the simulator lacked)."""
    body = helper.make_graph([helper.make_node("Flatten", ["x"], ["y"], axis=1)], "then", [],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    other = helper.make_graph([helper.make_node("Flatten", ["x"], ["y"], axis=3)], "else", [],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = _model([helper.make_node("If", ["c"], ["y"], then_branch=body, else_branch=other)],
                   [("c", "bool", []), ("x", "float32", [2, 3, 4, 5])])
    x = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5)
    before = sim.op_counts().get("Flatten", 0)
    for cond, shape in ((True, (2, 60)), (False, (24, 5))):
        y = cann_ep.session(model, place=False).run(None, {"c": np.array(cond), "x": x})[0]
        np.testing.assert_array_equal(y, x.reshape(shape))
    assert sim.op_counts().get("Flatten", 0) - before == 2


@pytest.mark.parametrize("rank", [3, 5])
def test_rank_other_than_4_fails_for_nchw_ops(rank):
    """The EP sends 3-D / 5-D inputs to 4-D CANN ops: Conv on 3-D input to Conv2D, BatchNormalization
    and GlobalAveragePool of non-4-D input with NCHW descriptors; CANN (and the simulator) reject them.
    Conv on 5-D input goes to Conv3D, which the simulator does not implement (ACL_ERROR_OP_NOT_FOUND;
    the EP describes its 5-D tensors as NCHW, which CANN's Conv3D, NCDHW / NDHWC, would not take)."""
    shape = [1, 2, 4, 4, 4][:rank]
    bn_inits = [numpy_helper.from_array(np.ones(2, np.float32), n) for n in ("s", "b", "m", "v")]
    for nodes, inits, cann_op in (([helper.make_node("GlobalAveragePool", ["x"], ["y"])], [], "AvgPoolV2"),
                                  ([helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"])],
                                   bn_inits, "BatchNorm")):
        model = _model(nodes, [("x", "float32", shape)], inits)
        assert defect_of(node_info(model)) is not None, f"{nodes[0].op_type} on {rank}-D input: not flagged"
        with pytest.raises(Exception, match=f'aclopCompileAndExecute\\("{cann_op}"'):
            cann_ep.session(model, place=False).run(None, {"x": np.ones(shape, np.float32)})
    w = numpy_helper.from_array(np.ones([2, 2] + [3] * (rank - 2), np.float32), "w")
    model = _model([helper.make_node("Conv", ["x", "w"], ["y"])], [("x", "float32", shape)], [w])
    assert defect_of(node_info(model)) is not None, f"Conv on {rank}-D input: not flagged"
    with pytest.raises(Exception, match='aclopCompileAndExecute\\(opname'):  # Conv2D (3-D) / Conv3D (5-D)
        cann_ep.session(model, place=False).run(None, {"x": np.ones(shape, np.float32)})


# --- the EP defect table (rewrite.placement.ep_defects), both ways ----------------------------

def _one(op, shape, opset, inits=(), extra_inputs=(), **attrs):
    """A one-node ``op`` model on float32 ``x`` of ``shape`` (then the initializers, then extra graph
    inputs (name, dtype, shape)) and its feeds: x from a fixed seed, extra inputs given below."""
    names = ["x", *(t.name for t in inits), *(n for n, _, _ in extra_inputs)]
    model = _model([helper.make_node(op, names, ["y"], **attrs)],
                   [("x", "float32", list(shape)), *extra_inputs], inits, opset=opset)
    return model, {"x": np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)}


def _w(*shape):
    return numpy_helper.from_array(np.random.default_rng(1).standard_normal(shape).astype(np.float32), "w")


def _bn(c):
    return [numpy_helper.from_array(np.linspace(0.5, 1.5, c, dtype=np.float32), n) for n in ("s", "b", "m", "v")]


def _both_broadcast():
    model = _model([helper.make_node("Mul", ["a", "b"], ["y"])], [("a", "float32", [4, 1]), ("b", "float32", [1, 5])])
    return model, {"a": np.arange(1, 5, dtype=np.float32).reshape(4, 1),
                   "b": np.arange(10, 15, dtype=np.float32).reshape(1, 5)}


def _dropout(training):
    ratio = numpy_helper.from_array(np.array(0.5, np.float32), "ratio")
    inits = [ratio] + ([] if training else [numpy_helper.from_array(np.array(False), "training")])
    extra = [("training", "bool", [])] if training else []
    model, feeds = _one("Dropout", (64, 64), 13, inits, extra)
    if training:
        feeds["training"] = np.array(True)
    return model, {**feeds, "x": np.ones((64, 64), np.float32)}


def _dropout_kept_or_dropped(got, want):
    """Training-mode Dropout of ones with ratio 0.5: each element dropped (0) or kept and scaled (2)."""
    assert set(np.unique(got)) == {0.0, 2.0}, np.unique(got)


#: name -> () -> (model, feeds[, check(got, want)]): nodes the EP kernel gets wrong on the simulator
DEFECT_CASES = {
    "Mul-both-inputs-broadcast": _both_broadcast,
    "AveragePool-pads": lambda: _one("AveragePool", (1, 1, 4, 4), 11, kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    "AveragePool-pads-count_include_pad": lambda: _one("AveragePool", (1, 1, 4, 4), 11, kernel_shape=[3, 3],
                                                       pads=[1, 1, 1, 1], count_include_pad=1),
    "AveragePool-pads-left-ne-bottom": lambda: _one("AveragePool", (1, 1, 6, 6), 11, kernel_shape=[3, 3],
                                                    pads=[0, 1, 0, 1], count_include_pad=1),
    "AveragePool-SAME_UPPER": lambda: _one("AveragePool", (1, 1, 5, 5), 11, kernel_shape=[2, 2], auto_pad="SAME_UPPER"),
    "AveragePool-3d": lambda: _one("AveragePool", (1, 2, 6), 11, kernel_shape=[2]),
    "AveragePool-5d": lambda: _one("AveragePool", (1, 2, 4, 4, 4), 11, kernel_shape=[2, 2, 2]),
    "MaxPool-pads-left-ne-bottom": lambda: _one("MaxPool", (1, 1, 6, 6), 1, kernel_shape=[3, 3], pads=[0, 1, 0, 1]),
    "MaxPool-SAME_LOWER": lambda: _one("MaxPool", (1, 1, 5, 5), 1, kernel_shape=[2, 2], auto_pad="SAME_LOWER"),
    "MaxPool-3d": lambda: _one("MaxPool", (1, 2, 6), 1, kernel_shape=[2]),
    "MaxPool-5d": lambda: _one("MaxPool", (1, 2, 4, 4, 4), 1, kernel_shape=[2, 2, 2]),
    "GlobalMaxPool-3d": lambda: _one("GlobalMaxPool", (1, 2, 6), 1),
    "GlobalMaxPool-5d": lambda: _one("GlobalMaxPool", (1, 2, 3, 3, 3), 1),
    "GlobalAveragePool-3d": lambda: _one("GlobalAveragePool", (1, 2, 6), 1),
    "Conv-pads-left-ne-bottom": lambda: _one("Conv", (1, 2, 5, 5), 11, [_w(3, 2, 3, 3)], pads=[1, 0, 1, 0]),
    "Conv-SAME_UPPER-asymmetric": lambda: _one("Conv", (1, 2, 5, 5), 11, [_w(3, 2, 2, 2)], auto_pad="SAME_UPPER"),
    "Conv-3d": lambda: _one("Conv", (1, 2, 6), 11, [_w(3, 2, 3)]),
    "BatchNormalization-3d": lambda: _one("BatchNormalization", (2, 3, 4), 15, _bn(3)),
    "Dropout-training": lambda: (*_dropout(True), _dropout_kept_or_dropped),
}

#: nodes next to a defect that the table does not flag: they must run like the reference
NEAR_MISSES = {
    "MaxPool-symmetric-pads": lambda: _one("MaxPool", (1, 1, 6, 6), 1, kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    "MaxPool-pads-left-eq-bottom": lambda: _one("MaxPool", (1, 1, 6, 6), 1, kernel_shape=[3, 3], pads=[1, 2, 2, 0]),
    "MaxPool-SAME_UPPER": lambda: _one("MaxPool", (1, 1, 5, 5), 1, kernel_shape=[2, 2], auto_pad="SAME_UPPER"),
    "AveragePool-ceil_mode": lambda: _one("AveragePool", (1, 1, 5, 5), 11, kernel_shape=[2, 2], strides=[2, 2],
                                          ceil_mode=1),
    "AveragePool-VALID": lambda: _one("AveragePool", (1, 1, 5, 5), 11, kernel_shape=[2, 2], auto_pad="VALID"),
    "Conv-pads-left-eq-bottom": lambda: _one("Conv", (1, 2, 5, 5), 11, [_w(3, 2, 3, 3)], pads=[1, 2, 2, 0]),
    "Dropout-training-constant-false": lambda: _dropout(False),
    "Mul-same-shape": lambda: _one("Mul", (4, 5), 13, [numpy_helper.from_array(np.full((4, 5), 3, np.float32), "b")]),
}


def _matches_reference(model, feeds, check_result=None):
    want = reference(model, feeds)
    got, provider, _ = run_on_cann(model, feeds)
    assert provider == "CANNExecutionProvider", f"{model.graph.node[0].op_type} ran on {provider}"
    if check_result is not None:
        check_result(got, want)
        return
    assert got.shape == want.shape, (got.shape, want.shape)
    verdict = check(got, want, tolerance_of("float32"))
    assert verdict.ok, verdict.message or verdict


def test_defect_cases_are_flagged():
    """Every node seen failing on the EP is in the defect table (the table is not too narrow)."""
    missing = [name for name, case in DEFECT_CASES.items() if defect_of(node_info(case()[0])) is None]
    assert not missing, f"EP failures ep_defects.defect_of does not flag: {missing}"


def test_near_misses_are_not_flagged():
    flagged = {name: defect_of(node_info(case()[0])) for name, case in NEAR_MISSES.items()}
    assert not any(flagged.values()), {k: v for k, v in flagged.items() if v}


def _reason(case) -> str:
    return defect_of(node_info(case()[0])) or "NOT FLAGGED (test_defect_cases_are_flagged fails)"


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=_reason(case)))
                                  for name, case in DEFECT_CASES.items()])
def test_defect_case_fails_on_the_ep(name):
    """Strict: a case that starts to pass (the EP or the simulator changed) must leave the table."""
    _matches_reference(*DEFECT_CASES[name]())


@pytest.mark.parametrize("name", list(NEAR_MISSES))
def test_near_miss_runs_like_the_reference(name):
    _matches_reference(*NEAR_MISSES[name]())
