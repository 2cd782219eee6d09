"""The op contract (tests/ops/contract.py) for every op of ort_ops.ops on the CPU EP, and the
check that the compiled library registers exactly the kernels the definitions list."""

from __future__ import annotations

import os

import numpy as np
import pytest

from contract import (
    assert_bit_exact,
    assert_empty,
    assert_matches,
    assert_reference_evaluator,
    assert_schema_inference,
    assert_shape_mismatch_names_both,
    cases,
    elementwise_only,
    feeds_of,
    inputs_for,
    op_dtype_cases,
    produced,
)
from op_helpers import make_session
from ort_ops import dtypes, ort_io
from ort_ops.domain import DOMAIN
from ort_ops.library import kernel_signatures
from ort_ops.model_builder import make_op_model
from ort_ops.ops import OPS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("op, dtype, attrs", cases())
def test_bit_exact_against_the_reference(op, dtype, attrs):
    assert_bit_exact(make_session(make_op_model(op, dtype, (7, 33), **attrs)), op, dtype, attrs)


@pytest.mark.parametrize("op, dtype", op_dtype_cases())
def test_empty_tensors(op, dtype):
    elementwise_only(op)
    assert_empty(make_session(make_op_model(op, dtype, [0, 5])), op, dtype)


@pytest.mark.parametrize("op, dtype", op_dtype_cases())
def test_shape_mismatch_names_both_shapes(op, dtype):
    assert_shape_mismatch_names_both(make_session, op, dtype)


@pytest.mark.parametrize("op, dtype", op_dtype_cases())
def test_schema_inference(op, dtype):
    assert_schema_inference(op, dtype)


@pytest.mark.parametrize("op, dtype, attrs", cases())
def test_reference_evaluator(op, dtype, attrs):
    assert_reference_evaluator(op, dtype, attrs)


@pytest.mark.parametrize("op, dtype", op_dtype_cases())
def test_lowering_is_exact(op, dtype):
    """Lowered to standard ONNX, the op computes the same bits in ORT (random values; the edge
    cases of each lowering are its own tests, e.g. tests/rewrite/test_lower.py)."""
    from ort_ops.rewrite.lower import LOWERINGS
    from ort_ops.rewrite.validation import session

    assert op.name in LOWERINGS, f"{op.name} has no lowering to standard ONNX (rewrite/lower.py LOWERINGS)"
    model = make_op_model(op, dtype, (7, 33))
    lowered = LOWERINGS[op.name](model)
    assert all(n.domain != op.domain for n in lowered.graph.node)
    if op.elementwise:
        rng = np.random.default_rng(9)
        arrays = [rng.uniform(-3, 3, (7, 33)).astype(np.float32).astype(dtypes.numpy_dtype(dtype)) for _ in op.inputs]
    else:
        arrays = inputs_for(op, dtype, None, seed=9)
    feeds = feeds_of(op, arrays)
    want = ort_io.run(make_session(model), feeds)
    got = ort_io.run(session(lowered), feeds)
    for (t, _), g, w in zip(produced(op, op.outputs_of(*arrays)), got, want):
        assert_matches(g, w, op, dtype, f"lowered {op.name} output {t.name}")


def test_library_registers_exactly_the_defined_kernels():
    registered = sorted((k.op, k.provider, tuple(map(dtypes.name_of_elem, k.inputs)),
                         tuple(map(dtypes.name_of_elem, k.outputs))) for k in kernel_signatures() if k.domain == DOMAIN)
    defined = sorted((op.name, ep, tuple(op.dtype_of(t, d) for t in op.inputs),
                      tuple(op.dtype_of(t, d) for t in op.outputs))
                     for op in OPS for ep in op.providers for d in op.dtypes)
    assert registered == defined


def test_every_op_has_a_docs_page_that_states_its_definition():
    for op in OPS:
        path = os.path.join(ROOT, "docs", "ops", f"{op.name}.md")
        assert os.path.isfile(path), f"docs/ops/{op.name}.md is missing"
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for tensor in (*op.inputs, *op.outputs):
            assert f"`{tensor.name}`" in text, (op.name, tensor.name)
        for attribute in op.attributes:
            assert f"`{attribute.name}`" in text and f"default {attribute.default}" in text, (op.name, attribute.name)
        for dtype in op.dtypes:
            assert dtype in text, (op.name, dtype)
