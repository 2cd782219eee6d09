"""``((dy - xmu * sum(dy * xmu) / M * invstd^2) - sum(dy) / M) * invstd * scale  ->  ai.ortops::BatchNormGrad``.

PyTorch's joint-graph export of ``nn.BatchNorm1d`` / ``nn.BatchNorm2d`` / ``F.batch_norm`` in
training mode (``native_batch_norm_backward`` with ``train=True``, x ``[N, C, *spatial]``, the
sums over every axis but 1), with the forward's ``invstd = 1 / sqrt(var + eps)``::

    xmu = Sub(x, U(mean));  s1 = ReduceSum(dy, axes=all but 1, keepdims=0)
    dot = ReduceSum(Mul(dy, xmu), same axes, keepdims=0)
    proj = Mul(xmu, U(Mul(Mul(dot, 1/M), Mul(invstd, invstd))));  grad_mean = U(Mul(s1, 1/M))
    dx = Mul(Sub(Sub(dy, proj), grad_mean), U(Mul(invstd, scale)))     (U(invstd) without affine)
    dscale = Mul(dot, invstd);  dbias = s1

U is an Unsqueeze / Reshape of a ``[C]`` tensor to ``[1, C, 1, ...]`` (any spelling that puts C at
axis 1 of x); every Mul may have its operands in either order; invstd reaches the backward
through Reshapes of ``Div(1, Sqrt(Add(var, eps)))`` (or ``Reciprocal(Sqrt(..))``). The op reads
that var (whatever shape of C elements) and eps: its rstd is the forward's invstd bit for bit in
float32. The backward's formula holds for any mean and invstd, so the statistics need not be
checked to be x's batch statistics. dscale and dbias are fused when the graph reads them (dbias
is s1 itself); otherwise the op produces dx alone.

In a float16 / bfloat16 export the backward runs in float32: x, dy and scale are float32 Casts
(the op reads them, T = float32) and mean / invstd come through ``Cast(Cast(.., FLOAT16), FLOAT)``:
the op reads the forward's float32 mean and variance instead of their float16 roundings (a note
says so).

Semantics: BatchNormGrad computes the same math in float32 with one rounding, in its own order of
the sums and its own association (docs/ops/BatchNormGrad.md): not exact, ``strict=True`` leaves the
site.

Refused, with the reason in the report: sums over other axes than all but 1 or with keepdims=1,
1/M constants that are not 1 / (the elements per channel), a broadcast that does not put C at
axis 1, shapes or dtypes that differ or are unknown, an invstd that is not ``1 / sqrt(var + eps)``
of a constant eps, a Mul(invstd, invstd) of two different tensors, a grad_scale without the
forward's scale and not invstd itself. Not sites at all: a product whose operands are not a
difference of differences and a channel broadcast.
"""

from __future__ import annotations

import numpy as np
import onnx_graphsurgeon as gs
from onnx import TensorProto

from ort_ops import DOMAIN, dtypes
from ort_ops.rewrite.graph_view import GraphView, is_default_domain, node_label
from ort_ops.rewrite.rules.operands import binary_operands, split_operands
from ort_ops.rewrite.rules.optional_outputs import with_optional_outputs
from ort_ops.rewrite.rules.rule import Rule, Site, needs
from ort_ops.rewrite.rules.subgraph import attr, axes_of, consumers_of

NAME = "batch_norm_backward"
OP = "BatchNormGrad"
ORDER_NOTE = ("BatchNormGrad computes scale * rstd * (dy - sum(dy) / M - xhat * sum(dy * xhat) / M) in float32 "
              "in its own order of the sums; the original computes ((dy - xmu * (sum(dy * xmu) / M * invstd^2)) "
              "- sum(dy) / M) * (invstd * scale) with ONNX Runtime's ReduceSum order: equal within float32 "
              "rounding, not bit for bit")
ROUNDED_STATS_NOTE = ("the original reads the mean / invstd rounded to {dtype}; the op reads the forward's float32 "
                      "statistics")
_FLOAT_CASTS = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16)
_SHAPE_OPS = ("Unsqueeze", "Reshape", "Identity", "Squeeze", "Flatten")
_FLOATS = ("float32", "float16", "bfloat16")


