"""ONNX translation of the forward ``aten.avg_pool2d`` / ``aten.avg_pool3d``: divisor_override.

torch 2.13's exporter writes ``AveragePool`` and ignores ``divisor_override`` (a TODO in its
torchlib), so ``nn.AvgPool2d(..., divisor_override=d)`` exported a forward that silently divides
by the window size instead. Without divisor_override this emits the same ``AveragePool`` the
exporter does (PyTorch's windows, ceil_mode and count_include_pad are ONNX's); with it, the
window sums divided by ``d`` (:func:`~ort_ops.training.translations.pool_windows.window_sum_divided`),
as PyTorch computes them. Static shapes.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from onnxscript import opset18 as op

from ort_ops.training.translations.pool_windows import (
    avg_pool_windows,
    divisor_map,
    per_dim,
    static_shape,
    window_sum_divided,
)


def pooled_size(size: int, kernel: int, stride: int, pad: int, ceil_mode: bool) -> int:
    """PyTorch's output length: ``(size + 2 pad - kernel) / stride + 1`` rounded down (up with
    ceil_mode, but the last window must start inside the image or its left padding)."""
    span = size + 2 * pad - kernel
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def _avg_pool(nd: int, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    name = f"avg_pool{nd}d"
    k = per_dim(kernel_size, nd, "kernel_size", name)
    s = per_dim(stride, nd, "stride", name, default=k)
    p = per_dim(padding, nd, "padding", name, default=[0])
    shape = static_shape(input, "input", name)
    if divisor_override is None:
        unbatched = len(shape) == nd + 1
        x = op.Unsqueeze(input, op.Constant(value_ints=[0])) if unbatched else input
        y = op.AveragePool(x, kernel_shape=k, strides=s, pads=p + p, ceil_mode=int(bool(ceil_mode)),
                           count_include_pad=int(bool(count_include_pad)))
        return op.Squeeze(y, op.Constant(value_ints=[0])) if unbatched else y
    axes = []
    for d in range(nd):
        size = shape[-nd + d]
        out = pooled_size(size, k[d], s[d], p[d], bool(ceil_mode))
        axes.append(avg_pool_windows(size, out, k[d], s[d], p[d], bool(count_include_pad)))
    return window_sum_divided(input, shape, [w for w, _ in axes], divisor_map([c for _, c in axes], divisor_override))


def avg_pool2d(input, kernel_size: Sequence[int], stride: Sequence[int] = (), padding: Sequence[int] = (0,),
               ceil_mode: bool = False, count_include_pad: bool = True, divisor_override: int | None = None):
    """``aten::avg_pool2d`` as ONNX ops (``AveragePool``, or window sums with divisor_override)."""
    return _avg_pool(2, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool3d(input, kernel_size: Sequence[int], stride: Sequence[int] = (), padding: Sequence[int] = (0,),
               ceil_mode: bool = False, count_include_pad: bool = True, divisor_override: int | None = None):
    """``aten::avg_pool3d`` as ONNX ops (``AveragePool``, or window sums with divisor_override)."""
    return _avg_pool(3, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


TRANSLATIONS = {
    torch.ops.aten.avg_pool2d.default: avg_pool2d,
    torch.ops.aten.avg_pool3d.default: avg_pool3d,
}
