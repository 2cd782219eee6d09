"""``ai.ortops::MaxPoolGrad``: the gradient of 2-D max pooling from its forward input and output.

    dX[n, c, h, w] = sum over the windows (ho, wo) whose first element (row-major) equal to
                     Y[n, c, ho, wo] is X[n, c, h, w] of dY[n, c, ho, wo]      (float32 sums)

Exact semantics, and where this differs from ONNX Runtime's MaxPool indices: ``docs/ops/MaxPoolGrad.md``;
:func:`max_pool_grad` is their definition.
"""

from __future__ import annotations

import numpy as np

from ort_ops import dtypes
from ort_ops.ops.definition import Attribute, OpDef, Tensor

DEFAULT_KERNEL = (2, 2)
DEFAULT_STRIDES = (1, 1)
DEFAULT_PADS = (0, 0, 0, 0)


def _geometry(kernel_shape, strides, pads) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int, int, int]]:
    """The attributes as ``(kh, kw), (sh, sw), (top, left, bottom, right)``, or ``ValueError``."""
    kernel, stride, pad = tuple(int(k) for k in kernel_shape), tuple(int(s) for s in strides), \
        tuple(int(p) for p in pads)
    if len(kernel) != 2 or min(kernel) < 1:
        raise ValueError(f"MaxPoolGrad: kernel_shape must be two positive ints, got {list(kernel)}")
    if len(stride) != 2 or min(stride) < 1:
        raise ValueError(f"MaxPoolGrad: strides must be two positive ints, got {list(stride)}")
    if len(pad) != 4 or min(pad) < 0:
        raise ValueError(f"MaxPoolGrad: pads must be four non-negative ints [top, left, bottom, right], "
                         f"got {list(pad)}")
    if pad[0] >= kernel[0] or pad[2] >= kernel[0] or pad[1] >= kernel[1] or pad[3] >= kernel[1]:
        raise ValueError(f"MaxPoolGrad: pads {list(pad)} must be smaller than kernel_shape {list(kernel)} "
                         "(a window of padding alone has no maximum)")
    return kernel, stride, pad


def pooled_size(size: int, kernel: int, stride: int, before: int, after: int) -> int:
    """Output length of floor-mode pooling (ONNX MaxPool with ceil_mode = 0)."""
    return (size + before + after - kernel) // stride + 1


def max_pool_grad_shapes(shapes, attributes) -> list[tuple[int, ...]]:
    """``[shape of X]`` after checking that Y and dY have the pooled shape of X."""
    x, y, dy = (tuple(s) for s in shapes)
    (kh, kw), (sh, sw), (top, left, bottom, right) = _geometry(
        attributes["kernel_shape"], attributes["strides"], attributes["pads"])
    if len(x) != 4:
        raise ValueError(f"MaxPoolGrad: X must be 4-D [N, C, H, W], got shape {list(x)}")
    want = (x[0], x[1], pooled_size(x[2], kh, sh, top, bottom), pooled_size(x[3], kw, sw, left, right))
    if want[2] < 1 or want[3] < 1:
        raise ValueError(f"MaxPoolGrad: X shape {list(x)} is smaller than kernel_shape {[kh, kw]} with pads "
                         f"{[top, left, bottom, right]}")
    if y != want:
        raise ValueError(f"MaxPoolGrad: Y shape {list(y)} is not the pooled shape {list(want)} of X {list(x)}")
    if dy != y:
        raise ValueError(f"MaxPoolGrad: dY shape {list(dy)} differs from Y shape {list(y)}")
    return [x]


def windows(h: int, w: int, kernel, strides, pads, ho: int, wo: int):
    """Every pooling window as ``(ho, wo, h0, h1, w0, w1)``: rows ``[h0, h1)``, columns ``[w0, w1)``
    of the input (padding excluded), in row-major order of the output."""
    (kh, kw), (sh, sw), (top, left, _, _) = kernel, strides, pads
    for i in range(ho):
        h0 = i * sh - top
        for j in range(wo):
            w0 = j * sw - left
            yield i, j, max(h0, 0), min(h0 + kh, h), max(w0, 0), min(w0 + kw, w)


def max_pool(x, kernel_shape=DEFAULT_KERNEL, strides=DEFAULT_STRIDES, pads=DEFAULT_PADS) -> np.ndarray:
    """The forward max pooling whose output :func:`max_pool_grad` expects (NaN-free inputs: the
    window maximum; a window holding NaN gives NaN). For tests and sample inputs."""
    x = np.asarray(x)
    kernel, stride, pad = _geometry(kernel_shape, strides, pads)
    n, c, h, w = x.shape
    ho, wo = pooled_size(h, kernel[0], stride[0], pad[0], pad[2]), pooled_size(w, kernel[1], stride[1], pad[1], pad[3])
    x32 = x.astype(np.float32)
    y = np.empty((n, c, ho, wo), np.float32)
    for i, j, h0, h1, w0, w1 in windows(h, w, kernel, stride, pad, ho, wo):
        y[:, :, i, j] = x32[:, :, h0:h1, w0:w1].reshape(n, c, -1).max(axis=-1)
    return y.astype(x.dtype)


