"""Schema of ``ai.ortops::EluGrad(grads, activations) -> y``, the ELU backward op of CANN."""

import onnx
from onnx.defs import OpSchema

from ort_ops.domain import DOMAIN, OPSET_VERSION

OP_TYPE = "EluGrad"
DTYPES = ("tensor(float)", "tensor(float16)", "tensor(bfloat16)")
DEFAULT_ALPHA = 1.0

DOC = """\
Gradient of ELU computed from the ELU output:
y = activations < 0 ? (activations + alpha) * grads : grads.
Computed in float32 (inputs cast exactly), strict less-than (NaN and -0.0 select grads), one
round-to-nearest-even cast back to T. grads and activations must have the same shape."""


def _shape_text(tensor_type) -> str:
    if not tensor_type.HasField("shape"):
        return "?"
    return "[" + ", ".join(
        str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?")
        for d in tensor_type.shape.dim
    ) + "]"


def _infer(ctx) -> None:
    grads = ctx.get_input_type(0)
    acts = ctx.get_input_type(1)
    if grads is None or not grads.HasField("tensor_type"):
        return
    g, a = grads.tensor_type, acts.tensor_type if acts is not None else None
    if a is not None and a.elem_type and g.elem_type and a.elem_type != g.elem_type:
        raise onnx.shape_inference.InferenceError(
            f"EluGrad: grads has dtype {onnx.helper.tensor_dtype_to_np_dtype(g.elem_type)} "
            f"but activations has {onnx.helper.tensor_dtype_to_np_dtype(a.elem_type)}"
        )
    if a is not None and g.HasField("shape") and a.HasField("shape"):
        gd, ad = g.shape.dim, a.shape.dim
        known = lambda d: d.HasField("dim_value")  # noqa: E731
        if len(gd) != len(ad) or any(
            known(x) and known(y) and x.dim_value != y.dim_value for x, y in zip(gd, ad)
        ):
            raise onnx.shape_inference.InferenceError(
                f"EluGrad: grads shape {_shape_text(g)} differs from activations shape "
                f"{_shape_text(a)}"
            )
    out = onnx.TypeProto()
    out.tensor_type.elem_type = g.elem_type
    if g.HasField("shape"):
        out.tensor_type.shape.CopyFrom(g.shape)
    ctx.set_output_type(0, out)


SCHEMA = OpSchema(
    OP_TYPE,
    DOMAIN,
    OPSET_VERSION,
    DOC,
    inputs=[
        OpSchema.FormalParameter("grads", "T", "upstream gradient dL/dY of the ELU output"),
        OpSchema.FormalParameter("activations", "T", "the ELU forward output Y"),
    ],
    outputs=[OpSchema.FormalParameter("y", "T", "dL/dX, same shape and dtype as grads")],
    type_constraints=[("T", list(DTYPES), "float32, float16 or bfloat16")],
    attributes=[
        OpSchema.Attribute(
            "alpha",
            onnx.helper.make_attribute("alpha", DEFAULT_ALPHA),
            "ELU alpha (the negative-side offset)",
        )
    ],
)
SCHEMA.set_type_and_shape_inference_function(_infer)
