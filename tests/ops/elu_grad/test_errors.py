"""The CANN tiling's failure cases as ORT behaviour: each bad input is a clear error, never a
crash, and the session stays usable; the empty tensor is our defined behaviour."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnxruntime.capi.onnxruntime_pybind11_state import (
    Fail,
    InvalidArgument,
    InvalidGraph,
    RuntimeException,
)

from gen_data import gen_inputs
from op_helpers import assert_bits_equal, make_session, run_elu_grad
from ort_ops.domain import DOMAIN
from ort_ops.model_builder import make_elu_grad_model, make_model
from ort_ops.reference import elu_grad

ORT_ERRORS = (Fail, InvalidArgument, InvalidGraph, RuntimeException)


def test_input_output_dtype_mismatch():  # test_tiling_failed_dtype_input_output_diff_004
    model = make_elu_grad_model("float32", (4, 2), output_dtype="float16")
    with pytest.raises(ORT_ERRORS, match=r"tensor\(float16\)|tensor\(float\)"):
        make_session(model)


def test_inputs_dtype_differ():  # test_tiling_failed_inputs_dtype_diff_005
    model = make_elu_grad_model("float32", (4, 2), activations_dtype="float16")
    with pytest.raises(ORT_ERRORS) as error:
        make_session(model)
    # ORT picks kernels by exact input types and names the node when none matches
    assert "no kernel def matches node inputs for Op: EluGrad" in str(error.value)
    # the ONNX schema's inference names both dtypes
    with pytest.raises(onnx.shape_inference.InferenceError,
                       match="grads has dtype float32 but activations has float16"):
        onnx.shape_inference.infer_shapes(model, strict_mode=True)


def test_empty_tensor_gives_empty_output(dtype):  # test_tiling_failed_empty_tensor_006
    shape = (1, 0, 2, 64)
    session = make_session(make_elu_grad_model(dtype, shape))
    grads, activations = gen_inputs(shape, dtype)
    y = run_elu_grad(session, grads, activations)
    assert y.shape == shape and y.dtype == grads.dtype and y.size == 0


def test_unsupported_dtype_double():  # test_tiling_failed_unsupport_type_007
    model = make_elu_grad_model(TensorProto.DOUBLE, (4, 2))
    with pytest.raises(ORT_ERRORS, match=r"tensor\(double\)"):
        make_session(model)


@pytest.mark.parametrize("other", [(4, 3), (2, 4), (4, 2, 1), (8,)])
def test_input_shapes_differ(dtype, other):  # test_tiling_failed_inputs_diff_shape_008
    model = make_elu_grad_model(dtype, ["n", "m"] if len(other) == 2 else None)
    session = make_session(model)
    grads, _ = gen_inputs((4, 2), dtype)
    _, activations = gen_inputs(other, dtype)
    with pytest.raises(ORT_ERRORS) as error:
        run_elu_grad(session, grads, activations)
    message = str(error.value)
    assert "grads shape [4, 2]" in message
    assert f"activations shape [{', '.join(map(str, other))}]" in message
    # the session is still usable after the error
    ok_grads, ok_acts = gen_inputs((4, 2), dtype)
    assert_bits_equal(run_elu_grad(session, ok_grads, ok_acts), elu_grad(ok_grads, ok_acts))


def test_declared_output_shape_differs():  # test_tiling_failed_input_output_diff_shape_009
    """A model whose declared y shape is wrong: the schema's inference rejects it; ORT only
    warns, and y still gets the inputs' shape and the right values."""
    model = make_elu_grad_model("float32", (4, 2))
    model.graph.output[0].type.tensor_type.shape.dim[1].dim_value = 3
    with pytest.raises(onnx.shape_inference.InferenceError):
        onnx.shape_inference.infer_shapes(model, strict_mode=True)
    grads, activations = gen_inputs((4, 2), "float32")
    y = run_elu_grad(make_session(model), grads, activations)
    assert_bits_equal(y, elu_grad(grads, activations))


def test_alpha_of_wrong_type_is_rejected():
    node = helper.make_node("EluGrad", ["grads", "activations"], ["y"], domain=DOMAIN, alpha=2)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [3]) for n in ("grads", "activations")],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
    )
    with pytest.raises(ORT_ERRORS, match="alpha must be a float"):
        make_session(make_model(graph))


def test_missing_input_is_rejected():
    node = helper.make_node("EluGrad", ["grads"], ["y"], domain=DOMAIN)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("grads", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
    )
    with pytest.raises(ORT_ERRORS, match="input size 1 not in range"):
        make_session(make_model(graph))


def test_model_without_library_fails_clearly():
    import onnxruntime as ort

    model = make_elu_grad_model("float32", (4, 2))
    with pytest.raises(ORT_ERRORS, match=f"{DOMAIN}|EluGrad"):
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def test_registering_on_many_session_options_shares_one_domain():
    """Sessions created one after another (and alive together) all work."""
    model = make_elu_grad_model("float32", (3,))
    sessions = [make_session(model) for _ in range(3)]
    g = np.array([1.0, 2.0, 3.0], np.float32)
    a = np.array([-1.0, 0.0, 1.0], np.float32)
    for session in sessions:
        np.testing.assert_array_equal(run_elu_grad(session, g, a), elu_grad(g, a))
