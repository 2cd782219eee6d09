"""SoftmaxGrad's CANN kernel on the simulated Ascend910B1: CANN's SoftmaxGrad in float32 (1 launch;
float16/bfloat16: Cast in, SoftmaxGrad, Cast out: 4 launches), bit for bit the CPU kernel (both
add along the axis in increasing order in float32 and round once), every axis of a 3-D input, and
the axis error naming the shape."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnxruntime as ort
import pytest

import ort_ops
from ort_ops import ort_io
from ort_ops.model_builder import make_op_model

cann_ep = pytest.importorskip("ort_ops.cann_ep")
pytestmark = pytest.mark.usefixtures("cann_simulator")
DTYPES = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
RNG = np.random.default_rng(23)


def model_of(dtype, shape, axis):
    return make_op_model("SoftmaxGrad", dtype, None, input_shapes=[list(shape)] * 2, output_shapes=[list(shape)],
                         axis=axis)


def inputs(dtype, shape, axis):
    logits = RNG.normal(0, 2, shape)
    e = np.exp(logits - logits.max(axis=axis, keepdims=True))
    y = (e / e.sum(axis=axis, keepdims=True)).astype(np.float32).astype(DTYPES[dtype])
    dy = RNG.normal(0, 1, shape).astype(np.float32).astype(DTYPES[dtype])
    return {"grad_softmax": dy, "softmax": y}


def cpu(model, feeds):
    so = ort.SessionOptions()
    so.register_custom_ops_library(ort_ops.get_library_path())
    return ort_io.run(ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]),
                      feeds)[0]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_cann_kernel_is_the_cpu_kernel_bit_for_bit(dtype, axis):
    from ort_ops.cann_ep import sim

    shape = (4, 6, 9)
    model, feeds = model_of(dtype, shape, axis), inputs(dtype, shape, axis)
    session = cann_ep.session(model)
    before = sim.op_counts()
    got = ort_io.run(session, feeds)[0]
    after = sim.op_counts()
    launched = {op: after[op] - before.get(op, 0) for op in after if after[op] != before.get(op, 0)}
    want = cpu(model, feeds)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    assert launched == ({"SoftmaxGrad": 1} if dtype == "float32" else {"Cast": 3, "SoftmaxGrad": 1}), launched


def test_empty_input_launches_nothing_and_a_bad_axis_names_the_shape():
    session = cann_ep.session(model_of("float32", (0, 5), -1))
    zeros = np.zeros((0, 5), np.float32)
    assert ort_io.run(session, {"grad_softmax": zeros, "softmax": zeros})[0].shape == (0, 5)
    model = make_op_model("SoftmaxGrad", "float32", None, input_shapes=[["a", "b"]] * 2)
    model.graph.node[0].attribute.append(__import__("onnx").helper.make_attribute("axis", 3))
    session = cann_ep.session(model)
    ones = np.ones((2, 3), np.float32)
    with pytest.raises(Exception, match=r"axis 3 is out of range for inputs of shape \[2, 3\]"):
        ort_io.run(session, {"grad_softmax": ones, "softmax": ones})
