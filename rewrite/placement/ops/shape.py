"""Shape-only ops: ``Reshape``, ``Squeeze``, ``Unsqueeze`` (opset 13+ forms: shape/axes inputs),
``Flatten``, ``Identity`` -> a device-to-device copy (no CANN op). Their shape/axes inputs are
read on the host: constants stay there, computed ones are copied once per run."""

from ort_ops.rewrite.placement.rule import PlaceRule, fixed

_NONE = fixed()

RULES = (
    PlaceRule("Reshape", _NONE, min_opset=5),
    PlaceRule("Squeeze", _NONE, min_opset=13),
    PlaceRule("Unsqueeze", _NONE, min_opset=13),
    PlaceRule("Flatten", _NONE),
    PlaceRule("Identity", _NONE),
)
