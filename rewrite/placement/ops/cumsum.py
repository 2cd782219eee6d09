"""``CumSum`` (opset 11+: x, a 0-D int32/int64 axis; ``exclusive``, ``reverse``) -> one CANN ``Cumsum``
(hicann/ops-math math/cumsum) with the same attributes, the axis read on the host. float32 and the integers
match the CPU EP's sequential sum; float16 accumulates in float32 on CANN (within tolerance of the CPU EP's
float16 running sum)."""

from ort_ops.rewrite.placement.rule import PlaceRule

RULES = (PlaceRule("CumSum", min_opset=11),)
