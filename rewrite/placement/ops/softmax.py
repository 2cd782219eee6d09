"""``Softmax`` and ``LogSoftmax`` (opset 13+: one axis) -> CANN ``SoftmaxV2`` / ``LogSoftmaxV2``
(axes = [axis]). Before opset 13 both normalise over the flattened trailing dims: not placed."""

from ort_ops.rewrite.placement.rule import PlaceRule

RULES = (PlaceRule("Softmax", min_opset=13), PlaceRule("LogSoftmax", min_opset=13))
