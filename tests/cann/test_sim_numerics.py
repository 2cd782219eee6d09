"""Simulator numerics, bit for bit against NumPy / ml_dtypes: dtype conversions (via Cast),
EluGrad (the spec in docs/elugrad.md), elementwise ops, matmul and data movement."""

import warnings

import numpy as np
import pytest

from acl_ctypes import ACL_BF16, ACL_BOOL, ACL_FLOAT, ACL_FLOAT16, ACL_INT32, ACL_INT64, BF16, acl_dtype, run_ops

pytestmark = pytest.mark.usefixtures("sim_dir")


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view({2: np.uint16, 4: np.uint32, 8: np.uint64, 1: np.uint8}[a.dtype.itemsize])


def assert_bits_equal(actual: np.ndarray, expected: np.ndarray):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    a, e = bits(actual), bits(expected)
    bad = np.flatnonzero(a.reshape(-1) != e.reshape(-1))
    assert bad.size == 0, (f"{bad.size} mismatches, first at {bad[0]}: got {a.reshape(-1)[bad[0]]:#x}, "
                           f"expected {e.reshape(-1)[bad[0]]:#x}")


def special_f32() -> np.ndarray:
    pats = [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FA00000,
            0x7F802000, 0x7F801FFF, 0x00000001, 0x80000001, 0x007FFFFF, 0x00800000, 0x33000000, 0x33000001,
            0x337FFFFF, 0x33800000, 0x387FC000, 0x387FE000, 0x387FF000, 0x38800000, 0x38801000, 0x38802000,
            0x38803000, 0x477FE000, 0x477FEFFF, 0x477FF000, 0x47800000, 0x3F800000, 0x3F801000, 0x3F803000,
            0x3F808000, 0x3F818000, 0x3F7FFFFF, 0x7F7FFFFF, 0xC7800000, 0x3F80FFFF]
    rng = np.random.default_rng(1)
    rand = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32)
    # values near the float16 range, where rounding matters most
    near = (rng.integers(0x33000000, 0x47900000, 100_000, dtype=np.uint64).astype(np.uint32)
            | (rng.integers(0, 2, 100_000, dtype=np.uint64).astype(np.uint32) << 31))
    return np.concatenate([np.array(pats, np.uint32), rand, near]).view(np.float32)


def test_fp16_and_bf16_to_fp32_are_exact_for_every_bit_pattern(tmp_path):
    all16 = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    h, b = all16.view(np.float16), all16.view(BF16)
    (rc1, _, (y1,)), (rc2, _, (y2,)) = run_ops(tmp_path, [
        ("Cast", [h], [(ACL_FLOAT, [65536])], {"dst_type": ACL_FLOAT}),
        ("Cast", [b], [(ACL_FLOAT, [65536])], {"dst_type": ACL_FLOAT}),
    ])
    assert rc1 == 0 and rc2 == 0
    assert_bits_equal(y1, h.astype(np.float32))  # NaN payloads kept, not quieted
    assert_bits_equal(y2, b.astype(np.float32))


def test_fp32_to_fp16_and_bf16_round_like_numpy_and_ml_dtypes(tmp_path):
    x = special_f32()
    (rc1, _, (h,)), (rc2, _, (b,)) = run_ops(tmp_path, [
        ("Cast", [x], [(ACL_FLOAT16, [x.size])], {"dst_type": ACL_FLOAT16}),
        ("Cast", [x], [(ACL_BF16, [x.size])], {"dst_type": ACL_BF16}),
    ])
    assert rc1 == 0 and rc2 == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_bits_equal(h, x.astype(np.float16))
        assert_bits_equal(b, x.astype(BF16))


def elu_grad_ref(g: np.ndarray, a: np.ndarray) -> np.ndarray:
    """docs/elugrad.md: float32 math, strict a < 0, select, one cast back."""
    g32, a32 = g.astype(np.float32), a.astype(np.float32)
    with np.errstate(all="ignore"):
        y32 = np.where(a32 < np.float32(0), g32 * (a32 + np.float32(1)), g32)
        return y32.astype(g.dtype)


