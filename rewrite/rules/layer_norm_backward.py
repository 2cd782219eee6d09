"""``(rstd / M) * (M * g - sum(g) - xhat * sum(g * xhat))  ->  ai.ortops::LayerNormGrad(dy, x, mean, rstd, scale)``.

PyTorch's joint-graph export of ``nn.LayerNorm`` / ``F.layer_norm`` (``native_layer_norm_backward``),
with Mean and InvStdDev (``rstd``) outputs 1 and 2 of the forward ``LayerNormalization``::

    xhat = Mul(Sub(x, Mean), rstd);  g = Mul(dy, scale)   (g = dy without an affine scale)
    s1 = ReduceSum(g, axes=normalised, keepdims=1);  s2 = ReduceSum(Mul(g, xhat), same axes)
    dx = Mul(Div(rstd, M), Sub(Sub(Mul(g, M), s1), Mul(xhat, s2)))
    dscale = ReduceSum(Mul(dy, xhat), axes=the others, keepdims=0);  dbias = ReduceSum(dy, same)

Every Mul may have its operands in either order. In a float16 / bfloat16 export the backward runs
in float32 on Casts: x, dy and scale are ``Cast(.., FLOAT)`` of the forward's tensors (exact, the
op reads the float32 Casts) and Mean / rstd come through ``Cast(Cast(.., FLOAT16), FLOAT)``: the op
reads the forward's float32 statistics instead of their float16 roundings (a note says so). The
optional outputs are fused when their sums are found (over exactly the dims before the axis, to
scale's shape); otherwise they stay as they are and the op produces dx alone.

Semantics: LayerNormGrad computes CANN's formula in float32 with one rounding: the original's
math in float32 save the order of the sums (ONNX Runtime's ReduceSum) and the association of
``(M g - s1 - xhat s2) * (rstd / M)`` (the op computes ``(g - (s1 / M + xhat s2 / M)) * rstd``).
Not exact: ``strict=True`` leaves the site.

Refused, with the reason in the report: sums over other axes than the LayerNormalization's
normalised dims or keepdims=0, an M that is not the number of normalised elements, shapes or
dtypes that differ or are unknown, a forward with stash_type other than 1 (float32 statistics),
no affine scale while the LayerNormalization's Scale is not a constant of ones. Not sites at
all: a product whose operands are not a Div of a LayerNormalization's InvStdDev and a difference
of that shape, x, Mean and rstd of different LayerNormalizations.
"""

from __future__ import annotations

import math

import numpy as np
import onnx_graphsurgeon as gs
from onnx import TensorProto

from ort_ops import DOMAIN, dtypes
from ort_ops.rewrite.graph_view import GraphView, is_default_domain, node_label
from ort_ops.rewrite.rules.operands import binary_operands, split_operands
from ort_ops.rewrite.rules.optional_outputs import with_optional_outputs
from ort_ops.rewrite.rules.rule import Rule, Site, needs
from ort_ops.rewrite.rules.subgraph import attr, axes_of, consumers_of

NAME = "layer_norm_backward"
OP = "LayerNormGrad"
ORDER_NOTE = ("LayerNormGrad computes (g - (sum(g) / M + xhat * sum(g * xhat) / M)) * rstd in float32 with its own "
              "summation order; the original computes (rstd / M) * (M * g - sum(g) - xhat * sum(g * xhat)) with ONNX "
              "Runtime's ReduceSum order: equal within float32 rounding, not bit for bit")
ROUNDED_STATS_NOTE = ("the original reads Mean / InvStdDev rounded to {dtype}; the op reads the LayerNormalization's "
                      "float32 statistics")
_WIDENING = (TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.FLOAT)


def _exact_source(view: GraphView, tensor):
    """``tensor`` through Identity / Mul-by-1 and exact widening Casts (float16 / bfloat16 -> float32)."""
    for _ in range(8):
        tensor = view.strip(tensor)
        cast = view.producer_op(tensor, "Cast")
        if cast is None or cast.attrs.get("to") != TensorProto.FLOAT or view.elem_type(cast.inputs[0]) not in _WIDENING:
            return tensor
        tensor = cast.inputs[0]
    return tensor


def _statistic(view: GraphView, tensor) -> tuple[gs.Node, int, int | None] | None:
    """``(LayerNormalization, output index, narrowest type on the way)`` when ``tensor`` is output 1
    (Mean) or 2 (InvStdDev) of a LayerNormalization, through Casts (None: no Cast narrowed it)."""
    narrowed = None
    for _ in range(8):
        tensor = view.strip(tensor)
        node = view.producer(tensor)
        if node is None:
            return None
        if node.op == "LayerNormalization" and is_default_domain(node):
            index = next((i for i, t in enumerate(node.outputs) if t is tensor), None)
            return (node, index, narrowed) if index in (1, 2) else None
        if node.op != "Cast" or not is_default_domain(node) or not node.inputs:
            return None
        if node.attrs.get("to") != TensorProto.FLOAT:
            narrowed = node.attrs.get("to")
        tensor = node.inputs[0]
    return None


