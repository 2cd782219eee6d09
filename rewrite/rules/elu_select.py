"""The analysis the select-based rules share: a negative branch that is the positive branch (the
upstream gradient) times one ELU factor, read in float32 or as a Cast-wrapped float16/bfloat16
site. See :mod:`ort_ops.rewrite.rules.base` for why this is what the ELU backward computes.

``kind`` is ``"input"`` (the factor is ``exp(X)`` with constants multiplying to alpha, and an
Elu of X supplies Y) or ``"output"`` (the factor is ``T + alpha``: EluGrad's own formula, T read
as the activations).
"""

from __future__ import annotations

import numpy as np
import onnx_graphsurgeon as gs

from ort_ops.rewrite.graph_view import GraphView, is_default_domain
from ort_ops.rewrite.rules.base import (
    ROUNDING_NOTE,
    EluSite,
    Select,
    boundary_notes,
    dtype_of_site,
    elu_alpha,
    elu_for_input,
    elu_grad_nodes,
    elu_of,
    extra_factors,
    finish,
    read_select,
    resolve_wrapped,
    scalar_consts,
    wrapped_dtype,
)
from ort_ops.rewrite.rules.rule import Rule


def analyze(view: GraphView, site: EluSite, sel: Select, kind: str, grads_tensor, *,
            positive_is_one: bool = False) -> str | None:
    """Fill ``site`` (grads, activations, alpha, dtype, output, notes) or return the reason.

    ``grads_tensor``: the upstream gradient EluGrad reads (the positive branch for a Where, the
    other operand of a ``Mul(dY, Where(.., 1))``). Tries the Cast-wrapped reading first (a
    float16/bfloat16 EluGrad) when the result's only use is a Cast to 16 bits, then float32.
    """
    if sel.unreadable:
        return sel.unreadable
    cast = resolve_wrapped(view, site, site.root.outputs[0])
    attempts = [True, False] if cast is not None else [False]
    first_reason = None
    for wrapped in attempts:
        # each reading fills a copy: a rejected site reports what the pattern captured
        trial = EluSite(site.rule, site.root, list(site.nodes), caps=dict(site.caps))
        reason = _interpret(view, trial, sel, kind, grads_tensor, cast if wrapped else None, positive_is_one)
        if reason is None:
            site.__dict__.update(trial.__dict__)
            return None
        first_reason = first_reason or reason
    return first_reason


def _interpret(view: GraphView, site: EluSite, sel: Select, kind: str, grads_tensor, cast,
               positive_is_one: bool) -> str | None:
    neg, pos = sel.factors(view, "negative"), sel.factors(view, "positive")
    site.nodes += neg.nodes
    if not positive_is_one and not pos.leaves:
        return "the positive branch is a constant, not an upstream gradient"
    if positive_is_one and (pos.leaves or [v for _, v in pos.consts] not in ([1.0], [])):
        return "the Where's positive branch is not the constant 1"
    extra = extra_factors(view, neg, pos)
    if isinstance(extra, str):
        return extra
    leaves, k = extra
    if len(leaves) != 1:
        names = ", ".join(t.name for t in leaves) or "none"
        return (f"the negative branch must be the positive branch times one ELU factor (exp(X) or Y + alpha); "
                f"its other factors are: {names}")
    special = leaves[0]
    compared = view.strip(sel.compared)
    consts = [t for t, _ in neg.consts + pos.consts] + [sel.zero]
    if kind == "input":
        exp = view.producer_op(special, "Exp")
        if exp is None:
            return f"the ELU factor {special.name} is not Exp(X)"
        site.nodes.append(exp)
        if view.value_key(exp.inputs[0]) != view.value_key(compared):
            return f"Exp reads {exp.inputs[0].name}, which is not the compared tensor {compared.name}"
        alpha = np.float32(k)
    else:
        found = _plus_constant(view, special)
        if found is None:
            return f"the ELU factor {special.name} is not Y + alpha (an Add or Sub of a constant)"
        add, read, alpha, const = found
        consts.append(const)
        site.nodes.append(add)
        if not _same_values(view, read, compared):
            return f"{add.op} reads {read.name}, which is not the compared tensor {compared.name}"
        if np.float32(k) != ONE:
            return f"the negative branch has an extra constant factor {float(np.float32(k))!r}"
    site.caps["only_scalar_consts"] = scalar_consts(view, consts)
    grads = view.strip(grads_tensor)
    if cast is not None:  # Cast-wrapped: EluGrad reads the 16-bit tensors the float32 math upcasts
        site.caps["wrapped"] = True
        grads = view.upcast_source(grads_tensor)
        source = view.upcast_source(compared)
        if grads is None or source is None:
            return (f"a {wrapped_dtype(cast)} site needs the gradient and the compared tensor to be "
                    f"Cast(.., to=FLOAT) of {wrapped_dtype(cast)} tensors")
        site.nodes.append(cast)
        site.output = cast.outputs[0]
    else:
        site.caps["wrapped"] = False
        source = compared
        site.output = site.root.outputs[0]
    if kind == "input":
        elu, reason = elu_for_input(view, source, alpha)
        if elu is None:
            return reason
        if _is_selu(view, elu):
            return (f"{elu.outputs[0].name} is the Elu inside a SELU (alpha {float(str(SELU_ALPHA))}, then scaled by "
                    f"{float(str(SELU_SCALE))}): SELU's backward is not ELU's and is left as it is")
        site.forward = elu
        activations = elu.outputs[0]
        site.exact = False
        site.notes.append(ROUNDING_NOTE + (f" (Y is rounded to {wrapped_dtype(cast)} before EluGrad reads it)"
                                           if cast is not None else ""))
        site.notes += boundary_notes(sel, alpha != ONE, "X")
    else:
        activations = source
        elu = elu_of(view, source)
        site.forward = elu
        differs_at_zero = alpha != ONE
        if sel.includes_zero and differs_at_zero and (elu is None or elu_alpha(elu) != alpha):
            return (f"the comparison includes 0 and alpha is {float(str(alpha))!r}: the original gives alpha*dY where "
                    f"{compared.name} is 0, EluGrad gives dY, and {compared.name} is not the output of an Elu with "
                    "that alpha (where it is 0 only for X == 0)")
        notes = boundary_notes(sel, differs_at_zero, "Y")
        if notes:
            site.exact = False
            site.notes += notes
    if positive_is_one:
        site.exact = False
        site.notes.append("the original multiplies dY by 1 where Y >= 0 (a signalling-NaN dY comes out quiet); "
                          "EluGrad copies dY")
    site.grads, site.activations, site.alpha = grads, activations, float(alpha)
    site.dtype = wrapped_dtype(cast) if cast is not None else dtype_of_site(view, site, [grads, activations,
                                                                                          site.output])
    return finish(view, site)


