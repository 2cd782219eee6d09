"""The op contract (tests/ops/contract.py) for every op of ort_ops.ops on the CANN EP (the ACL
simulator without an NPU), each run profile-checked to have happened on CANNExecutionProvider."""

from __future__ import annotations

import pytest

from contract import (
    assert_bit_exact,
    assert_empty,
    assert_shape_mismatch_names_both,
    cases,
    elementwise_only,
    op_dtype_cases,
)
from ort_ops.model_builder import make_op_model

cann_ep = pytest.importorskip("ort_ops.cann_ep")
PROVIDER = "CANNExecutionProvider"


pytestmark = pytest.mark.usefixtures("cann_simulator")


def _ran_on_cann(session, op):
    runs = cann_ep.node_runs(session)
    assert {(r.op_type, r.provider) for r in runs if r.op_type == op.name} == {(op.name, PROVIDER)}


def _cann_ops(op):
    if PROVIDER not in op.providers:
        pytest.skip(f"{op.name} has no CANN kernel")


@pytest.mark.parametrize("op, dtype, attrs", cases())
def test_bit_exact_on_cann(op, dtype, attrs, tmp_path):
    _cann_ops(op)
    session = cann_ep.session(make_op_model(op, dtype, (7, 33), **attrs), profile_prefix=str(tmp_path / "p"))
    assert_bit_exact(session, op, dtype, attrs)
    _ran_on_cann(session, op)


@pytest.mark.parametrize("op, dtype", op_dtype_cases())
def test_empty_tensors_on_cann(op, dtype):
    _cann_ops(op)
    elementwise_only(op)
    assert_empty(cann_ep.session(make_op_model(op, dtype, [0, 5])), op, dtype)


@pytest.mark.parametrize("op, dtype", op_dtype_cases())
def test_shape_mismatch_on_cann(op, dtype):
    _cann_ops(op)
    assert_shape_mismatch_names_both(cann_ep.session, op, dtype)
