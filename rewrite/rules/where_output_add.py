"""``Where(Y < 0, dY * (Y + alpha), dY) -> EluGrad(dY, Y){alpha}``.

The form that reads the ELU *output*: PyTorch's ``nn.ELU(inplace=True)`` export (``<=``; on 3-D
and larger activations through Reshapes: EluGrad, elementwise, reads the reshaped Y), hand-written
graphs (``Less``), any comparison spelling and branch order, ``Y + alpha`` as ``Add`` either way
round or ``Sub(Y, -alpha)``, ``dY`` itself a product, float32 or Cast-wrapped float16/bfloat16.

Semantics: with ``Less`` it is EluGrad's own formula, bit-exact for any Y (also Cast-wrapped:
exact upcasts, the same float32 math, one round-to-nearest-even cast). With ``<=`` it is
bit-exact for alpha = 1 (at Y == +-0: dY*(0+1) == dY); with alpha != 1 it differs at Y == 0
(alpha*dY against dY), so it is fused only when Y is the output of an Elu with that alpha (then
Y == 0 only for X == 0), with that note. A negated test also differs at NaN Y. Un-wrapped
float16/bfloat16 arithmetic rounds after each op.
"""

from __future__ import annotations

import onnx_graphsurgeon as gs

from ort_ops.rewrite.graph_view import GraphView
from ort_ops.rewrite.rules.base import COMPARISON_OPS, EluSite, elu_grad_nodes, read_select
from ort_ops.rewrite.rules.elu_select import analyze
from ort_ops.rewrite.rules.rule import Rule, needs

NAME = "where_output_add"


def pattern(view: GraphView, where: gs.Node) -> EluSite | None:
    """``Where(cmp(T, 0), a, b)`` whose negative side has an Add/Sub factor."""
    sel = read_select(view, where)
    if sel is None or not any(view.producer_op(t, "Add", "Sub") for t in sel.factors(view, "negative").leaves):
        return None
    site = EluSite(NAME, root=where, nodes=[where, *sel.nodes])
    site.caps["select"] = sel
    return site


def check(view: GraphView, site: EluSite) -> str | None:
    sel = site.caps["select"]
    return analyze(view, site, sel, "output", sel.positive)


def replacement(view: GraphView, site: EluSite, name: str) -> list:
    return elu_grad_nodes(view, site, name)


RULE = Rule(NAME, "Where", pattern, check, replacement, needs(COMPARISON_OPS, ("Add", "Sub")),
            __doc__.splitlines()[0])
