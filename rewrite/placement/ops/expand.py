"""``Expand`` (opset 8+) -> CANN ``Expand`` with the broadcast output shape as a constant input (a
device copy when nothing broadcasts). The shape input is read on the host."""

from ort_ops.rewrite.placement.rule import PlaceRule

RULES = (PlaceRule("Expand", min_opset=8),)
