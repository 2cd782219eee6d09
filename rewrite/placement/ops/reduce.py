"""``ReduceSum`` (opset 13+: axes as an input) and ``ReduceMean``, ``ReduceMax``, ``ReduceMin`` (axes
as an attribute before opset 18, as an input from 18) -> the CANN op of the same name with constant
axes; bool ``ReduceMax`` / ``ReduceMin`` -> CANN ``ReduceAny`` / ``ReduceAll`` (route "bool"). Over
an empty axis the max / min is ONNX's extreme (CANN ``Fill``, route "empty", taken at run time).
``ReduceProd`` -> CANN ``ReduceProd`` (over an empty axis 1, ``Fill``); ``ReduceSumSquare`` -> CANN ``Mul``
of the data by itself and ``ReduceSum``; ``ReduceL2`` -> those and ``Sqrt``."""

from onnx import TensorProto

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule


def _extreme_route(info: NodeInfo) -> str:
    return "bool" if info.input_types and info.input_types[0] == TensorProto.BOOL else "default"


RULES = (PlaceRule("ReduceSum", min_opset=13), PlaceRule("ReduceMean", min_opset=13),
         PlaceRule("ReduceProd", min_opset=13), PlaceRule("ReduceSumSquare", min_opset=13),
         PlaceRule("ReduceL2", min_opset=13),
         PlaceRule("ReduceMax", min_opset=13, route=_extreme_route),
         PlaceRule("ReduceMin", min_opset=13, route=_extreme_route))
