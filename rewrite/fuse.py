"""``fuse_elu_grad``: replace every ELU backward subgraph by ``ai.ortops::EluGrad``."""

from __future__ import annotations

import contextlib
import gc
import time
from typing import NamedTuple

import onnx
import onnx_graphsurgeon as gs

from ort_ops import DOMAIN, OPSET_VERSION
from rewrite.graph_view import GraphView, node_label
from rewrite.report import RewriteReport, SiteReport
from rewrite.rules import RULES, Site

_ANCHORS = frozenset(rule.anchor for rule in RULES)


def has_candidates(graph: onnx.GraphProto) -> bool:
    """Cheap protobuf-only test: could any rule match? (No graphsurgeon graph is built.)

    True when the graph has a foreign ``EluGrad`` node, or an ``Elu`` together with a
    ``Where`` whose then-branch is made by a ``Mul`` or a ``Mul`` fed by an ``Add`` of a ``Min``.
    """
    nodes = graph.node
    op_types = [node.op_type for node in nodes]  # one pass over the protobuf, no wrappers kept
    if "EluGrad" in op_types and any(
        op == "EluGrad" and nodes[i].domain != DOMAIN for i, op in enumerate(op_types)
    ):
        return True
    if "Elu" not in op_types or ("Where" not in op_types and "Mul" not in op_types):
        return False
    producer_op: dict[str, str] = {}
    anchors = []
    for node, op in zip(nodes, op_types):
        if op == "Where" or op == "Mul":
            anchors.append(node)
        for out in node.output:
            producer_op[out] = op
    for node in anchors:
        if node.op_type == "Where":
            if len(node.input) == 3 and producer_op.get(node.input[1]) in ("Mul", "Identity"):
                return True
        elif any(producer_op.get(i) == "Add" for i in node.input):
            return True
    return False


def _site_report(site: Site, status: str, reason: str | None) -> SiteReport:
    name = lambda t: None if t is None else t.name  # noqa: E731
    output = site.output if site.output is not None else site.root.outputs[0]
    return SiteReport(
        rule=site.rule, status=status, nodes=[node_label(n) for n in site.nodes],
        output=output.name, grads=name(site.grads), activations=name(site.activations),
        dtype=site.dtype, alpha=site.alpha if reason is None else None,
        exact=site.exact if reason is None else None, notes=list(site.notes), reason=reason,
    )


def find_sites(view: GraphView, strict: bool, report: RewriteReport) -> list[tuple]:
    """Try every rule on its anchor nodes (rule order = priority); returns accepted sites."""
    by_op: dict[str, list[gs.Node]] = {op: [] for op in _ANCHORS}
    for node in view.graph.nodes:
        if node.op in by_op:
            by_op[node.op].append(node)
    claimed: set[int] = set()
    accepted = []
    for rule in RULES:
        for node in by_op[rule.anchor]:
            if id(node) in claimed:
                continue
            site = rule.pattern(view, node)
            if site is None or any(id(n) in claimed for n in site.nodes):
                continue
            reason = rule.check(view, site)
            if reason is None and strict and not site.exact:
                reason = "strict: not provably unchanged (" + "; ".join(site.notes) + ")"
            report.sites.append(_site_report(site, "fused" if reason is None else "rejected", reason))
            if reason is None:
                claimed.update(id(n) for n in site.nodes)
                accepted.append((rule, site))
    return accepted


def inspect_elu_grad(model: onnx.ModelProto, strict: bool = False) -> RewriteReport:
    """Every candidate site and whether / why it would be fused (nothing is changed)."""
    report = RewriteReport("inspect", strict)
    if has_candidates(model.graph):
        with _gc_paused():
            find_sites(GraphView(import_graph(model), model), strict, report)
        for site in report.sites:
            if site.status == "fused":
                site.status = "would fuse"
    return report


