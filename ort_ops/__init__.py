"""ort_ops: ONNX Runtime custom ops for training on Huawei Ascend NPUs (domain ``ai.ortops``).

Usage::

    import onnxruntime as ort, ort_ops
    so = ort_ops.register(ort.SessionOptions())
    sess = ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])

Importing this package registers the ONNX schemas of its ops with ``onnx.defs`` so that
``onnx.checker`` and ``onnx.shape_inference`` know them.

The graph passes and the CANN EP helpers are subpackages: ``from ort_ops import rewrite``,
``from ort_ops import cann_ep`` (``python -m ort_ops.rewrite``).
"""

from ort_ops import _source_checkout
from ort_ops import schemas as _schemas
from ort_ops.domain import DOMAIN, OPSET_VERSION
from ort_ops.library import get_library_path, register
from ort_ops.ops import OPS

_source_checkout.map_subpackages(__name__)
_schemas.register_all()

__version__ = "0.2.0"
__all__ = ["DOMAIN", "OPS", "OPSET_VERSION", "__version__", "get_library_path", "register"]
