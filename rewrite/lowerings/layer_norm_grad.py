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

from ort_ops.ops.layer_norm_grad import DEFAULT_AXIS
from ort_ops.rewrite.lowerings import _nodes

OP = "LayerNormGrad"


def nodes(base: str, inputs: list, outputs: list, attrs: dict, dtype: str) -> list[gs.Node]:
    """The standard-op nodes computing a LayerNormGrad node (``base`` prefixes their names)."""
    dy, x, mean, rstd, scale = inputs
    axis = attrs.get("axis")
    axis = DEFAULT_AXIS if axis is None else int(axis)
    var = _nodes.variables(base, np.float32)
    i64, node = _nodes.constants(base, np.int64), _nodes.node_maker(base)
    (dy32, x32, scale32), out = _nodes.float32_inputs(base, dtype, (("dy", dy), ("x", x), ("scale", scale)))
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
        shape = var(f"{name}_shape", np.int64)
        out.append(node("Shape", f"{name}_shape", [like], [shape]))
        out.extend(_nodes.reshaped_output(base, dtype, name, flat, shape, result))

    unflatten("dx", dx32, x, outputs[0])
    dscale, dbias = _nodes.wanted_output(outputs, 1), _nodes.wanted_output(outputs, 2)
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
