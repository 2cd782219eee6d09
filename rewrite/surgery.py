"""Graph surgery the rewrite passes share (fuse, lower, the benchmarks): reading a model,
editing a graphsurgeon graph in place (splicing new nodes after the ones they replace, removing
what the edit left unused) and writing it back without losing what the user had (node order,
names, doc strings, metadata, unused initializers, untouched functions).

Two ways out: :func:`export` (graphsurgeon's export, with the original model's other fields put
back) and :func:`export_keeping_protos` (a single graph: every untouched node is its original
NodeProto, byte for byte)."""

from __future__ import annotations

import contextlib
import gc
import os
import time
from collections import OrderedDict
from typing import NamedTuple

import onnx
import onnx_graphsurgeon as gs
from onnx_graphsurgeon.exporters.onnx_exporter import OnnxExporter
from onnx_graphsurgeon.importers.onnx_importer import OnnxImporter
from onnx_graphsurgeon.util.misc import SynchronizedList

from ort_ops import DOMAIN, OPSET_VERSION
from ort_ops.rewrite import graph_scopes


def model_and_dir(model, base_dir):
    """A ModelProto (loaded without its external data) and the folder its external data is in."""
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        loaded = onnx.load(path, load_external_data=False)
        return loaded, base_dir if base_dir is not None else os.path.dirname(os.path.abspath(path))
    if not isinstance(model, onnx.ModelProto):
        raise TypeError(f"expected an onnx.ModelProto or a file path, got {type(model).__name__}")
    return model, base_dir


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
def gc_paused():
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
    graph = gs.import_onnx(copy_model(model))
    graph.import_domains = None
    return graph


def copy_model(model: onnx.ModelProto) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(model)
    return out


def nodes_by_op(graph, ops) -> dict[str, list]:
    """``op -> [the graph's nodes of that op type]`` (any domain, graph order), for a
    graphsurgeon graph or a :class:`ProtoGraph`."""
    if isinstance(graph, ProtoGraph):
        return graph.nodes_by_op(ops)
    found: dict[str, list] = {op: [] for op in ops}
    for node in graph.nodes:
        if node.op in found:
            found[node.op].append(node)
    return found


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


