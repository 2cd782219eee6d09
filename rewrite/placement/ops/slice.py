"""``Slice`` (opset 10+: inputs) with unit steps -> CANN ``Slice`` (offsets, size per dimension)."""

import numpy as np

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule


def _check(info: NodeInfo) -> str | None:
    if info.present(4):
        steps = info.constants[4]
        if steps is None:
            return "steps computed at run time: only unit steps are supported on CANN"
        if not np.all(steps == 1):
            return f"steps {steps.tolist()}: only unit steps are supported on CANN"
    return None


RULES = (PlaceRule("Slice", check=_check, min_opset=10),)
