"""Unary ops: ``Elu``, ``Exp``, ``Log``, ``Neg``, ``Abs``, ``Sqrt``, ``Reciprocal``, ``Relu``,
``Sigmoid``, ``Tanh``, ``LeakyRelu``, ``Not`` -> the CANN op of the same meaning (``Not`` -> ``LogicalNot``;
LeakyRelu's ``alpha`` as CANN's ``negative_slope``); ``Sign`` -> CANN ``Sign``, for float32 inside
``SelectV2(Equal(x, x), Sign(x), x)`` (CANN's Sign of NaN is 0, ONNX Runtime's float32 Sign NaN; its
float16 / bfloat16 Sign gives 0 as CANN's does);
``Gelu`` (opset 20; ``approximate`` "none" or "tanh") -> ``GeluV2`` with the same ``approximate``."""

from onnx import TensorProto

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule

_SAME = ("Elu", "Exp", "Log", "Neg", "Abs", "Sqrt", "Reciprocal", "Relu", "Sigmoid", "Tanh", "LeakyRelu")
def _sign_route(info: NodeInfo) -> str:
    return "default" if info.input_types[0] == TensorProto.FLOAT else "plain"


def _gelu_form(info: NodeInfo) -> str | None:
    approximate = info.attr("approximate", "none")
    return None if approximate in ("none", "tanh") else f"approximate={approximate!r} (ONNX has 'none' and 'tanh')"


RULES = tuple(PlaceRule(op) for op in _SAME) + (
    PlaceRule("Not"),  # LogicalNot
    PlaceRule("Sign", route=_sign_route),
    PlaceRule("Gelu", check=_gelu_form, min_opset=20),
)
