"""Sign on the simulator against CANN's kernel (hicann/ops-math math/sign/op_kernel/arch35/sign.h):
y = (x > 0 ? 1 : 0) - (x < 0 ? 1 : 0) in x's type (bfloat16 through float32), so NaN and -0.0 give +0;
dtypes of math/sign/op_host/sign_def.cpp (bfloat16, float16, float32, int32, int64); on the SoCs of
math/sign/README.md (Ascend 950, Atlas A3, A2)."""

import numpy as np
import pytest

from acl_ctypes import (
    ACL_ERROR_OP_NOT_FOUND,
    ACL_ERROR_UNSUPPORTED_DATA_TYPE,
    BF16,
    acl_dtype,
    assert_bits_equal,
    run_ops,
)

pytestmark = pytest.mark.usefixtures("sim_dir")


def sign_reference(x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return ((x > 0).astype(np.int64) - (x < 0).astype(np.int64)).astype(x.dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.int32, np.int64],
                         ids=["float32", "float16", "bfloat16", "int32", "int64"])
def test_sign_matches_the_kernel(tmp_path, dtype):
    rng = np.random.default_rng(3)
    if np.dtype(dtype).kind == "i":
        info = np.iinfo(dtype)
        x = np.concatenate([np.array([0, 1, -1, info.min, info.max], dtype), rng.integers(-9, 9, 200).astype(dtype)])
    else:
        x = np.concatenate([np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-30, -1e-30, 1e-40, -1e-40], np.float32),
                            rng.standard_normal(200).astype(np.float32)]).astype(dtype)
    ((rc, msg, (y,)),) = run_ops(tmp_path, [("Sign", [x], [(acl_dtype(dtype), [x.size])], None)])
    assert rc == 0 and msg is None, msg
    want = sign_reference(x)
    assert_bits_equal(y, want)
    if np.dtype(dtype).kind == "f":
        assert not np.isnan(y.astype(np.float32)).any() and not np.signbit(y[1])  # NaN -> 0, -0.0 -> +0


@pytest.mark.parametrize("dtype", [np.float64, np.int8, np.bool_])
def test_sign_refuses_types_outside_its_def(tmp_path, dtype):
    x = np.ones(3, dtype)
    ((rc, msg, _),) = run_ops(tmp_path, [("Sign", [x], [(acl_dtype(dtype), [3])], None)])
    assert rc == ACL_ERROR_UNSUPPORTED_DATA_TYPE and "Sign: input 0 (x) has dtype" in msg, msg


@pytest.mark.parametrize("soc", ["Ascend910A", "Ascend310P3", "Ascend310B1"])
def test_sign_is_not_on_the_socs_its_readme_excludes(tmp_path, soc):
    x = np.ones(3, np.float32)
    ((rc, msg, _),) = run_ops(tmp_path, [("Sign", [x], [(acl_dtype(np.float32), [3])], None)], ACLSIM_SOC_NAME=soc)
    assert rc == ACL_ERROR_OP_NOT_FOUND and "Sign" in msg, msg
