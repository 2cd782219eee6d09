"""NumPy references of the ``ai.ortops`` ops: plain functions and ``onnx.reference`` OpRuns.

``onnx.reference.ReferenceEvaluator(model, new_ops=ort_ops.reference.OPS)`` runs models
that contain these ops.
"""

from ort_ops.reference.elu_grad import EluGrad, elu_grad

OPS = (EluGrad,)

__all__ = ["EluGrad", "OPS", "elu_grad"]
