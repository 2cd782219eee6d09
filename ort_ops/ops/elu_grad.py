"""``ai.ortops::EluGrad``: the ELU backward op of CANN, from the ELU's output.

    y = activations < 0 ? (activations + alpha) * grads : grads

Exact semantics and NaN payloads: ``docs/ops/EluGrad.md``; :func:`elu_grad` is their definition.
"""

from __future__ import annotations

import numpy as np

from ort_ops import dtypes
from ort_ops.domain import DEFAULT_NAN_BITS
from ort_ops.ops.definition import Attribute, OpDef, Tensor

DEFAULT_ALPHA = 1.0


def elu_grad(grads, activations, alpha: float = DEFAULT_ALPHA) -> np.ndarray:
    """ELU backward from the ELU output, bit-exact to every kernel of the op.

    Both inputs are cast to float32 (exact for float16/bfloat16), then
    ``t = activations + alpha; p = grads * t; y = activations < 0 ? p : grads`` in float32
    (strict less-than: NaN and -0.0 select ``grads``), and ``y`` is cast back to the input
    dtype once, rounding to nearest even.

    NaN payloads: the ``grads`` branch copies ``grads`` (a signalling NaN included). A NaN
    product takes ``grads``' NaN quieted if ``grads`` is NaN, else ``alpha``'s NaN quieted if
    ``alpha`` is NaN, else :data:`ort_ops.domain.DEFAULT_NAN_BITS` (inf - inf, 0 * inf).
    """
    grads = np.asarray(grads)
    activations = np.asarray(activations)
    for name, array in (("grads", grads), ("activations", activations)):
        try:
            dtypes.canonical_name(array.dtype)
        except TypeError:
            raise TypeError(
                f"EluGrad: {name} has unsupported dtype {array.dtype}; expected one of "
                f"{', '.join(dtypes.FLOAT_TYPES)}"
            ) from None
    if grads.dtype != activations.dtype:
        raise TypeError(
            f"EluGrad: grads dtype {grads.dtype} differs from activations dtype {activations.dtype}"
        )
    if grads.shape != activations.shape:
        raise ValueError(
            f"EluGrad: grads shape {list(grads.shape)} differs from activations shape {list(activations.shape)}"
        )
    g = grads.astype(np.float32)
    a = activations.astype(np.float32)
    alpha32 = np.float32(alpha)
    with np.errstate(all="ignore"):
        negative = a < np.float32(0)
        p = g * (a + alpha32)
        nan = negative & np.isnan(p)
        if nan.any():  # which NaN: defined here, not by the order NumPy's loops multiply in
            quiet = np.uint32(0x00400000)
            fallback = (alpha32.view(np.uint32) | quiet) if np.isnan(alpha32) else np.uint32(DEFAULT_NAN_BITS)
            bits = np.where(np.isnan(g), g.view(np.uint32) | quiet, fallback).astype(np.uint32)
            p = np.where(nan, bits.view(np.float32), p)
        y = np.where(negative, p, g)
        return y.astype(grads.dtype)


OP = OpDef(
    name="EluGrad",
    inputs=(Tensor("grads", "upstream gradient dL/dY of the ELU output"),
            Tensor("activations", "the ELU forward output Y")),
    outputs=(Tensor("y", "dL/dX, same shape and dtype as grads"),),
    attributes=(Attribute("alpha", DEFAULT_ALPHA, "ELU alpha (the negative-side offset)"),),
    reference=elu_grad,
    # CANN EluGradV2's attributes, which this op does not take
    foreign_attributes=("scale", "input_scale", "is_result"),
    summary="ELU backward from the ELU output: y = activations < 0 ? (activations + alpha) * grads : grads",
    examples=({"alpha": 0.5}, {"alpha": 2.0}, {"alpha": 0.0}),
    doc="""\
Gradient of ELU computed from the ELU output:
y = activations < 0 ? (activations + alpha) * grads : grads.
Computed in float32 (inputs cast exactly), strict less-than (NaN and -0.0 select grads), one
round-to-nearest-even cast back to T. grads and activations must have the same shape.""",
)
