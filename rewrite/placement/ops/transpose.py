"""``Transpose`` -> CANN ``Transpose`` (perm as a constant input)."""

from ort_ops.rewrite.placement.rule import PlaceRule

RULES = (PlaceRule("Transpose"),)