ELU_SPECIALS = np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, -1.0, 1.0, -0.5, -1e-30, 1e-30, -65504.0,
                         3.0e38, -3.0e38, -1.0000001, -0.99999994], np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16], ids=["float32", "float16", "bfloat16"])
def test_elugrad_matches_the_spec_bit_for_bit(tmp_path, dtype):
    rng = np.random.default_rng(7)
    cases, refs = [], []
    # every special value of activations against every special grad, plus U(-2, 2) data
    ga, aa = np.meshgrid(ELU_SPECIALS, ELU_SPECIALS)
    with np.errstate(over="ignore"):  # +-3e38 overflow to inf in float16
        g = np.concatenate([ga.ravel(), rng.uniform(-2, 2, 4096).astype(np.float32)]).astype(dtype)
        a = np.concatenate([aa.ravel(), rng.uniform(-2, 2, 4096).astype(np.float32)]).astype(dtype)
    cases.append(("EluGrad", [g, a], [(acl_dtype(dtype), list(g.shape))], None))
    refs.append(elu_grad_ref(g, a))
    for rank in range(0, 9):  # ranks 0..8
        shape = [2 if i % 3 == 0 else 1 + i % 2 for i in range(rank)]
        g = rng.uniform(-2, 2, shape).astype(np.float32).astype(dtype)
        a = rng.uniform(-2, 2, shape).astype(np.float32).astype(dtype)
        cases.append(("EluGrad", [np.asarray(g), np.asarray(a)], [(acl_dtype(dtype), shape)], None))
        refs.append(elu_grad_ref(np.asarray(g), np.asarray(a)))
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None
        assert_bits_equal(y, ref)


def test_elugrad_branches(tmp_path):
    g = np.array([3.0, 3.0, 3.0, 3.0, 3.0], np.float32)
    a = np.array([-0.5, 0.0, -0.0, np.nan, 2.0], np.float32)
    ((rc, _, (y,)),) = run_ops(tmp_path, [("EluGrad", [g, a], [(ACL_FLOAT, [5])], None)])
    assert rc == 0
    assert y.tolist() == [1.5, 3.0, 3.0, 3.0, 3.0]  # only a < 0 scales; 0, -0, NaN and > 0 pass grads


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64], ids=["float32", "float16", "float64"])
def test_binary_arithmetic_with_broadcasting_matches_numpy(tmp_path, dtype):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 1, 5)).astype(dtype)
    b = (rng.standard_normal((4, 1)) + 2.5).astype(dtype)
    code, out = acl_dtype(dtype), [3, 4, 5]
    ops = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide,
           "Maximum": np.maximum, "Minimum": np.minimum}
    results = run_ops(tmp_path, [(op, [a, b], [(code, out)], None) for op in ops])
    for (rc, msg, (y,)), (name, fn) in zip(results, ops.items()):
        assert rc == 0 and msg is None, name
        assert_bits_equal(y, fn(a, b))


def test_integer_arithmetic_wraps_and_truncates_like_numpy(tmp_path):
    a = np.array([2**31 - 1, -7, 7, -2**31, 9], np.int32)
    b = np.array([1, 2, -2, -1, 3], np.int32)
    results = run_ops(tmp_path, [
        ("Add", [a, b], [(ACL_INT32, [5])], None),
        ("Mul", [a, b], [(ACL_INT32, [5])], None),
        ("Div", [a, b], [(ACL_INT32, [5])], None),
        ("Add", [a.astype(np.int64), b.astype(np.int64)], [(ACL_INT64, [5])], None),
    ])
    with np.errstate(all="ignore"):
        assert results[0][2][0].tolist() == (a + b).tolist()
        assert results[1][2][0].tolist() == (a * b).tolist()
    assert results[2][2][0].tolist() == [2**31 - 1, -3, -3, -2**31, 3]  # C truncation, INT_MIN / -1 wraps
    assert results[3][2][0].tolist() == (a.astype(np.int64) + b).tolist()


