"""Shape-only ops: ``Reshape``, ``Squeeze``, ``Unsqueeze`` (opset 13+ forms: shape/axes inputs),
``Flatten``, ``Identity`` -> a device-to-device copy (no CANN op). Their shape/axes inputs are
read on the host: constants stay there, computed ones are copied once per run."""

from ort_ops.rewrite.placement.rule import PlaceRule

RULES = (
    PlaceRule("Reshape", min_opset=5),
    PlaceRule("Squeeze", min_opset=13),
    PlaceRule("Unsqueeze", min_opset=13),
    PlaceRule("Flatten"),
    PlaceRule("Identity"),
)
