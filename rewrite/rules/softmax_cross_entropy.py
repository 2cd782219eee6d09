"""``cross-entropy loss + its backward -> ai.ortops::SoftmaxCrossEntropyLossAndGrad(logits, target, dloss[, weight])``.

PyTorch's export of ``F.cross_entropy(logits, target)`` on ``[N, C]`` float32 logits and int64
class indices, ``reduction`` "mean" or "sum", any ``ignore_index``, optional class weights (and of the same math written
``F.nll_loss(F.log_softmax(x, 1), t)``)::

    lsm      = LogSoftmax(logits, axis=1);  valid = Not(Equal(target, ignore_index))
    rows     = Where(valid, Neg(Squeeze(GatherElements(lsm, Unsqueeze(Where(valid, target, 0), 1)), 1)), 0)
    loss     = ReduceSum(rows) / Cast(ReduceSum(Cast(valid, INT64)), FLOAT)      ("sum": ReduceSum(rows))
    G        = ScatterElements(zeros [N, C], Where(valid1, target1, 0), -1, axis=1)
               * Where(valid1, dloss / count, 0)        (target1 = Unsqueeze(target, 1); "sum": dloss)
    dlogits  = G - Exp(lsm) * ReduceSum(G, axes=[1], keepdims=1)

becomes one node producing ``loss`` and ``dlogits`` (the tensors keep their names); ``dloss`` is
whatever the graph feeds the loss's backward (1 for a training graph's own loss, 0.5 for
``0.5 * loss``...). The masks may be spelled ``Where(Equal(..), 0, target)`` too. LogSoftmax stays
when its output is read elsewhere.

With ``label_smoothing`` eps PyTorch adds a smoothing term (constants a = 1 - eps, b = eps / C in
the forward, a' = dloss * a and b' = dloss * b in the backward)::

    smooth   = ReduceSum(Where(valid, Neg(ReduceSum(lsm, axes=[1], keepdims=0)), 0)) (/ count)
    loss     = Add(Mul(nll, a), Mul(smooth, b))                  (nll: the loss above)
    G        = Add(Expand(Unsqueeze(Neg(Where(valid, Expand(b' (/ count), [N]), 0)), 1), [N, C]),
                   ScatterElements(...) * Where(valid1, a' (/ count), 0))

and the node gets ``label_smoothing`` = b * C (checked against 1 - a) and ``dloss`` = b' / b (or
a' / a when b = 0), a constant: the scales must be constants.

With class weights ``F.cross_entropy(weight=w)`` (w [C], read as [1, C] or its expansion to [N, C])::

    picked   = GatherElements(Mul(lsm, w [1, C]), idx)          (the forward gathers -w[t] * lsm[t])
    W        = ReduceSum(Where(valid, Squeeze(GatherElements(w [N, C], idx), 1), 0))   ("mean" only)
    loss     = ReduceSum(rows) / W                               ("sum": ReduceSum(rows))
    G        = ScatterElements(...) * Where(valid1, Mul(dloss / W, w [1, C]), 0)
               ("sum": Mul(dloss, w), or w itself when the exporter folded dloss = 1)

and the node reads w as its 4th input: a constant as [C] (the same values in every spelling,
compared), or the [C] tensor the exporter reshapes (a graph input or a computed tensor).

Refused, with the reason in the report: label smoothing with class weights, class weights that
differ between the forward, W and the backward, per-element weights,
label smoothing whose scales are not constants or do not fit one eps, ``reduction="none"``
(the rows are not summed, or their gradient is a tensor), logits that are not ``[N, C]``, the
float16/bfloat16 spelling (Casts around the math), an intermediate also read outside the pattern
(the original nodes would have to stay), and an upstream gradient computed from the loss itself
(``loss ** 2``: one node cannot produce the loss and consume its gradient).

Semantics: not bit-exact (``exp``/``log`` round differently from ORT's LogSoftmax and Exp):
equal within ``ort_ops.tolerances`` for float32, as ``docs/ops/SoftmaxCrossEntropyLossAndGrad.md``
measures; a target outside ``[0, C)`` fails the run on the CPU EP as it does in the original's
GatherElements.
"""

from __future__ import annotations

