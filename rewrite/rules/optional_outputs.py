"""The output list of a fused backward node whose trailing outputs are optional (LayerNormGrad,
BatchNormGrad: dx, then dscale and dbias where the graph reads them)."""

from __future__ import annotations

import onnx_graphsurgeon as gs


def with_optional_outputs(name: str, first, optional: dict) -> list:
    """``[first, *optional values]`` in order, trailing absent ones (None) dropped; an absent one
    before a present one gets a variable nobody reads (``<name>/unused_<role>``)."""
    roles = list(optional)
    while roles and optional[roles[-1]] is None:
        roles.pop()
    return [first] + [optional[r] if optional[r] is not None else gs.Variable(f"{name}/unused_{r}", dtype=None)
                      for r in roles]
