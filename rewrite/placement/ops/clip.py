"""``Clip`` (opset >= 11, min and max optional inputs) -> one CANN ``ClipByValueV2`` with the bounds as
constant scalars: the kernel reads min and max on the host (ORT keeps them in CPU memory: a constant or
a graph input costs no copy; a bound computed on the device is copied to the host each run)."""

import math

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule


def _check(info: NodeInfo) -> str | None:
    for index, what in ((1, "min"), (2, "max")):
        value = info.constants[index] if info.present(index) else None
        shape = info.input_shapes[index] if info.present(index) else None
        if value is not None and value.size != 1:
            return f"{what} of shape {list(value.shape)} is not a scalar"
        if value is None and shape is not None and all(isinstance(d, int) for d in shape) and \
                math.prod(shape) != 1:
            return f"{what} of shape {list(shape)} is not a scalar"
    return None


RULES = (PlaceRule("Clip", check=_check, min_opset=11),)
