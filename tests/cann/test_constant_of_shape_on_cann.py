"""ConstantOfShape that the placement pass does not fold (above MAX_CONSTANT_ELEMENTS, or a shape
computed at run time) is placed: filled on the device (issue 19, item 14). Expected values: the
CPU EP on the same one-node model, and NumPy."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from ort_ops.domain import IR_VERSION
from ort_ops.rewrite.placement import MAX_CONSTANT_ELEMENTS

cann_ep = pytest.importorskip("ort_ops.cann_ep")
PROVIDER = "CANNExecutionProvider"
OPSET = 20


pytestmark = pytest.mark.usefixtures("cann_simulator")


def model_of(nodes, inputs, inits=()):
    graph = helper.make_graph(nodes, "cos", inputs, [helper.make_empty_tensor_value_info("y")], list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    return model


def cos_node(value, source="shape"):
    attrs = {} if value is None else {"value": numpy_helper.from_array(np.array([value]))}
    return helper.make_node("ConstantOfShape", [source], ["y"], name="cos", **attrs)


def constant_shape_model(dims, value):
    return model_of([cos_node(value)], [], [numpy_helper.from_array(np.array(dims, np.int64), "shape")])


def run_both(model, feeds):
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    session = cann_ep.session(model)
    return want, session.run(None, feeds)[0], session.placement


VALUES = [np.float32(1.5), np.float16(-2.25), np.int64(-7), np.bool_(True), np.bool_(False), np.float32(0.0),
          np.int64(0x0101010101010101), None]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: "absent" if v is None else f"{type(v).__name__}{v}")
def test_constant_shape_above_the_fold_limit_is_filled_on_the_device(value):
    dims = [300, 300]
    assert dims[0] * dims[1] > MAX_CONSTANT_ELEMENTS
    want, got, placement = run_both(constant_shape_model(dims, value), {})
    expected = np.full(dims, np.float32(0) if value is None else value)
    assert got.dtype == want.dtype == expected.dtype and got.shape == want.shape == tuple(dims)
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    (node,) = placement.nodes
    assert node.where == "placed" and node.op_type == "ConstantOfShape", node
    assert f"not folded: 90000 elements > {MAX_CONSTANT_ELEMENTS}" in node.reason, node
    all_bytes_equal = value is None or len(set(np.array([value]).tobytes())) == 1
    assert node.cann_ops == (() if all_bytes_equal else ("Fill",)), node


@pytest.mark.parametrize("value", [np.float32(3.25), np.float16(0.5), np.int64(5), np.bool_(True)],
                         ids=lambda v: type(v).__name__)
def test_run_time_shape_from_a_shape_node(value):
    x = np.zeros((3, 4, 5), np.float32)
    model = model_of([helper.make_node("Shape", ["x"], ["shape"], name="shape_of_x"), cos_node(value)],
                     [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["a", "b", "c"])])
    want, got, placement = run_both(model, {"x": x})
    np.testing.assert_array_equal(got, np.full((3, 4, 5), value))
    np.testing.assert_array_equal(got, want)
    cos = next(n for n in placement.nodes if n.node == "cos")
    assert cos.where == "placed", placement.summary()
    assert cos.reason == "not folded: shape input 'shape' is not a constant the pass reads", cos


@pytest.mark.parametrize("dims", [[4, 0, 3], [0], []], ids=str)
def test_shape_from_a_graph_input_empty_and_scalar(dims):
    model = model_of([cos_node(np.float32(1.5))], [helper.make_tensor_value_info("shape", TensorProto.INT64, [None])])
    feeds = {"shape": np.array(dims, np.int64)}
    want, got, placement = run_both(model, feeds)
    assert got.shape == want.shape == tuple(dims) and got.dtype == np.float32
    np.testing.assert_array_equal(got, np.full(dims, np.float32(1.5)))
    assert placement.nodes[0].where == "placed", placement.summary()


def test_negative_dimension_at_run_time_names_the_node():
    model = model_of([cos_node(np.float32(1.0))], [helper.make_tensor_value_info("shape", TensorProto.INT64, [2])])
    session = cann_ep.session(model)
    with pytest.raises(Exception, match=r"ConstantOfShapeFloat node 'cos' on CANN: input \(the shape\) is \[2, -3\]; "
                                        r"every dimension must be >= 0"):
        session.run(None, {"shape": np.array([2, -3], np.int64)})
