"""NumPy references of the ``ai.ortops`` ops: plain functions and ``onnx.reference`` OpRuns,
made from the op definitions (:mod:`ort_ops.ops`).

``onnx.reference.ReferenceEvaluator(model, new_ops=list(ort_ops.reference.OPS))`` runs models
that contain these ops.
"""

from __future__ import annotations

from onnx.reference.op_run import OpRun

from ort_ops.ops import OPS as _DEFINITIONS
from ort_ops.ops import OpDef
from ort_ops.ops.elu_grad import elu_grad


def _op_run(op: OpDef) -> type:
    defaults = op.defaults()

    def _run(self, *inputs, **attributes):
        values = {k: v.decode() if isinstance(v, bytes) else v
                  for k, v in attributes.items() if k in defaults and v is not None}
        results = op.outputs_of(*inputs, **values)
        return tuple(r for r in results if r is not None)  # (optional outputs the node does not produce)

    return type(op.name, (OpRun,), {"op_domain": op.domain, "_run": _run,
                                    "__doc__": f"``{op.domain}::{op.name}`` for onnx.reference.ReferenceEvaluator."})


OPS = tuple(_op_run(op) for op in _DEFINITIONS)
EluGrad = next(cls for cls in OPS if cls.__name__ == "EluGrad")

__all__ = ["EluGrad", "OPS", "elu_grad"]