def _unviewed(view: GraphView, tensor, narrowed: set | None = None):
    """``tensor`` through Identity, Mul-by-1 and the shape-only ops (Unsqueeze, Reshape, ...): the
    tensor they were applied to, and the view nodes on the way. With ``narrowed`` (a set), also
    through float Casts (float32 <-> float16 / bfloat16: a float16 export's statistics), adding the
    narrower types passed to it."""
    seen = []
    for _ in range(12):
        tensor = view.strip(tensor)
        node = view.producer(tensor)
        if node is None or not is_default_domain(node) or not node.inputs:
            return tensor, seen
        if node.op == "Cast" and narrowed is not None and node.attrs.get("to") in _FLOAT_CASTS and \
                view.elem_type(node.inputs[0]) in _FLOAT_CASTS:
            if node.attrs.get("to") != TensorProto.FLOAT:
                narrowed.add(TensorProto.DataType.Name(node.attrs.get("to")).lower())
        elif node.op not in _SHAPE_OPS:
            return tensor, seen
        seen.append(node)
        tensor = node.inputs[0]
    return tensor, seen


def _same(view: GraphView, a, b) -> bool:
    """The same statistic (through view ops and a float16 export's Casts)."""
    return _unviewed(view, a, set())[0] is _unviewed(view, b, set())[0]


def _is_one_over(value, m: int) -> bool:
    return value is not None and m > 0 and np.float32(value) == np.float32(1.0 / m)


def _read_outside(view: GraphView, tensor, inside: set) -> bool:
    """Whether ``tensor`` is a graph output or read by a node not in ``inside`` (ids)."""
    return tensor.name in view.output_names or any(id(user) not in inside for user in tensor.outputs)


def _inv_std_source(view: GraphView, tensor, narrowed: set) -> tuple | str:
    """``(var, eps tensor, nodes)`` when ``tensor`` (through view ops) is ``Div(1, Sqrt(Add(var, eps)))``
    or ``Reciprocal(Sqrt(Add(var, eps)))`` with a constant scalar eps; else the reason."""
    source, seen = _unviewed(view, tensor, narrowed)
    node = view.producer(source)
    if node is not None and is_default_domain(node) and node.op == "Div" and len(node.inputs) == 2:
        if not view.is_scalar(node.inputs[0], 1.0):
            return f"invstd {source.name} is {node_label(node)} of {node.inputs[0].name}, not of 1"
        root = node.inputs[1]
    elif node is not None and is_default_domain(node) and node.op == "Reciprocal" and node.inputs:
        root = node.inputs[0]
    else:
        return f"invstd {source.name} is not 1 / sqrt(var + eps) (its producer is {node_label(node) if node else None})"
    sqrt = view.producer_op(view.strip(root), "Sqrt")
    add = view.producer_op(sqrt.inputs[0], "Add") if sqrt is not None and sqrt.inputs else None
    found = split_operands(add, lambda t: view.scalar(t) is not None)
    if found is None:
        return f"invstd {source.name} is not 1 / sqrt(var + eps) with a constant scalar eps"
    eps, var = found
    if not np.isfinite(float(view.scalar(eps))) or float(view.scalar(eps)) < 0:
        return f"eps {eps.name} is {view.scalar(eps)}, not a finite number >= 0"
    return var, eps, [*seen, node, sqrt, add]


