"""``<foreign domain>::EluGrad(dY, Y) -> ai.ortops::EluGrad(dY, Y)``.

tf2onnx's ``--custom-ops EluGrad`` writes ``ai.onnx.converters.tensorflow::EluGrad(gradients,
outputs)``: TensorFlow's op, ``outputs < 0 ? gradients * (outputs + 1) : gradients`` — our
semantics with alpha = 1, so the conversion is exact. Other domains are left alone: their
semantics are unknown.
"""

from __future__ import annotations

import onnx_graphsurgeon as gs

from ort_ops import DOMAIN
from ort_ops.rewrite.graph_view import GraphView
from ort_ops.rewrite.rules.base import EluSite, dtype_of_site, elu_grad_nodes, finish
from ort_ops.rewrite.rules.rule import Rule

NAME = "foreign_elu_grad"
# domain -> how its EluGrad maps onto ours (alpha attribute name, or None for alpha = 1)
KNOWN_DOMAINS = {"ai.onnx.converters.tensorflow": None}


def pattern(view: GraphView, node: gs.Node) -> EluSite | None:
    """A single ``EluGrad`` node of any domain but ours."""
    if node.domain == DOMAIN or len(node.inputs) != 2 or len(node.outputs) != 1:
        return None
    return EluSite(NAME, root=node, nodes=[node])


def check(view: GraphView, site: EluSite) -> str | None:
    node = site.root
    if node.domain not in KNOWN_DOMAINS:
        return f"EluGrad of domain {node.domain!r} has unknown semantics (known: {', '.join(KNOWN_DOMAINS)})"
    site.grads, site.activations = node.inputs
    site.output = node.outputs[0]
    site.alpha = 1.0
    site.caps["only_scalar_consts"] = False
    site.dtype = dtype_of_site(view, site, [site.grads, site.activations])
    return finish(view, site)


def replacement(view: GraphView, site: EluSite, name: str) -> list:
    return elu_grad_nodes(view, site, name)


RULE = Rule(NAME, "EluGrad", pattern, check, replacement, (), __doc__.splitlines()[0])
