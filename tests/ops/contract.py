"""The contract every op of the library keeps, on any execution provider: bit-exact against its
NumPy reference, empty tensors, errors for mismatched inputs naming what is wrong, schema
inference, the ONNX reference evaluator, lowering to standard ONNX. Used by
tests/ops/test_contract.py (CPU EP) and tests/cann/test_contract_on_cann.py (CANN EP)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from ort_ops import dtypes, ort_io, tolerances
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


def inputs_for(op, dtype, shape, seed=0, attrs=None):
    """Inputs to run ``op`` on: an elementwise op's of ``shape``, uniform in [-3, 3) with every
    special value; other ops' from their ``sample_inputs`` (None: an omitted optional input)."""
    rng = np.random.default_rng(seed)
    if not op.elementwise:
        return op.sample_inputs(dtype, {**op.defaults(), **(attrs or {})}, rng)
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


def assert_matches(got, want, op, dtype, what=""):
    """``got`` equals ``want`` bit for bit (``op.exact``) or within the dtype's tolerance."""
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, want.dtype, got.shape, want.shape)
    if op.exact or want.dtype.kind in "iub":
        np.testing.assert_array_equal(bits(got), bits(want), err_msg=what)
        return
    closeness = tolerances.check(got, want)
    assert closeness.ok, f"{what}: {closeness.message}"


def feeds_of(op, arrays) -> dict:
    """Input name -> array, without the omitted optional inputs (None)."""
    return {t.name: a for t, a in zip(op.inputs, arrays) if a is not None}


def produced(op, results) -> list:
    """(output, reference result) for the outputs the reference produces (None: not produced)."""
    return [(t, r) for t, r in zip(op.outputs, results) if r is not None]


def assert_bit_exact(session, op, dtype, attrs, shape=(7, 33)):
    """Every output of the session equals the reference (bit for bit where the op is exact)."""
    arrays = inputs_for(op, dtype, shape, attrs=attrs)
    got = ort_io.run(session, feeds_of(op, arrays))
    want = produced(op, op.outputs_of(*arrays, **attrs))
    assert len(got) == len(want)
    for (t, w), g in zip(want, got):
        assert_matches(g, w, op, dtype, f"{op.name} output {t.name}")


def elementwise_only(op):
    if not op.elementwise:
        pytest.skip(f"{op.name} is not elementwise: its own tests cover empty and mismatched inputs")


def assert_empty(session, op, dtype):
    np_dtype = dtypes.numpy_dtype(dtype)
    feeds = {t.name: np.zeros((0, 5), np_dtype) for t in op.inputs}
    (y,) = ort_io.run(session, feeds)
    assert y.shape == (0, 5) and y.dtype == np_dtype


def assert_shape_mismatch_names_both(make_session, op, dtype):
    elementwise_only(op)
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
    if not op.elementwise:
        model = make_op_model(op, dtype, None)
        graph_inputs = {i.name for i in model.graph.input}
        del model.graph.output[:]
        model.graph.output.extend(onnx.helper.make_empty_tensor_value_info(t.name) for t in op.outputs)
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
        samples = op.sample_inputs(dtype, op.defaults(), np.random.default_rng(0))
        wants = op.outputs_of(*samples)
        outs = {vi.name: vi for vi in (*inferred.graph.output, *inferred.graph.value_info)}
        for t, want in produced(op, wants):
            out = outs[t.name].type.tensor_type
            assert out.elem_type == dtypes.elem_of_numpy(want.dtype), (t.name, out.elem_type)
            assert [d.dim_value for d in out.shape.dim] == list(want.shape), (t.name, out.shape)
        assert graph_inputs
        return
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
    arrays = inputs_for(op, dtype, (5, 6), seed=3, attrs=attrs)
    got = onnx.reference.ReferenceEvaluator(model, new_ops=list(REFERENCE_OPS)).run(None, feeds_of(op, arrays))
    want = produced(op, op.outputs_of(*arrays, **attrs))
    assert len(got) == len(want)
    for y, (_, w) in zip(got, want):
        np.testing.assert_array_equal(bits(np.asarray(y)), bits(w))
