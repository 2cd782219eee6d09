"""The analysis the ELU-backward rules share (what a rule is: :mod:`ort_ops.rewrite.rules.rule`).

An ELU rule's ``check`` fills in an :class:`EluSite` (grads / activations / alpha / dtype and the
semantic notes; ``forward``: the Elu, whose layer the report names) and its ``replacement`` is
the ``EluGrad`` node :func:`elu_grad_nodes` builds. The ELU-only graph queries
(:func:`elu_like_consumers`, :func:`elu_of`, :func:`elu_alpha`) live here too.

What the rules accept is derived from what the ELU backward computes. For ``Y = Elu(X){alpha}``
and any upstream gradient ``P`` (a tensor or a product of factors, e.g. with a dropout mask):

    dX = X <= 0 ? P * alpha * exp(X) : P   =   Y <= 0 ? P * (Y + alpha) : P   ~   EluGrad(P, Y)

so a site is a select between a *negative branch* ``N`` and a *positive branch* ``P`` (a
``Where`` in either branch order, under a comparison of ``T`` with 0 in any of its spellings,
possibly negated), where ``N``'s factors are ``P``'s factors plus one ELU factor: ``exp(X)`` times
constants multiplying to alpha (``T = X``, the input form), or ``T + alpha`` (the output form;
``T`` may be a reshaped view of ``Y``: EluGrad is elementwise). Where the original and EluGrad
can differ (the comparison includes 0 or NaN; the input form's ``alpha*exp(X)`` against
``Y + alpha``; float16 arithmetic) the site is not exact and its notes say where.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx_graphsurgeon as gs
from onnx import TensorProto

from ort_ops import DOMAIN
from ort_ops.rewrite.graph_view import DTYPE_NAMES, GraphView, is_default_domain, node_label, shortest
from ort_ops.rewrite.rules.rule import Site, name_of

COMPARISON_OPS = ("Less", "LessOrEqual", "Greater", "GreaterOrEqual")

# How far apart a pattern and EluGrad can be, in words, for the report.
ROUNDING_NOTE = (
    "EluGrad computes dY*(Y+alpha) from the forward output Y; the original computes "
    "dY*alpha*exp(X): equal in exact arithmetic, different by rounding (for alpha = 1 too, "
    "so strict=True, which fuses only bit-identical sites, leaves this form alone)"
)


@dataclass
class EluSite(Site):
    """A site an ELU rule fills in: what ``EluGrad(grads, activations){alpha}`` gets (with Expand
    nodes first when ``broadcast`` says the operands must be brought to one shape)."""

    op: str = "EluGrad"
    grads: gs.Tensor | None = None
    activations: gs.Tensor | None = None
    alpha: float = 1.0
    broadcast: tuple | str | None = None  # grads/activations need Expand to this shape (or "dynamic")

    def report_fields(self, fused: bool) -> dict:
        return {"grads": name_of(self.grads), "activations": name_of(self.activations),
                "alpha": shortest(self.alpha) if fused else None}


def elu_grad_nodes(view: GraphView, site: EluSite, name: str) -> list[gs.Node]:
    """``ai.ortops::EluGrad(grads, activations){alpha}`` producing ``site.output`` (with Expand
    nodes first when the operands must be broadcast to one shape)."""
    grads, acts = site.grads, site.activations
    nodes = []
    if site.broadcast is not None:
        grads, acts, nodes = _broadcast_operands(view, site, name)
    nodes.append(gs.Node(op="EluGrad", name=name, domain=DOMAIN, attrs={"alpha": float(site.alpha)},
                         inputs=[grads, acts], outputs=[site.output]))
    return nodes


def _broadcast_operands(view: GraphView, site: EluSite, name: str):
    """Expand grads and activations to their common shape: EluGrad is elementwise, so applying it
    to the broadcast operands gives what the broadcasting original computes."""
    nodes = []
    if site.broadcast == "dynamic":
        shape_g = gs.Variable(f"{name}/grads_shape", dtype=np.int64)
        shape_a = gs.Variable(f"{name}/acts_shape", dtype=np.int64)
        nodes += [gs.Node("Shape", f"{name}/shape_grads", inputs=[site.grads], outputs=[shape_g]),
                  gs.Node("Shape", f"{name}/shape_acts", inputs=[site.activations], outputs=[shape_a])]
        to_g, to_a = shape_a, shape_g
    else:
        to_g = to_a = gs.Constant(f"{name}/shape", np.array(site.broadcast, dtype=np.int64))
    grads = gs.Variable(f"{name}/grads_expanded", dtype=site.grads.dtype)
    acts = gs.Variable(f"{name}/acts_expanded", dtype=site.activations.dtype)
    nodes += [gs.Node("Expand", f"{name}/expand_grads", inputs=[site.grads, to_g], outputs=[grads]),
              gs.Node("Expand", f"{name}/expand_acts", inputs=[site.activations, to_a], outputs=[acts])]
    return grads, acts, nodes


# -- ELU-only graph queries --------------------------------------------------------------
def elu_alpha(node: gs.Node) -> np.float32:
    alpha = node.attrs.get("alpha")
    return np.float32(1.0 if alpha is None else alpha)


def elu_like_consumers(view: GraphView, tensor) -> list[gs.Node]:
    """``Elu`` nodes (and ``Celu`` with alpha 1, the same function) reading ``tensor`` directly
    or through Identity / Mul-by-1, in this scope or an enclosing one, in graph order."""
    found, frontier, seen = [], [tensor], set()
    for _ in range(4):
        if not frontier:
            break
        nxt = []
        for t in frontier:
            for user in view.consumers(t):
                if id(user) in seen or not is_default_domain(user):
                    continue
                seen.add(id(user))
                if user.op == "Elu" or user.op == "Celu" and elu_alpha(user) == np.float32(1):
                    found.append(user)
                elif user.op in ("Identity", "Mul") and user.outputs and view.strip(user.outputs[0]) is t:
                    nxt.append(user.outputs[0])
        frontier = nxt
    return found

def elu_of(view: GraphView, tensor) -> gs.Node | None:
    """The Elu-like node whose output ``tensor`` holds (through view ops), or None."""
    node = view.producer(view.view_source(tensor))
    if node is None or not is_default_domain(node):
        return None
    if node.op == "Elu" or node.op == "Celu" and elu_alpha(node) == np.float32(1):
        return node
    return None


# -- the select: which branch is the ELU's negative side ------------------------------------
@dataclass
class Select:
    """A select ``cond ? then : else`` read as the ELU backward's branches."""

    compared: object  # T, the tensor compared with 0
    negative: object  # the branch taken on the negative side
    positive: object  # the branch taken elsewhere
    includes_zero: bool  # the negative side includes T == +-0 (<=), EluGrad's does not
    includes_nan: bool  # the negative side includes NaN T, EluGrad's does not
    nodes: list  # the comparison (and Not) nodes
    zero: object = None  # the constant T is compared with
    unreadable: str | None = None  # why that constant's value could not be read
    _factors: dict = field(default_factory=dict, repr=False)

    def factors(self, view: GraphView, branch: str) -> Factors:
        """:func:`factors` of the ``"negative"`` or ``"positive"`` branch (computed once: the
        pattern and the check both read them)."""
        hit = self._factors.get(branch)
        if hit is None:
            hit = self._factors[branch] = factors(view, getattr(self, branch))
        return hit


