"""BatchNormGrad beyond the contract suite: the reference against PyTorch's
``native_batch_norm_backward`` (train=True) for ranks 2 to 5 and several epsilons, the CPU kernel bit
for bit against the float32 order it promises (CANN BatchNormGradV3's A2/A3 kernel order: per channel
db = sum dy, s = sum (x - mean) dy in increasing (n, spatial) order, std = sqrt(var + eps),
dw = s / std, k = ((s / std) / std) * (1 / M), dx = (((dy - db / M) - (x - mean) k) / std) * scale; one
rounding to T), [C] and [1, C, 1, ...] statistics, the intra-op pool (1 thread and 4 threads bit
for bit), optional outputs left out, an x without elements, and its errors."""

import ml_dtypes
import numpy as np
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper

import ort_ops
from ort_ops import DOMAIN, OPSET_VERSION, dtypes, ort_io, tolerances
from ort_ops.domain import ONNX_OPSET
from ort_ops.ops.batch_norm_grad import batch_norm_grad

BF16 = ml_dtypes.bfloat16
DTYPES = {"float32": np.float32, "float16": np.float16, "bfloat16": BF16}
F32 = np.float32
RNG = np.random.default_rng(41)
NAMES = ("dy", "x", "mean", "var", "scale")


def inputs(shape, dtype, column=False):
    """x, its float32 batch mean and biased variance per channel (axis 1), normal dy and scale."""
    np_dtype = DTYPES[dtype]
    x = RNG.normal(0.3, 2.0, shape).astype(F32).astype(np_dtype)
    axes = tuple(i for i in range(len(shape)) if i != 1)
    x64 = x.astype(np.float64)
    if x.size:
        mean, var = x64.mean(axis=axes, keepdims=column).astype(F32), x64.var(axis=axes, keepdims=column).astype(F32)
    else:  # no element: statistics of no data (unread)
        mean = np.zeros(x64.sum(axis=axes, keepdims=column).shape, F32)
        var = np.ones_like(mean)
    scale = RNG.normal(1.0, 0.5, shape[1]).astype(F32).astype(np_dtype)
    dy = RNG.normal(0.0, 1.0, shape).astype(F32).astype(np_dtype)
    return [dy, x, mean, var, scale]


def in_order(dy, x, mean, var, scale, eps=1e-5):
    """The CPU kernel's float32 order, with NumPy float32 operations (each rounded once)."""
    n, c = x.shape[:2]
    dy3, x3 = dy.astype(F32).reshape(n, c, -1), x.astype(F32).reshape(n, c, -1)
    mean, var = mean.reshape(c), var.reshape(c)
    std = np.sqrt(var + F32(eps))
    xc = x3 - mean.reshape(1, c, 1)
    db, s = np.zeros(c, F32), np.zeros(c, F32)
    for i in range(n):
        for j in range(dy3.shape[2]):
            db = db + dy3[i, :, j]
            s = s + xc[i, :, j] * dy3[i, :, j]
    inv_m = F32(1) / F32(n * dy3.shape[2])
    k = ((s / std) / std) * inv_m
    a = db * inv_m
    col = lambda v: v.reshape(1, c, 1)
    dx = (((dy3 - col(a)) - xc * col(k)) / col(std)) * col(scale.astype(F32))
    return [dx.reshape(x.shape).astype(x.dtype), (s / std).astype(x.dtype), db.astype(x.dtype)]


