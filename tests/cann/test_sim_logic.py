"""Comparisons (Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual), logical ops
(LogicalNot, LogicalAnd, LogicalOr) and SelectV2 on the simulator, against NumPy: every dtype
the contract lists, NumPy broadcasting patterns (incl. scalar [1] against [N, C], [N, 1] against
[1, C], and empty tensors, which CANN's broadcast ops accept), NaN and -0.0, and the errors.

Semantics (mindspore-ai/graphengine@cd75e149 910/third_party/fwkacllib/inc/ops/
elewise_calculation_ops.h: Equal 505, NotEqual 709, Less 192, LessEqual 637, Greater 1643,
GreaterEqual 170, LogicalOr 1061, LogicalAnd 1104, LogicalNot 1684; selection_ops.h:756 SelectV2):
IEEE comparisons (NaN compares unequal, -0.0 == +0.0) giving bool; ordering comparisons take
RealNumberType (no bool); SelectV2 is a broadcasting where(condition, then, else).
"""

import numpy as np
import pytest

from acl_ctypes import (
    ACL_BOOL,
    ACL_ERROR_OP_INPUT_NOT_MATCH,
    ACL_ERROR_OP_OUTPUT_NOT_MATCH,
    ACL_ERROR_UNSUPPORTED_DATA_TYPE,
    ACL_FLOAT,
    BF16,
    acl_dtype,
    assert_bits_equal,
    run_ops,
)

pytestmark = pytest.mark.usefixtures("sim_dir")

COMPARE = {"Equal": np.equal, "NotEqual": np.not_equal, "Less": np.less, "LessEqual": np.less_equal,
           "Greater": np.greater, "GreaterEqual": np.greater_equal}
DTYPES = [np.float32, np.float16, BF16, np.float64, np.int32, np.int64]
IDS = ["float32", "float16", "bfloat16", "float64", "int32", "int64"]
# (x1 shape, x2 shape): same shape, scalar [1] both ways, [N,1] x [1,C], rank extension, empty.
BROADCAST = [((2, 3), (2, 3)), ((2, 3), (1,)), ((1,), (2, 3)), ((4, 1), (1, 5)), ((2, 1, 3), (4, 1)),
             ((3,), (2, 3)), ((0, 3), (1, 3))]


def sample(rng, shape, dtype):
    """Small integers with repeats (so equality happens), plus NaN / -0.0 for float types."""
    a = rng.integers(-3, 4, shape).astype(np.float64)
    if np.dtype(dtype).kind == "f" or dtype is BF16:
        flat = a.reshape(-1)
        if flat.size >= 3:
            flat[0], flat[1], flat[2] = np.nan, -0.0, 0.0
    return a.astype(dtype)


def out_shape(*shapes):
    return np.broadcast_shapes(*shapes)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_comparisons_match_numpy_for_every_broadcast_pattern(tmp_path, dtype):
    rng = np.random.default_rng(1)
    cases, refs = [], []
    for sa, sb in BROADCAST:
        a, b = sample(rng, sa, dtype), sample(rng, sb, dtype)
        for op, fn in COMPARE.items():
            cases.append((op, [a, b], [(ACL_BOOL, list(out_shape(sa, sb)))], None))
            with np.errstate(invalid="ignore"):
                refs.append(fn(a.astype(np.float64), b.astype(np.float64)))
    for (rc, msg, (y,)), ref, case in zip(run_ops(tmp_path, cases), refs, cases):
        assert rc == 0 and msg is None, (case[0], msg)
        assert_bits_equal(y, ref)


def test_equal_and_not_equal_take_bool_ordering_comparisons_do_not(tmp_path):
    a = np.array([[True, False, True]])
    b = np.array([[True], [False]])
    results = run_ops(tmp_path, [
        ("Equal", [a, b], [(ACL_BOOL, [2, 3])], None),
        ("NotEqual", [a, b], [(ACL_BOOL, [2, 3])], None),
        ("Less", [a, b], [(ACL_BOOL, [2, 3])], None),
        ("Equal", [a, b.astype(np.int32)], [(ACL_BOOL, [2, 3])], None),
        ("Equal", [a, b], [(ACL_FLOAT, [2, 3])], None),
        ("Equal", [a, np.zeros((2, 2), bool)], [(ACL_BOOL, [2, 3])], None),
    ])
    assert_bits_equal(results[0][2][0], a == b)
    assert_bits_equal(results[1][2][0], a != b)
    assert results[2][0] == ACL_ERROR_UNSUPPORTED_DATA_TYPE and "Less: input 0 (x1) has unsupported dtype ACL_BOOL" \
        in results[2][1]
    assert results[3][0] == ACL_ERROR_OP_INPUT_NOT_MATCH and \
        "input 1 (x2) has dtype ACL_INT32, expected ACL_BOOL (the dtype of input 0 (x1))" in results[3][1]
    assert results[4][0] == ACL_ERROR_OP_OUTPUT_NOT_MATCH and "output 0 has dtype ACL_FLOAT, expected ACL_BOOL" \
        in results[4][1]
    assert results[5][0] == ACL_ERROR_OP_INPUT_NOT_MATCH and "input shapes [1,3] and [2,2] cannot be broadcast" \
        in results[5][1]


