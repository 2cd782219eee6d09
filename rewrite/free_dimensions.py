"""Give a model's symbolic dimensions sizes: ``fix_dimensions(model, {"batch": 32})``.

An exporter's ``dynamic_axes`` leave names (``dim_param``) where sizes were. Then every ``Shape`` of
a tensor with such a dimension is computed on each run, and on the CANN EP, which has no Shape
kernel, ONNX Runtime copies the whole tensor to the host to read its shape (and the shape
arithmetic after it back to the device). With the sizes written in, the shapes are static: ONNX
Runtime's constant folding computes the ``Shape`` nodes and what is built from them once, when it
loads the model, and placement reports them ``folded``. This is what ONNX Runtime's
``SessionOptions.add_free_dimension_override_by_name`` does inside a session, done on the model so
that placement sees the same graph ORT runs. The session then takes only inputs of those sizes (ORT
names the input and the dimension otherwise).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import onnx

__all__ = ["fix_dimensions", "symbolic_dimensions"]


def _graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """``graph`` and every subgraph in it (If / Loop / Scan bodies), depth first."""
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _graphs(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for body in attr.graphs:
                    yield from _graphs(body)


def _dims(model: onnx.ModelProto) -> Iterator[onnx.TensorShapeProto.Dimension]:
    """Every dimension of every declared tensor type (inputs, outputs, value_info; sequences,
    optionals and maps of tensors too) in the model's graphs."""
    for graph in _graphs(model.graph):
        for vi in (*graph.input, *graph.output, *graph.value_info):
            yield from _type_dims(vi.type)


def _type_dims(t: onnx.TypeProto) -> Iterator[onnx.TensorShapeProto.Dimension]:
    kind = t.WhichOneof("value")
    if kind in ("tensor_type", "sparse_tensor_type"):
        inner = getattr(t, kind)
        if inner.HasField("shape"):
            yield from inner.shape.dim
    elif kind == "sequence_type":
        yield from _type_dims(t.sequence_type.elem_type)
    elif kind == "optional_type":
        yield from _type_dims(t.optional_type.elem_type)
    elif kind == "map_type":
        yield from _type_dims(t.map_type.value_type)


def symbolic_dimensions(model: onnx.ModelProto) -> set[str]:
    """The names of the model's symbolic dimensions (``dim_param``), in any graph."""
    return {d.dim_param for d in _dims(model) if d.WhichOneof("value") == "dim_param" and d.dim_param}


def fix_dimensions(model: onnx.ModelProto, sizes: Mapping[str, int]) -> onnx.ModelProto:
    """A copy of ``model`` with each symbolic dimension named in ``sizes`` replaced by its size.

    ``ValueError`` names a size that is not a non-negative int and a name the model does not have
    (listing the names it has); ``TypeError`` if ``sizes`` is not a mapping. ``model`` is not changed.
    """
    if not isinstance(model, onnx.ModelProto):
        raise TypeError(f"model must be an onnx.ModelProto, got {type(model).__name__}")
    if not isinstance(sizes, Mapping):
        raise TypeError(f"sizes must be a mapping of dimension name to size, got {type(sizes).__name__}")
    for name, size in sizes.items():
        if not isinstance(name, str):
            raise ValueError(f"dimension names must be strings, got {name!r}")
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ValueError(f"the size of dimension {name!r} must be an int >= 0, got {size!r}")
    have = symbolic_dimensions(model)
    unknown = sorted(set(sizes) - have)
    if unknown:
        listed = ", ".join(repr(n) for n in sorted(have)) if have else "none"
        raise ValueError(f"the model has no symbolic dimension {', '.join(repr(n) for n in unknown)} "
                         f"(its symbolic dimensions: {listed})")
    out = onnx.ModelProto()
    out.CopyFrom(model)
    for dim in _dims(out):
        if dim.WhichOneof("value") == "dim_param" and dim.dim_param in sizes:
            dim.dim_value = sizes[dim.dim_param]  # the oneof: clears dim_param
    return out
