"""``fuse_elu_grad``: replace every ELU backward subgraph by ``ai.ortops::EluGrad``;
``fuse_training``: that, and the softmax cross-entropy and max-pool backward subgraphs by
``ai.ortops::SoftmaxCrossEntropyLossAndGrad`` and ``ai.ortops::MaxPoolGrad``."""

from __future__ import annotations

import contextlib
import gc
import os
import time
from collections.abc import Iterator
from typing import NamedTuple

import onnx
import onnx_graphsurgeon as gs
from onnx_graphsurgeon.exporters.onnx_exporter import OnnxExporter

from ort_ops import DOMAIN, OPSET_VERSION
from ort_ops.rewrite import graph_scopes
from ort_ops.rewrite.graph_scopes import NameAllocator, NodeMetadata, Scope
from ort_ops.rewrite.graph_view import GraphView, forget_inference, node_label, shortest
from ort_ops.rewrite.report import RewriteReport, SiteReport, ops_of_domain
from ort_ops.rewrite.rules import RULES, TRAINING_RULES, Rule, Site


def has_candidates(model: onnx.ModelProto | onnx.GraphProto, rules: tuple[Rule, ...] = RULES) -> bool:
    """Cheap protobuf-only test: could any rule match? (No graphsurgeon graph is built.)

    True when, for some rule, the graph (with its subgraphs and the model's functions) holds the
    rule's anchor op and an op of every group the rule ``needs``: the rules themselves say what
    they look for.
    """
    op_types = graph_scopes.op_types(model)
    return any(rule.could_match(op_types) for rule in rules)


def _site_report(site: Site, status: str, reason: str | None, layer: str | None, scope: str) -> SiteReport:
    name = lambda t: None if t is None else t.name
    output = site.output if site.output is not None else site.root.outputs[0]
    fused = reason is None
    return SiteReport(
        rule=site.rule, status=status, nodes=[node_label(n) for n in site.nodes],
        output=", ".join([output.name, *(t.name for t in site.outputs)]) if fused else output.name,
        grads=name(site.grads), activations=name(site.activations),
        dtype=site.dtype, alpha=shortest(site.alpha) if fused and site.op == "EluGrad" else None,
        exact=site.exact if fused else None, notes=list(site.notes), reason=reason,
        layer=layer, scope=scope, op=site.op, attributes=dict(site.attributes) if fused else {},
    )


def find_sites(view: GraphView, strict: bool, report: RewriteReport, metadata=None,
               scope: str = "main graph", rules: tuple[Rule, ...] = RULES) -> list[tuple]:
    """Try every rule on its anchor nodes of one scope (rule order = priority); returns the
    accepted sites. A node roots at most one site; sites may read the same nodes. ``metadata``
    names each site's layer (a :class:`NodeMetadata` or a :class:`ProtoIndex`)."""
    by_op: dict[str, list[gs.Node]] = {rule.anchor: [] for rule in rules}
    for node in view.graph.nodes:
        if node.op in by_op:
            by_op[node.op].append(node)
    claimed: set[int] = set()
    accepted = []
    for rule in rules:
        for node in by_op[rule.anchor]:
            if id(node) in claimed:
                continue
            site = rule.pattern(view, node)
            if site is None:
                continue
            before = set(view.unreadable) if view.unreadable else ()
            reason = rule.check(view, site)
            new = [n for n in view.unreadable if n not in before] if view.unreadable else ()
            if reason is not None and new and "could not be read" not in reason and "unknown" not in reason:
                reason += "; values that could not be read: " + "; ".join(f"{n}: {view.unreadable[n]}" for n in new)
            if reason is None and strict and not site.exact:
                reason = "strict: not provably unchanged (" + "; ".join(site.notes) + ")"
            forward = site.caps.get("elu") or site.caps.get("forward")  # the layer's forward node
            layer = metadata.layer(forward if forward is not None else site.root) if metadata is not None else None
            report.sites.append(_site_report(site, "fused" if reason is None else "rejected", reason, layer, scope))
            if reason is None:
                claimed.add(id(node))
                accepted.append((rule, site))
    return accepted


