"""Broadcasting binary ops: ``Add``/``Sub``/``Mul``/``Div`` (CANN ``Add``/``Sub``/``Mul``; ``Div``:
``RealDiv`` for floats, ``TruncateDiv`` for integers, as ONNX's integer Div truncates; they broadcast
themselves: no ``BroadcastToD``), comparisons, ``And``/``Or``, ``Where`` (``SelectV2``), ``Min``/``Max``
(variadic: CANN ``Minimum``/``Maximum`` folded over the inputs), ``Pow`` (CANN ``Pow``: base and
exponent of one float type; a float16/float32/double base to an int32/int64 power; int32/int64 to an
int32/int64 power whose promotion is the base's type: the kernel table has no other pair).

Arithmetic on inputs of one static shape is left to the CANN EP's own kernels (they run it without
broadcasting). Any other arithmetic must not reach them: their scratch buffers for broadcast inputs are
freed before the launch, and with both inputs broadcast the op computes ``B op B``
(:mod:`ort_ops.rewrite.placement.ep_defects`; docs/cann_ops.md, "Upstream defects")."""

from onnx import TensorProto

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule

_FLOATS = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.DOUBLE}


def _one_static_shape(info: NodeInfo) -> bool:
    a, b = info.input_shapes[:2]
    return a is not None and a == b and None not in a


def _same_shape(info: NodeInfo) -> str | None:
    if _one_static_shape(info):
        return "inputs of one shape: the CANN EP's own kernel runs it without broadcasting"
    return None


def _div_route(info: NodeInfo) -> str:
    return "float" if info.input_types[0] in _FLOATS else "integer"


def _pow_check(info: NodeInfo) -> str | None:
    base, exponent = info.input_types[:2]
    if base in (TensorProto.INT32, TensorProto.INT64) and exponent in _FLOATS:
        return ("an integer base to a float power: CANN Pow's output is then a float (its prototype's Promote), "
                "which rounds results beyond 2^24 before ONNX's conversion to the base's type")
    return None


# the CANN op of each: ort_ops/cann_soc_table.json "placed"
_ARITHMETIC = {"Add": None, "Sub": None, "Mul": None, "Div": _div_route}
_COMPARE = ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or")

# Opsets 1-6 broadcast by attributes (broadcast, axis), not like NumPy: opset 7+ only.
_NUMPY_BROADCAST = 7

# Min / Max: variadic, broadcasting from opset 8 (CANN Minimum / Maximum folded over the inputs)
_MIN_MAX_BROADCAST = 8

RULES = (
    tuple(PlaceRule(op, min_opset=_MIN_MAX_BROADCAST) for op in ("Min", "Max"))
    + tuple(PlaceRule(op, route=route, leave_to_ep=_same_shape, min_opset=_NUMPY_BROADCAST)
          for op, route in _ARITHMETIC.items())
    + tuple(PlaceRule(op, min_opset=_NUMPY_BROADCAST) for op in _COMPARE)
    + (PlaceRule("Where"), PlaceRule("Pow", check=_pow_check, min_opset=_NUMPY_BROADCAST))
)
