"""Transposes folded into their consumers, a step of :func:`ort_ops.rewrite.placement.place`.

On CANN every Transpose is a launch and a copy of its tensor, while Gemm's ``transA`` / ``transB``
(CANN MatMulV2's ``transpose_x1`` / ``transpose_x2``) read an operand transposed as it is. Two folds,
repeated until neither applies:

- ``Transpose(Transpose(x, p), q)`` where ``q`` undoes ``p``: the outer one's consumers read ``x``;
- ``Transpose(x)`` of a 2-D ``x`` (perm [1, 0]) whose every consumer reads it as a ``Gemm``'s A or B,
  or as an operand of a ``MatMul`` of two 2-D tensors: they read ``x`` with the matching flag
  toggled (such a MatMul becomes ``Gemm(A, B)``, no C: the same product), and the Transpose goes.

Both are exact: a transpose only moves values, and a Gemm with a flag computes the product of the
operand it would have been given. A Transpose stays when its output is a graph output or is read
inside a subgraph, when a consumer cannot take the flag, or when ``can_place`` says a Gemm it would
change would not be placed on CANN (then folding would move work, not remove it). Only the main
graph is looked at, as by the rest of the pass.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable

import onnx
from onnx import helper

_ONNX = ("", "ai.onnx")
_GEMM_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16}
_MIN_GEMM_OPSET = 11  # Gemm's C is optional from opset 11: a MatMul becomes Gemm(A, B)


def _attr(node: onnx.NodeProto, name: str, default=None):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _set_int(node: onnx.NodeProto, name: str, value: int) -> None:
    kept = [a for a in node.attribute if a.name != name]
    del node.attribute[:]
    node.attribute.extend(kept)
    if value:
        node.attribute.append(helper.make_attribute(name, value))


def _perm(node: onnx.NodeProto, shapes: dict) -> list[int] | None:
    perm = _attr(node, "perm")
    if perm is not None:
        return [int(p) for p in perm]
    shape = shapes.get(node.input[0]) if node.input else None
    return None if shape is None else list(range(len(shape)))[::-1]  # default: reverse the dims


def _subgraph_names(graph: onnx.GraphProto, names: set) -> None:
    """Every tensor name a node inside ``graph``'s subgraphs reads (outer-scope reads included)."""
    for node in graph.node:
        for a in node.attribute:
            for g in ([a.g] if a.type == onnx.AttributeProto.GRAPH else
                      a.graphs if a.type == onnx.AttributeProto.GRAPHS else []):
                for inner in g.node:
                    names.update(n for n in inner.input if n)
                _subgraph_names(g, names)


def fold_transposes(model: onnx.ModelProto, shapes: dict, types: dict, opset: int,
                    can_place: Callable[[onnx.NodeProto], bool]) -> list[tuple[onnx.NodeProto, str]]:
    """Folds ``model``'s main-graph Transposes in place; returns each removed node and why.

    ``shapes`` / ``types``: static shapes and ONNX element types of the tensors (what the pass
    inferred); ``can_place(gemm)``: whether the Gemm node ``gemm`` would be placed on CANN."""
    graph = model.graph
    work = deque(n for n in graph.node if n.op_type == "Transpose" and n.domain in _ONNX)
    if not work:
        return []
    kept_names = {o.name for o in graph.output}
    _subgraph_names(graph, kept_names)
    producers = {o: n for n in graph.node for o in n.output if o}
    # tensor -> {(id(node), slot): (node, slot)}: a fold removes and moves readers in O(1) each
    consumers: dict[str, dict[tuple[int, int], tuple[onnx.NodeProto, int]]] = defaultdict(dict)
    for n in graph.node:
        for slot, name in enumerate(n.input):
            if name:
                consumers[name][(id(n), slot)] = (n, slot)
    removed: list[tuple[onnx.NodeProto, str]] = []
    gone: set[int] = set()
    while work:  # each fold updates the two maps and queues the Transposes it may have made foldable
        t = work.popleft()
        if id(t) in gone or not t.input or t.output[0] in kept_names:
            continue
        source = t.input[0]
        folded = _fold_inverse_pair(t, producers, consumers, shapes) or \
            _fold_into_products(t, consumers, shapes, types, opset, can_place)
        if folded is None:
            continue
        why, now_read = folded
        gone.add(id(t))
        removed.append((t, why))
        moved = consumers.pop(t.output[0], {})
        consumers[source].pop((id(t), 0), None)
        consumers[now_read].update(moved)
        for name in (source, now_read):
            p = producers.get(name)
            if p is not None and p.op_type == "Transpose" and id(p) not in gone:
                work.append(p)
        work.extend(n for n, _ in moved.values() if n.op_type == "Transpose")
    if gone:
        keep = [n for n in graph.node if id(n) not in gone]
        del graph.node[:]
        graph.node.extend(keep)
    return removed


def _fold_inverse_pair(t, producers, consumers, shapes) -> tuple[str, str] | None:
    """(why, the tensor t's consumers now read), or None."""
    inner = producers.get(t.input[0])
    if inner is None or inner.op_type != "Transpose" or inner.domain not in _ONNX:
        return None
    p, q = _perm(inner, shapes), _perm(t, shapes)
    if p is None or q is None or len(p) != len(q) or any(p[q[j]] != j for j in range(len(q))):
        return None
    source = inner.input[0]
    for node, slot in consumers.get(t.output[0], {}).values():
        node.input[slot] = source
    return f"undoes Transpose {inner.name or inner.output[0]}: its consumers read {source}", source


def _fold_into_products(t, consumers, shapes, types, opset, can_place) -> tuple[str, str] | None:
    """(why, the tensor t's consumers now read), or None."""
    source, out = t.input[0], t.output[0]
    if _perm(t, shapes) != [1, 0] or types.get(source) not in _GEMM_TYPES:
        return None
    users = list(consumers.get(out, {}).values())
    if not users:
        return None
    plans: dict[int, onnx.NodeProto] = {}  # id(consumer) -> its replacement
    originals: dict[int, onnx.NodeProto] = {}
    for node, slot in users:
        new = plans.get(id(node))
        if new is None:
            new = onnx.NodeProto()
            new.CopyFrom(node)
            if node.domain not in _ONNX:
                return None
            if node.op_type == "MatMul":
                a, b = (shapes.get(n) for n in node.input[:2])
                if opset < _MIN_GEMM_OPSET or a is None or b is None or len(a) != 2 or len(b) != 2:
                    return None
                new.op_type = "Gemm"
            elif node.op_type != "Gemm":
                return None
            plans[id(node)], originals[id(node)] = new, node
        if slot > 1:  # Gemm's C: no flag for it
            return None
        flag = "transA" if slot == 0 else "transB"
        new.input[slot] = source
        _set_int(new, flag, 1 - int(_attr(new, flag, 0)))
    if not all(can_place(new) for new in plans.values()):
        return None
    for key, new in plans.items():
        originals[key].CopyFrom(new)
    kinds = sorted({originals[k].name or originals[k].output[0] for k in plans})
    return f"folded into {', '.join(kinds)} (transA/transB): they read {source}", source