def test_unary_ops(tmp_path):
    x = np.array([-2.5, -0.0, 0.0, 0.5, 1.5, 2.5, np.nan, -np.inf], np.float32)
    h = x.astype(np.float16)
    results = run_ops(tmp_path, [
        ("Relu", [x], [(ACL_FLOAT, [8])], None),
        ("Relu", [h], [(ACL_FLOAT16, [8])], None),
        ("Neg", [x], [(ACL_FLOAT, [8])], None),
        ("Abs", [x], [(ACL_FLOAT, [8])], None),
        ("Round", [x], [(ACL_FLOAT, [8])], None),
        ("Floor", [x], [(ACL_FLOAT, [8])], None),
        ("Exp", [h], [(ACL_FLOAT16, [8])], {"base": -1.0, "scale": 1.0, "shift": 0.0}),
        ("Relu", [np.array([-3, 0, 4], np.int32)], [(ACL_INT32, [3])], None),
    ])
    assert all(rc == 0 for rc, _, _ in results)
    assert_bits_equal(results[0][2][0], np.where(x < 0, np.float32(0), x))
    assert_bits_equal(results[1][2][0], np.where(h < 0, np.float16(0), h))
    assert_bits_equal(results[2][2][0], -x)
    assert_bits_equal(results[3][2][0], np.abs(x))
    assert_bits_equal(results[4][2][0], np.round(x))  # ties to even: -2.5 -> -2, 2.5 -> 2
    assert_bits_equal(results[5][2][0], np.floor(x))
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(results[6][2][0].astype(np.float32), np.exp(h).astype(np.float32), rtol=1e-3)
    assert results[7][2][0].tolist() == [0, 0, 4]


def test_compare_and_select(tmp_path):
    a = np.array([-1.0, 0.0, -0.0, np.nan, 2.0], np.float32)
    z = np.zeros(1, np.float32)
    cond = np.array([True, False, True, False, True])
    x1, x2 = np.arange(5, dtype=np.float32), -np.arange(5, dtype=np.float32)
    results = run_ops(tmp_path, [
        ("Less", [a, z], [(ACL_BOOL, [5])], None),
        ("LessEqual", [a, z], [(ACL_BOOL, [5])], None),
        ("Greater", [a, z], [(ACL_BOOL, [5])], None),
        ("Select", [cond, x1, x2], [(ACL_FLOAT, [5])], None),
    ])
    with np.errstate(invalid="ignore"):
        assert results[0][2][0].tolist() == (a < 0).tolist()
        assert results[1][2][0].tolist() == (a <= 0).tolist()
        assert results[2][2][0].tolist() == (a > 0).tolist()
    assert results[3][2][0].tolist() == np.where(cond, x1, x2).tolist()


def test_cast_between_float_int_and_bool(tmp_path):
    x = np.array([-2.7, -0.5, 0.0, 0.5, 2.7, 100.0], np.float32)
    i = np.array([-3, 0, 7, 2**24 + 1], np.int64)
    results = run_ops(tmp_path, [
        ("Cast", [x], [(ACL_INT32, [6])], {"dst_type": ACL_INT32}),
        ("Cast", [x], [(ACL_BOOL, [6])], {"dst_type": ACL_BOOL}),
        ("Cast", [i], [(ACL_FLOAT, [4])], {"dst_type": ACL_FLOAT}),
        ("Cast", [i], [(ACL_INT32, [4])], {"dst_type": ACL_FLOAT}),  # attr/output mismatch
    ])
    assert results[0][2][0].tolist() == x.astype(np.int32).tolist()
    assert results[1][2][0].tolist() == x.astype(bool).tolist()
    assert_bits_equal(results[2][2][0], i.astype(np.float32))
    assert results[3][0] == 100023 and "dst_type=0 does not match output 0 dtype ACL_INT32" in results[3][1]