import numpy as np
import onnx_graphsurgeon as gs
from onnx import TensorProto

from ort_ops import DOMAIN
from ort_ops.rewrite.graph_view import GraphView, node_label
from ort_ops.rewrite.rules.rule import Rule, Site, needs
from ort_ops.rewrite.rules.subgraph import (
    attr,
    axes_of,
    consumers_of,
    depends_on,
    exclusive,
    is_zero_constant,
    producer,
    reduces_all,
)

NAME = "softmax_cross_entropy"
OP = "SoftmaxCrossEntropyLossAndGrad"
NOTE = ("not bit-exact: the fused op computes log_softmax, exp and the sums in float64 on the CPU EP "
        "(float32 on CANN) where the original uses ORT's float32 LogSoftmax, Exp and ReduceSum; the results "
        "agree within the float32 tolerance (docs/ops/SoftmaxCrossEntropyLossAndGrad.md)")


def pattern(view: GraphView, sub: gs.Node) -> Site | None:
    """``Sub(G, Mul(Exp(LogSoftmax(x)), ReduceSum(G)))``: the backward of log_softmax."""
    if len(sub.inputs) != 2:
        return None
    g, other = sub.inputs
    mul = view.producer_op(other, "Mul")
    if mul is None or len(mul.inputs) != 2:
        return None
    for a, b in ((mul.inputs[0], mul.inputs[1]), (mul.inputs[1], mul.inputs[0])):
        exp, red = view.producer_op(a, "Exp"), view.producer_op(b, "ReduceSum")
        if exp is not None and red is not None and red.inputs and red.inputs[0] is g:
            break
    else:
        return None
    cast = producer(view, exp.inputs[0], "Cast")
    lsm = producer(view, cast.inputs[0] if cast is not None else exp.inputs[0], "LogSoftmax")
    if lsm is None:
        return None
    site = Site(NAME, root=sub, nodes=[sub, mul, exp, red, lsm], op=OP)
    site.caps.update(g=g, lsm=lsm, mul=mul, exp=exp, red=red, cast=cast)
    site.forward = lsm
    return site


def _mask(view: GraphView, cond):
    """``(target, ignore_index, valid_when_true, nodes)`` of ``[Not(...)]Equal(target, k)`` (k an
    integer constant), or None."""
    nodes, flips = [], 0
    node = producer(view, cond, "Not", "Equal")
    while node is not None and node.op == "Not":
        nodes.append(node)
        flips += 1
        node = producer(view, node.inputs[0], "Not", "Equal")
    if node is None or len(node.inputs) != 2:
        return None
    nodes.append(node)
    for t, k in ((node.inputs[0], node.inputs[1]), (node.inputs[1], node.inputs[0])):
        value = view.scalar(k)
        if value is not None and np.asarray(value).dtype.kind in "iu" and view.const(t) is None:
            return t, int(value), flips % 2 == 1, nodes
    return None


def _select(view: GraphView, where: gs.Node | None):
    """A ``Where`` on a valid mask as ``(target, ignore_index, when_valid, when_ignored, nodes)``."""
    if where is None or len(where.inputs) != 3:
        return None
    mask = _mask(view, where.inputs[0])
    if mask is None:
        return None
    target, k, valid_when_true, nodes = mask
    a, b = where.inputs[1], where.inputs[2]
    when_valid, when_ignored = (a, b) if valid_when_true else (b, a)
    return target, k, when_valid, when_ignored, [where, *nodes]


def _count(view: GraphView, tensor, target, k):
    """The nodes of ``Cast(ReduceSum(Cast(valid, INT64)), FLOAT)`` counting the rows of ``target``
    not equal to ``k``, or None."""
    cast = producer(view, tensor, "Cast")
    if cast is None or cast.attrs.get("to") != TensorProto.FLOAT:
        return None
    red = producer(view, cast.inputs[0], "ReduceSum")
    if red is None or not reduces_all(view, red, 1):
        return None
    inner = producer(view, red.inputs[0], "Cast")
    if inner is None:
        return None
    mask = _mask(view, inner.inputs[0])
    if mask is None or not mask[2] or mask[1] != k or view.value_key(mask[0]) != view.value_key(target):
        return None
    return [cast, red, inner, *mask[3]]


