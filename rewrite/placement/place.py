"""The placement pass: every node of a graph that the CANN EP would leave on the CPU becomes an
``ai.ortops.cann`` op with a CANN kernel, where a kernel for its types, attributes and SoC exists.

Each node ends in one of four places, and the report says which and why:

- ``placed``: rewritten into ``ai.ortops.cann`` (same inputs and attributes; ``Cast`` becomes
  ``CastTo<Type>``), its kernel runs the CANN ops the rule names. Every op with a rule is placed,
  unless the rule says the CANN EP's own kernel does as well (``leave_to_ep``: same-shape
  arithmetic);
- ``cann_ep``: the CANN EP's own kernel runs it (op, opset and dtype in the wheel's kernel table,
  :mod:`ort_ops.rewrite.placement.cann_ep_kernels`; MatMul and Conv, for example);
- ``ortops``: an ``ai.ortops`` op (EluGrad, ...) whose library kernel runs on CANN;
- ``cpu``: nothing can run it on CANN here; ``reason`` says what is missing.

A node the CANN EP would take but must not, or cannot run on this SoC, gets an ``error``: the
known defect of its EP kernel (:mod:`ort_ops.rewrite.placement.ep_defects`: broadcasting arithmetic,
padded pooling, non-4-D NCHW ops, training-mode BatchNormalization; training-mode Dropout is placed
unless its constant ratio is outside [0, 1)) or a CANN op its EP kernel
launches that the SoC lacks (:mod:`ort_ops.rewrite.placement.ep_launches`). ORT has no per-node way to
send such a node to the CPU EP instead, so ``cann_ep.session`` refuses the model
(:class:`PlacementError`, naming SoC, node, dtype and op).

``ConstantOfShape`` of a constant shape with at most :data:`MAX_CONSTANT_ELEMENTS` elements is
folded into an initializer (a larger one, or one of a run-time shape, is placed: filled on the
device, the report says why it was not folded), and Transposes into
the Gemm / MatMul nodes that read them (transA / transB) or into the Transpose they undo
(:mod:`ort_ops.rewrite.placement.transposes`): ``folded``; so are the main graph's nodes computed
from constants only, which are left to ONNX Runtime's constant folding
(:mod:`ort_ops.rewrite.placement.computed_once`). Nodes inside If/Loop/Scan bodies are placed
like the main graph's (labels ``<node>/<attribute>/<body node>``; shapes from ONNX shape
inference, a symbolic one counts as unknown); nodes of model-local functions are left alone.
:func:`unplace` is the exact inverse of the rest (folds are not undone). Linear in nodes + edges.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ort_ops import DOMAIN, cann_soc
from ort_ops.domain import CANN_DOMAIN, OPSET_VERSION
from ort_ops.rewrite.placement.cann_ep_kernels import KERNELS as EP_KERNELS
from ort_ops.rewrite.placement.computed_once import ComputedOnce
from ort_ops.rewrite.placement.ep_defects import DEFECTS, defect_of
from ort_ops.rewrite.placement.ep_launches import LAUNCHES as EP_LAUNCHES
from ort_ops.rewrite.placement.ops import RULES
from ort_ops.rewrite.placement.ops.cast import DESTINATIONS
from ort_ops.rewrite.placement.ops.constant_of_shape import NAMES as CONSTANT_OF_SHAPE_NAMES
from ort_ops.rewrite.placement.rule import NodeInfo
from ort_ops.rewrite.placement.transposes import fold_transposes
from ort_ops.rewrite.surgery import copy_model

_CAST_NAMES = set(DESTINATIONS.values())
_CONSTANT_OF_SHAPE_NAMES = set(CONSTANT_OF_SHAPE_NAMES.values())
_DEFECT_OPS = frozenset(d.op_type for d in DEFECTS)  # op types with a known EP-kernel defect
_ONNX = ("", "ai.onnx")
_SUBGRAPH_TYPES = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
MAX_CONSTANT_ELEMENTS = 1 << 16
"""Constant values the pass reads (shapes, axes, indices) and ConstantOfShape results it folds
have at most this many elements; a larger ConstantOfShape stays a node (placed: filled on the device)."""


@dataclass
class NodePlacement:
    """Where one node runs: ``where`` is ``cann_ep``, ``placed``, ``ortops``, ``cpu`` or ``folded``;
    ``error``: why the session must not run it there (see the module)."""

    node: str
    op_type: str
    where: str
    placed_as: str | None = None
    cann_ops: tuple[str, ...] = ()
    reason: str | None = None
    error: str | None = None

    def line(self) -> str:
        what = f"{self.where:8s} {self.op_type:16s} {self.node}"
        if self.placed_as and self.placed_as != self.op_type:
            what += f" -> {self.placed_as}"
        if self.cann_ops:
            what += f" [{', '.join(self.cann_ops)}]"
        what += f": {self.reason}" if self.reason else ""
        return what + (f" -- ERROR: {self.error}" if self.error else "")


class PlacementError(RuntimeError):
    """A model whose nodes the CANN EP would run wrong or fail on (the report's errors)."""


@dataclass
class PlacementReport:
    """The placement of every node (main graph and control-flow bodies), for SoC ``soc``."""

    soc: str | None = None
    nodes: list[NodePlacement] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def where(self, place: str) -> list[NodePlacement]:
        return [n for n in self.nodes if n.where == place]

    @property
    def placed(self) -> list[NodePlacement]:
        return self.where("placed")

    @property
    def on_cpu(self) -> list[NodePlacement]:
        return self.where("cpu")

    @property
    def errors(self) -> list[NodePlacement]:
        """Nodes the session must not run as they are (``error`` set)."""
        return [n for n in self.nodes if n.error]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for n in self.nodes:
            out[n.where] = out.get(n.where, 0) + 1
        return out

    def summary(self) -> str:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(self.counts().items()))
        lines = [f"placement on {self.soc or 'an unknown SoC'}: {counts or 'no nodes'}"]
        lines += ["  " + n.line() for n in self.nodes if n.where in ("cpu", "placed", "folded") or n.error]
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)

    def check(self) -> None:
        """Raises :class:`PlacementError` naming every node with an error."""
        bad = self.errors
        if bad:
            soc = self.soc or "an unknown SoC"
            lines = [f"{len(bad)} node(s) cannot run correctly on the CANN EP ({soc}); nothing can send them to "
                     "the CPU EP instead, so the session is not created:"]
            lines += [f"  - {n.op_type} node {n.node!r}: {n.error}" for n in bad]
            raise PlacementError("\n".join(lines))

    def to_json(self) -> str:
        return json.dumps({"soc": self.soc, "nodes": [asdict(n) for n in self.nodes], "notes": self.notes},
                          indent=2)