def _model_and_dir(model, base_dir):
    """A ModelProto (loaded without its external data) and the folder its external data is in."""
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        loaded = onnx.load(path, load_external_data=False)
        return loaded, base_dir if base_dir is not None else os.path.dirname(os.path.abspath(path))
    if not isinstance(model, onnx.ModelProto):
        raise TypeError(f"expected an onnx.ModelProto or a file path, got {type(model).__name__}")
    return model, base_dir


def inspect_elu_grad(model, strict: bool = False, *, base_dir: str | None = None,
                     rules: tuple[Rule, ...] = RULES) -> RewriteReport:
    """Every candidate site and whether / why it would be fused (nothing is changed)."""
    model, base_dir = _model_and_dir(model, base_dir)
    report = RewriteReport("inspect", strict)
    report.already_fused = ops_of_domain(model, DOMAIN)
    if has_candidates(model, rules):
        with _gc_paused():
            graph = import_graph(model)
            metadata = NodeMetadata(model)
            try:
                for scope in graph_scopes.scopes(graph, model, base_dir):
                    find_sites(scope.view, strict, report, metadata, scope.label, rules)
            finally:
                forget_inference()
        for site in report.sites:
            if site.status == "fused":
                site.status = "would fuse"
    return report


def inspect_training(model, strict: bool = False, *, base_dir: str | None = None) -> RewriteReport:
    """:func:`inspect_elu_grad` with every rule of :func:`fuse_training`."""
    return inspect_elu_grad(model, strict, base_dir=base_dir, rules=TRAINING_RULES)


def fuse_training(
    model, strict: bool = False, *, report: RewriteReport | None = None, base_dir: str | None = None
) -> onnx.ModelProto:
    """:func:`fuse_elu_grad`, and the other subgraphs of exported training graphs that CANN
    computes with one op (``rewrite.rules.TRAINING_RULES``): the softmax cross-entropy loss and
    its gradient (``F.cross_entropy``, reduction mean or sum, any ignore_index) becomes
    ``ai.ortops::SoftmaxCrossEntropyLossAndGrad``, the max-pool backward (``nn.MaxPool2d``)
    ``ai.ortops::MaxPoolGrad`` (the forward MaxPool loses its Indices output).

    Neither is bit-identical to what it replaces (the report's notes say where they differ), so
    ``strict=True`` fuses only the ELU sites that are."""
    return fuse_elu_grad(model, strict, report=report, base_dir=base_dir, rules=TRAINING_RULES)


def fuse_elu_grad(
    model, strict: bool = False, *, report: RewriteReport | None = None, base_dir: str | None = None,
    rules: tuple[Rule, ...] = RULES,
) -> onnx.ModelProto:
    """A new model with every ELU backward subgraph replaced by ``ai.ortops::EluGrad``.

    ``model``: an ``onnx.ModelProto`` or the path of a model file. The input is never modified;
    a model without ELU backward is recognised from the protobuf alone (no graphsurgeon graph is
    built) and returned as an unchanged copy. Sites inside If/Loop/Scan bodies and model-local
    functions are fused too. ``base_dir``: the folder of the model's external data (default: the
    file's folder), read only for the small constants a rule needs the value of.

    Pass a :class:`RewriteReport` as ``report`` to receive one entry per candidate site (and,
    in ``report.timings``, the seconds spent per phase: scan, import, match, edit, cleanup,
    export).

    ``strict=False`` (default) fuses every recognised ELU backward and records in the report
    how the result may differ (rounding, the ``<=`` boundary at 0, NaN propagation).
    ``strict=True`` fuses only sites whose result is *provably unchanged*, i.e. bit-identical
    for every input: the output-based form with ``Less`` (EluGrad's own formula), with
    ``LessOrEqual`` only for alpha = 1, and foreign EluGrad nodes. PyTorch's input-based form
    ``Where(X <= 0, dY*alpha*exp(X), dY)`` is never fused in strict mode, *not even for
    alpha = 1*: EluGrad computes ``dY*(Y + 1)`` with ``Y = Elu(X)`` already rounded, while the
    original computes ``dY*exp(X)``; the two differ in the last bits for many X.

    The graph keeps its node order and every node's name, doc string and metadata: each EluGrad
    takes the place of the node whose output it produces (and that node's metadata; its name is
    new and unique in the model), the nodes nothing reads any more are removed, and
    ``toposort()`` runs only when an EluGrad would otherwise read a tensor produced further down.
    In a model without subgraphs or functions every node the pass did not touch is written as
    its original protobuf, byte for byte (:func:`export_keeping_protos`); otherwise graphsurgeon
    exports the graph and the doc strings and metadata are put back.
    """
    model, base_dir = _model_and_dir(model, base_dir)
    report = report if report is not None else RewriteReport()
    report.pass_name, report.strict = "fuse", strict
    report.already_fused = ops_of_domain(model, DOMAIN)
    timer = PhaseTimer(report.timings)
    with timer("scan"):
        candidates = has_candidates(model, rules)
    if not candidates:
        return _copy(model)
    try:
        with _gc_paused():
            fused = _fuse_with_gs(model, strict, report, timer, base_dir, rules)
    finally:
        forget_inference()
    return fused if fused is not None else _copy(model)