def _same_target(view: GraphView, a, b) -> bool:
    return view.value_key(a) == view.value_key(b)


def check(view: GraphView, site: Site) -> str | None:
    c = site.caps
    lsm, g = c["lsm"], c["g"]
    logits = lsm.inputs[0]
    if c["cast"] is not None or view.dtype_name(logits) != "float32":
        return (f"the log_softmax of {logits.name} is computed in {view.dtype_name(logits) or 'another type'} "
                "with Casts around the float32 math: only the float32 spelling is fused")
    shape = view.shape(logits)
    if shape is None or len(shape) != 2:
        return (f"logits {logits.name} have shape {None if shape is None else list(shape)}: the op takes [N, C] "
                "(class scores per row)")
    if attr(lsm, "axis", -1) % 2 != 1:
        return f"LogSoftmax {node_label(lsm)} normalises over axis {attr(lsm, 'axis', -1)}, not the classes (axis 1)"
    if axes_of(view, c["red"]) not in ([1], [-1]) or attr(c["red"], "keepdims", 1) != 1:
        return f"{node_label(c['red'])} does not sum the gradient over the classes (axes [1], keepdims 1)"
    # backward: G = scatter(-1 at the target) * per-row weight (+ label smoothing's uniform term)
    g_node = producer(view, g, "Mul", "Add", "Sub", "Cast")
    smoothing = None
    if g_node is not None and g_node.op == "Add" and len(g_node.inputs) == 2:
        smoothing = _uniform_term(view, g_node, shape)
        if isinstance(smoothing, str):
            return smoothing
        site.nodes += [g_node, *smoothing["nodes"]]
        g_node = producer(view, smoothing["scaled_scatter"], "Mul")
    if g_node is None or g_node.op != "Mul" or len(g_node.inputs) != 2:
        what = "a graph input or constant" if g_node is None else f"{g_node.op} {node_label(g_node)}"
        return (f"the gradient reaching log_softmax ({g.name}) is {what}, not the one-hot scatter times one weight "
                "per row (label_smoothing adds a uniform term; other losses on log_softmax differ)")
    scatter = weight = None
    for a, b in ((g_node.inputs[0], g_node.inputs[1]), (g_node.inputs[1], g_node.inputs[0])):
        scatter, weight = producer(view, a, "ScatterElements"), producer(view, b, "Where")
        if scatter is not None and weight is not None:
            break
    else:
        return f"{node_label(g_node)} is not ScatterElements(...) * Where(valid, weight, 0)"
    site.nodes += [g_node, scatter, weight]
    if attr(scatter, "axis", 0) % 2 != 1 or attr(scatter, "reduction", "none") != "none":
        return f"{node_label(scatter)} does not scatter along the classes (axis 1, reduction none)"
    data, index, updates = scatter.inputs
    if view.shape(data) != shape or not is_zero_constant(view, data):
        return f"{node_label(scatter)} does not scatter into zeros of the logits' shape {list(shape)}"
    if view.uniform(updates) != np.float32(-1.0):
        return f"{node_label(scatter)} does not scatter -1 (the gradient of -log_softmax at the target)"
    minus_one = view.producer_op(updates, "ConstantOfShape")
    if minus_one is not None and len(view.consumers(updates)) == 1:  # the -1s, maybe of Shape(index)
        site.nodes.append(minus_one)
        shape_of = view.producer_op(minus_one.inputs[0], "Shape")
        if shape_of is not None and len(view.consumers(minus_one.inputs[0])) == 1:
            site.nodes.append(shape_of)
    picked = _select(view, producer(view, index, "Where"))
    if picked is None or not is_zero_constant(view, picked[3]):
        return f"the scatter's index {index.name} is not Where(target != ignore_index, target, 0)"
    t1, k, t1_valid, _, nodes = picked
    site.nodes += nodes
    unsq = producer(view, t1_valid, "Unsqueeze")
    if unsq is None or axes_of(view, unsq) not in ([1], [-1]) or not _same_target(view, t1, t1_valid):
        return f"the scatter's index does not read Unsqueeze(target, 1) ({t1_valid.name})"
    site.nodes.append(unsq)
    target = unsq.inputs[0]
    if view.elem_type(target) != TensorProto.INT64:
        return f"target {target.name} is not int64 class indices"
    w = _select(view, weight)
    if w is None or not is_zero_constant(view, w[3]) or w[1] != k or not _same_target(view, w[0], t1):
        return (f"{node_label(weight)} is not Where(target != {k}, weight, 0) on the same target (reduction='none' "
                "with per-row weights?)")
    site.nodes += w[4]
    # forward: the picked log-probabilities, summed (and divided by the row count for "mean")
    forward = _forward(view, lsm, target, k)
    if isinstance(forward, str):
        return forward
    loss, count, fwd_nodes, weights = forward
    site.nodes += fwd_nodes
    eps = None
    if smoothing is not None:
        smoothing["scaled_scatter_weight"] = w[2]  # dloss * (1 - eps) (/ count)
        smoothed = _smoothed_forward(view, lsm, loss, count, target, k, smoothing)
        if isinstance(smoothed, str):
            return smoothed
        loss, eps, dloss_value, smooth_nodes = smoothed
        site.nodes += smooth_nodes
        if not _same_target(view, smoothing["target"], target) or smoothing["ignore_index"] != k:
            return "the label-smoothing term of the gradient masks another target or ignore_index than the loss"
    row_weight, dloss = w[2], w[2]
    unit_dloss = False
    if weights is not None:  # the backward's weight is dloss (/ W) times the same class weights [1, C]
        if smoothing is not None:
            return "label smoothing with class weights is not fused (its smoothing term weighs each class)"
        classes = shape[1]
        if _weight_key(view, row_weight, classes) == weights[0] and view.shape(row_weight) in ((classes,),
                                                                                              (1, classes)):
            unit_dloss = True  # dloss 1 folded away ("sum")
        else:
            mul = producer(view, row_weight, "Mul")
            parts = [] if mul is None or len(mul.inputs) != 2 else \
                [(a, b) for a, b in ((mul.inputs[0], mul.inputs[1]), (mul.inputs[1], mul.inputs[0]))
                 if view.shape(b) in ((classes,), (1, classes)) and _weight_key(view, b, classes) == weights[0]]
            if not parts:
                return (f"the gradient's per-row weight {row_weight.name} is not dloss (/ W) times the forward's "
                        "class weights")
            site.nodes.append(mul)
            row_weight, dloss = parts[0][0], parts[0][0]
    if count is not None:  # "mean": the weight is dloss / count, with the forward's count
        div = producer(view, row_weight, "Div")
        if div is None or len(div.inputs) != 2 or view.value_key(div.inputs[1]) != view.value_key(count):
            return (f"the forward loss is divided by the row count {count.name} but its gradient {row_weight.name} "
                    "is not dloss / that count: not one reduction")
        site.nodes.append(div)
        dloss = div.inputs[0]
    if eps is not None:  # the op reads dloss = b' / b, a constant; its scale a' / count was matched above
        site.caps["dloss_value"] = dloss_value
        site.notes.append(f"label_smoothing {eps!r}: the loss gradient is the constant {dloss_value!r} "
                          "(the backward's smoothing scales divided by the forward's)")
    if unit_dloss:
        if count is not None:
            return "the weighted mean's gradient is not divided by the weight sum W"
        site.caps["dloss_value"] = 1.0
        site.notes.append("the loss gradient is the constant 1.0 (folded into the backward's class weights)")
    elif view.shape(dloss) != ():
        shape_text = view.shape(dloss)
        return (f"the loss gradient {dloss.name} has shape {None if shape_text is None else list(shape_text)}, not "
                "one scalar (class weights, or reduction='none' with the rows summed afterwards)")
    if view.dtype_name(dloss) != "float32":
        return f"the loss gradient {dloss.name} is not float32"
    computing = [n for n in site.nodes if n is not lsm and n.op != "Constant"]
    reason = exclusive(view, computing, [loss, site.root.outputs[0]])
    if reason:
        return reason
    if eps is None and not unit_dloss and depends_on(view, dloss, [loss, site.root.outputs[0]]):
        value = view.uniform(dloss)
        if value is None:
            return (f"the loss gradient {dloss.name} is computed from the loss itself (e.g. loss ** 2): one node "
                    "cannot produce the loss and read its gradient")
        # a constant spelled from the loss's shape (Expand(1, Shape(loss))): the op reads the constant
        site.caps["dloss_value"] = float(value)
        site.notes.append(f"the loss gradient {dloss.name} is the constant {float(value)!r} (computed from the "
                          "loss's shape): the op reads that constant")
    site.nodes = list({id(n): n for n in site.nodes}.values())
    inside = {id(n) for n in site.nodes}
    others = [n for n in view.consumers(lsm.outputs[0]) if id(n) not in inside]
    if others or lsm.outputs[0].name in view.output_names:
        readers = ", ".join(node_label(n) for n in others) or "the graph outputs"
        site.notes.append(f"LogSoftmax {node_label(lsm)} stays: its output is also read by {readers}")
    site.output, site.outputs = site.root.outputs[0], [loss]
    site.dtype = "float32"
    site.operands = {"grads": dloss, "activations": logits}
    site.caps.update(target=target, dloss=dloss, logits=logits, weight=None if weights is None else weights[1])
    if weights is not None:
        site.notes.append("class weights: the node reads them as [C] (F.cross_entropy's weight)")
    site.attributes = {"ignore_index": k, "reduction": "mean" if count is not None else "sum"}
    if eps is not None:
        site.attributes["label_smoothing"] = eps
    site.exact = False
    site.notes.append(NOTE)
    return None


