"""``ArgMax`` / ``ArgMin`` (opset 11+; ``axis``, ``keepdims``) -> CANN ``ArgMaxV2`` / ``ArgMin``
(hicann/ops-math math/arg_max_v2, math/arg_min; int64 indices, the first of equal extremes, as ONNX's
``select_last_index`` 0). Floats of rank >= 2 first pass through ``SelectV2(NotEqual(x, x), edge, x)`` so that
NaN gives the CPU EP's index there (a NaN first element wins, a later NaN never does; CANN returns the first NaN,
as the CPU EP does for a 1-D x, which launches ArgMaxV2 / ArgMin alone): route "default"; integers take the one
launch ("integer"). ``select_last_index`` 1 stays on the CPU."""

from onnx import TensorProto

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule


def _first_index_only(info: NodeInfo) -> str | None:
    if info.attr("select_last_index", 0):
        return "select_last_index=1: CANN ArgMaxV2 / ArgMin return the first of equal extremes (their op_graph protos)"
    return None


def _route(info: NodeInfo) -> str:
    return "default" if info.input_types[0] in (TensorProto.FLOAT, TensorProto.FLOAT16) else "integer"


RULES = tuple(PlaceRule(op, check=_first_index_only, route=_route, min_opset=11) for op in ("ArgMax", "ArgMin"))