def _fuse_with_gs(model, strict: bool, report: RewriteReport, timer, base_dir,
                  rules: tuple[Rule, ...] = RULES, keep_protos: bool = True) -> onnx.ModelProto | None:
    """The graphsurgeon part of :func:`fuse_elu_grad` (None: nothing accepted).

    ``keep_protos``: a single graph (no subgraphs, no functions) is written by
    :func:`export_keeping_protos`, which keeps every untouched node's original protobuf, instead of
    graphsurgeon's export (False: always graphsurgeon's; the tests compare the two).

    A function of its own so that the gs graph is unreachable before the collector resumes:
    otherwise the first collection after ``gc.enable()`` traverses the whole live graph
    (about 0.8 s at 100k nodes) only to find it still in use."""
    with timer("import"):
        graph = import_graph(model)
        originals = ProtoIndex(graph, model.graph)
        # a single graph keeps its NodeProtos (export_keeping_protos): their metadata is read there
        metadata = originals if keep_protos and originals.single else NodeMetadata(model)
    with timer("match"):
        all_scopes = list(graph_scopes.scopes(graph, model, base_dir))
        accepted = []
        for scope in all_scopes:
            for rule, site in find_sites(scope.view, strict, report, metadata, scope.label, rules):
                accepted.append((scope, rule, site))
        unreadable = {n: why for s in all_scopes for n, why in s.view.unreadable.items()}
        report.notes += [f"constant {n}: {why}" for n, why in unreadable.items()]
    if not accepted:
        return None
    with timer("edit"):
        graphs = {id(s.graph): s.graph for s in all_scopes}
        keep_alive = {gid: originally_unused(g, model.graph if g is graph else None) for gid, g in graphs.items()}
        dropped = {id(n) for _, _, site in accepted for n in site.drops}
        if dropped:  # unused outputs of pattern nodes that go with the pattern
            def kept(t):
                return not (t.inputs and id(t.inputs[0]) in dropped)

            keep_alive = {gid: u._replace(outputs=[t for t in u.outputs if kept(t)]) for gid, u in keep_alive.items()}
        names = NameAllocator(used=metadata.names)
        replaced: dict[int, dict[int, list[gs.Node]]] = {}
        renamed: dict[str, str] = {}  # output of each fused op -> the first output of the node it replaces
        # first output of each new node that reuses an original tensor -> the node that computed it
        # before (whose doc string and metadata it takes)
        sources: dict[str, gs.Node] = {}
        for scope, rule, site in accepted:
            producer = scope.view.producer(site.output)
            renamed[site.output.name] = site.root.outputs[0].name
            sources[site.output.name] = site.root
            name = names.new(f"{node_label(site.root)}/{site.op}")
            for extra in site.outputs:  # further outputs: their producers are replaced too
                other = scope.view.producer(extra)
                if other is not None:
                    if other.outputs[0] is extra:
                        sources[extra.name] = other
                    other.outputs.clear()
            producer.outputs.clear()
            replaced.setdefault(id(scope.graph), {})[id(producer)] = rule.replacement(scope.view, site, name)
            if scope.function is not None:
                graph_scopes.import_domain(scope.function, DOMAIN, OPSET_VERSION)
        new_nodes = {gid: splice(graphs[gid], r) for gid, r in replaced.items()}
        edited = {(s.function.domain or "", s.function.name) for s, _, _ in accepted if s.function is not None}
    with timer("cleanup"):
        # popped last first: each site's root (its first node) before the nodes it reads, so those
        # are found dead on the way up and their own seeds cost one lookup
        seeds = [n for ns in new_nodes.values() for n in ns] + \
            [n for _, _, site in reversed(accepted) for n in reversed(site.nodes)]
        missing = cleanup(graph, keep_alive, new_nodes, graphs, seeds=seeds)
    with timer("export"):
        if metadata is originals:
            out = export_keeping_protos(model, graph, originals, missing, sources)
            originals.release(graph)
            return out
        out = export(model, graph, missing, add_domain=True, edited_functions=edited)
        metadata.restore(out, renamed)
        return out


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
    """Does any inserted node read a tensor produced by a node placed after it, or produce one
    read by a node placed before it (a fused op with several outputs sits where its last one
    was computed)?"""
    if not new_nodes:
        return False
    position = {id(node): i for i, node in enumerate(graph.nodes)}
    for node in new_nodes:
        here = position.get(id(node))
        if here is None:  # removed by cleanup (its output fed only another replaced site)
            continue
        for tensor in node.inputs:
            for producer in tensor.inputs:
                if position.get(id(producer), -1) > here:
                    return True
        for tensor in node.outputs:
            for consumer in tensor.outputs:
                at = position.get(id(consumer))
                if at is not None and at < here:
                    return True
    return False


