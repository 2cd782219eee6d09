"""The placement pass: every node of a graph that the CANN EP would leave on the CPU becomes an
``ai.ortops.cann`` op with a CANN kernel, where a kernel for its types, attributes and SoC exists.

Each node of the main graph ends in one of four places, and the report says which and why:

- ``placed``: rewritten into ``ai.ortops.cann`` (same inputs and attributes; ``Cast`` becomes
  ``CastTo<Type>``), its kernel runs the CANN ops the rule names. Every op with a rule is placed,
  unless the rule says the CANN EP's own kernel does as well (``leave_to_ep``: same-shape
  arithmetic);
- ``cann_ep``: the CANN EP's own kernel runs it (op, opset and dtype in the wheel's kernel table,
  :mod:`ort_ops.rewrite.placement.cann_ep_kernels`; MatMul and Conv, for example);
- ``ortops``: an ``ai.ortops`` op (EluGrad, ...) whose library kernel runs on CANN;
- ``cpu``: nothing can run it on CANN here; ``reason`` says what is missing.

``ConstantOfShape`` of a constant shape is folded into an initializer, and Transposes into the
Gemm / MatMul nodes that read them (transA / transB) or into the Transpose they undo
(:mod:`ort_ops.rewrite.placement.transposes`): ``folded``. Nodes inside If/Loop/Scan bodies and
functions are left alone. :func:`unplace` is the exact inverse of the rest (folds are not undone).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ort_ops import DOMAIN
from ort_ops.domain import CANN_DOMAIN, OPSET_VERSION
from ort_ops.rewrite.placement.cann_ep_kernels import KERNELS as EP_KERNELS
from ort_ops.rewrite.placement.ops import RULES
from ort_ops.rewrite.placement.ops.cast import DESTINATIONS
from ort_ops.rewrite.placement.rule import NodeInfo
from ort_ops.rewrite.placement.transposes import fold_transposes

_CAST_NAMES = set(DESTINATIONS.values())
_MAX_CONSTANT_ELEMENTS = 1 << 16


@dataclass
class NodePlacement:
    """Where one node runs: ``where`` is ``cann_ep``, ``placed``, ``ortops``, ``cpu`` or ``folded``."""

    node: str
    op_type: str
    where: str
    placed_as: str | None = None
    cann_ops: tuple[str, ...] = ()
    reason: str | None = None

    def line(self) -> str:
        what = f"{self.where:8s} {self.op_type:16s} {self.node}"
        if self.placed_as and self.placed_as != self.op_type:
            what += f" -> {self.placed_as}"
        if self.cann_ops:
            what += f" [{', '.join(self.cann_ops)}]"
        return what + (f": {self.reason}" if self.reason else "")


@dataclass
class PlacementReport:
    """The placement of every node of the main graph, for SoC ``soc``."""

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

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for n in self.nodes:
            out[n.where] = out.get(n.where, 0) + 1
        return out

    def summary(self) -> str:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(self.counts().items()))
        lines = [f"placement on {self.soc or 'an unknown SoC'}: {counts or 'no nodes'}"]
        lines += ["  " + n.line() for n in self.nodes if n.where in ("cpu", "placed", "folded")]
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)

    def to_json(self) -> str:
        return json.dumps({"soc": self.soc, "nodes": [asdict(n) for n in self.nodes], "notes": self.notes},
                          indent=2)


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


def _default_opset(model: onnx.ModelProto) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)


def _label(node: onnx.NodeProto, index: int) -> str:
    return node.name or f"{node.op_type}#{index}"


def _type_name(elem: int | None) -> str:
    return "?" if elem is None else TensorProto.DataType.Name(elem).lower()


class _Values:
    """Types, static shapes and constant values of the main graph's tensors."""

    def __init__(self, model: onnx.ModelProto):
        self.types: dict[str, int] = {}
        self.shapes: dict[str, tuple] = {}
        self.constants: dict[str, onnx.TensorProto] = {t.name: t for t in model.graph.initializer}
        for node in model.graph.node:
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
                for a in node.attribute:
                    if a.name == "value" and node.output:
                        self.constants[node.output[0]] = a.t
        try:
            import ort_ops.schemas

            ort_ops.schemas.register_all()
            inferred = onnx.shape_inference.infer_shapes(model)
        except Exception:  # inference is best effort: unknown types are reported per node
            inferred = model
        g = inferred.graph
        for vi in (*g.input, *g.value_info, *g.output):
            t = vi.type.tensor_type
            if t.elem_type:
                self.types.setdefault(vi.name, t.elem_type)
            if t.HasField("shape"):
                self.shapes.setdefault(vi.name, tuple(d.dim_value if d.HasField("dim_value") else None
                                                      for d in t.shape.dim))
        for name, tensor in self.constants.items():
            self.types[name] = tensor.data_type
            self.shapes[name] = tuple(tensor.dims)

    def value(self, name: str) -> np.ndarray | None:
        tensor = self.constants.get(name)
        if tensor is None or tensor.data_location == TensorProto.EXTERNAL:
            return None
        if int(np.prod(tensor.dims, dtype=np.int64)) > _MAX_CONSTANT_ELEMENTS:
            return None
        return numpy_helper.to_array(tensor)

    def info(self, node: onnx.NodeProto, opset: int) -> NodeInfo:
        def of(names: Iterable[str], table: dict):
            return [table.get(n) if n else None for n in names]

        return NodeInfo(node=node, opset=opset, input_types=of(node.input, self.types),
                        input_shapes=of(node.input, self.shapes), output_types=of(node.output, self.types),
                        output_shapes=of(node.output, self.shapes),
                        constants=[self.value(n) if n else None for n in node.input],
                        attrs={a.name: helper.get_attribute_value(a) for a in node.attribute})


