"""SoftmaxGrad in standard ONNX ops: the exporter's own spelling, computed in float32.

    dy32, y32 = Cast(grad_softmax, FLOAT), Cast(softmax, FLOAT)          (float16 / bfloat16 only)
    t = Mul(dy32, y32);  s = ReduceSum(t, axes=[axis], keepdims=1)
    grad_x = Sub(t, Mul(s, y32))                                          [then Cast to T]

Within the library's tolerance of the op, not bit-exact: ONNX Runtime's ReduceSum sums in its own
order (the kernels add along the axis in increasing order).
"""

from __future__ import annotations

import numpy as np
import onnx_graphsurgeon as gs
from onnx import TensorProto

from ort_ops.dtypes import onnx_type
from ort_ops.ops.softmax_grad import DEFAULT_AXIS
from ort_ops.rewrite.lowerings._nodes import variables

OP = "SoftmaxGrad"


def nodes(base: str, inputs: list, outputs: list, attrs: dict, dtype: str) -> list[gs.Node]:
    """The standard-op nodes computing a SoftmaxGrad node (``base`` prefixes their names)."""
    (dy, y), (dx,) = inputs, outputs
    axis = attrs.get("axis")
    axis = DEFAULT_AXIS if axis is None else int(axis)
    var = variables(base)
    f32 = np.float32
    out: list[gs.Node] = []
    dy32, y32, result = dy, y, dx
    if dtype != "float32":
        dy32, y32, result = var("grad_softmax_f32", f32), var("softmax_f32", f32), var("grad_x_f32", f32)
        out += [gs.Node("Cast", f"{base}/cast_grad_softmax", {"to": TensorProto.FLOAT}, [dy], [dy32]),
                gs.Node("Cast", f"{base}/cast_softmax", {"to": TensorProto.FLOAT}, [y], [y32])]
    t, s, u = var("t", f32), var("sum", f32), var("u", f32)
    axes = gs.Constant(f"{base}/axes", np.array([axis], dtype=np.int64))
    out += [gs.Node("Mul", f"{base}/mul_t", inputs=[dy32, y32], outputs=[t]),
            gs.Node("ReduceSum", f"{base}/sum", {"keepdims": 1}, [t, axes], [s]),
            gs.Node("Mul", f"{base}/mul_u", inputs=[s, y32], outputs=[u]),
            gs.Node("Sub", f"{base}/sub", inputs=[t, u], outputs=[result])]
    if dtype != "float32":
        out.append(gs.Node("Cast", f"{base}/cast_grad_x", {"to": onnx_type(dtype)}, [result], [dx]))
    return out