ONE = np.float32(1)

# SELU = scale * Elu(x, alpha) with these constants (Klambauer et al.); PyTorch exports it as an
# Elu followed by a Mul, and its backward as ELU's with dY scaled.
SELU_ALPHA = np.float32(1.6732632423543772848170429916717)
SELU_SCALE = np.float32(1.0507009873554804934193349852946)


def _is_selu(view: GraphView, elu) -> bool:
    if elu_alpha(elu) != SELU_ALPHA:
        return False
    for user in view.consumers(elu.outputs[0]):
        if user.op == "Mul" and is_default_domain(user) and len(user.inputs) == 2:
            other = user.inputs[1] if user.inputs[0] is elu.outputs[0] else user.inputs[0]
            if view.uniform(other) == SELU_SCALE:
                return True
    return False


def _plus_constant(view: GraphView, tensor):
    """``(node, other operand, alpha, constant)`` for ``Add(v, c)``, ``Add(c, v)``, ``Sub(v, c)``."""
    node = view.producer_op(tensor, "Add", "Sub")
    if node is None or len(node.inputs) != 2:
        return None
    a, b = node.inputs
    pairs = [(a, b, 1.0), (b, a, 1.0)] if node.op == "Add" else [(a, b, -1.0)]
    for value, const, sign in pairs:
        c = view.uniform(const)
        if c is not None and view.uniform(value) is None:
            return node, view.strip(value), np.float32(sign * float(c)), const
    return None


def _same_values(view: GraphView, a, b) -> bool:
    """``a`` and ``b`` hold the same values at the same positions: the same tensor, or views of
    the same source with one static shape."""
    if view.value_key(a) == view.value_key(b):
        return True
    if view.view_source(a) is not view.view_source(b):
        return False
    sa, sb = view.shape(a), view.shape(b)
    return sa is not None and sa == sb


def where_rule(name: str, *, kind: str, negative_ops: tuple[str, ...], needed, doc: str) -> Rule:
    """The rule ``name`` on ``Where(cmp(T, 0), a, b)`` whose negative side has a factor produced by
    one of ``negative_ops``, analysed as the ELU backward of ``kind`` ("input": it reads X;
    "output": it reads Y) and replaced by ``EluGrad``; ``needed``: the op types the graph must have."""

    def pattern(view: GraphView, where: gs.Node) -> EluSite | None:
        # the negative branch's factors (through Mul / Neg trees and what strip() looks through)
        # can include an op of negative_ops only if a branch is made by one of them
        if not view.may_read_from(where, (*negative_ops, "Neg")):
            return None
        sel = read_select(view, where)
        if sel is None or not any(view.producer_op(t, *negative_ops) for t in sel.factors(view, "negative").leaves):
            return None
        site = EluSite(name, root=where, nodes=[where, *sel.nodes])
        site.caps["select"] = sel
        return site

    def check(view: GraphView, site: EluSite) -> str | None:
        sel = site.caps["select"]
        return analyze(view, site, sel, kind, sel.positive)

    return Rule(name, "Where", pattern, check, elu_grad_nodes, needed, doc)
