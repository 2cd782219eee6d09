"""ONNX translation of the forward ``aten.native_layer_norm``: mean and rstd in the input's dtype.

torch 2.13's exporter writes ``LayerNormalization`` and returns its ``Mean`` / ``InvStdDev``
outputs as they are. With the default ``stash_type = 1`` those are float32 whatever the input,
while PyTorch's ``native_layer_norm`` returns them in the input's dtype. The joint graph's
backward (decomposed by PyTorch into elementwise ops) then reads a float32 tensor where it
declares a float16 one: ONNX Runtime rejects every float16 / bfloat16 LayerNorm training graph
("Type parameter (T) of Optype (Div) bound to different types"). This is the same
``LayerNormalization`` (statistics in float32), with the statistics rounded once to the input's
dtype, as PyTorch's CPU kernel rounds them (for float32 inputs the casts are no-ops).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from onnxscript import opset18 as op


def native_layer_norm(input, normalized_shape: Sequence[int], weight=None, bias=None, eps: float = 1e-5):
    """``aten::native_layer_norm`` -> ``(y, mean, rstd)``, all three in ``input``'s dtype."""
    axis = -len(normalized_shape)
    if weight is None:
        weight = op.CastLike(op.Expand(op.Constant(value_floats=[1.0]), op.Shape(input, start=axis)), input)
    y, mean, rstd = op.LayerNormalization(input, weight, bias, axis=axis, epsilon=eps, stash_type=1)
    return y, op.CastLike(mean, input), op.CastLike(rstd, input)


TRANSLATIONS = {torch.ops.aten.native_layer_norm.default: native_layer_norm}
