"""The placement pass folds Transposes (rewrite/placement/transposes.py): into the Gemm / MatMul
nodes that read them (transA / transB) and into the Transpose they undo, and leaves every other
Transpose alone. Each graph is also run on the CPU EP before and after (the placed graph
unplaced: standard ONNX), and the results must agree (to the summation order of a product). The
expected folds are written out per case; the real exported graphs: tests/rewrite/test_real_graphs.py
(h)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from ort_ops.domain import IR_VERSION
from ort_ops.library import has_cann_kernels
from ort_ops.rewrite.placement import PlacementReport, place, unplace

pytestmark = pytest.mark.skipif(not has_cann_kernels(), reason="library built without CANN kernels")


def model_of(nodes, inputs, outputs, inits=(), opset=20):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = IR_VERSION if opset >= 13 else 7
    return m


def vi(name, shape, elem=TP.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def T(x, y, perm=(1, 0), name=None):
    return helper.make_node("Transpose", [x], [y], name=name or f"T_{y}", perm=list(perm))


def folded(model, **kw):
    report = PlacementReport()
    placed = place(model, soc="Ascend910B1", report=report, **kw)
    return placed, {n.node: n.reason for n in report.nodes if n.where == "folded"}


def run_cpu(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def assert_same_results(before, after, feeds):
    """The same values up to the order a product's terms are summed in: the CPU EP's Gemm with a
    transpose flag need not add them as its MatMul of the transposed copy does (the CPU model and
    MLAS's kernel for it decide), so within float32 rounding of these short sums."""
    onnx.checker.check_model(unplace(after), full_check=True)
    for a, b in zip(run_cpu(before, feeds), run_cpu(unplace(after), feeds), strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-6)


RNG = np.random.default_rng(3)
X = RNG.standard_normal((4, 6)).astype(np.float32)
W = RNG.standard_normal((5, 6)).astype(np.float32)  # [out, in], as nn.Linear
BIAS = RNG.standard_normal(5).astype(np.float32)


def linear_backward_model():
    """nn.Linear as torch exports it: y = Gemm(x, T(W)) + dX = dY @ T(T(W)), dW = T(dY) @ x."""
    nodes = [T("w", "wt"), helper.make_node("Gemm", ["x", "wt", "b"], ["y"], name="fwd"),
             T("wt", "wtt"), helper.make_node("MatMul", ["dy", "wtt"], ["dx"], name="dx_mm"),
             T("dy", "dyt"), helper.make_node("MatMul", ["dyt", "x"], ["dw"], name="dw_mm")]
    inits = [numpy_helper.from_array(W, "w"), numpy_helper.from_array(BIAS, "b")]
    return model_of(nodes, [vi("x", [4, 6]), vi("dy", [4, 5])], [vi("y", [4, 5]), vi("dx", [4, 6]), vi("dw", [5, 6])],
                    inits)


def test_a_linear_layers_transposes_all_go():
    m = linear_backward_model()
    placed, reasons = folded(m)
    assert not [n for n in placed.graph.node if "Transpose" in n.op_type]
    assert set(reasons) == {"T_wt", "T_wtt", "T_dyt"}
    assert "undoes Transpose T_wt: its consumers read w" in reasons["T_wtt"]
    by_name = {n.name: n for n in placed.graph.node}
    attrs = lambda n: {a.name: helper.get_attribute_value(a) for a in n.attribute}
    assert list(by_name["fwd"].input) == ["x", "w", "b"] and attrs(by_name["fwd"]) == {"transB": 1}
    assert by_name["dx_mm"].op_type == "MatMul" and list(by_name["dx_mm"].input) == ["dy", "w"]
    # T(dy) @ x: a Gemm with transA, placed on CANN
    assert by_name["dw_mm"].op_type == "Gemm" and list(by_name["dw_mm"].input) == ["dy", "x"]
    assert attrs(by_name["dw_mm"]) == {"transA": 1} and by_name["dw_mm"].domain == "ai.ortops.cann"
    feeds = {"x": X, "dy": RNG.standard_normal((4, 5)).astype(np.float32)}
    assert_same_results(m, placed, feeds)
    assert place(placed, soc="Ascend910B1").SerializeToString() == placed.SerializeToString()  # idempotent


def test_a_transpose_already_flagged_and_read_twice():
    """Gemm(T(a), b, transA=1) reads a itself; MatMul(T(s), T(s)) gets both flags."""
    nodes = [T("a", "at"), helper.make_node("Gemm", ["at", "b"], ["g"], name="g", transA=1),
             T("s", "st"), helper.make_node("MatMul", ["st", "st"], ["mm"], name="mm")]
    m = model_of(nodes, [vi("a", [4, 3]), vi("b", [3, 2]), vi("s", [3, 3])], [vi("g", [4, 2]), vi("mm", [3, 3])])
    placed, reasons = folded(m)
    assert set(reasons) == {"T_at", "T_st"}
    by_name = {n.name: n for n in placed.graph.node}
    assert list(by_name["g"].input) == ["a", "b"] and not by_name["g"].attribute  # transA toggled to 0
    assert list(by_name["mm"].input) == ["s", "s"]
    assert {a.name: a.i for a in by_name["mm"].attribute} == {"transA": 1, "transB": 1}
    feeds = {"a": RNG.standard_normal((4, 3)).astype(np.float32), "b": RNG.standard_normal((3, 2)).astype(np.float32),
             "s": RNG.standard_normal((3, 3)).astype(np.float32)}
    assert_same_results(m, placed, feeds)


CASES = {
    # name: (nodes, inputs, outputs, why the Transpose stays)
    "graph output": ([T("w", "wt"), helper.make_node("Gemm", ["x", "wt"], ["y"], name="g")],
                     [vi("x", [4, 6]), vi("w", [5, 6])], [vi("y", [4, 5]), vi("wt", [6, 5])]),
    "another consumer": ([T("w", "wt"), helper.make_node("Gemm", ["x", "wt"], ["y"], name="g"),
                          helper.make_node("Relu", ["wt"], ["r"], name="r")],
                         [vi("x", [4, 6]), vi("w", [5, 6])], [vi("y", [4, 5]), vi("r", [6, 5])]),
    "Gemm's C": ([T("c0", "ct"), helper.make_node("Gemm", ["x", "w", "ct"], ["y"], name="g")],
                 [vi("x", [4, 6]), vi("w", [6, 5]), vi("c0", [5, 4])], [vi("y", [4, 5])]),
    "3-D MatMul": ([T("w", "wt"), helper.make_node("MatMul", ["x3", "wt"], ["y"], name="mm")],
                   [vi("x3", [2, 4, 6]), vi("w", [5, 6])], [vi("y", [2, 4, 5])]),
    "4-D transpose": ([T("x4", "xt", perm=(0, 2, 1, 3)), helper.make_node("Relu", ["xt"], ["y"], name="r")],
                      [vi("x4", [1, 2, 3, 4])], [vi("y", [1, 3, 2, 4])]),
    "not inverse": ([T("x3", "a", perm=(1, 2, 0)), T("a", "b", perm=(1, 2, 0)),
                     helper.make_node("Relu", ["b"], ["y"], name="r")],
                    [vi("x3", [2, 3, 4])], [vi("y", [4, 2, 3])]),
    "identity perm": ([T("w", "wt", perm=(0, 1)), helper.make_node("Gemm", ["x", "wt"], ["y"], name="g")],
                      [vi("x", [4, 6]), vi("w", [6, 5])], [vi("y", [4, 5])]),
    "not placeable Gemm": ([T("w", "wt"), helper.make_node("Gemm", ["x", "wt"], ["y"], name="g")],  # no f64 kernel
                           [vi("x", [4, 6], TP.DOUBLE), vi("w", [5, 6], TP.DOUBLE)], [vi("y", [4, 5], TP.DOUBLE)]),
    "integer": ([T("i", "it"), helper.make_node("MatMul", ["j", "it"], ["y"], name="mm")],
                [vi("i", [5, 6], TP.INT32), vi("j", [4, 6], TP.INT32)], [vi("y", [4, 5], TP.INT32)]),
    "unknown shape": ([T("w", "wt"), helper.make_node("MatMul", ["xu", "wt"], ["y"], name="mm")],
                      [vi("xu", None), vi("w", [5, 6])], [vi("y", None)]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_transposes_that_stay(case):
    nodes, inputs, outputs = CASES[case]
    m = model_of(nodes, inputs, outputs)
    placed, reasons = folded(m)
    assert reasons == {}, reasons
    assert sum("Transpose" in n.op_type for n in placed.graph.node) == sum(n.op_type == "Transpose" for n in nodes)


def test_read_inside_a_subgraph_stays():
    then = helper.make_graph([helper.make_node("Identity", ["wt"], ["o"])], "then", [], [vi("o", [6, 5])])
    other = helper.make_graph([helper.make_node("Identity", ["w"], ["o2"])], "else", [], [vi("o2", [5, 6])])
    nodes = [T("w", "wt"), helper.make_node("Gemm", ["x", "wt"], ["y"], name="g"),
             helper.make_node("If", ["c"], ["z"], name="if", then_branch=then, else_branch=other)]
    m = model_of(nodes, [vi("x", [4, 6]), vi("w", [5, 6]), vi("c", [], TP.BOOL)], [vi("y", [4, 5]), vi("z", None)])
    assert folded(m)[1] == {}


def test_skip_and_old_opsets_leave_them():
    placed, reasons = folded(linear_backward_model(), skip=("Transpose",))
    assert sum(n.op_type == "Transpose" for n in placed.graph.node) == 3
    # the weight's two Transposes read an initializer: left to ONNX Runtime's constant folding
    assert set(reasons) == {"T_wt", "T_wtt"} and all("constant folding" in r for r in reasons.values())
    # opset 10: Gemm's C is required, so a MatMul cannot become Gemm(A, B); Gemm's own B still folds
    nodes = [T("w", "wt"), helper.make_node("MatMul", ["x", "wt"], ["y"], name="mm")]
    m = model_of(nodes, [vi("x", [4, 6]), vi("w", [5, 6])], [vi("y", [4, 5])], opset=10)
    assert folded(m)[1] == {}


def test_a_gemm_that_would_not_be_placed_keeps_its_transpose():
    """A scaled Gemm runs on CANN Muls + Axpy, which Ascend 310B lacks: the Gemm stays on the CPU,
    so folding its Transpose would only move the transpose into a CPU node; on 910B both go."""
    nodes = [T("w", "wt"), helper.make_node("Gemm", ["x", "wt"], ["y"], name="g", alpha=2.0)]
    m = model_of(nodes, [vi("x", [4, 6]), vi("w", [5, 6])], [vi("y", [4, 5])])
    report = PlacementReport()
    placed = place(m, soc="Ascend310B1", report=report)
    where = {n.node: n.where for n in report.nodes}
    assert where == {"T_wt": "placed", "g": "cpu"}, where
    assert [n.op_type for n in placed.graph.node][0].endswith("Transpose")
    assert folded(m)[1] == {"T_wt": "folded into g (transA/transB): they read w"}  # 910B1: placed, so folded
