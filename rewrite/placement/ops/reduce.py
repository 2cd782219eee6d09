"""``ReduceSum`` (opset 13+: axes as an input) and ``ReduceMean``, ``ReduceMax``, ``ReduceMin`` (axes
as an attribute before opset 18, as an input from 18) -> the CANN op of the same name with constant
axes."""

from ort_ops.rewrite.placement.rule import PlaceRule

RULES = tuple(PlaceRule(op, min_opset=13) for op in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"))
