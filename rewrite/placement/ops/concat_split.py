"""``Concat`` (opset 4+) -> CANN ``ConcatV2`` of the non-empty inputs (concat_dim constant) and
``Split`` (opset 11+: split as an attribute before 13, an input from 13, num_outputs from 18) ->
CANN ``SplitV`` into the non-empty pieces; one non-empty tensor is a device copy. The split sizes
are read on the host."""

from ort_ops.rewrite.placement.rule import PlaceRule

RULES = (PlaceRule("Concat", min_opset=4), PlaceRule("Split", min_opset=11))
