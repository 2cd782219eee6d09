"""BatchNormGrad in standard ONNX ops, computed in float32 on x viewed as [N, C, L]
(L = the product of the spatial dims; ``Shape``, ``Slice``, ``ReduceProd`` and ``Concat`` make that
shape, so the lowering needs no rank):

    x3, dy3 = Reshape(x32, [N, C, L]), Reshape(dy32, ...);  mean3, var3, scale3 = Reshape(.., [1, C, 1])
    rstd = 1 / Sqrt(var3 + epsilon);  xhat = (x3 - mean3) * rstd
    dx = Reshape((scale3 * rstd) * ((dy3 - ReduceMean(dy3, [0, 2])) - xhat * ReduceMean(dy3 * xhat, [0, 2])),
                 Shape(x))
    dscale = ReduceSum(dy3 * xhat, [0, 2], keepdims=0);  dbias = ReduceSum(dy3, [0, 2], keepdims=0)

(float16 / bfloat16 are cast to float32 first and the outputs cast back once.) Within the library's
tolerance of the op, not bit-exact: ONNX Runtime's reductions sum in their own order. The Reshapes
use ``allowzero`` so empty dims stay empty.
"""

from __future__ import annotations

import numpy as np
import onnx_graphsurgeon as gs

from ort_ops.ops.batch_norm_grad import DEFAULT_EPSILON
from ort_ops.rewrite.lowerings import _nodes

OP = "BatchNormGrad"


def nodes(base: str, inputs: list, outputs: list, attrs: dict, dtype: str) -> list[gs.Node]:
    """The standard-op nodes computing a BatchNormGrad node (``base`` prefixes their names)."""
    dy, x, mean, var, scale = inputs
    epsilon = attrs.get("epsilon")
    epsilon = DEFAULT_EPSILON if epsilon is None else float(epsilon)
    fvar = _nodes.variables(base, np.float32)
    ivar = _nodes.variables(base, np.int64)
    i64, f32, node = _nodes.constants(base, np.int64), _nodes.constants(base, np.float32), _nodes.node_maker(base)
    (dy32, x32, scale32), out = _nodes.float32_inputs(base, dtype, (("dy", dy), ("x", x), ("scale", scale)))
    shape, nc, spatial, length, ncl = ivar("x_shape"), ivar("nc"), ivar("spatial"), ivar("l"), ivar("ncl")
    out += [node("Shape", "x_shape", [x], [shape]),
            node("Slice", "nc", [shape, i64("nc_start", [0]), i64("nc_end", [2])], [nc]),
            node("Slice", "spatial", [shape, i64("spatial_start", [2]), i64("spatial_end", [np.iinfo(np.int64).max])],
                 [spatial]),
            node("ReduceProd", "l", [spatial], [length], keepdims=1),
            node("Concat", "ncl", [nc, length], [ncl], axis=0)]
    x3, dy3 = fvar("x_3d"), fvar("dy_3d")
    mean3, var3, scale3 = fvar("mean_column"), fvar("var_column"), fvar("scale_column")
    column = i64("column", [1, -1, 1])
    out += [node("Reshape", "x_3d", [x32, ncl], [x3], allowzero=1),
            node("Reshape", "dy_3d", [dy32, ncl], [dy3], allowzero=1),
            node("Reshape", "mean_column", [mean, column], [mean3]),
            node("Reshape", "var_column", [var, column], [var3]),
            node("Reshape", "scale_column", [scale32, column], [scale3])]
    var_eps, std, rstd, xc, xhat = fvar("var_eps"), fvar("std"), fvar("rstd"), fvar("x_centred"), fvar("xhat")
    a, dyx, b, dya, xb, diff, k, dx3 = (fvar(s) for s in ("mean_dy", "dy_xhat", "mean_dy_xhat", "dy_minus_a",
                                                           "xhat_b", "diff", "scale_rstd", "dx_3d"))
    axes = i64("axes", [0, 2])
    out += [node("Add", "var_eps", [var3, f32("epsilon", epsilon)], [var_eps]),
            node("Sqrt", "std", [var_eps], [std]),
            node("Div", "rstd", [f32("one", 1.0), std], [rstd]),
            node("Sub", "centre", [x3, mean3], [xc]),
            node("Mul", "xhat", [xc, rstd], [xhat]),
            node("ReduceMean", "mean_dy", [dy3, axes], [a], keepdims=1),
            node("Mul", "dy_xhat", [dy3, xhat], [dyx]),
            node("ReduceMean", "mean_dy_xhat", [dyx, axes], [b], keepdims=1),
            node("Sub", "dy_minus_a", [dy3, a], [dya]),
            node("Mul", "xhat_b", [xhat, b], [xb]),
            node("Sub", "diff", [dya, xb], [diff]),
            node("Mul", "scale_rstd", [scale3, rstd], [k]),
            node("Mul", "dx", [k, diff], [dx3])]

    out += _nodes.reshaped_output(base, dtype, "dx", dx3, shape, outputs[0])
    channels = i64("channels", [-1])
    dscale, dbias = _nodes.wanted_output(outputs, 1), _nodes.wanted_output(outputs, 2)
    if dscale is not None:
        ds = fvar("dscale_sum")
        out.append(node("ReduceSum", "dscale", [dyx, axes], [ds], keepdims=0))
        out += _nodes.reshaped_output(base, dtype, "dscale", ds, channels, dscale)
    if dbias is not None:
        db = fvar("dbias_sum")
        out.append(node("ReduceSum", "dbias", [dy3, axes], [db], keepdims=0))
        out += _nodes.reshaped_output(base, dtype, "dbias", db, channels, dbias)
    return out
