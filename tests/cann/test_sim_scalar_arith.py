"""Muls (x * value), Adds (x + value) and Axpy (x1 + alpha * x2, broadcasting) on the simulator,
bit for bit against NumPy references of CANN's kernels (hicann/ops-math@c4193324
math/muls/op_kernel/muls_apt.cpp, math/adds/op_kernel/adds_apt.cpp, math/axpy/op_kernel/axpy_apt.cpp):
the attribute is a float32 and the arithmetic is float32; float16/bfloat16 load exactly and round
once to nearest even; integer x converts to float32 and back with the kernels' cast modes:

| op    | int16          | int32                              | int64                             |
| Muls  | exact, trunc   | half away from zero in, trunc out  | half away in, half away out       |
| Adds  | exact, trunc   | nearest even in, trunc out         | nearest even in, trunc out        |
| Axpy  | -              | nearest even in, trunc out         | -                                 |

(float -> integer saturating, NaN -> 0: the simulator's no-UB rule.) Axpy rounds the product,
then the sum (no FMA).
"""

import math

import numpy as np
import pytest

from acl_ctypes import (
    ACL_ERROR_OP_ATTR_NOT_MATCH,
    ACL_ERROR_OP_INPUT_NOT_MATCH,
    ACL_ERROR_OP_OUTPUT_NOT_MATCH,
    ACL_ERROR_UNSUPPORTED_DATA_TYPE,
    ACL_FLOAT,
    ACL_INT32,
    FLOATS,
    acl_dtype,
    assert_bits_equal,
    run_ops,
)

pytestmark = pytest.mark.usefixtures("sim_dir")
FLOAT_IDS = ["float32", "float16", "bfloat16"]
VALUES = [0.5, -2.5, 3.0, 1e-3, 0.0, -0.0, float("inf")]


def f32(v) -> np.float32:
    return np.float32(v)


def to_f32_half_away(v: int) -> float:
    """int -> nearest float32, ties away from zero."""
    mag = abs(v)
    if mag < 2**24:
        return float(v)
    shift = mag.bit_length() - 24
    q, r = divmod(mag, 2**shift)
    if r >= 2 ** (shift - 1):
        q += 1
    return math.copysign(q * 2.0**shift, v)


def to_int(v: float, dtype, half_away: bool) -> int:
    info = np.iinfo(dtype)
    if v != v:
        return 0
    if math.isinf(v):
        return info.max if v > 0 else info.min
    r = math.copysign(math.floor(abs(v) + 0.5), v) if half_away else math.trunc(v)
    return int(max(info.min, min(info.max, r)))


def float_x(rng, shape, dtype):
    x = (rng.standard_normal(shape) * 8).astype(np.float32)
    x.reshape(-1)[:5] = [np.nan, -0.0, 0.0, np.inf, 65504.0]
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
def test_muls_adds_float(tmp_path, dtype):
    rng = np.random.default_rng(6)
    x = float_x(rng, (4, 8), dtype)
    cases, refs = [], []
    for v in VALUES:
        for op, fn in (("Muls", np.multiply), ("Adds", np.add)):
            cases.append((op, [x], [(acl_dtype(dtype), [4, 8])], {"value": v}))
            with np.errstate(all="ignore"):
                refs.append(fn(x.astype(np.float32), f32(v)).astype(dtype))
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(y, ref)


INTS = [0, 3, -3, 5, -5, 7, 2**24 + 1, -(2**24 + 1), 2**24 + 3, 2**31 - 1, -(2**31), 2**40 + 1, -(2**62) - 12345]


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.int64], ids=["int16", "int32", "int64"])
def test_muls_adds_integer_cast_modes(tmp_path, dtype):
    info = np.iinfo(dtype)
    xs = [v for v in INTS if info.min <= v <= info.max]
    x = np.array(xs, dtype)
    cases, refs = [], []
    for v in (0.5, 1.0, -2.5, 0.0, 1e30):
        for op in ("Muls", "Adds"):
            muls_half_away = op == "Muls" and dtype in (np.int32, np.int64)
            out = []
            for xi in xs:
                xf = f32(to_f32_half_away(xi) if muls_half_away else float(f32(xi)))
                with np.errstate(over="ignore"):  # 1e30 * 2^31 overflows float32 to inf: saturates
                    yf = float(xf * f32(v) if op == "Muls" else xf + f32(v))
                out.append(to_int(yf, dtype, half_away=op == "Muls" and dtype is np.int64))
            cases.append((op, [x], [(acl_dtype(dtype), [x.size])], {"value": v}))
            refs.append(np.array(out, dtype))
    for (rc, msg, (y,)), ref, case in zip(run_ops(tmp_path, cases), refs, cases):
        assert rc == 0 and msg is None, msg
        assert y.tolist() == ref.tolist(), (case[0], case[3])
    # the modes are observable: 2^24 + 1 is a tie between float32 neighbours
    if dtype is np.int32:
        muls, adds = refs[2][6], refs[3][6]  # value 1.0
        assert (muls, adds) == (2**24 + 2, 2**24)