def fuse_elu_grad(
    model: onnx.ModelProto, strict: bool = False, *, report: RewriteReport | None = None
) -> onnx.ModelProto:
    """A new model with every ELU backward subgraph replaced by ``ai.ortops::EluGrad``.

    The input model is never modified; a model without ELU backward is recognised from the
    protobuf alone (no graphsurgeon graph is built) and returned as an unchanged copy.
    Pass a :class:`RewriteReport` as ``report`` to receive one entry per candidate site (and,
    in ``report.timings``, the seconds spent per phase: scan, import, match, edit, cleanup,
    export).

    ``strict=False`` (default) fuses every recognised ELU backward and records in the report
    how the result may differ (rounding, the ``<=`` boundary at 0, NaN propagation).
    ``strict=True`` fuses only sites whose result is *provably unchanged*, i.e. bit-identical
    for every input: the output-based form with ``Less`` (EluGrad's own formula), with
    ``LessOrEqual`` only for alpha = 1, and foreign EluGrad nodes. PyTorch's input-based form
    ``Where(X <= 0, dY*alpha*exp(X), dY)`` is never fused in strict mode, *not even for
    alpha = 1*: the ``<=``/``<`` boundary then agrees, but EluGrad computes ``dY*(Y + 1)`` with
    ``Y = Elu(X)`` already rounded, while the original computes ``dY*exp(X)``; the two differ
    in the last bits for many X (tests/rewrite/test_fuse_performance_paths.py shows it in ORT),
    so the result is not provably unchanged.

    The graph keeps its node order: each EluGrad takes the place of the node whose output it
    produces, dead nodes are removed by graphsurgeon's ``cleanup()``, and ``toposort()`` runs
    only when an EluGrad would otherwise read a tensor produced further down.
    """
    report = report if report is not None else RewriteReport()
    report.pass_name, report.strict = "fuse", strict
    timer = PhaseTimer(report.timings)
    with timer("scan"):
        candidates = has_candidates(model.graph)
    if not candidates:
        return _copy(model)
    with _gc_paused():
        fused = _fuse_with_gs(model, strict, report, timer)
    return fused if fused is not None else _copy(model)


def _fuse_with_gs(model, strict: bool, report: RewriteReport, timer) -> onnx.ModelProto | None:
    """The graphsurgeon part of :func:`fuse_elu_grad` (None: nothing accepted).

    A function of its own so that the gs graph is unreachable before the collector resumes:
    otherwise the first collection after ``gc.enable()`` traverses the whole live graph
    (about 0.8 s at 100k nodes) only to find it still in use."""
    with timer("import"):
        graph = import_graph(model)
    with timer("match"):
        view = GraphView(graph, model)
        accepted = find_sites(view, strict, report)
    if not accepted:
        return None
    with timer("edit"):
        keep_alive = originally_unused(graph, model.graph)
        replaced = {}
        for rule, site in accepted:
            producer = view.producer(site.output)
            producer.outputs.clear()
            replaced[id(producer)] = [rule.replacement(view, site)]
        new_nodes = splice(graph, replaced)
    with timer("cleanup"):
        missing = cleanup(graph, keep_alive, new_nodes)
    with timer("export"):
        return export(model, graph, missing, add_domain=True)


