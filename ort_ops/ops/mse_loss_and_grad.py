"""``ai.ortops::MseLossAndGrad``: the mean squared error, its loss and its gradient in one op
(``F.mse_loss`` with ``reduction`` "mean" or "sum"; CANN's ``MseLoss`` + ``MseLossGrad``).

    d            = prediction - target                 (float32)
    loss         = sum(d * d)             ("mean": * 1 / N, N = the element count)
    dprediction  = (d * cof) * dloss,     cof = 2 / N ("mean") or 2 ("sum")

The gradient is bit-exact in every kernel (float32 Sub, Mul by float32(cof), Mul by dloss, one
rounding); the loss's float32 sum is not (the kernels add in element order, the NPU in its own):
kernels agree with :func:`mse_loss_and_grad` within :mod:`ort_ops.tolerances`
(``docs/ops/MseLossAndGrad.md``).
"""

from __future__ import annotations

import numpy as np

from ort_ops import dtypes
from ort_ops.ops.definition import Attribute, OpDef, Tensor

REDUCTIONS = ("mean", "sum")


def gradient_scale(reduction: str, count: int) -> np.float32:
    """``cof``: float32(2 / N) for "mean" (N = ``count``, computed in float64 and rounded once, as
    CANN's MseLossGrad tiling), 2 for "sum"."""
    return np.float32(2.0 / count) if reduction == "mean" else np.float32(2.0)


def mse_loss_and_grad(prediction, target, dloss, reduction: str = "mean") -> tuple[np.ndarray, np.ndarray]:
    """``(loss, dprediction)`` of ``prediction``'s dtype.

    ``d = float32(prediction) - float32(target)`` (exact loads, one float32 subtraction);
    ``dprediction = (d * cof) * float32(dloss)`` in float32 (:func:`gradient_scale`), rounded once;
    ``loss`` = the sum of ``d * d`` (float32 squares summed in float64; "mean": divided by N, NaN
    for N = 0), rounded once. ``prediction`` and ``target`` of one dtype and one shape (PyTorch's
    broadcasting of a target is not taken), ``dloss`` a scalar of that dtype.
    """
    prediction, target, dloss = np.asarray(prediction), np.asarray(target), np.asarray(dloss)
    _check(prediction, target, dloss, reduction)
    with np.errstate(all="ignore"):
        d = prediction.astype(np.float32) - target.astype(np.float32)
        squares = (d * d).astype(np.float64)
        total = squares.sum()
        n = d.size
        loss = (total / n if n else np.nan) if reduction == "mean" else total
        cof = gradient_scale(reduction, n) if n else np.float32(0.0)
        dprediction = (d * cof) * dloss.astype(np.float32)
    return np.asarray(loss).astype(prediction.dtype), dprediction.astype(prediction.dtype)


def _check(prediction, target, dloss, reduction):
    try:
        dtypes.canonical_name(prediction.dtype)
    except TypeError:
        raise TypeError(f"MseLossAndGrad: prediction has unsupported dtype {prediction.dtype}; expected one of "
                        f"{', '.join(dtypes.FLOAT_TYPES)}") from None
    for name, array in (("target", target), ("dloss", dloss)):
        if array.dtype != prediction.dtype:
            raise TypeError(f"MseLossAndGrad: {name} dtype {array.dtype} differs from prediction dtype "
                            f"{prediction.dtype}")
    if reduction not in REDUCTIONS:
        raise ValueError(f"MseLossAndGrad: reduction must be one of {REDUCTIONS}, got {reduction!r}")
    shapes([prediction.shape, target.shape, dloss.shape], {})


def shapes(input_shapes, attributes) -> list[tuple[int, ...]]:
    """``[(), prediction's shape]`` for target of prediction's shape and a scalar dloss
    (``ValueError`` otherwise)."""
    prediction, target, dloss = (tuple(s) for s in input_shapes[:3])
    if target != prediction:
        raise ValueError(f"MseLossAndGrad: target shape {list(target)} differs from prediction shape "
                         f"{list(prediction)} (broadcasting is not supported)")
    if dloss != ():
        raise ValueError(f"MseLossAndGrad: dloss must be a scalar (shape []), got shape {list(dloss)}")
    return [(), prediction]


def _sample_inputs(dtype: str, attributes: dict, rng: np.random.Generator) -> list[np.ndarray]:
    """A [5, 3, 4] prediction and target (one pair equal), a dloss that is not 1."""
    np_dtype = dtypes.numpy_dtype(dtype)
    prediction = rng.normal(0.0, 2.0, (5, 3, 4)).astype(np.float32)
    target = rng.normal(0.0, 2.0, (5, 3, 4)).astype(np.float32)
    target[0, 0, 0] = prediction[0, 0, 0]
    dloss = np.array(rng.uniform(0.5, 2.0), np.float32)
    return [prediction.astype(np_dtype), target.astype(np_dtype), dloss.astype(np_dtype)]


OP = OpDef(
    name="MseLossAndGrad",
    inputs=(Tensor("prediction", "the model's output, any shape"),
            Tensor("target", "the regression target, prediction's shape"),
            Tensor("dloss", "dL/dloss, a scalar (1 for a training graph's own loss)")),
    outputs=(Tensor("loss", "the squared error summed (\"sum\") or averaged (\"mean\"), a scalar"),
             Tensor("dprediction", "dL/dprediction, prediction's shape")),
    attributes=(Attribute("reduction", "mean", "\"mean\" (over every element) or \"sum\"", kind="string"),),
    reference=mse_loss_and_grad,
    shape=shapes,
    sample_inputs=_sample_inputs,
    exact=False,
    summary="mean squared error and its gradient (F.mse_loss, mean or sum)",
    examples=({"reduction": "sum"},),
    doc="""\
The squared error and its gradient in one op: d = prediction - target (float32); loss = the sum of
d * d, divided by N (the element count) for reduction "mean"; dprediction = (d * cof) * dloss with
cof = float32(2 / N) for "mean", 2 for "sum" (float32, one rounding to T: bit-exact). The loss's
float32 sum is taken in element order (the NPU's order differs): within the library's tolerance of
the reference, which sums in float64.""",
)