def model(dtype, shapes, epsilon=None, outputs=("dx", "dscale", "dbias")):
    """A BatchNormGrad node; ``outputs`` names the produced outputs ("" leaves one out)."""
    elem = dtypes.onnx_type_of(dtype)
    types = [elem, elem, TensorProto.FLOAT, TensorProto.FLOAT, elem]
    graph_inputs = [helper.make_tensor_value_info(n, t, s) for n, t, s in zip(NAMES, types, shapes)]
    graph_outputs = [helper.make_tensor_value_info(n, elem, None) for n in outputs if n]
    attrs = {} if epsilon is None else {"epsilon": epsilon}
    node = helper.make_node("BatchNormGrad", list(NAMES), list(outputs), domain=DOMAIN, **attrs)
    graph = helper.make_graph([node], "batch_norm_grad", graph_inputs, graph_outputs)
    return helper.make_model(graph, ir_version=8, opset_imports=[helper.make_opsetid("", ONNX_OPSET),
                                                                  helper.make_opsetid(DOMAIN, OPSET_VERSION)])


def cpu_run(arrays, epsilon=None, outputs=("dx", "dscale", "dbias"), shapes=None, threads=0):
    dtype = "bfloat16" if arrays[0].dtype == BF16 else str(np.dtype(arrays[0].dtype))
    m = model(dtype, shapes or [list(a.shape) for a in arrays], epsilon, outputs)
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.register_custom_ops_library(ort_ops.get_library_path())
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return ort_io.run(sess, dict(zip(NAMES, arrays)))


@pytest.mark.parametrize("shape, eps", [((6, 3), 1e-5), ((4, 3, 5), 1e-3), ((4, 3, 2, 5), 1e-5),
                                        ((2, 3, 2, 3, 2), 0.1), ((5, 1), 0.0)])
@pytest.mark.parametrize("affine", [True, False])
def test_reference_is_torch_native_batch_norm_backward(shape, eps, affine):
    dy, x, mean, var, scale = inputs(shape, "float32")
    if not affine:
        scale = np.ones_like(scale)
    t = lambda v: torch.from_numpy(np.ascontiguousarray(v, dtype=np.float64))
    invstd = 1.0 / np.sqrt(var.astype(np.float64) + np.float64(F32(eps)))
    dx, dscale, dbias = torch.ops.aten.native_batch_norm_backward(
        t(dy), t(x), t(scale) if affine else None, None, None, t(mean), t(invstd), True, eps, [True, True, True])
    got = batch_norm_grad(dy, x, mean, var, scale, eps)
    for g, w in zip(got, (dx, dscale, dbias)):
        w = w.numpy()
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6 * np.abs(w).max())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, eps, column", [((9, 4), 1e-5, False), ((9, 4), 0.1, True), ((5, 3, 7), 1e-5, True),
                                                ((4, 3, 3, 5), 1e-3, False), ((2, 2, 2, 3, 4), 0.0, False)])
def test_cpu_kernel_is_the_promised_order_bit_for_bit(dtype, shape, eps, column):
    arrays = inputs(shape, dtype, column)
    got = cpu_run(arrays, eps)
    reference = batch_norm_grad(*arrays, eps)
    for g, w, r in zip(got, in_order(*arrays, eps), reference):
        np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8))
        closeness = tolerances.check(g, r)
        assert closeness.ok, closeness.message


def test_epsilon_defaults_to_1e_5():
    arrays = inputs((6, 3, 4), "float32")
    for g, w in zip(cpu_run(arrays), in_order(*arrays, 1e-5)):
        np.testing.assert_array_equal(g, w)
    assert not np.array_equal(cpu_run(arrays, 0.5)[0], cpu_run(arrays)[0])


def test_large_tensors_run_in_parallel_and_agree():
    arrays = inputs((32, 16, 12, 12), "float32")  # beyond the parallel threshold: 16 channels
    want = in_order(*arrays)
    for threads in (1, 4):
        for g, w in zip(cpu_run(arrays, threads=threads), want):
            np.testing.assert_array_equal(g, w)


def test_optional_outputs_left_out():
    arrays = inputs((4, 3, 2), "float32")
    dx, dscale, dbias = in_order(*arrays)
    (only_dx,) = cpu_run(arrays, outputs=("dx",))
    np.testing.assert_array_equal(only_dx, dx)
    got_dx, got_dbias = cpu_run(arrays, outputs=("dx", "", "dbias"))
    np.testing.assert_array_equal(got_dx, dx)
    np.testing.assert_array_equal(got_dbias, dbias)
    _, got_dscale = cpu_run(arrays, outputs=("dx", "dscale"))
    np.testing.assert_array_equal(got_dscale, dscale)


