"""SoftmaxGrad on the simulator (hicann/ops-nn activation/softmax_grad: proto, README, golden.py):
grad_x = dy * y - sum(dy * y, axes) * y in float32 in the golden's order, bit for bit against the
same order written in NumPy here; one rounding for float16/bfloat16; the errors."""

import numpy as np
import pytest

from acl_ctypes import (
    ACL_ERROR_OP_ATTR_NOT_MATCH,
    ACL_ERROR_OP_INPUT_NOT_MATCH,
    ACL_ERROR_UNSUPPORTED_DATA_TYPE,
    ACL_FLOAT,
    BF16,
    acl_dtype,
    assert_bits_equal,
    run_ops,
)

pytestmark = pytest.mark.usefixtures("sim_dir")


def golden_in_order(y, dy, axis):
    """t = dy * y; s = t_0 + t_1 + ... along the axis (float32, each sum rounded); t - s * y."""
    y32, dy32 = np.moveaxis(y.astype(np.float32), axis, -1), np.moveaxis(dy.astype(np.float32), axis, -1)
    t = dy32 * y32
    s = t[..., 0].copy()
    for k in range(1, t.shape[-1]):
        s = (s + t[..., k]).astype(np.float32)
    return np.moveaxis(t - (s[..., None] * y32).astype(np.float32), -1, axis).astype(y.dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16], ids=["float32", "float16", "bfloat16"])
def test_softmax_grad_is_the_golden_in_order(tmp_path, dtype):
    rng = np.random.default_rng(3)
    cases, refs = [], []
    for shape, axis in [((4, 7), -1), ((3, 5, 6), 1), ((3, 5, 6), 0), ((2, 1, 4), 1), ((9,), 0)]:
        y = rng.uniform(0, 1, shape).astype(dtype)
        dy = rng.normal(0, 1, shape).astype(dtype)
        cases.append(("SoftmaxGrad", [y, dy], [(acl_dtype(dtype), list(shape))], {"axes": [axis]}))
        refs.append(golden_in_order(y, dy, axis))
    y = rng.uniform(0, 1, (3, 4)).astype(dtype)
    dy = rng.normal(0, 1, (3, 4)).astype(dtype)
    cases.append(("SoftmaxGrad", [y, dy], [(acl_dtype(dtype), [3, 4])], None))  # axes default {-1}
    refs.append(golden_in_order(y, dy, -1))
    for (rc, msg, (out,)), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(out, ref)


def test_softmax_grad_errors(tmp_path):
    y = np.ones((2, 3), np.float32)
    results = run_ops(tmp_path, [
        ("SoftmaxGrad", [y, y], [(ACL_FLOAT, [2, 3])], {"axes": [0, 1]}),   # one axis simulated
        ("SoftmaxGrad", [y, y], [(ACL_FLOAT, [2, 3])], {"axes": [2]}),
        ("SoftmaxGrad", [y, y.T.copy()], [(ACL_FLOAT, [2, 3])], None),
        ("SoftmaxGrad", [y.astype(np.int32), y.astype(np.int32)], [(acl_dtype(np.int32), [2, 3])], None),
    ])
    assert [r[0] for r in results] == [ACL_ERROR_OP_ATTR_NOT_MATCH, ACL_ERROR_OP_ATTR_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_UNSUPPORTED_DATA_TYPE], results
    assert "one axis is simulated" in results[0][1]


def test_softmax_grad_bfloat16_is_not_on_the_atlas_training_series(tmp_path):
    """README: the Atlas inference and training series support float16 and float32 only."""
    y = np.ones((2, 3), BF16)
    ((rc, msg, _),) = run_ops(tmp_path, [("SoftmaxGrad", [y, y], [(acl_dtype(BF16), [2, 3])], None)],
                              ACLSIM_SOC_NAME="Ascend910A")
    assert rc == ACL_ERROR_UNSUPPORTED_DATA_TYPE and "bfloat16 is not supported on ascend910" in msg, msg