class Unused(NamedTuple):
    """What nothing read before the edit (gs ``cleanup()`` would drop it; it must stay)."""

    outputs: list  # gs tensors: node outputs without consumers that are not graph outputs
    initializers: set[str]  # initializer names (gs never exports unreferenced ones)
    has_subgraph: bool = True  # False: cleanup() need not recurse (same result, less work)


def originally_unused(graph: gs.Graph, proto: onnx.GraphProto | None) -> Unused:
    """Node outputs (and, for the main graph, initializers) that nothing reads, from the gs graph
    (before the edit). One pass over the gs nodes (consumers are already linked there); the
    protobuf is only read for the initializer names and, if a node has a subgraph, the names it
    uses."""
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
    if proto is None:
        return Unused(dangling, set(), True)
    if has_subgraph:
        _subgraph_uses(proto, used)
        dangling = [t for t in dangling if t.name not in used]
    unused_inits = {t.name for t in proto.initializer if t.name not in used}
    return Unused(dangling, unused_inits, has_subgraph or bool(getattr(graph, "functions", None)))


def _is_graphs(value) -> bool:
    """A graph attribute value (one gs.Graph or a non-empty list of them)."""
    if isinstance(value, gs.Graph):
        return True
    return isinstance(value, list) and bool(value) and isinstance(value[0], gs.Graph)


def cleanup(graph: gs.Graph, keep_alive: dict, new_nodes: dict, graphs: dict, seeds=None) -> set[str]:
    """graphsurgeon ``cleanup()`` (+ ``toposort()`` of each edited graph when the edit broke its
    order). What was unused before the edit (``keep_alive``, per graph) survives; returns the
    names of the main graph's unused initializers, which gs drops anyway, for :func:`export`.

    A single graph without subgraphs or functions, whose every node fed an output before the
    edit (``keep_alive`` makes that so), can only have lost the nodes upstream of the edited
    ones: with ``seeds`` (the sites' nodes and the inserted ones) just those are walked
    (:func:`_remove_dead_upstream`), which is gs ``cleanup()``'s result at a fraction of its cost
    on a large graph."""
    extras = []
    for gid, unused in keep_alive.items():
        if unused.outputs:
            graphs[gid].outputs.extend(unused.outputs)
            extras.append((graphs[gid], len(unused.outputs)))
    main = keep_alive[id(graph)]
    if seeds is not None and len(graphs) == 1 and not main.has_subgraph:
        _remove_dead_upstream(graph, seeds)
    else:
        graph.cleanup(remove_unused_graph_inputs=False, recurse_subgraphs=len(graphs) > 1, recurse_functions=True)
    for gid, nodes in new_nodes.items():
        g = graphs[gid]
        if _out_of_order(g, nodes):
            g.toposort(recurse_subgraphs=False, recurse_functions=False)
    for g, n in extras:
        del g.outputs[len(g.outputs) - n:]
    return main.initializers


