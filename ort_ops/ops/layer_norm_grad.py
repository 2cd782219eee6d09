"""``ai.ortops::LayerNormGrad``: the backward of ONNX LayerNormalization, CANN's ``LayerNormGradV3``
(``ops-nn`` ``norm/layer_norm_grad_v3``), PyTorch's ``native_layer_norm_backward``.

Rows are the elements of X sharing the indices before ``axis``; each row of M elements has the
forward's Mean and InvStdDev (``rstd``)::

    xhat = (x - mean) * rstd,  g = dy * scale
    dx = (g - (sum(g) / M + xhat * sum(g * xhat) / M)) * rstd          (per row)
    dscale = sum over rows of dy * xhat,  dbias = sum over rows of dy

Not bit-exact across kernels (the sums' order): every kernel is within :mod:`ort_ops.tolerances`
of :func:`layer_norm_grad`, the float64 definition rounded once; ``docs/ops/LayerNormGrad.md``
says what each kernel computes.
"""

from __future__ import annotations

import math

import numpy as np

from ort_ops import dtypes
from ort_ops.ops.definition import Attribute, OpDef, Tensor

DEFAULT_AXIS = -1  # ONNX LayerNormalization's
STATS_TYPE = "float32"  # Mean / InvStdDev: ONNX's stash_type 1 (the exporters'), CANN's rstd / mean


def layer_norm_grad(dy, x, mean, inv_std_dev, scale, axis: int = DEFAULT_AXIS):
    """``(dx, dscale, dbias)`` in float64 (every input exact there), each rounded once to x's dtype."""
    dy, x, mean, rstd, scale = (np.asarray(a) for a in (dy, x, mean, inv_std_dev, scale))
    _check(dy, x, mean, rstd, scale, axis)
    a = axis % x.ndim
    m = math.prod(x.shape[a:])
    rows = tuple(range(a))
    row_axes = tuple(range(a, x.ndim))
    dy64, x64, scale64 = dy.astype(np.float64), x.astype(np.float64), scale.astype(np.float64)
    mean64, rstd64 = mean.astype(np.float64), rstd.astype(np.float64)
    with np.errstate(all="ignore"):
        xhat = (x64 - mean64) * rstd64
        g = dy64 * scale64
        s1 = g.sum(axis=row_axes, keepdims=True)
        s2 = (g * xhat).sum(axis=row_axes, keepdims=True)
        dx = (g - (s1 / m + xhat * s2 / m)) * rstd64
        dscale = (dy64 * xhat).sum(axis=rows)
        dbias = dy64.sum(axis=rows)
    return tuple(v.astype(x.dtype) for v in (dx, dscale, dbias))


def _check(dy, x, mean, rstd, scale, axis: int) -> None:
    for name, array in (("dy", dy), ("x", x), ("scale", scale)):
        try:
            dtypes.canonical_name(array.dtype)
        except TypeError:
            raise TypeError(f"LayerNormGrad: {name} has unsupported dtype {array.dtype}; expected one of "
                            f"{', '.join(dtypes.FLOAT_TYPES)}") from None
    for name, array in (("dy", dy), ("scale", scale)):
        if array.dtype != x.dtype:
            raise TypeError(f"LayerNormGrad: {name} dtype {array.dtype} differs from x dtype {x.dtype}")
    for name, array in (("mean", mean), ("inv_std_dev", rstd)):
        if array.dtype != np.float32:
            raise TypeError(f"LayerNormGrad: {name} has dtype {array.dtype}; expected float32 (LayerNormalization's "
                            "stash_type 1)")
    shapes([dy.shape, x.shape, mean.shape, rstd.shape, scale.shape], {"axis": axis})


