"""``ScatterND`` (opset >= 16) -> with reduction ``add`` (the embedding backward torch exports) one CANN
``ScatterNonAliasingAdd`` (repeated indices accumulate in index order); with reduction ``none`` (torch's
``index_put`` / ``x[idx] = v``; route "update") a device copy of data and CANN ``ScatterNdUpdate`` on it.
ONNX's negative indices are first mapped into [0, size) on the device (Less, Add, SelectV2); an index
out of range fails the node by name at run time (a device fault, which the kernel waits for)."""

from onnx import TensorProto

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule

_ADD_TYPES = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT32}  # CANN ScatterNonAliasingAdd's


def _check(info: NodeInfo) -> str | None:
    reduction = info.attr("reduction", "none")
    if reduction not in ("add", "none"):
        return f"reduction {reduction!r}: only 'add' (CANN ScatterNonAliasingAdd) and 'none' (ScatterNdUpdate) " \
               "are placed"
    if reduction == "add" and info.input_types[0] not in _ADD_TYPES:
        return "reduction 'add' of this type: CANN ScatterNonAliasingAdd takes float32, float16, int32"
    shape = info.input_shapes[1]
    if shape is not None and (len(shape) == 0 or shape[-1] == 0):
        return f"indices of shape {list(shape)}: CANN needs a last dim of at least 1"
    return None


def _route(info: NodeInfo) -> str:
    return "default" if info.attr("reduction", "none") == "add" else "update"


RULES = (PlaceRule("ScatterND", check=_check, route=_route, min_opset=16),)
