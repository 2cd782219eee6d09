"""``Pad`` (opset 11+: pads as an input) -> CANN ``PadV3`` (modes constant, edge, reflect; a device copy
when every pad is 0). The pads (and axes, opset 18+) are read on the host; mode wrap (opset 19),
PadV3's circular mode, is Ascend 950's build only and stays off CANN."""

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule


def _check(info: NodeInfo) -> str | None:
    mode = info.attr("mode", "constant")
    if mode not in ("constant", "edge", "reflect"):
        return f"mode {mode!r}: CANN PadV3 has constant, edge and reflect on Atlas A2/A3 (its circular mode, " \
               "ONNX's wrap, is Ascend 950 only)"
    return None


RULES = (PlaceRule("Pad", check=_check, min_opset=11),)
