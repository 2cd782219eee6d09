"""``Clip`` (opset >= 11, min and max optional inputs) -> one CANN ``ClipByValueV2`` with the bounds as
constant scalars: the kernel reads min and max on the host, so only constant ones are placed (a
computed bound would be copied to the host on every run)."""

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule


def _check(info: NodeInfo) -> str | None:
    for index, what in ((1, "min"), (2, "max")):
        if info.present(index) and info.constants[index] is None:
            return f"{what} computed at run time: only constant bounds are placed (the kernel reads them on the host)"
        if info.present(index) and info.constants[index].size != 1:
            return f"{what} of shape {list(info.constants[index].shape)} is not a scalar"
    return None


RULES = (PlaceRule("Clip", check=_check, min_opset=11),)
