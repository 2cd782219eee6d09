"""MatMulV2 on the simulator (mindspore-ai/graphengine@cd75e149 910/third_party/fwkacllib/inc/ops/
matrix_calculation_ops.h:278: x1, x2, optional bias, optional offset_w; attrs transpose_x1,
transpose_x2, offset_x), bit for bit against a NumPy reference of the simulator's documented
order: acc = 0, then acc += x1[i, p] * x2[p, j] for p increasing, each product and sum rounded to
float32 (no FMA); then + bias in float32; one rounding to y's dtype (int32: wraps).
"""

import numpy as np
import pytest

from acl_ctypes import (
    ABSENT,
    ACL_ERROR_OP_ATTR_NOT_MATCH,
    ACL_ERROR_OP_INPUT_NOT_MATCH,
    ACL_ERROR_OP_OUTPUT_NOT_MATCH,
    ACL_ERROR_UNSUPPORTED_DATA_TYPE,
    ACL_FLOAT,
    ACL_FLOAT16,
    BF16,
    acl_dtype,
    assert_bits_equal,
    run_ops,
)

pytestmark = pytest.mark.usefixtures("sim_dir")


def matmul_ref(a, b, bias, ta, tb, out_dtype):
    """k-order float32 accumulation (int32: wrapping int64 arithmetic)."""
    a = a.T if ta else a
    b = b.T if tb else b
    if np.dtype(out_dtype) == np.int32:
        acc = np.zeros((a.shape[0], b.shape[1]), np.int64)
        for p in range(a.shape[1]):
            acc = (acc + np.multiply.outer(a[:, p].astype(np.int64), b[p, :].astype(np.int64))) % 2**32
        if bias is not None:
            acc = (acc + bias.astype(np.int64)) % 2**32
        return acc.astype(np.uint32).view(np.int32)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    with np.errstate(all="ignore"):
        for p in range(a.shape[1]):
            acc = acc + np.multiply.outer(a32[:, p], b32[p, :])
        if bias is not None:
            acc = acc + bias.astype(np.float32)
    return acc.astype(out_dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.int32],
                         ids=["float32", "float16", "bfloat16", "int32"])
def test_matmul_v2_transposes_and_bias(tmp_path, dtype):
    rng = np.random.default_rng(8)
    M, K, N = 5, 33, 4
    cases, refs = [], []
    for ta in (False, True):
        for tb in (False, True):
            if dtype is np.int32:
                a = rng.integers(-2**16, 2**16, (K, M) if ta else (M, K)).astype(np.int32)  # products wrap
                b = rng.integers(-2**16, 2**16, (N, K) if tb else (K, N)).astype(np.int32)
                bias = rng.integers(-100, 100, N).astype(np.int32)
            else:
                a = rng.standard_normal((K, M) if ta else (M, K)).astype(dtype)
                b = rng.standard_normal((N, K) if tb else (K, N)).astype(dtype)
                bias = rng.standard_normal(N).astype(dtype)
            attrs = {"transpose_x1": ta, "transpose_x2": tb, "offset_x": 0}
            out = [(acl_dtype(dtype), [M, N])]
            cases += [("MatMulV2", [a, b], out, attrs), ("MatMulV2", [a, b, ABSENT], out, attrs),
                      ("MatMulV2", [a, b, bias, ABSENT], out, attrs)]
            refs += [matmul_ref(a, b, None, ta, tb, dtype)] * 2 + [matmul_ref(a, b, bias, ta, tb, dtype)]
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(y, ref)


