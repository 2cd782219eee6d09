"""``CumSum`` (opset 11+: x, a 0-D int32/int64 axis; ``exclusive``, ``reverse``) -> one CANN ``Cumsum``
(hicann/ops-math math/cumsum) with the same attributes, the axis read on the host. Sequential sums as the
CPU EP's, float16 accumulated in float32 and rounded once per output on both (CANN's PromoteType; the CPU EP,
measured)."""

from ort_ops.rewrite.placement.rule import PlaceRule

RULES = (PlaceRule("CumSum", min_opset=11),)
