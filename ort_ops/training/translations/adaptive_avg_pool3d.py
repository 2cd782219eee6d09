"""ONNX translation of the forward ``aten._adaptive_avg_pool3d`` (torch 2.13's exporter has none).

Each output cell's window sum divided by its element count, PyTorch's adaptive windows
(:func:`~ort_ops.training.translations.pool_windows.adaptive_windows`), one MatMul per spatial
axis. Static shapes. (``_adaptive_avg_pool2d`` the exporter translates itself.)
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ort_ops.training.translations.pool_windows import (
    adaptive_windows,
    divisor_map,
    per_dim,
    static_shape,
    window_sum_divided,
)


def adaptive_avg_pool3d(input, output_size: Sequence[int]):
    """``aten::_adaptive_avg_pool3d`` as ONNX ops."""
    name = "_adaptive_avg_pool3d"
    shape = static_shape(input, "input", name)
    out = per_dim(output_size, 3, "output_size", name)
    axes = [adaptive_windows(shape[-3 + d], out[d]) for d in range(3)]
    return window_sum_divided(input, shape, [w for w, _ in axes], divisor_map([c for _, c in axes], None))


TRANSLATIONS = {torch.ops.aten._adaptive_avg_pool3d.default: adaptive_avg_pool3d}
