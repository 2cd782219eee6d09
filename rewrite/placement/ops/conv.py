"""1-D and 2-D ``Conv`` -> one CANN ``Conv2D`` (1-D input (N, C, L) as (N, C, 1, L); B as its bias
input; auto_pad's SAME_* / VALID pads computed by the kernel from X's shape).

A 2-D Conv (4-D input) stays on the CANN EP's own kernel (``leave_to_ep``), which sends it to the same
``Conv2D``, unless that kernel has a known defect for it (:mod:`ort_ops.rewrite.placement.ep_defects`:
pads with left != bottom, SAME_*, an unknown rank): those are placed, as every 1-D Conv is (the EP
sends 3-D input to Conv2D, which takes 4-D only). 3-D convolutions (5-D input) are not placed."""

from ort_ops.rewrite.placement.ep_defects import defect_of
from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule

_AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


def _check(info: NodeInfo) -> str | None:
    x = info.input_shapes[0]
    if x is not None and len(x) not in (3, 4):
        return f"{len(x) - 2}-D Conv: only 1-D (N, C, L) and 2-D (NCHW) are supported on CANN"
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


RULES = (PlaceRule("Conv", check=_check, leave_to_ep=_leave_to_ep, min_opset=11),)
