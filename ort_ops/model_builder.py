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


def make_op_model(
    op,
    dtype="float32",
    shape: Sequence[int | str | None] | None = (4, 2),
    *,
    input_dtypes: Sequence | None = None,
    input_shapes: Sequence | None = None,
    output_dtype=None,
    output_shapes: Sequence | None = None,
    name: str | None = None,
    **attributes,
) -> onnx.ModelProto:
    """A one-node model of an ``ai.ortops`` op (an :class:`~ort_ops.ops.OpDef` or its name):
    graph inputs and outputs named after the op's. Elementwise ops: every input and output of
    ``dtype`` and ``shape``. Other ops: inputs and outputs of the dtypes their definition gives
    (``dtype`` for type ``T``) and the shapes of the op's sample inputs (outputs: from its shape
    rule; an optional input whose sample is None is omitted, as is an output the rule gives no
    shape). ``input_dtypes`` / ``input_shapes`` / ``output_dtype`` / ``output_shapes`` override
    (ONNX ``TensorProto`` codes are accepted, so that unsupported types can be written for error
    tests). An attribute passed as None is left out (the op's default applies)."""
    import numpy as np

    from ort_ops.ops import OpDef
    from ort_ops.ops import op as op_named

    op = op if isinstance(op, OpDef) else op_named(op)

    def elem(t):
        return t if isinstance(t, int) else dtypes.onnx_type_of(dtypes.canonical_name(t, tuple(dtypes.TYPES)))

    unknown = set(attributes) - set(op.defaults())
    if unknown:
        raise TypeError(f"{op.name} has no attributes {sorted(unknown)} (it has {sorted(op.defaults())})")
    attrs = {k: op.attribute(k).coerce(v) for k, v in attributes.items() if v is not None}
    in_types = [elem(t) for t in (input_dtypes or [op.dtype_of(t, dtype) for t in op.inputs])]
    out_types = [elem(output_dtype)] * len(op.outputs) if output_dtype is not None else \
        [elem(op.dtype_of(t, dtype)) for t in op.outputs]
    in_used, out_used = [True] * len(op.inputs), [True] * len(op.outputs)
    if op.elementwise:
        in_shapes = list(input_shapes or [shape] * len(op.inputs))
        out_shapes = list(output_shapes or [shape] * len(op.outputs))
    else:
        samples = None
        if input_shapes is None or output_shapes is None:
            rng = np.random.default_rng(0)
            samples = op.sample_inputs(dtypes.canonical_name(dtype), {**op.defaults(), **attrs}, rng)
        # a None sample is an omitted optional input; a None output shape an output not produced
        in_shapes = list(input_shapes or [None if a is None else list(a.shape) for a in samples])
        out_shapes = list(output_shapes or [None if s is None else list(s) for s in op.output_shapes(
            [None if a is None else a.shape for a in samples], attrs)])
        in_used, out_used = [s is not None for s in in_shapes], [s is not None for s in out_shapes]
    in_names = [t.name if used else "" for t, used in zip(op.inputs, in_used)]
    out_names = [t.name if used else "" for t, used in zip(op.outputs, out_used)]
    while out_names and not out_names[-1]:
        out_names.pop()
    node = helper.make_node(op.name, in_names, out_names, domain=op.domain, name=name or op.name, **attrs)
    graph = helper.make_graph(
        [node], op.name.lower(),
        [helper.make_tensor_value_info(t.name, ty, s)
         for t, ty, s, used in zip(op.inputs, in_types, in_shapes, in_used) if used],
        [helper.make_tensor_value_info(t.name, ty, s)
         for t, ty, s, used in zip(op.outputs, out_types, out_shapes, out_used) if used],
    )
    return make_model(graph)


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

    a_shape = shape if activations_shape is None else activations_shape
    return make_op_model("EluGrad", dtype, shape, input_dtypes=[dtype, dtype if activations_dtype is None
                                                                else activations_dtype],
                         input_shapes=[shape, a_shape], output_dtype=output_dtype, name=name, alpha=alpha)
