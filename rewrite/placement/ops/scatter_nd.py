"""``ScatterND`` with reduction ``add`` (opset >= 16: the embedding backward torch exports) -> one CANN
``ScatterNonAliasingAdd`` (repeated indices accumulate in index order). CANN takes indices in
[0, size): constant negative ones are refused; computed ones outside that range fail the node by name
at run time (a device fault, which the kernel waits for)."""

import numpy as np

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule


def _check(info: NodeInfo) -> str | None:
    reduction = info.attr("reduction", "none")
    if reduction != "add":
        return f"reduction {reduction!r}: only 'add' is placed (CANN ScatterNonAliasingAdd)"
    indices = info.constants[1] if len(info.constants) > 1 else None
    if indices is not None and indices.size and int(np.min(indices)) < 0:
        return "negative indices (CANN ScatterNonAliasingAdd takes indices in [0, size))"
    shape = info.input_shapes[1]
    if shape is not None and (len(shape) == 0 or shape[-1] == 0):
        return f"indices of shape {list(shape)}: CANN needs a last dim of at least 1"
    return None


RULES = (PlaceRule("ScatterND", check=_check, min_opset=16),)
