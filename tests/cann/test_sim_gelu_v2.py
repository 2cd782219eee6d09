"""GeluV2 on the simulator against a NumPy reference of CANN's kernel (hicann/ops-nn@e5c3fa93
activation/gelu_v2/op_kernel/arch35/gelu_v2_dag.h), written here from the DAGs, every step in float32:

    "none":  y = (erf(x * 0.707106781f) + 1) * (x * 0.5)
    "tanh":  c = (x*x)*x + x * f32(1/0.044715);  y = x / (exp(c * f32(-1.595769121 * 0.044715)) + 1)

Where neither erf nor exp changes the result the comparison is bit for bit: "none" with |x| >= 6.4
(erf is +-1 in float32: y = x or -0.0; NaN at -inf, 0 * -inf), "tanh" where exp underflows below half an ulp of 1 (y = x) or
overflows (y = -0.0). Elsewhere the reference takes erf / exp in float64 of the float32 argument, and the
bound follows the remaining float32 steps: erff and expf are within one float32 ulp
(``acl_ctypes.ULPS``); "+ 1" adds half an ulp of its sum; the product by x/2 (or the division of x)
carries that error relative to its operand and adds half an ulp of y; float16/bfloat16 outputs add one
ulp of their own dtype. Refusals follow aclnnGeluV2.md: dtypes float32/float16/bfloat16, no bfloat16 on
the Atlas training / inference series, rank 0-8, approximate "none" or "tanh", absent on 200I/500 A2.
"""

import math

import numpy as np
import pytest

from acl_ctypes import (
    ACL_BF16,
    ACL_ERROR_OP_ATTR_NOT_MATCH,
    ACL_ERROR_OP_INPUT_NOT_MATCH,
    ACL_ERROR_OP_NOT_FOUND,
    ACL_ERROR_OP_OUTPUT_NOT_MATCH,
    ACL_ERROR_UNSUPPORTED_DATA_TYPE,
    ACL_FLOAT,
    ACL_FLOAT16,
    ACL_INT32,
    BF16,
    FLOAT_IDS,
    FLOATS,
    ULPS,
    acl_dtype,
    assert_bits_equal,
    assert_within,
    run_ops,
    ulp,
)

pytestmark = pytest.mark.usefixtures("sim_dir")
f32 = np.float32
SPECIALS = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, -1.0, 3.0, -3.0, 6.5, -6.5, 10.0, -10.0, 1e-30,
                     -1e-30, 30.0, -30.0, 100.0, -100.0, 1e-6, -1e-6], np.float32)
ERF = np.frompyfunc(math.erf, 1, 1)


def _inputs(dtype):
    rng = np.random.default_rng(23)
    x = np.concatenate([SPECIALS, (rng.standard_normal(3000) * 3).astype(np.float32),
                        rng.uniform(-12, 12, 2000).astype(np.float32)])
    return x.astype(dtype)


def gelu_erf_reference(x):
    """(exact float32 results where erf is +-1, mask of those, float64 result, erf(z), x * 0.5)."""
    x32 = x.astype(np.float32)
    with np.errstate(all="ignore"):
        z = x32 * f32(0.707106781)
        half = x32 * f32(0.5)
        saturated = np.abs(x32) >= f32(6.4)  # |z| >= 4.5: 1 - erf(z) < 2e-10, far below half an ulp of 1
        # (1 + 1) * x/2 = x; (-1 + 1) * x/2 = -0.0 (and 0 * -inf = NaN, as the kernel's product gives)
        exact = np.where(x32 > 0, f32(2), f32(0)) * half
        r = ERF(z.astype(np.float64)).astype(np.float64)
        y64 = (r + 1.0) * half.astype(np.float64)
    return exact, saturated & ~np.isnan(x32), y64, r, half


