"""MseLossAndGrad: the reference against PyTorch's F.mse_loss and its autograd (every dtype, both
reductions, dloss not 1), the CPU kernel's stated float32 order bit for bit (its loss sum in
element order, its gradient (d * cof) * dloss), its corners (empty, unequal shapes, a dloss that is
not a scalar, an unknown reduction), and the lowering (gradient bit for bit)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from op_helpers import make_session
from ort_ops import dtypes, ort_io, tolerances
from ort_ops.model_builder import make_op_model
from ort_ops.ops.mse_loss_and_grad import OP, gradient_scale
from ort_ops.ops.mse_loss_and_grad import mse_loss_and_grad as reference
from ort_ops.rewrite.lower import LOWERINGS
from ort_ops.rewrite.validation import session as plain_session

DTYPES = pytest.mark.parametrize("dtype", dtypes.FLOAT_TYPES)
REDUCTIONS = pytest.mark.parametrize("reduction", ["mean", "sum"])
TORCH = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def inputs(dtype, shape=(6, 7), dloss=1.0, seed=0):
    rng = np.random.default_rng(seed)
    t = dtypes.numpy_dtype(dtype)
    return (rng.normal(0, 2, shape).astype(np.float32).astype(t), rng.normal(0, 2, shape).astype(np.float32).astype(t),
            np.array(dloss, t))


def model(dtype, reduction, rank=3):
    """A one-node model taking any shape of ``rank`` (dloss a scalar)."""
    dims = [f"d{i}" for i in range(rank)]
    return make_op_model(OP, dtype, None, input_shapes=[dims, dims, []], reduction=reduction)


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint16 if a.itemsize == 2 else np.uint32)


@DTYPES
@REDUCTIONS
@pytest.mark.parametrize("dloss", [1.0, 0.75])
def test_reference_is_pytorchs_mse_loss_and_its_autograd(dtype, reduction, dloss):
    """In float64, PyTorch's loss and gradient of the same (exactly representable) values agree
    with the reference within the dtype's tolerance (the reference rounds once to T)."""
    x, y, d = inputs(dtype, dloss=dloss)
    px = torch.tensor(x.astype(np.float64), requires_grad=True)
    loss = F.mse_loss(px, torch.tensor(y.astype(np.float64)), reduction=reduction)
    loss.backward(torch.tensor(float(d.astype(np.float64)), dtype=torch.float64))
    got_loss, got_grad = reference(x, y, d, reduction=reduction)
    for got, want, what in ((got_loss, loss.detach().numpy(), "loss"), (got_grad, px.grad.numpy(), "dprediction")):
        check = tolerances.check(got, want.astype(got.dtype))
        assert check.ok, f"{what}: {check.message}"
    # and PyTorch in the dtype itself (its own float32 math for half types) within tolerance
    tx = torch.tensor(x.astype(np.float32)).to(TORCH[dtype]).requires_grad_(True)
    tl = F.mse_loss(tx, torch.tensor(y.astype(np.float32)).to(TORCH[dtype]), reduction=reduction)
    tl.backward(torch.tensor(float(d.astype(np.float32))).to(TORCH[dtype]))
    check = tolerances.check(got_grad, tx.grad.float().numpy().astype(got_grad.dtype))
    assert check.ok, check.message


@DTYPES
@REDUCTIONS
def test_cpu_kernel_is_its_stated_float32_order(dtype, reduction):
    x, y, d = inputs(dtype, shape=(3, 5, 7), dloss=1.25, seed=1)
    loss, grad = ort_io.run(make_session(model(dtype, reduction)), {"prediction": x, "target": y, "dloss": d})
    diff = x.astype(np.float32) - y.astype(np.float32)
    want_grad = ((diff * gradient_scale(reduction, diff.size)) * d.astype(np.float32)).astype(x.dtype)
    total = np.cumsum((diff * diff).reshape(-1), dtype=np.float32)[-1]
    if reduction == "mean":
        total = total * np.float32(1.0 / diff.size)
    np.testing.assert_array_equal(bits(grad), bits(want_grad))
    np.testing.assert_array_equal(bits(loss), bits(np.array(total).astype(x.dtype)))


def test_gradient_scale_is_two_over_n_rounded_once():
    assert gradient_scale("mean", 12) == np.float32(2.0 / 12) and gradient_scale("sum", 12) == np.float32(2.0)


@REDUCTIONS
def test_empty_prediction(reduction):
    x = np.zeros((0, 4), np.float32)
    loss, grad = ort_io.run(make_session(model("float32", reduction, rank=2)),
                            {"prediction": x, "target": x, "dloss": np.array(1.0, np.float32)})
    assert grad.shape == (0, 4)
    assert np.isnan(loss) if reduction == "mean" else loss == 0.0
    want_loss, _ = reference(x, x, np.array(1.0, np.float32), reduction=reduction)
    assert np.array_equal(loss, want_loss, equal_nan=True)


@pytest.mark.parametrize("target_shape, dloss_shape, message", [
    ((3, 2), (), r"target shape \[3, 2\] differs from prediction shape \[2, 3\]"),
    ((1, 3), (), r"target shape \[1, 3\] differs from prediction shape \[2, 3\]"),
    ((2, 3), (1,), r"dloss must be a scalar \(shape \[\]\), got shape \[1\]"),
])
def test_mismatched_inputs_are_refused_naming_them(target_shape, dloss_shape, message):
    one_node = make_op_model(OP, "float32", None, input_shapes=[["a", "b"], ["c", "d"], ["e"] if dloss_shape else []])
    feeds = {"prediction": np.zeros((2, 3), np.float32), "target": np.zeros(target_shape, np.float32),
             "dloss": np.ones(dloss_shape, np.float32)}
    with pytest.raises(Exception, match=message):
        ort_io.run(make_session(one_node), feeds)
    with pytest.raises(ValueError, match=message):
        reference(*feeds.values())


def test_unknown_reduction_is_refused_at_session_creation():
    with pytest.raises(Exception, match='reduction must be "mean" or "sum", got "none"'):
        make_session(make_op_model(OP, "float32", None, reduction="none"))
    with pytest.raises(ValueError, match="reduction must be one of"):
        reference(*inputs("float32"), reduction="none")


@DTYPES
@REDUCTIONS
def test_lowering_gradient_is_bit_exact(dtype, reduction):
    fused = model(dtype, reduction)
    x, y, d = inputs(dtype, shape=(5, 3, 4), dloss=0.75, seed=2)
    feeds = {"prediction": x, "target": y, "dloss": d}
    loss, grad = ort_io.run(plain_session(LOWERINGS[OP.name](fused)), feeds)
    want_loss, want_grad = ort_io.run(make_session(fused), feeds)
    np.testing.assert_array_equal(bits(grad), bits(want_grad))
    check = tolerances.check(loss, want_loss)
    assert check.ok, check.message