@functools.cache
def ep_runs(op_type: str, opset: int, dtype: str | None) -> bool:
    """Whether the CANN EP's own kernel table has ``op_type`` at ``opset`` for ``dtype``.

    ORT matches an open-ended kernel (no last opset) only to nodes whose schema version equals its
    first opset (see :mod:`ort_ops.rewrite.placement.cann_ep_kernels`)."""
    entries = EP_KERNELS.get(op_type)
    if not entries:
        return False
    try:
        since = onnx.defs.get_schema(op_type, opset).since_version
    except onnx.defs.SchemaError:
        return False
    for first, last, types in entries:
        in_range = since == first if last is None else first <= since <= last
        if in_range and ("any" in types or dtype in types):
            return True
    return False


@functools.cache
def _ep_has_op(op_type: str, opset: int) -> bool:
    """Whether the CANN EP has ``op_type`` at ``opset`` for some dtype (a node of unknown type may
    be its)."""
    entries = EP_KERNELS.get(op_type, ())
    return any(ep_runs(op_type, opset, dtype) for _, _, types in entries for dtype in types)


def _default_opset(model: onnx.ModelProto) -> int:
    return next((o.version for o in model.opset_import if o.domain in _ONNX), 1)


def _label(node: onnx.NodeProto, index: int) -> str:
    return node.name or f"{node.op_type}#{index}"


def _type_name(elem: int | None) -> str:
    return "?" if elem is None else TensorProto.DataType.Name(elem).lower()


