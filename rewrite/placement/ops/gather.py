"""``Gather`` -> its kernel's two routes. Constant indices naming a run of consecutive positions (a
scalar index, as torch's ``select`` and ``x[:, i]`` export, is a run of one): one CANN ``Slice`` of
that run. Any other indices (an embedding's token ids, read on the host): CANN ``Expand`` of the
int32 indices and ``GatherElementsV2`` (float32/float16/bfloat16/int32 data; on Atlas A2/A3). The
general CANN ``GatherV2`` is Ascend 950 only (hicann/ops-nn's README)."""

import numpy as np
from onnx import TensorProto

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule

# The data types of CANN GatherElementsV2 (hicann/ops-nn index/gather_elements_v2/op_host/gather_elements_v2_def.cpp).
GATHER_ELEMENTS_TYPES = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.INT32)


def consecutive_run(indices: np.ndarray, dim: int | None) -> bool:
    """Whether ``indices`` (any shape, row-major) name consecutive positions of an axis of ``dim``
    entries (negative ones counted from the end). ``dim`` None (unknown): when all indices have one
    sign, whatever the axis' length (the kernel checks the range when it runs)."""
    flat = indices.reshape(-1).astype(np.int64)
    if flat.size == 0:
        return True
    if dim is not None:
        flat = np.where(flat < 0, flat + dim, flat)
        if (flat < 0).any() or (flat >= dim).any():
            return False
    elif (flat < 0).any() and (flat >= 0).any():
        return False
    return bool(np.array_equal(flat, flat[0] + np.arange(flat.size)))


def _is_run(info: NodeInfo) -> bool:
    indices = info.constants[1]
    if indices is None:
        return False
    shape = info.input_shapes[0]
    axis = info.attr("axis", 0)
    dim = None
    if shape is not None and -len(shape) <= axis < len(shape):
        dim = shape[axis]
    return consecutive_run(np.asarray(indices), dim if isinstance(dim, int) else None)


def _route(info: NodeInfo) -> str:
    return "default" if _is_run(info) else "indices"


def _check(info: NodeInfo) -> str | None:
    if _is_run(info) or info.input_types[0] in GATHER_ELEMENTS_TYPES:
        return None
    return ("indices that are not a constant run of consecutive positions need CANN GatherElementsV2, which "
            "takes float32, float16, bfloat16 or int32 data (CANN GatherV2 is Ascend 950 only)")


RULES = (PlaceRule("Gather", check=_check, route=_route),)
