"""``MaxPool indices + ScatterElements(add) backward -> ai.ortops::MaxPoolGrad(X, Y, dY)``.

PyTorch's export of ``nn.MaxPool2d`` / ``F.max_pool2d`` (``max_pool2d_with_indices`` and its
backward) on NCHW tensors::

    Y, I   = MaxPool(X){kernel_shape, strides, pads}                   (I: indices into all of X)
    _, I1  = MaxPool(X){kernel_shape=[1, 1]}                           (I1: every element's index)
    Ip     = Sub(I, Slice(I1, starts=[0, 0], ends=[1, 1], axes=[2, 3]))    per-plane indices
    dX     = Reshape(ScatterElements(zeros [N*C, H*W], Reshape(Ip, [N*C, Ho*Wo]),
                                     Reshape(dY, [N*C, Ho*Wo]), axis=1, reduction="add"), [N, C, H, W])

becomes ``dX = MaxPoolGrad(X, Y, dY){kernel_shape, strides, pads}`` (dY read as ``[N, C, Ho, Wo]``,
through a Reshape when the graph holds it in another shape) and the forward MaxPool loses its
Indices output (ORT then runs its index-free MaxPool). The 1x1 MaxPool, Slice and Sub go.

Refused, with the reason in the report: the indices (I or Ip) also read by anything else (e.g.
``return_indices=True`` used by the model), pooling attributes MaxPoolGrad does not have
(``ceil_mode``, ``dilation`` != 1, ``storage_order``, ``auto_pad``), a per-plane offset that is not
the 1x1 MaxPool of the same X, a scatter that is not into zeros, unknown or non-4-D shapes, or
dtypes that differ.

Semantics (``docs/ops/MaxPoolGrad.md``): MaxPoolGrad routes each window's gradient to its first
element equal to Y; ORT's MaxPool index is that element (its first element when it is NaN, else the
first largest). So the gradients are bit-identical in float32, except that without the Indices
output ORT computes Y with MLAS, which treats NaNs by another rule: where a window holds a NaN, Y and
the element that gets the gradient can change. In float16/bfloat16 the original sums overlapping windows' gradients in
that type, MaxPoolGrad in float32 with one rounding. Not fused with ``strict=True``.
"""

from __future__ import annotations

import numpy as np
import onnx_graphsurgeon as gs

from ort_ops import DOMAIN
from ort_ops.rewrite.graph_view import VIEW_OPS, GraphView, node_label
from ort_ops.rewrite.rules.rule import Rule, Site, needs
from ort_ops.rewrite.rules.subgraph import attr, exclusive, ints, is_zero_constant, producer

NAME = "max_pool_backward"
OP = "MaxPoolGrad"
NAN_NOTE = ("without the Indices output ORT's CPU MaxPool computes Y with MLAS, which treats NaNs differently "
            "(the original's Y is NaN exactly when a window's first element is NaN, MLAS's when another position "
            "is): where a window holds a NaN, Y and the element that gets the gradient can differ; elsewhere "
            "the results are bit-identical in float32")


def pattern(view: GraphView, scatter: gs.Node) -> Site | None:
    """``ScatterElements(_, Reshape(Sub(MaxPool(X).Indices, _)), _, reduction="add")``."""
    if attr(scatter, "reduction", "none") != "add" or len(scatter.inputs) != 3:
        return None
    reshape = view.producer_op(scatter.inputs[1], "Reshape")
    sub = producer(view, reshape.inputs[0], "Sub") if reshape is not None else None
    pool = view.producer_op(sub.inputs[0], "MaxPool") if sub is not None and len(sub.inputs) == 2 else None
    if pool is None or len(pool.outputs) < 2 or pool.outputs[1] is not sub.inputs[0]:
        return None
    site = Site(NAME, root=scatter, nodes=[scatter, reshape, sub, pool], op=OP)
    site.caps.update(pool=pool, sub=sub, reshape=reshape)
    site.forward = pool
    return site