def gelu_tanh_reference(x):
    """(exact float32 results where exp leaves the sum at 1 or overflows, mask, float64 result, exp, exp + 1)."""
    x32 = x.astype(np.float32)
    with np.errstate(all="ignore"):
        cube = (x32 * x32) * x32
        inner = cube + x32 * f32(1 / 0.044715)
        arg = inner * f32(-1.595769121 * 0.044715)
        e = np.exp(arg.astype(np.float64))
        ones = e < 2.0 ** -25  # e + 1 rounds to 1 in float32: y = x / 1
        overflow = arg.astype(np.float64) > 89.0  # expf(arg) = inf: y = x / inf
        exact = np.where(ones, x32, x32 / f32(np.inf))  # x / 1; x / inf: -0.0 (NaN for x = -inf)
        y64 = x32.astype(np.float64) / (e + 1.0)
    return exact, (ones | overflow) & ~np.isnan(x32), y64, e, e + 1.0


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
@pytest.mark.parametrize("approximate", ["none", "tanh", None])
def test_gelu_v2_matches_the_kernel(tmp_path, dtype, approximate):
    x = _inputs(dtype)
    attrs = None if approximate is None else {"approximate": approximate}  # None: the default, "none"
    ((rc, msg, (y,)),) = run_ops(tmp_path, [("GeluV2", [x], [(acl_dtype(dtype), [x.size])], attrs)])
    assert rc == 0 and msg is None, msg
    if approximate == "tanh":
        exact, mask, y64, e, d = gelu_tanh_reference(x)
        # expf's ulp, then the sum's half ulp, relative to the divisor; the quotient's half ulp
        tol = np.abs(y64) * (ULPS["expf"] * ulp(e) + 0.5 * ulp(d)) / d + 0.5 * ulp(y64)
    else:
        exact, mask, y64, r, half = gelu_erf_reference(x)
        # erff's ulp and the sum's half ulp, times |x/2|; the product's half ulp
        tol = np.abs(half.astype(np.float64)) * (ULPS["erff"] * ulp(r) + 0.5 * ulp(r + 1.0)) + 0.5 * ulp(y64)
    if dtype is not np.float32:
        tol = tol + ULPS["half_output"] * ulp(y64, dtype)
    with np.errstate(over="ignore"):
        assert_bits_equal(y[mask], exact[mask].astype(dtype), nan_payload=False)
    rest = ~mask
    assert_within(y[rest], y64[rest], tol[rest])
    assert mask.sum() > 300 and rest.sum() > 3000  # both kinds are exercised


def test_the_two_forms_differ_where_the_approximation_does(tmp_path):
    """At x = -3 the tanh form's error is about 2.4e-4 (PyTorch's gelu(-3) - gelu(-3, 'tanh')): each
    attribute value takes its own formula."""
    x = np.array([-3.0, 0.5], np.float32)
    results = run_ops(tmp_path, [("GeluV2", [x], [(ACL_FLOAT, [2])], {"approximate": a}) for a in ("none", "tanh")])
    (_, _, (y_none,)), (_, _, (y_tanh,)) = results
    want_none = [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.tolist()]
    want_tanh = [0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v**3))) for v in x.tolist()]
    np.testing.assert_allclose(y_none, want_none, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(y_tanh, want_tanh, rtol=1e-5, atol=1e-8)
    assert abs(float(y_none[0]) - float(y_tanh[0])) > 1e-4


def test_gelu_v2_refusals(tmp_path):
    x = np.ones(3, np.float32)
    results = run_ops(tmp_path, [
        ("GeluV2", [np.ones(3, np.int32)], [(ACL_INT32, [3])], None),
        ("GeluV2", [x], [(ACL_FLOAT16, [3])], None),
        ("GeluV2", [x], [(ACL_FLOAT, [4])], None),
        ("GeluV2", [x], [(ACL_FLOAT, [3])], {"approximate": "sigmoid"}),
        ("GeluV2", [np.ones([1] * 9, np.float32)], [(ACL_FLOAT, [1] * 9)], None),
    ])
    codes = [r[0] for r in results]
    assert codes == [ACL_ERROR_UNSUPPORTED_DATA_TYPE, ACL_ERROR_OP_OUTPUT_NOT_MATCH, ACL_ERROR_OP_OUTPUT_NOT_MATCH,
                     ACL_ERROR_OP_ATTR_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH], results
    assert "input 0 (x) has dtype ACL_INT32" in results[0][1]
    assert "approximate is \"sigmoid\", expected \"none\" or \"tanh\"" in results[3][1]
    assert "rank 9, expected 0-8" in results[4][1]


@pytest.mark.parametrize("soc,code", [("Ascend310P3", ACL_ERROR_UNSUPPORTED_DATA_TYPE),
                                      ("Ascend910A", ACL_ERROR_UNSUPPORTED_DATA_TYPE), ("Ascend910B1", 0)])
def test_gelu_v2_bfloat16_only_on_the_newer_socs(tmp_path, soc, code):
    x = np.linspace(-2, 2, 8).astype(BF16)
    results = run_ops(tmp_path, [("GeluV2", [x], [(ACL_BF16, [8])], None),
                                 ("GeluV2", [x.astype(np.float16)], [(ACL_FLOAT16, [8])], None)],
                      ACLSIM_SOC_NAME=soc)
    assert [r[0] for r in results] == [code, 0], results
    if code:
        assert "bfloat16, not supported on" in results[0][1]


def test_gelu_v2_is_absent_on_atlas_200i_500_a2(tmp_path):
    ((rc, msg, _),) = run_ops(tmp_path, [("GeluV2", [np.ones(2, np.float32)], [(ACL_FLOAT, [2])], None)],
                              ACLSIM_SOC_NAME="Ascend310B1")
    assert rc == ACL_ERROR_OP_NOT_FOUND and "aclnnGeluV2.md" in msg, msg
