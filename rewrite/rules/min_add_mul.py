"""``Mul(Add(Min(Y, 0), 1), dY) -> EluGrad(dY, Y)`` (alpha = 1).

The article's literal formula ``(min(activations, 0) + 1) * grads``, Mul/Add/Min operands in
either order, float32 or float16/bfloat16 with ``Cast(.., to=FLOAT)`` inputs and one Cast back.
Like EluGrad's own formula it holds for any Y: Y need not be read from an Elu.

Semantics: equal to EluGrad wherever Y is a number, except that ``1 * dY`` quiets a
signalling-NaN dY where EluGrad copies it; where Y is NaN ``Min`` may propagate the NaN whereas
EluGrad returns dY: fused by default with those notes, not with ``strict=True``.
"""

from __future__ import annotations

import numpy as np
import onnx_graphsurgeon as gs

from ort_ops.rewrite.graph_view import GraphView
from ort_ops.rewrite.rules.base import (
    EluSite,
    dtype_of_site,
    elu_grad_nodes,
    elu_of,
    finish,
    resolve_wrapped,
    scalar_consts,
    wrapped_dtype,
)
from ort_ops.rewrite.rules.rule import Rule, needs

NAME = "min_add_mul"


def _operand_pair(view: GraphView, node: gs.Node, op: str):
    """``(node_of_type_op, other_operand)`` for a binary node with one operand made by ``op``."""
    if not view.may_read_from(node, (op,)) or len(node.inputs) != 2:
        return None
    a, b = node.inputs
    for first, other in ((a, b), (b, a)):
        inner = view.producer_op(view.strip(first), op)
        if inner is not None:
            return inner, other
    return None


def pattern(view: GraphView, mul: gs.Node) -> EluSite | None:
    """``Mul(Add(Min(Y, c0), c1), dY)``."""
    found = _operand_pair(view, mul, "Add")
    if found is None:
        return None
    add, grads = found
    inner = _operand_pair(view, add, "Min")
    if inner is None:
        return None
    min_node, one = inner
    site = EluSite(NAME, root=mul, nodes=[mul, add, min_node])
    site.caps.update(add=add, min=min_node, one=one, grads=grads)
    return site


def check(view: GraphView, site: EluSite) -> str | None:
    caps = site.caps
    min_node = caps["min"]
    if len(min_node.inputs) != 2:
        return "Min must have two operands"
    a, b = min_node.inputs
    if view.is_scalar(b, 0.0):
        y, zero = a, b
    elif view.is_scalar(a, 0.0):
        y, zero = b, a
    else:
        return "Min does not compare with the constant 0"
    one = view.uniform(caps["one"])
    if one is None or np.float32(one) != np.float32(1):
        return f"the Add constant is {None if one is None else float(one)!r}, expected 1"
    site.caps["only_scalar_consts"] = scalar_consts(view, [zero, caps["one"]])
    cast = resolve_wrapped(view, site, site.root.outputs[0])
    y_src, dy = view.strip(y), view.strip(caps["grads"])
    site.caps["wrapped"] = cast is not None
    if cast is not None:
        y_src, dy = view.upcast_source(y), view.upcast_source(caps["grads"])
        if y_src is None or dy is None:
            dtype = wrapped_dtype(cast)
            return f"a {dtype} site needs every input to be Cast(.., to=FLOAT) of a {dtype} tensor"
        site.nodes.append(cast)
        site.output, site.dtype = cast.outputs[0], wrapped_dtype(cast)
    else:
        site.output = site.root.outputs[0]
    site.grads, site.activations, site.alpha = dy, y_src, 1.0
    site.forward = elu_of(view, y_src)
    if cast is None:
        site.dtype = dtype_of_site(view, site, [dy, y_src, site.output])
    reason = finish(view, site)
    if reason:
        return reason
    site.exact = False
    site.notes.append("where Y is NaN, Min(Y, 0) may give NaN; EluGrad gives dY. 1 * dY quiets a signalling-NaN "
                      "dY; EluGrad copies it")
    return None


def replacement(view: GraphView, site: EluSite, name: str) -> list:
    return elu_grad_nodes(view, site, name)


RULE = Rule(NAME, "Mul", pattern, check, replacement, needs("Add", "Min"), __doc__.splitlines()[0])