def read_condition(view: GraphView, cond) -> tuple | None:
    """``(T, true_side, includes_zero, includes_nan, nodes, zero, unreadable)`` of a comparison of T
    with 0 (or with a constant whose value could not be read: ``unreadable`` says why):
    true_side is "negative" when the condition holds for T < 0 (or <= 0), "positive" otherwise."""
    nodes, flips = [], 0
    node = view.producer_op(cond, "Not", *COMPARISON_OPS)
    while node is not None and node.op == "Not":
        nodes.append(node)
        flips += 1
        node = view.producer_op(node.inputs[0], "Not", *COMPARISON_OPS)
    if node is None or len(node.inputs) != 2:
        return None
    nodes.append(node)
    a, b = node.inputs
    unreadable = None
    if view.is_scalar(b, 0.0):
        tensor, op, zero = a, node.op, b
    elif view.is_scalar(a, 0.0):  # 0 < T is T > 0, and so on
        tensor, zero, op = b, a, {"Less": "Greater", "LessOrEqual": "GreaterOrEqual", "Greater": "Less",
                         "GreaterOrEqual": "LessOrEqual"}[node.op]
    elif b.name in view.unreadable or a.name in view.unreadable:  # maybe 0: say why it is unknown
        zero = b if b.name in view.unreadable else a
        tensor, op = (a if zero is b else b), node.op
        unreadable = f"constant {zero.name}: {view.unreadable[zero.name]}"
    else:
        return None
    # the comparison's true set, then flipped by each Not (the complement includes NaN)
    side = "negative" if op in ("Less", "LessOrEqual") else "positive"
    includes_zero = op in ("LessOrEqual", "GreaterOrEqual")
    includes_nan = False
    if flips % 2:
        side = "positive" if side == "negative" else "negative"
        includes_zero, includes_nan = not includes_zero, True
    return tensor, side, includes_zero, includes_nan, nodes, zero, unreadable


