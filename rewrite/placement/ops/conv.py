"""1-D and 2-D ``Conv`` -> one CANN ``Conv2D`` (1-D input (N, C, L) as (N, C, 1, L); B as its bias
input; auto_pad's SAME_* / VALID pads computed by the kernel from X's shape).

A 2-D Conv (4-D input) stays on the CANN EP's own kernel (``leave_to_ep``), which sends it to the same
``Conv2D``, unless that kernel has a known defect for it (:mod:`ort_ops.rewrite.placement.ep_defects`:
pads with left != bottom, SAME_*, an unknown rank): those are placed, as every 1-D Conv is (the EP
sends 3-D input to Conv2D, which takes 4-D only). 3-D convolutions (5-D input) -> one CANN ``Conv3DV2``
(route "3d"; the EP would send them to Conv3D with NCHW descriptors), within its README's limits on H
and W (strides <= 63, dilations <= 255, kernel <= 511, pads <= 255)."""

from ort_ops.rewrite.placement.ep_defects import defect_of
from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule

_AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


def _conv3d_limits(info: NodeInfo) -> str | None:
    strides, dilations = info.attr("strides", []) or [1] * 3, info.attr("dilations", []) or [1] * 3
    pads, kernel = info.attr("pads", []) or [0] * 6, info.attr("kernel_shape", []) or []
    w = info.input_shapes[1]
    if w is not None and len(w) == 5:
        kernel = list(w[2:])
    if (any(s > 63 for s in strides[1:]) or any(d > 255 for d in dilations[1:])
            or any(isinstance(k, int) and k > 511 for k in kernel[1:]) or any(p > 255 for p in pads[1:3] + pads[4:])):
        return f"strides {list(strides)}, dilations {list(dilations)}, kernel {list(kernel)}, pads {list(pads)}: " \
               "beyond CANN Conv3DV2's limits on H and W (strides <= 63, dilations <= 255, kernel <= 511, pads <= 255)"
    return None


def _check(info: NodeInfo) -> str | None:
    rank = info.rank()
    if rank is not None and rank not in (3, 4, 5):
        return f"{rank - 2}-D Conv: only 1-D (N, C, L), 2-D (NCHW) and 3-D (NCDHW) are supported on CANN"
    if rank == 5 and (reason := _conv3d_limits(info)):
        return reason
    if info.attr("auto_pad", "NOTSET") not in _AUTO_PADS:
        return f"auto_pad={info.attr('auto_pad')}: not an ONNX auto_pad"
    if info.attr("auto_pad", "NOTSET").startswith("SAME") and any(d != 1 for d in info.attr("dilations") or []):
        return f"auto_pad={info.attr('auto_pad')} with dilations {list(info.attr('dilations'))}: the pads are " \
               "not defined for dilated kernels (ONNX's formula ignores dilation; ORT's CPU EP rejects it)"
    return None


def _leave_to_ep(info: NodeInfo) -> str | None:
    x = info.input_shapes[0]
    if x is not None and len(x) == 4 and defect_of(info) is None:
        return "2-D Conv: the CANN EP's own kernel runs it (the same CANN Conv2D)"
    return None


def _route(info: NodeInfo) -> str:
    return "3d" if info.rank() == 5 else "default"


RULES = (PlaceRule("Conv", check=_check, route=_route, leave_to_ep=_leave_to_ep, min_opset=11),)