def out_of_order(graph: gs.Graph, new_nodes: list[gs.Node]) -> bool:
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
    (:func:`remove_dead_upstream`), which is gs ``cleanup()``'s result at a fraction of its cost
    on a large graph."""
    extras = []
    for gid, unused in keep_alive.items():
        if unused.outputs:
            graphs[gid].outputs.extend(unused.outputs)
            extras.append((graphs[gid], len(unused.outputs)))
    main = keep_alive[id(graph)]
    if seeds is not None and len(graphs) == 1 and not main.has_subgraph:
        remove_dead_upstream(graph, seeds)
    else:
        graph.cleanup(remove_unused_graph_inputs=False, recurse_subgraphs=len(graphs) > 1, recurse_functions=True)
    for gid, nodes in new_nodes.items():
        g = graphs[gid]
        if out_of_order(g, nodes):
            g.toposort(recurse_subgraphs=False, recurse_functions=False)
    for g, n in extras:
        del g.outputs[len(g.outputs) - n:]
    return main.initializers


def remove_dead_upstream(graph, seeds, outputs: set[str] | None = None, *, unlink: bool = True) -> dict[int, object]:
    """Remove every node, from ``seeds`` upwards, none of whose outputs is read by a live node or
    is a graph output (``outputs``: those names, default ``graph.outputs``'). The links are cut
    with plain list operations: graphsurgeon's synchronised ``remove`` compares nodes with their
    deep ``__eq__``, quadratic on a widely shared tensor. Returns the removed nodes by id (a
    :class:`ProtoGraph`'s order is made from them by :func:`single_graph_order`).

    A producer is looked at again only when one of its outputs has just lost its last live
    reader (before that, that output keeps it alive; counts only fall).

    ``unlink=False``: only find them, leaving the removed nodes linked (a :class:`ProtoGraph`,
    whose order and export read live nodes only and whose links :meth:`ProtoGraph.release` cuts)."""
    if outputs is None:
        outputs = {t.name for t in graph.outputs}
    readers: dict[int, int] = {}  # id(tensor) -> live consumers left
    touched: dict[int, gs.Tensor] = {}
    dead: dict[int, object] = {}
    stack = list(seeds)
    pop, push, left_of = stack.pop, stack.extend, readers.get
    while stack:
        node = pop()
        if id(node) in dead:
            continue
        for t in node.outputs:
            left = left_of(id(t))
            if (left if left is not None else len(t.outputs)) or t.name in outputs:
                break  # read by a live node, or a graph output
        else:
            dead[id(node)] = node
            for tensor in node.inputs:
                key = id(tensor)
                left = left_of(key)
                left = readers[key] = (left if left is not None else len(tensor.outputs)) - 1
                touched[key] = tensor
                if not left:  # its last live reader is gone: its producers may be dead now
                    push(tensor.inputs)
    if not dead or not unlink:
        return dead
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
    if isinstance(graph, gs.Graph):
        graph.nodes = [n for n in graph.nodes if id(n) not in dead]
    return dead


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


def exported_node(node: gs.Node, sources: dict[str, gs.Node], proto_of) -> onnx.NodeProto:
    """A new (or changed) node's NodeProto, with the doc string and metadata of the node it
    replaces (``sources``: output name -> replaced node; ``proto_of``: a node's original proto)."""
    new = node_proto(node)
    replaced = sources.get(node.outputs[0].name) if node.outputs else None
    source = proto_of(replaced if replaced is not None else node)
    if source is not None and (source.doc_string or source.metadata_props):
        if source.doc_string:
            new.doc_string = source.doc_string
        new.metadata_props.extend(source.metadata_props)
    return new


def export_keeping_protos(original: onnx.ModelProto, graph: gs.Graph, originals: ProtoIndex, missing: set[str],
                          sources: dict[str, gs.Node]) -> onnx.ModelProto:
    """The edited single-graph model, written without graphsurgeon's export: every node the edit
    did not touch is its original NodeProto (attributes, doc string and metadata byte for byte),
    in ``graph.nodes``' order; only the new nodes (and any kept node a replacement changed) are
    exported, and take the doc string and metadata of the node they replace. Initializers are
    the original ones still read (or unused before the edit: ``missing``) plus the new nodes'
    constants; value infos of tensors that are gone are dropped. Graph inputs and outputs,
    every other field of the model and the graph, and the opsets (+ ``ai.ortops``) are kept."""
    out = _model_shell(original)
    g = out.graph
    have = {t.name for t in original.graph.initializer}
    nodes, new_constants, used = [], {}, {t.name for t in graph.outputs}
    for node in graph.nodes:
        for tensor in node.inputs:
            used.add(tensor.name)
        proto = originals.original(node)
        if proto is not None:
            nodes.append(proto)
            continue
        nodes.append(exported_node(node, sources, originals.proto_of))
        for tensor in node.inputs:
            if isinstance(tensor, gs.Constant) and tensor.name not in have:
                new_constants[tensor.name] = tensor
    g.node.extend(nodes)
    g.initializer.extend(t for t in original.graph.initializer if t.name in used or t.name in missing)
    g.initializer.extend(OnnxExporter.export_tensor_proto(t) for t in new_constants.values())
    if original.graph.value_info:
        produced = {t.name for node in graph.nodes for t in node.outputs}
        g.value_info.extend(vi for vi in original.graph.value_info if vi.name in produced or vi.name in used)
    _import_our_domain(out, original)
    return out


def _model_shell(original: onnx.ModelProto) -> onnx.ModelProto:
    """A new model with every field of ``original`` but its opsets, and a graph with every field
    but its nodes, initializers and value infos (the kept-proto exports write those)."""
    out = onnx.ModelProto()
    for desc, value in original.ListFields():
        if desc.name not in ("graph", "opset_import"):
            copy_field(out, desc, value)
    for desc, value in original.graph.ListFields():
        if desc.name not in ("node", "initializer", "value_info"):
            copy_field(out.graph, desc, value)
    return out


def _import_our_domain(out: onnx.ModelProto, original: onnx.ModelProto) -> None:
    """``original``'s opsets, and ``ai.ortops`` when it has none of it."""
    opsets = list(original.opset_import)
    if not any(op.domain == DOMAIN for op in opsets):
        opsets.append(onnx.helper.make_opsetid(DOMAIN, OPSET_VERSION))
    out.opset_import.extend(opsets)


def node_proto(node: gs.Node) -> onnx.NodeProto:
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
            proto.attribute.add(name=key, type=onnx.AttributeProto.FLOAT, f=value)
        elif type(value) is int:
            proto.attribute.add(name=key, type=onnx.AttributeProto.INT, i=value)
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
            copy_field(out, desc, value)
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


def copy_field(out, desc, value) -> None:
    repeated = getattr(desc, "is_repeated", None)
    if repeated is None:
        repeated = desc.label == desc.LABEL_REPEATED
    if repeated:
        getattr(out, desc.name).extend(value)
    elif desc.message_type is not None:
        getattr(out, desc.name).CopyFrom(value)
    else:
        setattr(out, desc.name, value)


# -- the single-graph path: a light index over the GraphProto --------------------------------------
class ProtoNode:
    """A node of a :class:`ProtoGraph`: what graphsurgeon's ``Node`` has (``op``, ``name``,
    ``domain``, ``attrs``, ``inputs``, ``outputs``), read from NodeProto ``index`` only when asked.
    ``inputs`` / ``outputs`` are graphsurgeon's synchronised lists of graphsurgeon tensors, so
    the rules and the edit treat the node as they treat an imported one. (``op``, ``name`` and
    ``domain`` come from the graph's index; ``attrs``, ``inputs`` and ``outputs`` are made on first
    access, by ``__getattr__``, which Python calls only while their slot is empty.)"""

    # linked: were its inputs / outputs read (and so maybe changed)? arity: their counts then
    __slots__ = ("_graph", "index", "op", "name", "domain", "attrs", "inputs", "outputs", "linked", "arity")

    def __init__(self, graph: ProtoGraph, index: int, op: str, name: str, domain: str | None):
        self._graph, self.index, self.op, self.name, self.domain, self.linked = graph, index, op, name, domain, False

    def __getattr__(self, key: str):
        if key == "inputs" or key == "outputs":
            self._graph.link(self)
            return getattr(self, key)
        if key == "attrs":
            self.attrs = _import_attributes(self._graph.proto.node[self.index], self._graph.opset)
            return self.attrs
        raise AttributeError(f"{type(self).__name__} has no attribute {key!r}")

    def __repr__(self) -> str:
        return f"ProtoNode({self.index}: {self.op} {self.name!r})"


def _import_attributes(proto: onnx.NodeProto, opset: int) -> OrderedDict:
    """graphsurgeon's import of a node's attributes (of a private copy: graphsurgeon keeps, and
    its export renames, tensor attributes)."""
    if not proto.attribute:
        return OrderedDict()
    copy = onnx.NodeProto()
    copy.CopyFrom(proto)
    return OnnxImporter.import_attributes(copy.attribute, {}, {}, opset, None)


class _NodeTensors(SynchronizedList):
    """A :class:`ProtoNode`'s ``inputs`` / ``outputs``: graphsurgeon's SynchronizedList with its two
    fields in slots (no instance dict per list). Made filled, by ``list``'s own constructor
    (the tensors' lists already name the node), then given its two fields."""

    __slots__ = ("parent_obj", "field_name")
    __init__ = list.__init__


_GRAPH_ATTRS = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
_VARIABLE_NEW = gs.Variable.__new__


class ProtoGraph:
    """A single graph (no subgraphs, no functions) as graphsurgeon would import it, built lazily:
    one pass over the NodeProtos indexes producers, consumers, node names and op types; a tensor
    (a graphsurgeon ``Variable`` / ``Constant``, with the dtype and shape graphsurgeon's import
    gives it) and a node (:class:`ProtoNode`) exist only once a rule or the edit reaches them.

    It stands in for :class:`ProtoIndex` too (``names``, ``layer``, ``proto_of``)."""

    node_type = ProtoNode  # what GraphView counts as a node of this graph

    def __init__(self, model: onnx.ModelProto, nested: bool | None = None):
        """``nested``: whether a node holds a subgraph, when the caller already knows (the scan
        of :func:`ort_ops.rewrite.graph_scopes.scan` read every node's attributes); else read here."""
        graph = self.proto = model.graph
        self.model = model
        self.opset = OnnxImporter.get_opset(model)
        protos = self._protos = graph.node
        # name -> node index (a list when several write it)
        self.producers: dict[str, int | list[int]] = {}
        # name -> node index per input slot, in node order (an int for a single reader, else a list)
        self.consumers: dict[str, int | list[int]] = {}
        self.op_of: list[str] = []  # by node index
        self.name_of: list[str] = []  # by node index
        self.domain_of: dict[int, str] = {}  # node index -> domain, for the nodes that set one
        # every node's input and output names, read once (node i's inputs are
        # input_names[input_at[i]:input_at[i + 1]]): linking a node reads them here, not from its
        # NodeProto again, and their hashes are already computed
        self._input_names: list[str] = []
        self._output_names: list[str] = []
        self._input_at: list[int] = []
        self._output_at: list[int] = []
        producers, consumers, domain_of = self.producers, self.consumers, self.domain_of
        get_consumers, get_producer = consumers.get, producers.get
        add_op, add_name = self.op_of.append, self.name_of.append
        add_input, add_output = self._input_names.append, self._output_names.append
        add_input_at, add_output_at = self._input_at.append, self._output_at.append
        single = not model.functions and not nested
        look = single and nested is None  # read the attributes for subgraphs here
        n_in = n_out = 0
        for i, node in enumerate(protos):
            add_op(node.op_type)
            if node.HasField("domain"):
                domain_of[i] = node.domain
            add_name(node.name)
            add_input_at(n_in)
            for name in node.input:
                add_input(name)
                n_in += 1
                at = get_consumers(name)
                if at is None:
                    consumers[name] = i
                elif type(at) is int:
                    consumers[name] = [at, i]
                else:
                    at.append(i)
            add_output_at(n_out)
            for name in node.output:
                add_output(name)
                n_out += 1
                at = get_producer(name)
                producers[name] = i if at is None else (at if type(at) is list else [at]) + [i]
            if look:
                attributes = node.attribute
                if attributes and any(a.type in _GRAPH_ATTRS for a in attributes):
                    single = look = False
        add_input_at(n_in)
        add_output_at(n_out)
        self.single = single
        self._nodes: list[ProtoNode | None] = [None] * len(protos)
        self._tensors: dict[str, gs.Tensor] = {}
        self._index_infos()
        self._linked: list[ProtoNode] = []
        self._outputs: list | None = None

    # -- what the index answers by name, without node or tensor objects -----------------------
    def first_producer(self, name: str) -> int | None:
        """The index of the (first) node writing ``name``; None for a graph input, an initializer
        or an omitted optional slot (``""``), as a graphsurgeon tensor's ``inputs[0]``."""
        at = self.producers.get(name) if name else None
        return at if at is None or type(at) is int else at[0]

    def input_names(self, index: int) -> list[str]:
        """Node ``index``'s input names, as its NodeProto lists them (``""`` for an omitted one)."""
        return self._input_names[self._input_at[index]:self._input_at[index + 1]]

    def first_output_name(self, index: int) -> str | None:
        at = self._output_at[index]
        return self._output_names[at] if at < self._output_at[index + 1] else None

    def has_info(self, name: str) -> bool:
        """Does an initializer, value info, graph input or graph output describe ``name``? (Else
        its graphsurgeon tensor has no dtype and no shape.)"""
        return bool(name) and name in self.infos

    def owns(self, tensor) -> bool:
        """``tensor`` is this graph's tensor of its name (not one an edit made)."""
        return self._tensors.get(tensor.name) is tensor

    @property
    def names(self) -> set[str]:
        """The node names (as :attr:`ProtoIndex.names`)."""
        return {name for name in self.name_of if name}

    # -- graphsurgeon's view of it ------------------------------------------------------------------
    def node(self, index: int) -> ProtoNode:
        node = self._nodes[index]
        if node is None:
            node = self._nodes[index] = ProtoNode(self, index, self.op_of[index], self.name_of[index],
                                                  self.domain_of.get(index))
        return node

    def nodes_by_op(self, ops) -> dict[str, list]:
        """``op -> [nodes of that op type]`` (any domain, graph order)."""
        found: dict[str, list] = {op: [] for op in ops}
        for i, op in enumerate(self.op_of):
            if op in found:
                found[op].append(self.node(i))
        return found

    @property
    def outputs(self) -> list:
        if self._outputs is None:
            self._outputs = [self.tensor(o.name) for o in self.proto.output]
        return self._outputs

    def tensor(self, name: str) -> gs.Tensor:
        """The graphsurgeon tensor ``name`` (one object per name), linked to its producers and
        consumers."""
        tensor = self._tensors.get(name)
        if tensor is None:
            tensor = self._new_tensor(name)
        return tensor

    def _new_tensor(self, name: str) -> gs.Tensor:
        nodes = self._nodes
        at = self.producers.get(name)
        writers = [] if at is None else [nodes[at] or self.node(at)] if type(at) is int else self._nodes_at(at)
        at = self.consumers.get(name)
        readers = [] if at is None else [nodes[at] or self.node(at)] if type(at) is int else self._nodes_at(at)
        # a tensor's producer / consumer lists are plain lists here: every edit changes them
        # through a node's synchronised list or with list methods (and a plain list makes no
        # tensor <-> list reference cycle for the collector to find)
        if name in self.infos:
            tensor = self._import_tensor(name)
            tensor.__dict__.update(inputs=writers, outputs=readers)
        else:  # what Variable(name) is, without its __init__'s synchronised assignments
            tensor = _VARIABLE_NEW(gs.Variable)
            tensor.__dict__.update(name=name, inputs=writers, outputs=readers, dtype=None, shape=None,
                                   type="tensor_type")
        self._tensors[name] = tensor
        return tensor

    def _nodes_at(self, indices: list[int]) -> list[ProtoNode]:
        found = list(map(self._nodes.__getitem__, indices))
        return found if None not in found else [self.node(i) for i in indices]

    def link(self, node: ProtoNode) -> None:
        """Give ``node`` its ``inputs`` and ``outputs``: synchronised lists of the tensors its
        NodeProto names (made on first use), as graphsurgeon's import links them."""
        i = node.index
        get, new, empty = self._tensors.get, self._new_tensor, self._empty
        inputs = _NodeTensors([(get(name) or new(name)) if name else empty([], [node])
                               for name in self._input_names[self._input_at[i]:self._input_at[i + 1]]])
        outputs = _NodeTensors([(get(name) or new(name)) if name else empty([node], [])
                                for name in self._output_names[self._output_at[i]:self._output_at[i + 1]]])
        inputs.parent_obj, inputs.field_name = node, "outputs"
        outputs.parent_obj, outputs.field_name = node, "inputs"
        node.inputs, node.outputs = inputs, outputs
        node.linked, node.arity = True, (len(inputs), len(outputs))
        self._linked.append(node)

    @staticmethod
    def _empty(writers: list, readers: list) -> gs.Variable:
        """An omitted optional input or output: a fresh empty tensor, as graphsurgeon's import makes."""
        tensor = gs.Variable.__new__(gs.Variable)
        tensor.__dict__.update(name="", inputs=writers, outputs=readers, dtype=None, shape=None, type="tensor_type")
        return tensor

    def _index_infos(self) -> None:
        infos: dict[str, list] = {}
        g = self.proto
        for kind, field in (("init", g.initializer), ("init", g.sparse_initializer), ("vi", g.value_info),
                            ("in", g.input), ("out", g.output)):
            for proto in field:
                key = proto.values.name if isinstance(proto, onnx.SparseTensorProto) else proto.name
                infos.setdefault(key, []).append((kind, proto))
        self.infos = infos  # name -> [(kind, proto)] of its initializers, value infos, inputs, outputs

    def _import_tensor(self, name: str) -> gs.Tensor:
        """graphsurgeon's import of the tensor ``name``: the first initializer of that name, else
        a Variable with the dtype / shape of its value infos, graph input and graph output (in
        the order and with the precedence of ``OnnxImporter.import_graph``)."""
        tensor = None
        entries = self.infos.get(name, ())
        initialized = any(kind == "init" for kind, _ in entries)
        for kind, proto in entries:
            if tensor is None:
                if kind == "in" and initialized:
                    continue
                tensor = OnnxImporter.import_tensor(proto)
            elif kind == "vi" and isinstance(tensor, gs.Variable):
                new = OnnxImporter.import_tensor(proto)
                tensor.dtype = tensor.dtype or new.dtype
                tensor.shape = tensor.shape or new.shape
        return tensor if tensor is not None else gs.Variable(name)

    # -- what ProtoIndex / NodeMetadata answer ---------------------------------------------------
    def proto_of(self, node) -> onnx.NodeProto | None:
        return self.proto.node[node.index] if type(node) is ProtoNode else None

    def layer(self, node) -> str | None:
        return graph_scopes.layer_of(self.proto_of(node)) if node is not None else None

    def originally_unused(self) -> tuple[list[tuple[str, int]], set[str]]:
        """``(dangling, initializers)``: node outputs nothing reads that are not graph outputs,
        with their producer's index, and the initializers nothing reads (as
        :func:`originally_unused`)."""
        outputs = {o.name for o in self.proto.output}
        consumers = self.consumers
        dangling = [(name, i) for name, at in self.producers.items()
                    if name and name not in consumers and name not in outputs
                    for i in (at if type(at) is list else (at,))]  # (the caller needs no order)
        unused = {t.name for t in self.proto.initializer if t.name not in consumers and t.name not in outputs}
        return dangling, unused

    def release(self, new_nodes) -> None:
        """Cut the reference cycles (node <-> its synchronised lists, node -> tensor -> node, the
        graph's tables): all of it is then freed by reference counting, without a cyclic
        collection that traverses it (see :meth:`ProtoIndex.release`)."""
        for node in self._linked:
            del node.inputs, node.outputs
        for node in new_nodes:
            if type(node) is not ProtoNode:  # (a replacement that returns a kept node: unlinked above)
                del node.inputs, node.outputs
        self._nodes, self._tensors, self._linked, self._outputs = [], {}, [], None


def single_graph_order(graph: ProtoGraph, replaced: dict[int, list], dead: dict[int, object]) -> list | None:
    """The edited graph's node order: each original node index (but the removed ones), each
    replacement (``replaced``: node index -> new nodes) right after the node it replaces, as
    :func:`splice` + :func:`cleanup` give. None when a new node would read a tensor produced
    further down, or produce one read further up (graphsurgeon's ``toposort`` must run: the
    caller takes the graphsurgeon path)."""
    removed = {n.index for n in dead.values() if type(n) is ProtoNode}
    place: dict[int, tuple[int, int]] = {}  # id(new node) -> (index it follows, its place there)
    inserted, order, start = [], [], 0
    for after in sorted(replaced):
        order += [i for i in range(start, after + 1) if i not in removed]
        for k, node in enumerate(replaced[after]):
            if id(node) not in dead:
                place[id(node)] = (after, k)
                order.append(node)
                inserted.append(node)
        start = after + 1
    order += [i for i in range(start, len(graph._nodes)) if i not in removed]

    def at(node) -> tuple[int, int] | None:  # where a live node is, as (index, place): ordered as ``order``
        if type(node) is ProtoNode:
            return None if node.index in removed else (node.index, -1)
        return place.get(id(node))

    for node in inserted:
        here = place[id(node)]
        for tensor in node.inputs:
            for producer in tensor.inputs:
                where = at(producer)
                if where is not None and where > here:
                    return None
        for tensor in node.outputs:
            for consumer in tensor.outputs:
                where = at(consumer)
                if where is not None and where < here:
                    return None
    return order


def export_single_graph(graph: ProtoGraph, order: list, missing: set[str], sources: dict) -> onnx.ModelProto:
    """:func:`export_keeping_protos` of a :class:`ProtoGraph` in ``order`` (from
    :func:`single_graph_order`): every node whose inputs and outputs no edit reached, or kept
    their number, is its original NodeProto, unread; the rest as there. Which initializers and
    value infos are still read or written is asked of the index (:class:`_KeptNames`)."""
    original = graph.model
    out = _model_shell(original)
    g = out.graph
    have = {t.name for t in original.graph.initializer}
    protos, objects = original.graph.node, graph._nodes
    nodes, new_constants = [], {}
    rewritten = {}  # a new node, or a kept one whose inputs or outputs changed, by id
    for entry in order:
        if type(entry) is int:
            node = objects[entry]
            if node is None or not node.linked or (len(node.inputs), len(node.outputs)) == node.arity:
                nodes.append(protos[entry])
                continue
        else:
            node = entry
        rewritten[id(node)] = node
        nodes.append(exported_node(node, sources, graph.proto_of))
        for tensor in node.inputs:
            if isinstance(tensor, gs.Constant) and tensor.name not in have:
                new_constants[tensor.name] = tensor
    g.node.extend(nodes)
    kept = _KeptNames(graph, order, rewritten)
    g.initializer.extend(t for t in original.graph.initializer if kept.read(t.name) or t.name in missing)
    g.initializer.extend(OnnxExporter.export_tensor_proto(t) for t in new_constants.values())
    if original.graph.value_info:
        g.value_info.extend(vi for vi in original.graph.value_info if kept.written(vi.name) or kept.read(vi.name))
    _import_our_domain(out, original)
    return out


class _KeptNames:
    """Which names the nodes of the edited graph (``order``) read and write, asked name by name:
    a kept node whose inputs and outputs are as read answers from the graph's index (its
    NodeProto's names), a rewritten one (``rewritten``: new nodes and kept nodes whose inputs or
    outputs changed, by id) from its tensors; a graph output counts as read. (An edit changes
    a kept node's lists only by dropping outputs, never by swapping a tensor: a node with as many
    inputs and outputs as its NodeProto has its names, as the export writes it.)"""

    def __init__(self, graph: ProtoGraph, order: list, rewritten: dict):
        self._graph = graph
        self._kept = {entry for entry in order if type(entry) is int}
        self._rewritten_at = {n.index for n in rewritten.values() if type(n) is ProtoNode}
        self._reads = {o.name for o in graph.proto.output}
        self._writes = set()
        for node in rewritten.values():
            self._reads.update(t.name for t in node.inputs)
            self._writes.update(t.name for t in node.outputs)

    def _as_read(self, at) -> bool:
        """Does a kept node among indices ``at`` (an index, a list of them or None) have its
        NodeProto's names?"""
        if at is None:
            return False
        kept, rewritten = self._kept, self._rewritten_at
        return any(i in kept and i not in rewritten for i in (at if isinstance(at, list) else (at,)))

    def read(self, name: str) -> bool:
        return name in self._reads or self._as_read(self._graph.consumers.get(name))

    def written(self, name: str) -> bool:
        return name in self._writes or self._as_read(self._graph.producers.get(name))
