"""PyTorch's dropout with given masks: for exporting mask inputs and for replaying masks in eager.

:class:`DropoutMasks` is a ``TorchFunctionMode`` that intercepts ``torch.nn.functional.dropout``
(which ``nn.Dropout`` and the transformer layers call) and ``F.scaled_dot_product_attention``
with ``dropout_p > 0`` (attention dropout: the mask applies to the attention weights, of shape
``[..., heads, queries, keys]``): in train mode with ``p > 0`` it returns
``x * (mask * (1 / (1 - p)))`` -- ``native_dropout``'s formula and rounding (the scaled mask
in x's dtype, 0 for ``p = 1``; its backward is ``dy`` times the same scaled mask), given the
mask -- with the masks consumed in call order; ``p = 0`` and eval mode return ``x``
unchanged, as PyTorch does. With ``masks=None`` it records the calls instead (and lets PyTorch
draw). See :mod:`ort_ops.training.dropout_masks` for the design.

    masks = trainer.dropout_masks_for_step(1)        # what the Trainer feeds at step 1
    with DropoutMasks(masks):                         # PyTorch computes that step
        loss = loss_fn(model(x), y)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

_DEFAULTS = {"p": 0.5, "training": True, "inplace": False}
_SDPA_ARGUMENTS = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")


def _arguments(args, kwargs) -> tuple[torch.Tensor, float, bool]:
    names = ("input", "p", "training", "inplace")
    bound = {**_DEFAULTS, **dict(zip(names, args)), **kwargs}
    return bound["input"], float(bound["p"]), bool(bound["training"])


def masked(x: torch.Tensor, mask: torch.Tensor, p: float) -> torch.Tensor:
    """``x * (mask * (1 / (1 - p)))`` with the scaled mask in ``x``'s dtype: ``native_dropout``'s
    result bit for bit (a float16 scale is rounded to float16 first, as PyTorch's is; 0 for ``p = 1``)."""
    scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
    return x * (mask.to(x.dtype) * scale)


class DropoutMasks(TorchFunctionMode):
    """Replay ``masks`` (bool tensors or arrays, in dropout-call order; a dict in its order) at
    every train-mode ``F.dropout`` with ``p > 0``; ``masks=None``: record ``(p, shape, dtype)`` of
    those calls in :attr:`recorded` and run them as PyTorch does.

    ``ValueError`` at a call beyond the masks or whose mask has another shape, and on leaving the
    block with masks left over."""

    def __init__(self, masks: Sequence | Mapping | None = None):
        super().__init__()
        if isinstance(masks, Mapping):
            masks = list(masks.values())
        self.masks = None if masks is None else [torch.as_tensor(np.asarray(m)) if not isinstance(m, torch.Tensor)
                                                  else m for m in masks]
        self.used = 0
        self.recorded: list[tuple[float, tuple[int, ...], torch.dtype]] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.scaled_dot_product_attention:
            return self._attention(func, args, kwargs)
        if func is not F.dropout:
            return func(*args, **kwargs)
        x, p, training = _arguments(args, kwargs)
        if not training or p == 0.0:
            return x
        if self.masks is None:
            self.recorded.append((p, tuple(x.shape), x.dtype))
            return func(*args, **kwargs)
        return masked(x, self._next_mask(p, tuple(x.shape)), p)

    def _next_mask(self, p: float, shape: tuple[int, ...]) -> torch.Tensor:
        if self.used >= len(self.masks):
            raise ValueError(f"dropout call {self.used} (p={p}, shape {list(shape)}) has no mask: "
                             f"{len(self.masks)} given")
        mask = self.masks[self.used]
        if tuple(mask.shape) != shape:
            raise ValueError(f"dropout call {self.used}: mask has shape {list(mask.shape)}, the input {list(shape)}")
        self.used += 1
        return mask

    def _attention(self, func, args, kwargs):
        """SDPA with ``dropout_p > 0`` (attention dropout): recorded with the attention weights'
        shape, or computed as its math (:mod:`ort_ops.training.attention`) with the next mask
        applied to the softmax weights, as PyTorch's math kernel applies its dropout."""
        from ort_ops.training import attention

        bound = dict(zip(_SDPA_ARGUMENTS, args), **kwargs)
        p = float(bound.get("dropout_p", 0.0))
        if p == 0.0:
            return func(*args, **kwargs)
        query, key = bound["query"], bound["key"]
        shape = tuple(torch.broadcast_shapes(query.shape[:-3], key.shape[:-3])) + (
            query.shape[-3], query.shape[-2], key.shape[-2])
        if self.masks is None:
            self.recorded.append((p, shape, query.dtype))
            return func(*args, **kwargs)
        mask = self._next_mask(p, shape)
        bound["dropout_p"] = 0.0
        return attention.scaled_dot_product_attention_math(**bound, weights_dropout=lambda w: masked(w, mask, p))

    def __exit__(self, exc_type, exc, tb):
        result = super().__exit__(exc_type, exc, tb)
        if exc_type is None and self.masks is not None and self.used != len(self.masks):
            raise ValueError(f"{len(self.masks)} dropout masks given, {self.used} used: the forward "
                             "makes fewer dropout calls than the graph was exported with")
        return result
