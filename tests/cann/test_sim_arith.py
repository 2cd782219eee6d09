"""Binary arithmetic (Add, Sub, Mul, Div, RealDiv) and Cast on the simulator, bit for bit against
NumPy: every dtype (float32, float16, bfloat16, float64, int32, int64), every broadcasting pattern
the kernels will send (scalar [1] against [N, C], [N, 1] against [1, C], rank extension, empty),
NaN / infinities / -0.0, integer wrap-around; Cast's conversions, including what the contract
pins down: float -> integer truncates toward zero, NaN -> 0, out of range saturates.

Float semantics: one IEEE operation per element (float16/bfloat16 in float32, rounded once to
nearest even: NumPy's and ml_dtypes' own loops do the same); a NaN result takes the first
operand's NaN (quieted), else the second's, else the default NaN (x86's rule, NumPy's too).
Integers wrap; Div truncates toward zero (C), so INT_MIN / -1 wraps.
"""

import numpy as np
import pytest

from acl_ctypes import (
    ACL_BF16,
    ACL_BOOL,
    ACL_DOUBLE,
    ACL_ERROR_OP_ATTR_NOT_MATCH,
    ACL_ERROR_UNSUPPORTED_DATA_TYPE,
    ACL_FLOAT,
    ACL_FLOAT16,
    ACL_INT8,
    ACL_INT32,
    ACL_INT64,
    ACL_UINT8,
    BF16,
    acl_dtype,
    assert_bits_equal,
    run_ops,
)

pytestmark = pytest.mark.usefixtures("sim_dir")

BROADCAST = [((2, 3), (2, 3)), ((2, 3), (1,)), ((1,), (2, 3)), ((4, 1), (1, 5)), ((2, 1, 3), (4, 1)),
             ((3,), (2, 3)), ((0, 3), (1, 3))]
FLOAT_OPS = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide, "RealDiv": np.divide}


def float_sample(rng, shape, dtype):
    a = (rng.standard_normal(shape) * 4).astype(np.float32)
    flat = a.reshape(-1)
    specials = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, 1e-30], np.float32)
    flat[: min(flat.size, specials.size)] = specials[: flat.size]
    return a.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.float64], ids=["float32", "float16", "bfloat16",
                                                                                   "float64"])
def test_float_arithmetic_matches_numpy_for_every_broadcast_pattern(tmp_path, dtype):
    rng = np.random.default_rng(4)
    cases, refs = [], []
    for sa, sb in BROADCAST:
        a, b = float_sample(rng, sa, dtype), float_sample(rng, sb, dtype)[..., ::-1].copy()
        shape = list(np.broadcast_shapes(sa, sb))
        for op, fn in FLOAT_OPS.items():
            cases.append((op, [a, b], [(acl_dtype(dtype), shape)], None))
            with np.errstate(all="ignore"):
                refs.append(fn(a, b))
    for (rc, msg, (y,)), ref, case in zip(run_ops(tmp_path, cases), refs, cases):
        assert rc == 0 and msg is None, (case[0], msg)
        assert_bits_equal(y, ref)


def trunc_div(a: np.ndarray, b: np.ndarray, dtype) -> np.ndarray:
    """C integer division (toward zero), wrapping INT_MIN / -1, computed with Python ints."""
    bits = np.iinfo(dtype).bits
    out = []
    for x, y in zip(a.reshape(-1).tolist(), b.reshape(-1).tolist()):
        q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
        q = (q + 2 ** (bits - 1)) % 2 ** bits - 2 ** (bits - 1)
        out.append(q)
    return np.array(out, dtype).reshape(a.shape)


