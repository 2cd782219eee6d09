"""ONNX schemas of the ``ai.ortops`` ops, registered with ``onnx.defs`` once per process."""

import onnx.defs

from ort_ops.schemas import elu_grad

SCHEMAS = (elu_grad.SCHEMA,)


def register_all() -> None:
    """Register every schema that ``onnx.defs`` does not know yet (safe to call repeatedly)."""
    for schema in SCHEMAS:
        if not onnx.defs.has(schema.name, schema.since_version, schema.domain):
            onnx.defs.register_schema(schema)
