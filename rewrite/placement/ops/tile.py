"""``Tile`` (opset 6+: repeats an input) -> CANN ``Tile`` with the repeats as its constant multiples
(a device copy when every repeat is 1). The repeats input is read on the host."""

from ort_ops.rewrite.placement.rule import PlaceRule

RULES = (PlaceRule("Tile", min_opset=6),)
