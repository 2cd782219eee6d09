"""ReduceSum(x, axes; keep_dims, noop_with_empty_axes) on the simulator, bit for bit against a
NumPy reference (hicann/ops-math@c4193324 math/reduce_sum/op_graph/reduce_sum_proto.h:55 and the
shape rules of common/inc/op_host/infershape_reduce_util.h): axes (int32/int64, constant or in
device memory) in [-rank, rank-1], negative ones wrap, a repeated axis counts once; empty axes
give x unchanged when noop_with_empty_axes (the default) and reduce every axis otherwise.

Numerics the simulator documents (CANN does not pin the order): each output element adds its
inputs in row-major order starting from the first one (so a sum of -0.0 stays -0.0 and an empty
reduction is +0), float32 accumulation for float32/float16/bfloat16 with one rounding at the
end, float64 for float64, integers wrap.

ReduceMean (hicann/ops-math@60ac0cca math/reduce_mean/op_graph/reduce_mean_proto.h, same inputs,
attributes and shape rules): that sum, in the accumulator, divided by the number of reduced
elements and rounded once; float types only in the simulator.
"""

import numpy as np
import pytest

from acl_ctypes import (
    ACL_ERROR_OP_INPUT_NOT_MATCH,
    ACL_ERROR_OP_OUTPUT_NOT_MATCH,
    ACL_ERROR_UNSUPPORTED_DATA_TYPE,
    ACL_FLOAT,
    BF16,
    acl_dtype,
    assert_bits_equal,
    const,
    run_ops,
)

pytestmark = pytest.mark.usefixtures("sim_dir")


def reduce_sum_ref(x: np.ndarray, axes, keep_dims: bool, noop_empty: bool) -> np.ndarray:
    rank = x.ndim
    if len(axes) == 0 and noop_empty:
        return x.copy()
    red = sorted({a % rank for a in axes}) if len(axes) else list(range(rank))
    kept = [d for d in range(rank) if d not in red]
    out_shape = [x.shape[d] for d in kept]
    acc_t = {np.dtype(np.float64): np.float64, np.dtype(np.int32): np.int32,
             np.dtype(np.int64): np.int64}.get(x.dtype, np.float32)
    cols = np.transpose(x, kept + red).reshape(int(np.prod(out_shape)), -1).astype(acc_t)
    if cols.shape[1] == 0:
        acc = np.zeros(cols.shape[0], acc_t)
    else:
        acc = cols[:, 0].copy()
        with np.errstate(all="ignore"):
            for j in range(1, cols.shape[1]):
                acc = acc + cols[:, j]  # the row-major order of the reduced positions
    y = acc.reshape(out_shape).astype(x.dtype)
    if keep_dims:
        y = y.reshape([1 if d in red else x.shape[d] for d in range(rank)])
    return y


def sample(rng, shape, dtype):
    if np.dtype(dtype).kind == "i":
        info = np.iinfo(dtype)
        x = rng.integers(info.min // 4, info.max // 4, shape, dtype=dtype)  # sums wrap
    else:
        x = (rng.standard_normal(shape) * 10).astype(np.float32)
        x.reshape(-1)[:3] = [6e4 if dtype is np.float16 else 1e8, -0.0, 3e-8]  # absorbs small terms
        x = x.astype(dtype)
    return x


AXES = [([0], False), ([1], True), ([-1], False), ([0, 2], False), ([2, 0], True), ([1, -2], False),
        ([0, 1, 2], False), ([-3, -2, -1], True)]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.float64, np.int32, np.int64],
                         ids=["float32", "float16", "bfloat16", "float64", "int32", "int64"])
def test_reduce_sum_axes_and_keep_dims(tmp_path, dtype):
    rng = np.random.default_rng(16)
    x = sample(rng, (3, 4, 5), dtype)
    cases, refs = [], []
    for i, (axes, keep) in enumerate(AXES):
        a = np.array(axes, np.int32 if i % 2 else np.int64)
        ref = reduce_sum_ref(x, axes, keep, True)
        attrs = {"keep_dims": keep} if keep else None
        cases.append(("ReduceSum", [x, const(a)], [(acl_dtype(dtype), list(ref.shape))], attrs))
        refs.append(ref)
        cases.append(("ReduceSum", [x, a], [(acl_dtype(dtype), list(ref.shape))], attrs))  # axes in device memory
        refs.append(ref)
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(y, ref)


