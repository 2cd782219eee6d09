"""Nodes computed from constants only (rewrite/placement/computed_once.py) on the CANN EP: the
placement report says ``folded`` exactly for the nodes ONNX Runtime's constant folding removes
(none of them in the profile), everything else runs where the report says (the profile), and the
results equal the CPU EP's. Before, a static shape's ``Shape -> Gather -> Range -> Cast`` was placed
node by node: a Gather launch on the device each run, a device-to-host copy, ``Range`` on the CPU
and a copy back, where ONNX Runtime computes the whole chain once."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

import ort_ops
from ort_ops.domain import IR_VERSION

cann_ep = pytest.importorskip("ort_ops.cann_ep")
CANN, CPU = "CANNExecutionProvider", "CPUExecutionProvider"

pytestmark = pytest.mark.usefixtures("cann_simulator")


def model_of(nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    m.ir_version = IR_VERSION
    return m


def vi(name, shape, elem=TP.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def const(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


def positions_model(batch):
    """y = x + float(range(x.shape[1])): the position spelled from the input's shape."""
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "one"], ["n"], name="gather", axis=0),
             helper.make_node("Range", ["zero", "n", "one"], ["r"], name="range"),
             helper.make_node("Cast", ["r"], ["rf"], name="cast", to=TP.FLOAT),
             helper.make_node("Add", ["x", "rf"], ["y"], name="add")]
    return model_of(nodes, [vi("x", [batch, 8])], [vi("y", [batch, 8])],
                    [const("one", np.int64(1)), const("zero", np.int64(0))])


def run_both(model, feeds, tmp_path, **session_kwargs):
    session = cann_ep.session(model, profile_prefix=str(tmp_path / "p"), **session_kwargs)
    got = session.run(None, feeds)
    session.run(None, feeds)
    cpu = ort.InferenceSession(model.SerializeToString(), ort_ops.register(ort.SessionOptions()), providers=[CPU])
    for g, w in zip(got, cpu.run(None, feeds), strict=True):
        np.testing.assert_array_equal(g, w)
    runs = cann_ep.node_runs(session)
    copies.extend(r.op_type for r in runs if r.op_type.startswith("Memcpy"))
    return session.placement, {r.node: r.provider for r in runs if not r.op_type.startswith("Memcpy")}


#: the Memcpy nodes ONNX Runtime inserted in the sessions run_both made (cleared per test)
copies: list[str] = []


@pytest.fixture(autouse=True)
def _no_copies_carried_over():
    copies.clear()


def where(report):
    return {n.node: n.where for n in report.nodes}


def assert_report_is_what_runs(report, ran):
    """Folded nodes do not run; placed and EP nodes run on CANN, CPU nodes on the CPU EP."""
    expected = {n.node: {"cpu": CPU, "folded": None}.get(n.where, CANN) for n in report.nodes}
    assert {node: p for node, p in expected.items() if p is not None} == ran


def test_a_static_shapes_chain_is_computed_once(tmp_path):
    feeds = {"x": np.arange(32, dtype=np.float32).reshape(4, 8)}
    report, ran = run_both(positions_model(4), feeds, tmp_path)
    assert where(report) == {"shape": "folded", "gather": "folded", "range": "folded", "cast": "folded",
                             "add": "placed"}
    assert_report_is_what_runs(report, ran)


def test_a_symbolic_dimension_leaves_shape_and_range_to_run(tmp_path):
    """x's first dimension is symbolic, the second static: ONNX Runtime folds no Shape of it, so
    Shape and Range run on the CPU (neither has a CANN kernel), Gather and Cast on the device."""
    feeds = {"x": np.ones((3, 8), np.float32)}
    report, ran = run_both(positions_model("batch"), feeds, tmp_path)
    assert where(report) == {"shape": "cpu", "gather": "placed", "range": "cpu", "cast": "placed",
                             "add": "placed"}
    assert_report_is_what_runs(report, ran)
    shape = next(n for n in report.nodes if n.node == "shape")
    assert "copies the whole input to the host" in shape.reason and "free_dimensions" in shape.reason
    assert "MemcpyToHost" in copies  # what the reason says it costs


def test_free_dimensions_make_a_dynamic_axes_shapes_chain_computed_once(tmp_path):
    """The symbolic batch given a size: the same graph as above folds like a static one, and no
    Memcpy node runs; an input of another batch size is refused by name."""
    feeds = {"x": np.ones((3, 8), np.float32)}
    report, ran = run_both(positions_model("batch"), feeds, tmp_path, free_dimensions={"batch": 3})
    assert where(report) == {"shape": "folded", "gather": "folded", "range": "folded", "cast": "folded",
                             "add": "placed"}
    assert_report_is_what_runs(report, ran)
    assert copies == []
    session = cann_ep.session(positions_model("batch"), free_dimensions={"batch": 3})
    with pytest.raises(Exception, match=r"(?s)input: x .*index: 0 Got: 4 Expected: 3"):
        session.run(None, {"x": np.ones((4, 8), np.float32)})