def _pool_attributes(pool: gs.Node) -> str | None:
    """Why ``pool`` is a MaxPool that MaxPoolGrad does not compute the backward of, or None."""
    kernel = attr(pool, "kernel_shape", [])
    if len(kernel) != 2:
        return f"{node_label(pool)} pools over {len(kernel)} dimension(s): MaxPoolGrad is 2-D (NCHW)"
    if attr(pool, "auto_pad", "NOTSET") not in ("NOTSET", ""):
        return f"{node_label(pool)} has auto_pad {attr(pool, 'auto_pad')}: MaxPoolGrad takes explicit pads only"
    if attr(pool, "ceil_mode", 0) != 0:
        return f"{node_label(pool)} has ceil_mode=1: MaxPoolGrad is defined for floor-mode pooling"
    if any(d != 1 for d in attr(pool, "dilations", [1, 1])):
        return f"{node_label(pool)} has dilations {list(attr(pool, 'dilations'))}: MaxPoolGrad has no dilation"
    if attr(pool, "storage_order", 0) != 0:
        return f"{node_label(pool)} has storage_order=1 (column-major indices)"
    return None


def _is_plane_offsets(view: GraphView, tensor, x) -> list | str:
    """The nodes of ``Slice(MaxPool(x){1x1}.Indices, [0, 0], [1, 1], axes [2, 3])`` (each plane's
    first index), or the reason ``tensor`` is not that."""
    why = f"the index offset {tensor.name} is not Slice(MaxPool(X){{1x1}}.Indices, [0, 0], [1, 1], axes [2, 3])"
    sl = producer(view, tensor, "Slice")
    if sl is None or len(sl.inputs) < 3:
        return why
    starts, ends = ints(view, sl.inputs[1]), ints(view, sl.inputs[2])
    axes = ints(view, sl.inputs[3]) if len(sl.inputs) > 3 else [0, 1]
    steps = ints(view, sl.inputs[4]) if len(sl.inputs) > 4 else [1, 1]
    if starts != [0, 0] or ends != [1, 1] or axes is None or [a % 4 for a in axes] != [2, 3] or steps != [1, 1]:
        return why
    ones = view.producer_op(sl.inputs[0], "MaxPool")
    if ones is None or len(ones.outputs) < 2 or ones.outputs[1] is not sl.inputs[0] or \
            view.value_key(ones.inputs[0]) != view.value_key(x):
        return why
    if list(attr(ones, "kernel_shape", [])) != [1, 1] or any(s != 1 for s in attr(ones, "strides", [1, 1])) or \
            any(p != 0 for p in attr(ones, "pads", [0, 0, 0, 0])) or attr(ones, "ceil_mode", 0) != 0 or \
            attr(ones, "storage_order", 0) != 0 or attr(ones, "auto_pad", "NOTSET") not in ("NOTSET", ""):
        return f"{node_label(ones)} is not a 1x1, stride-1, unpadded MaxPool: {why}"
    return [sl, ones]


