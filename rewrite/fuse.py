"""``fuse``: the driver that replaces every site a list of rules accepts by the rule's op.
Rule selections over it: ``fuse_elu_grad`` (the ELU backward -> ``ai.ortops::EluGrad``) and
``fuse_training`` (that, and the softmax cross-entropy and max-pool backward subgraphs ->
``ai.ortops::SoftmaxCrossEntropyLossAndGrad`` and ``ai.ortops::MaxPoolGrad``). Graph surgery:
:mod:`ort_ops.rewrite.surgery`."""

from __future__ import annotations

import onnx
import onnx_graphsurgeon as gs

from ort_ops import DOMAIN, OPSET_VERSION
from ort_ops.rewrite import graph_scopes
from ort_ops.rewrite.graph_scopes import NameAllocator, NodeMetadata
from ort_ops.rewrite.graph_view import GraphView, forget_inference, node_label
from ort_ops.rewrite.report import RewriteReport, SiteReport, ops_of_domain
from ort_ops.rewrite.rules import RULES, TRAINING_RULES, Rule, Site
from ort_ops.rewrite.surgery import (
    PhaseTimer,
    ProtoGraph,
    ProtoIndex,
    cleanup,
    copy_model,
    export,
    export_keeping_protos,
    export_single_graph,
    gc_paused,
    import_graph,
    model_and_dir,
    nodes_by_op,
    originally_unused,
    remove_dead_upstream,
    single_graph_order,
    splice,
)


def has_candidates(model: onnx.ModelProto | onnx.GraphProto, rules: tuple[Rule, ...] = RULES) -> bool:
    """Cheap protobuf-only test: could any rule match? (No graphsurgeon graph is built.)

    True when, for some rule, the graph (with its subgraphs and the model's functions) holds the
    rule's anchor op and an op of every group the rule ``needs``: the rules themselves say what
    they look for.
    """
    return _could_match(graph_scopes.op_types(model), rules)


def _could_match(op_types: set[str], rules: tuple[Rule, ...]) -> bool:
    return any(rule.could_match(op_types) for rule in rules)


def _site_report(site: Site, status: str, reason: str | None, layer: str | None, scope: str) -> SiteReport:
    output = site.output if site.output is not None else site.root.outputs[0]
    fused = reason is None
    return SiteReport(
        rule=site.rule, status=status, nodes=[node_label(n) for n in site.nodes],
        output=", ".join([output.name, *(t.name for t in site.outputs)]) if fused else output.name,
        dtype=site.dtype, **site.report_fields(fused),
        exact=site.exact if fused else None, notes=list(site.notes), reason=reason,
        layer=layer, scope=scope, op=site.op, attributes=dict(site.attributes) if fused else {},
    )


def find_sites(view: GraphView, strict: bool, report: RewriteReport, metadata=None,
               scope: str = "main graph", rules: tuple[Rule, ...] = RULES) -> list[tuple]:
    """Try every rule on its anchor nodes of one scope (rule order = priority); returns the
    accepted sites. A node roots at most one site; sites may read the same nodes. ``metadata``
    names each site's layer (a :class:`NodeMetadata` or a :class:`ProtoIndex`)."""
    by_op = nodes_by_op(view.graph, {rule.anchor for rule in rules})
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
            forward = site.forward if site.forward is not None else site.root  # the layer's forward node
            layer = metadata.layer(forward) if metadata is not None else None
            report.sites.append(_site_report(site, "fused" if reason is None else "rejected", reason, layer, scope))
            if reason is None:
                claimed.add(id(node))
                accepted.append((rule, site))
    return accepted


