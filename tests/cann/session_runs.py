"""Running one op model in tests of ai.ortops kernels on CANN: on the CPU EP for comparison, on a
CANN session counting the ACL ops it launched, and comparing outputs bit for bit."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort

import ort_ops
from ort_ops import ort_io


def cpu(model, feeds) -> list[np.ndarray]:
    """``model``'s outputs on the CPU EP with the op library registered."""
    so = ort.SessionOptions()
    so.register_custom_ops_library(ort_ops.get_library_path())
    return ort_io.run(ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]), feeds)


def launched_by(session, feeds) -> tuple[list[np.ndarray], dict[str, int]]:
    """One run of ``session``: its outputs and the ACL ops it launched (op type -> count)."""
    from ort_ops.cann_ep import sim

    before = sim.op_counts()
    got = ort_io.run(session, feeds)
    after = sim.op_counts()
    return got, {op: after[op] - before.get(op, 0) for op in after if after[op] != before.get(op, 0)}


def assert_bits(got, want) -> None:
    """Outputs with the same dtypes, shapes and bytes."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8))
