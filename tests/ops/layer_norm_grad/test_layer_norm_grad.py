"""LayerNormGrad beyond the contract suite: the reference against PyTorch's
``native_layer_norm_backward``, the CPU kernel bit for bit against the float32 order it promises
(per row s1 = sum g, s2 = sum g * xhat in increasing order, a = s1 / M, b = s2 / M,
dx = (g - (a + xhat * b)) * rstd; dscale / dbias summed over the rows in increasing order; one
rounding to T), optional outputs left out, empty rows and rows of no elements, and its errors."""

import math

import ml_dtypes
import numpy as np
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper

import ort_ops
from ort_ops import DOMAIN, OPSET_VERSION, dtypes, ort_io
from ort_ops.domain import ONNX_OPSET
from ort_ops.ops.layer_norm_grad import layer_norm_grad

BF16 = ml_dtypes.bfloat16
DTYPES = {"float32": np.float32, "float16": np.float16, "bfloat16": BF16}
RNG = np.random.default_rng(23)
NAMES = ("dy", "x", "mean", "inv_std_dev", "scale")


def statistics(x, axis):
    """LayerNormalization's float32 Mean and InvStdDev (epsilon 1e-5) of x over the dims from axis."""
    a = axis % x.ndim
    x64 = x.astype(np.float64)
    row_axes = tuple(range(a, x.ndim))
    mean = x64.mean(axis=row_axes, keepdims=True)
    rstd = 1.0 / np.sqrt(((x64 - mean) ** 2).mean(axis=row_axes, keepdims=True) + 1e-5)
    return mean.astype(np.float32), rstd.astype(np.float32)


def inputs(shape, axis, dtype):
    np_dtype = DTYPES[dtype]
    x = RNG.normal(0.3, 2.0, shape).astype(np.float32).astype(np_dtype)
    mean, rstd = statistics(x, axis)
    scale = RNG.normal(1.0, 0.5, shape[axis % len(shape):]).astype(np.float32).astype(np_dtype)
    dy = RNG.normal(0.0, 1.0, shape).astype(np.float32).astype(np_dtype)
    return dy, x, mean, rstd, scale


def in_order(dy, x, mean, rstd, scale, axis):
    """The CPU kernel's float32 order, with NumPy float32 operations (each rounded once)."""
    a = axis % x.ndim
    rows, m = math.prod(x.shape[:a]), math.prod(x.shape[a:])
    f = lambda v, n: v.astype(np.float32).reshape(n, -1) if v.size else v.astype(np.float32).reshape(n, 0)
    dy2, x2, s = f(dy, rows), f(x, rows), scale.astype(np.float32).reshape(1, m)
    mean2, rstd2 = mean.reshape(rows, 1), rstd.reshape(rows, 1)
    xhat = (x2 - mean2) * rstd2
    g = dy2 * s
    gx = g * xhat
    s1, s2 = np.zeros((rows, 1), np.float32), np.zeros((rows, 1), np.float32)
    for k in range(m):
        s1 = (s1 + g[:, k:k + 1]).astype(np.float32)
        s2 = (s2 + gx[:, k:k + 1]).astype(np.float32)
    fm = np.float32(m)
    dx = (g - (s1 / fm + xhat * (s2 / fm))) * rstd2
    ds, db = np.zeros(m, np.float32), np.zeros(m, np.float32)
    dyx = dy2 * xhat
    for r in range(rows):
        ds = (ds + dyx[r]).astype(np.float32)
        db = (db + dy2[r]).astype(np.float32)
    return (dx.reshape(x.shape).astype(x.dtype), ds.reshape(scale.shape).astype(x.dtype),
            db.reshape(scale.shape).astype(x.dtype))


def model(dtype, shapes, axis, outputs=("dx", "dscale", "dbias")):
    """A LayerNormGrad node; ``outputs`` names the produced outputs ("" leaves one out)."""
    elem = dtypes.onnx_type_of(dtype)
    types = [elem, elem, TensorProto.FLOAT, TensorProto.FLOAT, elem]
    graph_inputs = [helper.make_tensor_value_info(n, t, s) for n, t, s in zip(NAMES, types, shapes)]
    graph_outputs = [helper.make_tensor_value_info(n, elem, None) for n in outputs if n]
    node = helper.make_node("LayerNormGrad", list(NAMES), list(outputs), domain=DOMAIN, axis=axis)
    graph = helper.make_graph([node], "layer_norm_grad", graph_inputs, graph_outputs)
    return helper.make_model(graph, ir_version=8, opset_imports=[helper.make_opsetid("", ONNX_OPSET),
                                                                  helper.make_opsetid(DOMAIN, OPSET_VERSION)])


def cpu_run(arrays, axis, outputs=("dx", "dscale", "dbias"), shapes=None):
    dtype = "bfloat16" if arrays[0].dtype == BF16 else str(np.dtype(arrays[0].dtype))
    m = model(dtype, shapes or [list(a.shape) for a in arrays], axis, outputs)
    so = ort.SessionOptions()
    so.register_custom_ops_library(ort_ops.get_library_path())
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return ort_io.run(sess, dict(zip(NAMES, arrays)))


