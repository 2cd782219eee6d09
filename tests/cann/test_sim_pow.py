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
    acl_dtype,
    assert_bits_equal,
    assert_within,
    run_ops,
    ulp,
)

pytestmark = pytest.mark.usefixtures("sim_dir")
BF16 = ml_dtypes.bfloat16
FLOATS = [np.float32, np.float16, BF16]
IDS = ["float32", "float16", "bfloat16"]
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


@pytest.mark.parametrize("dtype", FLOATS, ids=IDS)
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


@pytest.mark.parametrize("dtype", FLOATS + [np.float64], ids=IDS + ["float64"])
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
        ("Pow", [x.astype(np.int32), x.astype(np.int32)], [(acl_dtype(np.int32), [2, 3])], None),
        ("Pow", [x, np.ones((4,), np.float32)], [(ACL_FLOAT, [2, 3])], None),
        ("Pow", [x, x], [(ACL_FLOAT, [3, 2])], None),
    ])
    assert [r[0] for r in results] == [ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_UNSUPPORTED_DATA_TYPE,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_OUTPUT_NOT_MATCH], results
    msgs = [r[1] for r in results]
    assert "input 1 (x2)" in msgs[0]
    assert "Pow: input 0 (x1) has dtype" in msgs[1] and "only float types are simulated" in msgs[1]
    assert "Pow: input shapes [2,3] and [4] cannot be broadcast" in msgs[2]
    assert "Pow: output 0 has shape [3,2], expected [2,3]" in msgs[3]