def test_empty_axes_scalars_and_empty_tensors(tmp_path):
    rng = np.random.default_rng(17)
    x = sample(rng, (2, 3), np.float32)
    no_axes = const(np.zeros(0, np.int64))
    cases = [
        ("ReduceSum", [x, no_axes], [(ACL_FLOAT, [2, 3])], None),  # noop_with_empty_axes (default): identity
        ("ReduceSum", [x, no_axes], [(ACL_FLOAT, [])], {"noop_with_empty_axes": False}),  # reduce all
        ("ReduceSum", [x, no_axes], [(ACL_FLOAT, [1])], {"noop_with_empty_axes": False}),  # scalar passed as [1]
        ("ReduceSum", [x, no_axes], [(ACL_FLOAT, [1, 1])], {"noop_with_empty_axes": False, "keep_dims": True}),
        ("ReduceSum", [np.array(2.5, np.float32), const(np.array([0], np.int32))], [(ACL_FLOAT, [])], None),
        ("ReduceSum", [np.zeros((0, 3), np.float32), const(np.array([0], np.int32))], [(ACL_FLOAT, [3])], None),
        ("ReduceSum", [np.zeros((0, 3), np.float32), const(np.array([1], np.int32))], [(ACL_FLOAT, [0])], None),
        ("ReduceSum", [np.full((4, 2), -0.0, np.float32), const(np.array([0], np.int32))], [(ACL_FLOAT, [2])], None),
        ("ReduceSum", [np.array([[np.inf, -np.inf], [np.nan, 1.0]], np.float32), const(np.array([1], np.int32))],
         [(ACL_FLOAT, [2])], None),
    ]
    results = run_ops(tmp_path, cases)
    assert [r[0] for r in results] == [0] * len(cases), [r[1] for r in results]
    ys = [r[2][0] for r in results]
    assert_bits_equal(ys[0], x)
    total = reduce_sum_ref(x, [], False, False)
    assert_bits_equal(ys[1], total)
    assert_bits_equal(ys[2], total.reshape(1))
    assert_bits_equal(ys[3], total.reshape(1, 1))
    assert ys[4].tolist() == 2.5
    assert_bits_equal(ys[5], np.zeros(3, np.float32))  # nothing to add: +0
    assert ys[6].shape == (0,)
    assert_bits_equal(ys[7], np.full(2, -0.0, np.float32))  # started from the first term
    assert np.isnan(ys[8]).tolist() == [True, True]


def test_the_summation_order_is_observable(tmp_path):
    x = np.array([[1e8, 1.0, -1e8, 1.0] * 8], np.float32)
    ((rc, _, (y,)),) = run_ops(tmp_path, [("ReduceSum", [x, const(np.array([1], np.int32))], [(ACL_FLOAT, [1])],
                                          None)])
    assert rc == 0
    assert_bits_equal(y, reduce_sum_ref(x, [1], False, True))
    assert y[0] != np.float32(x.astype(np.float64).sum())


