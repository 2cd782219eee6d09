"""``ai.ortops::SoftmaxCrossEntropyLossAndGrad``: softmax cross-entropy over class indices, its
loss and its gradient in one op (``F.cross_entropy`` with ``reduction`` "mean" or "sum", any
``label_smoothing`` and optional class weights ``weight``).

    valid[n] = target[n] != ignore_index;   lsm = log_softmax(logits, axis=1);   w = weight (or 1s)
    q[n, c]  = (1 - eps) * w[t_n] * one_hot(target)[n, c] + eps / C * w[c]        (eps = label_smoothing)
    W        = sum_n valid[n] * w[t_n]        (the row count without weights)
    loss     = sum_n valid[n] * -sum_c q[n, c] * lsm[n, c]  (/ W for "mean")
    dlogits  = s[:, None] * (softmax(logits) * sum_c q[n, c] - q),  s[n] = valid[n] ? dloss (/ W) : 0

(without weights sum_c q[n, c] = 1: dlogits = s * (softmax - q)).

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


def softmax_cross_entropy_loss_and_grad(logits, target, dloss, weight=None, ignore_index: int = DEFAULT_IGNORE_INDEX,
                                        reduction: str = "mean",
                                        label_smoothing: float = DEFAULT_LABEL_SMOOTHING
                                        ) -> tuple[np.ndarray, np.ndarray]:
    """``(loss, dlogits)`` computed in float64 and rounded once to the logits' dtype.

    ``logits`` [N, C] (float32/float16/bfloat16), ``target`` [N] int64 class indices, ``dloss``
    a scalar of the logits' dtype (the gradient of the loss), ``weight`` [C] of the logits' dtype
    or None (PyTorch's class weights; None: every class weighs 1). Rows whose target is
    ``ignore_index`` take no part: they add nothing to the loss nor to the normaliser, and their
    gradient is ``0 * (...)`` (0, or NaN where the row's softmax is NaN). A row's loss is
    ``-w[t] * lsm[t]``; "mean" divides the sum by that of ``w[t]`` over the other rows (their
    count without weights; NaN loss and zero gradient when no row counts, as PyTorch). A target
    outside ``[0, C)`` that is not ``ignore_index`` is an error. ``label_smoothing`` eps in [0, 1]
    (PyTorch's): each valid row's target distribution is ``(1 - eps) * w[t] * one_hot + eps / C
    * w`` (a -inf logit then makes the loss +inf, as in PyTorch; NaN where its class weighs 0).
    """
    logits, target, dloss = np.asarray(logits), np.asarray(target), np.asarray(dloss)
    weight = None if weight is None else np.asarray(weight)
    _check(logits, target, dloss, reduction, label_smoothing, weight)
    n, c = logits.shape
    valid = target != ignore_index
    bad = valid & ((target < 0) | (target >= c))
    if bad.any():
        row = int(np.argmax(bad))
        raise ValueError(f"SoftmaxCrossEntropyLossAndGrad: target[{row}] = {int(target[row])} is outside "
                         f"[0, {c}) and is not ignore_index {ignore_index}")
    x = logits.astype(np.float64)
    w = np.ones(c) if weight is None else weight.astype(np.float64)
    with np.errstate(all="ignore"):
        m = x.max(axis=1, keepdims=True) if c else np.zeros((n, 1))
        shifted = x - m
        lse = np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        lsm = shifted - lse
        eps = float(np.float32(label_smoothing))  # an ONNX float attribute: the kernels read float32
        safe = np.where(valid, target, 0)
        w_target = np.where(valid, w[safe], 0.0) if c else np.zeros(n)  # w[t_n], 0 for ignored rows
        one_hot = (np.arange(c)[None, :] == np.where(valid, target, -1)[:, None]).astype(np.float64)
        q = (1.0 - eps) * w_target[:, None] * one_hot + (eps / c if c else 0.0) * w[None, :]
        if eps == 0.0:  # one term per row: a -inf logit of another class adds nothing
            row_loss = -w_target * lsm[np.arange(n), safe] if c else np.zeros(n)
        else:
            row_loss = -(q * lsm).sum(axis=1)
        total = np.where(valid, row_loss, 0.0).sum()
        normaliser = w_target.sum()  # the count of valid rows without weights
        d = float(dloss.astype(np.float64))
        if reduction == "mean":  # W = 0: PyTorch's nll is 0 / 0 (NaN whatever eps adds); the rows that
            # count then weigh 0 each and get NaN gradients, as PyTorch's d / 0 * 0 (no row counts: zeros)
            loss, scale = (total / normaliser, d / normaliser) if normaliser else (np.nan, np.nan)
        else:
            loss, scale = total, d
        s = np.where(valid, scale, 0.0)[:, None]
        mass = q.sum(axis=1, keepdims=True) if weight is not None else 1.0  # sum_c q[n, c]
        dlogits = s * (np.exp(lsm) * mass - q)
    return np.asarray(loss).astype(logits.dtype), dlogits.astype(logits.dtype)


def _check(logits, target, dloss, reduction, label_smoothing=DEFAULT_LABEL_SMOOTHING, weight=None):
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
    if weight is not None and weight.dtype != logits.dtype:
        raise TypeError(f"SoftmaxCrossEntropyLossAndGrad: weight dtype {weight.dtype} differs from logits dtype "
                        f"{logits.dtype}")
    shapes([logits.shape, target.shape, dloss.shape, None if weight is None else weight.shape], {})


def shapes(input_shapes, attributes) -> list[tuple[int, ...]]:
    """``[(), (N, C)]`` for logits [N, C], target [N], dloss [], weight [C] or absent (``ValueError``
    otherwise)."""
    logits, target, dloss = (tuple(s) for s in input_shapes[:3])
    weight = input_shapes[3] if len(input_shapes) > 3 else None
    if len(logits) != 2:
        raise ValueError(f"SoftmaxCrossEntropyLossAndGrad: logits must be 2-D [N, C], got shape {list(logits)}")
    if target != logits[:1]:
        raise ValueError(f"SoftmaxCrossEntropyLossAndGrad: target shape {list(target)} is not [N] = "
                         f"{list(logits[:1])} of logits shape {list(logits)}")
    if dloss != ():
        raise ValueError(f"SoftmaxCrossEntropyLossAndGrad: dloss must be a scalar (shape []), got shape "
                         f"{list(dloss)}")
    if weight is not None and tuple(weight) != logits[1:]:
        raise ValueError(f"SoftmaxCrossEntropyLossAndGrad: weight shape {list(weight)} is not [C] = "
                         f"{list(logits[1:])} of logits shape {list(logits)}")
    return [(), logits]


def _sample_inputs(dtype: str, attributes: dict, rng: np.random.Generator) -> list[np.ndarray]:
    """9 rows of 6 classes, two rows ignored, a dloss that is not 1; class weights (one of them 0)
    with the examples whose ignore_index is 2, none with the others."""
    np_dtype = dtypes.numpy_dtype(dtype)
    n, c = 9, 6
    logits = rng.normal(0.0, 2.0, (n, c)).astype(np.float32).astype(np_dtype)
    target = rng.integers(0, c, n).astype(np.int64)
    target[[2, 6]] = attributes["ignore_index"]
    dloss = np.array(rng.uniform(0.5, 2.0), np.float32).astype(np_dtype)
    weight = None
    if attributes["ignore_index"] == 2:
        weight = rng.uniform(0.25, 3.0, c).astype(np.float32)
        weight[1] = 0.0
        weight = weight.astype(np_dtype)
    return [logits, target, dloss, weight]


OP = OpDef(
    name="SoftmaxCrossEntropyLossAndGrad",
    inputs=(Tensor("logits", "unnormalised class scores [N, C]"),
            Tensor("target", "class index of each row [N] (ignore_index: the row takes no part); in host memory: "
                   "both kernels range-check it there", type="int64", host=True),
            Tensor("dloss", "dL/dloss, a scalar (1 for a training graph's own loss)"),
            Tensor("weight", "class weights [C] (F.cross_entropy's weight); absent: every class weighs 1",
                   optional=True)),
    outputs=(Tensor("loss", "the cross-entropy, a scalar"),
             Tensor("dlogits", "dL/dlogits [N, C]")),
    attributes=(
        Attribute("ignore_index", DEFAULT_IGNORE_INDEX, "rows with this target take no part", kind="int"),
        Attribute("reduction", "mean", "\"mean\" (over the rows not ignored) or \"sum\"", kind="string"),
        Attribute("label_smoothing", DEFAULT_LABEL_SMOOTHING, "eps in [0, 1]: each row's target distribution is "
                  "(1 - eps) * w[t] * one_hot + eps / C * w (w: the class weights, 1s when absent)", kind="float"),
    ),
    reference=softmax_cross_entropy_loss_and_grad,
    # ONNX SoftmaxCrossEntropyLoss's attribute this op does not implement (class weights are input 3)
    foreign_attributes=("axis",),
    shape=shapes,
    sample_inputs=_sample_inputs,
    exact=False,
    summary="softmax cross-entropy loss over class indices and its gradient (F.cross_entropy, mean or sum, "
            "label smoothing, class weights)",
    examples=({"reduction": "sum"}, {"ignore_index": 2}, {"ignore_index": 2, "reduction": "sum"},
              {"label_smoothing": 0.1}, {"label_smoothing": 0.25, "reduction": "sum", "ignore_index": 2}),
    doc="""\
Softmax cross-entropy over class indices and its gradient in one op: loss = the sum over rows
whose target is not ignore_index of -w[t] * log_softmax(logits)[n, t] (t = target[n]; w the class
weights, 1s when absent), divided for reduction "mean" by W, the sum of w[t] over those rows (their
count without weights); with label_smoothing eps each row's target distribution is q = (1 - eps) *
w[t] * one_hot(target) + eps / C * w and its loss -sum_c q[c] * log_softmax(logits)[n, c]; dlogits =
s[n] * (softmax(logits) * sum_c q[c] - q), s[n] = dloss (divided by W for "mean") where the row
counts, else 0.
Computed in float32 or wider, rounded once to T; within the library's tolerance of the float64
reference (exp and log are not bit-exact).""",
)