@pytest.mark.parametrize("axis", [-1, -2, 1, 0])
def test_reference_is_torch_native_layer_norm_backward(axis):
    dy, x, mean, rstd, scale = inputs((3, 4, 5), axis, "float32")
    a = axis % 3
    t = lambda v: torch.from_numpy(np.ascontiguousarray(v, dtype=np.float64))
    dx, dscale, dbias = torch.ops.aten.native_layer_norm_backward(
        t(dy), t(x), list(x.shape[a:]), t(mean), t(rstd), t(scale), t(np.zeros_like(scale)), [True, True, True])
    got = layer_norm_grad(dy, x, mean, rstd, scale, axis)
    for g, w in zip(got, (dx, dscale, dbias)):
        w = w.numpy()
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6 * np.abs(w).max())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, axis", [((6, 7, 9), -1), ((6, 7, 9), 1), ((6, 7, 9), 0), ((5, 8), -2)])
def test_cpu_kernel_is_the_promised_order_bit_for_bit(dtype, shape, axis):
    arrays = inputs(shape, axis, dtype)
    got = cpu_run(arrays, axis)
    reference = layer_norm_grad(*arrays, axis)
    loose = dtype != "float32"
    for g, w, r in zip(got, in_order(*arrays, axis), reference):
        np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8))
        scale = np.abs(r.astype(np.float64)).max()
        np.testing.assert_allclose(g.astype(np.float64), r.astype(np.float64), rtol=1e-2 if loose else 1e-4,
                                   atol=(1e-2 if loose else 1e-5) * scale)


def test_large_tensors_run_in_parallel_and_agree():
    arrays = inputs((256, 768), -1, "float32")  # beyond the parallel threshold, rows and columns
    for g, w in zip(cpu_run(arrays, -1), in_order(*arrays, -1)):
        np.testing.assert_array_equal(g, w)


def test_optional_outputs_left_out():
    arrays = inputs((4, 6), -1, "float32")
    dx, dscale, dbias = in_order(*arrays, -1)
    (only_dx,) = cpu_run(arrays, -1, ("dx",))
    np.testing.assert_array_equal(only_dx, dx)
    got_dx, got_dbias = cpu_run(arrays, -1, ("dx", "", "dbias"))
    np.testing.assert_array_equal(got_dx, dx)
    np.testing.assert_array_equal(got_dbias, dbias)
    got_dx, got_dscale = cpu_run(arrays, -1, ("dx", "dscale"))
    np.testing.assert_array_equal(got_dscale, dscale)


def test_no_rows_gives_zero_parameter_gradients_and_empty_rows_give_empty_outputs():
    x = np.zeros((0, 4), np.float32)
    stats = np.zeros((0, 1), np.float32)
    scale = np.ones(4, np.float32)
    dx, dscale, dbias = cpu_run([x, x, stats, stats, scale], -1)
    assert dx.shape == (0, 4)
    np.testing.assert_array_equal(dscale, np.zeros(4, np.float32))
    np.testing.assert_array_equal(dbias, np.zeros(4, np.float32))
    x = np.zeros((3, 0), np.float32)
    dx, dscale, dbias = cpu_run([x, x, np.zeros((3, 1), np.float32), np.ones((3, 1), np.float32),
                                 np.zeros(0, np.float32)], -1)
    assert dx.shape == (3, 0) and dscale.shape == (0,) and dbias.shape == (0,)


def test_errors_name_the_input_its_shape_and_the_axis():
    dy, x, mean, rstd, scale = inputs((2, 3), -1, "float32")
    free = [["a", "b"], ["c", "d"], ["e", "f"], ["g", "h"], ["i"]]
    cases = [
        ([dy.T.copy(), x, mean, rstd, scale], -1, r"dy shape \[3, 2\] differs from x shape \[2, 3\]"),
        ([dy, x, mean.reshape(1, 2), rstd, scale], -1, r"mean shape \[1, 2\] is not \[2, 1\]"),
        ([dy, x, mean, rstd.reshape(1, 2), scale], -1, r"inv_std_dev shape \[1, 2\] is not \[2, 1\]"),
        ([dy, x, mean, rstd, scale[:2].copy()], -1, r"scale shape \[2\] is not x's dims from axis 1, \[3\]"),
        ([dy, x, mean, rstd, scale], 2, r"axis 2 is out of range for x of shape \[2, 3\]"),
    ]
    for arrays, axis, message in cases:
        with pytest.raises(Exception, match=message):
            cpu_run(arrays, axis, shapes=free)
        with pytest.raises(ValueError, match=message):
            layer_norm_grad(*arrays, axis)
    with pytest.raises(TypeError, match=r"mean has dtype float16; expected float32"):
        layer_norm_grad(dy, x, mean.astype(np.float16), rstd, scale)


def test_schema_rejects_float16_statistics():
    m = model("float16", [[2, 3], [2, 3], [2, 1], [2, 1], [3]], -1)
    m.graph.input[2].type.tensor_type.elem_type = TensorProto.FLOAT16
    so = ort.SessionOptions()
    so.register_custom_ops_library(ort_ops.get_library_path())
    with pytest.raises(Exception, match=r"mean|Type"):
        ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    good = model("float16", [[2, 3], [2, 3], [2, 1], [2, 1], [3]], -1)  # float32 statistics: accepted
    ort.InferenceSession(good.SerializeToString(), so, providers=["CPUExecutionProvider"])
