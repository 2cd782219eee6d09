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


def at_offset(array: np.ndarray, offset: int) -> tuple[np.ndarray, np.ndarray]:
    """A copy of ``array`` whose data starts ``offset`` bytes into a fresh buffer (any address,
    even one not aligned to the element size). Returns (the buffer, the view); keep both alive."""
    raw = np.zeros(array.nbytes + offset + 1, np.uint8)
    view = raw[offset:offset + array.nbytes].view(array.dtype).reshape(array.shape)
    view[...] = array
    return raw, view


def run_elu_grad_bound(session, grads, activations, offsets=(0, 0, 0)) -> np.ndarray:
    """EluGrad through IOBinding with the inputs and the output at the given byte offsets."""
    keep = [at_offset(grads, offsets[0]), at_offset(activations, offsets[1]),
            at_offset(np.zeros_like(grads), offsets[2])]
    (_, g), (_, a), (_, y) = keep
    binding = session.io_binding()
    elem = {np.dtype(np.float32): np.float32, np.dtype(np.float16): np.float16}.get(g.dtype)
    for name, view in (("grads", g), ("activations", a)):
        binding.bind_ortvalue_input(name, ort_io.to_ort_value_view(view))
    if elem is None:  # bfloat16: bound by its bits
        binding.bind_ortvalue_output("y", ort_io.to_ort_value_view(y))
    else:
        binding.bind_output("y", "cpu", 0, elem, list(y.shape), y.ctypes.data)
    session.run_with_iobinding(binding)
    return y.copy()