def _subgraphs(node: onnx.NodeProto) -> list[tuple[str, onnx.GraphProto]]:
    """(attribute name, body) of each graph attribute of ``node`` (``name[i]`` for GRAPHS)."""
    out = []
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            out.append((a.name, a.g))
        elif a.type == onnx.AttributeProto.GRAPHS:
            out.extend((f"{a.name}[{i}]", g) for i, g in enumerate(a.graphs))
    return out


def _read_names(graph: onnx.GraphProto) -> set[str]:
    """The tensor names a node of ``graph`` or of its bodies reads, and the graphs' outputs."""
    names = {o.name for o in graph.output}
    for node in graph.node:
        names.update(node.input)
        for _, body in _subgraphs(node):
            names |= _read_names(body)
    return names


def _has_subgraphs(node: onnx.NodeProto) -> bool:
    attributes = node.attribute
    return bool(attributes) and any(a.type in _SUBGRAPH_TYPES for a in attributes)


def _node_key(node: onnx.NodeProto, index: int) -> str:
    return node.output[0] if node.output and node.output[0] else f"#{index}"


class _Values:
    """Types, static shapes and constant values of one graph's tensors; names it does not know are
    looked up in the enclosing graph's (``parent``). ``bodies``: the scopes of its nodes' bodies."""

    def __init__(self, graph: onnx.GraphProto, parent: _Values | None = None):
        self.parent = parent
        self.types: dict[str, int] = {}
        self.shapes: dict[str, tuple] = {}
        self.constants: dict[str, onnx.TensorProto] = {t.name: t for t in graph.initializer}
        self.bodies: dict[tuple[str, str], _Values] = {}
        self._arrays: dict[str, np.ndarray | None] = {}
        for vi in (*graph.input, *graph.value_info, *graph.output):
            t = vi.type.tensor_type
            if t.elem_type:
                self.types.setdefault(vi.name, t.elem_type)
            if t.HasField("shape"):
                self.shapes.setdefault(vi.name, tuple(d.dim_value if d.HasField("dim_value") else None
                                                      for d in t.shape.dim))
        for i, node in enumerate(graph.node):
            if node.op_type == "Constant" and node.domain in _ONNX and node.output:
                for a in node.attribute:
                    if a.name == "value":
                        self.constants[node.output[0]] = a.t
            if _has_subgraphs(node):
                for name, body in _subgraphs(node):
                    self.bodies[(_node_key(node, i), name)] = _Values(body, self)
        for name, tensor in self.constants.items():
            self.types[name] = tensor.data_type
            self.shapes[name] = tuple(tensor.dims)

    @classmethod
    def of_model(cls, model: onnx.ModelProto) -> _Values:
        try:
            import ort_ops.schemas

            ort_ops.schemas.register_all()
            inferred = onnx.shape_inference.infer_shapes(model)
        except Exception:  # inference is best effort: unknown types are reported per node
            inferred = model
        return cls(inferred.graph)

    def type_of(self, name: str) -> int | None:
        scope = self
        while scope is not None:
            t = scope.types.get(name)
            if t is not None:
                return t
            scope = scope.parent
        return None

    def shape_of(self, name: str) -> tuple | None:
        scope = self
        while scope is not None:
            s = scope.shapes.get(name)
            if s is not None or name in scope.types:
                return s
            scope = scope.parent
        return None

    def add_constant(self, tensor: onnx.TensorProto) -> None:
        self.constants[tensor.name] = tensor
        self.types[tensor.name] = tensor.data_type
        self.shapes[tensor.name] = tuple(tensor.dims)
        self._arrays.pop(tensor.name, None)

    def value(self, name: str) -> np.ndarray | None:
        """The constant value of ``name`` if it is one of at most MAX_CONSTANT_ELEMENTS elements."""
        if name in self._arrays:
            return self._arrays[name]
        tensor = self.constants.get(name)
        if tensor is None:
            array = self.parent.value(name) if self.parent is not None else None
        elif tensor.data_location == TensorProto.EXTERNAL or math.prod(tensor.dims) > MAX_CONSTANT_ELEMENTS:
            array = None
        else:
            array = numpy_helper.to_array(tensor)
        self._arrays[name] = array
        return array

    def info(self, node: onnx.NodeProto, opset: int) -> NodeInfo:
        ins, outs = node.input, node.output
        return NodeInfo(node=node, opset=opset,
                        input_types=[self.type_of(n) if n else None for n in ins],
                        input_shapes=[self.shape_of(n) if n else None for n in ins],
                        output_types=[self.type_of(n) if n else None for n in outs],
                        output_shapes=[self.shape_of(n) if n else None for n in outs],
                        constants=[self.value(n) if n else None for n in ins])


