"""lower_elu_grad: bit-exact to the EluGrad kernel (fp32/fp16/bf16, NaN/Inf/+-0, alpha)."""

import ml_dtypes
import numpy as np
import onnx
import pytest

from graphs import elu_backward, mlp
from ort_ops import ort_io
from ort_ops.model_builder import make_elu_grad_model
from ort_ops.reference import elu_grad
from rewrite import fuse_elu_grad, lower_elu_grad
from rewrite.validate import session

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
    from rewrite.validate import random_inputs
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
    from rewrite.validate import validate
    assert validate(fused, lowered, out=None).ok