def test_errors(tmp_path):
    x = np.ones((2, 3), np.float32)
    results = run_ops(tmp_path, [
        ("ReduceSum", [x, const(np.array([2], np.int32))], [(ACL_FLOAT, [2])], None),
        ("ReduceSum", [x, const(np.array([-3], np.int64))], [(ACL_FLOAT, [2])], None),
        ("ReduceSum", [x, const(np.array([1.0], np.float32))], [(ACL_FLOAT, [2])], None),
        ("ReduceSum", [x, const(np.array([[1]], np.int32))], [(ACL_FLOAT, [2])], None),
        ("ReduceSum", [x, const(np.array([1], np.int32))], [(ACL_FLOAT, [2, 1])], None),
        ("ReduceSum", [x.astype(bool), const(np.array([1], np.int32))], [(acl_dtype(bool), [2])], None),
        ("ReduceSum", [x, const(np.array([1], np.int32))], [(acl_dtype(np.float16), [2])], None),
        ("ReduceSum", [x], [(ACL_FLOAT, [2])], None),
    ])
    assert [r[0] for r in results] == [ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_UNSUPPORTED_DATA_TYPE, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_OP_OUTPUT_NOT_MATCH, ACL_ERROR_UNSUPPORTED_DATA_TYPE,
                                       ACL_ERROR_OP_OUTPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH]
    msgs = [r[1] for r in results]
    assert "ReduceSum: input 1 (axes) [2]: axis 2 is out of range [-2, 1] for x [2,3]" in msgs[0]
    assert "axis -3 is out of range [-2, 1]" in msgs[1]
    assert "input 1 (axes) has dtype ACL_FLOAT, expected one of ACL_INT32, ACL_INT64" in msgs[2]
    assert "input 1 (axes) has shape [1,1], expected 1-D" in msgs[3]
    assert "output 0 (y) has shape [2,1], expected [2] (x reduced over axes)" in msgs[4]
    assert "expected 2 input(s), got 1" in msgs[7]


def reduce_mean_ref(x: np.ndarray, axes, keep_dims: bool, noop_empty: bool) -> np.ndarray:
    """reduce_sum_ref's sum before its rounding, divided by the count in the accumulator type."""
    if len(axes) == 0 and noop_empty:
        return x.copy()
    acc_t = np.float64 if x.dtype == np.float64 else np.float32
    total = reduce_sum_ref(x.astype(acc_t), axes, keep_dims, noop_empty)
    reduced = {a % x.ndim for a in axes} if len(axes) else set(range(x.ndim))
    count = acc_t(np.prod([x.shape[d] for d in reduced]))
    with np.errstate(all="ignore"):
        return (total / count).astype(x.dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.float64],
                         ids=["float32", "float16", "bfloat16", "float64"])
def test_reduce_mean_axes_and_keep_dims(tmp_path, dtype):
    rng = np.random.default_rng(18)
    x = sample(rng, (3, 4, 5), dtype)
    cases, refs = [], []
    for i, (axes, keep) in enumerate(AXES):
        a = np.array(axes, np.int32 if i % 2 else np.int64)
        ref = reduce_mean_ref(x, axes, keep, True)
        attrs = {"keep_dims": keep} if keep else None
        cases.append(("ReduceMean", [x, const(a) if i % 3 else a], [(acl_dtype(dtype), list(ref.shape))], attrs))
        refs.append(ref)
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(y, ref)


def test_reduce_mean_empty_axes_empty_tensors_and_errors(tmp_path):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    no_axes = const(np.zeros(0, np.int64))
    results = run_ops(tmp_path, [
        ("ReduceMean", [x, no_axes], [(ACL_FLOAT, [2, 3])], None),  # noop_with_empty_axes (default)
        ("ReduceMean", [x, no_axes], [(ACL_FLOAT, [])], {"noop_with_empty_axes": False}),  # every axis
        ("ReduceMean", [np.zeros((0, 3), np.float32), const(np.array([0], np.int32))], [(ACL_FLOAT, [3])], None),
        ("ReduceMean", [x.astype(np.int32), const(np.array([1], np.int32))], [(acl_dtype(np.int32), [2])], None),
        ("ReduceMean", [x, const(np.array([2], np.int32))], [(ACL_FLOAT, [2])], None),
    ])
    assert [r[0] for r in results] == [0, 0, 0, ACL_ERROR_UNSUPPORTED_DATA_TYPE, ACL_ERROR_OP_INPUT_NOT_MATCH]
    assert_bits_equal(results[0][2][0], x)
    assert results[1][2][0].tolist() == 2.5  # 15 / 6
    assert np.isnan(results[2][2][0]).tolist() == [True] * 3  # 0 / 0
    assert "ReduceMean: input 1 (axes) [2]: axis 2 is out of range [-2, 1]" in results[4][1]


