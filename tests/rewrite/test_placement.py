"""The placement pass (rewrite.placement) on the CPU side: which node goes where and why, the
inverse, idempotence, and the tables it relies on. Running placed graphs on CANN:
tests/cann/test_placed_ops_on_cann.py and tests/cann/test_placement_on_cann.py."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from ort_ops.domain import CANN_DOMAIN, DOMAIN, IR_VERSION
from ort_ops.library import cann_op_unavailable, has_cann_kernels, kernel_signatures
from ort_ops.rewrite.placement import PlacementReport, ep_runs, place, unplace
from ort_ops.rewrite.placement.ops import RULES
from ort_ops.rewrite.placement.ops.cast import DESTINATIONS

pytestmark = pytest.mark.skipif(not has_cann_kernels(), reason="library built without CANN kernels")
OPSET = 20


def model_of(nodes, inputs, outputs, inits=(), opset=OPSET, extra_opsets=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), *extra_opsets])
    m.ir_version = IR_VERSION
    return m


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def where(report: PlacementReport) -> dict[str, tuple[str, str | None]]:
    return {n.node: (n.where, n.reason) for n in report.nodes}


def mixed_model():
    """One node per decision the pass makes; names say what is expected."""
    inits = [
        numpy_helper.from_array(np.zeros((8, 4), np.float32), "w"),
        numpy_helper.from_array(np.zeros(4, np.float32), "bias"),
        numpy_helper.from_array(np.array([4, 8], np.int64), "shape"),
        numpy_helper.from_array(np.array([0], np.int64), "zero"),
        numpy_helper.from_array(np.array([2], np.int64), "two"),
        numpy_helper.from_array(np.array([1], np.int64), "one"),
        numpy_helper.from_array(np.array([2, 3], np.int64), "cos_shape"),
    ]
    nodes = [
        helper.make_node("Gemm", ["x", "w", "bias"], ["gemm"], name="gemm_placed"),
        helper.make_node("Gemm", ["x", "w", "bias"], ["gemm2"], name="gemm_alpha_cpu", alpha=2.0),
        helper.make_node("Add", ["gemm", "gemm2"], ["same"], name="add_same_shape_ep"),
        helper.make_node("Add", ["gemm", "bias"], ["bcast"], name="add_broadcast_placed"),
        helper.make_node("Reshape", ["bcast", "shape"], ["r"], name="reshape_placed"),
        helper.make_node("Cast", ["labels"], ["lf"], name="cast_placed", to=TP.FLOAT),
        helper.make_node("MaxPool", ["img"], ["pooled", "idx"], name="maxpool_indices_cpu",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("MaxPool", ["img"], ["pooled2"], name="maxpool_placed", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Slice", ["gemm", "zero", "two", "one", "two"], ["sl"], name="slice_step2_cpu"),
        helper.make_node("GatherElements", ["gemm", "gidx"], ["ga"], name="gather_soc_cpu", axis=1),
        helper.make_node("Hardmax", ["gemm"], ["hm"], name="hardmax_cpu"),
        helper.make_node("MatMul", ["x", "w"], ["mm"], name="matmul_ep"),
        helper.make_node("EluGrad", ["gemm", "gemm2"], ["eg"], name="elugrad_ortops", domain=DOMAIN),
        helper.make_node("ConstantOfShape", ["cos_shape"], ["filled"], name="cos_folded",
                         value=numpy_helper.from_array(np.array([-1.5], np.float32))),
        helper.make_node("Mul", ["filled", "filled"], ["sq"], name="mul_same_shape_ep"),
    ]
    inputs = [vi("x", TP.FLOAT, [2, 8]), vi("labels", TP.INT64, [2]), vi("img", TP.FLOAT, [1, 2, 4, 4]),
              vi("gidx", TP.INT64, [2, 4])]
    outputs = [vi(n, TP.FLOAT, None) for n in ("same", "r", "lf", "pooled", "idx", "pooled2", "sl", "ga", "hm",
                                               "mm", "eg", "sq")]
    outputs[4] = vi("idx", TP.INT64, None)
    return model_of(nodes, inputs, outputs, inits, extra_opsets=[helper.make_opsetid(DOMAIN, 1)])


def test_each_node_goes_where_its_kernels_are():
    report = PlacementReport()
    placed = place(mixed_model(), soc="Ascend910B1", report=report)
    got = where(report)
    for name, (place_, reason) in got.items():
        assert place_ == {"placed": "placed", "cpu": "cpu", "ep": "cann_ep", "ortops": "ortops",
                          "folded": "folded"}[name.rsplit("_", 1)[1]], (name, place_, reason)
    assert "alpha=2.0" in got["gemm_alpha_cpu"][1]
    assert "Indices output is used" in got["maxpool_indices_cpu"][1]
    assert "steps [2]" in got["slice_step2_cpu"][1]
    assert "GatherElements is not available on Ascend910B1" in got["gather_soc_cpu"][1]
    assert "no CANN kernel" in got["hardmax_cpu"][1]
    by_name = {n.name: n for n in placed.graph.node}
    assert by_name["cast_placed"].op_type == "CastToFloat" and by_name["cast_placed"].domain == CANN_DOMAIN
    assert {(n.op_type, n.domain) for n in placed.graph.node if n.name.endswith("_ep")} <= {
        ("Add", ""), ("MatMul", ""), ("Mul", "")}
    assert any(o.domain == CANN_DOMAIN for o in placed.opset_import)


def test_constant_of_shape_is_folded_into_its_value():
    placed = place(mixed_model(), soc=None)
    filled = next(t for t in placed.graph.initializer if t.name == "filled")
    np.testing.assert_array_equal(numpy_helper.to_array(filled), np.full((2, 3), -1.5, np.float32))
    assert not any(n.op_type == "ConstantOfShape" for n in placed.graph.node)


def test_soc_decides_with_the_library_table():
    # Ascend 950 has every op of the table; 310B lacks e.g. ReduceSum and GatherElements.
    assert cann_op_unavailable("Ascend950PR", "GatherElements") is None
    assert cann_op_unavailable("Ascend910B1", "GatherElements") is not None
    assert cann_op_unavailable("Ascend310B1", "ReduceSum") is not None
    assert cann_op_unavailable("Ascend310P3", "Less") is not None
    assert cann_op_unavailable("Ascend910B1", "Less") is None
    assert cann_op_unavailable("SomethingElse", "EluGrad") is None  # unknown SoCs: assume available
    report = PlacementReport()
    place(mixed_model(), soc="Ascend950PR", report=report)
    assert where(report)["gather_soc_cpu"][0] == "placed"
    report = PlacementReport()
    place(mixed_model(), soc="Ascend310B1", report=report)
    # the CANN EP's own Add kernel still claims it (and would fail there: the README says x)
    add = where(report)["add_broadcast_placed"]
    assert add[0] == "cann_ep" and "not placed: CANN op Add is not available on Ascend310B1" in add[1]
    assert where(report)["reshape_placed"][0] == "placed"  # a device copy: no CANN op needed


def test_unplace_is_the_exact_inverse_and_place_is_idempotent():
    m = mixed_model()
    del m.graph.node[13:]  # (no ConstantOfShape: folding is not undone)
    before = m.SerializeToString()
    placed = place(m, soc="Ascend950PR")
    assert m.SerializeToString() == before, "the input model was mutated"
    assert unplace(placed).SerializeToString() == before  # (node domains are left unset, as here)
    assert place(placed, soc="Ascend950PR").SerializeToString() == placed.SerializeToString()


@pytest.mark.parametrize("fixture", ["mlp_elu_fp32", "cnn_elu_fp32", "mlp_elu_fp16"])
def test_placed_training_graphs_pass_the_checker(fixture):
    from models.fixtures import path_of

    model = onnx.load(path_of(fixture))
    placed = place(model, soc="Ascend950PR")
    onnx.checker.check_model(placed, full_check=True)
    assert sum(n.domain == CANN_DOMAIN for n in placed.graph.node) > 10


def test_old_opset_forms_are_not_placed():
    nodes = [helper.make_node("ReduceSum", ["x"], ["y"], name="rs", axes=[1], keepdims=0),
             helper.make_node("Squeeze", ["x"], ["z"], name="sq", axes=[0])]
    m = model_of(nodes, [vi("x", TP.FLOAT, [1, 3])], [vi("y", TP.FLOAT, None), vi("z", TP.FLOAT, None)], opset=11)
    report = PlacementReport()
    place(m, report=report)
    assert all(n.where == "cpu" and "opset 13+" in n.reason for n in report.nodes), report.summary()


def test_unknown_input_types_are_named():
    m = model_of([helper.make_node("Exp", ["x"], ["y"], name="exp")], [helper.make_value_info("x", onnx.TypeProto())],
                 [vi("y", TP.FLOAT, None)])
    report = PlacementReport()
    place(m, report=report)
    assert report.nodes[0].where == "cpu" and "types unknown" in report.nodes[0].reason


def test_dtype_without_kernel_is_named():
    m = model_of([helper.make_node("Exp", ["x"], ["y"], name="exp")], [vi("x", TP.DOUBLE, [3])],
                 [vi("y", TP.DOUBLE, None)])
    report = PlacementReport()
    place(m, report=report)
    assert report.nodes[0].where == "cpu" and "no ai.ortops.cann kernel for Exp(double)" in report.nodes[0].reason


def test_control_flow_is_left_alone():
    body = helper.make_graph([helper.make_node("Exp", ["x"], ["y"])], "body", [], [vi("y", TP.FLOAT, [3])])
    m = model_of([helper.make_node("If", ["c"], ["y"], name="if", then_branch=body, else_branch=body)],
                 [vi("c", TP.BOOL, []), vi("x", TP.FLOAT, [3])], [vi("y", TP.FLOAT, [3])])
    report = PlacementReport()
    placed = place(m, report=report)
    assert report.nodes[0].where == "cpu" and "control flow" in report.nodes[0].reason
    assert placed.graph.node[0].attribute[0].g.node[0].domain == ""


def test_ort_version_matching_of_the_cann_eps_kernels():
    # Facts checked on onnxruntime-cann 1.24.4 (issue 13): Reshape/Cast/Transpose of opset 20 stay
    # on the CPU (their kernels' opsets are exactly 14/13/1), MatMul 13+ and Mul 14+ run on CANN,
    # Gemm only for float16.
    assert not ep_runs("Cast", 20, "float32") and ep_runs("Cast", 13, "float32")
    assert not ep_runs("Reshape", 20, "float32") and ep_runs("Reshape", 14, "float32")
    assert not ep_runs("Transpose", 20, "float32")
    assert ep_runs("MatMul", 20, "float32") and ep_runs("Mul", 20, "float32")
    assert not ep_runs("Gemm", 20, "float32") and ep_runs("Gemm", 13, "float16")
    assert not ep_runs("Exp", 20, "float32") and ep_runs("Exp", 20, "float16")


def test_every_rule_has_a_kernel_and_every_kernel_a_rule():
    placed_ops = {k.op for k in kernel_signatures() if k.domain == CANN_DOMAIN}
    names = set()
    for op in RULES:
        names |= set(DESTINATIONS.values()) if op == "Cast" else {op}
    assert names == placed_ops
