"""ONNX schemas of the ``ai.ortops`` ops, built from their definitions (:mod:`ort_ops.ops`) and
registered with ``onnx.defs`` once per process, so ``onnx.checker`` and shape inference know them.

onnx keeps registered schemas in a C++ static registry that is destroyed by the C library's exit
handlers, after the interpreter has finalized. A schema holding a Python shape-inference function
then takes the GIL of a dead interpreter while it is destroyed: onnx 1.20-1.22 segfault at exit
(``PyGILState_Ensure`` -> ``PyThreadState_New(interp=NULL)``), 1.19 waits forever in ``take_gil``. So what
:func:`register_all` registers is deregistered again by an :mod:`atexit` handler, which runs while
the interpreter is alive. onnx < 1.19 has no Python API to set an inference function
(``OpSchema.set_type_and_shape_inference_function``): there the schemas are registered without
one (``onnx.checker`` knows the ops; shape inference leaves their outputs untyped).
"""

from __future__ import annotations

import atexit

import onnx
import onnx.defs
from onnx.defs import OpSchema

from ort_ops import dtypes
from ort_ops.ops import OPS, OpDef
from ort_ops.ops.definition import T

_TYPE_STRINGS = {"float32": "tensor(float)", "float16": "tensor(float16)", "bfloat16": "tensor(bfloat16)",
                 "float64": "tensor(double)", "int32": "tensor(int32)", "int64": "tensor(int64)",
                 "bool": "tensor(bool)"}


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


def _static_shape(tensor_type) -> tuple[int, ...] | None:
    if not tensor_type.HasField("shape") or not all(d.HasField("dim_value") for d in tensor_type.shape.dim):
        return None
    return tuple(d.dim_value for d in tensor_type.shape.dim)


def _attribute_values(op: OpDef, ctx) -> dict:
    values = {}
    for a in op.attributes:
        proto = ctx.get_attribute(a.name) if hasattr(ctx, "get_attribute") else None
        if proto is not None:
            values[a.name] = onnx.helper.get_attribute_value(proto)
            if isinstance(values[a.name], bytes):
                values[a.name] = values[a.name].decode()
    return values


def _rule_inference(op: OpDef):
    """Dtypes from the type constraints (inputs of one constraint must agree); output shapes from
    the op's shape rule when every input shape is static."""

    def infer(ctx) -> None:
        seen: dict[str, tuple[int, str]] = {}
        shapes = []
        unknown = False  # a given input without a static shape (omitted optional inputs are None)
        for i, t in enumerate(op.inputs):
            given = ctx.get_input_type(i) if i < ctx.get_num_inputs() else None
            if given is None or not given.HasField("tensor_type"):
                shapes.append(None)
                unknown |= given is not None or not t.optional
                continue
            elem = given.tensor_type.elem_type
            key = t.type
            if key == T and elem:
                if key in seen and seen[key][0] != elem:
                    raise onnx.shape_inference.InferenceError(
                        f"{op.name}: {seen[key][1]} has dtype {dtypes.name_of_elem(seen[key][0])} but {t.name} has "
                        f"{dtypes.name_of_elem(elem)}")
                seen.setdefault(key, (elem, t.name))
            shapes.append(_static_shape(given.tensor_type))
            unknown |= shapes[-1] is None
        out_shapes = None
        if not unknown:
            try:
                out_shapes = op.output_shapes(shapes, _attribute_values(op, ctx))
            except ValueError as exc:
                raise onnx.shape_inference.InferenceError(str(exc)) from None
        for k, t in enumerate(op.outputs):
            if k >= ctx.get_num_outputs():
                break
            out = onnx.TypeProto()
            if t.type == T:
                if T not in seen:
                    continue
                out.tensor_type.elem_type = seen[T][0]
            else:
                out.tensor_type.elem_type = dtypes.onnx_type_of(t.type)
            if out_shapes is not None and out_shapes[k] is not None:
                for d in out_shapes[k]:
                    out.tensor_type.shape.dim.add().dim_value = d
            ctx.set_output_type(k, out)

    return infer


def _formal(t) -> OpSchema.FormalParameter:
    type_str = t.type if t.type == T else _TYPE_STRINGS[t.type]
    option = OpSchema.FormalParameterOption.Optional if t.optional else OpSchema.FormalParameterOption.Single
    return OpSchema.FormalParameter(t.name, type_str, t.doc, param_option=option)


def schema_of(op: OpDef) -> OpSchema:
    """The ONNX schema of ``op``."""
    uses_t = any(t.type == T for t in (*op.inputs, *op.outputs))
    schema = OpSchema(
        op.name, op.domain, op.since_version, op.doc,
        inputs=[_formal(t) for t in op.inputs],
        outputs=[_formal(t) for t in op.outputs],
        type_constraints=[(T, [_TYPE_STRINGS[d] for d in op.dtypes], ", ".join(op.dtypes))] if uses_t else [],
        attributes=[OpSchema.Attribute(a.name, onnx.helper.make_attribute(a.name, a.default), a.doc)
                    for a in op.attributes],
    )
    if HAS_PYTHON_INFERENCE:
        schema.set_type_and_shape_inference_function(
            _elementwise_inference(op) if op.elementwise else _rule_inference(op))
    return schema


# onnx >= 1.19: schemas may carry a Python shape-inference function
HAS_PYTHON_INFERENCE = hasattr(OpSchema, "set_type_and_shape_inference_function")
SCHEMAS = tuple(schema_of(op) for op in OPS)
_registered: list[tuple[str, int, str]] = []  # (name, since_version, domain) this module registered


def register_all() -> None:
    """Register every schema that ``onnx.defs`` does not know yet (safe to call repeatedly). The
    first registration also installs :func:`deregister_all` as an exit handler."""
    for schema in SCHEMAS:
        if not onnx.defs.has(schema.name, schema.since_version, schema.domain):
            onnx.defs.register_schema(schema)
            if not _registered:
                atexit.register(deregister_all)
            _registered.append((schema.name, schema.since_version, schema.domain))


def deregister_all() -> None:
    """Remove the schemas :func:`register_all` registered from ``onnx.defs`` (run at exit, while
    the interpreter can still release their Python inference functions)."""
    while _registered:
        name, version, domain = _registered.pop()
        if onnx.defs.has(name, version, domain):
            onnx.defs.deregister_schema(name, version, domain)


