"""``Where(X > 0, dY, Mul(dY, s)) -> ai.ortops::LeakyReluGrad(dY, X){negative_slope=s}``.

PyTorch's joint-graph export of ``nn.LeakyReLU(negative_slope)`` / ``F.leaky_relu`` (the backward
``leaky_relu_backward(dY, self, s, self_is_result)``): ``Where(Greater(T, 0), dY, Mul(dY, s))``
with ``T`` the LeakyRelu's input X, or its output Y for the in-place module (``self_is_result``,
``s >= 0``: Y > 0 exactly where X > 0). The zero may be written first (``Less(0, T)``) and the
Mul's operands in either order; ``s`` is a one-element constant of dY's dtype.

Semantics: LeakyReluGrad is ``T > 0 ? dY : dY * s`` in float32 with one rounding, the slope the
constant's value. That is the original's math bit for bit in float32; in float16/bfloat16 too (the
product of two such numbers is exact in float32, so the original's one rounding of it is the op's),
NaN payloads aside; but ORT's CPU ``Where`` turns a ``-0.0`` dY it selects into ``+0.0``, which the
op (like PyTorch) keeps: so the site is not exact, and ``strict=True`` leaves it.

With ``s = 1`` the exporter drops the Mul (``Where(T > 0, dY, dY)``, which is dY): nothing to
fuse. Refused, with the reason: another comparison with 0 (``>=``: the original takes dY at
T == 0, the op the product), a slope that is not a one-element float constant, operands of
different shapes or dtypes. Not sites at all: the branches the other way round, a negated test.
"""

from __future__ import annotations

import onnx_graphsurgeon as gs

from ort_ops import DOMAIN
from ort_ops.rewrite.graph_view import GraphView, node_label
from ort_ops.rewrite.rules.rule import Rule, Site, needs

NAME = "leaky_relu_backward"
OP = "LeakyReluGrad"
COMPARISONS = ("Greater", "Less", "GreaterOrEqual", "LessOrEqual")
WHERE_ZERO_NOTE = ("where dY is -0.0 and features > 0, ONNX Runtime's CPU Where returns +0.0 (it merges the branches "
                   "with x != 0 ? x : y); LeakyReluGrad returns dY's -0.0, as PyTorch does; every other result is "
                   "bit-identical")


def pattern(view: GraphView, where: gs.Node) -> Site | None:
    """``Where(cmp(T, 0), dY, Mul(dY, c))`` (either Mul operand dY, compared in any direction)."""
    if len(where.inputs) != 3:
        return None
    compare = view.producer_op(where.inputs[0], *COMPARISONS)
    mul = view.producer_op(where.inputs[2], "Mul")
    if compare is None or mul is None or len(compare.inputs) != 2 or len(mul.inputs) != 2:
        return None
    dy = where.inputs[1]
    if dy not in mul.inputs:
        return None
    if view.is_scalar(compare.inputs[1], 0.0):
        tensor, op = compare.inputs[0], compare.op
    elif view.is_scalar(compare.inputs[0], 0.0):  # 0 < T is T > 0
        tensor, op = compare.inputs[1], {"Less": "Greater", "LessOrEqual": "GreaterOrEqual", "Greater": "Less",
                                         "GreaterOrEqual": "LessOrEqual"}[compare.op]
    else:
        return None
    slope = mul.inputs[1] if mul.inputs[0] is dy else mul.inputs[0]
    site = Site(NAME, root=where, nodes=[where, compare, mul], op=OP, output=where.outputs[0])
    site.caps.update(features=tensor, comparison=op, slope=slope)
    return site


def check(view: GraphView, site: Site) -> str | None:
    c, where = site.caps, site.root
    dy, features = where.inputs[1], c["features"]
    if c["comparison"] != "Greater":
        spelled = {"GreaterOrEqual": ">=", "Less": "<", "LessOrEqual": "<="}[c["comparison"]]
        return (f"{node_label(where)} selects dY where {features.name} {spelled} 0: LeakyReluGrad takes dY where "
                f"{features.name} > 0 (strictly) and the product elsewhere")
    value = view.const(c["slope"])
    if value is None or value.size != 1 or value.dtype.kind != "f":
        return f"the slope {c['slope'].name} is not a one-element float constant"
    dtype = view.dtype_name(dy)
    if dtype is None:
        return (f"dY {dy.name} has dtype {view.elem_type(dy)}, not one of float32, float16, bfloat16 "
                "(or it is unknown)")
    for role, t in (("features", features), ("the slope", c["slope"])):
        if view.dtype_name(t) != dtype:
            return f"{role} {t.name} has dtype {view.dtype_name(t)}, dY {dy.name} has {dtype}"
    g_shape, f_shape, out_shape = view.shape(dy), view.shape(features), view.shape(site.output)
    if g_shape is None or g_shape != f_shape or (out_shape is not None and out_shape != g_shape) or \
            value.ndim > len(g_shape):
        return (f"dY {dy.name} {g_shape}, features {features.name} {f_shape} and the result {out_shape} are not one "
                "known shape (LeakyReluGrad does not broadcast)")
    slope = float(value.reshape(-1)[0])
    site.operands = {"grads": dy, "activations": features}
    site.dtype = dtype
    site.attributes = {"negative_slope": slope}
    site.exact = False
    site.notes.append(WHERE_ZERO_NOTE)
    forward = view.producer_op(features, "LeakyRelu") or next(
        (n for n in view.consumers(features) if n.op == "LeakyRelu"), None)
    site.forward = forward
    return None


def replacement(view: GraphView, site: Site, name: str) -> list:
    return [gs.Node(OP, name, domain=DOMAIN, attrs={"negative_slope": float(site.attributes["negative_slope"])},
                    inputs=[site.operands["grads"], site.operands["activations"]], outputs=[site.output])]


RULE = Rule(NAME, "Where", pattern, check, replacement, needs("Mul", ("Greater", "Less", "GreaterOrEqual",
                                                                       "LessOrEqual")), __doc__.splitlines()[0])