@pytest.mark.parametrize("dtype", [np.int32, np.int64], ids=["int32", "int64"])
def test_integer_arithmetic_wraps_and_divides_toward_zero(tmp_path, dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(5)
    cases, refs = [], []
    for sa, sb in BROADCAST:
        a = rng.integers(-1000, 1000, sa, dtype=dtype)
        b = rng.integers(1, 50, sb, dtype=dtype) * rng.choice(np.array([-1, 1], dtype), sb)
        if a.size >= 2:
            a.reshape(-1)[:2] = [info.min, info.max]
        if b.size >= 1:
            b.reshape(-1)[0] = -1
        shape = np.broadcast_shapes(sa, sb)
        ab, bb = np.broadcast_to(a, shape), np.broadcast_to(b, shape)
        with np.errstate(over="ignore"):
            for op, ref in [("Add", ab + bb), ("Sub", ab - bb), ("Mul", ab * bb), ("Div", trunc_div(ab, bb, dtype)),
                            ("RealDiv", trunc_div(ab, bb, dtype))]:
                cases.append((op, [a, b], [(acl_dtype(dtype), list(shape))], None))
                refs.append(ref)
    for (rc, msg, (y,)), ref, case in zip(run_ops(tmp_path, cases), refs, cases):
        assert rc == 0 and msg is None, (case[0], msg)
        assert_bits_equal(y, ref)


# --- Cast -------------------------------------------------------------------------------------

# ge::DataType codes (hicann/metadef inc/external/graph/types.h), equal to the aclDataType codes.
DST_TYPE = {"float32": 0, "float16": 1, "int8": 2, "int32": 3, "uint8": 4, "int64": 9, "float64": 11, "bool": 12,
            "bfloat16": 27}
NP_OF = {"float32": np.float32, "float16": np.float16, "int8": np.int8, "int32": np.int32, "uint8": np.uint8,
         "int64": np.int64, "float64": np.float64, "bool": np.bool_, "bfloat16": BF16}


def test_dst_type_codes_are_the_acl_dtype_codes():
    for name, code in DST_TYPE.items():
        assert acl_dtype(NP_OF[name]) == code


def saturating_cast(x: np.ndarray, dtype) -> np.ndarray:
    """The contract's float -> integer rule: truncate toward zero, NaN -> 0, saturate."""
    info = np.iinfo(dtype)
    out = []
    for v in x.astype(np.float64).reshape(-1).tolist():
        out.append(0 if v != v else max(info.min, min(info.max, int(v) if abs(v) < 2.0 ** 64 else
                                                      (info.max if v > 0 else info.min))))
    return np.array(out, dtype).reshape(x.shape)


FLOAT_TO_INT = np.array([0.0, -0.0, 0.5, -0.5, 0.99999994, -1.5, 2.5, 126.9, 127.5, 128.0, -128.7, -129.0, 255.9,
                         256.0, 3.0e9, -3.0e9, 2147483520.0, 9.3e18, -9.3e18, 9223372036854775808.0, 1e30, -1e30,
                         np.inf, -np.inf, np.nan, -np.nan], np.float32)


@pytest.mark.parametrize("src", ["float32", "float16", "bfloat16", "float64"])
def test_cast_float_to_integer_truncates_and_saturates(tmp_path, src):
    with np.errstate(over="ignore"):
        x = FLOAT_TO_INT.astype(NP_OF[src])
    cases, refs = [], []
    for dst in ("int8", "uint8", "int32", "int64"):
        cases.append(("Cast", [x], [(acl_dtype(NP_OF[dst]), [x.size])], {"dst_type": DST_TYPE[dst]}))
        refs.append(saturating_cast(x, NP_OF[dst]))
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        assert y.tolist() == ref.tolist()


def test_cast_bool_and_integer_conversions(tmp_path):
    f = np.array([0.0, -0.0, 0.25, -3.0, np.nan, np.inf], np.float32)
    b = np.array([True, False, True])
    raw = np.array([0, 1, 2, 255], np.uint8).view(np.bool_)  # non-canonical true bytes
    i = np.array([-129, 128, 300, -1, 2**31 - 1], np.int64)
    results = run_ops(tmp_path, [
        ("Cast", [f], [(ACL_BOOL, [6])], {"dst_type": 12}),
        ("Cast", [b], [(ACL_FLOAT, [3])], {"dst_type": 0}),
        ("Cast", [b], [(ACL_INT64, [3])], {"dst_type": 9}),
        ("Cast", [raw], [(ACL_INT32, [4])], {"dst_type": 3}),
        ("Cast", [raw], [(ACL_BF16, [4])], {"dst_type": 27}),
        ("Cast", [i], [(ACL_INT8, [5])], {"dst_type": 2}),
        ("Cast", [i], [(ACL_UINT8, [5])], {"dst_type": 4}),
        ("Cast", [i], [(ACL_DOUBLE, [5])], {"dst_type": 11}),
        ("Cast", [i.astype(np.int32)], [(ACL_FLOAT16, [5])], {"dst_type": 1}),
        ("Cast", [i], [(ACL_INT32, [5])], {"dst_type": 9}),
    ])
    assert [r[0] for r in results[:9]] == [0] * 9
    assert results[0][2][0].tolist() == [False, False, True, True, True, True]  # x != 0 (NaN != 0)
    assert_bits_equal(results[1][2][0], b.astype(np.float32))
    assert results[2][2][0].tolist() == [1, 0, 1]
    assert results[3][2][0].tolist() == [0, 1, 1, 1]  # any non-zero byte is true -> 1
    assert_bits_equal(results[4][2][0], np.array([0, 1, 1, 1], np.float32).astype(BF16))
    assert results[5][2][0].tolist() == i.astype(np.int8).tolist()  # integer -> integer wraps like NumPy
    assert results[6][2][0].tolist() == i.astype(np.uint8).tolist()
    assert_bits_equal(results[7][2][0], i.astype(np.float64))
    with np.errstate(over="ignore"):
        assert_bits_equal(results[8][2][0], i.astype(np.int32).astype(np.float16))
    assert results[9][0] == ACL_ERROR_OP_ATTR_NOT_MATCH
    assert "Cast: attribute dst_type=9 does not match output 0 dtype ACL_INT32 (3)" in results[9][1]


# --- TruncateDiv and the prototypes' dtypes (hicann/ops-math@c4193324 math/<op>/op_graph/<op>_proto.h)

INT_TYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.int64]