def test_float16_inputs_with_a_float32_bias_and_special_values(tmp_path):
    rng = np.random.default_rng(9)
    a = rng.standard_normal((3, 6)).astype(np.float16)
    b = rng.standard_normal((6, 2)).astype(np.float16)
    a[0, 2], a[1, 0], b[3, 1] = np.nan, np.inf, -0.0
    bias32 = np.array([1e-4, -3.0], np.float32)  # kept in float32 until the one final rounding
    f = np.array([[-0.0]], np.float32)
    results = run_ops(tmp_path, [
        ("MatMulV2", [a, b, bias32], [(ACL_FLOAT16, [3, 2])], None),
        ("MatMulV2", [f, f], [(ACL_FLOAT, [1, 1])], None),  # 0 + (-0 * -0) = +0
        ("MatMulV2", [np.zeros((2, 0), np.float32), np.zeros((0, 3), np.float32), np.ones(3, np.float32)],
         [(ACL_FLOAT, [2, 3])], None),  # K = 0: y = bias
    ])
    assert [r[0] for r in results] == [0, 0, 0]
    assert_bits_equal(results[0][2][0], matmul_ref(a, b, bias32, False, False, np.float16))
    assert_bits_equal(results[1][2][0], np.array([[0.0]], np.float32))
    assert_bits_equal(results[2][2][0], np.ones((2, 3), np.float32))


def test_k_order_is_observable(tmp_path):
    """A float64 sum rounded once differs from the k-order float32 result: the order is tested."""
    rng = np.random.default_rng(10)
    a, b = rng.standard_normal((8, 64)).astype(np.float32), rng.standard_normal((64, 8)).astype(np.float32)
    ((rc, _, (y,)),) = run_ops(tmp_path, [("MatMulV2", [a, b], [(ACL_FLOAT, [8, 8])], None)])
    assert rc == 0
    assert_bits_equal(y, matmul_ref(a, b, None, False, False, np.float32))
    assert not np.array_equal(y, (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32))


def test_errors(tmp_path):
    a = np.ones((2, 3), np.float32)
    b = np.ones((3, 4), np.float32)
    out = [(ACL_FLOAT, [2, 4])]
    results = run_ops(tmp_path, [
        ("MatMulV2", [a, b], out, {"offset_x": 1}),
        ("MatMulV2", [a, b, ABSENT, np.ones(4, np.int8)], out, None),
        ("MatMulV2", [np.ones((1, 2, 3), np.float32), b], out, None),
        ("MatMulV2", [a, b], out, {"transpose_x2": True}),
        ("MatMulV2", [a, b, np.ones(3, np.float32)], out, None),
        ("MatMulV2", [a, b, np.ones(4, np.float16)], out, None),
        ("MatMulV2", [a.astype(np.float64), b.astype(np.float64)], out, None),
        ("MatMulV2", [a, b], [(ACL_FLOAT, [4, 2])], None),
        ("MatMulV2", [a.astype(BF16), b.astype(BF16), np.ones(4, np.float32)], [(acl_dtype(BF16), [2, 4])], None),
    ])
    assert [r[0] for r in results] == [ACL_ERROR_OP_ATTR_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_UNSUPPORTED_DATA_TYPE, ACL_ERROR_OP_OUTPUT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH]
    msgs = [r[1] for r in results]
    assert "MatMulV2: attribute offset_x is 1; only 0 is simulated" in msgs[0]
    assert "input 3 (offset_w, int8 quantisation) is not simulated" in msgs[1]
    assert "MatMulV2: x1 and x2 must be 2-D, got [1,2,3] and [3,4]" in msgs[2]
    assert "inner dimensions differ: x1 [2,3] gives K=3 (transpose_x1=0), x2 [3,4] gives K=4 (transpose_x2=1)" \
        in msgs[3]
    assert "input 2 (bias) has shape [3], expected [4]" in msgs[4]
    assert "input 2 (bias) has dtype ACL_FLOAT16, expected ACL_FLOAT (the dtype of x1)" in msgs[5]
    assert "output 0 (y) has shape [4,2], expected [2,4]" in msgs[7]
    assert "input 2 (bias) has dtype ACL_FLOAT, expected ACL_BF16 (the dtype of x1)" in msgs[8]
