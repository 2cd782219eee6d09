"""The contract every op of the library keeps, on any execution provider: bit-exact against its
NumPy reference, empty tensors, errors for mismatched inputs naming what is wrong, schema
inference, the ONNX reference evaluator, lowering to standard ONNX. Used by
tests/ops/test_contract.py (CPU EP) and tests/cann/test_contract_on_cann.py (CANN EP)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from ort_ops import dtypes, ort_io
from ort_ops.model_builder import make_op_model
from ort_ops.ops import OPS
from ort_ops.reference import OPS as REFERENCE_OPS

SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30,
                    65504.0, -65504.0], np.float32)


def cases():
    """(op, dtype, attributes) for every op, dtype and example attribute set."""
    out = []
    for op in OPS:
        for dtype in op.dtypes:
            for attrs in ({}, *op.examples):
                out.append(pytest.param(op, dtype, attrs, id=f"{op.name}-{dtype}-{attrs or 'defaults'}"))
    return out


def op_dtype_cases():
    return [pytest.param(op, dtype, id=f"{op.name}-{dtype}") for op in OPS for dtype in op.dtypes]


def inputs_for(op, dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    np_dtype = dtypes.numpy_dtype(dtype)
    arrays = []
    for i in range(len(op.inputs)):
        x = rng.uniform(-3, 3, shape).astype(np.float32)
        flat = x.reshape(-1)
        if flat.size >= SPECIAL.size:  # every special value in every input, at shifting places
            flat[i: i + SPECIAL.size] = np.roll(SPECIAL, 3 * i)
        with np.errstate(over="ignore", invalid="ignore"):
            arrays.append(x.astype(np_dtype))
    return arrays


def bits(x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x)
    return x.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])


def assert_bit_exact(session, op, dtype, attrs, shape=(7, 33)):
    feeds = dict(zip((t.name for t in op.inputs), inputs_for(op, dtype, shape)))
    (y,) = ort_io.run(session, feeds)
    want = op.reference(*feeds.values(), **{**op.defaults(), **attrs})
    assert y.dtype == want.dtype and y.shape == want.shape
    np.testing.assert_array_equal(bits(y), bits(want))


def assert_empty(session, op, dtype):
    np_dtype = dtypes.numpy_dtype(dtype)
    feeds = {t.name: np.zeros((0, 5), np_dtype) for t in op.inputs}
    (y,) = ort_io.run(session, feeds)
    assert y.shape == (0, 5) and y.dtype == np_dtype


def assert_shape_mismatch_names_both(make_session, op, dtype):
    if len(op.inputs) < 2:
        pytest.skip(f"{op.name} has one input")
    model = make_op_model(op, dtype, None, input_shapes=[["a", "b"]] * len(op.inputs))
    session = make_session(model)
    np_dtype = dtypes.numpy_dtype(dtype)
    feeds = {t.name: np.zeros((2, 3), np_dtype) for t in op.inputs}
    feeds[op.inputs[1].name] = np.zeros((3, 2), np_dtype)
    with pytest.raises(Exception, match=r"\[2, 3\].*\[3, 2\]"):
        ort_io.run(session, feeds)


def assert_schema_inference(op, dtype):
    model = make_op_model(op, dtype, (3, 4))
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    out = {vi.name: vi for vi in inferred.graph.output}[op.outputs[0].name].type.tensor_type
    assert out.elem_type == dtypes.onnx_type(dtype)
    assert [d.dim_value for d in out.shape.dim] == [3, 4]
    if len(op.inputs) > 1:
        other = next(d for d in op.dtypes if d != dtype)
        bad = make_op_model(op, dtype, (3, 4), input_dtypes=[dtype, other] + [dtype] * (len(op.inputs) - 2))
        with pytest.raises(onnx.shape_inference.InferenceError, match=f"{op.inputs[0].name}.*{op.inputs[1].name}"):
            onnx.shape_inference.infer_shapes(bad, strict_mode=True)
        bad_shape = make_op_model(op, dtype, (3, 4), input_shapes=[(3, 4), (4, 3)] + [(3, 4)] * (len(op.inputs) - 2))
        with pytest.raises(onnx.shape_inference.InferenceError, match=r"\[3, 4\].*\[4, 3\]"):
            onnx.shape_inference.infer_shapes(bad_shape, strict_mode=True)


def assert_reference_evaluator(op, dtype, attrs):
    model = make_op_model(op, dtype, (5, 6), **attrs)
    feeds = dict(zip((t.name for t in op.inputs), inputs_for(op, dtype, (5, 6), seed=3)))
    (y,) = onnx.reference.ReferenceEvaluator(model, new_ops=list(REFERENCE_OPS)).run(None, feeds)
    want = op.reference(*feeds.values(), **{**op.defaults(), **attrs})
    np.testing.assert_array_equal(bits(np.asarray(y)), bits(want))
