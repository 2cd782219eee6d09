"""The element types EluGrad supports, by name, NumPy dtype and ONNX TensorProto code."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from onnx import TensorProto

# name -> (numpy dtype, onnx elem_type)
SUPPORTED = {
    "float32": (np.dtype(np.float32), TensorProto.FLOAT),
    "float16": (np.dtype(np.float16), TensorProto.FLOAT16),
    "bfloat16": (np.dtype(ml_dtypes.bfloat16), TensorProto.BFLOAT16),
}
_ALIASES = {"float": "float32", "fp32": "float32", "half": "float16", "fp16": "float16",
            "bf16": "bfloat16"}


def canonical_name(dtype) -> str:
    """'float32' / 'float16' / 'bfloat16' for any spelling or NumPy dtype of a supported type."""
    if isinstance(dtype, str):
        name = _ALIASES.get(dtype, dtype)
        if name in SUPPORTED:
            return name
    else:
        try:
            np_dtype = np.dtype(dtype)
        except TypeError:
            np_dtype = None
        for name, (supported, _) in SUPPORTED.items():
            if np_dtype == supported:
                return name
    raise TypeError(
        f"unsupported dtype {dtype!r}: expected one of {', '.join(SUPPORTED)}"
    )


def numpy_dtype(dtype) -> np.dtype:
    return SUPPORTED[canonical_name(dtype)][0]


def onnx_type(dtype) -> int:
    return SUPPORTED[canonical_name(dtype)][1]
