"""Which values an integer input of a model may take, read from the graph itself (no torch).

PyTorch's losses reject class indices out of range ("Target -1 is out of bounds"); ONNX's
GatherElements/ScatterElements/Gather accept negative indices (counting from the end), so the
exported graph of ``cross_entropy`` silently trains on the wrong class for a label of -1. The
range is found by following each integer graph input through value-preserving ops (Unsqueeze,
Squeeze, Reshape, Flatten, Identity, Cast, Expand, the value branches of Where) to the ops that
use it as an index: the size of the indexed axis bounds it. Values the graph compares with a
constant (``Equal(target, -100)``: the loss's ``ignore_index``) are allowed as well. The fused
``ai.ortops::SoftmaxCrossEntropyLossAndGrad`` (``rewrite.fuse_training``) bounds its target by the
logits' classes and allows its ``ignore_index``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import numpy_helper

from ort_ops.domain import DOMAIN

_CROSS_ENTROPY = "SoftmaxCrossEntropyLossAndGrad"  # ort_ops/ops/softmax_cross_entropy_loss_and_grad.py
_DEFAULT_IGNORE_INDEX = -100
_PASS_THROUGH = {"Unsqueeze", "Squeeze", "Reshape", "Flatten", "Identity", "Cast", "Expand"}
_INT_TYPES = {onnx.TensorProto.INT8, onnx.TensorProto.INT16, onnx.TensorProto.INT32, onnx.TensorProto.INT64,
              onnx.TensorProto.UINT8, onnx.TensorProto.UINT16, onnx.TensorProto.UINT32, onnx.TensorProto.UINT64}


@dataclass
class IndexRange:
    """Valid values of an index input: ``0 <= v < size``, or one of ``ignored``."""

    size: int
    ignored: set[int] = field(default_factory=set)
    used_by: str = ""

    def describe(self) -> str:
        extra = f" or {', '.join(map(str, sorted(self.ignored)))} (ignored by the loss)" if self.ignored else ""
        return f"0 to {self.size - 1}{extra}"


def _constants(graph: onnx.GraphProto) -> dict[str, np.ndarray]:
    out = {t.name: t for t in graph.initializer}
    values: dict[str, np.ndarray] = {}
    for name, t in out.items():
        if t.data_location != onnx.TensorProto.EXTERNAL and np.prod(t.dims, dtype=np.int64) <= 16:
            values[name] = numpy_helper.to_array(t)
    for node in graph.node:
        if node.op_type == "Constant" and node.output:
            for a in node.attribute:
                if a.name == "value" and a.t.data_location != onnx.TensorProto.EXTERNAL:
                    values[node.output[0]] = numpy_helper.to_array(a.t)
    return values


def _static_dims(model: onnx.ModelProto) -> dict[str, list[int | None]]:
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except Exception:
        inferred = model
    dims: dict[str, list[int | None]] = {}
    g = inferred.graph
    for vi in [*g.input, *g.value_info, *g.output]:
        t = vi.type.tensor_type
        if t.HasField("shape"):
            dims[vi.name] = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
    for t in g.initializer:
        dims[t.name] = list(t.dims)
    return dims


def label_ranges(model: onnx.ModelProto, inputs: list[str]) -> dict[str, IndexRange]:
    """``input name -> IndexRange`` for the integer ``inputs`` of ``model`` used as indices."""
    graph = model.graph
    elem = {i.name: i.type.tensor_type.elem_type for i in graph.input}
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for x in node.input:
            consumers.setdefault(x, []).append(node)
    consts = _constants(graph)
    dims: dict[str, list[int | None]] | None = None
    ranges: dict[str, IndexRange] = {}
    for name in inputs:
        if elem.get(name) not in _INT_TYPES:
            continue
        sizes: list[tuple[int, str]] = []
        ignored: set[int] = set()
        seen, todo = {name}, [name]
        while todo:
            value = todo.pop()
            for node in consumers.get(value, []):
                op, slot = node.op_type, list(node.input).index(value)
                if op in _PASS_THROUGH and slot == 0 or op == "Where" and slot in (1, 2):
                    for out in node.output[:1]:
                        if out not in seen:
                            seen.add(out)
                            todo.append(out)
                elif op in ("Equal", "NotEqual"):
                    other = consts.get(node.input[1 - slot])
                    if other is not None and other.size == 1:
                        ignored.add(int(other.reshape(())))
                elif op == _CROSS_ENTROPY and node.domain == DOMAIN and slot == 1:
                    # the fused cross-entropy: target indexes the classes of logits [N, C]
                    if dims is None:
                        dims = _static_dims(model)
                    data = dims.get(node.input[0])
                    attrs = {a.name: a for a in node.attribute}
                    ignored.add(int(attrs["ignore_index"].i) if "ignore_index" in attrs else _DEFAULT_IGNORE_INDEX)
                    if data and len(data) == 2 and data[1]:
                        sizes.append((int(data[1]), f"{op} {node.name or node.output[0]!r}"))
                elif op in ("GatherElements", "ScatterElements", "Gather") and slot == 1:
                    if dims is None:
                        dims = _static_dims(model)
                    data = dims.get(node.input[0])
                    axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
                    if data and -len(data) <= axis < len(data) and data[axis]:
                        sizes.append((int(data[axis]), f"{op} {node.name or node.output[0]!r}"))
        if sizes:
            size, used_by = min(sizes)
            ranges[name] = IndexRange(size, ignored, used_by)
    return ranges


def check_labels(feeds: Mapping[str, np.ndarray], ranges: Mapping[str, IndexRange]) -> None:
    """``ValueError`` naming the input, the first bad value and its position, and the valid range."""
    for name, rng in ranges.items():
        if name not in feeds:
            continue
        values = np.asarray(feeds[name])
        bad = (values < 0) | (values >= rng.size)
        for ignore in rng.ignored:
            bad &= values != ignore
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ValueError(f"batch input {name!r} holds {int(values[where])} at index {list(where)}: it is a "
                             f"class index ({rng.used_by}) and must be {rng.describe()}, as PyTorch requires")