def shapes(input_shapes, attributes) -> list[tuple[int, ...]]:
    """``[x, scale, scale]`` shapes: dy of x's shape (rank >= 1), mean and inv_std_dev of x's shape
    with the dims from ``axis`` on set to 1, scale of x's dims from ``axis`` on."""
    dy, x, mean, rstd, scale = (tuple(s) for s in input_shapes)
    axis = attributes.get("axis", DEFAULT_AXIS)
    rank = len(x)
    if not -rank <= axis < rank:
        raise ValueError(f"LayerNormGrad: axis {axis} is out of range for x of shape {list(x)}")
    a = axis % rank
    if dy != x:
        raise ValueError(f"LayerNormGrad: dy shape {list(dy)} differs from x shape {list(x)}")
    stats = x[:a] + (1,) * (rank - a)
    for name, shape in (("mean", mean), ("inv_std_dev", rstd)):
        if shape != stats:
            raise ValueError(f"LayerNormGrad: {name} shape {list(shape)} is not {list(stats)} (x {list(x)} with the "
                             f"dims from axis {a} set to 1)")
    if scale != x[a:]:
        raise ValueError(f"LayerNormGrad: scale shape {list(scale)} is not x's dims from axis {a}, {list(x[a:])}")
    return [x, scale, scale]


def _sample_inputs(dtype: str, attributes: dict, rng: np.random.Generator) -> list[np.ndarray]:
    """A LayerNormalization's statistics of normal [3, 4, 6] inputs over the dims from ``axis``
    (epsilon 1e-5), a normal scale and gradient."""
    np_dtype = dtypes.numpy_dtype(dtype)
    shape = (3, 4, 6)
    a = attributes["axis"] % len(shape)
    x = rng.normal(0.5, 2.0, shape).astype(np.float32).astype(np_dtype)
    row_axes = tuple(range(a, len(shape)))
    x32 = x.astype(np.float32)
    mean = x32.mean(axis=row_axes, keepdims=True, dtype=np.float32)
    rstd = (1.0 / np.sqrt(((x32 - mean) ** 2).mean(axis=row_axes, keepdims=True) + 1e-5)).astype(np.float32)
    scale = rng.normal(1.0, 0.5, shape[a:]).astype(np.float32).astype(np_dtype)
    dy = rng.normal(0.0, 1.0, shape).astype(np.float32).astype(np_dtype)
    return [dy, x, mean.astype(np.float32), rstd, scale]


OP = OpDef(
    name="LayerNormGrad",
    inputs=(Tensor("dy", "upstream gradient dL/dY of the LayerNormalization output"),
            Tensor("x", "the LayerNormalization's input X, dy's shape and dtype"),
            Tensor("mean", "the LayerNormalization's Mean output (x's shape, 1 from axis on)", type=STATS_TYPE),
            Tensor("inv_std_dev", "the LayerNormalization's InvStdDev output, mean's shape", type=STATS_TYPE),
            Tensor("scale", "the LayerNormalization's Scale, x's dims from axis on")),
    outputs=(Tensor("dx", "dL/dX, x's shape"),
             Tensor("dscale", "dL/dScale, scale's shape", optional=True),
             Tensor("dbias", "dL/dB, scale's shape", optional=True)),
    attributes=(Attribute("axis", DEFAULT_AXIS, "the LayerNormalization's first normalised axis (negative: "
                          "from the end)", kind="int"),),
    reference=layer_norm_grad,
    # ONNX LayerNormalization's attributes the backward does not take (the statistics carry them)
    foreign_attributes=("epsilon", "stash_type"),
    shape=shapes,
    sample_inputs=_sample_inputs,
    exact=False,
    summary="LayerNormalization backward: dx, dscale, dbias from dy, x, the forward's Mean and InvStdDev and scale",
    examples=({"axis": 1}, {"axis": 0}, {"axis": -2}),
    doc="""\
Gradient of LayerNormalization over the dims from axis on (M elements per row): with
xhat = (x - mean) * inv_std_dev and g = dy * scale, dx = (g - (sum(g) / M + xhat * sum(g * xhat) / M))
* inv_std_dev per row; dscale = sum over rows of dy * xhat, dbias = sum over rows of dy. mean and
inv_std_dev are float32 (stash_type 1). Computed in float32 (float16/bfloat16 inputs cast exactly),
rounded once to T; within the library's tolerance of the float64 definition (the kernels sum in
different orders).""",
)
