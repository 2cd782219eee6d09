"""lower_elu_grad: bit-exact to the EluGrad kernel (fp32/fp16/bf16, NaN/Inf/+-0, alpha)."""

import ml_dtypes
import numpy as np
import onnx
import pytest

from graphs import elu_backward, mlp
from ort_ops import ort_io
from ort_ops.model_builder import make_elu_grad_model
from ort_ops.reference import elu_grad
from ort_ops.rewrite import fuse_elu_grad, lower_elu_grad
from ort_ops.rewrite.validation import session

NP = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}


def edge_values(dtype, n=4096, seed=0):
    rng = np.random.default_rng(seed)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-30, -1e-30, 65504, -1.0],
                       np.float32)
    g = np.concatenate([special, rng.standard_normal(n) * 3]).astype(np.float32)
    a = np.concatenate([special[::-1], rng.standard_normal(n) * 3]).astype(np.float32)
    a[:20] = np.tile([-0.0, 0.0, np.nan, -np.inf, np.inf], 4)
    with np.errstate(all="ignore"):
        return g.astype(NP[dtype]), a.astype(NP[dtype])


def bits(x):
    return np.asarray(x).view(np.uint16 if x.dtype.itemsize == 2 else np.uint32)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("alpha", [None, 1.0, 0.3])
def test_lowered_equals_kernel_bit_for_bit(dtype, alpha):
    model = make_elu_grad_model(dtype, shape=[4106], alpha=alpha)
    lowered = lower_elu_grad(model)
    assert "EluGrad" not in [n.op_type for n in lowered.graph.node]
    assert all(o.domain != "ai.ortops" for o in lowered.opset_import)
    onnx.checker.check_model(lowered, full_check=True)
    g, a = edge_values(dtype)
    feeds = {"grads": g, "activations": a}
    (kernel,) = ort_io.run(session(model), feeds)
    (low,) = ort_io.run(session(lowered), feeds)
    ref = elu_grad(g, a, 1.0 if alpha is None else alpha)
    assert np.array_equal(bits(kernel), bits(ref))
    assert np.array_equal(bits(low), bits(kernel))


def test_fuse_then_lower_round_trip_fp32_bit_exact():
    model = mlp(alpha=0.5)
    fused = fuse_elu_grad(model)
    lowered = lower_elu_grad(fused)
    onnx.checker.check_model(lowered, full_check=True)
    from ort_ops.rewrite.validation import random_inputs
    feeds = random_inputs(model)
    a = ort_io.run(session(fused), feeds)
    b = ort_io.run(session(lowered), feeds)
    for x, y in zip(a, b):
        assert np.array_equal(bits(x), bits(y))


def test_fuse_then_lower_fp16_graph():
    """In a whole fp16 graph ORT CPU runs the fp16 Elu in float32 and then drops the
    Cast(f32->f16)->Cast(f16->f32) pair in front of the lowered backward (InsertCastTransformer,
    even with optimisations off), so the lowered graph reads an unrounded Y: close, not bitwise."""
    model = elu_backward("less", "float16", 0.5)
    fused = fuse_elu_grad(model)
    lowered = lower_elu_grad(fused)
    from ort_ops.rewrite.validation import validate
    assert validate(fused, lowered, out=None).ok


def _lowered_and_kernel(dtype, alpha, g, a):
    model = make_elu_grad_model(dtype, shape=[g.size], alpha=alpha)
    lowered = lower_elu_grad(model)
    feeds = {"grads": g, "activations": a}
    return ort_io.run(session(lowered), feeds)[0], ort_io.run(session(model), feeds)[0]


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("alpha", [1.0, 0.5, 2.0])
def test_lowered_keeps_negative_zero_products(dtype, alpha):
    """grads < 0 and activations == -alpha: the product is -0.0. ORT's Where would give +0.0
    from its first branch; the lowered graph's select copies bits."""
    g = np.array([-1.0, -2.5, 1.0, -0.0, 0.0, -3.0], np.float32).astype(NP[dtype])
    a = np.array([-alpha, -alpha, -alpha, -1.0, -1.0, 0.0], np.float32).astype(NP[dtype])
    low, kernel = _lowered_and_kernel(dtype, alpha, g, a)
    assert np.array_equal(bits(low), bits(kernel)) and np.array_equal(bits(kernel), bits(elu_grad(g, a, alpha)))
    assert np.signbit(np.asarray(low[:2], np.float32)).all()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_lowered_copies_every_16_bit_grads_pattern(dtype):
    """Every bit pattern as grads (signalling NaNs and payloads included), on the grads branch
    (activations >= 0) and on the product branch (activations < 0)."""
    g = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(NP[dtype])
    for value in (0.5, -0.0, np.nan, -0.75, -np.inf):
        a = np.full(g.size, value, np.float32).astype(NP[dtype])
        low, kernel = _lowered_and_kernel(dtype, 1.0, g, a)
        assert np.array_equal(bits(low), bits(kernel)), value
        assert np.array_equal(bits(kernel), bits(elu_grad(g, a)))


def test_lowered_differs_only_where_grads_and_the_sum_are_both_nan():
    """The one documented difference: grads NaN and activations + alpha NaN on the negative
    side; which NaN ORT's float32 Mul returns is its choice. Everywhere else: bit-exact."""
    special = np.array([0x7F812345, 0xFFA0BEEF, 0x7FC00000], np.uint32).view(np.float32)
    vals = np.concatenate([special, np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, 2.5, -2.5], np.float32)])
    g, a = (x.ravel().copy() for x in np.meshgrid(vals, vals, indexing="ij"))
    for alpha in (float("nan"), float("inf"), 0.5):
        low, kernel = _lowered_and_kernel("float32", alpha, g, a)
        assert np.array_equal(bits(kernel), bits(elu_grad(g, a, alpha)))
        with np.errstate(invalid="ignore"):
            both_nan = (a < 0) & np.isnan(g) & np.isnan(a + np.float32(alpha))
        differ = bits(low) != bits(kernel)
        assert not (differ & ~both_nan).any(), np.nonzero(differ & ~both_nan)
        assert np.isnan(low[both_nan]).all()
