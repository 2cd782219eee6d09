"""``Mul(Add(Min(Y, 0), 1), dY) -> EluGrad(dY, Y)`` with ``Y = Elu(X)`` (alpha = 1).

The article's literal formula ``(min(activations, 0) + 1) * grads``, Mul/Add/Min operands in
either order, float32 or float16/bfloat16 with ``Cast(.., to=FLOAT)`` inputs and one Cast back.

Semantics: equal to EluGrad wherever Y is a number (Y >= 0 gives 1*dY == dY exactly), but
where Y is NaN ``Min`` may propagate the NaN whereas EluGrad returns dY: fused by default
with that note, not with ``strict=True``.
"""

from __future__ import annotations

import numpy as np
import onnx_graphsurgeon as gs

from rewrite.graph_view import GraphView, float32_of
from rewrite.rules.base import (
    Rule,
    Site,
    common_checks,
    elu_alpha,
    elu_grad_node,
    resolve_precision,
    source,
)

NAME = "min_add_mul"


def _operand_pair(view: GraphView, node: gs.Node, op: str):
    """``(node_of_type_op, other_operand)`` for a binary node with one operand made by ``op``."""
    if len(node.inputs) != 2:
        return None
    a, b = node.inputs
    for first, other in ((a, b), (b, a)):
        inner = view.producer_op(view.strip(first), op)
        if inner is not None:
            return inner, other
    return None


def pattern(view: GraphView, mul: gs.Node) -> Site | None:
    """``Mul(Add(Min(Y, c0), c1), dY)``."""
    found = _operand_pair(view, mul, "Add")
    if found is None:
        return None
    add, grads = found
    inner = _operand_pair(view, add, "Min")
    if inner is None:
        return None
    min_node, one = inner
    site = Site(NAME, root=mul, nodes=[mul, add, min_node])
    site.caps.update(add=add, min=min_node, one=one, grads=grads)
    return site


def check(view: GraphView, site: Site) -> str | None:
    caps = site.caps
    min_node = caps["min"]
    if len(min_node.inputs) != 2:
        return "Min must have two operands"
    a, b = min_node.inputs
    if view.is_scalar(b, 0.0):
        y = a
    elif view.is_scalar(a, 0.0):
        y = b
    else:
        return "Min does not compare with the constant 0"
    one = view.scalar(caps["one"])
    if one is None or float32_of(one) != np.float32(1):
        return f"the Add constant is {None if one is None else float(one)!r}, expected 1"
    resolve_precision(view, site, site.root.outputs[0])
    y_src = source(view, site, y)
    dy = source(view, site, caps["grads"])
    if site.caps["wrapped"] and any(t is None for t in (y_src, dy)):
        return f"a {site.dtype} site needs every input to be Cast(.., to=FLOAT) of a {site.dtype} tensor"
    elu = view.producer_op(y_src, "Elu")
    if elu is None:
        return f"{y_src.name} is not the output of an Elu node"
    if elu_alpha(elu) != np.float32(1):
        return f"Elu {elu.name or elu.outputs[0].name} has alpha {float(elu_alpha(elu))!r}; this form is only ELU's gradient for alpha 1"
    site.grads, site.activations, site.alpha = dy, elu.outputs[0], 1.0
    intermediates = [min_node.outputs[0], caps["add"].outputs[0]]
    if site.caps["wrapped"]:
        intermediates.append(site.root.outputs[0])
    reason = common_checks(view, site, intermediates)
    if reason:
        return reason
    site.exact = False
    site.notes.append("where Y is NaN, Min(Y, 0) may give NaN; EluGrad gives dY")
    return None


def replacement(view: GraphView, site: Site) -> gs.Node:
    return elu_grad_node(site)


RULE = Rule(NAME, "Mul", pattern, check, replacement, __doc__.splitlines()[0])
