"""NumPy reference of EluGrad: where(a < 0, g * (a + alpha), g) in float32, one RNE cast."""

from __future__ import annotations

import numpy as np
from onnx.reference.op_run import OpRun

from ort_ops import dtypes
from ort_ops.domain import DEFAULT_NAN_BITS, DOMAIN
from ort_ops.schemas.elu_grad import DEFAULT_ALPHA


def elu_grad(grads, activations, alpha: float = DEFAULT_ALPHA) -> np.ndarray:
    """ELU backward from the ELU output, bit-exact to the CANN kernel's numerics.

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
                f"{', '.join(dtypes.SUPPORTED)}"
            ) from None
    if grads.dtype != activations.dtype:
        raise TypeError(
            f"EluGrad: grads dtype {grads.dtype} differs from activations dtype "
            f"{activations.dtype}"
        )
    if grads.shape != activations.shape:
        raise ValueError(
            f"EluGrad: grads shape {list(grads.shape)} differs from activations shape "
            f"{list(activations.shape)}"
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


class EluGrad(OpRun):
    """``ai.ortops::EluGrad`` for ``onnx.reference.ReferenceEvaluator``."""

    op_domain = DOMAIN

    def _run(self, grads, activations, alpha=None):  # noqa: D102
        return (elu_grad(grads, activations, DEFAULT_ALPHA if alpha is None else alpha),)