def _constant(view: GraphView, tensor) -> np.ndarray | None:
    """The value of a constant: ``view.const`` (small constants, Constant nodes, Casts of one), or
    an initializer's values of any size held in memory (class weights [C], expanded to [N, C])."""
    value = view.const(tensor)
    if value is None and isinstance(tensor, gs.Constant) and \
            getattr(tensor, "data_location", None) != TensorProto.EXTERNAL:
        value = np.asarray(tensor.values)
    return value


def _weight_key(view: GraphView, tensor, classes: int):
    """A key equal for tensors holding the same class weights [C] (as [C], [1, C], or rows of one
    [N, C]): the values of a constant, else the [C] tensor they are reshaped / expanded from; None
    if ``tensor`` is neither."""
    value = _constant(view, tensor)
    if value is None:
        wide = producer(view, tensor, "Expand")
        if wide is not None:
            if view.shape(wide.inputs[0]) not in ((classes,), (1, classes)):
                return None
            tensor = wide.inputs[0]
        source = view.view_source(tensor)
        value = _constant(view, source)
        if value is None:
            return ("tensor", view.value_key(source)) if view.shape(source) == (classes,) else None
    value = np.asarray(value)
    if value.dtype != np.float32 or value.ndim not in (1, 2) or value.shape[-1] != classes or value.size == 0:
        return None
    rows = value.reshape(-1, classes)
    if not np.array_equal(rows, np.broadcast_to(rows[:1], rows.shape)):
        return None
    return ("const", rows[0].tobytes())


