"""``ai.ortops::LeakyReluGrad``: the LeakyReLU backward op of CANN (``ops-nn``
``activation/leaky_relu_grad``), PyTorch's ``leaky_relu_backward``.

    backprops = features > 0 ? gradients : gradients * negative_slope

Exact semantics and NaN payloads: ``docs/ops/LeakyReluGrad.md``; :func:`leaky_relu_grad` is their
definition.
"""

from __future__ import annotations

import numpy as np

from ort_ops import dtypes
from ort_ops.domain import DEFAULT_NAN_BITS
from ort_ops.ops.definition import Attribute, OpDef, Tensor

DEFAULT_NEGATIVE_SLOPE = 0.0  # CANN's default (leaky_relu_grad_proto.h); PyTorch's nn.LeakyReLU is 0.01


def leaky_relu_grad(gradients, features, negative_slope: float = DEFAULT_NEGATIVE_SLOPE) -> np.ndarray:
    """LeakyReLU backward, bit-exact to every kernel of the op.

    Both inputs are cast to float32 (exact for float16/bfloat16), then
    ``p = gradients * negative_slope; y = features > 0 ? gradients : p`` in float32 (strict
    greater-than: NaN, -0.0 and +0.0 features take the product), and ``y`` is cast back to the
    input dtype once, rounding to nearest even. ``features`` may be the LeakyReLU's input or, for
    ``negative_slope >= 0``, its output: both have the same sign.

    NaN payloads: the ``gradients`` branch copies ``gradients`` (a signalling NaN included). A NaN
    product is ``gradients``' NaN quieted if ``gradients`` is NaN, else ``negative_slope``'s NaN
    quieted if it is NaN, else :data:`ort_ops.domain.DEFAULT_NAN_BITS` (``0 * inf``).
    """
    gradients = np.asarray(gradients)
    features = np.asarray(features)
    for name, array in (("gradients", gradients), ("features", features)):
        try:
            dtypes.canonical_name(array.dtype)
        except TypeError:
            raise TypeError(f"LeakyReluGrad: {name} has unsupported dtype {array.dtype}; expected one of "
                            f"{', '.join(dtypes.FLOAT_TYPES)}") from None
    if gradients.dtype != features.dtype:
        raise TypeError(f"LeakyReluGrad: gradients dtype {gradients.dtype} differs from features dtype "
                        f"{features.dtype}")
    if gradients.shape != features.shape:
        raise ValueError(f"LeakyReluGrad: gradients shape {list(gradients.shape)} differs from features shape "
                         f"{list(features.shape)}")
    g = gradients.astype(np.float32)
    f = features.astype(np.float32)
    slope = np.float32(negative_slope)
    with np.errstate(all="ignore"):
        positive = f > np.float32(0)
        p = g * slope
        nan = ~positive & np.isnan(p)
        if nan.any():  # which NaN: defined here, not by NumPy's loops
            quiet = np.uint32(0x00400000)
            fallback = (slope.view(np.uint32) | quiet) if np.isnan(slope) else np.uint32(DEFAULT_NAN_BITS)
            bits = np.where(np.isnan(g), g.view(np.uint32) | quiet, fallback).astype(np.uint32)
            p = np.where(nan, bits.view(np.float32), p)
        y = np.where(positive, g, p)
        return y.astype(gradients.dtype)


OP = OpDef(
    name="LeakyReluGrad",
    inputs=(Tensor("gradients", "upstream gradient dL/dY of the LeakyReLU output"),
            Tensor("features", "the LeakyReLU forward input X (or, with negative_slope >= 0, its output Y)")),
    outputs=(Tensor("backprops", "dL/dX, same shape and dtype as gradients"),),
    attributes=(Attribute("negative_slope", DEFAULT_NEGATIVE_SLOPE, "the LeakyReLU's slope for features <= 0"),),
    reference=leaky_relu_grad,
    # ONNX LeakyRelu's and PyTorch leaky_relu_backward's names, which this op does not take
    foreign_attributes=("alpha", "self_is_result"),
    summary="LeakyReLU backward: backprops = features > 0 ? gradients : gradients * negative_slope",
    examples=({"negative_slope": 0.01}, {"negative_slope": 1.0}, {"negative_slope": -0.5}),
    doc="""\
Gradient of LeakyReLU: backprops = features > 0 ? gradients : gradients * negative_slope.
Computed in float32 (inputs cast exactly), strict greater-than (NaN and +-0.0 features take the
product), one round-to-nearest-even cast back to T. gradients and features must have the same shape.""",
)
