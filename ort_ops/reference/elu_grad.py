"""NumPy reference of EluGrad: where(a < 0, g * (a + alpha), g) in float32, one RNE cast."""

from __future__ import annotations

import numpy as np
from onnx.reference.op_run import OpRun

from ort_ops import dtypes
from ort_ops.domain import DOMAIN
from ort_ops.schemas.elu_grad import DEFAULT_ALPHA


def elu_grad(grads, activations, alpha: float = DEFAULT_ALPHA) -> np.ndarray:
    """ELU backward from the ELU output, bit-exact to the CANN kernel's numerics.

    Both inputs are cast to float32 (exact for float16/bfloat16), then
    ``t = activations + alpha; p = grads * t; y = activations < 0 ? p : grads`` in float32
    (strict less-than: NaN and -0.0 select ``grads``), and ``y`` is cast back to the input
    dtype once, rounding to nearest even.
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
    with np.errstate(all="ignore"):
        p = g * (a + np.float32(alpha))
        y = np.where(a < np.float32(0), p, g)
        return y.astype(grads.dtype)


class EluGrad(OpRun):
    """``ai.ortops::EluGrad`` for ``onnx.reference.ReferenceEvaluator``."""

    op_domain = DOMAIN

    def _run(self, grads, activations, alpha=None):  # noqa: D102
        return (elu_grad(grads, activations, DEFAULT_ALPHA if alpha is None else alpha),)