def _class_weights(view: GraphView, lsm: gs.Node, tensor):
    """The [1, C] (or [C]) class weights ``tensor`` multiplying the log-probabilities, as ``(key,
    the fused node's [C] weight input)``, or None."""
    classes = view.shape(lsm.outputs[0])[1]
    if view.shape(tensor) not in ((classes,), (1, classes)) or view.dtype_name(tensor) != "float32":
        return None
    key = _weight_key(view, tensor, classes)
    if key is None:
        return None
    value = _constant(view, tensor)
    if value is not None:  # a constant: the node reads it as [C]
        return key, np.asarray(value, np.float32).reshape(classes)
    return key, view.view_source(tensor)


def _weight_sum(view: GraphView, tensor, target, k, index, key, classes: int) -> list | None:
    """The nodes of ``ReduceSum(Where(target != k, Squeeze(GatherElements(weights [N, C], index,
    axis=1), 1), 0))``, W of the weighted "mean" (the weights of ``key`` at the same ``index`` as the
    loss's), or None."""
    red = producer(view, tensor, "ReduceSum")
    if red is None or not reduces_all(view, red, 1):
        return None
    sel = _select(view, producer(view, red.inputs[0], "Where"))
    if sel is None or sel[1] != k or not _same_target(view, sel[0], target) or not is_zero_constant(view, sel[3]):
        return None
    squeeze = producer(view, sel[2], "Squeeze")
    gather = producer(view, squeeze.inputs[0], "GatherElements") if squeeze is not None else None
    if gather is None or axes_of(view, squeeze) not in ([1], [-1]) or attr(gather, "axis", 0) % 2 != 1 or \
            view.value_key(gather.inputs[1]) != view.value_key(index) or \
            _weight_key(view, gather.inputs[0], classes) != key:
        return None
    cast = producer(view, gather.inputs[1], "Cast")  # (an exporter without CSE casts the index again)
    return [red, *sel[4], squeeze, gather, *([cast] if cast is not None else [])]