def test_logical_ops(tmp_path):
    rng = np.random.default_rng(2)
    cases, refs = [], []
    for sa, sb in BROADCAST:
        a, b = rng.integers(0, 2, sa).astype(bool), rng.integers(0, 2, sb).astype(bool)
        shape = list(out_shape(sa, sb))
        cases += [("LogicalAnd", [a, b], [(ACL_BOOL, shape)], None), ("LogicalOr", [a, b], [(ACL_BOOL, shape)], None)]
        refs += [np.logical_and(a, b), np.logical_or(a, b)]
        cases.append(("LogicalNot", [a], [(ACL_BOOL, list(sa))], None))
        refs.append(np.logical_not(a))
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(y, ref)


def test_logical_ops_reject_non_bool(tmp_path):
    f = np.ones(3, np.float32)
    results = run_ops(tmp_path, [
        ("LogicalNot", [f], [(ACL_BOOL, [3])], None),
        ("LogicalAnd", [f, f], [(ACL_BOOL, [3])], None),
        ("LogicalOr", [np.ones(3, bool), np.ones(3, bool)], [(ACL_BOOL, [4])], None),
    ])
    assert [r[0] for r in results] == [ACL_ERROR_UNSUPPORTED_DATA_TYPE, ACL_ERROR_UNSUPPORTED_DATA_TYPE,
                                       ACL_ERROR_OP_OUTPUT_NOT_MATCH]
    assert "LogicalNot: input 0 (x) has unsupported dtype ACL_FLOAT" in results[0][1]
    assert "LogicalOr: output 0 has shape [4], expected [3]" in results[2][1]


SELECT_SHAPES = [((2, 3), (2, 3), (2, 3)), ((2, 1), (1, 3), (1,)), ((1,), (2, 3), (2, 3)), ((3,), (2, 1), (1, 3)),
                 ((2, 1, 4), (3, 1), (1,)), ((0, 2), (1, 2), (1,))]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.int32, np.int64, np.bool_],
                         ids=["float32", "float16", "bfloat16", "int32", "int64", "bool"])
def test_select_v2_broadcasts_all_three_inputs(tmp_path, dtype):
    rng = np.random.default_rng(3)
    cases, refs = [], []
    for sc, st, se in SELECT_SHAPES:
        cond = rng.integers(0, 2, sc).astype(bool)
        t = rng.integers(-50, 50, st).astype(dtype)
        e = rng.integers(-50, 50, se).astype(dtype)
        if dtype is np.float32 and t.size:
            t.reshape(-1)[0] = np.float32(np.nan)  # selected as is (bits kept)
        cases.append(("SelectV2", [cond, t, e], [(acl_dtype(dtype), list(out_shape(sc, st, se)))], None))
        refs.append(np.where(cond, t, e))
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(y, ref)


def test_select_v2_errors(tmp_path):
    c = np.array([True, False])
    x = np.ones(2, np.float32)
    results = run_ops(tmp_path, [
        ("SelectV2", [c.astype(np.int32), x, x], [(ACL_FLOAT, [2])], None),
        ("SelectV2", [c, x, x.astype(np.float16)], [(ACL_FLOAT, [2])], None),
        ("SelectV2", [c, x, np.ones(3, np.float32)], [(ACL_FLOAT, [2])], None),
        ("SelectV2", [c, x, x], [(ACL_FLOAT, [2, 2])], None),
        ("SelectV2", [c, x], [(ACL_FLOAT, [2])], None),
    ])
    assert [r[0] for r in results] == [ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_OUTPUT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH]
    assert "SelectV2: input 0 (condition) has dtype ACL_INT32, expected ACL_BOOL" in results[0][1]
    assert "input 2 (else) has dtype ACL_FLOAT16, expected ACL_FLOAT (the dtype of input 1 (then))" in results[1][1]
    assert "SelectV2: shapes [2], [2], [3] cannot be broadcast" in results[2][1]
    assert "output 0 (result) has shape [2,2], expected [2]" in results[3][1]
    assert "SelectV2: expected 3 input(s), got 2" in results[4][1]