def _remove_dead_upstream(graph: gs.Graph, seeds) -> None:
    """Remove every node, from ``seeds`` upwards, none of whose outputs is read by a live node or
    is a graph output. The links are cut with plain list operations: graphsurgeon's synchronised
    ``remove`` compares nodes with their deep ``__eq__``, quadratic on a widely shared tensor."""
    outputs = {t.name for t in graph.outputs}
    readers: dict[int, int] = {}  # id(tensor) -> live consumers left
    touched: dict[int, gs.Tensor] = {}
    dead: dict[int, gs.Node] = {}
    stack = list(seeds)
    while stack:
        node = stack.pop()
        if id(node) in dead:
            continue
        for t in node.outputs:
            left = readers.get(id(t))
            if (left if left is not None else len(t.outputs)) or t.name in outputs:
                break  # read by a live node, or a graph output
        else:
            dead[id(node)] = node
            for tensor in node.inputs:
                key = id(tensor)
                left = readers.get(key)
                readers[key] = (left if left is not None else len(tensor.outputs)) - 1
                touched[key] = tensor
                stack.extend(tensor.inputs)
    if not dead:
        return
    for key, tensor in touched.items():
        if readers[key]:
            list.__setitem__(tensor.outputs, slice(None), [c for c in tensor.outputs if id(c) not in dead])
        else:  # every reader is dead
            list.clear(tensor.outputs)
    for node in dead.values():
        list.clear(node.inputs)
        for tensor in node.outputs:
            list.clear(tensor.inputs)
        list.clear(node.outputs)
    graph.nodes = [n for n in graph.nodes if id(n) not in dead]


class ProtoIndex:
    """Where each imported graphsurgeon node came from: ``id(node) -> position in the original
    GraphProto``, read before the edit. ``usable`` is False
    when graphsurgeon did not import one node per NodeProto in order (then nothing is looked up
    here); ``single``: usable, and the model has no subgraphs and no functions.

    For a single graph it stands in for :class:`NodeMetadata` (the same ``names`` and ``layer``),
    reading the original NodeProtos only where asked."""

    def __init__(self, graph: gs.Graph, proto: onnx.GraphProto):
        nodes = graph.nodes
        self.usable = len(nodes) == len(proto.node)
        self.proto = proto
        self._nodes = list(nodes) if self.usable else []  # keeps the ids valid
        self.position = {id(n): i for i, n in enumerate(self._nodes)}
        self.names = {n.name for n in self._nodes if n.name}
        self.single = self.usable and not getattr(graph, "functions", None) and not any(
            _is_graphs(v) for n in self._nodes if n.attrs for v in n.attrs.values())

    def release(self, graph: gs.Graph) -> None:
        """Cut the node <-> tensor links of ``graph`` and of every imported node, once nothing
        reads them any more: the graph is then freed by reference counting as soon as it goes
        out of scope, instead of by a cyclic collection that traverses all of it (a few tenths of
        a second at 100k nodes)."""
        for nodes in (graph.nodes, self._nodes):
            for node in nodes:
                list.clear(node.inputs)
                list.clear(node.outputs)
        self._nodes, self.position = [], {}

    def original(self, node: gs.Node) -> onnx.NodeProto | None:
        """The NodeProto ``node`` was imported from, if the edit left its inputs and outputs as
        they were (a replacement may drop an output of a node it keeps, e.g. MaxPool's Indices)."""
        proto = self.proto_of(node)
        if proto is None or len(proto.input) != len(node.inputs) or len(proto.output) != len(node.outputs):
            return None
        return proto

    def proto_of(self, node: gs.Node) -> onnx.NodeProto | None:
        """The NodeProto ``node`` was imported from, changed or not (None for a new node)."""
        at = self.position.get(id(node))
        return None if at is None else self.proto.node[at]

    def layer(self, node: gs.Node | None) -> str | None:
        return graph_scopes.layer_of(self.proto_of(node)) if node is not None else None


