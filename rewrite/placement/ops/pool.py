"""Pooling: ``MaxPool`` without the Indices output -> CANN ``MaxPoolV3`` (1-D and 2-D; uint8 / int8 as float16
between two CANN ``Cast``, route "integer") or, 3-D or dilated, CANN ``MaxPool3D`` (route "3d"; 1-D
and 2-D as (N, C, 1, 1, L) / (N, C, 1, H, W)); with the Indices output, CANN
``MaxPool3DWithArgmaxV2`` and the plane indices made ONNX's (route "indices": ``Cast``, ``Add`` of
the planes' offsets; storage_order 1, "indices_column_major": ``GatherElementsV2`` of a table, ``Cast``);
``AveragePool`` (opset 7+) -> CANN ``AvgPoolV2`` (1-D and 2-D; exclusive = not count_include_pad),
within AvgPoolV2's window limits, or CANN ``AvgPool3D`` (3-D, route "3d"); with dilations (route
"dilated"), CANN ``Conv3DV2`` of a ones filter (the window sums) and ``RealDiv`` by each window's
divisor, within Conv3DV2's limits on H and W. A
1-D pool over (N, C, L) runs as the 2-D one over (N, C, 1, L); auto_pad's SAME_* / VALID pads are
computed by the kernel from X's shape."""

from onnx import TensorProto

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule

_INTEGERS = (TensorProto.UINT8, TensorProto.INT8)
_FLOATS = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16)


def _spatial(info: NodeInfo) -> int:
    return len(info.attr("kernel_shape", []))


def _dilated(info: NodeInfo) -> bool:
    return any(d != 1 for d in info.attr("dilations", []) or [])


def _window(info: NodeInfo, max_rank: int) -> str | None:
    x = info.input_shapes[0]
    rank = len(x) - 2 if x is not None else _spatial(info)
    if not 1 <= rank <= max_rank:
        supported = "1-D (N, C, L) and 2-D (NCHW)" + (" and 3-D (NCDHW)" if max_rank == 3 else "")
        return f"{rank}-D {info.node.op_type}: only {supported} are supported on CANN"
    auto_pad = info.attr("auto_pad", "NOTSET")
    if auto_pad not in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"):
        return f"auto_pad={auto_pad}: not an ONNX auto_pad"
    if auto_pad != "NOTSET" and info.attr("ceil_mode", 0):
        return f"auto_pad={auto_pad} with ceil_mode=1: ONNX's SAME/VALID output sizes ignore ceil_mode"
    if auto_pad.startswith("SAME") and _dilated(info):
        return f"auto_pad={auto_pad} with dilations {list(info.attr('dilations'))}: the pads are not defined for " \
               "dilated kernels (ONNX's formula ignores dilation)"
    return None


def _with_indices(info: NodeInfo) -> bool:
    return len(info.node.output) > 1 and bool(info.node.output[1])


def _indices_check(info: NodeInfo) -> str | None:
    """The Indices output: CANN MaxPool3DWithArgmaxV2 (float types, no dilation, pads equal at both
    ends and at most half the kernel), then ONNX's indices (column-major: 1-D and 2-D only)."""
    if info.input_types and info.input_types[0] not in _FLOATS:
        return "the Indices output of an integer MaxPool (CANN's argmax pool takes float types)"
    if _dilated(info):
        return "the Indices output of a dilated MaxPool (CANN MaxPool3DWithArgmaxV2: dilation 1 on Atlas A2/A3)"
    if info.attr("auto_pad", "NOTSET").startswith("SAME"):
        return "the Indices output with auto_pad SAME_*: its pads may differ at the two ends, which CANN's " \
               "argmax pool does not take"
    kernel = info.attr("kernel_shape", [])
    pads = info.attr("pads", []) or [0] * (2 * len(kernel))
    n = len(kernel)
    if any(pads[i] != pads[n + i] or pads[i] > kernel[i] // 2 for i in range(n)):
        return f"the Indices output with pads {list(pads)}: CANN MaxPool3DWithArgmaxV2 takes pads equal at both " \
               "ends and at most half the kernel"
    if info.attr("storage_order", 0) == 1 and n == 3:
        return "column-major (storage_order 1) Indices of a 3-D MaxPool"
    return _window(info, max_rank=3)


def _max_pool(info: NodeInfo) -> str | None:
    if _with_indices(info):
        return _indices_check(info)
    if info.input_types and info.input_types[0] in _INTEGERS and (_spatial(info) == 3 or _dilated(info)):
        return "3-D or dilated MaxPool of uint8 / int8: only 1-D and 2-D (as float16 on MaxPoolV3) are placed"
    return _window(info, max_rank=3)


def _max_pool_route(info: NodeInfo) -> str:
    if _with_indices(info):
        return "indices_column_major" if info.attr("storage_order", 0) == 1 and _spatial(info) > 1 else "indices"
    if info.input_types and info.input_types[0] in _INTEGERS:
        return "integer"  # Cast to float16, MaxPoolV3, Cast back
    return "3d" if _spatial(info) == 3 or _dilated(info) else "default"


def _dilated_average_pool(info: NodeInfo) -> str | None:
    """Conv3DV2's Atlas A2/A3 limits on H and W (hicann/ops-nn conv/conv3d_v2/README.md): strides <= 63,
    dilations <= 255, filter <= 511, pads <= 255 (the kernel checks the pads ceil_mode adds)."""
    kernel, n = info.attr("kernel_shape", []), len(info.attr("kernel_shape", []))
    strides = info.attr("strides", []) or [1] * n
    dilations = info.attr("dilations", []) or [1] * n
    pads = info.attr("pads", []) or [0] * (2 * n)
    hw = slice(max(n - 2, 0), n)  # the axes that are H and W of the 3-D view
    if (any(s > 63 for s in strides[hw]) or any(d > 255 for d in dilations[hw]) or any(k > 511 for k in kernel[hw])
            or any(p > 255 for p in pads[hw] + pads[n + hw.start:])):
        return f"kernel_shape {list(kernel)}, strides {list(strides)}, dilations {list(dilations)}, pads " \
               f"{list(pads)}: beyond CANN Conv3DV2's limits on H and W (strides <= 63, dilations <= 255, " \
               "kernel <= 511, pads <= 255)"
    return _window(info, max_rank=3)


def _average_pool(info: NodeInfo) -> str | None:
    if _dilated(info):
        return _dilated_average_pool(info)
    kernel, strides = info.attr("kernel_shape", []), info.attr("strides", [1, 1])
    k2 = [1, *kernel] if len(kernel) == 1 else kernel  # the 2-D window a 1-D pool runs as
    s2 = [1, *strides] if len(strides) == 1 else strides
    if len(k2) == 2 and (not all(1 <= k <= 255 for k in k2) or k2[0] * k2[1] >= 256
                         or not all(1 <= s <= 63 for s in s2)):
        return f"kernel_shape {list(kernel)} / strides {list(strides)}: beyond CANN AvgPoolV2's limits " \
               "(kernel dims in [1, 255], area < 256, strides in [1, 63])"
    return _window(info, max_rank=3)


def _average_pool_route(info: NodeInfo) -> str:
    if _dilated(info):
        return "dilated"
    return "3d" if _spatial(info) == 3 else "default"


RULES = (PlaceRule("MaxPool", check=_max_pool, route=_max_pool_route),
         PlaceRule("AveragePool", check=_average_pool, route=_average_pool_route, min_opset=7))
