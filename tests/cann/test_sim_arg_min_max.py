"""ArgMaxV2 and ArgMin on the simulator against CANN's spec (hicann/ops-math math/arg_max_v2, math/arg_min:
op_graph/*_proto.h: x, a one-element int32/int64 dimension in [-rank, rank), y int32 or int64 as the dtype
attribute (3 or 9) without the reduced dimension, the first of equal extremes; dtypes of op_host/*_def.cpp:
float16, float32, bfloat16, int32, int64; NaN as the kernels' golden, tests/assets/golden.py: np.argmax /
np.argmin, so the first NaN; on the SoCs of the READMEs: all but Atlas 200I/500 A2)."""

import numpy as np
import pytest

from acl_ctypes import (
    ACL_ERROR_OP_ATTR_NOT_MATCH,
    ACL_ERROR_OP_INPUT_NOT_MATCH,
    ACL_ERROR_OP_NOT_FOUND,
    ACL_ERROR_OP_OUTPUT_NOT_MATCH,
    ACL_ERROR_UNSUPPORTED_DATA_TYPE,
    BF16,
    acl_dtype,
    const,
    run_ops,
)

pytestmark = pytest.mark.usefixtures("sim_dir")
OPS = {"ArgMaxV2": np.argmax, "ArgMin": np.argmin}


def values(dtype) -> np.ndarray:
    rng = np.random.default_rng(9)
    if np.dtype(dtype).kind == "i":
        return rng.integers(-3, 3, (4, 6, 5)).astype(dtype)  # many ties
    x = np.round(rng.standard_normal((4, 6, 5)) * 2).astype(np.float32)
    x[rng.random(x.shape) < 0.1] = np.nan
    x[0, 0, :] = [np.inf, -np.inf, -0.0, 0.0, np.nan]
    return x.astype(dtype)


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.int32, np.int64],
                         ids=["float32", "float16", "bfloat16", "int32", "int64"])
def test_arg_matches_numpy(tmp_path, op, dtype):
    x = values(dtype)
    ref = x.astype(np.float32) if dtype == BF16 else x
    cases, want = [], []
    for axis in (0, 1, 2, -1):
        for dim_type, out_type, attr in ((np.int32, np.int32, 3), (np.int64, np.int64, 9)):
            w = OPS[op](ref, axis=axis).astype(out_type)
            cases.append((op, [x, const(np.array([axis], dim_type))], [(acl_dtype(out_type), list(w.shape))],
                          {"dtype": attr}))
            want.append(w)
    for (rc, msg, (y,)), w in zip(run_ops(tmp_path, cases), want):
        assert rc == 0 and msg is None, msg
        np.testing.assert_array_equal(y, w)


@pytest.mark.parametrize("op", list(OPS))
def test_arg_nan_is_the_first_nan(tmp_path, op):
    x = np.array([1, np.nan, 3, np.nan], np.float32)
    ((rc, msg, (y,)),) = run_ops(tmp_path, [(op, [x, const(np.array([0], np.int64))], [(acl_dtype(np.int64), [1])],
                                             {"dtype": 9})])
    assert rc == 0 and msg is None, msg
    assert y.reshape(-1)[0] == 1


@pytest.mark.parametrize("op", list(OPS))
def test_arg_checks(tmp_path, op):
    x = np.ones((2, 3), np.float32)
    d = const(np.array([1], np.int64))
    out = [(acl_dtype(np.int64), [2])]
    results = run_ops(tmp_path, [
        (op, [np.ones((2, 3), np.float64), d], out, {"dtype": 9}),
        (op, [x, d], out, {"dtype": 4}),
        (op, [x, d], [(acl_dtype(np.int32), [2])], {"dtype": 9}),
        (op, [x, const(np.array([2], np.int64))], out, {"dtype": 9}),
        (op, [x, d], [(acl_dtype(np.int64), [2, 1])], {"dtype": 9}),
        (op, [np.ones((2, 0), np.float32), d], out, {"dtype": 9}),
    ])
    codes = [r[0] for r in results]
    assert codes == [ACL_ERROR_UNSUPPORTED_DATA_TYPE, ACL_ERROR_OP_ATTR_NOT_MATCH, ACL_ERROR_OP_OUTPUT_NOT_MATCH,
                     ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH], results
    assert "input 1 (dimension) is 2" in results[3][1]


@pytest.mark.parametrize("op", list(OPS))
def test_arg_is_not_on_atlas_200i_500_a2(tmp_path, op):
    x = np.ones(3, np.float32)
    ((rc, msg, _),) = run_ops(tmp_path, [(op, [x, const(np.array([0], np.int64))], [(acl_dtype(np.int64), [1])],
                                          {"dtype": 9})], ACLSIM_SOC_NAME="Ascend310B1")
    assert rc == ACL_ERROR_OP_NOT_FOUND and op in msg, msg
