"""Element types, the one table of them: names, NumPy dtypes (bfloat16 from ml_dtypes) and ONNX
``TensorProto`` codes. :data:`FLOAT_TYPES` are the float types the ops compute on."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from onnx import TensorProto

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)

# name -> (numpy dtype, onnx elem_type)
TYPES = {
    "float32": (np.dtype(np.float32), TensorProto.FLOAT),
    "float16": (np.dtype(np.float16), TensorProto.FLOAT16),
    "bfloat16": (BFLOAT16, TensorProto.BFLOAT16),
    "float64": (np.dtype(np.float64), TensorProto.DOUBLE),
    "int8": (np.dtype(np.int8), TensorProto.INT8),
    "int16": (np.dtype(np.int16), TensorProto.INT16),
    "int32": (np.dtype(np.int32), TensorProto.INT32),
    "int64": (np.dtype(np.int64), TensorProto.INT64),
    "uint8": (np.dtype(np.uint8), TensorProto.UINT8),
    "uint16": (np.dtype(np.uint16), TensorProto.UINT16),
    "uint32": (np.dtype(np.uint32), TensorProto.UINT32),
    "uint64": (np.dtype(np.uint64), TensorProto.UINT64),
    "bool": (np.dtype(np.bool_), TensorProto.BOOL),
}
# The float types every op of the library supports (its kernels compute in float32, round once).
FLOAT_TYPES = ("float32", "float16", "bfloat16")
SUPPORTED = {name: TYPES[name] for name in FLOAT_TYPES}

_ALIASES = {"float": "float32", "fp32": "float32", "half": "float16", "fp16": "float16", "bf16": "bfloat16",
            "double": "float64", "fp64": "float64"}
_BY_ELEM = {elem: name for name, (_, elem) in TYPES.items()}


def canonical_name(dtype, allowed=FLOAT_TYPES) -> str:
    """'float32' / 'float16' / 'bfloat16' (or any name of ``allowed``) for any spelling, NumPy
    dtype or ONNX code of such a type; ``TypeError`` naming the allowed types otherwise."""
    name = None
    if isinstance(dtype, str):
        name = _ALIASES.get(dtype, dtype)
    elif isinstance(dtype, (int, np.integer)) and not isinstance(dtype, bool):
        name = _BY_ELEM.get(int(dtype))
    else:
        try:
            np_dtype = np.dtype(dtype)
        except TypeError:
            np_dtype = None
        name = next((n for n, (d, _) in TYPES.items() if d == np_dtype), None)
    if name in allowed:
        return name
    raise TypeError(f"unsupported dtype {dtype!r}: expected one of {', '.join(allowed)}")


def numpy_dtype(dtype) -> np.dtype:
    """The NumPy dtype of a supported float type (bfloat16: ``ml_dtypes.bfloat16``)."""
    return TYPES[canonical_name(dtype)][0]


def onnx_type(dtype) -> int:
    """The ONNX ``TensorProto`` code of a supported float type."""
    return TYPES[canonical_name(dtype)][1]


def onnx_type_of(name: str) -> int:
    """The ONNX ``TensorProto`` code of any dtype name of :data:`TYPES` (``KeyError`` otherwise)."""
    return TYPES[_ALIASES.get(name, name)][1]


def elem_of_numpy(dtype) -> int | None:
    """The ONNX element type of a NumPy dtype, None when it has none here."""
    try:
        np_dtype = np.dtype(dtype)
    except TypeError:
        return None
    return next((elem for d, elem in TYPES.values() if d == np_dtype), None)


def name_of_elem(elem: int) -> str | None:
    return _BY_ELEM.get(int(elem))
