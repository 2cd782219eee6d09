"""``lower``: replace the ``ai.ortops`` ops of a model by standard ONNX ops (one module per op in
:mod:`ort_ops.rewrite.lowerings`; EluGrad's is bit-exact in ONNX Runtime, see
:mod:`ort_ops.rewrite.lowerings.elu_grad`), in the main graph, If/Loop/Scan bodies and local functions."""

from __future__ import annotations

import onnx
import onnx_graphsurgeon as gs

from ort_ops import DOMAIN
from ort_ops.rewrite import graph_scopes
from ort_ops.rewrite.graph_scopes import NodeMetadata
from ort_ops.rewrite.graph_view import node_label, shortest
from ort_ops.rewrite.lowerings import LOWERINGS as _MODULES
from ort_ops.rewrite.report import RewriteReport, SiteReport
from ort_ops.rewrite.surgery import (
    cleanup,
    copy_model,
    export,
    gc_paused,
    import_graph,
    model_and_dir,
    originally_unused,
    splice,
)


def _has(model: onnx.ModelProto, ops) -> bool:
    lists = graph_scopes.all_node_lists(model)
    return any(n.domain == DOMAIN and n.op_type in ops for _, nodes in lists for n in nodes)


def lower(model, *, ops=None, report: RewriteReport | None = None) -> onnx.ModelProto:
    """A new model in which every ``ai.ortops`` op with a lowering (or those in ``ops``) is
    spelled with standard ONNX ops.

    ``model``: an ``onnx.ModelProto`` or a file path. The ``ai.ortops`` opset import is dropped
    (from the model and from each function) where no op of the domain remains. Raises
    ``ValueError`` when a node's dtype cannot be determined or is unsupported.
    """
    model, _ = model_and_dir(model, None)
    ops = set(_MODULES) if ops is None else set(ops)
    unknown = ops - set(_MODULES)
    if unknown:
        raise ValueError(f"no lowering for {sorted(unknown)} (lowerings: {sorted(_MODULES)})")
    report = report if report is not None else RewriteReport()
    report.pass_name = "lower"
    if not _has(model, ops):
        return copy_model(model)
    with gc_paused():
        lowered = _lower(model, ops, report)
    used = {n.domain for _, nodes in graph_scopes.all_node_lists(lowered) for n in nodes}
    if DOMAIN not in used:
        keep = [op for op in lowered.opset_import if op.domain != DOMAIN]
        del lowered.opset_import[:]
        lowered.opset_import.extend(keep)
    for f in lowered.functions:
        if not any(n.domain == DOMAIN for n in f.node):
            keep = [op for op in f.opset_import if op.domain != DOMAIN]
            del f.opset_import[:]
            f.opset_import.extend(keep)
    return lowered


def lower_elu_grad(model, *, report: RewriteReport | None = None) -> onnx.ModelProto:
    """:func:`lower` of the ``ai.ortops::EluGrad`` nodes only."""
    return lower(model, ops={"EluGrad"}, report=report)


def _lower(model: onnx.ModelProto, ops: set, report: RewriteReport) -> onnx.ModelProto:
    graph = import_graph(model)
    metadata = NodeMetadata(model)
    scopes = list(graph_scopes.scopes(graph, model, None))
    graphs = {id(s.graph): s.graph for s in scopes}
    keep_alive = {gid: originally_unused(g, model.graph if g is graph else None) for gid, g in graphs.items()}
    replaced: dict[int, dict[int, list[gs.Node]]] = {}
    edited = set()
    names = graph_scopes.NameAllocator(model)
    for scope in scopes:
        for node in [n for n in scope.graph.nodes if n.domain == DOMAIN and n.op in ops]:
            dtype = scope.view.dtype_name(node.inputs[0])
            if dtype is None:
                raise ValueError(
                    f"{node.op} {node_label(node)}: input {node.inputs[0].name} must be float32, "
                    f"float16 or bfloat16; its dtype is {scope.view.elem_type(node.inputs[0])}"
                )
            inputs, outputs, attrs = list(node.inputs), list(node.outputs), dict(node.attrs)
            base = names.new(node_label(node))
            node.outputs.clear()
            node.inputs.clear()
            replaced.setdefault(id(scope.graph), {})[id(node)] = _MODULES[node.op].nodes(base, inputs, outputs, attrs,
                                                                                         dtype)
            if scope.function is not None:
                edited.add((scope.function.domain or "", scope.function.name))
            alpha = attrs.get("alpha")
            report.sites.append(SiteReport(
                rule=f"lower_{node.op}", status="lowered", nodes=[node_label(node)], output=outputs[0].name,
                grads=inputs[0].name, activations=inputs[1].name if len(inputs) > 1 else None, dtype=dtype,
                alpha=None if alpha is None else shortest(alpha), exact=True, scope=scope.label, op=node.op,
            ))
    new_nodes = {gid: splice(graphs[gid], r) for gid, r in replaced.items()}
    missing = cleanup(graph, keep_alive, new_nodes, graphs)
    # the ai.ortops import stays: other ops of the domain may remain (lower_elu_grad drops it
    # when none does)
    out = export(model, graph, missing, add_domain=True, edited_functions=edited)
    metadata.restore(out)
    return out


# op name -> a function lowering a model's nodes of that op (the contract tests check every op has one)
LOWERINGS = {name: (lambda model, _op=name, **kw: lower(model, ops={_op}, **kw)) for name in _MODULES}

__all__ = ["LOWERINGS", "lower", "lower_elu_grad"]