# ReduceMax / ReduceMin (hicann/ops-math@c4193324 math/reduce_max/op_graph/reduce_max_proto.h,
# math/reduce_min/op_graph/reduce_min_proto.h: ReduceSum's inputs, attributes and shape rules):
# NumPy's np.max / np.min (a NaN among the inputs gives NaN, as np.max does) are the reference.
EXTREME_TYPES = [np.float32, np.float16, BF16, np.float64, np.int32, np.int64]
EXTREME_IDS = ["float32", "float16", "bfloat16", "float64", "int32", "int64"]


@pytest.mark.parametrize("dtype", EXTREME_TYPES, ids=EXTREME_IDS)
def test_reduce_max_and_min(tmp_path, dtype):
    rng = np.random.default_rng(41)
    x = rng.integers(-50, 50, (3, 4, 5)).astype(dtype)
    if np.dtype(dtype).kind == "f":
        x[0, 1, 2] = np.nan  # its outputs are NaN
        x[1, 2, :] = -np.inf
        x[2, 0, 0] = np.inf
        x[2, 3, 4] = -0.0
    cases, refs = [], []
    for axes, keep in [([1], False), ([-1], True), ([0, 2], False), ([0, 1, 2], False), ([2, -1], True)]:
        for op, fn in [("ReduceMax", np.max), ("ReduceMin", np.min)]:
            ref = np.asarray(fn(x, axis=tuple(sorted({a % 3 for a in axes})), keepdims=keep))
            cases.append((op, [x, const(np.array(axes, np.int64))], [(acl_dtype(dtype), list(ref.shape))],
                          {"keep_dims": keep}))
            refs.append(ref.astype(dtype))
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(y.reshape(ref.shape), ref, nan_payload=False) if np.dtype(dtype).kind == "f" else \
            assert_bits_equal(y.reshape(ref.shape), ref)


def test_reduce_max_over_no_element_is_refused(tmp_path):
    x = np.zeros((2, 0, 3), np.float32)
    results = run_ops(tmp_path, [
        ("ReduceMax", [x, const(np.array([1], np.int64))], [(ACL_FLOAT, [2, 3])], None),
        ("ReduceMin", [x, const(np.array([0], np.int64))], [(ACL_FLOAT, [0, 3])], None),  # nothing to compute
        ("ReduceMax", [x.astype(np.int8), const(np.array([1], np.int64))], [(acl_dtype(np.int8), [2, 3])], None),
    ])
    assert results[0][0] == ACL_ERROR_OP_INPUT_NOT_MATCH
    assert "ReduceMax: input 0 (x) [2,0,3] has no element to take the maximum of" in results[0][1]
    assert results[1][0] == 0, results[1][1]
    assert results[2][0] == ACL_ERROR_UNSUPPORTED_DATA_TYPE


# ReduceAny / ReduceAll (hicann/ops-math@c4193324 math/reduce_any/op_graph/reduce_any_proto.h: x bool
# or float32; math/reduce_all/op_graph/reduce_all_proto.h: x bool, bfloat16, float32, float16; y
# bool; TF's reduce_any / reduce_all): NumPy's np.any / np.all are the reference (a float is true when
# it is not 0, NaN included; over no element: False / True).
LOGICAL = [("ReduceAny", np.any, [np.bool_, np.float32]),
           ("ReduceAll", np.all, [np.bool_, BF16, np.float32, np.float16])]


