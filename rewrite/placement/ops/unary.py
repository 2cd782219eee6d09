"""Unary ops: ``Elu``, ``Exp``, ``Log``, ``Neg``, ``Abs``, ``Sqrt``, ``Reciprocal``, ``Relu``,
``Sigmoid``, ``Tanh``, ``LeakyRelu``, ``Not`` -> the CANN op of the same meaning (``Not`` -> ``LogicalNot``;
LeakyRelu's ``alpha`` as CANN's ``negative_slope``); ``Sign`` -> CANN ``Sign``, for float32 inside
``SelectV2(Equal(x, x), Sign(x), x)`` (CANN's Sign of NaN is 0, ONNX Runtime's float32 Sign NaN; its
float16 / bfloat16 Sign gives 0 as CANN's does);
``Gelu`` (opset 20; ``approximate`` "none" or "tanh") -> ``GeluV2`` with the same ``approximate``;
``IsNaN`` -> CANN ``IsNan`` (Ascend 950, Atlas A2/A3), else ``NotEqual(x, x)`` (Atlas training / inference
series): one launch, exact (float32, float16, bfloat16; double stays on the CPU: neither takes it)."""

from onnx import TensorProto

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule

_SAME = ("Elu", "Exp", "Log", "Neg", "Abs", "Sqrt", "Reciprocal", "Relu", "Sigmoid", "Tanh", "LeakyRelu")
def _sign_route(info: NodeInfo) -> str:
    return "default" if info.input_types[0] == TensorProto.FLOAT else "plain"


def _is_nan_routes(info: NodeInfo) -> tuple[str, ...]:
    return ("default", "not_equal")  # IsNan where the SoC has it (math/is_nan/README.md), else NotEqual(x, x)


def _gelu_form(info: NodeInfo) -> str | None:
    approximate = info.attr("approximate", "none")
    return None if approximate in ("none", "tanh") else f"approximate={approximate!r} (ONNX has 'none' and 'tanh')"


RULES = tuple(PlaceRule(op) for op in _SAME) + (
    PlaceRule("Not"),  # LogicalNot
    PlaceRule("Sign", route=_sign_route),
    PlaceRule("Gelu", check=_gelu_form, min_opset=20),
    PlaceRule("IsNaN", route=_is_nan_routes),
)
