"""``BatchNormalization`` (opset 9+, channels at axis 1) -> ``ai.ortops.cann::BatchNormalization``: training mode
(opset 14/15 ``training_mode=1``: Y, running_mean, running_var) as CANN ``BatchNormV3`` with its unbiased
running variance made ONNX's population one by ``Axpy`` and ``Muls`` (route "training"); inference of the ranks
the CANN EP's own kernel gets wrong (2-D, 3-D, 5-D, ...) as CANN ``BatchNorm`` over X viewed as 4-D NCHW
(route "inference"). 4-D inference stays on the CANN EP's kernel. Opset 9-13 training outputs (mean, var,
saved_mean, saved_var) are not placed."""

from onnx import TensorProto

from ort_ops.rewrite.placement.ep_defects import defect_of
from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule

_F32 = TensorProto.FLOAT


def _training(info: NodeInfo) -> bool:
    return bool(info.attr("training_mode", 0))


def _check(info: NodeInfo) -> str | None:
    if info.opset < 14 and any(info.node.output[1:]):
        return (f"opset {info.opset} BatchNormalization with its training outputs (mean, var, saved_mean, "
                "saved_var): not placed (ai.ortops.cann implements opset 14/15's training_mode)")
    shape = info.input_shapes[0] if info.input_shapes else None
    if shape is not None and len(shape) < 2:
        return f"X of rank {len(shape)}: BatchNormalization needs [N, C, ...]"
    types = info.input_types
    if len(types) > 3 and any(t not in (None, _F32) for t in types[3:5]):
        return ("input_mean / input_var not float32: CANN BatchNormV3 (Atlas A2/A3 dtype rows) and BatchNorm take "
                "float32 running statistics")
    if not _training(info) and len(types) > 2 and any(t not in (None, _F32) for t in types[1:3]):
        return "scale / B not float32 in inference mode: CANN BatchNorm takes float32 scale and offset"
    return None


def _route(info: NodeInfo) -> str:
    return "training" if _training(info) else "inference"


def _leave_to_ep(info: NodeInfo) -> str | None:
    """4-D inference: the CANN EP's own kernel (CANN BatchNorm) runs it; what it gets wrong is placed."""
    return None if defect_of(info) is not None else "4-D inference: the CANN EP's own BatchNormalization kernel"


RULES = (PlaceRule("BatchNormalization", check=_check, route=_route, min_opset=9, leave_to_ep=_leave_to_ep),)
