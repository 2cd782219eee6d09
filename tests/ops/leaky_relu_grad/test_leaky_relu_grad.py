"""LeakyReluGrad beyond the contract suite: the reference against values written out by hand and
against PyTorch's leaky_relu_backward (both self_is_result forms), the CPU kernel on the branch
edges and NaN payloads, and its errors."""

import ml_dtypes
import numpy as np
import onnxruntime as ort
import pytest
import torch
from onnx import helper

import ort_ops
from ort_ops import ort_io
from ort_ops.model_builder import make_op_model
from ort_ops.ops.leaky_relu_grad import leaky_relu_grad

BF16 = ml_dtypes.bfloat16
DTYPES = {"float32": np.float32, "float16": np.float16, "bfloat16": BF16}
TORCH = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
NAN = float("nan")


def bits(a):
    a = np.asarray(a)
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint16)


def cpu_run(g, f, slope):
    dtype = "bfloat16" if g.dtype == BF16 else str(np.dtype(g.dtype))
    model = make_op_model("LeakyReluGrad", dtype, g.shape, negative_slope=slope)
    so = ort.SessionOptions()
    so.register_custom_ops_library(ort_ops.get_library_path())
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return ort_io.run(sess, {"gradients": g, "features": f})[0]


def test_reference_by_hand():
    g = np.array([1.0, 2.0, 3.0, 4.0, 5.0, -6.0], np.float32)
    f = np.array([0.5, 0.0, -0.0, NAN, -2.0, 1e-30], np.float32)
    # f > 0 strictly: 0.5 and 1e-30 take g; +0, -0, NaN and -2 take g * slope
    assert leaky_relu_grad(g, f, 0.25).tolist() == [1.0, 0.5, 0.75, 1.0, 1.25, -6.0]
    y = leaky_relu_grad(g, f, 0.0)
    assert y.tolist() == [1.0, 0.0, 0.0, 0.0, 0.0, -6.0] and not np.signbit(y[1:5]).any()
    assert leaky_relu_grad(g, f, -1.0).tolist() == [1.0, -2.0, -3.0, -4.0, -5.0, -6.0]
    assert leaky_relu_grad(g, f).tolist() == leaky_relu_grad(g, f, 0.0).tolist()  # CANN's default 0.0


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("slope", [0.01, 0.2, 0.0, 1.0, 3.5])
@pytest.mark.parametrize("is_result", [False, True])
def test_reference_is_torch_leaky_relu_backward(dtype, slope, is_result):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(4096).astype(np.float32)
    x[:4] = [0.0, -0.0, NAN, 1e-40]
    g = rng.standard_normal(4096).astype(np.float32)
    tx, tg = torch.from_numpy(x).to(TORCH[dtype]), torch.from_numpy(g).to(TORCH[dtype])
    features = torch.nn.functional.leaky_relu(tx, slope) if is_result else tx
    want = torch.ops.aten.leaky_relu_backward(tg, features, slope, is_result).float().numpy().astype(DTYPES[dtype])
    got = leaky_relu_grad(tg.float().numpy().astype(DTYPES[dtype]), features.float().numpy().astype(DTYPES[dtype]),
                          slope)
    assert np.array_equal(bits(got), bits(want))


def test_torch_refuses_what_features_as_result_cannot_mean():
    # self_is_result with a negative slope: Y > 0 is then not X > 0, and PyTorch refuses it
    with pytest.raises(RuntimeError, match="negative slope"):
        torch.ops.aten.leaky_relu_backward(torch.ones(2), torch.ones(2), -0.5, True)


NAN_CASES = [  # (gradients bits, features, slope, expected bits) in float32
    (0x7FA00001, 1.0, 0.5, 0x7FA00001),   # positive: a signalling NaN copied
    (0x7FA00001, -1.0, 0.5, 0x7FE00001),  # product: gradients' NaN quieted
    (0xFFC00123, 0.0, 0.5, 0xFFC00123),
    (0x3F800000, -1.0, NAN, 0x7FC00000),  # the slope's NaN (1.0 * NaN)
    (0x7F800000, -1.0, 0.0, 0xFFC00000),  # inf * 0: the default NaN
]


@pytest.mark.parametrize("g_bits, f, slope, want", NAN_CASES)
def test_nan_payloads(g_bits, f, slope, want):
    g = np.array([g_bits], np.uint32).view(np.float32)
    feats = np.array([f], np.float32)
    assert bits(leaky_relu_grad(g, feats, slope))[0] == want
    assert bits(cpu_run(g, feats, slope))[0] == want


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("slope", [0.01, 0.0, -0.5])
def test_cpu_kernel_large_tensor_is_the_reference(dtype, slope):
    rng = np.random.default_rng(2)
    n = (1 << 17) + 3  # several parallel chunks and a ragged end
    g = rng.standard_normal(n).astype(DTYPES[dtype])
    f = rng.standard_normal(n).astype(DTYPES[dtype])
    f[:3] = [0.0, -0.0, NAN]
    assert np.array_equal(bits(cpu_run(g, f, slope)), bits(leaky_relu_grad(g, f, slope)))


def test_an_alpha_attribute_is_refused_by_name():
    model = make_op_model("LeakyReluGrad", "float32", (2,), negative_slope=0.1)
    model.graph.node[0].attribute.append(helper.make_attribute("alpha", 0.1))
    so = ort.SessionOptions()
    so.register_custom_ops_library(ort_ops.get_library_path())
    with pytest.raises(Exception, match="alpha"):
        ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
