"""The graphs of a model a pass works on, and what it must keep of them.

- :func:`scopes`: the main graph, every If/Loop/Scan body (recursively) and every model-local
  function, each with a :class:`GraphView` that sees its enclosing scopes' values;
- :func:`op_types`: every op type in the model, from the protobuf (the rules' pre-filter);
- :class:`NameAllocator`: node names unique in the whole model;
- :class:`NodeMetadata`: the nodes' doc strings and metadata (graphsurgeon drops them), put back
  after the export, and the exporter's layer names for reports.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

import onnx
import onnx_graphsurgeon as gs

from ort_ops.rewrite.graph_view import GraphView

LAYER_KEYS = ("pkg.torch.onnx.name_scopes", "namespace")


@dataclass
class Scope:
    graph: gs.Graph
    view: GraphView
    label: str  # "main graph", "If node_if/then_branch", "function pkg::Fn"
    function: gs.Function | None = None


def _subgraph_attrs(node: gs.Node):
    for key, value in node.attrs.items():
        if isinstance(value, gs.Graph):
            yield key, value
        elif isinstance(value, list) and value and isinstance(value[0], gs.Graph):
            for i, g in enumerate(value):
                yield f"{key}[{i}]", g


def scopes(graph: gs.Graph, model: onnx.ModelProto | None, base_dir: str | None) -> Iterator[Scope]:
    """Every graph scope of a graphsurgeon graph (main first, then nested, then functions)."""
    main = GraphView(graph, model, base_dir=base_dir)
    yield Scope(graph, main, "main graph")
    yield from _nested(main, "", base_dir)
    call_types = _call_site_types(graph, model)
    for function in getattr(graph, "functions", None) or []:
        view = GraphView(function, None, base_dir=base_dir,
                         input_types=call_types.get((function.domain or "", function.name), {}))
        label = f"function {function.domain}::{function.name}" if function.domain else f"function {function.name}"
        yield Scope(function, view, label, function)
        yield from _nested(view, label + " ", base_dir, function)


def _call_site_types(graph: gs.Graph, model: onnx.ModelProto | None) -> dict[tuple, dict[str, int]]:
    """``(domain, name) -> {formal input: elem type}`` of each function, where every call in the
    main graph (and its subgraphs) passes that input with one known element type."""
    if model is None or not graph.functions:
        return {}
    from ort_ops.rewrite.graph_view import _inference

    inferred = _inference(model)
    formals = {(f.domain or "", f.name): [t.name for t in f.inputs] for f in graph.functions}
    seen: dict[tuple, dict[str, set]] = {}
    graphs = [graph, *graph.subgraphs(recursive=True)]
    for g in graphs:
        for node in g.nodes:
            key = (node.domain or "", node.op)
            if key not in formals:
                continue
            for formal, actual in zip(formals[key], node.inputs):
                elem = _elem_of_tensor(actual) or inferred.get(actual.name)[0]
                seen.setdefault(key, {}).setdefault(formal, set()).add(elem)
    return {key: {formal: next(iter(elems)) for formal, elems in by_formal.items()
                  if len(elems) == 1 and None not in elems}
            for key, by_formal in seen.items()}


def _elem_of_tensor(tensor) -> int | None:
    from ort_ops.rewrite.graph_view import _elem_of

    return _elem_of(tensor.dtype)


def _nested(view: GraphView, prefix: str, base_dir, function=None) -> Iterator[Scope]:
    for node in view.graph.nodes:
        for key, sub in _subgraph_attrs(node):
            inner = GraphView(sub, None, enclosing=view, base_dir=base_dir)
            label = f"{prefix}{node.op} {node.name or node.outputs[0].name if node.outputs else '?'}/{key}"
            yield Scope(sub, inner, label, function)
            yield from _nested(inner, label + " ", base_dir, function)


_UNDEFINED, _GRAPH, _GRAPHS = onnx.AttributeProto.UNDEFINED, onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS


def _subgraphs(node: onnx.NodeProto) -> Iterator[onnx.GraphProto]:
    """The graph attributes of one node (If branches, Loop/Scan bodies, a custom op's graphs)."""
    for attr in node.attribute:
        kind = attr.type
        if kind == _UNDEFINED:  # a writer that left the type unset: look at the fields
            if attr.HasField("g"):
                yield attr.g
            yield from attr.graphs
        elif kind == _GRAPH:
            yield attr.g
        elif kind == _GRAPHS:
            yield from attr.graphs


def _graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    yield graph
    for node in graph.node:
        if node.attribute:
            for sub in _subgraphs(node):
                yield from _graphs(sub)


def all_node_lists(model: onnx.ModelProto) -> Iterator[tuple[str | None, object]]:
    """``(function key or None, repeated NodeProto field)`` of every graph and function."""
    for g in _graphs(model.graph):
        yield None, g.node
    for f in model.functions:
        key = (f.domain, f.name)
        yield key, f.node
        for node in f.node:
            if node.attribute:
                for sub in _subgraphs(node):
                    for g in _graphs(sub):
                        yield key, g.node


class Scan(NamedTuple):
    """What one pass over a model's nodes finds (:func:`scan`)."""

    op_types: set[str]  # every op type: all graphs, nested subgraphs and functions
    nested: bool  # a node of the main graph has an attribute of type GRAPH or GRAPHS


def scan(model: onnx.ModelProto | onnx.GraphProto) -> Scan:
    """Every op type in the model (all graphs, nested subgraphs and functions) and whether the
    main graph nests graphs (protobuf only; one pass over the nodes: the pre-filter of a pass that
    may have nothing to do, and what the single-graph index need not read again)."""
    found: set[str] = set()

    def walk(nodes) -> bool:
        nested = False
        for node in nodes:
            found.add(node.op_type)
            if node.attribute:
                nested = nested or any(a.type == _GRAPH or a.type == _GRAPHS for a in node.attribute)
                for sub in _subgraphs(node):
                    walk(sub.node)
        return nested

    if isinstance(model, onnx.GraphProto):
        return Scan(found, walk(model.node))
    nested = walk(model.graph.node)
    for function in model.functions:
        walk(function.node)
    return Scan(found, nested)


def op_types(model: onnx.ModelProto | onnx.GraphProto) -> set[str]:
    """Every op type in the model (:func:`scan`)."""
    return scan(model).op_types


class NameAllocator:
    """Node names not used anywhere in the model (nor handed out before). ``used``: the model's
    node names when already collected (:attr:`NodeMetadata.names`), else read from ``model``."""

    def __init__(self, model: onnx.ModelProto | None = None, used: set[str] | None = None):
        if used is None:
            used = {n.name for _, nodes in all_node_lists(model) for n in nodes if n.name}
        self.used = set(used)

    def new(self, base: str) -> str:
        name, i = base, 1
        while name in self.used:
            name = f"{base}_{i}"
            i += 1
        self.used.add(name)
        return name


class NodeMetadata:
    """Doc strings and metadata of the original nodes, keyed by their first output; and (in the
    same pass over the model) every node name, for :class:`NameAllocator`."""

    def __init__(self, model: onnx.ModelProto):
        self.by_output: dict[tuple, onnx.NodeProto] = {}
        self.names: set[str] = set()
        for key, nodes in all_node_lists(model):
            for node in nodes:
                name = node.name
                if name:
                    self.names.add(name)
                if (node.metadata_props or node.doc_string) and node.output:
                    self.by_output[(key, node.output[0])] = node

    def layer(self, node: gs.Node | None) -> str | None:
        """The exporter's name of ``node``'s layer (PyTorch's name scopes), if it wrote one."""
        if node is None or not node.outputs:
            return None
        return layer_of(self.by_output.get((None, node.outputs[0].name)))

    def restore(self, model: onnx.ModelProto, renamed: dict[str, str] | None = None) -> None:
        """Give every node of ``model`` the doc string and metadata of the original node with
        the same first output (``renamed``: new node's output -> the replaced node's)."""
        if not self.by_output:
            return
        renamed = renamed or {}
        for key, nodes in all_node_lists(model):
            for node in nodes:
                if not node.output:
                    continue
                out = node.output[0]
                original = self.by_output.get((key, renamed.get(out, out)))
                if original is None:
                    continue
                if original.doc_string and not node.doc_string:
                    node.doc_string = original.doc_string
                if original.metadata_props and not node.metadata_props:
                    node.metadata_props.extend(original.metadata_props)


def layer_of(proto: onnx.NodeProto | None) -> str | None:
    """The exporter's name of a node's layer, from its metadata (PyTorch's name scopes)."""
    if proto is None or not proto.metadata_props:
        return None
    props = {p.key: p.value for p in proto.metadata_props}
    for key in LAYER_KEYS:
        if key in props:
            return props[key]
    return None


def import_domain(function: gs.Function, domain: str, version: int) -> None:
    """Make ``function`` import ``domain`` (a function has opset imports of its own)."""
    domains = function.import_domains
    if domains is None:
        domains = function.import_domains = [onnx.helper.make_opsetid("", function.opset)]
    if not any(d.domain == domain for d in domains):
        domains.append(onnx.helper.make_opsetid(domain, version))
