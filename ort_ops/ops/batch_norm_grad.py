"""``ai.ortops::BatchNormGrad``: the training-mode backward of batch normalisation over axis 1,
CANN's ``BatchNormGradV3`` (``ops-nn`` ``norm/batch_norm_grad_v3``, is_training true), PyTorch's
``native_batch_norm_backward`` with ``train=True``.

x is ``[N, C, *spatial]`` (rank >= 2); each channel c has M = N * prod(spatial) elements, the
forward's batch mean and biased batch variance (``var``), and ``rstd = 1 / sqrt(var + epsilon)``::

    xhat = (x - mean) * rstd
    dx = scale * rstd * (dy - sum(dy) / M - xhat * sum(dy * xhat) / M)        (per channel)
    dscale = sum(dy * xhat),  dbias = sum(dy)

The statistics are the variance and epsilon, not the inverse standard deviation: they are what
PyTorch's exported forward computes (its saved invstd is ``1 / sqrt(var + eps)`` of them) and what
``BatchNormGradV3``'s Atlas A2/A3 kernel reads (its ``save_rstd`` input holds the variance there; it
adds epsilon and takes the square root itself), so the op reads them without loss.

Not bit-exact across kernels (the sums' order): every kernel is within :mod:`ort_ops.tolerances`
of :func:`batch_norm_grad`, the float64 definition rounded once; ``docs/ops/BatchNormGrad.md``
says what each kernel computes.
"""

from __future__ import annotations

import math

import numpy as np

from ort_ops import dtypes
from ort_ops.ops.definition import Attribute, OpDef, Tensor

DEFAULT_EPSILON = 1e-5  # PyTorch's BatchNorm eps, BatchNormGradV3's epsilon
STATS_TYPE = "float32"  # mean / var: PyTorch's saved statistics, CANN's save_mean / save_rstd


def batch_norm_grad(dy, x, mean, var, scale, epsilon: float = DEFAULT_EPSILON):
    """``(dx, dscale, dbias)`` in float64 (every input exact there), each rounded once to x's dtype."""
    dy, x, mean, var, scale = (np.asarray(a) for a in (dy, x, mean, var, scale))
    _check(dy, x, mean, var, scale)
    c = x.shape[1]
    m = math.prod(x.shape) // c if c else 0
    axes = (0, *range(2, x.ndim))
    column = (1, c) + (1,) * (x.ndim - 2)
    dy64, x64 = dy.astype(np.float64), x.astype(np.float64)
    mean64, var64 = mean.astype(np.float64).reshape(column), var.astype(np.float64).reshape(column)
    scale64 = scale.astype(np.float64).reshape(column)
    with np.errstate(all="ignore"):
        rstd = 1.0 / np.sqrt(var64 + np.float64(np.float32(epsilon)))
        xhat = (x64 - mean64) * rstd
        s1 = dy64.sum(axis=axes, keepdims=True)
        s2 = (dy64 * xhat).sum(axis=axes, keepdims=True)
        dx = scale64 * rstd * (dy64 - s1 / m - xhat * s2 / m)
    return dx.astype(x.dtype), s2.reshape(c).astype(x.dtype), s1.reshape(c).astype(x.dtype)


def _check(dy, x, mean, var, scale) -> None:
    for name, array in (("dy", dy), ("x", x), ("scale", scale)):
        try:
            dtypes.canonical_name(array.dtype)
        except TypeError:
            raise TypeError(f"BatchNormGrad: {name} has unsupported dtype {array.dtype}; expected one of "
                            f"{', '.join(dtypes.FLOAT_TYPES)}") from None
    for name, array in (("dy", dy), ("scale", scale)):
        if array.dtype != x.dtype:
            raise TypeError(f"BatchNormGrad: {name} dtype {array.dtype} differs from x dtype {x.dtype}")
    for name, array in (("mean", mean), ("var", var)):
        if array.dtype != np.float32:
            raise TypeError(f"BatchNormGrad: {name} has dtype {array.dtype}; expected float32")
    shapes([dy.shape, x.shape, mean.shape, var.shape, scale.shape], {})


def stats_shapes(x_shape) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The two shapes mean and var may have: ``[C]``, or x's rank with 1 save at axis 1."""
    x_shape = tuple(x_shape)
    return (x_shape[1],), (1, x_shape[1]) + (1,) * (len(x_shape) - 2)


