"""What the lowerings share: the node-local variable maker and the bit-exact select.

``select_by_copy`` is not ``Where``: ONNX Runtime's CPU ``Where`` merges two half-selections with
``x != 0 ? x : y`` (``where_op.cc``), so a ``-0.0`` taken from its first branch comes out
``+0.0``, and its float16 kernel quiets signalling NaNs. It copies elements instead:
``Squeeze(GatherElements(Concat(Unsqueeze(b0), Unsqueeze(b1)), Unsqueeze(Cast(condition,
INT64))))`` takes each element of ``b1`` where ``condition`` holds and of ``b0`` elsewhere, bit for
bit.
"""

from __future__ import annotations

import numpy as np
import onnx_graphsurgeon as gs
from onnx import TensorProto

from ort_ops.dtypes import onnx_type


def variables(base: str, default_dtype=None):
    """``var(suffix, dtype=default_dtype)``: a new variable named ``<base>/<suffix>``."""
    return lambda suffix, dt=default_dtype: gs.Variable(f"{base}/{suffix}", dtype=dt)


def constants(base: str, dtype):
    """``const(suffix, values)``: a new constant of ``dtype`` named ``<base>/<suffix>``."""
    return lambda suffix, values: gs.Constant(f"{base}/{suffix}", np.array(values, dtype=dtype))


def node_maker(base: str):
    """``node(op, suffix, inputs, outputs, **attrs)``: a new node named ``<base>/<suffix>``."""
    return lambda op, suffix, ins, outs, **attrs: gs.Node(op, f"{base}/{suffix}", attrs, ins, outs)


def wanted_output(outputs: list, index: int):
    """The output at ``index`` if the node produces it (an omitted optional output has no name)."""
    return outputs[index] if index < len(outputs) and outputs[index].name else None


def float32_inputs(base: str, dtype: str, named) -> tuple[list, list[gs.Node]]:
    """The tensors ``named`` (``((name, tensor), ...)``) in float32, and the nodes making them: the
    tensors themselves for float32, else ``Cast`` nodes ``<base>/cast_<name>`` into ``<base>/<name>_f32``."""
    if dtype == "float32":
        return [tensor for _, tensor in named], []
    var, node = variables(base, np.float32), node_maker(base)
    cast = [var(f"{name}_f32") for name, _ in named]
    return cast, [node("Cast", f"cast_{name}", [src], [dst], to=TensorProto.FLOAT)
                  for (name, src), dst in zip(named, cast)]


def reshaped_output(base: str, dtype: str, name: str, value, shape, result) -> list[gs.Node]:
    """Nodes writing ``result = Reshape(value, shape)`` (``allowzero``; node ``<base>/unflatten_<name>``),
    cast from float32 to ``dtype`` once unless it is float32 (``<base>/cast_<name>`` from ``<base>/<name>_f32``)."""
    node = node_maker(base)
    if dtype == "float32":
        return [node("Reshape", f"unflatten_{name}", [value, shape], [result], allowzero=1)]
    full = gs.Variable(f"{base}/{name}_f32", dtype=np.float32)
    return [node("Reshape", f"unflatten_{name}", [value, shape], [full], allowzero=1),
            node("Cast", f"cast_{name}", [full], [result], to=onnx_type(dtype))]


def select_by_copy(base: str, axis: gs.Constant, condition, branches, result) -> list[gs.Node]:
    """Nodes writing ``result = condition ? b1 : b0`` by copying elements (see above).

    ``branches``: ``((name0, b0), (name1, b1))``, the names naming their nodes; ``axis``: the
    constant ``[0]``."""
    var = variables(base)
    (name0, b0), (name1, b1) = branches
    index, index1 = var("index", np.int64), var("index_1", np.int64)
    stacked = [var(f"{name0}_1"), var(f"{name1}_1")]
    both, picked = var("both"), var("picked")
    return [gs.Node("Cast", f"{base}/cast_index", {"to": TensorProto.INT64}, [condition], [index]),
            gs.Node("Unsqueeze", f"{base}/unsqueeze_index", inputs=[index, axis], outputs=[index1]),
            gs.Node("Unsqueeze", f"{base}/unsqueeze_{name0}", inputs=[b0, axis], outputs=[stacked[0]]),
            gs.Node("Unsqueeze", f"{base}/unsqueeze_{name1}", inputs=[b1, axis], outputs=[stacked[1]]),
            gs.Node("Concat", f"{base}/concat", {"axis": 0}, stacked, [both]),
            gs.Node("GatherElements", f"{base}/select", {"axis": 0}, [both, index1], [picked]),
            gs.Node("Squeeze", f"{base}/squeeze", inputs=[picked, axis], outputs=[result])]
