"""Elu and LeakyRelu (at the end) on the simulator against a NumPy reference of CANN's kernel (hicann/ops-nn@e5c3fa93
activation/elu/op_kernel/arch35/elu_dag.h:77-104 float32, :119-145 float16/bfloat16), in float32:

    z = x * input_scale
    em1 = |z| < 0.1 ? z*(1 + z*(1/2 + z*(1/6 + z*(1/24 [+ z/120])))) : expf(z) - 1
    y = (x > 0 ? x : em1 * alpha) * scale          (the 1/120 term for float32 only)

Where no exp is involved (x > 0, or the polynomial) the comparison is bit for bit. The exp branch
is compared with a float64 reference within a bound derived from ``acl_ctypes.ULPS``: expf is
within 1 float32 ulp of exp(z), ``- 1`` adds at most 0.5 ulp of em1 (none when exp(z) is in
[0.5, 2]), and the two products 0.5 ulp each, so
|y - y64| <= |alpha*scale| * (ulp(e^z) + 0.5 ulp(em1)) + 1.5 ulp(y); float16/bfloat16 outputs
add one ulp of their own dtype.
"""

import numpy as np
import pytest

from acl_ctypes import (
    ACL_ERROR_OP_NOT_FOUND,
    ACL_ERROR_OP_OUTPUT_NOT_MATCH,
    ACL_ERROR_UNSUPPORTED_DATA_TYPE,
    ACL_FLOAT,
    ACL_FLOAT16,
    BF16,
    ULPS,
    acl_dtype,
    assert_bits_equal,
    assert_within,
    run_ops,
    ulp,
)

pytestmark = pytest.mark.usefixtures("sim_dir")
f32 = np.float32

SPECIALS = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, -0.1, 0.1, -0.099999994, -0.10000001, -1e-30, 1e-30,
                     -1e-6, -20.0, -100.0, 3.0, -3.0, 65504.0, -65504.0, 1e-40, -1e-40], np.float32)


def elu_reference(x: np.ndarray, alpha: float, scale: float, input_scale: float):
    """(exact float32 results where no exp is involved, mask of those, float64 result of the exp
    branch, float32 exp argument)."""
    x32 = x.astype(np.float32)
    with np.errstate(all="ignore"):
        z = x32 * f32(input_scale)
        c5, c4, c3, c2, c1 = f32(1) / f32(120), f32(1) / f32(24), f32(1) / f32(6), f32(1) / f32(2), f32(1)
        t = (z * c5 + c4) * z if x.dtype == np.float32 else z * c4
        t = (t + c3) * z
        t = (t + c2) * z
        t = t + c1
        poly = t * z
        small = np.abs(z) < f32(0.1)
        pos = x32 > f32(0)
        exact = np.where(pos, x32, poly * f32(alpha)) * f32(scale)
        y64 = (np.exp(z.astype(np.float64)) - 1.0) * np.float64(f32(alpha)) * np.float64(f32(scale))
    return exact, pos | small, y64, z


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16], ids=["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("alpha,scale,input_scale", [(1.0, 1.0, 1.0), (0.5, 1.0, 1.0), (1.6732632, 1.050701, 1.0),
                                                     (2.0, 0.5, 3.0), (-0.3, 1.0, 0.25)])
def test_elu_matches_the_kernel(tmp_path, dtype, alpha, scale, input_scale):
    rng = np.random.default_rng(11)
    with np.errstate(over="ignore"):
        x = np.concatenate([SPECIALS, rng.uniform(-0.2, 0.2, 2000).astype(np.float32),
                            (rng.standard_normal(4000) * 4).astype(np.float32)]).astype(dtype)
    attrs = {"alpha": alpha, "scale": scale, "input_scale": input_scale}
    if (alpha, scale, input_scale) == (1.0, 1.0, 1.0):
        attrs = None  # the defaults
    ((rc, msg, (y,)),) = run_ops(tmp_path, [("Elu", [x], [(acl_dtype(dtype), [x.size])], attrs)])
    assert rc == 0 and msg is None, msg
    exact, exact_mask, y64, z = elu_reference(x, alpha, scale, input_scale)
    with np.errstate(over="ignore"):
        assert_bits_equal(y[exact_mask], exact[exact_mask].astype(dtype), nan_payload=False)
    rest = ~exact_mask  # the exp branch: z <= -0.1 (or NaN)
    e = np.exp(z[rest].astype(np.float64))
    tol = (abs(np.float64(f32(alpha)) * np.float64(f32(scale))) * (ULPS["expf"] * ulp(e) + 0.5 * ulp(np.abs(e - 1.0)))
           + 1.5 * ulp(y64[rest]))
    if dtype is not np.float32:
        tol = tol + ULPS["half_output"] * ulp(y64[rest], dtype)
    assert_within(y[rest], y64[rest], tol)
    assert rest.sum() > 1000 and exact_mask.sum() > 1000  # both branches are exercised


