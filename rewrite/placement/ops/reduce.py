"""``ReduceSum`` (opset 13+: axes as an input) and ``ReduceMean`` (axes as an attribute before
opset 18, as an input from 18) -> the CANN op of the same name with constant axes."""

from ort_ops.rewrite.placement.rule import PlaceRule

RULES = (PlaceRule("ReduceSum", min_opset=13), PlaceRule("ReduceMean", min_opset=13))
