"""``Slice`` (opset 10+: inputs) -> CANN ``Slice`` (offsets, size per dimension) with unit steps, CANN
``StridedSlice`` with any other steps (route "strided", also taken when the steps are computed at
run time: the kernel picks by their values)."""

import numpy as np

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule


def _route(info: NodeInfo) -> str:
    if not info.present(4):
        return "default"
    steps = info.constants[4]
    return "default" if steps is not None and np.all(steps == 1) else "strided"


RULES = (PlaceRule("Slice", route=_route, min_opset=10),)
