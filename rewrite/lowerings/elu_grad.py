"""EluGrad in standard ONNX ops, bit-exact in ONNX Runtime (see the exception below).

    negative = Less(a32, 0);  product = Mul(g32, Add(a32, alpha))       (float32; a32/g32 are
    y = select(negative, Cast(product, T), g)                              Cast(.., FLOAT) of a/g)

``select`` is not ``Where`` (``_nodes.select_by_copy``: ONNX Runtime's CPU ``Where`` turns a
``-0.0`` of its first branch into ``+0.0`` and quiets float16 signalling NaNs): elements are copied
bit for bit, so the grads branch
is ``g`` itself (float32, float16: NaN payloads, signalling bits, -0.0 kept, as in the kernel,
whose float16 round trip keeps them) and the product branch the product rounded once (round to
nearest even, as ORT's Cast and NumPy/ml_dtypes round). For bfloat16 the select is in float32,
then one Cast: the kernel's bfloat16 cast turns a NaN ``g`` into sign|0x7fc0, as ORT's does.

Where the result is exact in ORT (CPU, x86-64): everywhere, for every dtype, with one exception
that follows from ORT's float32 arithmetic and not from the lowering: when ``grads`` and the sum
``activations + alpha`` are both NaN (``alpha`` NaN, or ``activations = -inf`` with
``alpha = +inf``) on the negative side, which NaN ``Mul`` returns is ORT's choice (EluGrad
returns ``grads``' NaN, quieted). ``tests/rewrite/test_lower.py`` checks exactly this.
"""

from __future__ import annotations

import numpy as np
import onnx_graphsurgeon as gs
from onnx import TensorProto

from ort_ops.dtypes import onnx_type
from ort_ops.rewrite.lowerings._nodes import select_by_copy, variables

OP = "EluGrad"


def nodes(base: str, inputs: list, outputs: list, attrs: dict, dtype: str) -> list[gs.Node]:
    """The standard-op nodes computing an EluGrad node (``base`` prefixes their names)."""
    (g, a), (y,) = inputs, outputs
    alpha = attrs.get("alpha")
    return _lowered(base, g, a, y, 1.0 if alpha is None else float(alpha), dtype)


def _lowered(base: str, g, a, y, alpha: float, dtype: str) -> list[gs.Node]:
    """Nodes computing ``y = a < 0 ? g * (a + alpha) : g`` with EluGrad's numerics."""
    f32 = np.float32
    var = variables(base)
    zero = gs.Constant(f"{base}/zero", np.array(0.0, dtype=f32))
    alpha_c = gs.Constant(f"{base}/alpha", np.array(alpha, dtype=f32))
    axis = gs.Constant(f"{base}/axis", np.array([0], dtype=np.int64))
    nodes = []
    if dtype == "float32":
        g32, a32 = g, a
    else:
        g32, a32 = var("grads_f32", f32), var("activations_f32", f32)
        nodes += [
            gs.Node("Cast", f"{base}/cast_grads", {"to": TensorProto.FLOAT}, [g], [g32]),
            gs.Node("Cast", f"{base}/cast_activations", {"to": TensorProto.FLOAT}, [a], [a32]),
        ]
    mask = var("negative", np.bool_)
    t, p = var("shifted", f32), var("product", f32)
    nodes += [
        gs.Node("Less", f"{base}/less", inputs=[a32, zero], outputs=[mask]),
        gs.Node("Add", f"{base}/add", inputs=[a32, alpha_c], outputs=[t]),
        gs.Node("Mul", f"{base}/mul", inputs=[g32, t], outputs=[p]),
    ]
    # float16: select between the rounded product and g itself (the kernel's float16 round trip
    # keeps every g); bfloat16: select in float32, then one Cast (the kernel's bfloat16 cast of a
    # NaN g gives sign|0x7fc0; ORT would drop a Cast pair around g itself as lossless)
    out = y
    if dtype == "float16":
        pt = var("product_rounded")
        nodes.append(gs.Node("Cast", f"{base}/cast_product", {"to": onnx_type(dtype)}, [p], [pt]))
        p = pt
    elif dtype == "bfloat16":
        g, out = g32, var("result_f32", f32)
    nodes += select_by_copy(base, axis, mask, (("grads", g), ("product", p)), out)
    if dtype == "bfloat16":
        nodes.append(gs.Node("Cast", f"{base}/cast_result", {"to": onnx_type(dtype)}, [out], [y]))
    return nodes


