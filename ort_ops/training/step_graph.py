"""One ONNX graph per training step: the training graph followed by the optimizer's update graph.

:class:`ort_ops.training.Trainer` runs a step as a single ORT run of this graph. Two sessions (one
for the gradients, one for the update) cost more than the update itself: each has its own
intra-op thread pool, and the idle pool's spinning threads compete with the busy one for the
cores (2 cores, ELU MLP 64-1024-1024-10, batch 256, ``benchmarks/bench_training.py``: ORT
with fused EluGrad at 34 steps/s with two sessions, 61-83 steps/s with one graph).

The update graph's interface names (parameters, ``grad.<name>``, state ``<slot>.<name>``,
step scalars; outputs ``new.*``) are kept; everything internal to it (intermediate values,
constants) is renamed under :data:`UPDATE_PREFIX`, and its nodes are named
``update/<index>/<op type>`` so profiles tell update nodes from training nodes.

A training graph's buffer state (inputs ``<buffer>``, outputs ``new.<buffer>``: BatchNorm's running
statistics) passes through unchanged: the update graph neither reads nor writes it, and its own
``new.*`` names may not collide with the training graph's (``ValueError`` below).
"""

from __future__ import annotations

from collections.abc import Iterable

import onnx

from ort_ops.domain import DOMAIN

UPDATE_PREFIX = "update/"

# The update graphs (ort_ops.training.optim) use only these ops: standard ones whose float
# semantics have not changed since opset 7 (the merged graph keeps the training graph's opset;
# Cast: float64 -> float32 as since opset 6, later versions only add types and float8's saturate),
# and the library's fused optimizer ops (the merged graph imports the library's opset).
_UPDATE_OPS = {("", "Add"), ("", "Sub"), ("", "Mul"), ("", "Div"), ("", "Sqrt"), ("", "Identity"), ("", "Cast"),
               (DOMAIN, "SGDUpdate"), (DOMAIN, "AdamUpdate")}
_MIN_OPSET = 7


def _default_opset(model: onnx.ModelProto) -> int | None:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)


def build_step_graph(training: onnx.ModelProto, update: onnx.ModelProto,
                     params: Iterable[str]) -> onnx.ModelProto:
    """``training`` with ``update``'s nodes appended, its gradients feeding the update.

    ``params``: the parameter names, the inputs the two graphs share.

    Inputs: the training graph's, then the update graph's that the training graph lacks (state,
    step scalars). Outputs: the training graph's (``loss``, ``grad.*``), then ``new.*``.
    ``ValueError`` if a name of the update graph's interface is already used by the training
    graph for something else, or the training graph's opset is too old for the update ops.
    """
    opset = _default_opset(training)
    if opset is None or opset < _MIN_OPSET:
        raise ValueError(f"training graph imports ONNX opset {opset}; the optimizer update needs >= {_MIN_OPSET}")
    odd = sorted({f"{n.domain}::{n.op_type}" if n.domain else n.op_type for n in update.graph.node
                  if ("" if n.domain == "ai.onnx" else n.domain, n.op_type) not in _UPDATE_OPS})
    if odd:
        raise ValueError(f"update graph uses ops {odd} that the step graph does not know to be opset-stable")
    imports = {o.domain: o.version for o in training.opset_import}
    for o in update.opset_import:
        if o.domain in ("", "ai.onnx"):
            continue
        if o.domain in imports and imports[o.domain] != o.version:
            raise ValueError(f"the training graph imports {o.domain} version {imports[o.domain]}, the update graph "
                             f"version {o.version}")

    params = set(params)
    tg, ug = training.graph, update.graph
    t_inputs = {i.name: i for i in tg.input}
    t_outputs = {o.name for o in tg.output}
    t_values = ({o for n in tg.node for o in n.output} | {t.name for t in tg.initializer}
                | set(t_inputs))
    u_inputs = [i for i in ug.input]
    grads = {i.name for i in u_inputs if i.name in t_outputs}
    for i in u_inputs:
        if i.name in grads:
            continue
        if i.name in params:  # shared: must be the same tensor type
            if i.name not in t_inputs:
                raise ValueError(f"parameter {i.name!r} is not an input of the training graph")
            if t_inputs[i.name].type.tensor_type.elem_type != i.type.tensor_type.elem_type:
                raise ValueError(f"update input {i.name!r} has another dtype than the training graph's input")
        elif i.name in t_values or i.name in t_outputs:
            raise ValueError(f"update input {i.name!r} is already a value of the training graph")
    for o in ug.output:
        if o.name in t_values or o.name in t_outputs:
            raise ValueError(f"update output {o.name!r} is already a value of the training graph")

    interface = {i.name for i in u_inputs} | {o.name for o in ug.output}
    internal = ({o for n in ug.node for o in n.output} | {t.name for t in ug.initializer}) - interface

    def rename(name: str) -> str:
        return UPDATE_PREFIX + name if name in internal else name

    clash = sorted(rename(n) for n in internal if rename(n) in t_values)
    if clash:
        raise ValueError(f"training graph already has values named {clash[:5]}")

    merged = onnx.ModelProto()
    merged.CopyFrom(training)
    for o in update.opset_import:
        if o.domain not in ("", "ai.onnx") and o.domain not in imports:
            merged.opset_import.add().CopyFrom(o)
    g = merged.graph
    for i in u_inputs:
        if i.name not in params and i.name not in grads:
            g.input.append(i)
    for t in ug.initializer:
        t2 = g.initializer.add()
        t2.CopyFrom(t)
        t2.name = rename(t.name)
    for k, n in enumerate(ug.node):
        n2 = g.node.add()
        n2.CopyFrom(n)
        n2.name = f"{UPDATE_PREFIX}{k}/{n.op_type}"
        n2.input[:] = [rename(x) for x in n.input]
        n2.output[:] = [rename(x) for x in n.output]
    g.output.extend(ug.output)
    return merged
