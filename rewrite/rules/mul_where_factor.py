"""``Mul(dY, Where(Y < 0, Y + alpha, 1)) -> EluGrad(dY, Y){alpha}`` (and ``alpha * exp(X)``).

The ELU backward with the derivative as a factor: ``dY * where(Y < 0, Y + alpha, 1)`` (the CANN
test golden's spelling) or ``dY * where(X <= 0, alpha * exp(X), 1)``; any comparison spelling
and branch order, the Where either operand of the Mul, float32 or Cast-wrapped float16/bfloat16.

Semantics: as :mod:`where_output_add` / :mod:`where_input_exp` on the negative side; on the
positive side the original computes ``dY * 1``, which quiets a signalling-NaN dY where EluGrad
copies it: never bit-exact (noted), so not fused with ``strict=True``.
"""

from __future__ import annotations

import onnx_graphsurgeon as gs

from ort_ops.rewrite.graph_view import GraphView
from ort_ops.rewrite.rules.base import COMPARISON_OPS, EluSite, elu_grad_nodes, read_select
from ort_ops.rewrite.rules.elu_select import analyze
from ort_ops.rewrite.rules.rule import Rule, needs

NAME = "mul_where_factor"


def pattern(view: GraphView, mul: gs.Node) -> EluSite | None:
    """``Mul(g, Where(cmp(T, 0), f, 1))`` in either operand order."""
    if not view.may_read_from(mul, ("Where",)) or len(mul.inputs) != 2:
        return None
    for where_in, grads in ((mul.inputs[1], mul.inputs[0]), (mul.inputs[0], mul.inputs[1])):
        where = view.producer_op(view.strip(where_in), "Where")
        if where is None or view.uniform(grads) is not None:
            continue
        sel = read_select(view, where)
        if sel is None or view.uniform(sel.positive) is None:
            continue
        site = EluSite(NAME, root=mul, nodes=[mul, where, *sel.nodes])
        site.caps.update(select=sel, grads=grads)
        return site
    return None


def check(view: GraphView, site: EluSite) -> str | None:
    sel = site.caps["select"]
    leaves = sel.factors(view, "negative").leaves
    kind = "input" if any(view.producer_op(t, "Exp") for t in leaves) else "output"
    return analyze(view, site, sel, kind, site.caps["grads"], positive_is_one=True)


def replacement(view: GraphView, site: EluSite, name: str) -> list:
    return elu_grad_nodes(view, site, name)


RULE = Rule(NAME, "Mul", pattern, check, replacement, needs("Where", COMPARISON_OPS, ("Exp", "Add", "Sub")),
            __doc__.splitlines()[0])
