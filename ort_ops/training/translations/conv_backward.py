"""ONNX translation of ``aten.convolution_backward`` for torch's dynamo ONNX exporter.

torch 2.13's exporter has no translation for this op (``No ONNX function found for
aten.convolution_backward.default``), so no CNN training graph exports without one.
:data:`TRANSLATIONS` is this module's entry of the custom translation table
(:mod:`ort_ops.training.translations`); the function is traced with onnxscript and needs static
shapes (the default for :func:`ort_ops.training.export_training_graph`).

For ``y = conv(x, w){stride s, padding p, dilation d, groups G}`` and upstream ``dy``:

- ``dx = ConvTranspose(dy, w){strides s, pads p, dilations d, group G, output_padding r}``
  with ``r = in + 2p - ((out - 1) s + d (k - 1) + 1)``: the input positions that the forward
  stride skipped at the end (``0 <= r < s``).
- ``dw``: a convolution whose *batch* is the input channels and whose *channels* are the
  samples: ``x`` reshaped to ``[Cin/G, G*N, *S]``, ``dy`` to ``[Cout, N, *So]`` as the kernel,
  ``Conv{strides d, dilations s, pads p, group G}`` gives ``[Cin/G, Cout, *K']`` with
  ``K' >= k``; slice to ``k`` and swap the first two axes.
- ``db = ReduceSum(dy, axes = batch and spatial)``.

For a transposed convolution ``y = conv_transpose(x, w){s, p, d, G, output_padding}``
(``nn.ConvTranspose*d``; w ``[Cin, Cout/G, *k]``), the adjoint of ``Conv(., w)`` on ``Cout``
channels, the roles swap:

- ``dx = Conv(dy, w){strides s, pads p, dilations d, group G}``, cropped to x's size (with an
  output_padding at or above the stride, which PyTorch allows below the dilation, the Conv has
  positions past x's end);
- ``dw`` is the weight gradient of that Conv with ``dy`` as its input and ``x`` as its upstream
  gradient: the same reshaped convolution as above with the two exchanged;
- ``db`` as above.

Only gradients requested by ``output_mask`` are computed; the others are returned as empty
placeholder constants that the fx graph never reads (the exporter's optimiser drops them).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from onnxscript import opset18 as op

from ort_ops.training.translations.pool_windows import per_dim

CONVOLUTION_BACKWARD = torch.ops.aten.convolution_backward.default


def _static_shape(value, what: str) -> list[int]:
    shape = value.shape
    if shape is None or any(not isinstance(d, int) for d in shape):
        raise ValueError(
            f"convolution_backward: {what} needs a static shape, got {shape}; "
            "export with static input shapes"
        )
    return list(shape)


def _ints(values: Sequence[int]):
    return op.Constant(value_ints=list(values))


def convolution_backward(
    grad_output,
    input,
    weight,
    bias_sizes=None,
    stride: Sequence[int] = (1,),
    padding: Sequence[int] = (0,),
    dilation: Sequence[int] = (1,),
    transposed: bool = False,
    output_padding: Sequence[int] = (0,),
    groups: int = 1,
    output_mask: Sequence[bool] = (True, True, True),
):
    """``aten::convolution_backward`` -> (grad_input, grad_weight, grad_bias) as ONNX ops.

    The parameters are aten's schema, in its order (the exporter and callers pass them
    positionally). ``output_padding`` is not read: the gradients' shapes are the inputs' (static)
    shapes, which already include it."""
    x_shape = _static_shape(input, "input")
    w_shape = _static_shape(weight, "weight")
    dy_shape = _static_shape(grad_output, "grad_output")
    nd = len(x_shape) - 2
    if nd < 1:
        raise ValueError(f"convolution_backward: input rank {len(x_shape)} < 3 is not supported")
    s = per_dim(stride, nd, "stride", "convolution_backward")
    p = per_dim(padding, nd, "padding", "convolution_backward")
    d = per_dim(dilation, nd, "dilation", "convolution_backward")
    g = int(groups)
    k = w_shape[2:]
    pads = p + p
    outputs = []
    # the convolution whose weight gradient dw is: y = Conv(x, w), or for a transposed convolution
    # x = Conv(y, w) (its adjoint), so its input is dy and its upstream gradient x
    conv_in, conv_dz = (grad_output, input) if transposed else (input, grad_output)
    in_shape, dz_shape = (dy_shape, x_shape) if transposed else (x_shape, dy_shape)

    if output_mask[0] and transposed:
        dx = op.Conv(grad_output, weight, strides=s, pads=pads, dilations=d, group=g, kernel_shape=k)
        conv_out = [(dy_shape[2 + i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(nd)]
        if conv_out != x_shape[2:]:  # output_padding >= stride (below the dilation): positions past x's end
            dx = op.Slice(dx, _ints([0] * nd), _ints(x_shape[2:]), _ints(list(range(2, 2 + nd))))
        outputs.append(dx)
    elif output_mask[0]:
        spatial_in, spatial_out = x_shape[2:], dy_shape[2:]
        remainder = [
            spatial_in[i] + 2 * p[i] - ((spatial_out[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1)
            for i in range(nd)
        ]
        outputs.append(
            op.ConvTranspose(
                grad_output,
                weight,
                strides=s,
                pads=pads,
                dilations=d,
                group=g,
                kernel_shape=k,
                output_padding=remainder,
            )
        )
    else:
        outputs.append(_placeholder(input))

    if output_mask[1]:
        n, c_in_g = in_shape[0], w_shape[1]
        spatial_in, spatial_out = in_shape[2:], dz_shape[2:]
        perm_tail = list(range(3, 3 + nd))
        # the conv input [N, Cin, *S] -> [Cin/G, G*N, *S] (channels of group j are samples of group j).
        xg = op.Reshape(conv_in, _ints([n, g, c_in_g, *spatial_in]))
        xg = op.Transpose(xg, perm=[2, 1, 0, *perm_tail])
        xg = op.Reshape(xg, _ints([c_in_g, g * n, *spatial_in]))
        # its upstream gradient [N, Cout, *So] -> [Cout, N, *So] (output channels stay in group order).
        dyg = op.Transpose(conv_dz, perm=[1, 0, *range(2, 2 + nd)])
        dw = op.Conv(
            xg, dyg, strides=d, dilations=s, pads=pads, group=g, kernel_shape=spatial_out
        )
        # dw: [Cin/G, Cout, *K'] -> crop to K -> [Cout, Cin/G, *K] (w's layout either way)
        dw = op.Slice(dw, _ints([0] * nd), _ints(k), _ints(list(range(2, 2 + nd))))
        outputs.append(op.Transpose(dw, perm=[1, 0, *range(2, 2 + nd)]))
    else:
        outputs.append(_placeholder(weight))

    if output_mask[2]:
        axes = [0, *range(2, 2 + nd)]
        outputs.append(op.ReduceSum(grad_output, _ints(axes), keepdims=0))
    else:
        outputs.append(_placeholder(weight))
    return tuple(outputs)


def _placeholder(like):
    """An empty tensor of ``like``'s dtype standing in for a gradient output_mask left out."""
    return op.CastLike(op.ConstantOfShape(_ints([0])), like)


TRANSLATIONS = {CONVOLUTION_BACKWARD: convolution_backward}
