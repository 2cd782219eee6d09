"""``Gather`` whose indices are a constant run of consecutive positions (a scalar index, as torch's
``select`` and ``x[:, i]`` export, is a run of one) -> one CANN ``Slice`` of that run. Other
indices would need CANN ``GatherV2``, which hicann/ops-nn's README lists for Ascend 950 only."""

import numpy as np

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule


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


def _check(info: NodeInfo) -> str | None:
    indices = info.constants[1]
    if indices is None:
        return "indices computed at run time: only a constant run of consecutive indices is placed (CANN GatherV2 " \
               "is Ascend 950 only)"
    shape = info.input_shapes[0]
    axis = info.attr("axis", 0)
    dim = None
    if shape is not None and -len(shape) <= axis < len(shape):
        dim = shape[axis]
    if not consecutive_run(np.asarray(indices), dim if isinstance(dim, int) else None):
        return f"indices {np.asarray(indices).reshape(-1)[:8].tolist()} are not a run of consecutive positions " \
               "(CANN GatherV2 is Ascend 950 only)"
    return None


RULES = (PlaceRule("Gather", check=_check),)