def check(view: GraphView, site: Site) -> str | None:
    c = site.caps
    pool, sub, reshape, scatter = c["pool"], c["sub"], c["reshape"], site.root
    reason = _pool_attributes(pool)
    if reason:
        return reason
    x, y = pool.inputs[0], pool.outputs[0]
    xs, ys = view.shape(x), view.shape(y)
    if xs is None or ys is None or len(xs) != 4 or not all(isinstance(d, int) for d in (*xs, *ys)):
        return f"the shapes of {x.name} ({xs}) and {y.name} ({ys}) are not known 4-D NCHW shapes"
    n, ch, h, w = xs
    kernel = [int(k) for k in attr(pool, "kernel_shape")]
    strides = [int(s) for s in attr(pool, "strides", [1, 1])]
    pads = [int(p) for p in attr(pool, "pads", [0, 0, 0, 0])]
    ho, wo = ys[2], ys[3]
    if (h + pads[0] + pads[2] - kernel[0]) // strides[0] + 1 != ho or \
            (w + pads[1] + pads[3] - kernel[1]) // strides[1] + 1 != wo or ys[:2] != xs[:2]:
        return f"{y.name} {list(ys)} is not the floor-mode pooled shape of {x.name} {list(xs)}"
    if any(p >= k for p, k in zip(pads, kernel + kernel)):
        return f"pads {pads} are not smaller than kernel_shape {kernel}"
    offsets = _is_plane_offsets(view, sub.inputs[1], x)
    if isinstance(offsets, str):
        return offsets
    site.nodes += offsets
    users = view.consumers(pool.outputs[1])
    if len(users) != 1 or users[0] is not sub or pool.outputs[1].name in view.output_names:
        others = [node_label(u) for u in users if u is not sub] or ["the graph outputs"]
        return (f"the MaxPool indices {pool.outputs[1].name} are also read by {', '.join(others)}: they must stay "
                "(return_indices used by the model?)")
    plane = sub.outputs[0]
    others = [node_label(u) for u in view.consumers(plane) if u is not reshape]
    if others or plane.name in view.output_names:
        readers = ", ".join(others) or "the graph outputs"
        return (f"the per-plane MaxPool indices {plane.name} are also read by {readers}"
                ": they must stay (return_indices used by the model?)")
    data, index, updates = scatter.inputs
    flat_in, flat_out = (n * ch, h * w), (n * ch, ho * wo)
    if attr(scatter, "axis", 0) % 2 != 1 or view.shape(data) != flat_in or view.shape(index) != flat_out or \
            view.shape(updates) != flat_out:
        return (f"{node_label(scatter)} does not scatter [N*C, Ho*Wo] = {list(flat_out)} gradients into "
                f"[N*C, H*W] = {list(flat_in)} along axis 1")
    if not is_zero_constant(view, data):
        return f"{node_label(scatter)} does not scatter into zeros ({data.name})"
    dtype = view.dtype_name(x)
    dy = view.view_source(updates)
    for role, t in (("Y", y), ("dY", dy)):
        if view.dtype_name(t) != dtype or dtype is None:
            return f"{role} {t.name} has dtype {view.dtype_name(t)}, X {x.name} has {dtype} (float types, one dtype)"
    results = scatter.outputs[0]
    out_users = view.consumers(results)
    final = out_users[0] if len(out_users) == 1 and results.name not in view.output_names else None
    if final is not None and final.op == "Reshape" and view.shape(final.outputs[0]) == tuple(xs):
        site.nodes.append(final)
        results = final.outputs[0]
    else:
        site.caps["flat_output"] = flat_in
    reason = exclusive(view, [sub, reshape, scatter], [results, scatter.outputs[0]])
    if reason:
        return reason
    t = updates  # the view ops between dY and the scatter go too when nothing else reads them
    while (node := view.producer_op(t, *VIEW_OPS)) is not None and len(view.consumers(t)) == 1 and \
            t.name not in view.output_names:
        site.nodes.append(node)
        t = node.inputs[0]
    site.output, site.dtype = results, dtype
    site.operands = {"grads": dy, "activations": x}
    site.caps.update(x=x, y=y, dy=dy, dy_shape=None if view.shape(dy) == tuple(ys) else tuple(ys))
    site.drops = [offsets[1]]
    site.attributes = {"kernel_shape": kernel, "strides": strides, "pads": pads}
    site.exact = False
    site.notes.append(NAN_NOTE)
    if dtype != "float32" and (strides[0] < kernel[0] or strides[1] < kernel[1]):
        site.notes.append(f"overlapping windows: the original adds their gradients in {dtype} (ScatterElements), "
                          "MaxPoolGrad in float32 and rounds once")
    return None


def replacement(view: GraphView, site: Site, name: str) -> list:
    c = site.caps
    nodes, dy = [], c["dy"]
    if c["dy_shape"] is not None:  # the gradient as [N, C, Ho, Wo] (same elements, same order)
        shaped = gs.Variable(f"{name}/dY", dtype=dy.dtype)
        nodes.append(gs.Node("Reshape", f"{name}/reshape_dY",
                             inputs=[dy, gs.Constant(f"{name}/dY_shape", np.array(c["dy_shape"], np.int64))],
                             outputs=[shaped]))
        dy = shaped
    out = site.output
    if "flat_output" in c:
        out = gs.Variable(f"{name}/dX", dtype=site.output.dtype)
    nodes.append(gs.Node(OP, name, domain=DOMAIN, attrs=dict(site.attributes), inputs=[c["x"], c["y"], dy],
                         outputs=[out]))
    if "flat_output" in c:
        nodes.append(gs.Node("Reshape", f"{name}/reshape_dX",
                             inputs=[out, gs.Constant(f"{name}/dX_shape", np.array(c["flat_output"], np.int64))],
                             outputs=[site.output]))
    pool = c["pool"]
    del pool.outputs[1]  # the forward MaxPool no longer computes indices
    return nodes


RULE = Rule(NAME, "ScatterElements", pattern, check, replacement, needs("MaxPool", "Slice", "Sub", "Reshape"),
            __doc__.splitlines()[0])