@pytest.mark.parametrize("a_shape,b_shape,adj", [
    ((3, 4), (4, 5), (False, False)),
    ((2, 3, 4), (4, 5), (False, False)),
    ((2, 1, 3, 4), (3, 4, 5), (False, False)),
    ((4,), (4, 5), (False, False)),
    ((3, 4), (4,), (False, False)),
    ((4, 3), (5, 4), (True, True)),
])
def test_batch_matmul_matches_numpy(tmp_path, a_shape, b_shape, adj):
    rng = np.random.default_rng(5)
    a = rng.integers(-4, 5, a_shape).astype(np.float32)  # small integers: every sum is exact
    b = rng.integers(-4, 5, b_shape).astype(np.float32)
    ea = np.swapaxes(a, -1, -2) if adj[0] else a
    eb = np.swapaxes(b, -1, -2) if adj[1] else b
    ref = np.matmul(ea, eb)
    attrs = {"adj_x1": adj[0], "adj_x2": adj[1]}
    results = run_ops(tmp_path, [
        ("BatchMatMul", [a, b], [(ACL_FLOAT, list(ref.shape))], attrs),
        ("BatchMatMul", [a.astype(np.float16), b.astype(np.float16)], [(ACL_FLOAT16, list(ref.shape))], attrs),
        ("BatchMatMul", [a.astype(np.int32), b.astype(np.int32)], [(ACL_INT32, list(ref.shape))], attrs),
    ])
    assert [r[0] for r in results] == [0, 0, 0]
    assert_bits_equal(results[0][2][0], ref)
    assert_bits_equal(results[1][2][0], ref.astype(np.float16))
    assert results[2][2][0].tolist() == ref.astype(np.int32).tolist()


