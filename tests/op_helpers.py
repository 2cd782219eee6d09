"""Helpers shared by the op tests: sessions with the op library, bit-exact comparison."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort

import ort_ops
from ort_ops import ort_io


def make_session(model, threads: int | None = None, **options) -> ort.InferenceSession:
    """A CPU session with the op library registered (and optional intra-op thread count)."""
    so = ort_ops.register(ort.SessionOptions())
    if threads is not None:
        so.intra_op_num_threads = threads
    for key, value in options.items():
        setattr(so, key, value)
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def run_elu_grad(session, grads, activations) -> np.ndarray:
    return ort_io.run(session, {"grads": grads, "activations": activations})[0]


def assert_bits_equal(actual: np.ndarray, expected: np.ndarray) -> None:
    """Equal dtype, shape and bit patterns (NaN payloads and signed zeros included)."""
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    a = np.ascontiguousarray(actual).view(np.uint8)
    e = np.ascontiguousarray(expected).view(np.uint8)
    if not np.array_equal(a, e):
        width = actual.dtype.itemsize
        ai = a.reshape(-1, width)
        ei = e.reshape(-1, width)
        bad = np.nonzero((ai != ei).any(axis=1))[0]
        raise AssertionError(
            f"{len(bad)} of {actual.size} elements differ; first at flat index {bad[0]}: "
            f"got {actual.reshape(-1)[bad[0]]!r}, expected {expected.reshape(-1)[bad[0]]!r}"
        )
