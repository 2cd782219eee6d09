"""LeakyReluGrad in standard ONNX ops, bit-exact in ONNX Runtime (see the exception below).

    positive = Greater(f32, 0);  product = Mul(g32, negative_slope)       (float32; f32/g32 are
    backprops = select(positive, g, Cast(product, T))                       Cast(.., FLOAT) of f/g)

``select`` copies elements (``_nodes.select_by_copy``), as EluGrad's lowering does and for the
same reasons: ONNX Runtime's CPU ``Where`` turns a ``-0.0``
of its first branch into ``+0.0`` and quiets signalling NaNs in float16. So the gradients branch is
``g`` itself (float16: its bits; bfloat16: the select is in float32, then one Cast, as the
kernel's) and the product branch the float32 product rounded once.

Exact everywhere except where ``gradients`` and ``negative_slope`` are both NaN on the product
side: which NaN ``Mul`` returns is ORT's choice (the op returns ``gradients``' NaN, quieted).
"""

from __future__ import annotations

import numpy as np
import onnx_graphsurgeon as gs
from onnx import TensorProto

from ort_ops.dtypes import onnx_type
from ort_ops.ops.leaky_relu_grad import DEFAULT_NEGATIVE_SLOPE
from ort_ops.rewrite.lowerings._nodes import select_by_copy, variables

OP = "LeakyReluGrad"


def nodes(base: str, inputs: list, outputs: list, attrs: dict, dtype: str) -> list[gs.Node]:
    """The standard-op nodes computing a LeakyReluGrad node (``base`` prefixes their names)."""
    (g, f), (y,) = inputs, outputs
    slope = attrs.get("negative_slope")
    slope = DEFAULT_NEGATIVE_SLOPE if slope is None else float(slope)
    f32 = np.float32
    var = variables(base)
    zero = gs.Constant(f"{base}/zero", np.array(0.0, dtype=f32))
    slope_c = gs.Constant(f"{base}/negative_slope", np.array(slope, dtype=f32))
    axis = gs.Constant(f"{base}/axis", np.array([0], dtype=np.int64))
    out: list[gs.Node] = []
    g32, f32_ = g, f
    if dtype != "float32":
        g32, f32_ = var("gradients_f32", f32), var("features_f32", f32)
        out += [gs.Node("Cast", f"{base}/cast_gradients", {"to": TensorProto.FLOAT}, [g], [g32]),
                gs.Node("Cast", f"{base}/cast_features", {"to": TensorProto.FLOAT}, [f], [f32_])]
    positive, product = var("positive", np.bool_), var("product", f32)
    out += [gs.Node("Greater", f"{base}/greater", inputs=[f32_, zero], outputs=[positive]),
            gs.Node("Mul", f"{base}/mul", inputs=[g32, slope_c], outputs=[product])]
    result = y
    if dtype == "float16":  # select between g itself and the product rounded once
        rounded = var("product_rounded")
        out.append(gs.Node("Cast", f"{base}/cast_product", {"to": onnx_type(dtype)}, [product], [rounded]))
        product = rounded
    elif dtype == "bfloat16":  # select in float32, then one Cast
        g, result = g32, var("backprops_f32", f32)
    # index 0 takes the product, 1 the gradients (positive)
    out += select_by_copy(base, axis, positive, (("product", product), ("gradients", g)), result)
    if dtype == "bfloat16":
        out.append(gs.Node("Cast", f"{base}/cast_result", {"to": onnx_type(dtype)}, [result], [y]))
    return out