def test_no_elements_gives_zero_parameter_gradients():
    x = np.zeros((0, 4), F32)
    stats, scale = np.zeros(4, F32), np.ones(4, F32)
    dx, dscale, dbias = cpu_run([x, x, stats, stats, scale])
    assert dx.shape == (0, 4)
    np.testing.assert_array_equal(dscale, np.zeros(4, F32))
    np.testing.assert_array_equal(dbias, np.zeros(4, F32))
    x = np.zeros((3, 0, 2), F32)
    dx, dscale, dbias = cpu_run([x, x, np.zeros(0, F32), np.ones(0, F32), np.zeros(0, F32)])
    assert dx.shape == (3, 0, 2) and dscale.shape == (0,) and dbias.shape == (0,)


def test_errors_name_the_input_and_its_shape():
    dy, x, mean, var, scale = inputs((2, 3), "float32")
    cases = [
        ([dy.T.copy(), x, mean, var, scale], r"dy shape \[3, 2\] differs from x shape \[2, 3\]"),
        ([dy, x, mean[:2].copy(), var, scale], r"mean shape \[2\] is neither \[3\] nor \[1, 3\]"),
        ([dy, x, mean, var.reshape(3, 1), scale], r"var shape \[3, 1\] is neither \[3\] nor \[1, 3\]"),
        ([dy, x, mean, var, scale[:2].copy()], r"scale shape \[2\] is not \[3\]"),
        ([dy[0].copy(), x[0].copy(), mean, var, scale], r"rank"),
    ]
    for arrays, message in cases:
        shapes = [[f"d{i}_{k}" for k in range(a.ndim)] for i, a in enumerate(arrays)]  # checked at run time
        with pytest.raises(Exception, match=message):
            cpu_run(arrays, shapes=shapes)
        with pytest.raises(ValueError, match=message):
            batch_norm_grad(*arrays)
    with pytest.raises(TypeError, match=r"var has dtype float16; expected float32"):
        batch_norm_grad(dy, x, mean, var.astype(np.float16), scale)


def test_schema_rejects_float16_statistics():
    m = model("float16", [[2, 3], [2, 3], [3], [3], [3]])
    m.graph.input[3].type.tensor_type.elem_type = TensorProto.FLOAT16
    so = ort.SessionOptions()
    so.register_custom_ops_library(ort_ops.get_library_path())
    with pytest.raises(Exception, match=r"var|Type"):
        ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    good = model("float16", [[2, 3], [2, 3], [3], [3], [3]])  # float32 statistics: accepted
    ort.InferenceSession(good.SerializeToString(), so, providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("outputs", [("dx", "dscale", "dbias"), ("dx", "", "dbias"), ("dx",)])
def test_lowering_is_the_op_within_tolerance(dtype, outputs):
    """rewrite/lowerings/batch_norm_grad.py in standard ONNX ops (ORT's CPU EP) against the op."""
    from ort_ops.rewrite.lower import lower

    for shape in ((6, 3), (4, 3, 2, 5), (0, 3, 2)):
        arrays = inputs(shape, dtype)
        m = model(dtype, [list(a.shape) for a in arrays], 1e-3, outputs)
        lowered = lower(m)
        assert all(n.domain in ("", "ai.onnx") for n in lowered.graph.node), [n.op_type for n in lowered.graph.node]
        sess = ort.InferenceSession(lowered.SerializeToString(), providers=["CPUExecutionProvider"])
        got = ort_io.run(sess, dict(zip(NAMES, arrays)))
        want = cpu_run(arrays, 1e-3, outputs)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            closeness = tolerances.check(g, w)
            assert closeness.ok, closeness.message
