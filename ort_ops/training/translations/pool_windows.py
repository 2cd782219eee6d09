"""Average pooling as separable window sums: the windows of each output cell, as ONNX MatMuls.

Every average pooling PyTorch has (``avg_pool{1,2,3}d`` with any padding, stride, ceil_mode,
count_include_pad, divisor_override; ``adaptive_avg_pool{1,2,3}d`` for any output size) reads,
for output cell ``o = (o_0, ..., o_{n-1})``, the box ``W_0(o_0) x ... x W_{n-1}(o_{n-1})`` of input
positions, and divides the window's sum by a divisor that is a product of per-axis counts (or
one constant, ``divisor_override``):

    y[o] = sum_{i in box(o)} x[i] / div[o]          dx[i] = sum_{o : i in box(o)} dy[o] / div[o]

So with the 0/1 matrix ``A_d[o, i] = [i in W_d(o)]`` of each spatial axis ``d`` the window sum is
``x`` contracted with ``A_d^T`` along every axis, and the gradient is ``dy / div`` contracted
with ``A_d`` -- each a MatMul with a constant [in, out] matrix (windows of non-divisible adaptive
sizes overlap: a row of ``A_d`` then shares columns with its neighbour, and the input position
gets both cells' shares). The matrices and ``div`` hold small integers, exact in any float type;
the divisions run in the compute type, once per output cell, as PyTorch divides (a float16 /
bfloat16 tensor is computed in float32 and rounded once). Shapes must be static.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from onnxscript import opset18 as op

_LOW_PRECISION = ("float16", "bfloat16")  # computed in float32, rounded once
_FLOAT = 1  # onnx.TensorProto.FLOAT


def per_dim(values: Sequence[int] | int | None, n: int, what: str, op_name: str, default=None) -> list[int]:
    """An aten int-list argument (an int, length 1 or ``n``; empty: ``default``) as ``n`` ints."""
    if values is None or (not isinstance(values, int) and len(values) == 0):
        if default is None:
            raise ValueError(f"{op_name}: {what} is empty and has no default")
        values = default
    if isinstance(values, int):
        values = [values]
    values = [int(v) for v in values]
    if len(values) == 1:
        values = values * n
    if len(values) != n:
        raise ValueError(f"{op_name}: {what} has {len(values)} entries, expected 1 or {n}")
    return values


def static_shape(value, what: str, op_name: str) -> list[int]:
    """``value``'s shape as ints; ``ValueError`` naming the op when a dimension is symbolic."""
    shape = value.shape
    if shape is None or any(not isinstance(d, int) for d in shape):
        raise ValueError(f"{op_name}: {what} needs a static shape, got {shape}; export with static input shapes "
                         "(the default of ort_ops.training.export_training_graph)")
    return [int(d) for d in shape]


def avg_pool_windows(size: int, out: int, kernel: int, stride: int, pad: int,
                     count_include_pad: bool) -> tuple[np.ndarray, np.ndarray]:
    """One axis of ``avg_pool``: the 0/1 matrix ``A[out, size]`` and each cell's count.

    As PyTorch's kernels: window ``[o*stride - pad, +kernel)`` cut at ``size + pad`` (the count
    with count_include_pad), then at the image ``[0, size)`` (the count without). A window wholly
    outside the image (possible only with ceil_mode) is empty: its row is zero.
    """
    windows = np.zeros((out, size), np.int64)
    counts = np.ones(out, np.int64)
    for o in range(out):
        start = o * stride - pad
        end = min(start + kernel, size + pad)
        padded = end - start
        start, end = max(start, 0), min(end, size)
        if start >= end:
            continue
        windows[o, start:end] = 1
        counts[o] = padded if count_include_pad else end - start
    return windows, counts


def adaptive_windows(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """One axis of ``adaptive_avg_pool``: cell ``o`` reads ``[floor(o*size/out), ceil((o+1)*size/out))``."""
    windows = np.zeros((out, size), np.int64)
    for o in range(out):
        start, end = (o * size) // out, -(-((o + 1) * size) // out)
        windows[o, start:end] = 1
    return windows, windows.sum(1)


def divisor_map(counts: Sequence[np.ndarray], divisor_override: int | None) -> np.ndarray:
    """``div[o_0, ..., o_{n-1}]``: the product of the axes' counts, or ``divisor_override``."""
    shape = [len(c) for c in counts]
    if divisor_override is not None:
        if int(divisor_override) <= 0:
            raise ValueError(f"divisor_override must be > 0, got {divisor_override}")
        return np.full(shape, int(divisor_override), np.int64)
    div = np.ones(shape, np.int64)
    for d, c in enumerate(counts):
        div = div * c.reshape([-1 if k == d else 1 for k in range(len(counts))])
    return div


def _const(array: np.ndarray, like):
    """``array`` (small integers) as a constant of ``like``'s dtype (exact in any float type)."""
    flat = op.Constant(value_floats=[float(v) for v in np.asarray(array).reshape(-1)])
    shaped = op.Reshape(flat, op.Constant(value_ints=list(np.asarray(array).shape)))
    return op.CastLike(shaped, like)


def _is_low_precision(value) -> bool:
    """float16 / bfloat16 (an onnx_ir DataType while traced, a NumPy dtype when run eagerly)."""
    return getattr(getattr(value, "dtype", None), "name", "").lower() in _LOW_PRECISION


def contract(t, shape: Sequence[int], matrices: Sequence[np.ndarray]):
    """``t`` (shape ``[*lead, *S]``, ``len(S) == len(matrices)``) with axis ``d`` of ``S``
    contracted with ``matrices[d]`` (``[S_d, T_d]``): a MatMul per axis, last axis first."""
    n = len(matrices)
    lead, sizes = list(shape[: len(shape) - n]), list(shape[len(shape) - n :])
    for d in reversed(range(n)):
        m = matrices[d]
        if d == n - 1:
            t = op.MatMul(t, _const(m, t))
        else:
            rest = int(np.prod(sizes[d + 1 :]))
            before = lead + sizes[:d]
            t = op.Reshape(t, op.Constant(value_ints=[*before, sizes[d], rest]))
            t = op.MatMul(_const(m.T, t), t)
            t = op.Reshape(t, op.Constant(value_ints=[*before, m.shape[1], *sizes[d + 1 :]]))
        sizes[d] = m.shape[1]
    return t


def window_sum_divided(x, shape: Sequence[int], windows: Sequence[np.ndarray], divisor: np.ndarray):
    """Forward: ``y[o] = sum_{i in box(o)} x[i] / div[o]`` (``windows[d]``: ``A_d[out, in]``)."""
    low = _is_low_precision(x)
    t = op.Cast(x, to=_FLOAT) if low else x
    t = op.Div(contract(t, shape, [w.T for w in windows]), _const(divisor, t))
    return op.CastLike(t, x) if low else t


def window_gradient(dy, dy_shape: Sequence[int], windows: Sequence[np.ndarray], divisor: np.ndarray):
    """Backward: ``dx[i] = sum_{o : i in box(o)} dy[o] / div[o]``."""
    low = _is_low_precision(dy)
    t = op.Cast(dy, to=_FLOAT) if low else dy
    t = contract(op.Div(t, _const(divisor, t)), dy_shape, windows)
    return op.CastLike(t, dy) if low else t
