"""The simulator's CANN LeakyReluGrad (hicann/ops-nn activation/leaky_relu_grad): backprops =
features > 0 ? gradients : gradients * negative_slope, float32 math and one round-to-nearest-even
cast, checked against NumPy written here (not the op's reference), and the tiling's refusals."""

import numpy as np
import pytest

from acl_ctypes import (
    ACL_BF16,
    ACL_FLOAT,
    ACL_FLOAT16,
    ACL_INT32,
    BF16,
    acl_dtype,
    assert_bits_equal,
    run_ops,
)

pytestmark = pytest.mark.usefixtures("sim_dir")


def expected(g, f, slope, dtype):
    g32, f32 = g.astype(np.float32), f.astype(np.float32)
    with np.errstate(invalid="ignore"):
        return np.where(f32 > 0, g32, g32 * np.float32(slope)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16], ids=["float32", "float16", "bfloat16"])
def test_leaky_relu_grad_is_the_strict_select(tmp_path, dtype):
    rng = np.random.default_rng(0)
    f = (rng.standard_normal(64) * 3).astype(np.float32)
    f[:6] = [0.0, -0.0, np.nan, np.inf, -np.inf, 1e-30]
    g = (rng.standard_normal(64) * 3).astype(np.float32)
    g, f = g.astype(dtype), f.astype(dtype)
    cases = [("LeakyReluGrad", [g, f], [(acl_dtype(dtype), [64])], {"negative_slope": s}) for s in (0.2, 0.0, -1.5)]
    cases.append(("LeakyReluGrad", [g, f], [(acl_dtype(dtype), [64])], None))  # default slope 0.0
    results = run_ops(tmp_path, cases)
    for (rc, msg, (y,)), slope in zip(results, (0.2, 0.0, -1.5, 0.0)):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(y, expected(g, f, slope, dtype))
    zero_side = results[1][2][0][:3]  # f = +0, -0, NaN with slope 0: g * 0, not g
    assert np.all(zero_side.astype(np.float32) == 0)


def test_leaky_relu_grad_refusals(tmp_path):
    g = np.ones(4, np.float32)
    results = run_ops(tmp_path, [
        ("LeakyReluGrad", [g, np.ones(4, np.float16)], [(ACL_FLOAT, [4])], None),
        ("LeakyReluGrad", [g, np.ones(5, np.float32)], [(ACL_FLOAT, [4])], None),
        ("LeakyReluGrad", [np.ones(4, np.int32), np.ones(4, np.int32)], [(ACL_INT32, [4])], None),
        ("LeakyReluGrad", [g, g], [(ACL_FLOAT16, [4])], None),
        ("LeakyReluGrad", [g], [(ACL_BF16, [4])], None),
    ])
    messages = [msg for _, msg, _ in results]
    assert all(rc != 0 for rc, _, _ in results), results
    assert "input 1 (features)" in messages[0] and "input 0 (gradients)" in messages[0]
    assert "input 1 (features)" in messages[1] and "shape" in messages[1]
    assert "input 0 (gradients)" in messages[2]
    assert "output 0 (backprops)" in messages[3]