def _forward(view: GraphView, lsm: gs.Node, target, k):
    """``(loss, count or None, nodes, weights)`` of the forward loss reading ``lsm`` (``weights``:
    None, or the class weights' ``(key, input)`` when it reads ``Mul(lsm, weights)``; ``count`` is
    then their sum W), or the reason."""
    found = []
    classes = view.shape(lsm.outputs[0])[1]
    sources = [(lsm.outputs[0], None, None)]
    for mul in consumers_of(view, lsm.outputs[0], "Mul"):  # F.cross_entropy(weight=w): lsm * w [1, C]
        if len(mul.inputs) == 2:
            other = mul.inputs[1] if mul.inputs[0] is lsm.outputs[0] else mul.inputs[0]
            weights = _class_weights(view, lsm, other)
            if weights is not None:
                sources.append((mul.outputs[0], mul, weights))
    for source, scaling, weights in sources:
        for gather in consumers_of(view, source, "GatherElements"):
            if attr(gather, "axis", 0) % 2 != 1 or gather.inputs[0] is not source:
                continue
            found.append((gather, scaling, weights))
    candidates, found = found, []
    for gather, scaling, weights in candidates:
        index = gather.inputs[1]
        cast = producer(view, index, "Cast")  # (an exporter without optimisation casts the index to int64)
        if cast is not None and cast.attrs.get("to") == TensorProto.INT64:
            index = cast.inputs[0]
        unsq = producer(view, index, "Unsqueeze")
        sel = _select(view, producer(view, unsq.inputs[0], "Where")) if unsq is not None else None
        if sel is None or sel[1] != k or not _same_target(view, sel[0], target) or \
                not _same_target(view, sel[2], target) or not is_zero_constant(view, sel[3]):
            continue
        found.append((gather, unsq, sel, cast, scaling, weights))
    if len(found) != 1:
        return (f"no single forward GatherElements(log_softmax (* class weights), Unsqueeze(Where(target != {k}, "
                f"target, 0), 1)) reads {lsm.outputs[0].name} (found {len(found)})")
    gather, unsq, sel, cast, scaling, weights = found[0]
    nodes = [gather, unsq, *sel[4], *([cast] if cast is not None else []), *([scaling] if scaling else [])]
    chain = []
    t = gather.outputs[0]
    for op in ("Squeeze", "Neg"):
        users = consumers_of(view, t, op)
        if len(users) != 1:
            return f"the picked log-probabilities {t.name} are not {op}d once"
        chain.append(users[0])
        t = users[0].outputs[0]
    nodes += chain
    wheres = [w for w in consumers_of(view, t, "Where") if (s := _select(view, w)) is not None and s[2] is t
              and s[1] == k and _same_target(view, s[0], target) and is_zero_constant(view, s[3])]
    if len(wheres) != 1:
        return f"the per-row losses {t.name} are not masked once by Where(target != {k}, loss, 0)"
    rows = wheres[0].outputs[0]
    nodes += _select(view, wheres[0])[4]
    sums = [r for r in consumers_of(view, rows, "ReduceSum") if reduces_all(view, r, 1)]
    if len(sums) != 1:
        return f"the per-row losses {rows.name} are not summed to one scalar (reduction='none'?)"
    total = sums[0].outputs[0]
    nodes.append(sums[0])
    for div in consumers_of(view, total, "Div"):
        if div.inputs[0] is total:
            if weights is None:
                count_nodes = _count(view, div.inputs[1], target, k)
            else:
                count_nodes = _weight_sum(view, div.inputs[1], target, k, gather.inputs[1], weights[0], classes)
            if count_nodes is not None:
                return div.outputs[0], div.inputs[1], nodes + [div, *count_nodes], weights
    return total, None, nodes, weights