def shapes(input_shapes, attributes) -> list[tuple[int, ...]]:
    """``[x, [C], [C]]``: dy of x's shape (rank >= 2, channels at axis 1), mean and var ``[C]`` or
    ``[1, C, 1, ...]`` (x's rank), scale ``[C]``."""
    dy, x, mean, var, scale = (tuple(s) for s in input_shapes)
    if len(x) < 2:
        raise ValueError(f"BatchNormGrad: x has rank {len(x)} (shape {list(x)}); expected rank >= 2 [N, C, ...]")
    if dy != x:
        raise ValueError(f"BatchNormGrad: dy shape {list(dy)} differs from x shape {list(x)}")
    allowed = stats_shapes(x)
    for name, shape in (("mean", mean), ("var", var)):
        if shape not in allowed:
            raise ValueError(f"BatchNormGrad: {name} shape {list(shape)} is neither {list(allowed[0])} nor "
                             f"{list(allowed[1])} (x {list(x)}: C = {x[1]} channels at axis 1)")
    if scale != (x[1],):
        raise ValueError(f"BatchNormGrad: scale shape {list(scale)} is not [{x[1]}] (x {list(x)}: C at axis 1)")
    return [x, (x[1],), (x[1],)]


def _sample_inputs(dtype: str, attributes: dict, rng: np.random.Generator) -> list[np.ndarray]:
    """A training BatchNorm's batch statistics of normal [3, 4, 5] inputs per channel (axis 1), a
    normal scale and gradient."""
    np_dtype = dtypes.numpy_dtype(dtype)
    shape = (3, 4, 5)
    x = rng.normal(0.5, 2.0, shape).astype(np.float32).astype(np_dtype)
    x32 = x.astype(np.float32)
    mean = x32.mean(axis=(0, 2), dtype=np.float32)
    var = ((x32 - mean[None, :, None]) ** 2).mean(axis=(0, 2), dtype=np.float32)
    scale = rng.normal(1.0, 0.5, shape[1]).astype(np.float32).astype(np_dtype)
    dy = rng.normal(0.0, 1.0, shape).astype(np.float32).astype(np_dtype)
    return [dy, x, mean.astype(np.float32), var.astype(np.float32), scale]


OP = OpDef(
    name="BatchNormGrad",
    inputs=(Tensor("dy", "upstream gradient dL/dY of the batch normalisation's output"),
            Tensor("x", "the forward's input [N, C, ...] (rank >= 2), dy's shape and dtype"),
            Tensor("mean", "the forward's batch mean per channel, [C] or [1, C, 1, ...]", type=STATS_TYPE),
            Tensor("var", "the forward's biased batch variance per channel, mean's shape", type=STATS_TYPE),
            Tensor("scale", "the forward's scale (gamma), [C]")),
    outputs=(Tensor("dx", "dL/dX, x's shape"),
             Tensor("dscale", "dL/dScale, [C]", optional=True),
             Tensor("dbias", "dL/dBias, [C]", optional=True)),
    attributes=(Attribute("epsilon", DEFAULT_EPSILON, "the forward's epsilon: rstd = 1 / sqrt(var + epsilon)"),),
    reference=batch_norm_grad,
    # ONNX BatchNormalization's attributes the backward does not take
    foreign_attributes=("momentum", "training_mode"),
    shape=shapes,
    sample_inputs=_sample_inputs,
    exact=False,
    summary="BatchNorm training backward over axis 1: dx, dscale, dbias from dy, x, the batch mean and variance "
            "and scale",
    examples=({"epsilon": 1e-5}, {"epsilon": 0.1}, {"epsilon": 0.0}),
    doc="""\
Gradient of training-mode batch normalisation over the channels at axis 1 (M = N * prod(spatial)
elements per channel): with rstd = 1 / sqrt(var + epsilon) and xhat = (x - mean) * rstd,
dx = scale * rstd * (dy - sum(dy) / M - xhat * sum(dy * xhat) / M) per channel; dscale =
sum(dy * xhat), dbias = sum(dy). mean and var (the biased batch variance) are float32, of shape [C]
or [1, C, 1, ...]. Computed in float32 (float16/bfloat16 inputs cast exactly), rounded once to T;
within the library's tolerance of the float64 definition (the kernels sum in different orders).""",
)
