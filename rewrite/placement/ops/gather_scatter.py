"""``GatherElements`` / ``ScatterElements`` (reduction none/add/mul) -> CANN's ops of the same
names (Ascend 950), or on Atlas A2/A3 their V2 ops (route "v2": GatherElementsV2 after a clamp and
cast of int64 indices to int32; ScatterElementsV2 in place on a copy of data), which take every
placed type but int64. CANN follows torch.gather (indices in [0, size)): ONNX's negative indices are
first mapped there on the device (Less, Add, SelectV2), except for GatherElementsV2, which takes them."""

from onnx import TensorProto

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule


def _scatter_check(info: NodeInfo) -> str | None:
    reduction = info.attr("reduction", "none")
    if reduction not in ("none", "add", "mul"):
        return f"reduction {reduction!r}: CANN ScatterElements has none, add and mul"
    return None


def _routes(info: NodeInfo) -> tuple[str, ...]:
    # the alternatives in the C++ kernels' order (RouteFor in ort_ops/csrc/placed/gather_scatter.cc)
    return ("default",) if info.input_types[0] == TensorProto.INT64 else ("default", "v2")


RULES = (
    PlaceRule("GatherElements", route=_routes),
    PlaceRule("ScatterElements", check=_scatter_check, min_opset=11, route=_routes),
)
