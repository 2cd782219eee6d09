"""ONNX translation of ``aten.avg_pool2d_backward`` / ``aten.avg_pool3d_backward``.

torch 2.13's exporter has none (``No ONNX function found for aten.avg_pool2d_backward``), so no
``nn.AvgPool1d/2d/3d`` training graph exported (``avg_pool1d`` reaches the joint graph as
``avg_pool2d`` on a ``[N, C, 1, L]`` view). The gradient is the forward's windows read backwards:
``dx[i] = sum over the output cells o whose window holds i of dy[o] / div[o]``, with PyTorch's
windows (stride, padding, ceil_mode) and divisor (count_include_pad, divisor_override) per axis
(:func:`ort_ops.training.translations.pool_windows.avg_pool_windows`), as one MatMul per
spatial axis with a constant 0/1 matrix (:mod:`~ort_ops.training.translations.pool_windows`).
Static shapes.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ort_ops.training.translations.pool_windows import (
    avg_pool_windows,
    divisor_map,
    per_dim,
    static_shape,
    window_gradient,
)


def _avg_pool_backward(nd: int, grad_output, input, kernel_size, stride, padding, ceil_mode,
                       count_include_pad, divisor_override):
    name = f"avg_pool{nd}d_backward"
    x_shape = static_shape(input, "input", name)
    dy_shape = static_shape(grad_output, "grad_output", name)
    k = per_dim(kernel_size, nd, "kernel_size", name)
    s = per_dim(stride, nd, "stride", name, default=k)
    p = per_dim(padding, nd, "padding", name, default=[0])
    axes = [avg_pool_windows(x_shape[-nd + d], dy_shape[-nd + d], k[d], s[d], p[d], bool(count_include_pad))
            for d in range(nd)]
    divisor = divisor_map([c for _, c in axes], divisor_override)
    return window_gradient(grad_output, dy_shape, [w for w, _ in axes], divisor)


def avg_pool2d_backward(grad_output, input, kernel_size: Sequence[int], stride: Sequence[int] = (),
                        padding: Sequence[int] = (0,), ceil_mode: bool = False,
                        count_include_pad: bool = True, divisor_override: int | None = None):
    """``aten::avg_pool2d_backward`` -> grad_input as ONNX ops."""
    return _avg_pool_backward(2, grad_output, input, kernel_size, stride, padding, ceil_mode,
                              count_include_pad, divisor_override)


def avg_pool3d_backward(grad_output, input, kernel_size: Sequence[int], stride: Sequence[int] = (),
                        padding: Sequence[int] = (0,), ceil_mode: bool = False,
                        count_include_pad: bool = True, divisor_override: int | None = None):
    """``aten::avg_pool3d_backward`` -> grad_input as ONNX ops."""
    return _avg_pool_backward(3, grad_output, input, kernel_size, stride, padding, ceil_mode,
                              count_include_pad, divisor_override)


TRANSLATIONS = {
    torch.ops.aten.avg_pool2d_backward.default: avg_pool2d_backward,
    torch.ops.aten.avg_pool3d_backward.default: avg_pool3d_backward,
}
