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

Only gradients requested by ``output_mask`` are computed; the others are returned as empty
placeholder constants that the fx graph never reads (the exporter's optimiser drops them).
Transposed convolution (``nn.ConvTranspose*d``) backward is not supported:
:func:`check_supported` raises a ``ValueError`` naming it before export starts.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from onnxscript import opset18 as op

from ort_ops.training.translations.nodes import module_path
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
    positionally). ``output_padding`` only matters for a transposed convolution, which is rejected,
    so it is accepted and not read, as aten does not read it for ``transposed=False``."""
    if transposed:
        raise ValueError(unsupported_reason(transposed=True))
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
    n, c_in = x_shape[:2]
    c_out, c_in_g = w_shape[:2]
    k = w_shape[2:]
    spatial_in, spatial_out = x_shape[2:], dy_shape[2:]
    pads = p + p
    outputs = []

    if output_mask[0]:
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
        perm_tail = list(range(3, 3 + nd))
        # x: [N, Cin, *S] -> [Cin/G, G*N, *S] (channels of group j are samples of group j).
        xg = op.Reshape(input, _ints([n, g, c_in_g, *spatial_in]))
        xg = op.Transpose(xg, perm=[2, 1, 0, *perm_tail])
        xg = op.Reshape(xg, _ints([c_in_g, g * n, *spatial_in]))
        # dy: [N, Cout, *So] -> [Cout, N, *So] (output channels stay in group order).
        dyg = op.Transpose(grad_output, perm=[1, 0, *range(2, 2 + nd)])
        dw = op.Conv(
            xg, dyg, strides=d, dilations=s, pads=pads, group=g, kernel_shape=spatial_out
        )
        # dw: [Cin/G, Cout, *K'] -> crop to K -> [Cout, Cin/G, *K]
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


def unsupported_reason(*, transposed: bool = False) -> str:
    """The error message for a convolution backward variant this translation cannot export."""
    if transposed:
        return (
            "convolution_backward with transposed=True (the backward of nn.ConvTranspose1d/2d/3d, "
            "transposed convolution) is not supported by ort_ops.training.translations.conv_backward"
        )
    return "unsupported convolution_backward variant"


def check_supported(graph: torch.fx.Graph, root: str = "", forward: torch.fx.Graph | None = None) -> None:
    """Raise ``ValueError`` naming the variant and its module (from ``forward``, the graph the
    joint ``graph`` came from) if ``graph`` has a backward we cannot export."""
    for node in graph.nodes:
        if node.op == "call_function" and node.target is CONVOLUTION_BACKWARD:
            transposed = node.args[7] if len(node.args) > 7 else node.kwargs.get("transposed")
            if transposed:
                paths = [module_path(n, root) for n in (forward.nodes if forward is not None else ())
                         if n.op == "call_function" and "conv_transpose" in str(n.target)]
                where = f"module {', '.join(p for p in paths if p)}, " if any(paths) else ""
                raise ValueError(f"{unsupported_reason(transposed=True)} ({where}fx node {node.name!r})")


TRANSLATIONS = {CONVOLUTION_BACKWARD: convolution_backward}