def read_select(view: GraphView, where: gs.Node) -> Select | None:
    """``Where(cond(T, 0), then, else)`` as negative and positive branches, or None. Read once per
    Where (every Where-anchored rule, and a Mul-anchored one reading a Where, asks)."""
    memo = view.memo("read_select")
    hit = memo.get(id(where))
    if hit is None:
        hit = memo[id(where)] = (where, _read_select(view, where))
    return hit[1]


def _read_select(view: GraphView, where: gs.Node) -> Select | None:
    if len(where.inputs) != 3:
        return None
    cond = read_condition(view, where.inputs[0])
    if cond is None:
        return None
    tensor, side, zero, nan, nodes, const, unreadable = cond
    then, else_ = where.inputs[1], where.inputs[2]
    if side == "negative":
        return Select(tensor, then, else_, zero, nan, nodes, const, unreadable)
    # the negative branch is taken where the condition is false: the complement
    return Select(tensor, else_, then, not zero, not nan, nodes, const, unreadable)


def boundary_notes(sel: Select, at_zero_differs: bool, what: str) -> list[str]:
    notes = []
    if sel.includes_zero and at_zero_differs:
        notes.append(f"boundary: at {what} == 0 the original takes the negative branch (alpha*dY), EluGrad gives dY")
    if sel.includes_nan:
        notes.append(f"where {what} is NaN the original takes the negative branch (NaN), EluGrad gives dY")
    return notes


# -- products of factors -----------------------------------------------------------------------
@dataclass
class Factors:
    """A tensor as a product: non-constant leaves (a multiset, by identity) times constants."""

    leaves: list
    consts: list  # (tensor or None for a Neg, value as float64)
    nodes: list


def factors(view: GraphView, tensor, limit: int = 16) -> Factors:
    """The factors of a tree of Mul (and Neg) nodes; Identity looked through."""
    out = Factors([], [], [])
    stack = [tensor]
    while stack:
        t = view.strip(stack.pop())
        value = view.uniform(t)
        if value is not None:
            out.consts.append((t, float(value)))
            continue
        node = view.producer_op(t, "Mul", "Neg")
        if node is not None and len(out.nodes) < limit:
            out.nodes.append(node)
            if node.op == "Neg":
                out.consts.append((None, -1.0))
                stack.append(node.inputs[0])
            elif len(node.inputs) == 2:
                stack.extend(node.inputs)
            else:
                out.leaves.append(t)
            continue
        out.leaves.append(t)
    return out


def extra_factors(view: GraphView, negative: Factors, positive: Factors) -> tuple[list, float] | str:
    """``(leaves, constant)``: what ``negative`` multiplies ``positive`` by, or the reason it
    does not contain every factor of ``positive`` (factors compared by value key)."""
    leaves = list(negative.leaves)
    keys = [view.value_key(t) for t in leaves]
    for leaf in positive.leaves:
        key = view.value_key(leaf)
        for i, cand in enumerate(keys):
            if cand == key:
                del leaves[i], keys[i]
                break
        else:
            return f"the positive branch's factor {leaf.name} is not a factor of the negative branch"
    consts = list(negative.consts)
    k = 1.0
    for tensor, value in positive.consts:
        for i, (cand, cand_value) in enumerate(consts):
            if (tensor is not None and cand is tensor) or cand_value == value:
                del consts[i]
                break
        else:
            k /= value
    for _, value in consts:
        k *= value
    return leaves, k


def dtype_of_site(view: GraphView, site: EluSite, tensors) -> str | None:
    """The one dtype of ``tensors`` (float32/float16/bfloat16), or None with a reason recorded."""
    names = {view.dtype_name(t) for t in tensors}
    if len(names) == 1 and None not in names:
        return names.pop()
    site.caps["dtype_reason"] = ("cannot determine the dtype of the gradient (float32/float16/bfloat16 "
                                 f"expected; found {sorted(str(n) for n in names)})")
    return None


