"""``squared error + its backward -> ai.ortops::MseLossAndGrad(prediction, target, 1)``.

PyTorch's export of ``F.mse_loss(prediction, target)`` ("mean" or "sum") with its backward::

    d     = Sub(prediction, target)
    loss  = Squeeze(ReduceMean(Pow(d, 2), keepdims=1))      ("sum": ReduceSum(Pow(d, 2), keepdims=0))
    grad  = Mul(d, c)                                       (c = 2 / N for "mean", 2 for "sum": the
                                                             loss gradient 1 folded into the constant)

Without the onnxscript optimiser the backward recomputes ``d`` with a second Sub of the same
inputs and multiplies by the loss gradient spelled from the loss's shape,
``Mul(Mul(d', c), Expand(CastLike(1, loss), Shape(loss)))``. A float16 / bfloat16 export upcasts:
``d = Sub(Cast(prediction, FLOAT), Cast(target, FLOAT))``, ``loss`` and ``grad`` each read only by a
``Cast`` back to the dtype: the node then takes and gives that dtype.

Becomes one node producing ``loss`` and the gradient (names kept), ``dloss`` the constant 1.

Refused, with the reason in the report: a reduction that is not over every element (``"none"``,
one axis), a target whose shape is not the prediction's (a broadcast target) or unknown, a
gradient scale other than 2 / N or 2 (a loss gradient other than 1 folded into the constant), a
difference or square also read outside the pattern, a dtype other than float32 without the
exporter's upcast. An L1 loss or another power does not start the pattern (no ``Pow(d, 2)``).
``0.5 * F.mse_loss`` fuses: the exporter multiplies the loss and ``Mul(d, 2 / N)`` by 0.5 after them.

Semantics: the gradient is bit-exact (float32 ``(d * float32(2 / N)) * 1``, rounded once, as the
exporter's Mul and Cast); the loss is within the float32 tolerance (the op multiplies its sum by
1 / N, ORT's ReduceMean adds in its own order and divides).
"""

from __future__ import annotations

import numpy as np
import onnx_graphsurgeon as gs
from onnx import TensorProto

from ort_ops import DOMAIN, dtypes
from ort_ops.ops.mse_loss_and_grad import gradient_scale
from ort_ops.rewrite.graph_view import GraphView
from ort_ops.rewrite.rules.rule import Rule, Site, needs
from ort_ops.rewrite.rules.subgraph import attr, axes_of, consumers_of, exclusive, producer

NAME = "mse_loss"
OP = "MseLossAndGrad"
NOTE = ("the gradient is bit-exact (float32 (d * float32(2 / N)) * 1, one rounding); the loss is within the float32 "
        "tolerance: the op adds the squares in element order and multiplies by 1 / N where ORT's ReduceMean adds in "
        "its own order (docs/ops/MseLossAndGrad.md)")
_HALF = {TensorProto.FLOAT16: "float16", TensorProto.BFLOAT16: "bfloat16"}


def pattern(view: GraphView, pow_node: gs.Node) -> Site | None:
    """``Pow(Sub(prediction, target), 2)`` whose difference (or a second Sub of the same inputs) is
    also multiplied by a constant: the squared error and its backward."""
    if len(pow_node.inputs) != 2 or not view.is_scalar(pow_node.inputs[1], 2.0):
        return None
    sub = producer(view, pow_node.inputs[0], "Sub")
    if sub is None or len(sub.inputs) != 2:
        return None
    subs = [sub] + [s for s in consumers_of(view, sub.inputs[0], "Sub")
                    if s is not sub and list(s.inputs) == list(sub.inputs)]
    grads = [(s, m) for s in subs for m in consumers_of(view, s.outputs[0], "Mul")
             if len(m.inputs) == 2 and view.scalar(m.inputs[1 if m.inputs[0] is s.outputs[0] else 0]) is not None]
    if len(grads) != 1:
        return None
    (grad_sub, grad_mul), = grads
    site = Site(NAME, root=grad_mul, nodes=list({id(n): n for n in (sub, grad_sub, pow_node, grad_mul)}.values()),
                op=OP)
    site.caps.update(sub=sub, grad_sub=grad_sub, pow=pow_node, grad_mul=grad_mul)
    site.forward = pow_node
    return site


def _only_reader(view: GraphView, tensor) -> gs.Node | None:
    readers = view.consumers(tensor)
    return readers[0] if len(readers) == 1 and tensor.name not in view.output_names else None


