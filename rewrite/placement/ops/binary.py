"""Broadcasting binary ops: ``Add``/``Sub``/``Mul``/``Div`` (CANN ``Add``/``Sub``/``Mul``/``RealDiv``
broadcast themselves: no ``BroadcastToD``), comparisons, ``And``/``Or``, ``Where`` (``SelectV2``).

Arithmetic on inputs of one shape is left to the CANN EP's own kernels (they run it without
broadcasting)."""

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule, fixed


def _same_shape(info: NodeInfo) -> str | None:
    a, b = info.input_shapes[:2]
    if a is not None and a == b and None not in a:
        return "inputs of one shape: the CANN EP's own kernel runs it without broadcasting"
    return None


_ARITHMETIC = {"Add": "Add", "Sub": "Sub", "Mul": "Mul", "Div": "RealDiv"}
_COMPARE = {"Equal": "Equal", "Less": "Less", "LessOrEqual": "LessEqual", "Greater": "Greater",
            "GreaterOrEqual": "GreaterEqual", "And": "LogicalAnd", "Or": "LogicalOr"}

RULES = (
    tuple(PlaceRule(op, fixed(acl), leave_to_ep=_same_shape) for op, acl in _ARITHMETIC.items())
    + tuple(PlaceRule(op, fixed(acl)) for op, acl in _COMPARE.items())
    + (PlaceRule("Where", fixed("SelectV2")),)
)
