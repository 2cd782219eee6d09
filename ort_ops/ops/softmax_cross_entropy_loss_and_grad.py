"""``ai.ortops::SoftmaxCrossEntropyLossAndGrad``: softmax cross-entropy over class indices, its
loss and its gradient in one op (``F.cross_entropy`` with ``reduction`` "mean" or "sum" and any
``label_smoothing``).

    valid[n] = target[n] != ignore_index;   lsm = log_softmax(logits, axis=1)
    q[n, c]  = (1 - eps) * one_hot(target)[n, c] + eps / C          (eps = label_smoothing)
    loss     = sum_n valid[n] * -sum_c q[n, c] * lsm[n, c]  (/ count(valid) for "mean")
    dlogits  = w[:, None] * (softmax(logits) - q),  w[n] = valid[n] ? dloss (/ count) : 0

Not bit-exact (exp and log): kernels agree with :func:`softmax_cross_entropy_loss_and_grad` within
:mod:`ort_ops.tolerances`; ``docs/ops/SoftmaxCrossEntropyLossAndGrad.md`` says why and how far.
"""

from __future__ import annotations

import numpy as np

from ort_ops import dtypes
from ort_ops.ops.definition import Attribute, OpDef, Tensor

DEFAULT_IGNORE_INDEX = -100
DEFAULT_LABEL_SMOOTHING = 0.0
REDUCTIONS = ("mean", "sum")


def softmax_cross_entropy_loss_and_grad(logits, target, dloss, ignore_index: int = DEFAULT_IGNORE_INDEX,
                                        reduction: str = "mean",
                                        label_smoothing: float = DEFAULT_LABEL_SMOOTHING
                                        ) -> tuple[np.ndarray, np.ndarray]:
    """``(loss, dlogits)`` computed in float64 and rounded once to the logits' dtype.

    ``logits`` [N, C] (float32/float16/bfloat16), ``target`` [N] int64 class indices, ``dloss``
    a scalar of the logits' dtype (the gradient of the loss). Rows whose target is
    ``ignore_index`` take no part: they add nothing to the loss nor to the count, and their
    gradient is ``0 * (softmax - one_hot)`` (0, or NaN where the row's softmax is NaN). "mean"
    divides by the number of other rows (NaN loss and zero gradient when there is none, as
    PyTorch). A target outside ``[0, C)`` that is not ``ignore_index`` is an error.
    ``label_smoothing`` eps in [0, 1] (PyTorch's): each valid row's target distribution is
    ``(1 - eps) * one_hot + eps / C`` (a -inf logit then makes the loss +inf, as in PyTorch).
    """
    logits, target, dloss = np.asarray(logits), np.asarray(target), np.asarray(dloss)
    _check(logits, target, dloss, reduction, label_smoothing)
    n, c = logits.shape
    valid = target != ignore_index
    bad = valid & ((target < 0) | (target >= c))
    if bad.any():
        row = int(np.argmax(bad))
        raise ValueError(f"SoftmaxCrossEntropyLossAndGrad: target[{row}] = {int(target[row])} is outside "
                         f"[0, {c}) and is not ignore_index {ignore_index}")
    x = logits.astype(np.float64)
    with np.errstate(all="ignore"):
        m = x.max(axis=1, keepdims=True) if c else np.zeros((n, 1))
        shifted = x - m
        lse = np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        lsm = shifted - lse
        eps = float(np.float32(label_smoothing))  # an ONNX float attribute: the kernels read float32
        one_hot = (np.arange(c)[None, :] == np.where(valid, target, -1)[:, None]).astype(np.float64)
        q = (1.0 - eps) * one_hot + (eps / c if c else 0.0)
        if eps == 0.0:  # one term per row: a -inf logit of another class adds nothing
            safe = np.where(valid, target, 0)
            row_loss = -lsm[np.arange(n), safe] if c else np.zeros(n)
        else:
            row_loss = -(q * lsm).sum(axis=1)
        total = np.where(valid, row_loss, 0.0).sum()
        count = float(valid.sum())
        d = float(dloss.astype(np.float64))
        if reduction == "mean":
            loss, weight = total / count if count else np.nan, d / count if count else np.inf
        else:
            loss, weight = total, d
        w = np.where(valid, weight, 0.0)[:, None]
        dlogits = w * (np.exp(lsm) - q)
    return np.asarray(loss).astype(logits.dtype), dlogits.astype(logits.dtype)