def _is_stat(view: GraphView, tensor, index: int) -> bool:
    found = _statistic(view, tensor)
    return found is not None and found[1] == index


def pattern(view: GraphView, root: gs.Node) -> Site | None:
    """The Mul of ``Div(rstd, M)`` and ``Sub(Sub(Mul(g, M), s1), Mul(xhat, s2))``."""
    split = split_operands(root, lambda t: view.producer_op(_exact_source(view, t), "Div") is not None)
    if split is None:
        return None
    div = view.producer_op(_exact_source(view, split[0]), "Div")
    outer = view.producer_op(split[1], "Sub")
    if binary_operands(div) is None or not _is_stat(view, div.inputs[0], 2) or binary_operands(outer) is None:
        return None
    inner = view.producer_op(outer.inputs[0], "Sub")
    xhat_s2 = view.producer_op(outer.inputs[1], "Mul")
    if binary_operands(inner) is None or xhat_s2 is None:
        return None
    g_m = view.producer_op(inner.inputs[0], "Mul")
    s1_sum = view.producer_op(inner.inputs[1], "ReduceSum")
    if g_m is None or s1_sum is None or not s1_sum.inputs:
        return None
    g = s1_sum.inputs[0]
    m_const = split_operands(g_m, lambda t: t is g)
    found = split_operands(xhat_s2, lambda t: view.producer_op(t, "ReduceSum") is not None)
    if m_const is None or found is None:
        return None
    s2_sum, xhat = view.producer_op(found[0], "ReduceSum"), found[1]
    gx = split_operands(view.producer_op(s2_sum.inputs[0], "Mul") if s2_sum.inputs else None, lambda t: t is g)
    if gx is None or gx[1] is not xhat:
        return None
    xhat_mul = view.producer_op(xhat, "Mul")
    centred = split_operands(xhat_mul, lambda t: view.producer_op(t, "Sub") is not None)
    if centred is None or not _is_stat(view, centred[1], 2):
        return None
    sub = view.producer_op(centred[0], "Sub")
    if binary_operands(sub) is None or not _is_stat(view, sub.inputs[1], 1):
        return None
    forward = {_statistic(view, t)[0].name for t in (div.inputs[0], centred[1], sub.inputs[1])}
    ln = _statistic(view, div.inputs[0])[0]
    if forward != {ln.name}:
        return None
    site = Site(NAME, root=root, op=OP, output=root.outputs[0],
                nodes=[root, div, outer, inner, g_m, s1_sum, xhat_s2, s2_sum, view.producer(s2_sum.inputs[0]), xhat_mul,
                       sub])
    site.caps.update(ln=ln, g=g, x=sub.inputs[0], xhat=xhat, sums=(s1_sum, s2_sum),
                     constants=(div.inputs[1], m_const[1]),
                     stats=(sub.inputs[1], centred[1], div.inputs[0]))
    return site


def _scale_and_dy(view: GraphView, site: Site) -> tuple | str:
    """``(dy, scale)`` of the site's g: ``Mul(dy, scale)`` with scale the forward's Scale (through
    widening Casts), or dy itself when the forward's Scale is a constant of ones."""
    ln, g = site.caps["ln"], site.caps["g"]
    scale = ln.inputs[1] if len(ln.inputs) > 1 else None
    if scale is None:
        return f"{node_label(ln)} has no Scale input"
    mul = view.producer_op(g, "Mul")
    split = split_operands(mul, lambda t: _exact_source(view, t) is _exact_source(view, scale))
    if split is not None:
        site.nodes.append(mul)
        return split[1], split[0]
    if not view.is_one(scale):
        return (f"g {g.name} is not dy * Scale of {node_label(ln)} and that Scale {scale.name} is not a constant of "
                "ones")
    return g, scale


def _parameter_grads(view: GraphView, dy, xhat, a: int, param_shape: tuple) -> tuple:
    """The ReduceSums of ``dy * xhat`` and of ``dy`` over exactly the dims before ``a`` to the
    parameters' shape (None where not found)."""
    outer = list(range(a))

    def summed(tensor):
        for node in consumers_of(view, tensor, "ReduceSum"):
            axes = axes_of(view, node)
            if not outer or axes is None or sorted(x % (a + len(param_shape)) for x in axes) != outer:
                continue
            if attr(node, "keepdims", 1) != 0 or view.shape(node.outputs[0]) not in (None, param_shape):
                continue
            if view.dtype_name(node.outputs[0]) not in (None, view.dtype_name(dy)):
                continue
            return node.outputs[0]
        return None

    dscale = None
    for mul in consumers_of(view, xhat, "Mul"):
        if split_operands(mul, lambda t: t is dy) is not None:
            dscale = summed(mul.outputs[0])
            if dscale is not None:
                break
    return dscale, summed(dy)


