"""MaxPoolGrad in standard ONNX ops: the exporter's own spelling, bit-exact in ONNX Runtime where the
op's Y is ORT's MaxPool of X (see below).

    x32, dy32 = Cast(X, FLOAT), Cast(dY, FLOAT)                      (float16 / bfloat16 only)
    _, I = MaxPool(x32){kernel_shape, strides, pads}                 I: flat indices into X
    dX = Reshape(ScatterElements(zeros [1, X.size], Reshape(I, [1, -1]), Reshape(dy32, [1, -1]),
                                 axis=1, reduction="add"), Shape(X))      [then Cast to T]

ORT's MaxPool picks a window's first element when it is NaN, else the first occurrence of the
largest number (``pool_functors.h`` ``MaxPool2DTask``: ``h_index < 0 || x > Yh``), and returns
that element as Y. MaxPoolGrad routes to the first element equal to Y (the first NaN if Y is NaN):
the same element whenever Y is that MaxPool's output, NaNs included. The lowering recomputes the
argmax from X and ignores Y's values, so it differs from the op only where Y is not ORT's MaxPool
of X (e.g. ORT's index-free MaxPool, MLAS, which skips NaNs: a window starting with NaN).
ScatterElements adds the updates in order, in float32: the op's accumulation order, so
overlapping windows sum bit for bit alike; float16/bfloat16 round once at the end, as the op.
"""

from __future__ import annotations

import numpy as np
import onnx_graphsurgeon as gs

from ort_ops.dtypes import onnx_type
from ort_ops.ops.max_pool_grad import DEFAULT_KERNEL, DEFAULT_PADS, DEFAULT_STRIDES
from ort_ops.rewrite.lowerings._nodes import constants, float32_inputs, variables

OP = "MaxPoolGrad"


def nodes(base: str, inputs: list, outputs: list, attrs: dict, dtype: str) -> list[gs.Node]:
    """The standard-op nodes computing a MaxPoolGrad node (``base`` prefixes their names)."""
    (x, _y, dy), (dx,) = inputs, outputs
    kernel = [int(v) for v in attrs.get("kernel_shape", DEFAULT_KERNEL)]
    strides = [int(v) for v in attrs.get("strides", DEFAULT_STRIDES)]
    pads = [int(v) for v in attrs.get("pads", DEFAULT_PADS)]
    var = variables(base)
    i64 = constants(base, np.int64)
    (x32, dy32), out = float32_inputs(base, dtype, (("X", x), ("dY", dy)))
    dx32 = dx if dtype == "float32" else var("dX_f32", np.float32)
    pooled, index = var("pooled", np.float32), var("indices", np.int64)
    flat_index, flat_dy = var("indices_flat", np.int64), var("dY_flat", np.float32)
    size, size1, zeros_shape = var("size", np.int64), var("size_1", np.int64), var("zeros_shape", np.int64)
    zeros, scattered, shape = var("zeros", np.float32), var("scattered", np.float32), var("X_shape", np.int64)
    row = i64("row", [1, -1])
    out += [
        gs.Node("MaxPool", f"{base}/max_pool",
                {"kernel_shape": kernel, "strides": strides, "pads": pads, "storage_order": 0}, [x32],
                [pooled, index]),
        gs.Node("Reshape", f"{base}/flatten_indices", inputs=[index, row], outputs=[flat_index]),
        gs.Node("Reshape", f"{base}/flatten_dY", inputs=[dy32, row], outputs=[flat_dy]),
        gs.Node("Size", f"{base}/size", inputs=[x32], outputs=[size]),
        gs.Node("Unsqueeze", f"{base}/size_1", inputs=[size, i64("axis", [0])], outputs=[size1]),
        gs.Node("Concat", f"{base}/zeros_shape", {"axis": 0}, [i64("one", [1]), size1], [zeros_shape]),
        gs.Node("ConstantOfShape", f"{base}/zeros",
                {"value": gs.Constant(f"{base}/zero", np.zeros(1, np.float32))}, [zeros_shape], [zeros]),
        gs.Node("ScatterElements", f"{base}/scatter_add", {"axis": 1, "reduction": "add"},
                [zeros, flat_index, flat_dy], [scattered]),
        gs.Node("Shape", f"{base}/shape", inputs=[x32], outputs=[shape]),
        gs.Node("Reshape", f"{base}/unflatten", inputs=[scattered, shape], outputs=[dx32]),
    ]
    if dtype != "float32":
        out.append(gs.Node("Cast", f"{base}/cast_dX", {"to": onnx_type(dtype)}, [dx32], [dx]))
    return out
