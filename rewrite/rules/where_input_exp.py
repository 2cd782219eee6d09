"""``Where(X <= 0, dY * alpha * exp(X), dY) -> EluGrad(dY, Elu(X){alpha}){alpha}``.

PyTorch's joint-graph export of ``nn.ELU(alpha)`` (the backward reads the ELU *input* X),
in every spelling the exporter produces: Mul operands in either order, ``Mul(dY, alpha)``
absent when alpha = 1, Mul-by-1 / Identity / ``Cast(Constant)`` constants (optimize=False),
and the float16/bfloat16 form with ``Cast(.., to=FLOAT)`` inputs and one ``Cast`` back.
``Less`` instead of ``LessOrEqual`` is accepted too.

Semantics: never bit-exact (EluGrad uses ``Y + alpha`` where the original uses
``alpha * exp(X)``, which round differently; in float16/bfloat16 Y itself is rounded to that
type first), and with alpha != 1 the ``<=`` test differs from EluGrad's ``<`` at X == 0.
Fused by default with these notes; never fused with ``strict=True``.
"""

from __future__ import annotations

import numpy as np
import onnx_graphsurgeon as gs

from rewrite.graph_view import GraphView
from rewrite.rules.base import (
    ROUNDING_NOTE,
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

NAME = "where_input_exp"


def pattern(view: GraphView, where: gs.Node) -> Site | None:
    """``Where(cmp(X, 0), Mul-tree containing Exp(..), dY)``."""
    parts = where_parts(view, where)
    if parts is None:
        return None
    cmp, compared, mul, else_ = parts
    nodes = [where, cmp]
    leaves = mul_factors(view, mul, nodes)
    exps = [view.producer_op(leaf, "Exp") for leaf in leaves]
    if not any(exps):
        return None
    site = Site(NAME, root=where, nodes=nodes)
    site.caps.update(cmp=cmp, compared=compared, else_=else_, leaves=leaves, mul=mul)
    return site


def check(view: GraphView, site: Site) -> str | None:
    caps = site.caps
    resolve_precision(view, site, site.root.outputs[0])
    alpha_mul, others = split_factors(view, caps["leaves"])
    exps = [view.producer_op(t, "Exp") for t in others]
    exp_nodes = [n for n in exps if n is not None]
    grads = [t for t, n in zip(others, exps) if n is None]
    if len(exp_nodes) != 1 or len(grads) != 1:
        return (
            f"the Mul must multiply exactly one Exp and one gradient tensor, found "
            f"{len(exp_nodes)} Exp and {len(grads)} other operands"
        )
    exp = exp_nodes[0]
    site.nodes.append(exp)
    x_cmp, dy_mul, reason = where_operands(view, site, caps, exp.inputs[0], "Exp", grads[0])
    if reason:
        return reason
    elu = view.find_consumer(x_cmp, "Elu")
    if elu is None:
        return f"{x_cmp.name} does not feed an Elu node"
    alpha = elu_alpha(elu)
    multiplier = np.float32(1.0) if alpha_mul is None else alpha_mul
    if multiplier != alpha:
        return f"Elu {elu.name or elu.outputs[0].name} has alpha {float(alpha)!r}, the multiplier is {float(multiplier)!r}"
    site.grads, site.activations, site.alpha = dy_mul, elu.outputs[0], float(alpha)
    intermediates = where_intermediates(site, caps, exp)
    reason = common_checks(view, site, intermediates)
    if reason:
        return reason
    site.exact = False
    site.notes.append(ROUNDING_NOTE + (
        f" (Y is rounded to {site.dtype} before EluGrad reads it)" if site.dtype != "float32" else ""
    ))
    if caps["cmp"].op == "LessOrEqual" and alpha != 1:
        site.notes.append(
            "boundary: at X == 0 the original gives alpha*dY (<= 0), EluGrad gives dY (< 0)"
        )
    return None


def replacement(view: GraphView, site: Site) -> gs.Node:
    return elu_grad_node(site)


RULE = Rule(NAME, "Where", pattern, check, replacement, __doc__.splitlines()[0])
