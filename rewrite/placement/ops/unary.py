"""Unary ops: ``Elu``, ``Exp``, ``Log``, ``Neg``, ``Abs``, ``Sqrt``, ``Reciprocal``, ``Relu``,
``Sigmoid``, ``Tanh``, ``Not`` -> the CANN op of the same meaning (``Not`` -> ``LogicalNot``)."""

from ort_ops.rewrite.placement.rule import PlaceRule

_SAME = ("Elu", "Exp", "Log", "Neg", "Abs", "Sqrt", "Reciprocal", "Relu", "Sigmoid", "Tanh")

RULES = tuple(PlaceRule(op) for op in _SAME) + (PlaceRule("Not"),)  # Not: LogicalNot
