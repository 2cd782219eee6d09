"""``LogSoftmax`` (opset 13+: one axis) -> CANN ``LogSoftmaxV2`` (axes = [axis])."""

from ort_ops.rewrite.placement.rule import PlaceRule

RULES = (PlaceRule("LogSoftmax", min_opset=13),)
