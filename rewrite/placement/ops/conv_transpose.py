"""``ConvTranspose`` -> CANN ``Conv2DBackpropInput`` (1-D and 2-D; 1-D input (N, C, L) as (N, C, 1, L))
or ``Conv3DBackpropInputV2`` (3-D, route "3d", within its README's Atlas A2/A3 limits), + ``Add`` for B;
the pads of auto_pad SAME_* / VALID and of output_shape computed by the kernel from X's shape as ONNX
defines them."""

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule


def _limits_3d(info: NodeInfo) -> str | None:
    """Conv3DBackpropInputV2 on Atlas A2/A3 (hicann/ops-nn conv/conv3d_backprop_input_v2/README.md):
    strides h, w <= 63 and d <= 255, pads and dilations <= 255, kernel H, W <= 511 (the kernel checks
    the pads it computes)."""
    strides, dilations = info.attr("strides", []) or [1] * 3, info.attr("dilations", []) or [1] * 3
    pads = info.attr("pads", []) or [0] * 6
    w = info.input_shapes[1]
    kernel = list(w[2:]) if w is not None and len(w) == 5 else info.attr("kernel_shape", []) or []
    if (strides[0] > 255 or any(s > 63 for s in strides[1:]) or any(d > 255 for d in dilations)
            or any(p > 255 for p in pads) or any(isinstance(k, int) and k > 511 for k in kernel[1:])):
        return f"strides {list(strides)}, dilations {list(dilations)}, kernel {list(kernel)}, pads {list(pads)}: " \
               "beyond CANN Conv3DBackpropInputV2's limits (strides: h, w <= 63, d <= 255; pads and dilations " \
               "<= 255; kernel H, W <= 511)"
    return None


def _check(info: NodeInfo) -> str | None:
    rank = info.rank()
    if rank is not None and rank not in (3, 4, 5):
        return f"{rank - 2}-D ConvTranspose: only 1-D (N, C, L), 2-D (NCHW) and 3-D (NCDHW) are supported on CANN"
    auto_pad = info.attr("auto_pad", "NOTSET")
    if auto_pad not in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"):
        return f"auto_pad={auto_pad}: not an ONNX auto_pad"
    if auto_pad.startswith("SAME") and any(d != 1 for d in info.attr("dilations") or []):
        return f"auto_pad={auto_pad} with dilations {list(info.attr('dilations'))}: the pads are not defined for " \
               "dilated kernels"
    if rank == 5:
        return _limits_3d(info)
    return None


def _route(info: NodeInfo) -> str:
    three_d = "3d_" if info.rank() == 5 else ""
    if info.present(2):  # B: + Add
        return f"{three_d}bias"
    return "3d" if three_d else "default"


RULES = (PlaceRule("ConvTranspose", check=_check, route=_route),)
