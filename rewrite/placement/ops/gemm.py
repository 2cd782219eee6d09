"""``Gemm`` with ``alpha = beta = 1`` -> CANN ``MatMulV2`` (C of shape [N] / [1, N] as its bias;
another C added by CANN ``Add``)."""

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule


def _check(info: NodeInfo) -> str | None:
    alpha, beta = info.attr("alpha", 1.0), info.attr("beta", 1.0)
    if alpha != 1.0 or beta != 1.0:
        return f"alpha={alpha}, beta={beta}: CANN MatMulV2 computes A*B + C (alpha = beta = 1 only)"
    return None


def _route(info: NodeInfo) -> str:
    c = info.input_shapes[2] if info.present(2) else None
    n = info.output_shapes[0][-1] if info.output_shapes and info.output_shapes[0] else None
    if not info.present(2) or (c is not None and (c == (n,) or c == (1, n))):
        return "default"  # C, if any, is MatMulV2's bias
    return "add_c"


RULES = (PlaceRule("Gemm", check=_check, route=_route),)
