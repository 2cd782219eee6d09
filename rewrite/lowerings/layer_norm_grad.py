"""LayerNormGrad in standard ONNX ops, computed in float32 on X flattened to [rows, M] at ``axis``:

    x2, dy2 = Flatten(x32, axis), Flatten(dy32, axis);  mean2, rstd2 = Flatten(mean, axis), ...
    xhat = (x2 - mean2) * rstd2;  g = dy2 * Flatten(scale32, 0)
    dx = Reshape((g - (ReduceMean(g, [1]) + xhat * ReduceMean(g * xhat, [1]))) * rstd2, Shape(x))
    dscale = Reshape(ReduceSum(dy2 * xhat, [0]), Shape(scale));  dbias = ... ReduceSum(dy2, [0]) ...

(float16 / bfloat16 are cast to float32 first and the outputs cast back once.) Flatten takes
ONNX LayerNormalization's ``axis`` as it is, negative or not, so the lowering needs no rank.
Within the library's tolerance of the op, not bit-exact: ONNX Runtime's reductions sum in their
own order. Reshape uses ``allowzero`` so empty dims stay empty.
"""

from __future__ import annotations

import numpy as np
import onnx_graphsurgeon as gs
from onnx import TensorProto

from ort_ops.dtypes import onnx_type
from ort_ops.ops.layer_norm_grad import DEFAULT_AXIS
from ort_ops.rewrite.lowerings._nodes import variables

OP = "LayerNormGrad"


def _wanted(outputs: list, index: int):
    """The output at ``index`` if the node produces it (an omitted optional output has no name)."""
    return outputs[index] if index < len(outputs) and outputs[index].name else None


def nodes(base: str, inputs: list, outputs: list, attrs: dict, dtype: str) -> list[gs.Node]:
    """The standard-op nodes computing a LayerNormGrad node (``base`` prefixes their names)."""
    dy, x, mean, rstd, scale = inputs
    axis = attrs.get("axis")
    axis = DEFAULT_AXIS if axis is None else int(axis)
    var = variables(base, np.float32)
    i64 = lambda suffix, values: gs.Constant(f"{base}/{suffix}", np.array(values, dtype=np.int64))
    node = lambda op, suffix, ins, outs, **a: gs.Node(op, f"{base}/{suffix}", a, ins, outs)
    out: list[gs.Node] = []
    dy32, x32, scale32 = dy, x, scale
    if dtype != "float32":
        dy32, x32, scale32 = var("dy_f32"), var("x_f32"), var("scale_f32")
        out += [node("Cast", f"cast_{name}", [src], [dst], to=TensorProto.FLOAT)
                for name, src, dst in (("dy", dy, dy32), ("x", x, x32), ("scale", scale, scale32))]
    x2, dy2, mean2, rstd2, scale2 = var("x_2d"), var("dy_2d"), var("mean_2d"), var("rstd_2d"), var("scale_row")
    xc, xhat, g, gx = var("x_centred"), var("xhat"), var("g"), var("g_xhat")
    a, b, bx = var("mean_g"), var("mean_g_xhat"), var("xhat_b")
    ab, diff, dx32 = var("a_plus"), var("diff"), var("dx_2d")
    row_axis, column_axis = i64("row_axis", [1]), i64("column_axis", [0])
    out += [node("Flatten", f"flatten_{name}", [src], [dst], axis=axis)
            for name, src, dst in (("x", x32, x2), ("dy", dy32, dy2), ("mean", mean, mean2), ("rstd", rstd, rstd2))]
    out += [node("Flatten", "flatten_scale", [scale32], [scale2], axis=0),
            node("Sub", "centre", [x2, mean2], [xc]),
            node("Mul", "xhat", [xc, rstd2], [xhat]),
            node("Mul", "g", [dy2, scale2], [g]),
            node("Mul", "g_xhat", [g, xhat], [gx]),
            node("ReduceMean", "mean_g", [g, row_axis], [a], keepdims=1),
            node("ReduceMean", "mean_g_xhat", [gx, row_axis], [b], keepdims=1),
            node("Mul", "xhat_b", [xhat, b], [bx]),
            node("Add", "a_plus", [a, bx], [ab]),
            node("Sub", "diff", [g, ab], [diff]),
            node("Mul", "dx", [diff, rstd2], [dx32])]

    def unflatten(name: str, flat, like, result) -> None:
        shape, full = var(f"{name}_shape", np.int64), var(f"{name}_f32") if dtype != "float32" else result
        out.extend([node("Shape", f"{name}_shape", [like], [shape]),
                    node("Reshape", f"unflatten_{name}", [flat, shape], [full], allowzero=1)])
        if dtype != "float32":
            out.append(node("Cast", f"cast_{name}", [full], [result], to=onnx_type(dtype)))

    unflatten("dx", dx32, x, outputs[0])
    dscale, dbias = _wanted(outputs, 1), _wanted(outputs, 2)
    if dscale is not None:
        dyx, ds = var("dy_xhat"), var("dscale_row")
        out += [node("Mul", "dy_xhat", [dy2, xhat], [dyx]),
                node("ReduceSum", "dscale", [dyx, column_axis], [ds], keepdims=0)]
        unflatten("dscale", ds, scale, dscale)
    if dbias is not None:
        db = var("dbias_row")
        out.append(node("ReduceSum", "dbias", [dy2, column_axis], [db], keepdims=0))
        unflatten("dbias", db, scale, dbias)
    return out