def _uniform_term(view: GraphView, add: gs.Node, shape) -> dict | str:
    """Label smoothing's part of the gradient, one side of ``add``:
    ``Expand(Unsqueeze(Neg(Where(valid, per_row, 0)), 1), [N, C])``; the other side is the scaled
    scatter. A dict of what it found, or the reason."""
    for term, other in ((add.inputs[0], add.inputs[1]), (add.inputs[1], add.inputs[0])):
        wide = producer(view, term, "Expand")
        if wide is None or view.shape(term) != shape or producer(view, other, "Mul") is None:
            continue
        unsq = producer(view, wide.inputs[0], "Unsqueeze")
        neg = producer(view, unsq.inputs[0], "Neg") if unsq is not None else None
        if neg is None or axes_of(view, unsq) not in ([1], [-1]):
            continue
        sel = _select(view, producer(view, neg.inputs[0], "Where"))
        if sel is None or not is_zero_constant(view, sel[3]):
            continue
        target, k, per_row, _, nodes = sel
        return {"nodes": [wide, unsq, neg, *nodes], "per_row": per_row, "target": target, "ignore_index": k,
                "scaled_scatter": other}
    return (f"{node_label(add)} adds to the gradient reaching log_softmax something other than label smoothing's "
            "uniform term Expand(Unsqueeze(Neg(Where(valid, b, 0)), 1)) (other losses on log_softmax differ)")


def _is_count(view: GraphView, tensor, count, target, k) -> list | None:
    """The nodes to take over when ``tensor`` is the row count ``count``: ``[]`` for the same
    value, the nodes of another spelling of it (an exporter without CSE counts again), else None."""
    if view.value_key(tensor) == view.value_key(count):
        return []
    return _count(view, tensor, target, k)


def _scale(view: GraphView, tensor, count, target, k):
    """``(value, nodes)`` of a float32 constant scale, ``/ count`` when ``count`` is given (the
    "mean" spelling), through ``Expand`` to the rows; None if it is not one."""
    nodes = []
    wide = producer(view, tensor, "Expand")
    if wide is not None:
        nodes.append(wide)
        tensor = wide.inputs[0]
    if count is not None:
        div = producer(view, tensor, "Div")
        counted = _is_count(view, div.inputs[1], count, target, k) if div is not None and len(div.inputs) == 2 \
            else None
        if counted is None:
            return None
        nodes += [div, *counted]
        tensor = div.inputs[0]
    value = view.uniform(tensor)
    mul = producer(view, tensor, "Mul") if value is None else None
    if mul is not None and len(mul.inputs) == 2:  # dloss * scale (dloss spelled from the loss's shape)
        parts = [view.uniform(t) for t in mul.inputs]
        if None not in parts:
            value = np.float32(parts[0]) * np.float32(parts[1])
            nodes.append(mul)
    return None if value is None else (float(value), nodes)