def elu_for_input(view: GraphView, x, alpha: np.float32) -> tuple[gs.Node | None, str | None]:
    """The Elu-like node reading ``x`` with ``alpha`` (first in graph order), else the reason."""
    elus = elu_like_consumers(view, x)
    for elu in elus:
        if elu_alpha(elu) == alpha:
            return elu, None
    if not elus:
        return None, f"{x.name} does not feed an Elu node (in this graph or an enclosing one)"
    alphas = ", ".join(repr(float(str(elu_alpha(e)))) for e in elus)
    return None, f"no Elu of {x.name} has alpha {float(str(alpha))!r} (its Elus have alpha {alphas})"


def finish(view: GraphView, site: EluSite) -> str | None:
    """Checks every rule shares, once grads / activations / output / dtype are set: dtypes
    agree, shapes are equal (or can be made so), float16 arithmetic noted."""
    if site.dtype is None:
        return site.caps.get("dtype_reason", "cannot determine the dtype of the gradient "
                                             "(float32/float16/bfloat16 expected)")
    for role, tensor in (("grads", site.grads), ("activations", site.activations)):
        dtype = view.dtype_name(tensor)
        if dtype != site.dtype:
            return f"{role} {tensor.name} has dtype {dtype}, expected {site.dtype}"
    reason = shapes(view, site)
    if reason:
        return reason
    if site.dtype != "float32" and not site.caps.get("wrapped", True):
        site.exact = False
        site.notes.append(
            f"the original computes in {site.dtype} arithmetic (rounded after every op); "
            "EluGrad computes in float32 and rounds once"
        )
    return None


def shapes(view: GraphView, site: EluSite) -> str | None:
    """grads, activations and output have one shape; else Expand them (constant shape when
    known, ``Shape`` of each other when not and nothing else can broadcast), or the reason.

    When every constant of the pattern is a scalar (``only_scalar_consts``) the ELU rules'
    result is the broadcast of grads and activations (the select's branches are products of the
    gradient's factors, the ELU factor of the activations' shape and scalars; the condition
    compares the activations' shape with a scalar), so equal operand shapes need no look at it."""
    g, a = view.shape(site.grads), view.shape(site.activations)
    if g is not None and g == a and site.caps.get("only_scalar_consts"):
        return None
    out = view.shape(site.output)
    if g is not None and a is not None:
        if g == a and (out is None or out == g):
            return None
        target = _broadcast(g, a)
        if target is None or not all(isinstance(d, int) for d in target):
            return (f"grads {site.grads.name} {list(g)} and activations {site.activations.name} {list(a)} "
                    "cannot be broadcast to one static shape")
        if out is not None and out != target:
            return (f"the result has shape {list(out)}, not the broadcast {list(target)} of grads and activations "
                    "(another operand broadcasts too)")
        site.broadcast = target
        site.notes.append(f"grads {list(g)} and activations {list(a)} are expanded to {list(target)}")
        return None
    if site.caps.get("only_scalar_consts"):
        site.broadcast = "dynamic"
        site.notes.append("shapes unknown: grads and activations are expanded to each other's shape")
        return None
    which = site.grads.name if g is None else site.activations.name
    return (f"the shape of {which} is unknown and a constant of the pattern is not a scalar, so the "
            "result's shape cannot be shown to be the operands'")


def _broadcast(a: tuple, b: tuple) -> tuple | None:
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            return None
    return tuple(out)


def scalar_consts(view: GraphView, tensors) -> bool:
    """Every tensor is a rank-0 constant (cannot make a broadcast result larger)."""
    for t in tensors:
        if t is None:
            continue
        value = view.const(t)
        if value is not None:
            if value.ndim != 0:
                return False
            continue
        shape = t.shape if isinstance(t, gs.Constant) else view.shape(t)
        if shape is None or len(shape) != 0:
            return False
    return True


def resolve_wrapped(view: GraphView, site: EluSite, out_tensor) -> gs.Node | None:
    """The ``Cast(.., to=FLOAT16|BFLOAT16)`` that is the only use of ``out_tensor``, if any."""
    down = view.downcast_consumer(out_tensor)
    return None if down is None else down[0]


def wrapped_dtype(cast: gs.Node) -> str:
    return DTYPE_NAMES[cast.attrs.get("to")]


FLOAT = TensorProto.FLOAT
__all__ = ["COMPARISON_OPS", "EluSite", "Factors", "ROUNDING_NOTE", "Select", "boundary_notes", "dtype_of_site",
           "elu_alpha", "elu_for_input", "elu_grad_nodes", "elu_like_consumers", "elu_of", "extra_factors", "factors",
           "finish", "node_label", "read_condition", "read_select", "resolve_wrapped", "scalar_consts",
           "wrapped_dtype"]
