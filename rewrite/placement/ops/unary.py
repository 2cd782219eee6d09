"""Unary ops: ``Elu``, ``Exp``, ``Log``, ``Neg``, ``Abs``, ``Sqrt``, ``Reciprocal``, ``Relu``,
``Sigmoid``, ``Tanh``, ``Not`` -> the CANN op of the same meaning (``Not`` -> ``LogicalNot``);
``Gelu`` (opset 20; ``approximate`` "none" or "tanh") -> ``GeluV2`` with the same ``approximate``."""

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule

_SAME = ("Elu", "Exp", "Log", "Neg", "Abs", "Sqrt", "Reciprocal", "Relu", "Sigmoid", "Tanh")


def _gelu_form(info: NodeInfo) -> str | None:
    approximate = info.attr("approximate", "none")
    return None if approximate in ("none", "tanh") else f"approximate={approximate!r} (ONNX has 'none' and 'tanh')"


RULES = tuple(PlaceRule(op) for op in _SAME) + (
    PlaceRule("Not"),  # LogicalNot
    PlaceRule("Gelu", check=_gelu_form, min_opset=20),
)
