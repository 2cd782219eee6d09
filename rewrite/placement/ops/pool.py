"""2-D pooling, explicit pads, no dilation: ``MaxPool`` without the Indices output -> CANN
``MaxPoolV3``; ``AveragePool`` (opset 7+) -> CANN ``AvgPoolV2`` (exclusive = not
count_include_pad), within AvgPoolV2's window limits."""

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule


def _window(info: NodeInfo) -> str | None:
    x = info.input_shapes[0]
    if x is not None and len(x) != 4:
        return f"{len(x) - 2}-D {info.node.op_type}: only 2-D (NCHW) is supported on CANN"
    if info.attr("auto_pad", "NOTSET") != "NOTSET":
        return f"auto_pad={info.attr('auto_pad')}: explicit pads only"
    if any(d != 1 for d in info.attr("dilations", [1, 1])):
        return f"dilations {info.attr('dilations')}: not supported on CANN"
    return None


def _max_pool(info: NodeInfo) -> str | None:
    if len(info.node.output) > 1 and info.node.output[1]:
        return "the Indices output is used (CANN's MaxPool has no ONNX-style indices; rewrite.fuse turns " \
               "the exporter's MaxPool backward into MaxPoolGrad)"
    return _window(info)


def _average_pool(info: NodeInfo) -> str | None:
    kernel, strides = info.attr("kernel_shape", []), info.attr("strides", [1, 1])
    if len(kernel) == 2 and (not all(1 <= k <= 255 for k in kernel) or kernel[0] * kernel[1] >= 256
                             or not all(1 <= s <= 63 for s in strides)):
        return f"kernel_shape {list(kernel)} / strides {list(strides)}: beyond CANN AvgPoolV2's limits " \
               "(kernel dims in [1, 255], area < 256, strides in [1, 63])"
    return _window(info)


RULES = (PlaceRule("MaxPool", check=_max_pool), PlaceRule("AveragePool", check=_average_pool, min_opset=7))
