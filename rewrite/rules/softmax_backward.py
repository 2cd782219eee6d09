"""``t - ReduceSum(t, [axis]) * Y, t = dY * Y  ->  ai.ortops::SoftmaxGrad(dY, Y){axis}``, Y a Softmax's output.

PyTorch's joint-graph export of ``F.softmax`` / ``nn.Softmax`` (``_softmax_backward_data``)::

    t = Mul(dY, Y);  s = ReduceSum(t, axes=[axis], keepdims=1);  dX = Sub(t, Mul(s, Y))

and the factored spelling ``dX = Mul(Y, Sub(dY, s))`` (s the same sum). Either Mul may have its
operands in either order; the ReduceSum's axes are an input (opset 13+) or its attribute. Y must be
the output of a Softmax over the axis the sum reduces (opset 13+: one axis; before 13 a Softmax
flattens the dims from its axis, which agrees only for the last axis).

Semantics: SoftmaxGrad is ``t - sum(t, axis) * Y`` in float32 with one rounding (CANN's golden):
the original's math in float32 save the order of the sum (ONNX Runtime's ReduceSum sums in its own
order) and, for the factored spelling, the order of the subtraction; in float16 / bfloat16 the
original rounds t, the sum and the product in that type, the op once. Not exact: ``strict=True``
leaves the site.

Refused, with the reason in the report: a sum over another axis or several, keepdims=0, dY and Y of
different shapes or dtypes (or unknown ones), a Softmax over an earlier axis of an opset < 13 graph.
Not sites at all: Y not a Softmax's output, the Sub's operands the other way round, a sum of
another product than the Sub's (or the Mul's) own.
"""

from __future__ import annotations

import onnx_graphsurgeon as gs

from ort_ops import DOMAIN
from ort_ops.rewrite.graph_view import GraphView, node_label
from ort_ops.rewrite.rules.rule import Rule, Site, needs
from ort_ops.rewrite.rules.subgraph import attr, axes_of

NAME = "softmax_backward"
FACTORED_NAME = "softmax_backward_factored"  # the Mul-anchored spelling (its own module's RULE)
OP = "SoftmaxGrad"
SUM_ORDER_NOTE = ("SoftmaxGrad sums t along the axis in increasing order in float32 and rounds once; the original "
                  "sums in ONNX Runtime's ReduceSum order (and, in float16 / bfloat16, rounds t, the sum and the "
                  "product in that type): equal within float32 rounding, not bit for bit")


def _other(mul: gs.Node, tensor) -> object | None:
    """The operand of two-input ``mul`` that is not ``tensor`` (None if ``tensor`` is not one of them)."""
    if len(mul.inputs) != 2:
        return None
    if mul.inputs[0] is tensor:
        return mul.inputs[1]
    if mul.inputs[1] is tensor:
        return mul.inputs[0]
    return None


def _softmax_of(view: GraphView, mul: gs.Node) -> tuple[object, gs.Node] | None:
    """(Y, the Softmax) for a two-input Mul one of whose operands is a Softmax's output."""
    for y in mul.inputs:
        softmax = view.producer_op(y, "Softmax")
        if softmax is not None:
            return y, softmax
    return None


