"""``Gemm`` -> CANN ``MatMulV2``: with ``alpha = beta = 1`` a C of shape [N] / [1, N] as its bias and
another C added by CANN ``Add``; otherwise ("scaled") the product scaled by CANN ``Muls`` (alpha)
and beta * C added by CANN ``Axpy``."""

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule


def _route(info: NodeInfo) -> str:
    if info.attr("alpha", 1.0) != 1.0 or info.attr("beta", 1.0) != 1.0:
        return "scaled"
    c = info.input_shapes[2] if info.present(2) else None
    n = info.output_shapes[0][-1] if info.output_shapes and info.output_shapes[0] else None
    if not info.present(2) or (c is not None and (c == (n,) or c == (1, n))):
        return "default"  # C, if any, is MatMulV2's bias
    return "add_c"


RULES = (PlaceRule("Gemm", route=_route),)
