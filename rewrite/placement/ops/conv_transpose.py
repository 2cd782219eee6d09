"""1-D and 2-D ``ConvTranspose`` -> CANN ``Conv2DBackpropInput`` (+ ``Add`` for B); 1-D input (N, C, L)
as (N, C, 1, L); the pads of auto_pad SAME_* / VALID and of output_shape computed by the kernel from X's
shape as ONNX defines them."""

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule


def _check(info: NodeInfo) -> str | None:
    x = info.input_shapes[0]
    if x is not None and len(x) not in (3, 4):
        return f"{len(x) - 2}-D ConvTranspose: only 1-D (N, C, L) and 2-D (NCHW) are supported on CANN"
    auto_pad = info.attr("auto_pad", "NOTSET")
    if auto_pad not in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"):
        return f"auto_pad={auto_pad}: not an ONNX auto_pad"
    if auto_pad.startswith("SAME") and any(d != 1 for d in info.attr("dilations") or []):
        return f"auto_pad={auto_pad} with dilations {list(info.attr('dilations'))}: the pads are not defined for " \
               "dilated kernels"
    return None


def _route(info: NodeInfo) -> str:
    return "bias" if info.present(2) else "default"  # B: + Add


RULES = (PlaceRule("ConvTranspose", check=_check, route=_route),)