def _kernel_table() -> dict[tuple[str, str], list]:
    from ort_ops.library import kernel_signatures

    table: dict[tuple[str, str], list] = {}
    for k in kernel_signatures():
        if k.provider == "CANNExecutionProvider":
            table.setdefault((k.domain, k.op), []).append(k)
    return table


class _Kernels:
    """The library's CANN kernels, with a cache of which node signatures have one."""

    def __init__(self):
        self.table = _kernel_table()
        self._cache: dict[tuple, bool] = {}

    def has(self, domain: str, op: str, info: NodeInfo) -> bool:
        ins, outs = tuple(info.input_types), tuple(info.output_types)  # None: absent or unknown, both match
        key = (domain, op, ins, outs)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = _has_kernel(self.table.get((domain, op), []), ins, outs)
        return hit


def _has_kernel(kernels, ins: tuple, outs: tuple) -> bool:
    """Whether one of ``kernels`` takes these input / output types (None: absent or unknown; a
    variadic last input or output repeats to cover the rest)."""
    def fits(types: tuple, declared: tuple, variadic: bool) -> bool:
        if variadic:
            declared = declared + declared[-1:] * max(0, len(types) - len(declared))
        elif len(types) > len(declared):
            return False
        return all(t is None or t == want for t, want in zip(types, declared))

    return any(fits(ins, k.inputs, k.variadic_inputs) and fits(outs, k.outputs, k.variadic_outputs) for k in kernels)


def _main_dtype(info: NodeInfo) -> str | None:
    from ort_ops.dtypes import name_of_elem

    index = 1 if info.node.op_type == "Where" else 0
    elem = info.input_types[index] if index < len(info.input_types) else None
    return name_of_elem(elem) if elem else None


def _fold_constant_of_shape(graph: onnx.GraphProto, values: _Values, report: PlacementReport) -> dict[str, str]:
    """Folds ConstantOfShape nodes of constant shape with at most MAX_CONSTANT_ELEMENTS elements;
    returns output name -> why each ConstantOfShape it did not fold was kept."""
    keep, kept_why = [], {}
    for i, node in enumerate(graph.node):
        is_cos = node.op_type == "ConstantOfShape" and node.domain in _ONNX and len(node.input) > 0
        shape = values.value(node.input[0]) if is_cos else None
        if shape is None:
            keep.append(node)
            if is_cos and node.output:
                kept_why[node.output[0]] = f"not folded: shape input {node.input[0]!r} is not a constant the pass reads"
            continue
        dims = [int(d) for d in shape.reshape(-1)]
        if any(d < 0 for d in dims):
            raise ValueError(f"ConstantOfShape node {_label(node, i)!r}: its shape input {node.input[0]!r} is {dims}; "
                             "ONNX requires every dimension to be >= 0")
        count = math.prod(dims)
        if count > MAX_CONSTANT_ELEMENTS:
            keep.append(node)
            kept_why[node.output[0]] = (f"not folded: {count} elements > {MAX_CONSTANT_ELEMENTS} "
                                        "(placement.MAX_CONSTANT_ELEMENTS)")
            continue
        fill = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "value"), None)
        base = numpy_helper.to_array(fill).reshape(-1)[:1] if fill is not None else np.zeros(1, np.float32)
        tensor = numpy_helper.from_array(np.full(dims, base[0], dtype=base.dtype), node.output[0])
        graph.initializer.append(tensor)
        values.add_constant(tensor)
        report.nodes.append(NodePlacement(_label(node, i), node.op_type, "folded",
                                          reason="constant shape: computed once, an initializer"))
    if len(keep) != len(graph.node):
        del graph.node[:]
        graph.node.extend(keep)
    return kept_why


