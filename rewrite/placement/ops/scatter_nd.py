"""``ScatterND`` with reduction ``add`` (opset >= 16: the embedding backward torch exports) -> one CANN
``ScatterNonAliasingAdd`` (repeated indices accumulate in index order), after ONNX's negative indices
are mapped into [0, size) on the device (Less, Add, SelectV2); an index out of range fails the node by
name at run time (a device fault, which the kernel waits for)."""

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule


def _check(info: NodeInfo) -> str | None:
    reduction = info.attr("reduction", "none")
    if reduction != "add":
        return f"reduction {reduction!r}: only 'add' is placed (CANN ScatterNonAliasingAdd)"
    shape = info.input_shapes[1]
    if shape is not None and (len(shape) == 0 or shape[-1] == 0):
        return f"indices of shape {list(shape)}: CANN needs a last dim of at least 1"
    return None


RULES = (PlaceRule("ScatterND", check=_check, min_opset=16),)