def _smoothed_forward(view: GraphView, lsm: gs.Node, nll, count, target, k, smoothing: dict):
    """``(loss, eps, dloss, nodes)`` of label smoothing's forward ``Add(Mul(nll, a), Mul(smooth,
    b))`` over the loss ``nll``, with eps and dloss from its constants and the gradient's, or the
    reason."""
    classes = view.shape(lsm.outputs[0])[1]
    scaled = consumers_of(view, nll, "Mul")
    if len(scaled) != 1 or len(view.consumers(nll)) != 1:
        return f"the loss {nll.name} is not scaled once by 1 - label_smoothing"
    adds = consumers_of(view, scaled[0].outputs[0], "Add")
    if len(adds) != 1 or len(adds[0].inputs) != 2:
        return f"the scaled loss {scaled[0].outputs[0].name} is not added once to a smoothing term"
    add = adds[0]
    a = view.scalar(next(t for t in scaled[0].inputs if t is not nll))
    other = add.inputs[1] if add.inputs[0] is scaled[0].outputs[0] else add.inputs[0]
    mul_b = producer(view, other, "Mul")
    if a is None or mul_b is None or len(mul_b.inputs) != 2:
        return "the label-smoothed loss is not nll * a + smooth * b with constants a and b"
    for smooth, b in ((mul_b.inputs[0], mul_b.inputs[1]), (mul_b.inputs[1], mul_b.inputs[0])):  # noqa: B007
        if view.scalar(b) is not None:
            break
    else:
        return f"{node_label(mul_b)} does not scale the smoothing term by a constant"
    b = float(view.scalar(b))
    nodes = [scaled[0], add, mul_b]
    total = smooth
    if count is not None:  # "mean": smooth = total / count
        div = producer(view, smooth, "Div")
        counted = _is_count(view, div.inputs[1], count, target, k) if div is not None and len(div.inputs) == 2 \
            else None
        if counted is None:
            return f"the smoothing term {smooth.name} is not divided by the row count, as the loss is"
        nodes += [div, *counted]
        total = div.inputs[0]
    red = producer(view, total, "ReduceSum")
    sel = _select(view, producer(view, red.inputs[0], "Where")) if red is not None and reduces_all(view, red, 1) \
        else None
    if sel is None or sel[1] != k or not _same_target(view, sel[0], target) or not is_zero_constant(view, sel[3]):
        return f"the smoothing term {total.name} is not the sum of Where(target != {k}, row term, 0)"
    neg = producer(view, sel[2], "Neg")
    row_sum = producer(view, neg.inputs[0], "ReduceSum") if neg is not None else None
    if row_sum is None or row_sum.inputs[0] is not lsm.outputs[0] or axes_of(view, row_sum) not in ([1], [-1]) \
            or attr(row_sum, "keepdims", 1) != 0:
        return "the smoothing term's rows are not -ReduceSum(log_softmax, axes=[1]) (class weights?)"
    nodes += [red, *sel[4], neg, row_sum]
    eps = b * classes  # (b = eps / C keeps eps's precision; a = 1 - eps rounded loses some of it)
    if not 0.0 <= eps <= 1.0 + 1e-6 or abs((1.0 - float(a)) - eps) > 1e-6:
        return (f"the smoothing constants a = {float(a)!r}, b = {b!r} are not 1 - eps and eps / C for one eps "
                f"in [0, 1] (C = {classes})")
    scale_a = _scale(view, smoothing["scaled_scatter_weight"], count, target, k)
    scale_b = _scale(view, smoothing["per_row"], count, target, k)
    if scale_a is None or scale_b is None:
        return "the label-smoothed gradient's scales are not constants (dloss * (1 - eps), dloss * eps / C)"
    nodes += scale_a[1] + scale_b[1]
    dloss = scale_b[0] / b if b != 0.0 else scale_a[0] / float(a)
    if abs(scale_a[0] - dloss * float(a)) > 1e-6 * max(1.0, abs(scale_a[0])):
        return (f"the gradient's scales {scale_a[0]!r}, {scale_b[0]!r} are not one dloss times the loss's "
                f"{float(a)!r}, {b!r}")
    return add.outputs[0], float(np.float32(min(eps, 1.0))), float(np.float32(dloss)), nodes


def replacement(view: GraphView, site: Site, name: str) -> list:
    (loss,) = site.outputs
    dloss = site.caps["dloss"]
    if "dloss_value" in site.caps:
        dloss = gs.Constant(f"{name}/dloss", np.array(site.caps["dloss_value"], np.float32))
    inputs = [site.caps["logits"], site.caps["target"], dloss]
    weight = site.caps.get("weight")
    if weight is not None:
        inputs.append(gs.Constant(f"{name}/weight", weight) if isinstance(weight, np.ndarray) else weight)
    return [gs.Node(OP, name, domain=DOMAIN, attrs=dict(site.attributes), inputs=inputs,
                    outputs=[loss, site.output])]


RULE = Rule(NAME, "Sub", pattern, check, replacement,
            needs("LogSoftmax", "Exp", "GatherElements", "ScatterElements"), __doc__.splitlines()[0])
