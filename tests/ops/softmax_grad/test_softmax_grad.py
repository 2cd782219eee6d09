"""SoftmaxGrad beyond the contract suite: the reference against PyTorch's softmax backward, the CPU
kernel bit for bit against the order it promises (float32: t = dY * Y, the sum along the axis from
its first element, t - s * Y; one rounding to T), every axis of 3-D inputs, and its errors."""

import ml_dtypes
import numpy as np
import onnxruntime as ort
import pytest
import torch

import ort_ops
from ort_ops import ort_io
from ort_ops.model_builder import make_op_model
from ort_ops.ops.softmax_grad import softmax_grad

BF16 = ml_dtypes.bfloat16
DTYPES = {"float32": np.float32, "float16": np.float16, "bfloat16": BF16}
RNG = np.random.default_rng(17)


def softmax(logits, axis):
    e = np.exp(logits - logits.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def in_order(dy, y, axis):
    """The kernels' float32 order, written with NumPy float32 scalars along the axis."""
    dy32, y32 = np.moveaxis(dy.astype(np.float32), axis, -1), np.moveaxis(y.astype(np.float32), axis, -1)
    t = dy32 * y32
    s = t[..., 0].copy()
    for k in range(1, t.shape[-1]):
        s = (s + t[..., k]).astype(np.float32)
    out = t - (s[..., None] * y32).astype(np.float32)
    return np.moveaxis(out, -1, axis).astype(dy.dtype)


def cpu_run(dy, y, axis):
    dtype = "bfloat16" if dy.dtype == BF16 else str(np.dtype(dy.dtype))
    model = make_op_model("SoftmaxGrad", dtype, None, input_shapes=[list(dy.shape)] * 2,
                          output_shapes=[list(dy.shape)], axis=axis)
    so = ort.SessionOptions()
    so.register_custom_ops_library(ort_ops.get_library_path())
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return ort_io.run(sess, {"grad_softmax": dy, "softmax": y})[0]


@pytest.mark.parametrize("axis", [-1, 0, 1, 2, -2])
def test_reference_is_torch_softmax_backward(axis):
    logits = torch.randn(3, 4, 5, dtype=torch.float64, requires_grad=True)
    y = torch.softmax(logits, dim=axis)
    dy = torch.randn(3, 4, 5, dtype=torch.float64)
    (dx,) = torch.autograd.grad(y, logits, dy)
    got = softmax_grad(dy.numpy().astype(np.float32), y.detach().numpy().astype(np.float32), axis)
    np.testing.assert_allclose(got, dx.numpy(), rtol=1e-5, atol=1e-6)  # the inputs rounded to float32


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [-1, 0, 1, 2])
def test_cpu_kernel_is_the_promised_order_bit_for_bit(dtype, axis):
    shape = (6, 7, 9)
    y = softmax(RNG.normal(0, 2, shape), axis).astype(np.float32).astype(DTYPES[dtype])
    dy = RNG.normal(0, 1, shape).astype(np.float32).astype(DTYPES[dtype])
    got = cpu_run(dy, y, axis)
    want = in_order(dy, y, axis)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    np.testing.assert_allclose(got.astype(np.float64), softmax_grad(dy, y, axis).astype(np.float64),
                               rtol=1e-2 if dtype != "float32" else 1e-5, atol=1e-3 if dtype != "float32" else 1e-6)


def test_large_rows_run_in_parallel_and_agree():
    shape = (64, 1024)  # beyond the parallel threshold
    y = softmax(RNG.normal(0, 1, shape), -1).astype(np.float32)
    dy = RNG.normal(0, 1, shape).astype(np.float32)
    np.testing.assert_array_equal(cpu_run(dy, y, -1), in_order(dy, y, -1))


def test_empty_and_one_element_rows():
    y = np.zeros((0, 4), np.float32)
    assert cpu_run(y, y, -1).shape == (0, 4)
    y1 = np.ones((3, 1), np.float32)  # a softmax over one element is 1: its gradient is 0
    dy1 = RNG.normal(0, 1, (3, 1)).astype(np.float32)
    np.testing.assert_array_equal(cpu_run(dy1, y1, -1), np.zeros((3, 1), np.float32))


def test_errors_name_the_shapes_and_the_axis():
    y = np.ones((2, 3), np.float32)
    with pytest.raises(Exception, match=r"grad_softmax shape \[3, 2\] differs from softmax shape \[2, 3\]"):
        model = make_op_model("SoftmaxGrad", "float32", None, input_shapes=[["a", "b"], ["c", "d"]])
        so = ort.SessionOptions()
        so.register_custom_ops_library(ort_ops.get_library_path())
        sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        ort_io.run(sess, {"grad_softmax": y.T.copy(), "softmax": y})
    with pytest.raises(Exception, match=r"axis 2 is out of range for inputs of shape \[2, 3\]"):
        cpu_run(y, y, 2)
    with pytest.raises(ValueError, match=r"axis 2 is out of range"):
        softmax_grad(y, y, 2)
