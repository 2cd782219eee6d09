"""Feeding and fetching NumPy arrays of every supported dtype (bfloat16 included) through ORT.

``onnxruntime``'s ``InferenceSession.run`` rejects ``ml_dtypes.bfloat16`` arrays and cannot
return bfloat16 outputs; these helpers go through ``OrtValue`` instead.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping, Sequence

import ml_dtypes
import numpy as np
import onnxruntime as ort
from onnx import TensorProto

_BF16 = np.dtype(ml_dtypes.bfloat16)


def _bfloat16_value(array: np.ndarray) -> ort.OrtValue:
    make = getattr(ort.OrtValue, "ortvalue_from_numpy_with_onnx_type", None)
    if make is None:  # (added in onnxruntime 1.20)
        raise RuntimeError(f"bfloat16 arrays need onnxruntime >= 1.20 to be passed to ORT from NumPy "
                           f"(this is {ort.__version__}): cast to float32 in the model instead")
    return make(array.view(np.uint16), TensorProto.BFLOAT16)


def to_ort_value(array: np.ndarray) -> ort.OrtValue:
    """An OrtValue (CPU) holding ``array``; bfloat16 arrays are passed by their bits."""
    array = np.asarray(array)
    if not array.flags.c_contiguous:  # (np.ascontiguousarray would turn 0-D into 1-D)
        array = array.copy(order="C")
    if array.dtype == _BF16:
        return _bfloat16_value(array)
    return ort.OrtValue.ortvalue_from_numpy(array)


def to_ort_value_view(array: np.ndarray) -> ort.OrtValue:
    """An OrtValue (CPU) over ``array``'s own memory (C-contiguous; not copied, at whatever
    address it has): writes through the value show in the array. Keep the array alive."""
    if not array.flags.c_contiguous:
        raise ValueError("to_ort_value_view needs a C-contiguous array")
    if array.dtype == _BF16:
        value = _bfloat16_value(array)
    else:
        value = ort.OrtValue.ortvalue_from_numpy(array)
    if array.size and value.data_ptr() != array.ctypes.data:
        raise RuntimeError("onnxruntime copied the array instead of wrapping it")
    return value


def to_numpy(value: ort.OrtValue) -> np.ndarray:
    """A NumPy copy of a CPU OrtValue; bfloat16 comes back as ``ml_dtypes.bfloat16``."""
    if value.data_type() == "tensor(bfloat16)":
        out = np.empty(value.shape(), dtype=_BF16)
        if out.size:
            ctypes.memmove(out.ctypes.data, value.data_ptr(), out.nbytes)
        return out
    return value.numpy()


def run(
    session: ort.InferenceSession,
    feeds: Mapping[str, np.ndarray],
    output_names: Sequence[str] | None = None,
) -> list[np.ndarray]:
    """``session.run`` that accepts and returns float32, float16 and bfloat16 arrays alike."""
    names = list(output_names) if output_names is not None else [
        o.name for o in session.get_outputs()
    ]
    values = session.run_with_ort_values(
        names, {name: to_ort_value(np.asarray(a)) for name, a in feeds.items()}
    )
    return [to_numpy(v) for v in values]
