"""What the subgraph rules share (a multi-node stretch the exporter spells out and CANN computes
with one op: the softmax cross-entropy and the max-pool backward).

Unlike the ELU backward (one select, whose result alone is replaced), such a site replaces every
node of its pattern: the rule must show that nothing outside the pattern reads the pattern's
intermediates (:func:`exclusive`), that the fused node can sit where the pattern's last node sat
(:func:`depends_on`: none of its inputs is computed from its own outputs), and it reads attribute
and small-constant values with the helpers below.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import onnx_graphsurgeon as gs
from onnx import TensorProto

from ort_ops.rewrite.graph_view import GraphView, is_default_domain, node_label


def attr(node: gs.Node, name: str, default=None):
    """Attribute ``name`` of ``node`` (strings decoded), ``default`` when absent."""
    value = node.attrs.get(name, default)
    return value.decode() if isinstance(value, bytes) else value


def ints(view: GraphView, tensor) -> list[int] | None:
    """The values of a small integer constant (shapes, axes), or None."""
    value = view.const(tensor)
    if value is None or value.dtype.kind not in "iu":
        return None
    return [int(v) for v in value.reshape(-1)]


def axes_of(view: GraphView, node: gs.Node) -> list[int] | None:
    """The axes of a Squeeze/Unsqueeze/ReduceSum (input 1 from opset 13, else the attribute);
    ``[]`` when absent, None when not a constant."""
    if len(node.inputs) > 1:
        return ints(view, node.inputs[1])
    return list(node.attrs.get("axes", []))


def reduces_all(view: GraphView, node: gs.Node, rank: int) -> bool:
    """A ReduceSum over every axis of a rank-``rank`` input to a scalar (``keepdims=0``)."""
    if node.op != "ReduceSum" or attr(node, "keepdims", 1) != 0:
        return False
    axes = axes_of(view, node)
    if axes is None:
        return False
    if not axes:
        return attr(node, "noop_with_empty_axes", 0) == 0
    return sorted(a % rank for a in axes) == list(range(rank)) if rank else False


def is_zero_constant(view: GraphView, tensor) -> bool:
    """A constant provably all zeros (any size; a large initializer is scanned once)."""
    value = view.uniform(tensor)
    if value is not None:
        return float(value) == 0.0
    if isinstance(tensor, gs.Constant) and getattr(tensor, "data_location", None) != TensorProto.EXTERNAL:
        values = np.asarray(tensor.values)
        return values.size > 0 and not np.any(values)
    return False


def producer(view: GraphView, tensor, *ops: str) -> gs.Node | None:
    """The default-domain producer of ``tensor`` if its op is one of ``ops`` (Identity looked through)."""
    for _ in range(8):
        node = view.producer(tensor)
        if node is None or not is_default_domain(node):
            return None
        if node.op == "Identity" and "Identity" not in ops:
            tensor = node.inputs[0]
            continue
        return node if node.op in ops else None
    return None


def consumers_of(view: GraphView, tensor, op: str) -> list[gs.Node]:
    """The default-domain consumers of ``tensor`` with op type ``op``."""
    return [n for n in view.consumers(tensor) if n.op == op and is_default_domain(n)]


def exclusive(view: GraphView, nodes: Iterable[gs.Node], results: Iterable, shared_ok: Iterable = ()) -> str | None:
    """None when every output of ``nodes`` is read only by ``nodes`` (or is one of ``results``,
    the tensors the fused op produces; ``shared_ok``: tensors that may be read elsewhere, their
    producers then stay); else the reason, naming the tensor and a reader."""
    inside = {id(n) for n in nodes}
    allowed = {id(t) for t in results} | {id(t) for t in shared_ok}
    for node in nodes:
        for tensor in node.outputs:
            if id(tensor) in allowed:
                continue
            if tensor.name in view.output_names:
                return f"{tensor.name} (computed by {node_label(node)}) is a graph output: it must stay"
            for user in tensor.outputs:
                if id(user) not in inside:
                    return (f"{tensor.name} (computed by {node_label(node)}) is also read by {node_label(user)}, "
                            "outside the pattern: the original nodes would have to stay")
    return None


def depends_on(view: GraphView, tensor, targets: Iterable, limit: int = 100_000) -> bool:
    """Whether ``tensor`` is computed from any of ``targets`` (a walk up the producers)."""
    wanted = {id(t) for t in targets}
    seen, stack = set(), [tensor]
    while stack and len(seen) < limit:
        t = stack.pop()
        if id(t) in wanted:
            return True
        if id(t) in seen:
            continue
        seen.add(id(t))
        node = view.producer(t)
        if node is not None:
            stack.extend(node.inputs)
    return len(seen) >= limit  # too far to tell: assume it does


__all__ = ["attr", "axes_of", "consumers_of", "depends_on", "exclusive", "ints", "is_zero_constant", "producer",
           "reduces_all"]
