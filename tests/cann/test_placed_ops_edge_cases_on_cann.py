"""Edge cases of the placed ops on the CANN EP (the ACL simulator): every Flatten axis, empty
reductions and products (static and symbolic shapes, and ONNX's own node test cases), MaxPool's
NaN/inf/signed-zero windows, and device faults that name the node. Expected values come from the
CPU EP on the same one-node model, from ONNX's node test data, or from NumPy."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import warnings

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

from ort_ops.domain import CANN_DOMAIN, IR_VERSION, OPSET_VERSION

cann_ep = pytest.importorskip("ort_ops.cann_ep")
PROVIDER = "CANNExecutionProvider"
OPSET = 20


pytestmark = pytest.mark.usefixtures("cann_simulator")


RNG = np.random.default_rng(11)


def one_node(op, inputs, attrs=None, consts=(), symbolic=False, name="node"):
    """A model of one `op` node named `name`; inputs `consts` are initializers; `symbolic`: the
    graph inputs' dims are named (dim_param), not numbers."""
    names, graph_inputs, inits = [], [], []
    for i, value in enumerate(inputs):
        if value is None:
            names.append("")
            continue
        names.append(f"in{i}")
        if i in consts:
            inits.append(numpy_helper.from_array(np.asarray(value), f"in{i}"))
            continue
        shape = [f"d{i}_{k}" for k in range(np.ndim(value))] if symbolic else list(np.shape(value))
        elem = helper.np_dtype_to_tensor_dtype(np.asarray(value).dtype)
        graph_inputs.append(helper.make_tensor_value_info(f"in{i}", elem, shape))
    node = helper.make_node(op, names, ["out0"], name=name, **(attrs or {}))
    graph = helper.make_graph([node], op, graph_inputs, [helper.make_empty_tensor_value_info("out0")], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    return model


def feeds_of(inputs, consts=()):
    return {f"in{i}": np.asarray(v) for i, v in enumerate(inputs) if v is not None and i not in consts}


def cpu_and_placed(model, feeds):
    """(CPU EP outputs, placed outputs) of `model`; asserts its node was placed on CANN."""
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    session = cann_ep.session(model)
    assert [e.where for e in session.placement.nodes] == ["placed"], session.placement.summary()
    return want, session.run(None, feeds)


def assert_bits_equal(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    np.testing.assert_array_equal(np.ravel(got).view(np.uint8), np.ravel(want).view(np.uint8))


# -- Flatten: axis in [-r, r], a negative one counts from the back (axis + r) ----------------------

@pytest.mark.parametrize("axis", range(-3, 4))
def test_flatten_every_axis(axis):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    (want,), (got,) = cpu_and_placed(one_node("Flatten", [x], {"axis": axis}), feeds_of([x]))
    r = axis + 3 if axis < 0 else axis
    assert got.shape == (int(np.prod(x.shape[:r])), int(np.prod(x.shape[r:])))  # the spec, not the EPs
    assert_bits_equal(got, want)


@pytest.mark.parametrize("axis", [-4, 4])
def test_flatten_axis_out_of_range_names_node_and_range(axis):
    x = np.zeros((2, 3, 4), np.float32)
    model = one_node("Flatten", [x], {"axis": axis}, symbolic=True, name="flat")
    model.graph.node[0].domain = CANN_DOMAIN  # placed by hand: placement refuses the invalid model
    model.opset_import.append(helper.make_opsetid(CANN_DOMAIN, OPSET_VERSION))
    session = cann_ep.session(model, place=False)
    with pytest.raises(Exception, match=rf"Flatten node 'flat' on CANN: axis {axis} is out of range \[-3, 3\]"):
        session.run(None, feeds_of([x]))


# -- Gelu: ONNX's two approximations; another value fails the session naming it -------------------

@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_empty_and_scalar_inputs(approximate):
    for x in (np.zeros((2, 0, 3), np.float32), np.array(1.5, np.float32)):
        (want,), (got,) = cpu_and_placed(one_node("Gelu", [x], {"approximate": approximate}), feeds_of([x]))
        assert got.shape == want.shape == x.shape
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_gelu_unknown_approximation_fails_the_session_naming_it():
    x = np.zeros(3, np.float32)
    model = one_node("Gelu", [x], {"approximate": "fast"}, name="act")
    model.graph.node[0].domain = CANN_DOMAIN  # placed by hand: placement leaves it (not an ONNX Gelu)
    model.opset_import.append(helper.make_opsetid(CANN_DOMAIN, OPSET_VERSION))
    with pytest.raises(Exception, match=r"Gelu node 'act' on CANN: attribute approximate is \"fast\", expected "
                                        r"\"none\" or \"tanh\""):
        cann_ep.session(model, place=False).run(None, feeds_of([x]))


# -- empty products and reductions: the empty sum is 0, Gemm's Y is then C ------------------------

GEMM_C = {
    "none": None,
    "n": np.array([-0.0, np.nan, 2.5], np.float32),
    "1n": np.array([[1.0, -0.0, -np.inf]], np.float32),
    "mn": np.arange(12, dtype=np.float32).reshape(4, 3) - 5.5,
    "m1": np.array([[1.0], [-0.0], [3.0], [np.inf]], np.float32),
    "scalar": np.array(-7.25, np.float32),
}


@pytest.mark.parametrize("symbolic", [False, True], ids=["static", "symbolic"])
@pytest.mark.parametrize("c", GEMM_C, ids=list(GEMM_C))
@pytest.mark.parametrize("trans", [(0, 0), (1, 1)], ids=["plain", "transposed"])
def test_gemm_with_k_zero_is_c(c, trans, symbolic):
    a = np.zeros((0, 4) if trans[0] else (4, 0), np.float32)
    b = np.zeros((3, 0) if trans[1] else (0, 3), np.float32)
    inputs = [a, b, GEMM_C[c]]
    model = one_node("Gemm", inputs, {"transA": trans[0], "transB": trans[1]}, symbolic=symbolic)
    (want,), (got,) = cpu_and_placed(model, feeds_of(inputs))
    expected = np.broadcast_to(np.float32(0) if GEMM_C[c] is None else GEMM_C[c], (4, 3))
    assert_bits_equal(got, np.ascontiguousarray(expected))  # the math: Y = A*B + C, A*B = 0
    assert_bits_equal(got, want)


@pytest.mark.parametrize("c", ["mn", "m1", "none"])
@pytest.mark.parametrize("beta", [0.5, 0.0])
def test_scaled_gemm_with_k_zero_is_beta_c(c, beta):
    """K = 0 with alpha/beta: Y = beta * C, as ONNX defines it (C ignored with beta = 0: its inf does
    not become NaN). ORT's CPU EP (1.24) gives C itself for K = 0 and beta not in {0, 1} (it skips
    the product and the scaling), so only the beta = 0 and C-less cases are compared with it."""
    inputs = [np.zeros((4, 0), np.float32), np.zeros((0, 3), np.float32), GEMM_C[c]]
    (want,), (got,) = cpu_and_placed(one_node("Gemm", inputs, {"alpha": 2.0, "beta": beta}), feeds_of(inputs))
    base = np.zeros((4, 3), np.float32) if GEMM_C[c] is None or beta == 0 else np.float32(beta) * GEMM_C[c]
    assert_bits_equal(got, np.ascontiguousarray(np.broadcast_to(base, (4, 3))))
    if GEMM_C[c] is None or beta == 0:
        assert_bits_equal(got, want)


def test_gemm_with_beta_zero_ignores_c():
    """beta = 0: C's inf and NaN do not reach Y (ORT's CPU EP does not read C then)."""
    a, b = RNG.uniform(-1, 1, (4, 5)).astype(np.float32), RNG.uniform(-1, 1, (5, 3)).astype(np.float32)
    c = np.array([[np.inf], [np.nan], [1.0], [-np.inf]], np.float32)
    inputs = [a, b, c]
    (want,), (got,) = cpu_and_placed(one_node("Gemm", inputs, {"alpha": 0.5, "beta": 0.0}), feeds_of(inputs))
    assert np.isfinite(got).all() and np.isfinite(want).all()
    np.testing.assert_allclose(got, 0.5 * (a.astype(np.float64) @ b), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_gemm_with_k_zero_f16():
    c = np.array([-0.0, 1, np.nan, -2, 3], np.float16)
    inputs = [np.zeros((2, 0), np.float16), np.zeros((0, 5), np.float16), c]
    (want,), (got,) = cpu_and_placed(one_node("Gemm", inputs), feeds_of(inputs))
    assert_bits_equal(got, np.ascontiguousarray(np.broadcast_to(c, (2, 5))))
    assert_bits_equal(got, want)


REDUCE_EMPTY = [
    # (shape, axes, keepdims)
    ((0,), [0], 0),
    ((0,), [0], 1),
    ((0,), None, 0),
    ((2, 0, 3), [1], 0),
    ((2, 0, 3), [1], 1),
    ((2, 0, 3), [-2], 0),
    ((2, 0, 3), [-2], 1),
    ((2, 0, 3), [0, 1], 0),
    ((2, 0, 3), None, 1),
    ((0, 4), [0], 1),
]
# The CPU EP (onnxruntime 1.24 and 1.31) ignores negative axes of an empty input and returns the
# input's shape ([2, 0, 3] for axes [-2]); ONNX (and its shape inference) says [2, 3] / [2, 1, 3].
# There the placed kernel is checked against NumPy only.
CPU_EP_IGNORES_NEGATIVE_AXES = {((2, 0, 3), (-2,), 0), ((2, 0, 3), (-2,), 1)}


@pytest.mark.parametrize("symbolic", [False, True], ids=["static", "symbolic"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64, np.int32])
@pytest.mark.parametrize("shape,axes,keepdims", REDUCE_EMPTY, ids=[f"{s}-{a}-k{k}" for s, a, k in REDUCE_EMPTY])
def test_reduce_sum_over_an_empty_axis_is_zero(shape, axes, keepdims, dtype, symbolic):
    x = np.zeros(shape, dtype)
    inputs = [x] if axes is None else [x, np.array(axes, np.int64)]
    model = one_node("ReduceSum", inputs, {"keepdims": keepdims}, consts=[1], symbolic=symbolic)
    (want,), (got,) = cpu_and_placed(model, feeds_of(inputs, consts=[1]))
    expected = np.sum(x, axis=None if axes is None else tuple(axes), keepdims=bool(keepdims), dtype=dtype)
    assert got.size > 0
    assert_bits_equal(got, np.asarray(expected))  # +0.0 / 0 everywhere
    if (shape, tuple(axes or ()), keepdims) not in CPU_EP_IGNORES_NEGATIVE_AXES:
        assert_bits_equal(got, want)


def test_reduce_sum_empty_axes_noop_on_an_empty_tensor():
    # ONNX: empty axes with noop_with_empty_axes = 1 is the identity. (onnxruntime 1.24's CPU EP
    # returns [[0]] for an empty input; 1.31's the input.)
    x = np.zeros((2, 0), np.float32)
    inputs = [x, np.zeros(0, np.int64)]
    model = one_node("ReduceSum", inputs, {"noop_with_empty_axes": 1}, consts=[1])
    session = cann_ep.session(model)
    assert [e.where for e in session.placement.nodes] == ["placed"], session.placement.summary()
    (got,) = session.run(None, feeds_of(inputs, consts=[1]))
    assert_bits_equal(got, x)


EMPTY_EXTREME_TYPES = [np.float32, np.float16, np.float64, np.int32, np.int64, np.bool_]  # (no bfloat16 on the CPU EP)


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
@pytest.mark.parametrize("dtype", EMPTY_EXTREME_TYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("shape,axes,keepdims", REDUCE_EMPTY, ids=[f"{s}-{a}-k{k}" for s, a, k in REDUCE_EMPTY])
def test_reduce_max_min_over_an_empty_axis_is_onnxs_extreme(shape, axes, keepdims, dtype, op):
    """ONNX (ReduceMax/ReduceMin 18+): over an empty set, -inf / +inf where the type has them, else
    the type's lowest / largest value (bool: False / True). ORT's CPU EP agrees for the float types
    and gives 0 for the integers (and fails for bool): there the placed kernel is checked against ONNX
    only."""
    x = np.zeros(shape, dtype)
    inputs = [x] if axes is None else [x, np.array(axes, np.int64)]
    model = one_node(op, inputs, {"keepdims": keepdims}, consts=[1])
    floating = np.issubdtype(dtype, np.floating)
    if floating:
        (want,), (got,) = cpu_and_placed(model, feeds_of(inputs, consts=[1]))
    else:
        session = cann_ep.session(model)
        assert [e.where for e in session.placement.nodes] == ["placed"], session.placement.summary()
        (got,) = session.run(None, feeds_of(inputs, consts=[1]))
    out_shape = np.sum(np.zeros(shape, np.float32), axis=None if axes is None else tuple(axes),
                       keepdims=bool(keepdims)).shape
    if dtype == np.bool_:
        value = op == "ReduceMin"
    elif np.issubdtype(dtype, np.integer):
        value = np.iinfo(dtype).min if op == "ReduceMax" else np.iinfo(dtype).max
    else:
        value = -np.inf if op == "ReduceMax" else np.inf
    assert got.size > 0
    assert_bits_equal(got, np.full(out_shape, value, dtype))
    if floating and (shape, tuple(axes or ()), keepdims) not in CPU_EP_IGNORES_NEGATIVE_AXES:
        assert_bits_equal(got, want)


def test_reduce_mean_over_an_empty_axis_fails_naming_the_node():
    # ONNX gives NaN (0 / 0); the placed kernel refuses it rather than launch CANN's ReduceMean on
    # an empty tensor (CANN rejects those; its result there is not specified).
    x = np.zeros((2, 0, 3), np.float32)
    inputs = [x, np.array([1], np.int64)]
    model = one_node("ReduceMean", inputs, {"keepdims": 0}, consts=[1], name="mean")
    session = cann_ep.session(model)
    assert [e.where for e in session.placement.nodes] == ["placed"], session.placement.summary()
    with pytest.raises(Exception, match=r"ReduceMean node 'mean' on CANN: data of shape \[2, 0, 3\] has no element "
                                        r"to average over axes of output shape \[2, 3\]"):
        session.run(None, feeds_of(inputs, consts=[1]))


# -- Gather: a constant run of consecutive indices is one Slice; other indices Expand + GatherElementsV2 --

@pytest.mark.parametrize("indices, axis", [
    (np.array([[1, 2, 3]], np.int64), 0), (np.array([-3, -2], np.int64), 1), (np.array(-4, np.int64), 1),
    (np.zeros((2, 0), np.int64), 0), (np.array([0, 1, 2, 3], np.int64), -1)])
@pytest.mark.parametrize("symbolic", [False, True])
def test_gather_of_a_run_is_the_cpu_result(indices, axis, symbolic):
    x = np.arange(5 * 4, dtype=np.float32).reshape(5, 4)
    inputs = [x, indices]
    want, got = cpu_and_placed(one_node("Gather", inputs, {"axis": axis}, consts=[1], symbolic=symbolic),
                               feeds_of(inputs, consts=[1]))
    assert_bits_equal(got[0], want[0])
    assert_bits_equal(got[0], np.take(x, indices, axis=axis))


@pytest.mark.parametrize("indices, consts", [
    (np.array([0, 2], np.int64), [1]), (np.array([2, 1], np.int64), [1]), (np.array([-1, 0], np.int64), [1]),
    (np.array([0, 1], np.int64), []), (np.array([[3, -4, 0], [1, 1, -1]], np.int64), []),
    (np.zeros((0, 2), np.int64), []),
])
def test_gather_of_other_indices_is_expand_and_gather_elements_v2(indices, consts, tmp_path):
    x = np.arange(3 * 4 * 2, dtype=np.float32).reshape(3, 4, 2) - 7.5
    inputs = [x, indices]
    model = one_node("Gather", inputs, {"axis": 1}, consts=consts)
    want, got = cpu_and_placed(model, feeds_of(inputs, consts=consts))
    assert_bits_equal(got[0], want[0])
    assert_bits_equal(got[0], np.take(x, indices, axis=1))
    session = cann_ep.session(model, profile_prefix=str(tmp_path / "p"))
    (entry,) = session.placement.nodes
    assert entry.cann_ops == ("Slice", "Expand", "GatherElementsV2"), entry  # the route of indices not a constant run
    from ort_ops.cann_ep import sim

    before = sim.op_counts()
    session.run(None, feeds_of(inputs, consts=consts))
    after = sim.op_counts()
    launched = {op: after[op] - before.get(op, 0) for op in after if after[op] != before.get(op, 0)}
    flat = np.where(indices < 0, indices + 4, indices).ravel()
    if indices.size == 0:
        assert launched == {}, launched
    elif np.array_equal(flat, flat[0] + np.arange(flat.size)):  # a run met at run time: one Slice
        assert launched == {"Slice": 1}, launched
    elif consts:  # constant positions: copied, already expanded, on the session's first run
        assert launched == {"GatherElementsV2": 1}, launched
    else:
        assert launched == {"Expand": 1, "GatherElementsV2": 1}, launched


@pytest.mark.parametrize("soc, dtype, why", [
    ("Ascend910B1", np.int64, r"need CANN GatherElementsV2, which takes float32, float16, bfloat16 or int32 data"),
    ("Ascend310P3", np.float32, r"GatherElementsV2"),  # Atlas inference: no GatherElementsV2 (README row)
    ("Ascend950PR", np.float32, r"GatherElementsV2"),  # its README row is x (950 has GatherV2 instead)
])
def test_gather_of_other_indices_stays_on_the_cpu_with_the_reason(soc, dtype, why):
    from ort_ops.rewrite.placement import PlacementReport, place

    x = np.ones((3, 4), dtype)
    report = PlacementReport()
    place(one_node("Gather", [x, np.array([0, 2], np.int64)], {"axis": 1}), soc=soc, report=report)
    (entry,) = report.nodes
    assert entry.where != "placed", report.summary()
    assert __import__("re").search(why, str(entry.reason)), entry.reason


def test_gather_of_computed_indices_out_of_range_fails_naming_the_node():
    x = np.ones((3, 4), np.float32)
    session = cann_ep.session(one_node("Gather", [x, np.array([0, 2], np.int64)], {"axis": 1}, name="pick"))
    assert [e.where for e in session.placement.nodes] == ["placed"], session.placement.summary()
    with pytest.raises(Exception, match=r"Gather node 'pick' on CANN: index 4 is out of range \[-4, 3\] for axis 1"):
        session.run(None, {"in0": x, "in1": np.array([1, 4], np.int64)})


def test_gather_index_out_of_range_fails_naming_the_node():
    # [-9, -8] are consecutive whatever the axis' length, so a symbolic graph places them; the
    # kernel checks the range when it runs (the CPU EP fails too).
    x = np.ones((3, 4), np.float32)
    inputs = [x, np.array([-9, -8], np.int64)]
    session = cann_ep.session(one_node("Gather", inputs, {"axis": 1}, consts=[1], symbolic=True, name="pick"))
    assert [e.where for e in session.placement.nodes] == ["placed"], session.placement.summary()
    with pytest.raises(Exception, match=r"Gather node 'pick' on CANN: index -9 is out of range \[-4, 3\] for axis 1"):
        session.run(None, feeds_of(inputs, consts=[1]))


# -- Concat / Split: empty tensors are left out of ConcatV2 / SplitV (CANN needs >= 2 inputs, pieces >= 1) --

def test_concat_of_empty_inputs_only_is_empty():
    inputs = [np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32)]
    want, got = cpu_and_placed(one_node("Concat", inputs, {"axis": 0}), feeds_of(inputs))
    assert got[0].shape == want[0].shape == (0, 3)


def test_split_with_sizes_not_summing_to_the_dim_fails_naming_the_node():
    x = np.ones((2, 5), np.float32)
    inputs = [x, np.array([2, 2], np.int64)]
    model = one_node("Split", inputs, {"axis": 1}, consts=[1], name="cut")
    model.graph.node[0].output.append("out1")
    model.graph.output.append(helper.make_empty_tensor_value_info("out1"))
    session = cann_ep.session(model)
    assert [e.where for e in session.placement.nodes] == ["placed"], session.placement.summary()
    with pytest.raises(Exception, match=r"Split node 'cut' on CANN: split \[2, 2\] must give 2 non-negative sizes "
                                        r"summing to dim 5 of input of shape \[2, 5\]"):
        session.run(None, feeds_of(inputs, consts=[1]))


# -- AveragePool with count_include_pad and end padding: ONNX's divisor (the window within the padded
# image, as PyTorch), which CANN's AvgPoolV2 (exclusive = false) computes; onnxruntime's CPU EP
# leaves the end padding out of the divisor, so NumPy is the reference here.

def test_average_pool_counting_end_padding_divides_like_onnx():
    x = np.arange(30, dtype=np.float32).reshape(1, 1, 5, 6)
    attrs = {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 1, 1], "count_include_pad": 1}
    session = cann_ep.session(one_node("AveragePool", [x], attrs))
    assert [e.where for e in session.placement.nodes] == ["placed"], session.placement.summary()
    (got,) = session.run(None, {"in0": x})
    padded = np.pad(x[0, 0], ((1, 1), (0, 1)))
    want = np.array([[padded[2 * i:2 * i + 3, j:j + 2].sum() / 6 for j in range(6)] for i in range(3)], np.float32)
    np.testing.assert_allclose(got[0, 0], want, rtol=1e-6)
    cpu = ort.InferenceSession(one_node("AveragePool", [x], attrs).SerializeToString(),
                               providers=["CPUExecutionProvider"]).run(None, {"in0": x})[0]
    assert not np.allclose(cpu[0, 0, 2], want[2])  # the CPU EP's last row divides by 4, not 6


@functools.lru_cache(maxsize=1)
def onnx_node_cases():
    """ONNX's node test cases (model + data) whose graph has a ReduceSum or a Gemm."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        cases = collect_testcases()
    return {c.name: c for c in cases if {n.op_type for n in c.model.graph.node} & {"ReduceSum", "Gemm"}}


EMPTY_NODE_CASES = [
    "test_reduce_sum_empty_set",
    "test_reduce_sum_empty_set_non_reduced_axis_zero",
    "test_reduce_sum_empty_axes_input_noop",
    "test_reduce_sum_empty_axes_input_noop_example",
    "test_reduce_l1_empty_set_expanded",
    "test_reduce_sum_square_empty_set_expanded",
]  # (test_reduce_log_sum_empty_set_expanded: opset 28, which onnxruntime 1.24 refuses)


@pytest.mark.parametrize("name", EMPTY_NODE_CASES)
def test_onnx_node_case_placed(name):
    case = onnx_node_cases()[name]
    model = case.model
    model.ir_version = min(model.ir_version, IR_VERSION)
    session = cann_ep.session(model)
    placed = [e for e in session.placement.nodes if e.where == "placed"]
    assert any(e.op_type == "ReduceSum" for e in placed), session.placement.summary()
    (inputs, outputs), = case.data_sets
    names = [i.name for i in model.graph.input]
    got = session.run(None, dict(zip(names, inputs)))
    for g, w in zip(got, outputs):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=case.rtol, atol=case.atol)


# -- device faults: the error names the node and the op; the session keeps working ---------------

ASCEND950 = "Ascend950PR"  # CANN's GatherElements/ScatterElements are Ascend 950 only (ops-nn READMEs)


def needs_950():
    if os.environ.get("ACLSIM_SOC_NAME") != ASCEND950:
        pytest.skip("runs in the child of test_device_faults_in_a_child (ACLSIM_SOC_NAME=Ascend950PR)")


def test_gather_elements_out_of_range_index_names_node_op_and_value():
    needs_950()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    bad, good = np.array([[0, 3], [1, 2]]), np.array([[0, -1], [1, 2]])  # -1: ONNX's last, mapped on the device
    model = one_node("GatherElements", [x, good], {"axis": 1}, symbolic=True, name="pick")
    session = cann_ep.session(model)
    assert [e.where for e in session.placement.nodes] == ["placed"]
    with pytest.raises(Exception) as raised:
        session.run(None, {"in0": x, "in1": bad})
    message = str(raised.value)
    assert "GatherElements node 'pick' on CANN: the device failed running CANN GatherElements" in message
    assert "ACL error 507015" in message and "holds 3 at [0,1], outside [0, 3)" in message, message
    (got,) = session.run(None, {"in0": x, "in1": good})
    np.testing.assert_array_equal(got, np.take_along_axis(x, np.where(good < 0, good + 3, good), axis=1))


def test_scatter_elements_out_of_range_index_names_node_op_and_value():
    needs_950()
    data, updates = np.zeros((2, 3), np.float32), np.ones((2, 1), np.float32)
    bad, good = np.array([[3], [0]]), np.array([[2], [0]])
    model = one_node("ScatterElements", [data, good, updates], {"axis": 1}, symbolic=True, name="put")
    session = cann_ep.session(model)
    assert [e.where for e in session.placement.nodes] == ["placed"]
    with pytest.raises(Exception) as raised:
        session.run(None, {"in0": data, "in1": bad, "in2": updates})
    message = str(raised.value)
    assert "ScatterElements node 'put' on CANN: the device failed running CANN ScatterElements" in message
    assert "holds 3 at [0,0], outside [0, 3)" in message, message
    (got,) = session.run(None, {"in0": data, "in1": good, "in2": updates})
    want = data.copy()
    np.put_along_axis(want, good, updates, axis=1)
    np.testing.assert_array_equal(got, want)


def test_device_faults_in_a_child(tmp_path):
    env = {**os.environ, "ACLSIM_SOC_NAME": ASCEND950}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k",
                           "names_node_op", "--basetemp", str(tmp_path / "child")],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "2 passed" in proc.stdout, proc.stdout[-2000:]


# -- GatherElements / ScatterElements on Atlas A2/A3 (the simulator's Ascend910B1): the V2 ops ------

def test_gather_elements_v2_counts_negative_indices_from_the_end():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    indices = np.array([[-1, 0], [-4, 3], [2, -2]], np.int64)
    want, got = cpu_and_placed(one_node("GatherElements", [x, indices], {"axis": 1}), feeds_of([x, indices]))
    assert_bits_equal(got[0], want[0])
    assert_bits_equal(got[0], np.take_along_axis(x, np.where(indices < 0, indices + 4, indices), axis=1))


@pytest.mark.parametrize("bad", [4, -5, 2**32 + 1, -(2**40)])  # 2**32 + 1 would be 1 if narrowed to int32 unclamped
def test_gather_elements_v2_index_out_of_range_fails_naming_the_node(bad):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    good = np.array([[0, 1], [2, 3], [1, 1]], np.int64)
    session = cann_ep.session(one_node("GatherElements", [x, good], {"axis": 1}, name="pick"))
    (entry,) = session.placement.nodes
    assert entry.where == "placed" and entry.cann_ops == ("ClipByValueV2", "Cast", "GatherElementsV2"), entry
    bad_indices = good.copy()
    bad_indices[2, 0] = bad
    with pytest.raises(Exception, match=r"GatherElements node 'pick' on CANN: the device failed running CANN "
                                        r"GatherElementsV2"):
        session.run(None, {"in0": x, "in1": bad_indices})
    (got,) = session.run(None, {"in0": x, "in1": good})  # the session keeps working
    assert_bits_equal(got, np.take_along_axis(x, good, axis=1))


@pytest.mark.parametrize("bad", [3, -4])  # outside ONNX's [-3, 3)
def test_scatter_elements_v2_index_outside_the_data_fails_naming_the_node(bad):
    data, updates = np.zeros((2, 3), np.float32), np.ones((2, 1), np.float32)
    good = np.array([[2], [0]], np.int64)
    session = cann_ep.session(one_node("ScatterElements", [data, good, updates], {"axis": 1}, name="put"))
    (entry,) = session.placement.nodes
    assert entry.where == "placed" and entry.cann_ops == ("Less", "Add", "SelectV2", "ScatterElementsV2"), entry
    with pytest.raises(Exception, match=r"ScatterElements node 'put' on CANN: the device failed running CANN "
                                        r"ScatterElementsV2"):
        session.run(None, {"in0": data, "in1": np.array([[bad], [0]], np.int64), "in2": updates})
    (got,) = session.run(None, {"in0": data, "in1": good, "in2": updates})
    want = data.copy()
    np.put_along_axis(want, good, updates, axis=1)
    assert_bits_equal(got, want)


@pytest.mark.parametrize("reduction", ["none", "add", "mul"])
def test_scatter_elements_negative_indices_count_from_the_end(reduction):
    data = np.arange(12, dtype=np.float32).reshape(3, 4) + 1
    indices = np.array([[-1, 0], [-4, 3], [2, -2]], np.int64)
    updates = np.array([[2.0, 3.0], [4.0, 5.0], [6.0, 7.0]], np.float32)
    inputs = [data, indices, updates]
    want, got = cpu_and_placed(one_node("ScatterElements", inputs, {"axis": 1, "reduction": reduction}),
                               feeds_of(inputs))
    assert_bits_equal(got[0], want[0])


def test_int64_gather_elements_stays_on_the_cpu_on_910b():
    x = np.arange(12, dtype=np.int64).reshape(3, 4)
    model = one_node("GatherElements", [x, np.array([[0], [1], [2]], np.int64)], {"axis": 1})
    (entry,) = cann_ep.session(model).placement.nodes
    assert entry.where == "cpu" and "GatherElements is not available on Ascend910B1" in entry.reason, entry


# -- MaxPool: NaN, infinities, signed zeros -------------------------------------------------------
# The device rule (CANN MaxPoolV3 on the simulator; docs/placement.md): a running maximum from -inf
# over the window row by row, a value replaces it when larger or NaN: a window with a NaN gives its
# last NaN (bits kept), ties keep the first (-0.0 before +0.0 gives -0.0), an all -inf window -inf.
# The CPU EP (MLAS) agrees on windows without NaN, without a +-0.0 tie at the maximum and not all
# -inf; on the others its answer depends on MLAS's reduction order (the input's width), see below.

def device_max_pool(x, k):
    """NumPy reference of the device rule, `k` x `k` windows, stride `k`, no pads."""
    n, c, h, w = x.shape
    y = np.empty((n, c, h // k, w // k), x.dtype)
    for idx in np.ndindex(y.shape):
        i, j = idx[2] * k, idx[3] * k
        best = x.dtype.type(-np.inf)
        for v in x[idx[0], idx[1], i:i + k, j:j + k].ravel():
            if v > best or np.isnan(v):
                best = v
        y[idx] = best
    return y


NAN1, NAN2 = np.array([0x7FC00011, 0xFFC00022], np.uint32).view(np.float32)
POOL_WINDOWS = {  # 2x2 windows, row-major
    "nan_first": [NAN1, 1.0, 2.0, 3.0],
    "nan_middle": [1.0, NAN1, 2.0, 3.0],
    "nan_last": [1.0, 2.0, 3.0, NAN1],
    "two_nans": [NAN1, 5.0, NAN2, 1.0],
    "all_nan": [NAN1, NAN2, NAN1, NAN2],
    "nan_and_inf": [np.inf, NAN1, 1.0, 2.0],
    "all_minus_inf": [-np.inf] * 4,
    "nan_then_minus_inf": [NAN1, -np.inf, -np.inf, -np.inf],
    "plus_inf": [1.0, np.inf, -np.inf, 2.0],
    "minus_inf_and_finite": [-np.inf, -3.0, -np.inf, -np.inf],
    "zeros_minus_first": [-0.0, 0.0, -0.0, -0.0],
    "zeros_plus_first": [0.0, -0.0, -0.0, -0.0],
    "all_minus_zero": [-0.0] * 4,
    "zero_and_negative": [-0.0, -1.0, -2.0, -0.0],
}
CPU_EP_AGREES = {"plus_inf", "minus_inf_and_finite", "all_minus_zero"}


def windows_input(names, dtype):
    """One channel per window name, each a 2x2 plane holding that window."""
    planes = [np.array(POOL_WINDOWS[n], np.float32).reshape(2, 2) for n in names]
    x = np.stack(planes)[None]
    if dtype is np.float16:  # keep NaN payloads' top bits: float32 -> float16 by value keeps NaN-ness
        with np.errstate(invalid="ignore"):
            x = x.astype(np.float16)
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_max_pool_special_values_follow_the_device_rule(dtype):
    names = list(POOL_WINDOWS)
    x = windows_input(names, dtype)
    model = one_node("MaxPool", [x], {"kernel_shape": [2, 2], "strides": [2, 2]})
    (want,), (got,) = cpu_and_placed(model, feeds_of([x]))
    assert_bits_equal(got, device_max_pool(x, 2))
    for i, name in enumerate(names):
        if name in CPU_EP_AGREES:
            assert_bits_equal(got[:, i], want[:, i])


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_max_pool_is_bit_identical_without_nan_ties_or_all_minus_inf_windows(dtype):
    rng = np.random.default_rng(3)
    x = rng.integers(-40, 40, (2, 3, 8, 12)).astype(dtype) / 4  # many ties between equal nonzero values
    flat = x.reshape(-1)
    flat[rng.choice(flat.size, 40, replace=False)] = np.inf
    flat[rng.choice(flat.size, 40, replace=False)] = -np.inf
    x[x == 0] = -0.0  # zeros of one sign: a tie between equal bits is no tie
    x[0, 0, :2, :2] = -np.inf
    x[0, 0, 0, 0] = -7.0  # a window that is -inf but for one value
    for attrs in ({"kernel_shape": [2, 2], "strides": [2, 2]}, {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]},
                  {"kernel_shape": [2, 3], "strides": [1, 2], "ceil_mode": 1}):
        model = one_node("MaxPool", [x], attrs)
        (want,), (got,) = cpu_and_placed(model, feeds_of([x]))
        assert_bits_equal(got, want)


def test_cpu_ep_nan_answer_depends_on_the_input_width():
    # Why the device cannot match the CPU EP on NaN windows: MLAS picks its kernel by shape, and the
    # same 2x1 window [nan; 1] gives NaN for an input 1 wide and 1.0 for one 8 wide.
    answers = []
    for width in (1, 8):
        x = np.array([[np.nan] * width, [1.0] * width], np.float32).reshape(1, 1, 2, width)
        model = one_node("MaxPool", [x], {"kernel_shape": [2, 1], "strides": [2, 1]})
        cpu = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        answers.append(cpu.run(None, feeds_of([x]))[0].ravel()[0])
    assert np.isnan(answers[0]) and answers[1] == 1.0, answers


def test_average_pool_3d_inclusive_asymmetric_pads_fail_on_atlas_a2_naming_the_node():
    # CANN AvgPool3D on Atlas A2/A3 divides as if each back pad were the front one (simulated as
    # documented): the placed kernel refuses rather than give a wrong average. Exclusive: fine.
    x = RNG.uniform(-3, 3, (1, 2, 3, 4, 5)).astype(np.float32)
    attrs = {"kernel_shape": [2, 2, 2], "pads": [0, 1, 0, 0, 0, 1]}
    inputs = [x]
    (want,), (got,) = cpu_and_placed(one_node("AveragePool", inputs, attrs), feeds_of(inputs))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    model = one_node("AveragePool", inputs, {**attrs, "count_include_pad": 1}, name="pool3d")
    session = cann_ep.session(model)
    assert [e.where for e in session.placement.nodes] == ["placed"], session.placement.summary()
    with pytest.raises(Exception, match=r"AveragePool node 'pool3d' on CANN: count_include_pad with pads "
                                        r"\[0, 0, 1, 0, 0, 1\] .* Atlas A2/A3"):
        session.run(None, feeds_of(inputs))


def test_max_pool_window_with_nan_is_nan_on_the_device():
    # 2x2 windows, stride 1 over [[1, nan, 2], [3, 4, 5]]: both windows hold the NaN. (The CPU EP
    # returns [nan, 5.0] here: the difference docs/placement.md states.)
    x = np.array([[1, np.nan, 2], [3, 4, 5]], np.float32).reshape(1, 1, 2, 3)
    session = cann_ep.session(one_node("MaxPool", [x], {"kernel_shape": [2, 2]}))
    (got,) = session.run(None, feeds_of([x]))
    assert got.shape == (1, 1, 1, 2) and np.isnan(got).all(), got


# -- ScatterND (add): CANN ScatterNonAliasingAdd takes indices in [0, size) -------------------------

@pytest.mark.parametrize("reduction, cann_op", [("add", "ScatterNonAliasingAdd"), ("none", "ScatterNdUpdate")])
@pytest.mark.parametrize("bad", [-21, 20])  # outside ONNX's [-20, 20)
def test_scatter_nd_index_outside_the_data_fails_naming_the_node(bad, reduction, cann_op):
    data, updates = np.zeros((20, 3), np.float32), np.ones((2, 3), np.float32)
    indices = np.array([[1], [2]], np.int64)
    model = one_node("ScatterND", [data, indices, updates], {"reduction": reduction}, name="grad_of_table")
    session = cann_ep.session(model)
    assert [e.where for e in session.placement.nodes] == ["placed"], session.placement.summary()
    np.testing.assert_array_equal(session.run(None, feeds_of([data, indices, updates]))[0][1:3], updates)
    with pytest.raises(Exception, match=r"ScatterND node 'grad_of_table' on CANN: the device failed running CANN "
                                        + cann_op):
        session.run(None, feeds_of([data, np.array([[1], [bad]], np.int64), updates]))


@pytest.mark.parametrize("reduction, dtype, why", [
    ("max", np.float32, r"reduction 'max': only 'add' \(CANN ScatterNonAliasingAdd\) and 'none'"),
    ("mul", np.float32, r"reduction 'mul'"),
    ("add", np.int64, r"reduction 'add' of this type: CANN ScatterNonAliasingAdd takes float32, float16, int32"),
])
def test_scatter_nd_not_placed_says_why(reduction, dtype, why):
    indices = np.array([[1]], np.int64)
    model = one_node("ScatterND", [np.zeros((4, 2), dtype), indices, np.ones((1, 2), dtype)],
                     {"reduction": reduction}, consts=[1])
    (entry,) = cann_ep.session(model).placement.nodes
    assert entry.where != "placed" and __import__("re").search(why, str(entry.reason)), entry


def test_scatter_nd_add_negative_indices_count_from_the_end():
    data, updates = np.zeros((4, 3, 2), np.float32), np.arange(12, dtype=np.float32).reshape(3, 2, 2)
    indices = np.array([[[-1, 0], [3, -3]], [[0, -1], [-4, 2]], [[-1, 0], [1, 1]]], np.int64)  # repeats too
    inputs = [data, indices, updates]
    want, got = cpu_and_placed(one_node("ScatterND", inputs, {"reduction": "add"}), feeds_of(inputs))
    assert_bits_equal(got[0], want[0])


# -- Clip: the bounds are read on the host ---------------------------------------------------------

def test_clip_with_bounds_fed_at_run_time_is_placed():
    x = np.array([[-2.0, 0.5, 3.0]], np.float32)
    session = cann_ep.session(one_node("Clip", [x, np.float32(0), np.float32(1)], name="clamp"))
    assert [e.where for e in session.placement.nodes] == ["placed"], session.placement.summary()
    for low, high in ((0.0, 1.0), (-3.0, 2.5), (1.0, 0.0)):
        (got,) = session.run(None, {"in0": x, "in1": np.array(low, np.float32), "in2": np.array(high, np.float32)})
        assert_bits_equal(got, np.minimum(np.maximum(x, np.float32(low)), np.float32(high)))
    with pytest.raises(Exception, match=r"Clip node 'clamp' on CANN: max of shape \[2\] is not a scalar"):
        symbolic = one_node("Clip", [x, np.float32(0), np.array([1, 2], np.float32)], symbolic=True, name="clamp")
        cann_ep.session(symbolic).run(None, {"in0": x, "in1": np.array(0, np.float32),
                                             "in2": np.array([1, 2], np.float32)})


@pytest.mark.parametrize("low, high", [(-1.0, 1.0), (0.5, -0.5), (-np.inf, 0.0), (2.0, 2.0)])
def test_clip_is_the_onnx_result(low, high):
    x = np.array([[-3.0, -0.5, 0.0, 0.25], [0.75, 2.0, np.inf, -np.inf]], np.float32)
    inputs = [x, np.float32(low), np.float32(high)]
    want, got = cpu_and_placed(one_node("Clip", inputs, consts=[1, 2]), feeds_of(inputs, consts=[1, 2]))
    assert_bits_equal(got[0], want[0])
    assert_bits_equal(got[0], np.minimum(np.maximum(x, np.float32(low)), np.float32(high)))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_clip_without_a_bound_clamps_to_the_largest_finite_value(dtype):
    # ONNX's defaults are numeric_limits<T>::lowest() / max(): an infinity becomes the largest finite value.
    x = np.array([-np.inf, -1.0, 0.0, 3.0, np.inf], dtype)
    finfo = np.finfo(dtype)
    for inputs, consts in (([x], []), ([x, np.array(-2.0, dtype)], [1]), ([x, None, np.array(2.0, dtype)], [2])):
        want, got = cpu_and_placed(one_node("Clip", inputs, consts=consts), feeds_of(inputs, consts=consts))
        low = inputs[1] if len(inputs) > 1 and inputs[1] is not None else finfo.min
        high = inputs[2] if len(inputs) > 2 else finfo.max
        assert_bits_equal(got[0], np.minimum(np.maximum(x, dtype(low)), dtype(high)))
        assert_bits_equal(got[0], want[0])


# -- GatherND: positions of the flattened leading dims (batch dims first) --------------------------------

def gather_nd_ref(x, indices):
    k = indices.shape[-1]
    tuples = indices.reshape(-1, k)
    rows = [x[tuple(int(c) for c in t)] for t in tuples]
    return np.stack(rows).reshape(indices.shape[:-1] + x.shape[k:]) if rows else \
        np.zeros(indices.shape[:-1] + x.shape[k:], x.dtype)


@pytest.mark.parametrize("indices", [
    np.array([[1, 2], [-1, -1], [0, 0]], np.int64), np.array([[[1]], [[0]]], np.int64),
    np.array([[0, 1, 2], [1, 0, 3]], np.int64), np.zeros((0, 2), np.int64)])
def test_gather_nd_is_numpy_indexing(indices):
    x = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4) - 11.5
    if indices.shape[-1] == 2 and indices.size:
        indices = np.minimum(indices, 1)  # dims [2, 3]: keep in range
    want, got = cpu_and_placed(one_node("GatherND", [x, indices]), feeds_of([x, indices]))
    assert_bits_equal(got[0], want[0])
    assert_bits_equal(got[0], gather_nd_ref(x, np.where(indices < 0, indices + np.array(x.shape[:indices.shape[-1]]),
                                                        indices)))


def test_gather_nd_index_out_of_range_fails_naming_the_node():
    x = np.ones((2, 3), np.float32)
    session = cann_ep.session(one_node("GatherND", [x, np.array([[0, 1]], np.int64)], symbolic=True, name="window"))
    assert [e.where for e in session.placement.nodes] == ["placed"], session.placement.summary()
    with pytest.raises(Exception, match=r"GatherND node 'window' on CANN: index 3 \(tuple 1\) is out of range "
                                        r"\[-3, 2\] for dim 1"):
        session.run(None, {"in0": x, "in1": np.array([[0, 1], [1, 3]], np.int64)})


def test_gather_nd_not_placed_says_why():
    model = one_node("GatherND", [np.ones((2, 3), np.int64), np.array([[0], [1]], np.int64)])
    (entry,) = cann_ep.session(model).placement.nodes
    assert entry.where != "placed" and "CANN GatherElementsV2 takes float32" in str(entry.reason), entry


@pytest.mark.parametrize("batch_dims", [1, 2])
def test_gather_nd_batch_dims_is_numpy_indexing_per_batch(batch_dims):
    """batch_dims b: batch i's tuples index data[i] (ONNX), checked against NumPy per batch."""
    rng = np.random.default_rng(5)
    x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5) - 50
    k = 4 - batch_dims - 1
    indices = np.stack([rng.integers(0, x.shape[batch_dims + c], (2, 3, 6)[:batch_dims] + (4,)) for c in range(k)],
                       -1).astype(np.int64)
    want, got = cpu_and_placed(one_node("GatherND", [x, indices], {"batch_dims": batch_dims}), feeds_of([x, indices]))
    ref = np.stack([gather_nd_ref(x[b], indices[b]) for b in np.ndindex(*x.shape[:batch_dims])]).reshape(got[0].shape)
    assert_bits_equal(got[0], ref)
    assert_bits_equal(got[0], want[0])


def test_gather_nd_batch_dims_that_differ_fail_naming_the_node():
    x, indices = np.ones((2, 3, 4), np.float32), np.zeros((3, 1, 1), np.int64)
    model = one_node("GatherND", [x, indices], {"batch_dims": 1}, symbolic=True, name="rows")
    session = cann_ep.session(model)
    assert [e.where for e in session.placement.nodes] == ["placed"], session.placement.summary()
    with pytest.raises(Exception, match=r"GatherND node 'rows' on CANN: indices of shape \[3, 1, 1\] and data of "
                                        r"shape \[2, 3, 4\] differ in the first batch_dims \(1\) dims"):
        session.run(None, feeds_of([x, indices]))


# -- Gather of constant indices: the positions are copied to the device once per session ---------

def test_gather_constant_positions_copied_once_per_data_shape():
    """Constant indices that are no run of positions (the adaptive pooling's windows) are copied to
    the device on the first run only: later runs copy just the data in and the output out. A run of
    another data shape (a dim_param axis; negative indices name other positions) copies its own."""
    from ort_ops.cann_ep import sim

    indices = np.array([[-1, 0], [2, -2]], np.int64)
    model = one_node("Gather", [f32_like((4, 3)), indices], {"axis": 0}, consts=[1], symbolic=True)
    session = cann_ep.session(model)
    assert [e.where for e in session.placement.nodes] == ["placed"], session.placement.summary()

    def run(rows):
        x = RNG.standard_normal((rows, 3)).astype(np.float32)
        before = sim.stat("copies_h2d")
        (got,) = session.run(None, {"in0": x})
        np.testing.assert_array_equal(got, x[np.where(indices < 0, indices + rows, indices)])  # ONNX's Gather
        return sim.stat("copies_h2d") - before

    assert run(4) == 2  # the data and, once, the positions
    assert [run(4) for _ in range(3)] == [1, 1, 1]
    assert run(5) == 2  # other positions: its own copy, the cached ones untouched
    assert run(4) == 1


def f32_like(shape):
    return RNG.standard_normal(shape).astype(np.float32)


# -- Pow of integers: exact, where the CPU EP's double pow rounds ---------------------------------

def test_pow_int64_is_exact_beyond_2_to_the_53():
    """3 ** 39 (> 2^53) exactly, as ONNX's reference (NumPy's integer power) has it; ORT's CPU EP
    computes through double and is 11 off. Negative exponents of +-1 and 2 as NumPy would give them
    (1, -1 for an odd power, 1/2 truncated to 0)."""
    base = np.array([3, -3, 1, -1, -1, 2, 7], np.int64)
    exponent = np.array([39, 39, -5, -3, -4, -1, 0], np.int64)
    session = cann_ep.session(one_node("Pow", [base, exponent]))
    assert [e.where for e in session.placement.nodes] == ["placed"], session.placement.summary()
    (got,) = session.run(None, feeds_of([base, exponent]))
    want = np.array([3 ** 39, -(3 ** 39), 1, -1, 1, 0, 1], np.int64)  # Python's exact integers
    np.testing.assert_array_equal(got, want)
    (cpu,) = ort.InferenceSession(one_node("Pow", [base, exponent]).SerializeToString(),
                                  providers=["CPUExecutionProvider"]).run(None, feeds_of([base, exponent]))
    assert cpu[0] != want[0]  # the CPU EP's rounding (if this fails, ORT changed: the docs say it differs)


def test_pow_of_an_integer_base_to_a_float_power_is_not_placed():
    base, exponent = np.array([2, 3], np.int32), np.array([0.5, 2.0], np.float32)
    session = cann_ep.session(one_node("Pow", [base, exponent]))
    (entry,) = session.placement.nodes
    assert entry.where != "placed" and "integer base to a float power" in entry.reason, entry


# -- AveragePool with dilations: against ONNX's reference evaluator ------------------------------

DILATED_POOLS = [  # x shape, attributes
    ((1, 2, 9, 8), {"kernel_shape": [3, 2], "strides": [2, 2], "dilations": [2, 2], "pads": [1, 0, 1, 1],
                    "count_include_pad": 1, "ceil_mode": 1}),  # the CPU EP does not count the end pad's tap
    ((1, 2, 9, 8), {"kernel_shape": [3, 2], "strides": [2, 2], "dilations": [2, 2], "pads": [1, 0, 1, 1],
                    "count_include_pad": 1}),
    ((2, 1, 7, 6, 5), {"kernel_shape": [2, 2, 2], "strides": [2, 1, 2], "dilations": [3, 2, 2],
                       "pads": [1, 1, 0, 0, 1, 1], "count_include_pad": 1, "ceil_mode": 1}),
    ((2, 1, 7, 6, 5), {"kernel_shape": [2, 2, 2], "strides": [2, 1, 2], "dilations": [3, 2, 2],
                       "pads": [1, 1, 0, 0, 1, 1], "count_include_pad": 0, "ceil_mode": 1}),
    ((1, 3, 11), {"kernel_shape": [4], "strides": [3], "dilations": [2], "pads": [3, 1], "ceil_mode": 1}),
    ((1, 1, 32, 32, 32), {"kernel_shape": [5, 5, 5], "strides": [3, 3, 3], "dilations": [2, 2, 2],
                          "count_include_pad": 1, "ceil_mode": 1}),  # ONNX's node test (see docs/cann_ops.md)
]


@pytest.mark.parametrize("shape,attrs", DILATED_POOLS, ids=[f"case{i}" for i in range(len(DILATED_POOLS))])
def test_dilated_average_pool_matches_onnx_reference(shape, attrs):
    from onnx.reference import ReferenceEvaluator

    x = RNG.standard_normal(shape).astype(np.float32)
    model = one_node("AveragePool", [x], attrs)
    (want,) = ReferenceEvaluator(model).run(None, feeds_of([x]))
    session = cann_ep.session(model)
    assert [e.where for e in session.placement.nodes] == ["placed"], session.placement.summary()
    (got,) = session.run(None, feeds_of([x]))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    (ones,) = session.run(None, feeds_of([np.ones_like(x)]))  # the divisors alone, exactly
    (want_ones,) = ReferenceEvaluator(model).run(None, feeds_of([np.ones_like(x)]))
    np.testing.assert_allclose(ones, want_ones, rtol=1e-7)


def test_dilated_average_pool_of_another_spatial_shape_copies_its_own_divisors():
    """The ones and divisors are cached for the first spatial shape; a run of another (a dim_param
    input) builds its own and leaves the cache alone."""
    from onnx.reference import ReferenceEvaluator

    from ort_ops.cann_ep import sim

    attrs = {"kernel_shape": [3, 3], "dilations": [2, 2], "pads": [1, 1, 2, 2], "count_include_pad": 0}
    model = one_node("AveragePool", [f32_like((1, 2, 9, 9))], attrs, symbolic=True)
    session = cann_ep.session(model)
    assert [e.where for e in session.placement.nodes] == ["placed"], session.placement.summary()
    for side, copies in ((9, 2), (9, 1), (12, 2), (9, 1)):
        x = f32_like((1, 2, side, side))
        before = sim.stat("copies_h2d")
        (got,) = session.run(None, {"in0": x})
        assert sim.stat("copies_h2d") - before == copies, side
        (want,) = ReferenceEvaluator(one_node("AveragePool", [x], attrs)).run(None, {"in0": x})
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_dilated_average_pool_beyond_conv3d_limits_is_not_placed():
    x = f32_like((1, 1, 4, 300))
    session = cann_ep.session(one_node("AveragePool", [x], {"kernel_shape": [1, 2], "dilations": [1, 256]}))
    (entry,) = session.placement.nodes
    assert entry.where != "placed" and "Conv3DV2's limits" in entry.reason, entry


# -- Pad: what ONNX leaves undefined fails by name; wrap stays off CANN ---------------------------

def test_pad_reflect_with_negative_pads_fails_naming_the_node():
    x = f32_like((3, 5))
    session = cann_ep.session(one_node("Pad", [x, np.array([-1, 0, 2, 0], np.int64)], {"mode": "reflect"},
                                       consts=[1], name="mirror"))
    assert [e.where for e in session.placement.nodes] == ["placed"], session.placement.summary()
    with pytest.raises(Exception, match=r"Pad node 'mirror' on CANN: reflect with negative pads"):
        session.run(None, {"in0": x})


def test_pad_wrap_is_not_placed():
    x = f32_like((3, 5))
    session = cann_ep.session(one_node("Pad", [x, np.array([0, 1, 0, 1], np.int64)], {"mode": "wrap"}, consts=[1]))
    (entry,) = session.placement.nodes
    assert entry.where != "placed" and "Ascend 950 only" in entry.reason, entry
