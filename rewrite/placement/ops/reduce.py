"""``ReduceSum`` (opset 13+: axes as an input) -> CANN ``ReduceSum`` with constant axes."""

from ort_ops.rewrite.placement.rule import PlaceRule

RULES = (PlaceRule("ReduceSum", min_opset=13),)
