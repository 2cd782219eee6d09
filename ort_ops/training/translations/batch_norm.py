"""ONNX translation of ``aten._native_batch_norm_legit_functional`` (BatchNorm with running
statistics, as the joint training graph has it) for torch's dynamo ONNX exporter.

torch 2.13's exporter (onnxscript's torchlib) translates this op in inference mode whatever its
``training`` argument (``training = False`` in ``aten__native_batch_norm_legit_functional``: "ORT
currently only supports training mode with opset version lower than 14"): a train-mode BatchNorm
then normalises with the running statistics instead of the batch's, and the loss, every gradient
and the statistics' update are wrong. :data:`TRANSLATIONS` replaces it.

For ``x`` of shape ``[N, C, *S]`` and ``training=True`` (PyTorch's CPU kernel in
``aten/src/ATen/native/Normalization.cpp``; the decomposition ``native_batch_norm_helper`` in
``torch/_decomp/decompositions.py``):

- ``mean = mean(x)`` and ``var = mean((x - mean)^2)`` over every axis but 1 (biased);
  ``invstd = 1 / sqrt(var + eps)``; ``y = (x - mean) * invstd * weight + bias``.
- ``new_running_mean = momentum * mean + (1 - momentum) * running_mean``;
  ``new_running_var = momentum * var * n / (n - 1) + (1 - momentum) * running_var`` (unbiased,
  ``n = N * prod(S)``).
- outputs ``(y, mean, invstd, new_running_mean, new_running_var)``, the statistics of shape
  ``[C]``. float16/bfloat16 inputs are computed in float32 and each output rounded once to the
  input's dtype (PyTorch's CPU kernel accumulates in float32 too).

``training=False`` (frozen statistics): ONNX ``BatchNormalization`` in inference mode, the running
statistics returned unchanged, and empty ``mean`` / ``invstd`` as PyTorch's CPU kernel returns.
"""

from __future__ import annotations

import torch
from onnxscript import opset18 as op

BATCH_NORM_FUNCTIONAL = torch.ops.aten._native_batch_norm_legit_functional.default

_FLOAT = 1  # onnx.TensorProto.FLOAT
_LOW_PRECISION = ("FLOAT16", "BFLOAT16")


def _static_shape(value, what: str) -> list[int]:
    shape = value.shape
    if shape is None or any(not isinstance(d, int) for d in shape):
        raise ValueError(f"_native_batch_norm_legit_functional: {what} needs a static shape, got {shape}; "
                         "export with static input shapes")
    return list(shape)


def _ints(values):
    return op.Constant(value_ints=list(values))


def _scalar(value: float, like):
    return op.CastLike(op.Constant(value_float=float(value)), like)


def _per_channel(value, channels: int, default: float, like):
    """``weight`` / ``bias`` (``default`` everywhere when absent) as a ``[C]`` tensor of ``like``'s dtype."""
    if value is not None:
        return value
    return op.CastLike(op.Expand(op.Constant(value_float=default), _ints([channels])), like)


def batch_norm_functional(input, weight, bias, running_mean, running_var, training: bool,
                          momentum: float, eps: float):
    """``aten::_native_batch_norm_legit_functional`` -> (y, mean, invstd, new running mean, new running var)."""
    shape = _static_shape(input, "input")
    if len(shape) < 2:
        raise ValueError(f"_native_batch_norm_legit_functional: input rank {len(shape)} < 2")
    channels = shape[1]
    if not training:
        y = op.BatchNormalization(input, _per_channel(weight, channels, 1.0, input),
                                  _per_channel(bias, channels, 0.0, input), running_mean, running_var,
                                  epsilon=float(eps))
        empty = op.CastLike(op.ConstantOfShape(_ints([0])), input)
        return y, empty, op.Identity(empty), op.Identity(running_mean), op.Identity(running_var)

    low = input.dtype is not None and input.dtype.name in _LOW_PRECISION

    def compute(v):  # float16/bfloat16 -> float32
        return op.Cast(v, to=_FLOAT) if low else v

    axes = _ints([0, *range(2, len(shape))])
    broadcast = _ints([1, channels] + [1] * (len(shape) - 2))
    x = compute(input)
    mean = op.ReduceMean(x, axes, keepdims=1)
    centred = op.Sub(x, mean)
    var = op.ReduceMean(op.Mul(centred, centred), axes, keepdims=1)
    invstd = op.Div(_scalar(1.0, x), op.Sqrt(op.Add(var, _scalar(eps, x))))
    y = op.Mul(centred, invstd)
    if weight is not None:
        y = op.Mul(y, op.Reshape(compute(weight), broadcast))
    if bias is not None:
        y = op.Add(y, op.Reshape(compute(bias), broadcast))
    count = 1  # values per channel (PyTorch refuses 1 in training)
    for d in [shape[0], *shape[2:]]:
        count *= d
    per_channel = _ints([channels])
    mean_c, var_c, invstd_c = (op.Reshape(v, per_channel) for v in (mean, var, invstd))
    new_mean = op.Add(op.Mul(_scalar(momentum, x), mean_c), op.Mul(_scalar(1.0 - momentum, x), compute(running_mean)))
    unbiased = op.Mul(var_c, _scalar(count / max(count - 1, 1), x))
    new_var = op.Add(op.Mul(_scalar(momentum, x), unbiased), op.Mul(_scalar(1.0 - momentum, x), compute(running_var)))
    outputs = (y, mean_c, invstd_c, new_mean, new_var)
    return tuple(op.CastLike(v, input) for v in outputs) if low else outputs


TRANSLATIONS = {BATCH_NORM_FUNCTIONAL: batch_norm_functional}