def _check(logits, target, dloss, reduction, label_smoothing=DEFAULT_LABEL_SMOOTHING):
    try:
        dtypes.canonical_name(logits.dtype)
    except TypeError:
        raise TypeError(f"SoftmaxCrossEntropyLossAndGrad: logits have unsupported dtype {logits.dtype}; expected "
                        f"one of {', '.join(dtypes.FLOAT_TYPES)}") from None
    if target.dtype != np.int64:
        raise TypeError(f"SoftmaxCrossEntropyLossAndGrad: target must be int64, got {target.dtype}")
    if dloss.dtype != logits.dtype:
        raise TypeError(f"SoftmaxCrossEntropyLossAndGrad: dloss dtype {dloss.dtype} differs from logits dtype "
                        f"{logits.dtype}")
    if reduction not in REDUCTIONS:
        raise ValueError(f"SoftmaxCrossEntropyLossAndGrad: reduction must be one of {REDUCTIONS}, got "
                         f"{reduction!r}")
    if not 0.0 <= float(label_smoothing) <= 1.0:
        raise ValueError(f"SoftmaxCrossEntropyLossAndGrad: label_smoothing must be in [0, 1], got {label_smoothing!r}")
    shapes([logits.shape, target.shape, dloss.shape], {})


def shapes(input_shapes, attributes) -> list[tuple[int, ...]]:
    """``[(), (N, C)]`` for logits [N, C], target [N], dloss [] (``ValueError`` otherwise)."""
    logits, target, dloss = (tuple(s) for s in input_shapes)
    if len(logits) != 2:
        raise ValueError(f"SoftmaxCrossEntropyLossAndGrad: logits must be 2-D [N, C], got shape {list(logits)}")
    if target != logits[:1]:
        raise ValueError(f"SoftmaxCrossEntropyLossAndGrad: target shape {list(target)} is not [N] = "
                         f"{list(logits[:1])} of logits shape {list(logits)}")
    if dloss != ():
        raise ValueError(f"SoftmaxCrossEntropyLossAndGrad: dloss must be a scalar (shape []), got shape "
                         f"{list(dloss)}")
    return [(), logits]


def _sample_inputs(dtype: str, attributes: dict, rng: np.random.Generator) -> list[np.ndarray]:
    """9 rows of 6 classes, two rows ignored, a dloss that is not 1."""
    np_dtype = dtypes.numpy_dtype(dtype)
    n, c = 9, 6
    logits = rng.normal(0.0, 2.0, (n, c)).astype(np.float32).astype(np_dtype)
    target = rng.integers(0, c, n).astype(np.int64)
    target[[2, 6]] = attributes["ignore_index"]
    dloss = np.array(rng.uniform(0.5, 2.0), np.float32).astype(np_dtype)
    return [logits, target, dloss]


OP = OpDef(
    name="SoftmaxCrossEntropyLossAndGrad",
    inputs=(Tensor("logits", "unnormalised class scores [N, C]"),
            Tensor("target", "class index of each row [N] (ignore_index: the row takes no part); in host memory: "
                   "both kernels range-check it there", type="int64", host=True),
            Tensor("dloss", "dL/dloss, a scalar (1 for a training graph's own loss)")),
    outputs=(Tensor("loss", "the cross-entropy, a scalar"),
             Tensor("dlogits", "dL/dlogits [N, C]")),
    attributes=(
        Attribute("ignore_index", DEFAULT_IGNORE_INDEX, "rows with this target take no part", kind="int"),
        Attribute("reduction", "mean", "\"mean\" (over the rows not ignored) or \"sum\"", kind="string"),
        Attribute("label_smoothing", DEFAULT_LABEL_SMOOTHING, "eps in [0, 1]: each row's target distribution is "
                  "(1 - eps) * one_hot + eps / C", kind="float"),
    ),
    reference=softmax_cross_entropy_loss_and_grad,
    # F.cross_entropy's and ONNX SoftmaxCrossEntropyLoss's arguments this op does not implement
    foreign_attributes=("weight", "axis"),
    shape=shapes,
    sample_inputs=_sample_inputs,
    exact=False,
    summary="softmax cross-entropy loss over class indices and its gradient (F.cross_entropy, mean or sum, "
            "label smoothing)",
    examples=({"reduction": "sum"}, {"ignore_index": 2}, {"ignore_index": 2, "reduction": "sum"},
              {"label_smoothing": 0.1}, {"label_smoothing": 0.25, "reduction": "sum", "ignore_index": 2}),
    doc="""\
Softmax cross-entropy over class indices and its gradient in one op: loss = the sum over rows
whose target is not ignore_index of -log_softmax(logits)[n, target[n]] (divided by their count for
reduction "mean"); with label_smoothing eps each row's target distribution is q = (1 - eps) *
one_hot(target) + eps / C and its loss -sum_c q[c] * log_softmax(logits)[n, c]; dlogits = w[n] *
(softmax(logits) - q), w[n] = dloss (divided by the count for "mean") where the row counts, else 0.
Computed in float32 or wider, rounded once to T; within the library's tolerance of the float64
reference (exp and log are not bit-exact).""",
)
