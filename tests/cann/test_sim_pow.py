"""Pow on the simulator (hicann/ops-math@1969cd7f math/pow/README.md: out_i = input_i ^ exponent_i,
NumPy broadcasting, one dtype for both inputs and the output), against references computed
independently of C's powf: float64 pow (Python's, then rounded) for random operands, and exact
values where the result is representable (integer powers of small integers, powers of two, C's
special cases: pow(x, 0) = 1 and pow(1, y) = 1 even for NaN, pow(-0, -1) = -inf, a negative base
with a non-integer exponent is NaN).

Tolerance: glibc's powf is within 1 ulp of the exact value (its documented maximum is 0.82 ulp);
a float16/bfloat16 result adds the half ulp of its own rounding and the float32 ulp before it.
"""

import math

import ml_dtypes
import numpy as np
import pytest

from acl_ctypes import (
    ACL_ERROR_OP_INPUT_NOT_MATCH,
    ACL_ERROR_OP_OUTPUT_NOT_MATCH,
    ACL_ERROR_UNSUPPORTED_DATA_TYPE,
    ACL_FLOAT,
    FLOAT_IDS,
    FLOATS,
    acl_dtype,
    assert_bits_equal,
    assert_within,
    run_ops,
    ulp,
)

pytestmark = pytest.mark.usefixtures("sim_dir")
BROADCAST = [((3, 4), (3, 4)), ((3, 4), ()), ((4, 1), (1, 5)), ((2, 1, 3), (3,)), ((0, 3), (1, 3))]


def exact_pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """float64 C pow of each broadcast pair (Python's math.pow: no SIMD library in between)."""
    a64, b64 = np.broadcast_arrays(a.astype(np.float64), b.astype(np.float64))
    out = []
    for x, y in zip(a64.reshape(-1).tolist(), b64.reshape(-1).tolist()):
        try:
            out.append(math.pow(x, y))
        except OverflowError:
            out.append(math.inf if x > 0 or float(y).is_integer() and int(y) % 2 == 0 else -math.inf)
        except ValueError:  # negative base, non-integer exponent; or 0 to a negative power
            out.append(math.nan if x != 0 else (math.copysign(math.inf, x) if float(y).is_integer() and int(y) % 2
                                                 else math.inf))
    return np.array(out, np.float64).reshape(a64.shape)


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
def test_pow_of_random_operands_every_broadcast_pattern(tmp_path, dtype):
    rng = np.random.default_rng(31)
    cases, refs = [], []
    for sa, sb in BROADCAST:
        a = rng.uniform(0.05, 4.0, sa).astype(np.float32)
        a.reshape(-1)[::3] *= -1  # negative bases: NaN unless the exponent is an integer
        b = rng.uniform(-3.0, 3.0, sb).astype(np.float32)
        b.reshape(-1)[::2] = np.round(b.reshape(-1)[::2])
        a, b = a.astype(dtype), b.astype(dtype)
        cases.append(("Pow", [a, b], [(acl_dtype(dtype), list(np.broadcast_shapes(sa, sb)))], None))
        refs.append(exact_pow(a, b))
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        tol = ulp(ref)
        if dtype != np.float32:
            tol = tol + 0.5 * ulp(ref, dtype) + ulp(ref)
        assert_within(y, ref, tol)


@pytest.mark.parametrize("dtype", FLOATS + [np.float64], ids=FLOAT_IDS + ["float64"])
def test_pow_exact_values_and_special_cases(tmp_path, dtype):
    nan, inf = np.nan, np.inf
    pairs = [(2.0, 3.0), (-2.0, 3.0), (-3.0, 2.0), (5.0, 0.0), (nan, 0.0), (1.0, nan), (1.0, inf), (-8.0, 1 / 3),
             (0.0, -1.0), (-0.0, -1.0), (-0.0, 3.0), (4.0, 0.5), (2.0, -2.0), (inf, -1.0), (-inf, 3.0), (nan, 2.0),
             (0.5, inf), (2.0, inf), (7.0, 1.0)]
    a = np.array([p[0] for p in pairs]).astype(dtype)
    b = np.array([p[1] for p in pairs]).astype(dtype)
    want = np.array([8.0, -8.0, 9.0, 1.0, 1.0, 1.0, 1.0, nan, inf, -inf, -0.0, 2.0, 0.25, 0.0, -inf, nan, 0.0, inf,
                     7.0]).astype(dtype)
    ((rc, msg, (y,)),) = run_ops(tmp_path, [("Pow", [a, b], [(acl_dtype(dtype), [len(pairs)])], None)])
    assert rc == 0 and msg is None, msg
    assert_bits_equal(y, want, nan_payload=False)


