"""``LogSoftmax`` (opset 13+: one axis) -> CANN ``LogSoftmaxV2`` (axes = [axis])."""

from ort_ops.rewrite.placement.rule import PlaceRule, fixed

RULES = (PlaceRule("LogSoftmax", fixed("LogSoftmaxV2"), min_opset=13),)
