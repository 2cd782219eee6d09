"""``Transpose`` -> CANN ``Transpose`` (perm as a constant input)."""

from rewrite.placement.rule import PlaceRule, fixed

RULES = (PlaceRule("Transpose", fixed("Transpose")),)