def max_pool_grad(x, y, dy, kernel_shape=DEFAULT_KERNEL, strides=DEFAULT_STRIDES, pads=DEFAULT_PADS) -> np.ndarray:
    """The max pooling gradient, bit-exact to every kernel of the op.

    ``x`` [N, C, H, W] (the forward input), ``y`` and ``dy`` [N, C, Ho, Wo] (the forward output and
    its gradient), one float dtype. Each output position's window is the rows ``ho*sh - top ..``
    and columns ``wo*sw - left ..`` of X, ``kernel_shape`` long, padding excluded. Its gradient
    goes to the window's first element (row-major) equal to ``y`` (``==`` in float32: ``-0.0``
    equals ``+0.0``); if ``y`` is NaN, to the window's first NaN; if no element matches, nowhere.
    dX starts at +0.0 and accumulates the gradients in float32 in row-major order of the output
    positions, then is rounded once to the dtype (round to nearest even).
    """
    x, y, dy = np.asarray(x), np.asarray(y), np.asarray(dy)
    for name, array in (("X", x), ("Y", y), ("dY", dy)):
        try:
            dtypes.canonical_name(array.dtype)
        except TypeError:
            raise TypeError(f"MaxPoolGrad: {name} has unsupported dtype {array.dtype}; expected one of "
                            f"{', '.join(dtypes.FLOAT_TYPES)}") from None
    if not x.dtype == y.dtype == dy.dtype:
        raise TypeError(f"MaxPoolGrad: X, Y, dY dtypes {x.dtype}, {y.dtype}, {dy.dtype} differ")
    attrs = {"kernel_shape": kernel_shape, "strides": strides, "pads": pads}
    max_pool_grad_shapes([x.shape, y.shape, dy.shape], attrs)
    kernel, stride, pad = _geometry(kernel_shape, strides, pads)
    n, c, h, w = x.shape
    ho, wo = y.shape[2:]
    x32, y32, g32 = x.astype(np.float32), y.astype(np.float32), dy.astype(np.float32)
    out = np.zeros((n, c, h * w), np.float32)
    planes = np.arange(n * c)
    flat_out = out.reshape(n * c, h * w)
    with np.errstate(invalid="ignore"):
        for i, j, h0, h1, w0, w1 in windows(h, w, kernel, stride, pad, ho, wo):
            window = x32[:, :, h0:h1, w0:w1].reshape(n * c, -1)
            m = y32[:, :, i, j].reshape(n * c, 1)
            hit = (window == m) | (np.isnan(window) & np.isnan(m))
            found = hit.any(axis=1)
            first = hit.argmax(axis=1)
            rows, cols = h0 + first // (w1 - w0), w0 + first % (w1 - w0)
            target = rows * w + cols
            sel = planes[found]
            # one element per plane: the float32 additions happen in output row-major order
            flat_out[sel, target[found]] += g32[:, :, i, j].reshape(-1)[found]
    return out.reshape(n, c, h, w).astype(x.dtype)


def _sample_inputs(dtype: str, attributes: dict, rng: np.random.Generator) -> list[np.ndarray]:
    """X with many ties (small integers, +-0.0, +-inf) so that the first-match rule matters,
    Y its max pooling, dY random; 2 x 3 planes of 7 x 9."""
    np_dtype = dtypes.numpy_dtype(dtype)
    x = rng.integers(-3, 4, (2, 3, 7, 9)).astype(np.float32)
    flat = x.reshape(-1)
    flat[rng.choice(flat.size, 12, replace=False)] = np.array([0.0, -0.0] * 4 + [np.inf, -np.inf] * 2, np.float32)
    x = x.astype(np_dtype)
    y = max_pool(x, attributes["kernel_shape"], attributes["strides"], attributes["pads"])
    dy = rng.uniform(-2, 2, y.shape).astype(np.float32).astype(np_dtype)
    return [x, y, dy]


OP = OpDef(
    name="MaxPoolGrad",
    inputs=(Tensor("X", "the forward MaxPool's input [N, C, H, W]"),
            Tensor("Y", "the forward MaxPool's output [N, C, Ho, Wo]"),
            Tensor("dY", "dL/dY, the shape of Y")),
    outputs=(Tensor("dX", "dL/dX, the shape of X"),),
    attributes=(
        Attribute("kernel_shape", list(DEFAULT_KERNEL), "pooling window [kh, kw]", kind="ints"),
        Attribute("strides", list(DEFAULT_STRIDES), "window strides [sh, sw]", kind="ints"),
        Attribute("pads", list(DEFAULT_PADS), "padding [top, left, bottom, right] (ONNX order: begins, then ends); "
                  "padded positions take no part", kind="ints"),
    ),
    reference=max_pool_grad,
    # ONNX MaxPool's and torch's pooling attributes this op does not implement (it would ignore them)
    foreign_attributes=("auto_pad", "ceil_mode", "dilations", "storage_order", "kernel_size", "ksize", "stride",
                        "padding", "dilation", "return_indices"),
    shape=max_pool_grad_shapes,
    sample_inputs=_sample_inputs,
    summary="2-D max pooling backward: dY routed to the first element of each window equal to Y",
    examples=({"kernel_shape": [2, 2], "strides": [2, 2]},
              {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
              {"kernel_shape": [2, 3], "strides": [1, 2], "pads": [0, 1, 1, 1]}),
    doc="""\
Gradient of 2-D max pooling (NCHW, floor mode, no dilation) from the forward input X, output Y
and dL/dY: each window's gradient goes to its first element (row-major) equal to Y (the first NaN
if Y is NaN; nowhere if none matches), accumulated in float32 and rounded once to T. Y and dY
must have the pooled shape of X.""",
)
