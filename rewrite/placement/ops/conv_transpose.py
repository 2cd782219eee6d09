"""1-D and 2-D ``ConvTranspose`` with explicit pads -> CANN ``Conv2DBackpropInput`` (+ ``Add`` for B);
1-D input (N, C, L) as (N, C, 1, L)."""

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule


def _check(info: NodeInfo) -> str | None:
    x = info.input_shapes[0]
    if x is not None and len(x) not in (3, 4):
        return f"{len(x) - 2}-D ConvTranspose: only 1-D (N, C, L) and 2-D (NCHW) are supported on CANN"
    if info.attr("auto_pad", "NOTSET") != "NOTSET":
        return f"auto_pad={info.attr('auto_pad')}: explicit pads only"
    if info.attr("output_shape") is not None:
        return "output_shape is not supported (explicit pads only)"
    return None


def _route(info: NodeInfo) -> str:
    return "bias" if info.present(2) else "default"  # B: + Add


RULES = (PlaceRule("ConvTranspose", check=_check, route=_route),)