@dataclass
class _Pass:
    """What placing one model needs, for the main graph and every body."""

    opset: int
    soc: str | None
    skip: set
    kernels: _Kernels
    report: PlacementReport
    kept_why: dict[str, str]
    unavailable: object
    computed_once: ComputedOnce | None = None  # the main graph's constants (None: ORT will not fold them)
    placed_any: bool = False
    read: set[str] | None = None  # the names any graph reads (for rules that drop unread outputs)

    def graph(self, graph: onnx.GraphProto, values: _Values, prefix: str) -> None:
        for i, node in enumerate(graph.node):
            self.node(node, _label(node, i), _node_key(node, i), values, prefix)

    def node(self, node: onnx.NodeProto, label: str, key: str, values: _Values, prefix: str) -> None:
        report, label = self.report, prefix + label
        if node.domain == DOMAIN:
            ok = self.kernels.has(DOMAIN, node.op_type, values.info(node, self.opset))
            report.nodes.append(NodePlacement(label, node.op_type, "ortops" if ok else "cpu",
                                              reason=None if ok else "no CANN kernel of the library for its types"))
            return
        if node.domain not in _ONNX:
            report.nodes.append(NodePlacement(label, node.op_type, "cpu", reason=f"domain {node.domain!r}"))
            return
        once = self.computed_once.take(node) if self._computed_once_here(node, values, prefix) else None
        if once is not None:
            report.nodes.append(NodePlacement(label, node.op_type, "folded", reason=once))
            return
        if _has_subgraphs(node):
            report.nodes.append(NodePlacement(label, node.op_type, "cpu",
                                              reason="control flow (the CANN EP has no kernel); its bodies are placed"))
            for name, body in _subgraphs(node):
                scope = values.bodies.get((key, name)) or _Values(body, values)
                self.graph(body, scope, f"{label}/{name}/")
            return
        info = values.info(node, self.opset)
        rule = RULES.get(node.op_type)
        dtype = _main_dtype(info)
        ep_ok = ep_runs(node.op_type, self.opset, dtype)
        if dtype is None and node.op_type in _DEFECT_OPS:
            ep_ok = _ep_has_op(node.op_type, self.opset)  # ORT knows the type: the EP may take it
        keep = rule.leave_to_ep(info) if rule is not None and rule.leave_to_ep is not None else None
        if ep_ok and (rule is None or keep is not None):
            report.nodes.append(self._on_ep(label, info, rule, dtype, keep, None))
            return
        if node.op_type in self.skip:
            report.nodes.append(self._on_ep(label, info, rule, dtype, "skipped (skip=...)", "skipped")
                                if ep_ok else NodePlacement(label, node.op_type, "cpu", reason="skipped (skip=...)"))
            return
        reason = self._why_not(rule, info)
        if reason is not None:
            why_kept = self.kept_why.get(node.output[0]) if node.output else None
            if why_kept is not None:
                reason = f"{why_kept}; {reason}"
            report.nodes.append(self._on_ep(label, info, rule, dtype, f"not placed: {reason}", reason)
                                if ep_ok else NodePlacement(label, node.op_type, "cpu", reason=reason))
            return
        if rule.drops_unread_outputs:
            for i in range(1, len(node.output)):
                if node.output[i] not in self.read:
                    node.output[i] = ""
            while len(node.output) > 1 and node.output[-1] == "":
                del node.output[-1]
        name = rule.name_for(info)
        report.nodes.append(NodePlacement(label, node.op_type, "placed", placed_as=name,
                                          cann_ops=tuple(rule.cann_ops(info, _route(rule, info, self.soc,
                                                                                    self.unavailable))),
                                          reason=self.kept_why.get(node.output[0]) if node.output else None))
        node.domain = CANN_DOMAIN
        node.op_type = name
        self.placed_any = True

    def _computed_once_here(self, node: onnx.NodeProto, values: _Values, prefix: str) -> bool:
        """Whether ``node`` may be left to ONNX Runtime's constant folding: in the main graph, and no
        output known to hold more than MAX_CONSTANT_ELEMENTS (such a one is placed, computed on the
        device each run, as a large ConstantOfShape is, rather than held as an initializer)."""
        if prefix or self.computed_once is None:
            return False
        shapes = (values.shapes.get(o) for o in node.output if o)
        return not any(s is not None and all(isinstance(d, int) for d in s) and math.prod(s) > MAX_CONSTANT_ELEMENTS
                       for s in shapes)

    def _on_ep(self, label, info: NodeInfo, rule, dtype, reason, not_placed) -> NodePlacement:
        """A node the CANN EP's own kernel takes, with an error if it must not run there."""
        op = info.node.op_type
        error = None
        unsafe = defect_of(info)
        what = f"{op}({dtype or '?'})"
        if unsafe is not None:
            shapes = " and ".join("?" if s is None else str(list(s))
                                  for name, s in zip(info.node.input, info.input_shapes) if name)
            error = f"{what}: inputs of shapes {shapes}: {unsafe}"
        elif self.soc:
            for cann_op in EP_LAUNCHES.get(op, ()):
                source = self.unavailable(self.soc, cann_op)
                if source is not None:
                    error = (f"{what}: the CANN EP's {op} kernel launches the CANN op {cann_op}, which is not "
                             f"available on {self.soc} ({source})")
                    break
        if error is not None and not_placed is not None:
            error += f"; and it cannot be placed: {not_placed}"
        return NodePlacement(label, op, "cann_ep", reason=reason, error=error)

    def _why_not(self, rule, info: NodeInfo) -> str | None:
        return _why_not(rule, info, self.opset, self.kernels, self.soc, self.unavailable)


