"""``ArgMax`` / ``ArgMin`` (opset 11+; ``axis``, ``keepdims``) -> CANN ``ArgMaxV2`` / ``ArgMin``
(hicann/ops-math math/arg_max_v2, math/arg_min; int64 indices, the first of equal extremes, as ONNX's
``select_last_index`` 0). Floats of rank >= 2 first pass through ``SelectV2(NotEqual(x, x), edge, x)`` so that
NaN gives the CPU EP's index there (a NaN first element wins, a later NaN never does; CANN returns the first NaN,
as the CPU EP does for a 1-D x, which launches ArgMaxV2 / ArgMin alone): route "default"; integers take the one
launch ("integer"). ``select_last_index`` 1: the first index of x reversed along the axis (``StridedSlice``)
subtracted from depth - 1 (``Sub``), floats after the same ``SelectV2`` ("last", "last_integer"; the NaN-with-
infinity cases where it differs from the CPU EP: ``placed/arg_min_max.cc``)."""

from onnx import TensorProto

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule


def _route(info: NodeInfo) -> str:
    is_float = info.input_types[0] in (TensorProto.FLOAT, TensorProto.FLOAT16)
    if info.attr("select_last_index", 0):
        return "last" if is_float else "last_integer"
    return "default" if is_float else "integer"


RULES = tuple(PlaceRule(op, route=_route, min_opset=11) for op in ("ArgMax", "ArgMin"))
