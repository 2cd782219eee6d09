"""Schema inference: rank mismatches and symbolic dims."""

import onnx
import pytest

from ort_ops.model_builder import make_elu_grad_model


def test_shape_inference_rejects_a_rank_mismatch():
    with pytest.raises(onnx.shape_inference.InferenceError, match=r"\[4, 2\] differs from .*\[4, 2, 1\]"):
        onnx.shape_inference.infer_shapes(make_elu_grad_model("float32", (4, 2), activations_shape=(4, 2, 1)),
                                          strict_mode=True)


def test_shape_inference_accepts_a_symbolic_dim_against_a_number():
    model = make_elu_grad_model("float32", ("n", 2), activations_shape=(4, 2))
    (y,) = onnx.shape_inference.infer_shapes(model, strict_mode=True).graph.output
    assert [d.dim_param or d.dim_value for d in y.type.tensor_type.shape.dim] == ["n", 2]