def test_pow_errors(tmp_path):
    x = np.ones((2, 3), np.float32)
    results = run_ops(tmp_path, [
        ("Pow", [x, x.astype(np.float16)], [(ACL_FLOAT, [2, 3])], None),
        ("Pow", [x.astype(ml_dtypes.bfloat16), x.astype(np.int32)], [(acl_dtype(ml_dtypes.bfloat16), [2, 3])], None),
        ("Pow", [x, np.ones((4,), np.float32)], [(ACL_FLOAT, [2, 3])], None),
        ("Pow", [x, x], [(ACL_FLOAT, [3, 2])], None),
        ("Pow", [x.astype(np.int32), x.astype(np.int64)], [(acl_dtype(np.int32), [2, 3])], None),
        ("Pow", [x, x.astype(np.int32)], [(acl_dtype(np.int32), [2, 3])], None),
        ("Pow", [x, np.ones((4,), np.int64)], [(ACL_FLOAT, [2, 3])], None),
    ])
    assert [r[0] for r in results] == [ACL_ERROR_UNSUPPORTED_DATA_TYPE, ACL_ERROR_UNSUPPORTED_DATA_TYPE,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_OUTPUT_NOT_MATCH,
                                       ACL_ERROR_OP_OUTPUT_NOT_MATCH, ACL_ERROR_OP_OUTPUT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH], results
    msgs = [r[1] for r in results]
    assert "inputs of dtypes ACL_FLOAT and ACL_FLOAT16" in msgs[0] and "bfloat16 is not in its table" in msgs[1]
    assert "Pow: input shapes [2,3] and [4] cannot be broadcast" in msgs[2]
    assert "Pow: output 0 has shape [3,2], expected [2,3]" in msgs[3]
    assert "expected ACL_INT64 (Promote of ACL_INT32 and ACL_INT64)" in msgs[4]
    assert "expected ACL_FLOAT (Promote of ACL_FLOAT and ACL_INT32)" in msgs[5]
    assert "do not broadcast" in msgs[6]


# -- an integer input: CANN's AICPU Pow kernel (hicann/ops-math math/pow/op_kernel_aicpu/pow_aicpu.cpp) --

def aicpu_int_pow(a: int, b: int, bits: int) -> int:
    """PowImpl of two integers, from its source's rules: b < 0 gives 1 for a = 1, +-1 for a = -1
    (odd b: -1) and 0 otherwise; else a ** b wrapped to a signed `bits`-bit integer (the kernel
    multiplies in the output type)."""
    if b < 0:
        return 1 if a == 1 else ((-1 if b % 2 else 1) if a == -1 else 0)
    r = pow(a, b, 1 << bits)
    return r - (1 << bits) if r >= 1 << (bits - 1) else r


@pytest.mark.parametrize("xt,et", [(np.int32, np.int32), (np.int64, np.int64), (np.int64, np.int32),
                                   (np.int32, np.int64)])
def test_pow_of_integers_wraps_and_follows_the_negative_exponent_rules(tmp_path, xt, et):
    a = np.array([2, -3, 7, 0, 1, -1, -1, 5, 3, 0, -2, 2, 3, 10], xt)
    b = np.array([10, 3, 9, 0, -4, -3, -4, -1, 39, 5, 31, 63, 40, 19], et)
    out = np.result_type(xt, et)
    want = np.array([aicpu_int_pow(int(x), int(e), np.dtype(out).itemsize * 8) for x, e in zip(a, b)], out)
    ((rc, msg, (y,)),) = run_ops(tmp_path, [("Pow", [a, b], [(acl_dtype(out), [len(a)])], None)])
    assert rc == 0 and msg is None, msg
    np.testing.assert_array_equal(y, want)
    assert want[7] == 0 and want[6] == 1 and want[5] == -1  # the rules, not C's pow


@pytest.mark.parametrize("xt", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("et", [np.int32, np.int64])
def test_pow_of_a_float_to_an_integer_power_in_double(tmp_path, xt, et):
    """y = the double pow of the operands rounded once to x1's type (float16 through float32, as the
    kernel's Eigen::half does); references from Python's float pow, broadcasting [3, 1] with [4]."""
    a = np.array([[1.0001], [-1.5], [0.0]], xt)
    b = np.array([-3, 0, 7, 2 ** 20 + 1], et)
    with np.errstate(over="ignore", divide="ignore"):
        ref = np.power(a.astype(np.float64), b.astype(np.float64))  # C's pow in double: overflow -> +-inf
    with np.errstate(over="ignore"):
        want = ref.astype(np.float32).astype(xt) if xt == np.float16 else ref.astype(xt)
    assert np.isneginf(want[1, 3]) and np.isposinf(want[2, 0]) and want[1, 1] == 1  # sign of an odd power, 0^-3
    ((rc, msg, (y,)),) = run_ops(tmp_path, [("Pow", [a, b], [(acl_dtype(xt), [3, 4])], None)])
    assert rc == 0 and msg is None, msg
    np.testing.assert_array_equal(y, want)