def _kernel_table() -> dict[tuple[str, str], list]:
    from ort_ops.library import kernel_signatures

    table: dict[tuple[str, str], list] = {}
    for k in kernel_signatures():
        if k.provider == "CANNExecutionProvider":
            table.setdefault((k.domain, k.op), []).append(k)
    return table


def _has_kernel(kernels, info: NodeInfo) -> bool:
    for k in kernels:
        if len(info.node.input) > len(k.inputs) or len(info.node.output) > len(k.outputs):
            continue
        ins = all(not name or t is None or t == want
                  for name, t, want in zip(info.node.input, info.input_types, k.inputs))
        outs = all(not name or t is None or t == want
                   for name, t, want in zip(info.node.output, info.output_types, k.outputs))
        if ins and outs:
            return True
    return False


def _main_dtype(info: NodeInfo) -> str | None:
    from ort_ops.dtypes import name_of_elem

    index = 1 if info.node.op_type == "Where" else 0
    elem = info.input_types[index] if index < len(info.input_types) else None
    return name_of_elem(elem) if elem else None


def _fold_constant_of_shape(model: onnx.ModelProto, values: _Values, report: PlacementReport) -> None:
    keep = []
    for i, node in enumerate(model.graph.node):
        shape = values.value(node.input[0]) if node.op_type == "ConstantOfShape" and node.input else None
        if shape is None or node.domain not in ("", "ai.onnx"):
            keep.append(node)
            continue
        fill = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "value"), None)
        base = numpy_helper.to_array(fill).reshape(-1)[:1] if fill is not None else np.zeros(1, np.float32)
        tensor = numpy_helper.from_array(np.full(shape.astype(np.int64), base[0], dtype=base.dtype), node.output[0])
        model.graph.initializer.append(tensor)
        values.constants[tensor.name] = tensor
        values.types[tensor.name] = tensor.data_type
        values.shapes[tensor.name] = tuple(tensor.dims)
        report.nodes.append(NodePlacement(_label(node, i), node.op_type, "folded",
                                          reason="constant shape: computed once, an initializer"))
    del model.graph.node[:]
    model.graph.node.extend(keep)


