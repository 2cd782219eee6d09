"""``fuse_elu_grad``: replace every ELU backward subgraph by ``ai.ortops::EluGrad``."""

from __future__ import annotations

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
    producer_op: dict[str, str] = {}
    has_elu = False
    anchors = []
    for node in graph.node:
        op = node.op_type
        if op == "EluGrad" and node.domain != DOMAIN:
            return True
        if op == "Elu":
            has_elu = True
        elif op in ("Where", "Mul"):
            anchors.append(node)
        for out in node.output:
            producer_op[out] = op
    if not has_elu:
        return False
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
        find_sites(GraphView(import_graph(model), model), strict, report)
        for site in report.sites:
            if site.status == "fused":
                site.status = "would fuse"
    return report


def fuse_elu_grad(
    model: onnx.ModelProto, strict: bool = False, *, report: RewriteReport | None = None
) -> onnx.ModelProto:
    """A new model with every ELU backward subgraph replaced by ``ai.ortops::EluGrad``.

    ``strict=True`` fuses only sites whose result is bit-identical for every input. Pass a
    :class:`RewriteReport` as ``report`` to receive one entry per candidate site. The input
    model is not modified; a model without ELU backward is returned as an unchanged copy.
    """
    report = report if report is not None else RewriteReport()
    report.pass_name, report.strict = "fuse", strict
    if not has_candidates(model.graph):
        return _copy(model)
    graph = import_graph(model)
    view = GraphView(graph, model)
    accepted = find_sites(view, strict, report)
    if not accepted:
        return _copy(model)
    keep_alive = _originally_unused(model.graph)
    for rule, site in accepted:
        producer = view.producer(site.output)
        producer.outputs.clear()
        graph.nodes.append(rule.replacement(view, site))
    return export_like(model, graph, keep_alive, add_domain=True)


def import_graph(model: onnx.ModelProto) -> gs.Graph:
    """``gs.import_onnx`` of a private copy: gs's export writes into the protos it imported
    (opset list, names of Constant-attribute tensors), and the caller's model must not change."""
    graph = gs.import_onnx(_copy(model))
    graph.import_domains = None
    return graph


def _copy(model: onnx.ModelProto) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(model)
    return out


def _originally_unused(graph: onnx.GraphProto) -> set[str]:
    """Names of initializers and node outputs that nothing reads (cleanup must keep them)."""
    used = {name for node in graph.node for name in node.input}
    used.update(o.name for o in graph.output)
    _subgraph_uses(graph, used)
    unused = {t.name for t in graph.initializer if t.name not in used}
    unused.update(o for node in graph.node for o in node.output if o and o not in used)
    return unused


def _subgraph_uses(graph: onnx.GraphProto, used: set[str]) -> None:
    for node in graph.node:
        for attr in node.attribute:
            for sub in list(attr.graphs) + ([attr.g] if attr.HasField("g") else []):
                used.update(name for n in sub.node for name in n.input)
                _subgraph_uses(sub, used)


def export_like(
    original: onnx.ModelProto, graph: gs.Graph, keep_alive: set[str], *, add_domain: bool
) -> onnx.ModelProto:
    """cleanup + toposort + export, keeping the original model's other fields and opsets."""
    extra_outputs, missing = [], set()
    if keep_alive:
        tensors = graph.tensors()
        missing = {n for n in keep_alive if n not in tensors}  # gs drops unused initializers
        extra_outputs = [tensors[n] for n in keep_alive if n in tensors]
        graph.outputs.extend(extra_outputs)
    graph.cleanup(remove_unused_graph_inputs=False).toposort()
    if extra_outputs:
        del graph.outputs[len(graph.outputs) - len(extra_outputs):]
    exported = gs.export_onnx(graph, do_type_check=False)
    out = onnx.ModelProto()
    for desc, value in original.ListFields():
        if desc.name not in ("graph", "opset_import"):
            _copy_field(out, desc, value)
    out.graph.CopyFrom(exported.graph)
    if missing:
        out.graph.initializer.extend(t for t in original.graph.initializer if t.name in missing)
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
