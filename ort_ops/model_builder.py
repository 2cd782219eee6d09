"""Build small ONNX models that use the ``ai.ortops`` ops (tests, demo, benchmarks)."""

from __future__ import annotations

from collections.abc import Sequence

import onnx
from onnx import helper

from ort_ops import dtypes
from ort_ops.domain import DOMAIN, IR_VERSION, ONNX_OPSET, OPSET_VERSION


def opset_imports() -> list[onnx.OperatorSetIdProto]:
    """The opset imports every model using ``ai.ortops`` ops needs."""
    return [helper.make_opsetid("", ONNX_OPSET), helper.make_opsetid(DOMAIN, OPSET_VERSION)]


def make_model(graph: onnx.GraphProto) -> onnx.ModelProto:
    """Wrap a graph in a model with the project's IR version and opset imports."""
    model = helper.make_model(graph, opset_imports=opset_imports(), producer_name="ort_ops")
    model.ir_version = IR_VERSION
    return model


def make_elu_grad_model(
    dtype="float32",
    shape: Sequence[int | str | None] | None = (4, 2),
    alpha: float | None = None,
    *,
    activations_dtype=None,
    output_dtype=None,
    activations_shape: Sequence[int | str | None] | None = None,
    name: str = "EluGrad",
) -> onnx.ModelProto:
    """A one-node model ``y = EluGrad(grads, activations){alpha}``.

    ``dtype`` names the element type of ``grads`` (and, unless overridden, of ``activations``
    and ``y``); an ONNX ``TensorProto`` code is accepted too, so that unsupported types can
    be written for error tests. ``alpha=None`` leaves the attribute out (default 1.0).
    """

    def elem(t):
        return t if isinstance(t, int) else dtypes.onnx_type(t)

    g_type = elem(dtype)
    a_type = g_type if activations_dtype is None else elem(activations_dtype)
    y_type = g_type if output_dtype is None else elem(output_dtype)
    a_shape = shape if activations_shape is None else activations_shape
    attrs = {} if alpha is None else {"alpha": float(alpha)}
    node = helper.make_node(
        "EluGrad", ["grads", "activations"], ["y"], domain=DOMAIN, name=name, **attrs
    )
    graph = helper.make_graph(
        [node],
        "elu_grad",
        [
            helper.make_tensor_value_info("grads", g_type, shape),
            helper.make_tensor_value_info("activations", a_type, a_shape),
        ],
        [helper.make_tensor_value_info("y", y_type, shape)],
    )
    return make_model(graph)