def pattern(view: GraphView, root: gs.Node) -> Site | None:
    """``Sub(t, Mul(s, Y))`` or ``Mul(Y, Sub(dY, s))`` with ``t = Mul(dY, Y)``, ``s = ReduceSum(t)``."""
    if len(root.inputs) != 2:
        return None
    if root.op == "Sub":  # t - s * Y
        t_mul = view.producer_op(root.inputs[0], "Mul")
        u_mul = view.producer_op(root.inputs[1], "Mul")
        if t_mul is None or u_mul is None or len(t_mul.inputs) != 2:
            return None
        found = _softmax_of(view, t_mul)
        if found is None:
            return None
        y, softmax = found
        s = _other(u_mul, y)
        dy = _other(t_mul, y)
        reduce = view.producer_op(s, "ReduceSum") if s is not None else None
        if dy is None or reduce is None or not reduce.inputs or reduce.inputs[0] is not root.inputs[0]:
            return None
        nodes, spelling = [root, t_mul, u_mul, reduce], "t - sum(t) * Y"
    else:  # Y * (dY - s)
        sub = next((view.producer_op(t, "Sub") for t in root.inputs if view.producer_op(t, "Sub") is not None), None)
        if sub is None or len(sub.inputs) != 2:
            return None
        y = _other(root, sub.outputs[0])
        softmax = view.producer_op(y, "Softmax") if y is not None else None
        dy, s = sub.inputs
        reduce = view.producer_op(s, "ReduceSum")
        t_mul = view.producer_op(reduce.inputs[0], "Mul") if reduce is not None and reduce.inputs else None
        if softmax is None or t_mul is None or _other(t_mul, y) is not dy:
            return None
        nodes, spelling = [root, sub, reduce, t_mul], "Y * (dY - sum(dY * Y))"
    site = Site(NAME if root.op == "Sub" else FACTORED_NAME, root=root, nodes=nodes, op=OP, output=root.outputs[0])
    site.caps.update(dy=dy, y=y, softmax=softmax, reduce=reduce, spelling=spelling)
    return site


def _onnx_opset(view: GraphView) -> int | None:
    model = view.model
    if model is None:
        return None
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)


def check(view: GraphView, site: Site) -> str | None:
    c = site.caps
    dy, y, softmax, reduce = c["dy"], c["y"], c["softmax"], c["reduce"]
    dtype = view.dtype_name(y)
    if dtype is None:
        return f"Y {y.name} has dtype {view.elem_type(y)}, not one of float32, float16, bfloat16 (or it is unknown)"
    if view.dtype_name(dy) != dtype:
        return f"dY {dy.name} has dtype {view.dtype_name(dy)}, Y {y.name} has {dtype}"
    if view.dtype_name(site.output) not in (None, dtype):
        return f"the result {site.output.name} has dtype {view.dtype_name(site.output)}, Y {y.name} has {dtype}"
    shape, dy_shape, out_shape = view.shape(y), view.shape(dy), view.shape(site.output)
    if shape is None or dy_shape != shape or (out_shape is not None and out_shape != shape):
        return (f"dY {dy.name} {dy_shape}, Y {y.name} {shape} and the result {out_shape} are not one known shape "
                "(SoftmaxGrad does not broadcast)")
    rank = len(shape)
    if rank == 0:
        return f"Y {y.name} is a scalar: a Softmax has an axis"
    opset = _onnx_opset(view)
    axis = attr(softmax, "axis", -1 if opset is None or opset >= 13 else 1)
    if not -rank <= axis < rank:
        return f"{node_label(softmax)} has axis {axis}, out of range for Y {list(shape)}"
    axis %= rank
    if axis != rank - 1 and (opset is None or opset < 13):
        return (f"{node_label(softmax)} (opset {opset}) normalises the dims from axis {axis} together, not one axis: "
                "SoftmaxGrad reduces one")
    axes = axes_of(view, reduce)
    if axes is None or len(axes) != 1:
        return f"{node_label(reduce)} reduces axes {axes}: SoftmaxGrad reduces the Softmax's one axis ({axis})"
    if axes[0] % rank != axis:
        return f"{node_label(reduce)} reduces axis {axes[0]}, the Softmax {node_label(softmax)} axis {axis}"
    if attr(reduce, "keepdims", 1) != 1:
        return f"{node_label(reduce)} has keepdims=0: the sum is not broadcast back along the axis"
    site.operands = {"grads": dy, "activations": y}
    site.dtype = dtype
    site.attributes = {"axis": axis}
    site.exact = False
    site.notes.append(SUM_ORDER_NOTE)
    site.forward = softmax
    return None


def replacement(view: GraphView, site: Site, name: str) -> list:
    return [gs.Node(OP, name, domain=DOMAIN, attrs={"axis": int(site.attributes["axis"])},
                    inputs=[site.operands["grads"], site.operands["activations"]], outputs=[site.output])]


RULE = Rule(NAME, "Sub", pattern, check, replacement, needs("Mul", "ReduceSum", "Softmax"), __doc__.splitlines()[0])