def inspect_elu_grad(model, strict: bool = False, *, base_dir: str | None = None,
                     rules: tuple[Rule, ...] = RULES) -> RewriteReport:
    """Every candidate site and whether / why it would be fused (nothing is changed)."""
    model, base_dir = model_and_dir(model, base_dir)
    report = RewriteReport("inspect", strict)
    report.already_fused = ops_of_domain(model, DOMAIN)
    if has_candidates(model, rules):
        with gc_paused():
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
    return fuse(model, TRAINING_RULES, strict, report=report, base_dir=base_dir)


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

    (:func:`fuse` with the ELU rules, ``rewrite.rules.RULES``, or ``rules``.)

    The graph keeps its node order and every node's name, doc string and metadata: each EluGrad
    takes the place of the node whose output it produces (and that node's metadata; its name is
    new and unique in the model), the nodes nothing reads any more are removed, and
    ``toposort()`` runs only when an EluGrad would otherwise read a tensor produced further down.
    In a model without subgraphs or functions the graph is never imported into graphsurgeon: the
    rules read a lazy index over its NodeProtos (:class:`surgery.ProtoGraph`) and every node the
    pass did not touch is written as its original protobuf, byte for byte
    (:func:`surgery.export_single_graph`); otherwise graphsurgeon imports and exports the graph
    and the doc strings and metadata are put back.
    """
    return fuse(model, rules, strict, report=report, base_dir=base_dir)


def fuse(model, rules: tuple[Rule, ...], strict: bool = False, *, report: RewriteReport | None = None,
         base_dir: str | None = None) -> onnx.ModelProto:
    """The fusion driver: a new model in which every site one of ``rules`` accepts (rule order =
    priority) is replaced by the rule's op; see :func:`fuse_elu_grad` for the arguments and
    what the result keeps. A single graph (no subgraphs, no functions) is read and written as
    NodeProtos (:class:`surgery.ProtoGraph`); a model with subgraphs or functions, or an edit
    that needs a topological sort, goes through graphsurgeon."""
    model, base_dir = model_and_dir(model, base_dir)
    report = report if report is not None else RewriteReport()
    report.pass_name, report.strict = "fuse", strict
    report.already_fused = ops_of_domain(model, DOMAIN)
    timer = PhaseTimer(report.timings)
    with timer("scan"):
        found = graph_scopes.scan(model)  # (has_candidates, and what the index need not read again)
        candidates = _could_match(found.op_types, rules)
    if not candidates:
        return copy_model(model)
    try:
        with gc_paused():
            fused = _fuse_graph(model, strict, report, timer, base_dir, rules, found.nested)
    finally:
        forget_inference()
    return fused if fused is not None else copy_model(model)


def _replace(view: GraphView, rule: Rule, site: Site, names: NameAllocator, renamed: dict, sources: dict):
    """Detach the producers of the site's outputs and build the rule's replacement:
    ``(the producer of site.output, the new nodes)``. ``renamed``: output of the fused op -> the
    first output of the node it replaces; ``sources``: first output of each new node that
    reuses an original tensor -> the node that computed it before (whose doc string and
    metadata it takes)."""
    producer = view.producer(site.output)
    renamed[site.output.name] = site.root.outputs[0].name
    sources[site.output.name] = site.root
    name = names.new(f"{node_label(site.root)}/{site.op}")
    for extra in site.outputs:  # further outputs: their producers are replaced too
        other = view.producer(extra)
        if other is not None:
            if other.outputs[0] is extra:
                sources[extra.name] = other
            other.outputs.clear()
    producer.outputs.clear()
    return producer, rule.replacement(view, site, name)


_TOPOSORT = object()  # _fuse_single: the edit needs graphsurgeon's toposort
PROTO_PATH = True  # False: every model through graphsurgeon (the tests compare the two paths)


def _fuse_graph(model, strict: bool, report: RewriteReport, timer, base_dir, rules: tuple[Rule, ...],
                nested: bool | None = None):
    """:func:`_fuse_single` for a single graph, else (or when the edit needs a topological sort)
    :func:`_fuse_with_gs`. None: nothing accepted. ``nested``: does the main graph nest graphs
    (None: unknown)."""
    with timer("import"):
        graph = ProtoGraph(model, nested) if PROTO_PATH and not model.functions else None
    if graph is not None and graph.single:
        sites, notes = len(report.sites), len(report.notes)
        out = _fuse_single(graph, model, strict, report, timer, base_dir, rules)
        if out is not _TOPOSORT:
            return out
        del report.sites[sites:], report.notes[notes:]
    del graph
    return _fuse_with_gs(model, strict, report, timer, base_dir, rules)


def _fuse_single(graph: ProtoGraph, model, strict: bool, report: RewriteReport, timer, base_dir,
                 rules: tuple[Rule, ...]):
    """:func:`_fuse_with_gs`'s edit on a :class:`ProtoGraph`: the same sites, the same nodes
    removed and the same model written (:func:`export_single_graph`), without importing the
    graph into graphsurgeon. ``_TOPOSORT`` when a new node would sit before a node it reads."""
    new_nodes = []
    try:
        with timer("match"):
            view = GraphView(graph, model, base_dir=base_dir)
            accepted = find_sites(view, strict, report, graph, "main graph", rules)
            report.notes += [f"constant {n}: {why}" for n, why in view.unreadable.items()]
        if not accepted:
            return None
        with timer("edit"):
            dangling, missing = graph.originally_unused()
            dropped = {n.index for _, site in accepted for n in site.drops}
            keep = {o.name for o in model.graph.output}
            keep.update(name for name, producer in dangling if producer not in dropped)
            names = NameAllocator(used=graph.names)
            replaced: dict[int, list] = {}
            renamed: dict[str, str] = {}
            sources: dict[str, object] = {}
            for rule, site in accepted:
                producer, new = _replace(view, rule, site, names, renamed, sources)
                replaced[producer.index] = new
            new_nodes = [n for i in sorted(replaced) for n in replaced[i]]
        with timer("cleanup"):
            seeds = new_nodes + [n for _, site in reversed(accepted) for n in reversed(site.nodes)]
            dead = remove_dead_upstream(graph, seeds, keep, unlink=False)
            order = single_graph_order(graph, replaced, dead)
            if order is None:
                return _TOPOSORT
        with timer("export"):
            return export_single_graph(graph, order, missing, sources)
    finally:
        graph.release(new_nodes)


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
            producer, new = _replace(scope.view, rule, site, names, renamed, sources)
            replaced.setdefault(id(scope.graph), {})[id(producer)] = new
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
