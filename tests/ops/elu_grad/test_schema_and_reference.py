"""The ONNX schema (checker, shape inference), the public constants, the library path, and
the NumPy reference against independent formulations and the ONNX reference evaluator."""

from __future__ import annotations

import importlib
import os

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx.reference import ReferenceEvaluator

import ort_ops
from gen_data import edge_pairs, gen_inputs, golden
from op_helpers import assert_bits_equal
from ort_ops.model_builder import make_elu_grad_model
from ort_ops.reference import OPS, elu_grad


def test_public_constants_and_library():
    assert ort_ops.DOMAIN == "ai.ortops"
    assert ort_ops.OPSET_VERSION == 1
    path = ort_ops.get_library_path()
    assert os.path.isabs(path) and os.path.isfile(path)


def test_domain_reaches_the_native_library():
    """The C++ side got the domain from the build: the library's bytes contain it."""
    with open(ort_ops.get_library_path(), "rb") as f:
        assert ort_ops.DOMAIN.encode() + b"\0" in f.read()


def test_schema_registered_once():
    importlib.reload(ort_ops.schemas)
    ort_ops.schemas.register_all()
    schema = onnx.defs.get_schema("EluGrad", ort_ops.OPSET_VERSION, ort_ops.DOMAIN)
    assert [i.name for i in schema.inputs] == ["grads", "activations"]
    assert schema.attributes["alpha"].default_value.f == 1.0


@pytest.mark.parametrize("alpha", [None, 0.5])
def test_checker_and_shape_inference(dtype, alpha):
    model = make_elu_grad_model(dtype, (4, 2), alpha)
    onnx.checker.check_model(model, full_check=True)
    del model.graph.output[:]
    model.graph.output.append(onnx.helper.make_empty_tensor_value_info("y"))
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    (y,) = inferred.graph.output
    assert y.type.tensor_type.elem_type == ort_ops.dtypes.onnx_type(dtype)
    assert [d.dim_value for d in y.type.tensor_type.shape.dim] == [4, 2]


def test_shape_inference_rejects_mismatches():
    with pytest.raises(onnx.shape_inference.InferenceError, match=r"\[4, 2\].*\[4, 3\]"):
        onnx.shape_inference.infer_shapes(
            make_elu_grad_model("float32", (4, 2), activations_shape=(4, 3)), strict_mode=True
        )
    with pytest.raises(onnx.shape_inference.InferenceError, match="dtype"):
        onnx.shape_inference.infer_shapes(
            make_elu_grad_model("float32", (4, 2), activations_dtype="float16"), strict_mode=True
        )


def test_checker_rejects_double():
    from onnx import TensorProto

    with pytest.raises((onnx.checker.ValidationError, onnx.shape_inference.InferenceError),
                       match="tensor\\(double\\)"):
        onnx.checker.check_model(make_elu_grad_model(TensorProto.DOUBLE, (4, 2)), full_check=True)


@pytest.mark.parametrize("alpha", [1.0, 0.5, 2.0, 0.0])
def test_reference_against_formulas(dtype, alpha):
    grads, activations = gen_inputs((4096,), dtype, seed=3)
    y = elu_grad(grads, activations, alpha)
    assert_bits_equal(y, golden(grads, activations, alpha))
    # min form of the article (alpha = 1 only): (min(a, 0) + 1) * g
    if alpha == 1.0:
        g32, a32 = grads.astype(np.float32), activations.astype(np.float32)
        article = ((np.minimum(a32, 0) + 1) * g32).astype(grads.dtype)
        assert_bits_equal(y, article)


def test_reference_edge_semantics():
    g = np.array([3.0, 3.0, 3.0, 3.0, 3.0], np.float32)
    a = np.array([0.0, -0.0, np.nan, -1.0, -np.inf], np.float32)
    y = elu_grad(g, a, 0.5)
    assert y[0] == 3.0 and y[1] == 3.0 and y[2] == 3.0  # 0, -0.0 and NaN select grads
    assert y[3] == np.float32(3.0) * np.float32(-0.5)
    assert y[4] == -np.inf
    # NaN grads pass through bit for bit where activations >= 0
    nan = np.array([0x7F800001], np.uint32).view(np.float32)
    out = elu_grad(nan, np.array([1.0], np.float32))
    assert out.view(np.uint32)[0] == 0x7F800001


def test_reference_half_precision_rounds_once(dtype):
    grads, activations = edge_pairs(dtype)
    y = elu_grad(grads, activations, 2.0)
    y32 = elu_grad(grads.astype(np.float32), activations.astype(np.float32), 2.0)
    with np.errstate(over="ignore", invalid="ignore"):  # inf / NaN results are the point here
        assert_bits_equal(y, y32.astype(grads.dtype))


def test_reference_errors():
    f32 = np.zeros((2, 3), np.float32)
    with pytest.raises(TypeError, match="grads dtype float32 differs from activations dtype float16"):
        elu_grad(f32, f32.astype(np.float16))
    with pytest.raises(TypeError, match="unsupported dtype float64"):
        elu_grad(f32.astype(np.float64), f32.astype(np.float64))
    with pytest.raises(ValueError, match=r"grads shape \[2, 3\] differs from activations shape \[3, 2\]"):
        elu_grad(f32, np.zeros((3, 2), np.float32))


@pytest.mark.parametrize("alpha", [None, 0.5])
def test_reference_evaluator_runs_models(dtype, alpha):
    grads, activations = gen_inputs((4, 2), dtype, seed=11)
    model = make_elu_grad_model(dtype, (4, 2), alpha)
    (y,) = ReferenceEvaluator(model, new_ops=list(OPS)).run(
        None, {"grads": grads, "activations": activations}
    )
    assert_bits_equal(np.asarray(y), elu_grad(grads, activations, 1.0 if alpha is None else alpha))


def test_bfloat16_is_ml_dtypes():
    grads, activations = gen_inputs((8,), "bfloat16")
    assert elu_grad(grads, activations).dtype == np.dtype(ml_dtypes.bfloat16)
