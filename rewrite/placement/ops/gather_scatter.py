"""``GatherElements`` / ``ScatterElements`` (reduction none/add/mul) -> CANN's ops of the same
names. CANN follows torch.gather: indices in [0, size); constant negative indices are refused."""

import numpy as np

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule


def _indices_ok(info: NodeInfo) -> str | None:
    idx = info.constants[1] if len(info.constants) > 1 else None
    if idx is not None and idx.size and int(np.min(idx)) < 0:
        return "negative indices (CANN's GatherElements/ScatterElements take indices in [0, size))"
    return None


def _scatter_check(info: NodeInfo) -> str | None:
    reduction = info.attr("reduction", "none")
    if reduction not in ("none", "add", "mul"):
        return f"reduction {reduction!r}: CANN ScatterElements has none, add and mul"
    return _indices_ok(info)


RULES = (
    PlaceRule("GatherElements", check=_indices_ok),
    PlaceRule("ScatterElements", check=_scatter_check, min_opset=11),
)