@pytest.mark.parametrize("op, fn, types", LOGICAL, ids=[op for op, _, _ in LOGICAL])
def test_reduce_any_and_all(tmp_path, op, fn, types):
    rng = np.random.default_rng(43)
    cases, refs = [], []
    for dtype in types:
        x = (rng.random((3, 4, 5)) < 0.7).astype(dtype)
        x[1] = 1  # a slab of all-true rows
        x[2, 0] = 0  # an all-false row
        if np.dtype(dtype).kind == "f":
            x[0, 1, 2] = np.nan  # true
            x[0, 2, :] = -0.0  # false
        for shape, axes, keep in [((3, 4, 5), [1], False), ((3, 4, 5), [-1], True), ((3, 4, 5), [0, 2], False),
                                  ((3, 4, 5), [0, 1, 2], False), ((3, 4, 5), [], False), ((2, 0, 3), [1], True)]:
            xs = x if shape == (3, 4, 5) else np.zeros(shape, dtype)
            ref = np.asarray(fn(xs.astype(np.float32) != 0, axis=tuple(sorted({a % 3 for a in axes})) or None,
                                keepdims=keep))
            cases.append((op, [xs, const(np.array(axes, np.int64))], [(acl_dtype(np.bool_), list(ref.shape))],
                          {"keep_dims": keep}))
            refs.append(ref)
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(y.reshape(ref.shape), ref)


def test_reduce_any_and_all_errors(tmp_path):
    x = np.ones((2, 3), np.bool_)
    axes = const(np.array([1], np.int64))
    results = run_ops(tmp_path, [
        ("ReduceAny", [x.astype(np.int32), axes], [(acl_dtype(np.bool_), [2])], None),
        ("ReduceAll", [x, axes], [(ACL_FLOAT, [2])], None),
        ("ReduceAny", [x, np.array([1], np.int64)], [(acl_dtype(np.bool_), [2])], None),
        ("ReduceAll", [x, const(np.array([2], np.int64))], [(acl_dtype(np.bool_), [2])], None),
        ("ReduceAny", [x, axes], [(acl_dtype(np.bool_), [3])], None),
    ])
    assert [r[0] for r in results] == [ACL_ERROR_UNSUPPORTED_DATA_TYPE, ACL_ERROR_UNSUPPORTED_DATA_TYPE,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_OP_OUTPUT_NOT_MATCH]
    assert "ReduceAny: input 1 (axes) must be a constant input" in results[2][1]
    assert "axis 2 is out of range [-2, 1]" in results[3][1]


# -- ReduceProd (hicann/ops-math math/reduce_prod: TensorFlow's ReduceProd) ----------------------

def prod_in_order(x, axes, keep_dims):
    """The product of each output's inputs in row-major order, from the first, rounded as the
    simulator's float32 (float16 / bfloat16 in float32, once at the end) or wrapping integers."""
    acc = np.float32 if x.dtype in (np.float16, BF16, np.float32) else x.dtype
    moved = np.moveaxis(x.astype(acc), axes, range(-len(axes), 0))
    flat = moved.reshape(*moved.shape[:moved.ndim - len(axes)], -1)
    out = np.ones(flat.shape[:-1], acc)
    with np.errstate(over="ignore"):
        for k in range(flat.shape[-1]):
            out = (out * flat[..., k]).astype(acc)
    if keep_dims:
        out = np.expand_dims(out, tuple(sorted(a % x.ndim for a in axes)))
    return out.astype(x.dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.float64, np.int32, np.int64],
                         ids=["float32", "float16", "bfloat16", "float64", "int32", "int64"])
def test_reduce_prod(tmp_path, dtype):
    rng = np.random.default_rng(41)
    x = (rng.integers(-3, 4, (3, 4, 5)) if np.dtype(dtype).kind == "i" else rng.uniform(0.5, 1.5, (3, 4, 5)))
    x = x.astype(dtype)
    cases, refs = [], []
    for axes, keep in [([1], True), ([0, 2], False), ([-1], False), ([0, 1, 2], True)]:
        ref = prod_in_order(x, axes, keep)
        cases.append(("ReduceProd", [x, const(np.array(axes, np.int64))], [(acl_dtype(dtype), list(ref.shape))],
                      {"keep_dims": keep}))
        refs.append(ref)
    empty = np.zeros((2, 0, 3), dtype)
    cases.append(("ReduceProd", [empty, const(np.array([1], np.int64))], [(acl_dtype(dtype), [2, 3])], None))
    refs.append(np.ones((2, 3), dtype))  # the empty product
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(y, ref)
