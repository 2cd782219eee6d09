"""2-D ``MaxPool`` without the Indices output, explicit pads, no dilation -> CANN ``MaxPoolV3``."""

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule


def _check(info: NodeInfo) -> str | None:
    if len(info.node.output) > 1 and info.node.output[1]:
        return "the Indices output is used (CANN's MaxPool has no ONNX-style indices; rewrite.fuse turns " \
               "the exporter's MaxPool backward into MaxPoolGrad)"
    x = info.input_shapes[0]
    if x is not None and len(x) != 4:
        return f"{len(x) - 2}-D MaxPool: only 2-D (NCHW) is supported on CANN"
    if info.attr("auto_pad", "NOTSET") != "NOTSET":
        return f"auto_pad={info.attr('auto_pad')}: explicit pads only"
    if any(d != 1 for d in info.attr("dilations", [1, 1])):
        return f"dilations {info.attr('dilations')}: not supported on CANN"
    return None


RULES = (PlaceRule("MaxPool", check=_check),)