@pytest.mark.parametrize("dtype", INT_TYPES, ids=lambda t: np.dtype(t).name)
def test_truncate_div_truncates_toward_zero_and_defines_division_by_zero(tmp_path, dtype):
    """Integers: C division (toward zero, INT_MIN / -1 wraps); x / 0 is the arch35 kernel's value:
    -1 for int8/int16/int32, for int64 4294967295 if 0 <= x < INT64_MAX else -1, all ones for the
    unsigned types (the README: undefined). Broadcasting [4, 1] against [1, 5]."""
    info = np.iinfo(dtype)
    signed = info.min < 0
    a = np.array([[info.min if signed else 0], [info.max], [7 if signed else 9], [-9 if signed else 200]], dtype)
    b = np.array([[-1 if signed else 1, 2, 0, 3, -4 if signed else 4]], dtype)
    bits = info.bits
    want = np.empty((4, 5), dtype)
    for i, x in enumerate(a[:, 0].tolist()):
        for j, y in enumerate(b[0].tolist()):
            if y == 0:
                if dtype is np.int64:
                    q = 4294967295 if 0 <= x < info.max else -1
                else:
                    q = -1 if signed else info.max
            else:
                q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
                q = (q + 2 ** (bits - 1)) % 2 ** bits - 2 ** (bits - 1) if signed else q
            want[i, j] = q
    ((rc, msg, (y,)),) = run_ops(tmp_path, [("TruncateDiv", [a, b], [(acl_dtype(dtype), [4, 5])], None)])
    assert rc == 0 and msg is None, msg
    assert_bits_equal(y, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.float64], ids=["float32", "float16", "bfloat16",
                                                                                   "float64"])
def test_truncate_div_of_floats_is_the_truncated_quotient(tmp_path, dtype):
    """trunc(x1 / x2) with the quotient in float32 (double for double), the sign kept (-0.0)."""
    a = np.array([7.5, -7.5, 1.0, -0.5, 0.0, np.inf, np.nan, 5.0], np.float32).astype(dtype)
    b = np.array([2.0, 2.0, 3.0, 4.0, -1.0, 2.0, 1.0, 0.0], np.float32).astype(dtype)
    compute = np.float64 if dtype is np.float64 else np.float32
    with np.errstate(divide="ignore", invalid="ignore"):
        want = np.trunc(a.astype(compute) / b.astype(compute)).astype(dtype)
    ((rc, msg, (y,)),) = run_ops(tmp_path, [("TruncateDiv", [a, b], [(acl_dtype(dtype), [8])], None)])
    assert rc == 0 and msg is None, msg
    assert_bits_equal(y, want)


@pytest.mark.parametrize("op,dtype", [("TruncateDiv", np.bool_), ("TruncateDiv", np.uint32), ("Add", np.uint16),
                                      ("Add", np.uint64), ("Sub", np.uint32), ("Div", np.uint64),
                                      ("RealDiv", np.uint32), ("Mul", np.bool_)])
def test_dtypes_the_prototype_does_not_list_are_refused(tmp_path, op, dtype):
    a = np.ones(3, dtype)
    ((rc, msg, _),) = run_ops(tmp_path, [(op, [a, a], [(acl_dtype(dtype), [3])], None)])
    assert rc == ACL_ERROR_UNSUPPORTED_DATA_TYPE and f"{op}: input 0 (x1) has unsupported dtype" in msg, (rc, msg)


@pytest.mark.parametrize("op", ["Sub", "Mul", "Div", "RealDiv"])
def test_uint16_arithmetic_is_listed_except_for_add(tmp_path, op):
    a, b = np.array([9, 65535, 4], np.uint16), np.array([2, 2, 4], np.uint16)
    with np.errstate(over="ignore"):
        want = {"Sub": a - b, "Mul": a * b, "Div": a // b, "RealDiv": a // b}[op]
    ((rc, msg, (y,)),) = run_ops(tmp_path, [(op, [a, b], [(acl_dtype(np.uint16), [3])], None)])
    assert rc == 0 and msg is None, msg
    assert_bits_equal(y, want)
