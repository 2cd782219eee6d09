"""What a rule is, what it produces, and the matching helpers the ELU-backward rules share.

A rule is a small module with a ``pattern`` (does this node start the structure? returns the
captured pieces or None), a ``check`` (returns the reason the site must not be fused, or None;
fills in grads / activations / alpha / dtype and the semantic notes) and a ``replacement``
(the ``EluGrad`` node, built by :func:`elu_grad_node` for every rule).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import onnx_graphsurgeon as gs

from ort_ops import DOMAIN
from rewrite.graph_view import DTYPE_NAMES, GraphView, float32_of, node_label

# How far apart a pattern and EluGrad can be, in words, for the report.
ROUNDING_NOTE = (
    "EluGrad computes dY*(Y+alpha) from the forward output Y; the original computes "
    "dY*alpha*exp(X): equal in exact arithmetic, different by rounding (for alpha = 1 too, "
    "so strict=True, which fuses only bit-identical sites, leaves this form alone)"
)


@dataclass
class Site:
    """One candidate ELU-backward site: what a rule captured and what EluGrad gets."""

    rule: str
    root: gs.Node  # the node whose output the EluGrad produces (before any Cast back)
    nodes: list = field(default_factory=list)  # every node of the pattern (report, claims)
    output: gs.Variable | None = None  # the tensor EluGrad will produce (name kept)
    grads: gs.Tensor | None = None
    activations: gs.Tensor | None = None
    alpha: float = 1.0
    dtype: str | None = None
    exact: bool = True  # bit-identical to the original for every input
    notes: list[str] = field(default_factory=list)
    caps: dict = field(default_factory=dict)  # rule-private captures


@dataclass(frozen=True)
class Rule:
    name: str
    anchor: str  # op type of the node ``pattern`` is tried on
    pattern: Callable[[GraphView, gs.Node], Site | None]
    check: Callable[[GraphView, Site], str | None]
    replacement: Callable[[GraphView, Site], gs.Node]
    doc: str = ""


def elu_grad_node(site: Site) -> gs.Node:
    """``ai.ortops::EluGrad(grads, activations){alpha}`` producing ``site.output``."""
    return gs.Node(
        op="EluGrad",
        name=f"{node_label(site.root)}/EluGrad",
        domain=DOMAIN,
        attrs={"alpha": float(site.alpha)},
        inputs=[site.grads, site.activations],
        outputs=[site.output],
    )


# -- shared pieces of the Where(cmp(v, 0), Mul(...), dY) patterns ------------------------------
def where_parts(view: GraphView, where: gs.Node):
    """``(cmp_node, compared, mul_root, else_)`` of ``Where(cmp(v, 0), Mul..., else_)``, or None."""
    if len(where.inputs) != 3:
        return None
    cond, then, else_ = where.inputs
    cmp = view.producer_op(cond, "LessOrEqual", "Less")
    if cmp is None or not view.is_scalar(cmp.inputs[1], 0.0):
        return None
    mul = view.producer_op(view.strip(then), "Mul")
    if mul is None:
        return None
    return cmp, cmp.inputs[0], mul, else_


def mul_factors(view: GraphView, mul: gs.Node, nodes: list):
    """Leaves of a tree of Mul nodes (Identity / Mul-by-1 looked through); appends the Muls."""
    leaves, stack = [], [mul]
    while stack:
        node = stack.pop()
        nodes.append(node)
        for operand in node.inputs:
            base = view.strip(operand)
            inner = view.producer_op(base, "Mul")
            if inner is not None and view.const(base) is None and len(nodes) < 16:
                stack.append(inner)
            else:
                leaves.append(base)
    return leaves


def split_factors(view: GraphView, leaves):
    """``(constant product as float32 or None if none, non-constant leaves)``."""
    product, others = None, []
    for leaf in leaves:
        value = view.scalar(leaf)
        if value is not None:
            v = float32_of(value)
            product = v if product is None else np.float32(product * v)
        else:
            others.append(leaf)
    return product, others


def resolve_precision(view: GraphView, site: Site, out_tensor) -> None:
    """Decide whether the site is a Cast-wrapped fp16/bf16 one; sets output / dtype."""
    down = view.downcast_consumer(out_tensor)
    if down is not None:
        cast, to = down
        site.nodes.append(cast)
        site.output = cast.outputs[0]
        site.dtype = DTYPE_NAMES[to]
        site.caps["wrapped"] = True
    else:
        site.output = out_tensor
        site.dtype = view.dtype_name(out_tensor)
        site.caps["wrapped"] = False


def source(view: GraphView, site: Site, tensor):
    """The tensor EluGrad should read for ``tensor`` of the float32 math (drops Cast-to-FLOAT)."""
    if site.caps.get("wrapped"):
        return view.upcast_source(tensor)
    return view.strip(tensor)


def common_checks(view: GraphView, site: Site, intermediates) -> str | None:
    """Reasons shared by all rules: dtype, shapes, intermediates used outside the pattern."""
    if site.dtype is None:
        return "cannot determine the dtype of the gradient (float32/float16/bfloat16 expected)"
    allowed = {id(n) for n in site.nodes}
    for tensor in intermediates:
        why = view.other_users(tensor, allowed)
        if why:
            return f"intermediate {tensor.name} {why}"
    for role, tensor in (("grads", site.grads), ("activations", site.activations)):
        dtype = view.dtype_name(tensor)
        if dtype != site.dtype:
            return f"{role} {tensor.name} has dtype {dtype}, expected {site.dtype}"
    g_shape, a_shape = view.known_shape(site.grads), view.known_shape(site.activations)
    if g_shape is not None and a_shape is not None and g_shape != a_shape:
        return f"grads shape {list(g_shape)} differs from activations shape {list(a_shape)}"
    if site.dtype != "float32" and not site.caps.get("wrapped", True):
        site.exact = False
        site.notes.append(
            f"the original computes in {site.dtype} arithmetic (rounded after every op); "
            "EluGrad computes in float32 and rounds once"
        )
    return None


def elu_alpha(node: gs.Node) -> np.float32:
    alpha = node.attrs.get("alpha")
    return np.float32(1.0 if alpha is None else alpha)


def where_operands(view: GraphView, site: Site, caps: dict, operand, operand_op: str, grad):
    """The shared operand checks of the ``Where(cmp(T, 0), Mul(dY, f(T)), dY)`` rules.

    Resolves (through the Cast wrappers of fp16/bf16 sites) the compared tensor, the tensor
    ``operand`` that the ``operand_op`` node reads, and the gradient in the Mul and in the
    else branch. Returns ``(compared, grads, None)`` when the two T and the two dY agree,
    else ``(None, None, reason)``.
    """
    compared = source(view, site, caps["compared"])
    read = source(view, site, operand)
    dy_mul = source(view, site, grad)
    dy_else = source(view, site, caps["else_"])
    if site.caps["wrapped"] and any(t is None for t in (compared, read, dy_mul, dy_else)):
        return None, None, (
            f"a {site.dtype} site needs every input to be Cast(.., to=FLOAT) of a {site.dtype} tensor"
        )
    if read is not compared:
        return None, None, (
            f"{operand_op} reads {read.name}, which is not the compared tensor {compared.name}"
        )
    if dy_mul is not dy_else:
        return None, None, (
            f"the Mul's gradient {dy_mul.name} is not the Where's else branch {dy_else.name}"
        )
    return compared, dy_mul, None


def where_intermediates(site: Site, caps: dict, operand_node: gs.Node) -> list:
    """Tensors a ``Where`` site computes on the way (they must have no other consumers)."""
    tensors = [caps["cmp"].outputs[0], operand_node.outputs[0]] + [
        n.outputs[0] for n in site.nodes if n.op == "Mul"
    ]
    if site.caps["wrapped"]:
        tensors.append(site.root.outputs[0])
    return tensors