def test_gemm_with_alpha_beta_and_broadcast_c(tmp_path):
    rng = np.random.default_rng(9)
    a = rng.standard_normal((3, 4)).astype(np.float16)
    b = rng.standard_normal((5, 4)).astype(np.float16)
    c = rng.standard_normal((5,)).astype(np.float16)
    alpha, beta = np.array([0.5], np.float32), np.array([2.0], np.float32)
    ((rc, msg, (y,)),) = run_ops(tmp_path, [
        ("GEMM", [a, b, c, alpha, beta], [(ACL_FLOAT16, [3, 5])], {"transpose_a": False, "transpose_b": True})])
    assert rc == 0 and msg is None
    ref = (0.5 * (a.astype(np.float32) @ b.astype(np.float32).T) + 2.0 * c.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(y.astype(np.float32), ref.astype(np.float32), rtol=2e-3, atol=2e-3)


def test_transpose_and_broadcast_to(tmp_path):
    x = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
    v = np.arange(3, dtype=np.float16).reshape(3, 1)
    results = run_ops(tmp_path, [
        ("TransposeD", [x], [(ACL_INT64, [4, 2, 3])], {"perm": [2, 0, 1]}),
        ("BroadcastToD", [v], [(ACL_FLOAT16, [2, 3, 4])], {"shape": [2, 3, 4]}),
        ("TransposeD", [x], [(ACL_INT64, [4, 2, 3])], {"perm": [2, 2, 1]}),
    ])
    assert results[0][2][0].tolist() == x.transpose(2, 0, 1).tolist()
    assert_bits_equal(results[1][2][0], np.broadcast_to(v, (2, 3, 4)).copy())
    assert results[2][0] == 100023 and "perm [2,2,1] is not a permutation of rank 3" in results[2][1]


def test_fill_with_a_const_dims_input():
    from acl_ctypes import run_child
    result, _ = run_child("""
        acl.init()
        s = acl.stream()
        dims = np.array([2, 3], np.int64)
        value = np.array([1.5], np.float32)
        d_rank = (ctypes.c_int64 * 1)(2)
        d_one = (ctypes.c_int64 * 1)(1)
        d_out = (ctypes.c_int64 * 2)(2, 3)
        desc_dims = acl.lib.aclCreateTensorDesc(ACL_INT64, 1, d_rank, ACL_FORMAT_ND)
        assert acl.lib.aclSetTensorConst(desc_dims, dims.ctypes.data, dims.nbytes) == 0
        desc_val = acl.lib.aclCreateTensorDesc(ACL_FLOAT, 1, d_one, ACL_FORMAT_ND)
        desc_out = acl.lib.aclCreateTensorDesc(ACL_FLOAT, 2, d_out, ACL_FORMAT_ND)
        pv, py = acl.to_device(value), acl.malloc(24)
        bufs_in = [acl.lib.aclCreateDataBuffer(dims.ctypes.data, dims.nbytes), acl.lib.aclCreateDataBuffer(pv, 4)]
        buf_out = acl.lib.aclCreateDataBuffer(py, 24)
        dims[:] = 0  # the const data was copied by aclSetTensorConst
        arr = lambda *v: (ctypes.c_void_p * len(v))(*v)
        rc = acl.op_lib.aclopCompileAndExecute(b"Fill", 2, arr(desc_dims, desc_val), arr(*bufs_in), 1, arr(desc_out),
                                               arr(buf_out), None, 0, 0, None, s)
        acl.lib.aclrtSynchronizeStream(s)
        result = {"rc": rc, "y": acl.from_device(py, (2, 3), np.float32).tolist()}
    """)
    assert result == {"rc": 0, "y": [[1.5] * 3] * 2}


def k_order_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """float32 y[i,j] = sum over p in increasing order of a[i,p]*b[p,j], every product and
    partial sum rounded to float32 (no FMA): the simulator's documented accumulation order."""
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for p in range(a.shape[1]):
        acc = acc + np.multiply.outer(a[:, p], b[p, :]).astype(np.float32)
    return acc


def test_fp32_matmul_accumulates_in_k_order(tmp_path):
    """Random fp32 (rounding in every step): BatchMatMul (as the EP's MatMul sends it: adj
    attrs false, also transposed) and GEMM (A, B, C, alpha, beta) are bit-exact against the
    k-order float32 reference, GEMM's epilogue being alpha*acc + beta*c in float32."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal((7, 37)).astype(np.float32)
    b = rng.standard_normal((37, 5)).astype(np.float32)
    c = rng.standard_normal((7, 5)).astype(np.float32)
    alpha, beta = np.array([0.75], np.float32), np.array([1.25], np.float32)
    results = run_ops(tmp_path, [
        ("BatchMatMul", [a, b], [(ACL_FLOAT, [7, 5])], {"adj_x1": False, "adj_x2": False}),
        ("BatchMatMul", [a.T.copy(), b.T.copy()], [(ACL_FLOAT, [7, 5])], {"adj_x1": True, "adj_x2": True}),
        ("GEMM", [a, b, c, alpha, beta], [(ACL_FLOAT, [7, 5])], {"transpose_a": False, "transpose_b": False}),
    ])
    assert [r[0] for r in results] == [0, 0, 0]
    ref = k_order_matmul(a, b)
    assert_bits_equal(results[0][2][0], ref)
    assert_bits_equal(results[1][2][0], ref)
    assert_bits_equal(results[2][2][0], (np.float32(0.75) * ref + np.float32(1.25) * c).astype(np.float32))
    # and a different order would have shown: NumPy's (pairwise/BLAS) sum differs somewhere
    assert not np.array_equal(ref, a @ b)


def test_per_op_type_counters():
    from acl_ctypes import run_child
    result, _ = run_child("""
        acl.init()
        x = np.ones((2, 3), np.float32)
        for op in ["Add", "Add", "Mul", "Neg"]:
            ins = [x] if op == "Neg" else [x, x]
            rc, msg, _ = acl.op(op, ins, [(ACL_FLOAT, [2, 3])])
            assert rc == 0, msg
        assert acl.lib.aclrtSynchronizeDevice() == 0
        acl.lib.aclsimOpCounts.restype = ctypes.c_char_p
        counts = acl.lib.aclsimOpCounts().decode()
        stats = [acl.stat("op:Add"), acl.stat("op:Mul"), acl.stat("op:Sub"), acl.stat("ops_executed")]
        acl.lib.aclsimResetStats()
        result = [counts, stats, acl.lib.aclsimOpCounts().decode(), acl.stat("op:Add")]
    """)
    assert result == ["Add=2,Mul=1,Neg=1", [2, 1, 0, 4], "", 0]
