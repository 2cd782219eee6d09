"""``LayerNormalization`` (opset 17, ``stash_type = 1``) -> CANN ``LayerNormV4`` (Mean and InvStdDev are
its float32 ``mean`` and ``rstd``); ``InstanceNormalization`` -> ``LayerNormV4`` over the spatial dims of
``X`` seen as ``[N, C, S]``, then ``Mul`` by scale and ``Add`` of B per channel."""

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule


def _check(info: NodeInfo) -> str | None:
    stash = info.attr("stash_type", 1)
    if stash != 1:
        return f"stash_type={stash}: CANN LayerNormV4 computes and returns its statistics in float32 (stash_type 1)"
    return None


def _instance_check(info: NodeInfo) -> str | None:
    rank = info.rank(1)
    if rank is not None and rank < 3:
        return f"input of rank {rank}: InstanceNormalization's input is (N, C, D1, ...)"
    return None


RULES = (PlaceRule("LayerNormalization", check=_check, min_opset=17),
         PlaceRule("InstanceNormalization", check=_instance_check, min_opset=6))