def pattern(view: GraphView, root: gs.Node) -> Site | None:
    """The Mul of ``Sub(Sub(dy, proj), grad_mean)`` and a channel broadcast ``grad_scale``."""
    def sub_of_sub(t) -> bool:
        sub = view.producer_op(t, "Sub")
        return sub is not None and bool(sub.inputs) and view.producer_op(sub.inputs[0], "Sub") is not None

    split = split_operands(root, sub_of_sub)
    if split is None:
        return None
    outer = view.producer_op(split[0], "Sub")
    inner = view.producer_op(outer.inputs[0], "Sub")
    if binary_operands(outer) is None or binary_operands(inner) is None:
        return None
    dy, proj_t = inner.inputs
    proj = view.producer_op(proj_t, "Mul")
    # proj = xmu * U(...): xmu is the Sub of the pair
    found = split_operands(proj, lambda t: view.producer_op(t, "Sub") is not None)
    if found is None:
        return None
    xmu, proj_scale = found
    xmu_sub = view.producer_op(xmu, "Sub")
    if binary_operands(xmu_sub) is None:
        return None
    x, mean_b = xmu_sub.inputs
    grad_mean, mean_views = _unviewed(view, outer.inputs[1])
    gm_mul = view.producer_op(grad_mean, "Mul")
    gm = split_operands(gm_mul, lambda t: view.producer_op(t, "ReduceSum") is not None)
    ps, ps_views = _unviewed(view, proj_scale)
    ps_mul = view.producer_op(ps, "Mul")
    if gm is None or binary_operands(ps_mul) is None:
        return None
    s1_sum = view.producer_op(gm[0], "ReduceSum")
    if not s1_sum.inputs or s1_sum.inputs[0] is not dy:
        return None
    # Mul(Mul(dot, 1/M), Mul(invstd, invstd)) in either order
    parts = split_operands(ps_mul, lambda t: split_operands(view.producer_op(t, "Mul"),
                                            lambda u: view.producer_op(u, "ReduceSum") is not None) is not None)
    if parts is None:
        return None
    dot_mul = view.producer_op(parts[0], "Mul")
    dot_t, norm2 = split_operands(dot_mul, lambda u: view.producer_op(u, "ReduceSum") is not None)
    sq = view.producer_op(parts[1], "Mul")
    dot_sum = view.producer_op(dot_t, "ReduceSum")
    prod = view.producer_op(dot_sum.inputs[0], "Mul") if dot_sum.inputs else None
    dy_xmu = split_operands(prod, lambda t: t is dy)
    if binary_operands(sq) is None or dy_xmu is None or dy_xmu[1] is not xmu:
        return None
    gs_t, scale_views = _unviewed(view, split[1])
    site = Site(NAME, root=root, op=OP, output=root.outputs[0],
                nodes=[root, outer, inner, proj, xmu_sub, *mean_views, gm_mul, s1_sum, *ps_views, ps_mul, dot_mul, sq,
                       dot_sum, prod, *scale_views])
    site.caps.update(dy=dy, x=x, mean_b=mean_b, xmu=xmu, s1=gm[0], s1_sum=s1_sum, norms=(gm[1], norm2),
                     dot=dot_t, dot_sum=dot_sum, squares=tuple(sq.inputs), grad_scale=gs_t,
                     broadcasts=(mean_b, outer.inputs[1], proj_scale, split[1]))
    return site


def _scale(view: GraphView, site: Site, inv_std) -> tuple | str:
    """``(scale or None, node)``: grad_scale is ``Mul(invstd, scale)`` (either order), or invstd itself
    (no affine: the op reads ones)."""
    g = site.caps["grad_scale"]
    if _same(view, g, inv_std):
        return None, None
    mul = view.producer_op(g, "Mul")
    found = split_operands(mul, lambda t: _same(view, t, inv_std))
    if found is None:
        return f"grad_scale {g.name} is neither invstd {inv_std.name} nor invstd * scale"
    return found[1], mul