def place(model: onnx.ModelProto, *, soc: str | None = None, report: PlacementReport | None = None,
          skip: Iterable[str] = (), folds_constants: bool = True) -> onnx.ModelProto:
    """A copy of ``model`` with its nodes placed on CANN as far as kernels exist (see the module).

    ``soc``: the Ascend SoC name (``aclrtGetSocName``); CANN ops it lacks are not used (None: no
    SoC limits assumed). ``skip``: op types to leave as they are. ``report`` is filled in; nodes
    that must not run on the CANN EP as they are get an ``error`` (:meth:`PlacementReport.check`
    raises for them; ``cann_ep.session`` calls it). A ConstantOfShape of a constant negative
    dimension raises ``ValueError``. A model that was placed before is unplaced first, so placing
    twice is the same as once. ``folds_constants``: whether the session will run ONNX Runtime's
    constant folding (any optimisation level but ``ORT_DISABLE_ALL``); then the main graph's nodes
    computed from constants only are left to it, reported ``folded``
    (:mod:`ort_ops.rewrite.placement.computed_once`).
    """
    report = report if report is not None else PlacementReport()
    report.soc = soc
    out = unplace(model)
    opset = _default_opset(out)
    values = _Values.of_model(out)
    kept_why = _fold_constant_of_shape(out.graph, values, report)
    kernels = _Kernels()
    if not kernels.table:
        report.notes.append("this ort_ops library has no CANN kernels (built with ORTOPS_WITH_CANN=OFF)")
    work = _Pass(opset, soc, set(skip), kernels, report, kept_why, cann_soc.unavailable,
                 ComputedOnce(out.graph, values.shapes) if folds_constants else None)
    work.read = _read_names(out.graph)
    if not {"Transpose", "Gemm", "MatMul"} & work.skip:
        gemm = RULES["Gemm"]

        def gemm_is_placed(node: onnx.NodeProto) -> bool:
            return work._why_not(gemm, values.info(node, opset)) is None

        for node, why in fold_transposes(out, values.shapes, values.types, opset, gemm_is_placed):
            report.nodes.append(NodePlacement(node.name or node.output[0], node.op_type, "folded", reason=why))
    work.graph(out.graph, values, "")
    _declare_custom_outputs(out.graph, values)
    if work.placed_any and not any(o.domain == CANN_DOMAIN for o in out.opset_import):
        out.opset_import.append(helper.make_opsetid(CANN_DOMAIN, OPSET_VERSION))
    return out


#: the doc_string of the value_info entries place() adds (unplace removes them)
_DECLARED_BY_PLACEMENT = "shape of a placed node's output, for ONNX Runtime (ort_ops placement)"