def _reduction(view: GraphView, pow_node: gs.Node, rank: int):
    """``(reduction, loss, nodes)`` of the reduction of the squares over every element to a
    scalar, or the reason it is not one."""
    red = _only_reader(view, pow_node.outputs[0])
    if red is None or red.op not in ("ReduceMean", "ReduceSum"):
        readers = ", ".join(n.op for n in view.consumers(pow_node.outputs[0])) or "nothing"
        return f"the squares are read by {readers}, not by one ReduceMean / ReduceSum (reduction \"none\"?)"
    axes = axes_of(view, red)
    if axes is None:
        return f"the {red.op}'s axes are not a constant"
    if axes and sorted(a % rank for a in axes) != list(range(rank)):
        return f"the {red.op} reduces axes {axes} of {rank}, not every element"
    if not axes and attr(red, "noop_with_empty_axes", 0) != 0:
        return f"the {red.op} has no axes and noop_with_empty_axes=1: it reduces nothing"
    nodes, loss = [red], red.outputs[0]
    if attr(red, "keepdims", 1) != 0 and rank > 0:
        squeeze = _only_reader(view, loss)
        if squeeze is None or squeeze.op not in ("Squeeze", "Reshape") or view.shape(squeeze.outputs[0]) != ():
            return f"the {red.op} keeps its dims and its result is not squeezed to the scalar loss"
        nodes.append(squeeze)
        loss = squeeze.outputs[0]
    return ("mean" if red.op == "ReduceMean" else "sum"), loss, nodes


def _upcast_source(view: GraphView, tensor):
    """The float16 / bfloat16 tensor ``tensor`` is ``Cast(.., FLOAT)`` of, and its dtype; else None."""
    cast = producer(view, tensor, "Cast")
    if cast is None or attr(cast, "to") != TensorProto.FLOAT:
        return None
    dtype = _HALF.get(view.elem_type(cast.inputs[0]))
    return None if dtype is None else (cast.inputs[0], dtype, cast)


def _downcast(view: GraphView, tensor, dtype: str) -> gs.Node | None:
    cast = _only_reader(view, tensor)
    ok = cast is not None and cast.op == "Cast" and attr(cast, "to") == dtypes.onnx_type_of(dtype)
    return cast if ok else None


def check(view: GraphView, site: Site) -> str | None:
    sub, pow_node, grad_mul = site.caps["sub"], site.caps["pow"], site.caps["grad_mul"]
    prediction, target = sub.inputs
    shape, target_shape = view.shape(prediction), view.shape(target)
    if shape is None or any(not isinstance(d, int) for d in shape):
        return f"the prediction {prediction.name} has shape {shape}: not known statically (N for 2 / N)"
    if target_shape != shape:
        return (f"the target {target.name} has shape {target_shape}, not the prediction's {list(shape)} (a broadcast "
                "target: MseLossAndGrad takes equal shapes)")
    found = _reduction(view, pow_node, len(shape))
    if isinstance(found, str):
        return found
    reduction, loss, reduce_nodes = found
    count = int(np.prod(shape, dtype=np.int64))
    if count == 0:
        return "the prediction is empty"
    scale_input = grad_mul.inputs[1] if grad_mul.inputs[0] is site.caps["grad_sub"].outputs[0] else grad_mul.inputs[0]
    scale = view.scalar(scale_input)
    want = gradient_scale(reduction, count)
    if view.dtype_name(scale_input) != "float32" or np.float32(scale) != want:
        return (f"the gradient's scale {scale_input.name} = {float(scale)!r} is not {reduction}'s {float(want)!r} "
                f"(2 / N, N = {count}, or 2): not F.mse_loss's gradient with loss gradient 1 (a scaled loss?)")
    grad, nodes = grad_mul.outputs[0], [*site.nodes, *reduce_nodes]
    unit = _only_reader(view, grad)  # the unoptimised spelling's Mul by the loss gradient (1)
    if unit is not None and unit.op == "Mul" and len(unit.inputs) == 2:
        other = unit.inputs[1] if unit.inputs[0] is grad else unit.inputs[0]
        if view.is_one(other):
            nodes.append(unit)
            grad = unit.outputs[0]
    dtype, shared = view.dtype_name(prediction), []
    if dtype != "float32":
        return f"the prediction {prediction.name} is {dtype}: the rule takes float32 or the exporter's float32 upcast"
    ups = [_upcast_source(view, t) for t in (prediction, target)]
    if all(ups) and ups[0][1] == ups[1][1]:
        half = ups[0][1]
        casts = [_downcast(view, loss, half), _downcast(view, grad, half)]
        if all(casts):
            (prediction, _, c0), (target, _, c1) = ups
            shared += [c0.outputs[0], c1.outputs[0]]
            nodes += casts
            loss, grad, dtype = casts[0].outputs[0], casts[1].outputs[0], half
    reason = exclusive(view, nodes, [loss, grad], shared_ok=shared)
    if reason is not None:
        return reason
    site.nodes = nodes
    site.output, site.outputs = grad, [loss]
    site.dtype, site.exact = dtype, False
    site.attributes = {"reduction": reduction}
    site.operands = {"grads": None, "activations": prediction}
    site.caps.update(prediction=prediction, target=target)
    site.notes.append(NOTE)
    return None


def replacement(view: GraphView, site: Site, name: str) -> list:
    (loss,) = site.outputs
    dloss = gs.Constant(f"{name}/dloss", np.array(1.0, dtypes.numpy_dtype(site.dtype)))
    return [gs.Node(OP, name, domain=DOMAIN, attrs=dict(site.attributes),
                    inputs=[site.caps["prediction"], site.caps["target"], dloss], outputs=[loss, site.output])]


RULE = Rule(NAME, "Pow", pattern, check, replacement, needs("Sub", "Mul", ("ReduceMean", "ReduceSum")),
            __doc__.splitlines()[0])