BROADCAST = [((2, 3), (2, 3)), ((2, 3), (1,)), ((1,), (2, 3)), ((4, 1), (1, 5)), ((0, 3), (1, 3))]


@pytest.mark.parametrize("dtype", FLOATS + [np.int32], ids=FLOAT_IDS + ["int32"])
def test_axpy_broadcasts_and_rounds_the_product_first(tmp_path, dtype):
    rng = np.random.default_rng(7)
    cases, refs, fused_differs = [], [], False
    for sa, sb in BROADCAST:
        if dtype is np.int32:
            a = rng.integers(-1000, 1000, sa).astype(np.int32)
            b = rng.integers(-1000, 1000, sb).astype(np.int32)
        else:
            a, b = float_x(rng, sa, dtype) if np.prod(sa) >= 5 else rng.standard_normal(sa).astype(dtype), \
                rng.standard_normal(sb).astype(dtype)
        for alpha in (0.1, -1.5, 3.0):
            shape = np.broadcast_shapes(sa, sb)
            af = np.broadcast_to(a, shape).astype(np.float32)
            bf = np.broadcast_to(b, shape).astype(np.float32)
            with np.errstate(all="ignore"):
                yf = af + bf * f32(alpha)  # float32: product rounded, then the sum
            if dtype is np.int32:
                ref = np.array([to_int(float(v), np.int32, False) for v in yf.reshape(-1)], np.int32).reshape(shape)
            else:
                ref = yf.astype(dtype)
                with np.errstate(all="ignore"):  # one rounding of the exact x1 + alpha*x2 (what an FMA gives)
                    fused = (af.astype(np.float64) + bf.astype(np.float64) * np.float64(f32(alpha))).astype(
                        np.float32).astype(dtype)
                fused_differs |= not np.array_equal(ref, fused, equal_nan=True)
            cases.append(("Axpy", [a, b], [(acl_dtype(dtype), list(shape))], {"alpha": alpha}))
            refs.append(ref)
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(y, ref)
    assert fused_differs or dtype is not np.float32  # the data tells an FMA apart


def test_errors(tmp_path):
    x = np.ones(4, np.float32)
    results = run_ops(tmp_path, [
        ("Muls", [x], [(ACL_FLOAT, [4])], None),
        ("Adds", [x.astype(np.uint8)], [(acl_dtype(np.uint8), [4])], {"value": 1.0}),
        ("Muls", [x], [(ACL_FLOAT, [2, 2])], {"value": 1.0}),
        ("Adds", [x], [(ACL_INT32, [4])], {"value": 1.0}),
        ("Axpy", [x, np.ones(3, np.float32)], [(ACL_FLOAT, [4])], {"alpha": 1.0}),
        ("Axpy", [x, x], [(ACL_FLOAT, [4])], None),
        ("Axpy", [x, x], [(ACL_FLOAT, [1, 4])], {"alpha": 1.0}),
        ("Axpy", [x.astype(np.int64), x.astype(np.int64)], [(acl_dtype(np.int64), [4])], {"alpha": 1.0}),
    ])
    assert [r[0] for r in results] == [ACL_ERROR_OP_ATTR_NOT_MATCH, ACL_ERROR_UNSUPPORTED_DATA_TYPE,
                                       ACL_ERROR_OP_OUTPUT_NOT_MATCH, ACL_ERROR_OP_OUTPUT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_ATTR_NOT_MATCH,
                                       ACL_ERROR_OP_OUTPUT_NOT_MATCH, ACL_ERROR_UNSUPPORTED_DATA_TYPE]
    assert "Muls: required attribute value (float) is missing" in results[0][1]
    assert "Adds: input 0 (x) has dtype ACL_UINT8, expected one of ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_INT16" \
        in results[1][1]
    assert "Axpy: input shapes [4] and [3] cannot be broadcast" in results[4][1]
    assert "Axpy: required attribute alpha (float) is missing" in results[5][1]
    assert "Axpy: output 0 (y) has shape [1,4], expected [4] (broadcast of x1 and x2)" in results[6][1]
