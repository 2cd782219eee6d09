"""ONNX schemas of the ``ai.ortops`` ops, built from their definitions (:mod:`ort_ops.ops`) and
registered with ``onnx.defs`` once per process, so ``onnx.checker`` and shape inference know them."""

from __future__ import annotations

import onnx
import onnx.defs
from onnx.defs import OpSchema

from ort_ops.ops import OPS, OpDef

_TYPE_STRINGS = {"float32": "tensor(float)", "float16": "tensor(float16)", "bfloat16": "tensor(bfloat16)"}


def _shape_text(tensor_type) -> str:
    if not tensor_type.HasField("shape"):
        return "?"
    return "[" + ", ".join(
        str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?") for d in tensor_type.shape.dim
    ) + "]"


def _elementwise_inference(op: OpDef):
    """All inputs one dtype and one shape (errors name both); output 0 gets them."""

    def infer(ctx) -> None:
        first = ctx.get_input_type(0)
        if first is None or not first.HasField("tensor_type"):
            return
        g = first.tensor_type
        for i in range(1, len(op.inputs)):
            other = ctx.get_input_type(i)
            if other is None or not other.HasField("tensor_type"):
                continue
            a = other.tensor_type
            if a.elem_type and g.elem_type and a.elem_type != g.elem_type:
                raise onnx.shape_inference.InferenceError(
                    f"{op.name}: {op.inputs[0].name} has dtype {onnx.helper.tensor_dtype_to_np_dtype(g.elem_type)} "
                    f"but {op.inputs[i].name} has {onnx.helper.tensor_dtype_to_np_dtype(a.elem_type)}")
            if g.HasField("shape") and a.HasField("shape"):
                gd, ad = g.shape.dim, a.shape.dim
                known = lambda d: d.HasField("dim_value")
                if len(gd) != len(ad) or any(known(x) and known(y) and x.dim_value != y.dim_value
                                             for x, y in zip(gd, ad)):
                    raise onnx.shape_inference.InferenceError(
                        f"{op.name}: {op.inputs[0].name} shape {_shape_text(g)} differs from "
                        f"{op.inputs[i].name} shape {_shape_text(a)}")
        out = onnx.TypeProto()
        out.tensor_type.elem_type = g.elem_type
        if g.HasField("shape"):
            out.tensor_type.shape.CopyFrom(g.shape)
        ctx.set_output_type(0, out)

    return infer


def schema_of(op: OpDef) -> OpSchema:
    """The ONNX schema of ``op``."""
    if op.shape != "elementwise":
        raise ValueError(f"{op.name}: no schema builder for shape rule {op.shape!r}")
    schema = OpSchema(
        op.name, op.domain, op.since_version, op.doc,
        inputs=[OpSchema.FormalParameter(t.name, "T", t.doc) for t in op.inputs],
        outputs=[OpSchema.FormalParameter(t.name, "T", t.doc) for t in op.outputs],
        type_constraints=[("T", [_TYPE_STRINGS[d] for d in op.dtypes], ", ".join(op.dtypes))],
        attributes=[OpSchema.Attribute(a.name, onnx.helper.make_attribute(a.name, a.default), a.doc)
                    for a in op.attributes],
    )
    schema.set_type_and_shape_inference_function(_elementwise_inference(op))
    return schema


SCHEMAS = tuple(schema_of(op) for op in OPS)


def register_all() -> None:
    """Register every schema that ``onnx.defs`` does not know yet (safe to call repeatedly)."""
    for schema in SCHEMAS:
        if not onnx.defs.has(schema.name, schema.since_version, schema.domain):
            onnx.defs.register_schema(schema)


