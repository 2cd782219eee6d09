"""IsNan on the simulator against CANN's spec (hicann/ops-math math/is_nan/README.md: out = input != input):
x bfloat16, float16 or float32 and y bool (math/is_nan/op_host/is_nan_def.cpp); on the SoCs of its README
(Ascend 950, Atlas A3, A2). NotEqual(x, x), the placed IsNaN's route on the other SoCs, gives the same."""

import numpy as np
import pytest

from acl_ctypes import (
    ACL_ERROR_OP_NOT_FOUND,
    ACL_ERROR_UNSUPPORTED_DATA_TYPE,
    BF16,
    acl_dtype,
    run_ops,
)

pytestmark = pytest.mark.usefixtures("sim_dir")


def values(dtype) -> np.ndarray:
    rng = np.random.default_rng(5)
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFFFFFFF], np.uint32).view(np.float32)  # signs, payloads
    x = np.concatenate([nans, np.array([0.0, -0.0, np.inf, -np.inf, 1e-45, 3.4e38, 70000.0], np.float32),
                        rng.standard_normal(100).astype(np.float32)])
    x[rng.integers(0, x.size, 20)] = np.nan
    with np.errstate(over="ignore", invalid="ignore"):  # 3.4e38, 70000: inf in float16; NaN casts
        return x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16], ids=["float32", "float16", "bfloat16"])
def test_is_nan_matches_the_spec(tmp_path, dtype):
    x = values(dtype)
    want = np.isnan(x.astype(np.float32))
    (is_nan, not_equal) = run_ops(tmp_path, [("IsNan", [x], [(acl_dtype(np.bool_), [x.size])], None),
                                             ("NotEqual", [x, x], [(acl_dtype(np.bool_), [x.size])], None)])
    for rc, msg, (y,) in (is_nan, not_equal):
        assert rc == 0 and msg is None, msg
        np.testing.assert_array_equal(y.view(np.uint8), want.view(np.uint8))
    assert want.sum() >= 4


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_])
def test_is_nan_refuses_types_outside_its_def(tmp_path, dtype):
    x = np.ones(3, dtype)
    ((rc, msg, _),) = run_ops(tmp_path, [("IsNan", [x], [(acl_dtype(np.bool_), [3])], None)])
    assert rc == ACL_ERROR_UNSUPPORTED_DATA_TYPE and "IsNan: input 0 (x) has dtype" in msg, msg


def test_is_nan_output_is_bool(tmp_path):
    x = np.ones(3, np.float32)
    ((rc, msg, _),) = run_ops(tmp_path, [("IsNan", [x], [(acl_dtype(np.float32), [3])], None)])
    assert rc == ACL_ERROR_UNSUPPORTED_DATA_TYPE and "IsNan: output 0 (y) has dtype" in msg, msg


@pytest.mark.parametrize("soc", ["Ascend910A", "Ascend310P3", "Ascend310B1"])
def test_is_nan_is_not_on_the_socs_its_readme_excludes(tmp_path, soc):
    x = np.ones(3, np.float32)
    ((rc, msg, _),) = run_ops(tmp_path, [("IsNan", [x], [(acl_dtype(np.bool_), [3])], None)], ACLSIM_SOC_NAME=soc)
    assert rc == ACL_ERROR_OP_NOT_FOUND and "IsNan" in msg, msg