def place(model: onnx.ModelProto, *, soc: str | None = None, report: PlacementReport | None = None,
          skip: Iterable[str] = ()) -> onnx.ModelProto:
    """A copy of ``model`` with its nodes placed on CANN as far as kernels exist (see the module).

    ``soc``: the Ascend SoC name (``aclrtGetSocName``); CANN ops it lacks are not used (None: no
    SoC limits assumed). ``skip``: op types to leave as they are. ``report`` is filled in.
    A model that was placed before is unplaced first, so placing twice is the same as once.
    """
    from ort_ops.library import cann_op_unavailable

    report = report if report is not None else PlacementReport()
    report.soc = soc
    out = unplace(model)
    opset = _default_opset(out)
    values = _Values(out)
    _fold_constant_of_shape(out, values, report)
    kernels = _kernel_table()
    if not kernels:
        report.notes.append("this ort_ops library has no CANN kernels (built with ORTOPS_WITH_CANN=OFF)")
    skip = set(skip)
    if not {"Transpose", "Gemm", "MatMul"} & skip:
        gemm = RULES["Gemm"]

        def gemm_is_placed(node: onnx.NodeProto) -> bool:
            return _why_not(gemm, values.info(node, opset), opset, kernels, soc, cann_op_unavailable) is None

        for node, why in fold_transposes(out, values.shapes, values.types, opset, gemm_is_placed):
            report.nodes.append(NodePlacement(node.name or node.output[0], node.op_type, "folded", reason=why))
    placed_any = False
    for i, node in enumerate(out.graph.node):
        label = _label(node, i)
        if node.domain == DOMAIN:
            info = values.info(node, opset)
            ok = _has_kernel(kernels.get((DOMAIN, node.op_type), []), info)
            report.nodes.append(NodePlacement(label, node.op_type, "ortops" if ok else "cpu",
                                              reason=None if ok else "no CANN kernel of the library for its types"))
            continue
        if node.domain not in ("", "ai.onnx"):
            report.nodes.append(NodePlacement(label, node.op_type, "cpu", reason=f"domain {node.domain!r}"))
            continue
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
            report.nodes.append(NodePlacement(label, node.op_type, "cpu",
                                              reason="control flow: its bodies are not placed"))
            continue
        info = values.info(node, opset)
        rule = RULES.get(node.op_type)
        ep_ok = ep_runs(node.op_type, opset, _main_dtype(info))
        keep = rule.leave_to_ep(info) if rule is not None and rule.leave_to_ep is not None else None
        if ep_ok and (rule is None or keep is not None):
            report.nodes.append(NodePlacement(label, node.op_type, "cann_ep", reason=keep))
            continue
        if node.op_type in skip:
            report.nodes.append(NodePlacement(label, node.op_type, "cann_ep" if ep_ok else "cpu",
                                              reason="skipped (skip=...)"))
            continue
        reason = _why_not(rule, info, opset, kernels, soc, cann_op_unavailable)
        if reason is not None:
            report.nodes.append(NodePlacement(label, node.op_type, "cann_ep" if ep_ok else "cpu",
                                              reason=f"not placed: {reason}" if ep_ok else reason))
            continue
        name = rule.name_for(info)
        report.nodes.append(NodePlacement(label, node.op_type, "placed", placed_as=name,
                                          cann_ops=tuple(rule.cann_ops(info))))
        node.domain = CANN_DOMAIN
        node.op_type = name
        placed_any = True
    if placed_any and not any(o.domain == CANN_DOMAIN for o in out.opset_import):
        out.opset_import.append(helper.make_opsetid(CANN_DOMAIN, OPSET_VERSION))
    return out


def _why_not(rule, info: NodeInfo, opset: int, kernels, soc, unavailable) -> str | None:
    node = info.node
    if rule is None:
        return "no CANN kernel (neither the CANN EP's for this opset/dtype nor an ai.ortops.cann one)"
    if opset < rule.min_opset:
        return f"opset {opset} form of {node.op_type}: ai.ortops.cann implements the opset {rule.min_opset}+ form"
    reason = rule.check(info)
    if reason is not None:
        return reason
    if any(t is None for name, t in zip(node.input, info.input_types) if name):
        return "input types unknown (shape inference could not type every input)"
    if not _has_kernel(kernels.get((CANN_DOMAIN, rule.name_for(info)), []), info):
        types = ", ".join(_type_name(t) for name, t in zip(node.input, info.input_types) if name)
        return f"no ai.ortops.cann kernel for {node.op_type}({types})"
    if soc:
        for op in rule.cann_ops(info):
            source = unavailable(soc, op)
            if source is not None:
                return f"CANN op {op} is not available on {soc} ({source})"
    return None


def unplace(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` with every ``ai.ortops.cann`` node back in standard ONNX (exact: same
    inputs and attributes; ``CastTo<Type>`` -> ``Cast``), the domain's opset import dropped."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    for node in out.graph.node:
        if node.domain == CANN_DOMAIN:
            node.ClearField("domain")  # the default domain, ai.onnx
            if node.op_type in _CAST_NAMES:
                node.op_type = "Cast"
    keep = [o for o in out.opset_import if o.domain != CANN_DOMAIN]
    del out.opset_import[:]
    out.opset_import.extend(keep)
    return out
