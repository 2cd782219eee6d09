"""ONNX translation of ``aten.empty_permuted`` (an uninitialised tensor of a given size and dtype).

torch 2.13's exporter has none, and the joint graph of ``nn.SiLU`` and ``torch.sigmoid`` meets it:
the backward's decomposition spells ``1 - sigmoid(x)`` as ``full_like(empty_permuted(size, layout), 1)
- sigmoid(x)``, so only its shape and dtype are read. Its values are unspecified; zeros are
as good as any, and the physical layout (a memory order) has no meaning in ONNX. Static sizes.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from onnxscript import opset18 as op

_FLOAT = 1  # ONNX TensorProto.FLOAT: torch's default dtype when none is given


def empty_permuted(size: Sequence[int], physical_layout: Sequence[int], dtype: int = -1, layout=None, device=None,
                   pin_memory=None):
    """``aten::empty_permuted(size, physical_layout, *, dtype)`` -> zeros of ``size`` and ``dtype``."""
    if any(not isinstance(d, int) for d in size):
        raise ValueError(f"aten.empty_permuted: size {list(size)} is not static (export with static shapes)")
    to = _FLOAT if dtype is None or dtype == -1 else int(dtype)
    zero = op.Cast(op.Constant(value_float=0.0), to=to)
    return op.Expand(zero, op.Constant(value_ints=[int(d) for d in size]))


TRANSLATIONS = {torch.ops.aten.empty_permuted.default: empty_permuted}
