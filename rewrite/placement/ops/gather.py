"""``Gather`` and ``GatherND`` -> the kernels of ``placed/gather.cc``, a gather of
positions: a run of consecutive ones is one CANN ``Slice`` (Gather's constant run: a scalar index, as
torch's ``select`` and ``x[:, i]`` export, is a run of one); other positions (an embedding's token ids,
read on the host) are CANN ``Expand`` of the int32 positions and ``GatherElementsV2``
(float32/float16/bfloat16/int32 data; Atlas A2/A3). CANN's ``GatherV2`` and ``GatherNd`` are
Ascend 950 only (hicann/ops-nn's READMEs)."""

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


def _gather_nd_check(info: NodeInfo) -> str | None:
    if info.input_types[0] not in GATHER_ELEMENTS_TYPES:
        return "CANN GatherElementsV2 takes float32, float16, bfloat16 or int32 data (CANN GatherNd is Ascend 950 only)"
    shape = info.input_shapes[1]
    if shape is not None and (len(shape) == 0 or shape[-1] == 0):
        return f"indices of shape {list(shape)}: a last dim of at least 1 is placed"
    return None


RULES = (
    PlaceRule("Gather", check=_check, route=_route),
    # GatherND -> the same positions along the data's batch dims and the K dims after them flattened:
    # Slice of a run, else Expand + GatherElementsV2 (indices read on the host; adaptive pooling exports it).
    PlaceRule("GatherND", check=_gather_nd_check, min_opset=11),
)
