"""MseLossAndGrad in standard ONNX ops, in float32 (the gradient bit-exact; the loss within the
op's tolerance: ORT's ReduceSum adds in its own order)::

    x, t, g = Cast(prediction, target, dloss, FLOAT)                  (float16 / bfloat16 only)
    n = Cast(Size(x), DOUBLE)
    d = Sub(x, t);  loss = ReduceSum(Mul(d, d), keepdims=0)  ("mean": Mul(loss, Cast(Div(1, n), FLOAT)))
    dprediction = Mul(Mul(d, cof), g),  cof = Cast(Div(2, n), FLOAT) ("mean") or 2 ("sum")
    [Cast loss, dprediction to T]

``cof`` is 2 / N in float64 rounded once to float32, as the op's kernels and CANN's MseLossGrad.
"""

from __future__ import annotations

import numpy as np
import onnx_graphsurgeon as gs
from onnx import TensorProto

from ort_ops.dtypes import onnx_type
from ort_ops.rewrite.lowerings._nodes import variables

OP = "MseLossAndGrad"


def nodes(base: str, inputs: list, outputs: list, attrs: dict, dtype: str) -> list[gs.Node]:
    """The standard-op nodes computing a MseLossAndGrad node (``base`` prefixes their names)."""
    (x, t, g), (loss, dx) = inputs, outputs
    mean = attrs.get("reduction", "mean") == "mean"
    f32 = np.float32
    var = variables(base, f32)
    out: list[gs.Node] = []
    if dtype != "float32":
        cast = [var(f"{name}_f32") for name in ("prediction", "target", "dloss")]
        out += [gs.Node("Cast", f"{base}/cast_{name}", {"to": TensorProto.FLOAT}, [src], [dst])
                for name, src, dst in zip(("prediction", "target", "dloss"), (x, t, g), cast)]
        x, t, g = cast
    results = (loss, dx) if dtype == "float32" else (var("loss_f32"), var("dprediction_f32"))
    d, square, total = var("d"), var("square"), var("total") if mean else results[0]
    out += [gs.Node("Sub", f"{base}/sub", inputs=[x, t], outputs=[d]),
            gs.Node("Mul", f"{base}/square", inputs=[d, d], outputs=[square]),
            gs.Node("ReduceSum", f"{base}/sum", {"keepdims": 0}, [square], [total])]
    if mean:
        size, n = var("size", np.int64), var("n", np.float64)
        inverse, inverse32, scale64, cof = var("inverse", np.float64), var("inverse_f32"), var("cof64", np.float64), \
            var("cof")
        out += [gs.Node("Size", f"{base}/size", inputs=[x], outputs=[size]),
                gs.Node("Cast", f"{base}/cast_size", {"to": TensorProto.DOUBLE}, [size], [n]),
                gs.Node("Div", f"{base}/inverse", inputs=[gs.Constant(f"{base}/one", np.array(1.0)), n],
                        outputs=[inverse]),
                gs.Node("Cast", f"{base}/cast_inverse", {"to": TensorProto.FLOAT}, [inverse], [inverse32]),
                gs.Node("Mul", f"{base}/mean", inputs=[total, inverse32], outputs=[results[0]]),
                gs.Node("Div", f"{base}/cof64", inputs=[gs.Constant(f"{base}/two", np.array(2.0)), n],
                        outputs=[scale64]),
                gs.Node("Cast", f"{base}/cast_cof", {"to": TensorProto.FLOAT}, [scale64], [cof])]
    else:
        cof = gs.Constant(f"{base}/cof", np.array(2.0, f32))
    scaled = var("scaled")
    out += [gs.Node("Mul", f"{base}/scale", inputs=[d, cof], outputs=[scaled]),
            gs.Node("Mul", f"{base}/dloss", inputs=[scaled, g], outputs=[results[1]])]
    if dtype != "float32":
        out += [gs.Node("Cast", f"{base}/cast_{name}", {"to": onnx_type(dtype)}, [src], [dst])
                for name, src, dst in zip(("loss", "dprediction"), results, (loss, dx))]
    return out