def check(view: GraphView, site: Site) -> str | None:
    c = site.caps
    dy, x = c["dy"], c["x"]
    a, b = c["squares"]
    if not _same(view, a, b):
        return f"the square of invstd multiplies two tensors, {a.name} and {b.name}"
    inv_std = a
    narrowed: set = set()
    found = _inv_std_source(view, inv_std, narrowed)
    if isinstance(found, str):
        return found
    var, eps, inv_nodes = found
    scale_found = _scale(view, site, inv_std)
    if isinstance(scale_found, str):
        return scale_found
    scale, scale_mul = scale_found
    dtype = view.dtype_name(x)
    if dtype not in _FLOATS:
        return f"x {x.name} has dtype {view.elem_type(x)}, not one of {', '.join(_FLOATS)} (or it is unknown)"
    for name, tensor in (("dy", dy), ("scale", scale)):
        if tensor is not None and view.dtype_name(tensor) != dtype:
            return f"{name} {tensor.name} has dtype {view.dtype_name(tensor)}, x {x.name} has {dtype}"
    if view.dtype_name(site.output) not in (None, dtype):
        return f"the result {site.output.name} has dtype {view.dtype_name(site.output)}, x {x.name} has {dtype}"
    mean, _ = _unviewed(view, c["mean_b"], narrowed)
    for name, tensor in (("mean", mean), ("var", var)):
        if view.dtype_name(tensor) != "float32":
            return f"{name} {tensor.name} has dtype {view.dtype_name(tensor)}: BatchNormGrad takes float32 statistics"
    shape = view.shape(x)
    if shape is None or view.shape(dy) != shape or view.shape(site.output) not in (None, shape):
        return f"dy {dy.name} {view.shape(dy)}, x {x.name} {shape} and the result are not one known shape"
    rank = len(shape)
    if rank < 2 or not all(isinstance(d, int) for d in shape):
        return f"x {x.name} has shape {list(shape)}: BatchNormGrad needs a known [N, C, ...] of rank >= 2"
    ch = shape[1]
    column = (1, ch) + (1,) * (rank - 2)
    for tensor in c["broadcasts"]:
        got = view.shape(tensor)
        if got is None or len(got) > rank or (1,) * (rank - len(got)) + tuple(got) != column:
            return (f"{tensor.name} has shape {None if got is None else list(got)}: not C = {ch} channels "
                    f"broadcast at axis 1 of x {list(shape)}")
    flat = (ch,)
    for name, tensor in (("sum(dy)", c["s1"]), ("sum(dy * xmu)", c["dot"]), ("invstd", inv_std), ("scale", scale)):
        if tensor is not None and view.shape(tensor) != flat:
            return f"{name} {tensor.name} has shape {view.shape(tensor)}, not [{ch}]"
    for name, tensor in (("mean", mean), ("var", var)):  # the op takes [C] or [1, C, 1, ...] of x's rank
        if view.shape(tensor) not in (flat, column):
            return f"{name} {tensor.name} has shape {view.shape(tensor)}: not [{ch}] nor {list(column)}"
    want = list(range(rank))
    want.remove(1)
    for reduce in (c["s1_sum"], c["dot_sum"]):
        axes = axes_of(view, reduce)
        if axes is None or sorted(v % rank for v in axes) != want:
            return f"{node_label(reduce)} reduces axes {axes}: the channel statistics sum over {want}"
        if attr(reduce, "keepdims", 1) != 0:
            return f"{node_label(reduce)} has keepdims=1: the sums are per-channel vectors [C]"
    m = int(np.prod(shape)) // ch if ch else 0
    for constant in c["norms"]:
        value = view.scalar(constant)
        if not _is_one_over(value, m):
            return f"{constant.name} is {value}, not 1 / {m} (the elements per channel of x {list(shape)})"
    if scale is None:
        scale = gs.Constant(f"{site.root.name or 'batch_norm'}/ones_scale", np.ones(flat, dtypes.numpy_dtype(dtype)))
        site.notes.append("no affine scale: the op reads a constant of ones")
    else:
        site.nodes.append(scale_mul)
    # dscale = Mul(dot, invstd) when the graph has it
    dscale = None
    for mul in consumers_of(view, c["dot"], "Mul"):
        other = split_operands(mul, lambda t: t is c["dot"])
        if other is not None and _same(view, other[1], inv_std) and view.shape(mul.outputs[0]) in (None, flat) \
                and view.dtype_name(mul.outputs[0]) in (None, dtype):
            dscale = mul.outputs[0]
            site.nodes.append(mul)
            break
    dbias = c["s1"] if view.dtype_name(c["s1"]) in (None, dtype) else None
    # an output only the pattern read (sum(dy) of an unaffine BatchNorm) is not produced
    inside = {id(n) for n in site.nodes}
    dscale, dbias = (t if t is not None and _read_outside(view, t, inside) else None for t in (dscale, dbias))
    site.outputs = [t for t in (dscale, dbias) if t is not None]
    site.caps.update(mean=mean, var=var, scale=scale, dscale=dscale, dbias=dbias,
                     epsilon=float(np.float32(view.scalar(eps))))
    site.nodes += [n for n in inv_nodes if n is not None]
    site.operands = {"grads": dy, "activations": x}
    site.dtype = dtype
    site.attributes = {"epsilon": site.caps["epsilon"]}
    site.exact = False
    site.notes.append(ORDER_NOTE)
    if narrowed:
        site.notes.append(ROUNDED_STATS_NOTE.format(dtype=", ".join(sorted(narrowed))))
    site.forward = view.producer(var)
    return None


def replacement(view: GraphView, site: Site, name: str) -> list:
    c = site.caps
    outputs = with_optional_outputs(name, site.output, {"dscale": c["dscale"], "dbias": c["dbias"]})
    return [gs.Node(OP, name, domain=DOMAIN, attrs={"epsilon": float(site.attributes["epsilon"])},
                    inputs=[c["dy"], c["x"], c["mean"], c["var"], c["scale"]], outputs=outputs)]


RULE = Rule(NAME, "Mul", pattern, check, replacement, needs("ReduceSum", "Sub", "Sqrt"), __doc__.splitlines()[0])
