"""``Where(X <= 0, dY * alpha * exp(X), dY) -> EluGrad(dY, Elu(X){alpha}){alpha}``.

PyTorch's joint-graph export of ``nn.ELU(alpha)`` (the backward reads the ELU *input* X), in
every spelling: any comparison of X with 0 (``<=``, ``<``, ``0 >= X``, ``Not(X > 0)``, branches
swapped), the factors in any order and grouping, ``dY`` itself a product (a dropout mask, a
scale), constants as initializers, ``Constant`` or ``Cast(Constant)`` nodes, and the
float16/bfloat16 form with ``Cast(.., to=FLOAT)`` inputs and one ``Cast`` back. Y is the output of
the Elu of X whose alpha the constants give (several Elus of one X: the one with that alpha).

Semantics: never bit-exact (EluGrad uses ``Y + alpha`` where the original uses
``alpha * exp(X)``, which round differently; in float16/bfloat16 Y itself is rounded to that
type first); with alpha != 1 a ``<=`` test differs from EluGrad's ``<`` at X == 0, and a
negated test also at NaN X. Fused by default with these notes; never with ``strict=True``.
"""

from __future__ import annotations

import onnx_graphsurgeon as gs

from ort_ops.rewrite.graph_view import GraphView
from ort_ops.rewrite.rules.base import COMPARISON_OPS, EluSite, elu_grad_nodes, read_select
from ort_ops.rewrite.rules.elu_select import analyze
from ort_ops.rewrite.rules.rule import Rule, needs

NAME = "where_input_exp"


def pattern(view: GraphView, where: gs.Node) -> EluSite | None:
    """``Where(cmp(T, 0), a, b)`` with a Mul/Neg tree holding an Exp on one side."""
    sel = read_select(view, where)
    if sel is None or not any(view.producer_op(t, "Exp") for t in sel.factors(view, "negative").leaves):
        return None
    site = EluSite(NAME, root=where, nodes=[where, *sel.nodes])
    site.caps["select"] = sel
    return site


def check(view: GraphView, site: EluSite) -> str | None:
    sel = site.caps["select"]
    return analyze(view, site, sel, "input", sel.positive)


def replacement(view: GraphView, site: EluSite, name: str) -> list:
    return elu_grad_nodes(view, site, name)


RULE = Rule(NAME, "Where", pattern, check, replacement,
            needs(COMPARISON_OPS, "Exp", ("Elu", "Celu")), __doc__.splitlines()[0])
