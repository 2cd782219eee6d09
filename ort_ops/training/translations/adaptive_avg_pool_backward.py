"""ONNX translation of ``aten._adaptive_avg_pool2d_backward`` / ``_adaptive_avg_pool3d_backward``.

torch 2.13's exporter has none, so ``nn.AdaptiveAvgPool1d/2d/3d`` training graphs did not
export unless the output is 1 (which PyTorch writes as a ``mean``). ``adaptive_avg_pool1d``
reaches the joint graph as ``_adaptive_avg_pool2d`` on a ``[N, C, 1, L]`` view. Output cell
``o`` of an axis of size ``I`` pooled to ``O`` reads ``[floor(o I / O), ceil((o + 1) I / O))``;
for sizes that do not divide, neighbouring windows overlap and an input position in both gets
both cells' shares: ``dx[i] = sum over the cells o whose window holds i of dy[o] / div[o]``
with ``div[o]`` the window's element count. One MatMul per spatial axis with a constant 0/1
matrix (:mod:`~ort_ops.training.translations.pool_windows`). Static shapes.
"""

from __future__ import annotations

import torch

from ort_ops.training.translations.pool_windows import adaptive_windows, divisor_map, static_shape, window_gradient


def _adaptive_backward(nd: int, grad_output, input):
    name = f"_adaptive_avg_pool{nd}d_backward"
    x_shape = static_shape(input, "input", name)
    dy_shape = static_shape(grad_output, "grad_output", name)
    axes = [adaptive_windows(x_shape[-nd + d], dy_shape[-nd + d]) for d in range(nd)]
    return window_gradient(grad_output, dy_shape, [w for w, _ in axes], divisor_map([c for _, c in axes], None))


def adaptive_avg_pool2d_backward(grad_output, input):
    """``aten::_adaptive_avg_pool2d_backward`` -> grad_input as ONNX ops."""
    return _adaptive_backward(2, grad_output, input)


def adaptive_avg_pool3d_backward(grad_output, input):
    """``aten::_adaptive_avg_pool3d_backward`` -> grad_input as ONNX ops."""
    return _adaptive_backward(3, grad_output, input)


TRANSLATIONS = {
    torch.ops.aten._adaptive_avg_pool2d_backward.default: adaptive_avg_pool2d_backward,
    torch.ops.aten._adaptive_avg_pool3d_backward.default: adaptive_avg_pool3d_backward,
}