def flatten_model(batch):
    """y = reshape(elu(x), [x.shape[0], -1]): the TorchScript exporter's spelling of a flatten with a
    dynamic batch; the Shape reads the output of a placed node."""
    nodes = [helper.make_node("Elu", ["x"], ["e"], name="elu"),
             helper.make_node("Shape", ["e"], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "zero"], ["n"], name="gather", axis=0),
             helper.make_node("Unsqueeze", ["n", "axes"], ["n1"], name="unsqueeze"),
             helper.make_node("Concat", ["n1", "minus_one"], ["target"], name="concat", axis=0),
             helper.make_node("Reshape", ["e", "target"], ["y"], name="reshape")]
    return model_of(nodes, [vi("x", [batch, 2, 3])], [vi("y", [batch, 6])],
                    [const("zero", np.int64(0)), const("axes", np.array([0], np.int64)),
                     const("minus_one", np.array([-1], np.int64))])


@pytest.mark.parametrize("batch, free", [(4, None), ("batch", {"batch": 4})])
def test_a_shape_read_after_a_placed_node_is_computed_once(tmp_path, batch, free):
    """ONNX Runtime infers no shape through a custom op: without the placed Elu's output shape in
    value_info it ran the Shape on the CPU (copying e to the host), where the report said folded."""
    feeds = {"x": np.arange(24, dtype=np.float32).reshape(4, 2, 3)}  # Elu exact: CANN and CPU agree
    report, ran = run_both(flatten_model(batch), feeds, tmp_path, free_dimensions=free)
    assert where(report) == {"elu": "placed", "shape": "folded", "gather": "folded", "unsqueeze": "folded",
                             "concat": "folded", "reshape": "placed"}
    assert_report_is_what_runs(report, ran)
    assert copies == []


def test_constants_and_a_weights_transpose_are_computed_once(tmp_path):
    w = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    nodes = [helper.make_node("Constant", [], ["k"], name="k", value=const("kv", np.float32(0.5))),
             helper.make_node("Transpose", ["w"], ["wt"], name="transpose", perm=[2, 0, 1]),
             helper.make_node("Mul", ["wt", "k"], ["wk"], name="scale"),
             helper.make_node("Add", ["x", "wk"], ["y"], name="add")]
    model = model_of(nodes, [vi("x", [4, 2, 3])], [vi("y", [4, 2, 3])], [const("w", w)])
    report, ran = run_both(model, {"x": np.ones((4, 2, 3), np.float32)}, tmp_path)
    assert where(report) == {"k": "folded", "transpose": "folded", "scale": "folded", "add": "cann_ep"}
    assert_report_is_what_runs(report, ran)


def test_an_initializer_a_graph_input_can_replace_is_not_a_constant(tmp_path):
    """IR 3 style: w is an initializer and a graph input, so a feed may replace it: ONNX Runtime
    does not fold the Transpose reading it, and placement places it."""
    w = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    nodes = [helper.make_node("Transpose", ["w"], ["wt"], name="transpose", perm=[2, 0, 1]),
             helper.make_node("Add", ["x", "wt"], ["y"], name="add")]
    model = model_of(nodes, [vi("x", [4, 2, 3]), vi("w", [2, 3, 4])], [vi("y", [4, 2, 3])], [const("w", w)])
    report, ran = run_both(model, {"x": np.ones((4, 2, 3), np.float32)}, tmp_path)
    assert where(report)["transpose"] != "folded"
    assert_report_is_what_runs(report, ran)


def test_random_ops_are_not_computed_once(tmp_path):
    """RandomNormalLike of a constant differs from run to run: never folded, placed or left as it is."""
    nodes = [helper.make_node("RandomNormalLike", ["c"], ["noise"], name="noise", seed=1.0),
             helper.make_node("Mul", ["noise", "zero"], ["z"], name="mul"),
             helper.make_node("Add", ["x", "z"], ["y"], name="add")]
    model = model_of(nodes, [vi("x", [2, 3])], [vi("y", [2, 3])],
                     [const("c", np.zeros((2, 3), np.float32)), const("zero", np.float32(0.0))])
    report, ran = run_both(model, {"x": np.ones((2, 3), np.float32)}, tmp_path)
    assert "folded" not in {where(report)["noise"], where(report)["mul"]}
    assert_report_is_what_runs(report, ran)


def test_without_constant_folding_nothing_is_reported_folded(tmp_path):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = cann_ep.session(positions_model(4), session_options=so)
    assert "folded" not in where(session.placement).values()
    x = np.ones((4, 8), np.float32)
    np.testing.assert_array_equal(session.run(None, {"x": x})[0], x + np.arange(8, dtype=np.float32))


def test_the_placed_model_is_still_valid_onnx():
    from ort_ops.rewrite.placement import place, unplace

    placed = place(positions_model(4), soc="Ascend910B1")
    onnx.checker.check_model(unplace(placed), full_check=True)
    assert [n.domain for n in placed.graph.node if n.op_type in ("Shape", "Gather", "Range", "Cast")] == [""] * 4
