"""The simulator's CANN MseLoss and MseLossGrad (hicann/ops-nn loss/mse_loss, loss/mse_loss_grad):
float32 math, the loss summed in element order (times float32(1 / N) for "mean"), the gradient
((predict - label) * cof) * dout with cof = float32(2 / N) or 2, one rounding; checked against NumPy
written here (not the op's reference), and the tilings' refusals."""

import numpy as np
import pytest

from acl_ctypes import (
    ACL_ERROR_OP_ATTR_NOT_MATCH,
    ACL_ERROR_OP_INPUT_NOT_MATCH,
    ACL_ERROR_UNSUPPORTED_DATA_TYPE,
    ACL_FLOAT,
    ACL_INT32,
    BF16,
    acl_dtype,
    assert_bits_equal,
    run_ops,
)

pytestmark = pytest.mark.usefixtures("sim_dir")
DTYPES = pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16], ids=["float32", "float16", "bfloat16"])


def expected_loss(p, t, reduction, dtype):
    d = p.astype(np.float32) - t.astype(np.float32)
    sq = d * d
    if reduction == "none":
        return sq.astype(dtype)
    total = np.cumsum(sq.reshape(-1), dtype=np.float32)[-1]  # element order, float32
    if reduction == "mean":
        total = total * np.float32(1.0 / sq.size)
    return np.array([total], np.float32).astype(dtype)


def expected_grad(p, t, dout, reduction, dtype):
    d = p.astype(np.float32) - t.astype(np.float32)
    cof = np.float32(2.0 / d.size) if reduction == "mean" else np.float32(2.0)
    return ((d * cof) * dout.astype(np.float32)).astype(dtype)


@DTYPES
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_and_grad(tmp_path, dtype, reduction):
    rng = np.random.default_rng(1)
    p = rng.normal(0, 3, (6, 7)).astype(np.float32).astype(dtype)
    t = rng.normal(0, 3, (6, 7)).astype(np.float32).astype(dtype)
    scalar = np.array([1.75], np.float32).astype(dtype)
    full = rng.normal(0, 1, (6, 7)).astype(np.float32).astype(dtype)
    loss_dims = [6, 7] if reduction == "none" else [1]
    cases = [("MseLoss", [p, t], [(acl_dtype(dtype), loss_dims)], {"reduction": reduction}),
             ("MseLossGrad", [p, t, scalar], [(acl_dtype(dtype), [6, 7])], {"reduction": reduction}),
             ("MseLossGrad", [p, t, full], [(acl_dtype(dtype), [6, 7])], {"reduction": reduction})]
    (rc0, m0, (loss,)), (rc1, m1, (g1,)), (rc2, m2, (g2,)) = run_ops(tmp_path, cases)
    assert (rc0, m0, rc1, m1, rc2, m2) == (0, None, 0, None, 0, None)
    assert_bits_equal(loss, expected_loss(p, t, reduction, dtype))
    assert_bits_equal(g1, expected_grad(p, t, scalar, reduction, dtype))
    assert_bits_equal(g2, expected_grad(p, t, full, reduction, dtype))


def test_default_reduction_is_mean(tmp_path):
    p, t = np.arange(6, dtype=np.float32), np.zeros(6, np.float32)
    cases = [("MseLoss", [p, t], [(ACL_FLOAT, [1])], None),
             ("MseLossGrad", [p, t, np.ones(1, np.float32)], [(ACL_FLOAT, [6])], None)]
    (rc0, _, (loss,)), (rc1, _, (g,)) = run_ops(tmp_path, cases)
    assert rc0 == rc1 == 0
    assert_bits_equal(loss, expected_loss(p, t, "mean", np.float32))
    assert_bits_equal(g, expected_grad(p, t, np.ones(1, np.float32), "mean", np.float32))


def test_refusals(tmp_path):
    f = np.ones((2, 3), np.float32)
    cases = [
        ("MseLoss", [f, f], [(ACL_FLOAT, [1])], {"reduction": "avg"}),
        ("MseLoss", [f, np.ones((3, 2), np.float32)], [(ACL_FLOAT, [1])], None),
        ("MseLoss", [f, f.astype(np.float16)], [(ACL_FLOAT, [1])], None),
        ("MseLoss", [f.astype(np.int32), f.astype(np.int32)], [(ACL_INT32, [1])], None),
        ("MseLossGrad", [f, f, np.ones(2, np.float32)], [(ACL_FLOAT, [2, 3])], None),
        ("MseLossGrad", [f, f, np.ones(1, np.float16)], [(ACL_FLOAT, [2, 3])], None),
        ("MseLossGrad", [f, f, np.ones(1, np.float32)], [(ACL_FLOAT, [2, 3])], {"reduction": "max"}),
        ("MseLossGrad", [np.ones((0, 3), np.float32)] * 2 + [np.ones(1, np.float32)], [(ACL_FLOAT, [0, 3])], None),
    ]
    results = run_ops(tmp_path, cases)
    codes = [rc for rc, _, _ in results]
    assert codes[0] == ACL_ERROR_OP_ATTR_NOT_MATCH and "reduction" in results[0][1]
    assert codes[1] == ACL_ERROR_OP_INPUT_NOT_MATCH and "[2,3]" in results[1][1].replace(" ", "")
    assert codes[2] != 0 and "label" in results[2][1]
    assert codes[3] == ACL_ERROR_UNSUPPORTED_DATA_TYPE
    assert codes[4] == ACL_ERROR_OP_INPUT_NOT_MATCH and "dout" in results[4][1]
    assert codes[5] != 0 and "dout" in results[5][1]
    assert codes[6] == ACL_ERROR_OP_ATTR_NOT_MATCH
    assert codes[7] == ACL_ERROR_OP_INPUT_NOT_MATCH and "empty" in results[7][1]