def _declare_custom_outputs(graph: onnx.GraphProto, values: _Values) -> None:
    """Declares the static shapes of the main graph's custom-op outputs (``ai.ortops.cann``,
    ``ai.ortops``) in ``value_info``: ONNX Runtime infers no shape through a custom op, so without
    them it cannot fold a ``Shape`` (or what else reads a shape) after one, which computed_once
    reports ``folded``; with them it does (checked against the profile, tests/cann/
    test_computed_once_on_cann.py)."""
    declared = {vi.name for vi in (*graph.input, *graph.output, *graph.value_info)}
    for node in graph.node:
        if node.domain not in (CANN_DOMAIN, DOMAIN):
            continue
        for name in node.output:
            elem, shape = values.types.get(name), values.shapes.get(name)
            if (name and name not in declared and elem and shape is not None
                    and all(isinstance(d, int) for d in shape)):
                graph.value_info.append(helper.make_tensor_value_info(name, elem, list(shape),
                                                                      doc_string=_DECLARED_BY_PLACEMENT))
                declared.add(name)


def _why_not(rule, info: NodeInfo, opset: int, kernels: _Kernels, soc, unavailable) -> str | None:
    node = info.node
    if rule is None:
        return _NO_KERNEL + _dynamic_hint(info)
    if opset < rule.min_opset:
        return f"opset {opset} form of {node.op_type}: ai.ortops.cann implements the opset {rule.min_opset}+ form"
    reason = rule.check(info)
    if reason is not None:
        return reason
    if any(t is None for name, t in zip(node.input, info.input_types) if name):
        return "input types unknown (shape inference could not type every input)"
    if not kernels.has(CANN_DOMAIN, rule.name_for(info), info):
        types = ", ".join(_type_name(t) for name, t in zip(node.input, info.input_types) if name)
        return f"no ai.ortops.cann kernel for {node.op_type}({types})"
    if soc:
        for op in rule.cann_ops(info, _route(rule, info, soc, unavailable)):
            source = unavailable(soc, op)
            if source is not None:
                return f"CANN op {op} is not available on {soc} ({source})"
    return None


_NO_KERNEL = "no CANN kernel (neither the CANN EP's for this opset/dtype nor an ai.ortops.cann one)"


def _dynamic_hint(info: NodeInfo) -> str:
    """For a Shape or Size of a tensor whose dimensions are not all known: what it costs, and the fix."""
    if info.node.op_type not in ("Shape", "Size") or not info.node.input:
        return ""
    shape = info.input_shapes[0]
    if shape is not None and all(isinstance(d, int) for d in shape):
        return ""
    return ("; its input's dimensions are not all known (symbolic or unnamed), so ONNX Runtime copies the "
            "whole input to the host each run to read them: give the symbolic ones sizes "
            "(cann_ep.session(free_dimensions=...), ort_ops.rewrite.free_dimensions.fix_dimensions) and it is "
            "computed once")


def _route(rule, info: NodeInfo, soc, unavailable) -> str:
    """The route the node's kernel takes on ``soc`` (None: no SoC limits)."""
    return rule.route_on(info, (lambda op: unavailable(soc, op)) if soc else None)


def _unplace_graph(graph: onnx.GraphProto) -> None:
    for node in graph.node:
        if node.domain == CANN_DOMAIN:
            node.ClearField("domain")  # the default domain, ai.onnx
            if node.op_type in _CAST_NAMES:
                node.op_type = "Cast"
            elif node.op_type in _CONSTANT_OF_SHAPE_NAMES:
                node.op_type = "ConstantOfShape"
        if _has_subgraphs(node):
            for _, body in _subgraphs(node):
                _unplace_graph(body)


def unplace(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` with every ``ai.ortops.cann`` node (bodies included) back in standard
    ONNX (exact: same inputs and attributes; ``CastTo<Type>`` -> ``Cast``, ``ConstantOfShape<Type>``
-> ``ConstantOfShape``), the domain's opset import and the shapes placement declared dropped."""
    out = copy_model(model)
    _unplace_graph(out.graph)
    declared = [vi for vi in out.graph.value_info if vi.doc_string != _DECLARED_BY_PLACEMENT]
    if len(declared) != len(out.graph.value_info):
        del out.graph.value_info[:]
        out.graph.value_info.extend(declared)
    keep = [o for o in out.opset_import if o.domain != CANN_DOMAIN]
    del out.opset_import[:]
    out.opset_import.extend(keep)
    return out
