"""``Dropout`` (opset 12+: data, ratio?, training_mode?; seed) in training mode -> CANN ``DropOutGenMask`` +
``DropOutDoMask`` (route ``default``: 2 launches), plus ``DropOutDoMask`` + ``Cast`` for the ONNX mask
where the node's output 1 is read (route ``mask``: 4 launches; an unread mask, which exporters name
anyway, is unnamed when placed); the kernel reads ratio and training_mode on
the host (``ort_ops/csrc/placed/dropout.cc``). A node whose training_mode is absent or a constant false
is an identity the CANN EP's own kernel copies: left to it."""

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule


def _constant_false_training(info: NodeInfo) -> str | None:
    if not info.present(2):
        return "inference-mode Dropout (no training_mode): the CANN EP's kernel copies the input"
    value = info.constants[2] if len(info.constants) > 2 else None
    if value is not None and value.size == 1 and not bool(value.reshape(-1)[0]):
        return "inference-mode Dropout (training_mode a constant false): the CANN EP's kernel copies the input"
    return None


def _check(info: NodeInfo) -> str | None:
    for index, what in ((1, "ratio"), (2, "training_mode")):
        value = info.constants[index] if info.present(index) and len(info.constants) > index else None
        if value is not None and value.size != 1:
            return f"{what} of shape {list(value.shape)} is not a scalar"
    ratio = info.constants[1] if info.present(1) and len(info.constants) > 1 else None
    if ratio is not None and ratio.size == 1 and not 0.0 <= float(ratio.reshape(-1)[0]) < 1.0:
        return f"ratio is {float(ratio.reshape(-1)[0])}, expected a value in [0, 1) (ONNX Dropout)"
    return None


def _route(info: NodeInfo) -> str:
    outputs = info.node.output
    return "mask" if len(outputs) > 1 and outputs[1] != "" else "default"


RULES = (PlaceRule("Dropout", check=_check, min_opset=12, leave_to_ep=_constant_false_training, route=_route,
                   drops_unread_outputs=True),)
