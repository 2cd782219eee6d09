"""``Where(Y < 0, dY * (Y + alpha), dY) -> EluGrad(dY, Y){alpha}`` with ``Y = Elu(X){alpha}``.

The form that reads the ELU *output*: PyTorch's ``nn.ELU(inplace=True)`` export (``<=``) and
hand-written graphs (``Less``), in float32 or float16/bfloat16 with ``Cast(.., to=FLOAT)``
inputs and one ``Cast`` back, Mul/Add operands in either order, Mul-by-1 looked through.

Semantics: with ``Less`` it is EluGrad's own formula (bit-exact, also Cast-wrapped: exact
upcasts, the same float32 math, one round-to-nearest-even cast). With ``LessOrEqual`` it is
bit-exact only for alpha = 1 (at Y == +-0: dY*(0+1) == dY); with alpha != 1 it differs at
Y == 0 (alpha*dY versus dY). Un-wrapped float16/bfloat16 arithmetic rounds after each op.
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
    mul_factors,
    resolve_precision,
    split_factors,
    where_intermediates,
    where_operands,
    where_parts,
)

NAME = "where_output_add"


def _add_with_constant(view: GraphView, tensor):
    """``(add_node, other_operand, constant)`` when ``tensor`` is ``Add(v, c)`` / ``Add(c, v)``."""
    add = view.producer_op(tensor, "Add")
    if add is None or len(add.inputs) != 2:
        return None
    a, b = add.inputs
    for value, const in ((a, b), (b, a)):
        c = view.scalar(const)
        if c is not None and view.const(value) is None:
            return add, value, float32_of(c)
    return None


def pattern(view: GraphView, where: gs.Node) -> Site | None:
    """``Where(cmp(Y, 0), Mul-tree containing Add(Y', c), dY)``."""
    parts = where_parts(view, where)
    if parts is None:
        return None
    cmp, compared, mul, else_ = parts
    nodes = [where, cmp]
    leaves = mul_factors(view, mul, nodes)
    adds = [_add_with_constant(view, leaf) for leaf in leaves]
    if not any(adds):
        return None
    site = Site(NAME, root=where, nodes=nodes)
    site.caps.update(cmp=cmp, compared=compared, else_=else_, leaves=leaves)
    return site


def check(view: GraphView, site: Site) -> str | None:
    caps = site.caps
    resolve_precision(view, site, site.root.outputs[0])
    extra, others = split_factors(view, caps["leaves"])
    adds = [_add_with_constant(view, t) for t in others]
    add_parts = [a for a in adds if a is not None]
    grads = [t for t, a in zip(others, adds) if a is None]
    if len(add_parts) != 1 or len(grads) != 1:
        return (
            f"the Mul must multiply exactly one Add(Y, alpha) and one gradient tensor, found "
            f"{len(add_parts)} Add and {len(grads)} other operands"
        )
    if extra is not None and extra != 1:
        return f"the Mul has an extra constant factor {float(extra)!r}"
    add, y_add, alpha_add = add_parts[0]
    site.nodes.append(add)
    y_cmp, dy_mul, reason = where_operands(view, site, caps, y_add, "Add", grads[0])
    if reason:
        return reason
    elu = view.producer_op(y_cmp, "Elu")
    if elu is None:
        return f"{y_cmp.name} is not the output of an Elu node"
    alpha = elu_alpha(elu)
    if alpha_add != alpha:
        return f"Elu {elu.name or elu.outputs[0].name} has alpha {float(alpha)!r}, the Add adds {float(alpha_add)!r}"
    site.grads, site.activations, site.alpha = dy_mul, elu.outputs[0], float(alpha)
    intermediates = where_intermediates(site, caps, add)
    reason = common_checks(view, site, intermediates)
    if reason:
        return reason
    if caps["cmp"].op == "LessOrEqual" and alpha != np.float32(1):
        site.exact = False
        site.notes.append(
            "boundary: at Y == 0 the original gives alpha*dY (<= 0), EluGrad gives dY (< 0)"
        )
    return None


def replacement(view: GraphView, site: Site) -> gs.Node:
    return elu_grad_node(site)


RULE = Rule(NAME, "Where", pattern, check, replacement, __doc__.splitlines()[0])