class PhaseTimer:
    """``with timer("phase"):`` adds the block's wall time to ``timings["phase"]``."""

    def __init__(self, timings: dict[str, float]):
        self.timings = timings

    @contextlib.contextmanager
    def __call__(self, phase: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings[phase] = self.timings.get(phase, 0.0) + time.perf_counter() - start


@contextlib.contextmanager
def _gc_paused():
    """Pause Python's cyclic garbage collector while a graphsurgeon graph is built and edited.

    graphsurgeon allocates several objects per node and tensor (all in reference cycles); with
    the collector running, its repeated generation-2 passes over the growing heap cost about a
    third of the import time on a 100k-node graph. The previous state is restored afterwards.
    Callers drop the graph inside the block, so the first (generation-0: nothing was promoted
    meanwhile) collection after it frees the whole graph in one pass.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def import_graph(model: onnx.ModelProto) -> gs.Graph:
    """``gs.import_onnx`` of a private copy: gs's export writes into the protos it imported
    (opset list, names of Constant-attribute tensors), and the caller's model must not change.
    (The copy is a protobuf-level ``CopyFrom``: a few hundredths of a second at 100k nodes.)"""
    graph = gs.import_onnx(_copy(model))
    graph.import_domains = None
    return graph


def _copy(model: onnx.ModelProto) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(model)
    return out


def splice(graph: gs.Graph, replaced: dict[int, list[gs.Node]]) -> list[gs.Node]:
    """Put ``replaced[id(node)]`` right after ``node`` in ``graph.nodes`` (one pass, order kept).

    The replaced node itself stays in place, detached, for :func:`cleanup` to remove.
    Returns the inserted nodes.
    """
    nodes, inserted = [], []
    for node in graph.nodes:
        nodes.append(node)
        new = replaced.get(id(node))
        if new:
            nodes.extend(new)
            inserted.extend(new)
    graph.nodes = nodes
    return inserted


def _out_of_order(graph: gs.Graph, new_nodes: list[gs.Node]) -> bool:
    """Does any inserted node read a tensor produced by a node placed after it?"""
    if not new_nodes:
        return False
    position = {id(node): i for i, node in enumerate(graph.nodes)}
    for node in new_nodes:
        here = position[id(node)]
        for tensor in node.inputs:
            for producer in tensor.inputs:
                if position.get(id(producer), -1) > here:
                    return True
    return False


class Unused(NamedTuple):
    """What nothing read before the edit (gs ``cleanup()`` would drop it; it must stay)."""

    outputs: list  # gs tensors: node outputs without consumers that are not graph outputs
    initializers: set[str]  # initializer names (gs never exports unreferenced ones)
    has_subgraph: bool = True  # False: cleanup() need not recurse (same result, less work)


def originally_unused(graph: gs.Graph, proto: onnx.GraphProto) -> Unused:
    """Node outputs and initializers that nothing reads, from the gs graph (before the edit).

    One pass over the gs nodes (consumers are already linked there); the protobuf is only
    read for the initializer names and, if any node has a subgraph, for the names it uses.
    """
    graph_outputs = {t.name for t in graph.outputs}
    used = set(graph_outputs)
    dangling, has_subgraph = [], False
    for node in graph.nodes:
        for tensor in node.inputs:
            used.add(tensor.name)
        for tensor in node.outputs:
            if not tensor.outputs and tensor.name and tensor.name not in graph_outputs:
                dangling.append(tensor)
        if not has_subgraph and node.attrs:
            has_subgraph = any(_is_graphs(v) for v in node.attrs.values())
    if has_subgraph:
        _subgraph_uses(proto, used)
        dangling = [t for t in dangling if t.name not in used]
    unused_inits = {t.name for t in proto.initializer if t.name not in used}
    return Unused(dangling, unused_inits, has_subgraph)


def _is_graphs(value) -> bool:
    """A graph attribute value (one gs.Graph or a non-empty list of them)."""
    if isinstance(value, gs.Graph):
        return True
    return isinstance(value, list) and bool(value) and isinstance(value[0], gs.Graph)


def cleanup(graph: gs.Graph, keep_alive: Unused, new_nodes: list[gs.Node]) -> set[str]:
    """graphsurgeon ``cleanup()`` (+ ``toposort()`` when the edit broke the order).

    ``keep_alive`` (what was unused before the edit) survives; returns the names of unused
    initializers, which gs drops anyway, for :func:`export` to put back.
    """
    extra_outputs = keep_alive.outputs
    if extra_outputs:
        graph.outputs.extend(extra_outputs)
    graph.cleanup(remove_unused_graph_inputs=False, recurse_subgraphs=keep_alive.has_subgraph)
    if _out_of_order(graph, new_nodes):
        graph.toposort()
    if extra_outputs:
        del graph.outputs[len(graph.outputs) - len(extra_outputs):]
    return keep_alive.initializers


def export(
    original: onnx.ModelProto, graph: gs.Graph, missing: set[str], *, add_domain: bool
) -> onnx.ModelProto:
    """gs export, keeping the original model's other fields, opsets and dropped initializers."""
    exported = gs.export_onnx(graph, do_type_check=False)
    out = onnx.ModelProto()
    for desc, value in original.ListFields():
        if desc.name not in ("graph", "opset_import"):
            _copy_field(out, desc, value)
    out.graph.CopyFrom(exported.graph)
    if missing:
        have = {t.name for t in out.graph.initializer}
        out.graph.initializer.extend(
            t for t in original.graph.initializer if t.name in missing and t.name not in have)
    if original.graph.HasField("doc_string"):
        out.graph.doc_string = original.graph.doc_string
    if hasattr(original.graph, "metadata_props"):
        del out.graph.metadata_props[:]
        out.graph.metadata_props.extend(original.graph.metadata_props)
    opsets = [op for op in original.opset_import if add_domain or op.domain != DOMAIN]
    if add_domain and not any(op.domain == DOMAIN for op in opsets):
        opsets.append(onnx.helper.make_opsetid(DOMAIN, OPSET_VERSION))
    out.opset_import.extend(opsets)
    return out


def _subgraph_uses(graph: onnx.GraphProto, used: set[str]) -> None:
    for node in graph.node:
        for attr in node.attribute:
            for sub in list(attr.graphs) + ([attr.g] if attr.HasField("g") else []):
                used.update(name for n in sub.node for name in n.input)
                _subgraph_uses(sub, used)


def _copy_field(out, desc, value) -> None:
    repeated = getattr(desc, "is_repeated", None)
    if repeated is None:
        repeated = desc.label == desc.LABEL_REPEATED
    if repeated:
        getattr(out, desc.name).extend(value)
    elif desc.message_type is not None:
        getattr(out, desc.name).CopyFrom(value)
    else:
        setattr(out, desc.name, value)