def export_keeping_protos(original: onnx.ModelProto, graph: gs.Graph, originals: ProtoIndex, missing: set[str],
                          sources: dict[str, gs.Node]) -> onnx.ModelProto:
    """The edited single-graph model, written without graphsurgeon's export: every node the edit
    did not touch is its original NodeProto (attributes, doc string and metadata byte for byte),
    in ``graph.nodes``' order; only the new nodes (and any kept node a replacement changed) are
    exported, and take the doc string and metadata of the node they replace. Initializers are
    the original ones still read (or unused before the edit: ``missing``) plus the new nodes'
    constants; value infos of tensors that are gone are dropped. Graph inputs and outputs,
    every other field of the model and the graph, and the opsets (+ ``ai.ortops``) are kept."""
    out = onnx.ModelProto()
    for desc, value in original.ListFields():
        if desc.name not in ("graph", "opset_import"):
            _copy_field(out, desc, value)
    g = out.graph
    for desc, value in original.graph.ListFields():
        if desc.name not in ("node", "initializer", "value_info"):
            _copy_field(g, desc, value)
    have = {t.name for t in original.graph.initializer}
    nodes, new_constants, used = [], {}, {t.name for t in graph.outputs}
    for node in graph.nodes:
        for tensor in node.inputs:
            used.add(tensor.name)
        proto = originals.original(node)
        if proto is not None:
            nodes.append(proto)
            continue
        proto = _node_proto(node)
        replaced = sources.get(node.outputs[0].name) if node.outputs else None
        source = originals.proto_of(replaced if replaced is not None else node)
        if source is not None and (source.doc_string or source.metadata_props):
            if source.doc_string:
                proto.doc_string = source.doc_string
            proto.metadata_props.extend(source.metadata_props)
        nodes.append(proto)
        for tensor in node.inputs:
            if isinstance(tensor, gs.Constant) and tensor.name not in have:
                new_constants[tensor.name] = tensor
    g.node.extend(nodes)
    g.initializer.extend(t for t in original.graph.initializer if t.name in used or t.name in missing)
    g.initializer.extend(OnnxExporter.export_tensor_proto(t) for t in new_constants.values())
    if original.graph.value_info:
        produced = {t.name for node in graph.nodes for t in node.outputs}
        g.value_info.extend(vi for vi in original.graph.value_info if vi.name in produced or vi.name in used)
    opsets = list(original.opset_import)
    if not any(op.domain == DOMAIN for op in opsets):
        opsets.append(onnx.helper.make_opsetid(DOMAIN, OPSET_VERSION))
    out.opset_import.extend(opsets)
    return out


def _node_proto(node: gs.Node) -> onnx.NodeProto:
    """graphsurgeon's ``export_node`` of a new node, with scalar attributes written directly (the
    pass writes thousands of EluGrads with one float attribute each)."""
    proto = onnx.NodeProto(op_type=node.op, input=[t.name for t in node.inputs],
                           output=[t.name for t in node.outputs])
    if node.name:
        proto.name = node.name
    if node.domain is not None:
        proto.domain = node.domain
    for key, value in node.attrs.items():
        if type(value) is float:
            proto.attribute.append(onnx.AttributeProto(name=key, type=onnx.AttributeProto.FLOAT, f=value))
        elif type(value) is int:
            proto.attribute.append(onnx.AttributeProto(name=key, type=onnx.AttributeProto.INT, i=value))
        else:
            proto.attribute.extend(OnnxExporter.export_attributes({key: value}))
    return proto


def export(
    original: onnx.ModelProto, graph: gs.Graph, missing: set[str], *, add_domain: bool,
    edited_functions: set = frozenset(),
) -> onnx.ModelProto:
    """gs export, keeping the original model's other fields, opsets, dropped initializers and
    the functions that were not edited (as they were)."""
    exported = gs.export_onnx(graph, do_type_check=False)
    out = onnx.ModelProto()
    for desc, value in original.ListFields():
        if desc.name not in ("graph", "opset_import", "functions"):
            _copy_field(out, desc, value)
    out.graph.CopyFrom(exported.graph)
    new = {(f.domain, f.name): f for f in exported.functions}
    for f in original.functions:
        key = (f.domain, f.name)
        out.functions.append(new[key] if key in edited_functions and key in new else f)
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


def iter_scopes(model: onnx.ModelProto, base_dir: str | None = None) -> Iterator[Scope]:
    """The graph scopes of ``model`` as graphsurgeon views (for tools and tests)."""
    yield from graph_scopes.scopes(import_graph(model), model, base_dir)