def check(view: GraphView, site: Site) -> str | None:
    c = site.caps
    ln, x = c["ln"], c["x"]
    found = _scale_and_dy(view, site)
    if isinstance(found, str):
        return found
    dy, scale = found
    if _exact_source(view, x) is not _exact_source(view, ln.inputs[0]):
        return f"x {x.name} of the backward is not {node_label(ln)}'s input {ln.inputs[0].name}"
    if attr(ln, "stash_type", 1) != 1:
        return f"{node_label(ln)} has stash_type {attr(ln, 'stash_type', 1)}: LayerNormGrad takes float32 statistics"
    dtype = view.dtype_name(x)
    if dtype is None:
        return f"x {x.name} has dtype {view.elem_type(x)}, not one of float32, float16, bfloat16 (or it is unknown)"
    for name, tensor in (("dy", dy), ("scale", scale), ("the result", site.output)):
        if view.dtype_name(tensor) not in ((None, dtype) if tensor is site.output else (dtype,)):
            return f"{name} {tensor.name} has dtype {view.dtype_name(tensor)}, x {x.name} has {dtype}"
    shape, dy_shape = view.shape(x), view.shape(dy)
    if shape is None or dy_shape != shape or view.shape(site.output) not in (None, shape):
        return f"dy {dy.name} {dy_shape}, x {x.name} {shape} and the result are not one known shape"
    rank = len(shape)
    axis = attr(ln, "axis", -1)
    if rank == 0 or not -rank <= axis < rank:
        return f"{node_label(ln)} has axis {axis}, out of range for x {list(shape)}"
    a = axis % rank
    param_shape = tuple(shape[a:])
    if not all(isinstance(d, int) for d in param_shape):
        return f"x {x.name} {list(shape)} has dims from axis {a} that are not known numbers"
    if view.shape(scale) not in (None, param_shape) and not view.is_one(scale):
        return f"scale {scale.name} has shape {view.shape(scale)}, x's dims from axis {a} are {list(param_shape)}"
    for reduce in c["sums"]:
        axes = axes_of(view, reduce)
        if axes is None or sorted(v % rank for v in axes) != list(range(a, rank)):
            return (f"{node_label(reduce)} reduces axes {axes}: the normalised dims of {node_label(ln)} are "
                    f"{a}..{rank - 1}")
        if attr(reduce, "keepdims", 1) != 1:
            return f"{node_label(reduce)} has keepdims=0: the sum is not broadcast back over the row"
    m = math.prod(param_shape)
    for constant in c["constants"]:
        value = view.scalar(constant)
        if value is None or float(value) != float(m):
            return f"{constant.name} is {value}, not the {m} elements LayerNormalization normalises over"
    if view.shape(scale) != param_shape:  # a scalar or absent shape: the op needs scale's exact shape
        if not view.is_one(scale):
            return f"scale {scale.name} has unknown shape"
        scale = gs.Constant(f"{ln.name or 'layer_norm'}/ones_scale", np.ones(param_shape, dtypes.numpy_dtype(dtype)))
        site.notes.append("no affine scale: the op reads a constant of ones")
    dscale, dbias = _parameter_grads(view, dy, c["xhat"], a, param_shape)
    site.outputs = [t for t in (dscale, dbias) if t is not None]
    for tensor in site.outputs:  # their producers (and dscale's product) are the site's: cleaned up with it
        reduce = view.producer(tensor)
        site.nodes += [reduce, *([view.producer(reduce.inputs[0])] if tensor is dscale else [])]
    site.caps.update(dy=dy, scale=scale, dscale=dscale, dbias=dbias)
    site.operands = {"grads": dy, "activations": x}
    site.dtype = dtype
    site.attributes = {"axis": a}
    site.exact = False
    site.notes.append(ORDER_NOTE)
    narrowed = {_statistic(view, t)[2] for t in c["stats"]} - {None}
    if narrowed:
        site.notes.append(ROUNDED_STATS_NOTE.format(dtype=", ".join(sorted(TensorProto.DataType.Name(t).lower()
                                                                            for t in narrowed))))
    site.forward = ln
    return None


def replacement(view: GraphView, site: Site, name: str) -> list:
    c = site.caps
    ln = c["ln"]
    outputs = with_optional_outputs(name, site.output, {"dscale": c["dscale"], "dbias": c["dbias"]})
    return [gs.Node(OP, name, domain=DOMAIN, attrs={"axis": int(site.attributes["axis"])},
                    inputs=[c["dy"], c["x"], ln.outputs[1], ln.outputs[2], c["scale"]], outputs=outputs)]


RULE = Rule(NAME, "Mul", pattern, check, replacement, needs("LayerNormalization", "ReduceSum", "Sub", "Div"),
            __doc__.splitlines()[0])
