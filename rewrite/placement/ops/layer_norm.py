"""``LayerNormalization`` (opset 17, ``stash_type = 1``) -> CANN ``LayerNormV4`` (Mean and InvStdDev are
its float32 ``mean`` and ``rstd``)."""

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule


def _check(info: NodeInfo) -> str | None:
    stash = info.attr("stash_type", 1)
    if stash != 1:
        return f"stash_type={stash}: CANN LayerNormV4 computes and returns its statistics in float32 (stash_type 1)"
    return None


RULES = (PlaceRule("LayerNormalization", check=_check, min_opset=17),)
