"""``ai.ortops::SoftmaxGrad``: the softmax backward op of CANN (``ops-nn`` ``activation/softmax_grad``),
PyTorch's ``_softmax_backward_data``.

    grad_x = grad_softmax * softmax - sum(grad_softmax * softmax, axis) * softmax

``softmax`` is the forward Softmax's output Y, ``grad_softmax`` dL/dY. Not bit-exact across kernels
(the sum's order): every kernel is within :mod:`ort_ops.tolerances` of :func:`softmax_grad`, the
float64 definition rounded once; ``docs/ops/SoftmaxGrad.md`` says what each kernel computes.
"""

from __future__ import annotations

import numpy as np

from ort_ops import dtypes
from ort_ops.ops.definition import Attribute, OpDef, Tensor

DEFAULT_AXIS = -1  # CANN's (softmax_grad_proto.h: axes {-1}) and ONNX Softmax's (opset 13+)


def softmax_grad(grad_softmax, softmax, axis: int = DEFAULT_AXIS) -> np.ndarray:
    """``t - sum(t, axis) * softmax`` with ``t = grad_softmax * softmax``, in float64 (both inputs
    exact there), rounded once to the inputs' dtype. ``axis`` counts from the end when negative."""
    grad_softmax, softmax = np.asarray(grad_softmax), np.asarray(softmax)
    _check(grad_softmax, softmax, axis)
    dy, y = grad_softmax.astype(np.float64), softmax.astype(np.float64)
    with np.errstate(all="ignore"):
        t = dy * y
        out = t - t.sum(axis=axis, keepdims=True) * y
    return out.astype(softmax.dtype)


def _check(grad_softmax: np.ndarray, softmax: np.ndarray, axis: int) -> None:
    for name, array in (("grad_softmax", grad_softmax), ("softmax", softmax)):
        try:
            dtypes.canonical_name(array.dtype)
        except TypeError:
            raise TypeError(f"SoftmaxGrad: {name} has unsupported dtype {array.dtype}; expected one of "
                            f"{', '.join(dtypes.FLOAT_TYPES)}") from None
    if grad_softmax.dtype != softmax.dtype:
        raise TypeError(f"SoftmaxGrad: grad_softmax dtype {grad_softmax.dtype} differs from softmax dtype "
                        f"{softmax.dtype}")
    shapes([grad_softmax.shape, softmax.shape], {"axis": axis})


def shapes(input_shapes, attributes) -> list[tuple[int, ...]]:
    """``[shape]`` for two inputs of one shape of rank >= 1 with ``axis`` in [-rank, rank)."""
    grad_softmax, softmax = (tuple(s) for s in input_shapes)
    if grad_softmax != softmax:
        raise ValueError(f"SoftmaxGrad: grad_softmax shape {list(grad_softmax)} differs from softmax shape "
                         f"{list(softmax)}")
    axis = attributes.get("axis", DEFAULT_AXIS)
    if not -len(softmax) <= axis < len(softmax):
        raise ValueError(f"SoftmaxGrad: axis {axis} is out of range for inputs of shape {list(softmax)}")
    return [softmax]


def _sample_inputs(dtype: str, attributes: dict, rng: np.random.Generator) -> list[np.ndarray]:
    """A softmax over ``axis`` of [5, 7, 9] normal logits and a normal gradient."""
    np_dtype = dtypes.numpy_dtype(dtype)
    logits = rng.normal(0.0, 2.0, (5, 7, 9))
    e = np.exp(logits - logits.max(axis=attributes["axis"], keepdims=True))
    softmax = (e / e.sum(axis=attributes["axis"], keepdims=True)).astype(np.float32).astype(np_dtype)
    grad = rng.normal(0.0, 1.0, (5, 7, 9)).astype(np.float32).astype(np_dtype)
    return [grad, softmax]


OP = OpDef(
    name="SoftmaxGrad",
    inputs=(Tensor("grad_softmax", "upstream gradient dL/dY of the Softmax output"),
            Tensor("softmax", "the Softmax's output Y, same shape and dtype")),
    outputs=(Tensor("grad_x", "dL/dX of the Softmax input, same shape and dtype"),),
    attributes=(Attribute("axis", DEFAULT_AXIS, "the Softmax's axis (negative: from the end)", kind="int"),),
    reference=softmax_grad,
    # CANN's list attribute (this op reduces one axis, ONNX Softmax's)
    foreign_attributes=("axes",),
    shape=shapes,
    sample_inputs=_sample_inputs,
    exact=False,
    summary="Softmax backward: grad_x = grad_softmax * softmax - sum(grad_softmax * softmax, axis) * softmax",
    examples=({"axis": 1}, {"axis": 0}, {"axis": -2}),
    doc="""\
Gradient of Softmax along axis: t = grad_softmax * softmax, grad_x = t - sum(t, axis) * softmax.
Computed in float32 (float16/bfloat16 inputs cast exactly), rounded once to T; within the library's
tolerance of the float64 definition (the kernels sum in different orders). grad_softmax and softmax
must have the same shape.""",
)