def test_elu_branches(tmp_path):
    x = np.array([2.0, 0.0, -0.0, np.nan, -np.inf, -0.05], np.float32)
    ((rc, _, (y,)),) = run_ops(tmp_path, [("Elu", [x], [(ACL_FLOAT, [6])], {"alpha": 0.5})])
    assert rc == 0
    assert y[0] == 2.0 and y[4] == -0.5 and np.isnan(y[3])  # NaN takes the negative branch and stays NaN
    assert y[1] == 0.0 and not np.signbit(y[1])  # 0 -> poly(0) * alpha = +0
    assert y[2] == 0.0 and np.signbit(y[2])  # -0.0 stays -0.0
    assert abs(y[5] - 0.5 * np.expm1(-0.05)) < 1e-8  # the polynomial, not expf(z) - 1's cancellation


def test_elu_errors(tmp_path):
    x = np.ones(3, np.float32)
    results = run_ops(tmp_path, [
        ("Elu", [x.astype(np.float64)], [(acl_dtype(np.float64), [3])], None),
        ("Elu", [x], [(ACL_FLOAT16, [3])], None),
        ("Elu", [x], [(ACL_FLOAT, [4])], None),
    ])
    assert [r[0] for r in results] == [ACL_ERROR_UNSUPPORTED_DATA_TYPE, ACL_ERROR_OP_OUTPUT_NOT_MATCH,
                                       ACL_ERROR_OP_OUTPUT_NOT_MATCH]
    assert "Elu: input 0 (x) has dtype ACL_DOUBLE, expected one of ACL_FLOAT, ACL_FLOAT16, ACL_BF16" in results[0][1]
    assert "output 0 (y) has dtype ACL_FLOAT16, expected ACL_FLOAT" in results[1][1]
    assert "output 0 (y) has shape [4], expected [3]" in results[2][1]


# LeakyRelu (hicann/ops-nn activation/leaky_relu/op_kernel/arch35/leaky_relu_dag.h): in float32,
# neg = x * negative_slope, y = x > 0 ? x : neg, one rounding to y's dtype; NaN and -0.0 take neg.
def leaky_relu_reference(x: np.ndarray, slope: float) -> np.ndarray:
    x32 = x.astype(np.float32)
    with np.errstate(all="ignore"):
        return np.where(x32 > f32(0), x32, x32 * f32(slope)).astype(x.dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16], ids=["float32", "float16", "bfloat16"])
def test_leaky_relu_matches_the_kernel(tmp_path, dtype):
    """The default slope and four others (negative and > 1 too), in one child process per dtype."""
    rng = np.random.default_rng(5)
    with np.errstate(over="ignore"):
        x = np.concatenate([SPECIALS, (rng.standard_normal(3000) * 10).astype(np.float32)]).astype(dtype)
    slopes = [None, 0.01, 0.2, -0.5, 3.0]
    results = run_ops(tmp_path, [("LeakyRelu", [x], [(acl_dtype(dtype), [x.size])],
                                  None if slope is None else {"negative_slope": slope}) for slope in slopes])
    for slope, (rc, msg, outs) in zip(slopes, results, strict=True):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(outs[0], leaky_relu_reference(x, 0.0 if slope is None else slope))


def test_leaky_relu_default_slope_is_zero_and_signs(tmp_path):
    x = np.array([-2.0, -0.0, 0.0, np.nan, 3.0], np.float32)
    ((rc, _, (y,)),) = run_ops(tmp_path, [("LeakyRelu", [x], [(ACL_FLOAT, [5])], None)])
    assert rc == 0
    assert y[0] == 0.0 and np.signbit(y[0])  # -2 * 0.0 = -0.0: the default negative_slope is 0.0 (leaky_relu_def.cpp)
    assert np.signbit(y[1]) and not np.signbit(y[2]) and np.isnan(y[3]) and y[4] == 3.0


def test_leaky_relu_errors(tmp_path):
    x = np.ones(3, np.float32)
    results = run_ops(tmp_path, [
        ("LeakyRelu", [x.astype(np.float64)], [(acl_dtype(np.float64), [3])], None),
        ("LeakyRelu", [x], [(ACL_FLOAT16, [3])], None),
        ("LeakyRelu", [x], [(ACL_FLOAT, [2])], None),
    ])
    assert [r[0] for r in results] == [ACL_ERROR_UNSUPPORTED_DATA_TYPE, ACL_ERROR_OP_OUTPUT_NOT_MATCH,
                                       ACL_ERROR_OP_OUTPUT_NOT_MATCH]
    assert "LeakyRelu: input 0 (x) has dtype ACL_DOUBLE, expected one of ACL_FLOAT, ACL_FLOAT16, ACL_BF16" in results[0][1]


@pytest.mark.parametrize("soc, ok", [("Ascend910A", False), ("Ascend910B1", True), ("Ascend310P3", None)])
def test_leaky_relu_bfloat16_and_the_socs(tmp_path, soc, ok):
    """The README: Atlas training series float32 / float16 only; not on Atlas inference (310P)."""
    x = np.ones(3, BF16)
    ((rc, msg, _),) = run_ops(tmp_path, [("LeakyRelu", [x], [(acl_dtype(BF16), [3])], None)], ACLSIM_SOC_NAME=soc)
    if ok:
        assert rc == 0, msg
    elif ok is False:
        assert rc == ACL_ERROR_UNSUPPORTED_DATA_TYPE and "Atlas training series" in msg, msg
    else:
        assert rc == ACL_ERROR_OP_NOT_FOUND and "LeakyRelu" in msg, msg
