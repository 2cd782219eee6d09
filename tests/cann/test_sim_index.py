"""GatherElements and ScatterElements on the simulator against NumPy references of their CANN
semantics (mindspore-ai/graphengine@cd75e149 .../ops/selection_ops.h:287 GatherElements: "Compatible
with the PyTorch operator Gather"; matrix_calculation_ops.h:794 ScatterElements: attrs axis and
reduction "none" / "add" / "mul"; hicann/ops-nn@e5c3fa93 index/scatter_elements/op_kernel/arch35/
scatter_elements.h addresses updates with their own strides, so, as in torch, the index tensor
may be smaller than the others). Out-of-range indices are device faults: tests/cann/test_sim_faults.py.

Both exist only on Ascend 950 in the SoC matrix: these children run with ACLSIM_SOC_NAME=Ascend950PR.
GatherElementsV2 and ScatterNonAliasingAdd (hicann/ops-nn@e5c3fa93 index/gather_elements_v2/,
index/scatter_non_aliasing_add/) run on Ascend910B1 (the A2 row of their READMEs is supported).
Choices the spec leaves open (documented in docs/cann_ops.md): ScatterElements applies updates in
row-major order of the index tensor, so with "none" and a repeated index the last update wins;
float16/bfloat16 "add"/"mul" round after every update.
"""

import itertools

import numpy as np
import pytest

from acl_ctypes import (
    ACL_ERROR_OP_ATTR_NOT_MATCH,
    ACL_ERROR_OP_INPUT_NOT_MATCH,
    ACL_ERROR_OP_OUTPUT_NOT_MATCH,
    ACL_ERROR_RT_AICORE_EXCEPTION,
    ACL_ERROR_UNSUPPORTED_DATA_TYPE,
    ACL_FLOAT,
    ACL_FLOAT16,
    ACL_INT32,
    BF16,
    Out,
    acl_dtype,
    assert_bits_equal,
    run_child,
    run_ops,
)

pytestmark = pytest.mark.usefixtures("sim_dir")
SOC = {"ACLSIM_SOC_NAME": "Ascend950PR"}
DTYPES = [np.float32, np.float16, BF16, np.int32, np.int64]
IDS = ["float32", "float16", "bfloat16", "int32", "int64"]


def values(rng, shape, dtype):
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-100, 100, shape).astype(dtype)
    x = rng.standard_normal(shape).astype(np.float32)
    x.reshape(-1)[:2] = [np.nan, -0.0][:x.size]
    return x.astype(dtype)


def gather_ref(x, index, dim):
    grid = list(np.indices(index.shape))
    grid[dim] = index
    return x[tuple(grid)]


def scatter_ref(data, indices, updates, axis, reduction):
    y = data.copy()
    grid = np.indices(indices.shape).reshape(indices.ndim, -1).T
    for pos in grid:  # row-major order of indices
        target = list(pos)
        target[axis] = indices[tuple(pos)]
        u = updates[tuple(pos)]
        if reduction == "none":
            y[tuple(target)] = u
        elif np.dtype(data.dtype).kind in "iu":
            with np.errstate(over="ignore"):
                y[tuple(target)] = y[tuple(target)] + u if reduction == "add" else y[tuple(target)] * u
        else:  # float32 math, one rounding per update
            a, b = np.float32(y[tuple(target)]), np.float32(u)
            with np.errstate(all="ignore"):
                y[tuple(target)] = (a + b if reduction == "add" else a * b).astype(data.dtype)
    return y


# (x shape, index shape, dim): same shape, negative dims, index smaller than x off the dim axis.
GATHER = [((3, 4, 5), (3, 4, 5), 0), ((3, 4, 5), (3, 2, 5), 1), ((3, 4, 5), (2, 4, 7), -1), ((3, 4, 5), (1, 1, 1), -2),
          ((6,), (10,), 0), ((2, 3), (0, 3), 0)]


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_gather_elements(tmp_path, dtype):
    rng = np.random.default_rng(18)
    cases, refs = [], []
    for i, (xs, ish, dim) in enumerate(GATHER):
        x = values(rng, xs, dtype)
        index = rng.integers(0, xs[dim], ish).astype(np.int32 if i % 2 else np.int64)
        ref = gather_ref(x, index, dim)
        cases.append(("GatherElements", [x, index], [(acl_dtype(dtype), list(ish))], {"dim": dim}))
        refs.append(ref)
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases, **SOC), refs):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(y, ref)  # copies: NaN payloads and -0.0 kept


def test_gather_elements_default_dim_and_other_dtypes(tmp_path):
    x = np.array([[True, False], [False, True]])
    index = np.array([[1, 0], [1, 1]], np.int32)
    u8 = np.arange(6, dtype=np.uint8).reshape(3, 2)
    results = run_ops(tmp_path, [("GatherElements", [x, index], [(acl_dtype(bool), [2, 2])], None),
                                 ("GatherElements", [u8, index], [(acl_dtype(np.uint8), [2, 2])], {"dim": 0})], **SOC)
    assert_bits_equal(results[0][2][0], gather_ref(x, index, 0))
    assert_bits_equal(results[1][2][0], gather_ref(u8, index, 0))


# (data shape, indices shape, updates shape, axis)
SCATTER = [((4, 5), (4, 5), (4, 5), 0), ((4, 5), (2, 3), (3, 4), 1), ((3, 4, 2), (3, 6, 2), (3, 6, 2), -2),
           ((5,), (8,), (8,), 0), ((2, 3), (0, 3), (1, 3), 0)]


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_scatter_elements(tmp_path, dtype):
    """Every reduction (none, add, mul), each shape of SCATTER, out of place and in place: one child process per dtype."""
    cases, refs, reductions = [], [], []
    for reduction, (i, (ds, ish, us, axis)) in itertools.product(["none", "add", "mul"], enumerate(SCATTER)):
        if i == 0:
            rng = np.random.default_rng(19)  # each reduction's data as when it ran on its own
        data, updates = values(rng, ds, dtype), values(rng, us, dtype)
        indices = rng.integers(0, ds[axis], ish).astype(np.int64 if i % 2 else np.int32)  # with repeats
        attrs = {"axis": axis, "reduction": reduction}
        if reduction == "none" and axis == 0:
            attrs = None  # the defaults
        ref = scatter_ref(data, indices, updates, axis, reduction)
        cases.append(("ScatterElements", [data, indices, updates], [(acl_dtype(dtype), list(ds))], attrs))
        refs.append(ref)
        # in place: y is data's own buffer
        cases.append(("ScatterElements", [data, indices, updates], [Out(acl_dtype(dtype), ds, alias=0)], attrs))
        refs.append(ref)
        reductions += [reduction, reduction]
    results = run_ops(tmp_path, cases, **SOC)
    assert len(results) == len(refs) == 30
    for (rc, msg, (y,)), ref, reduction in zip(results, refs, reductions):
        assert rc == 0 and msg is None, (reduction, msg)
        assert_bits_equal(y, ref, nan_payload=reduction == "none")


def test_scatter_none_with_a_repeated_index_keeps_the_last_update(tmp_path):
    data = np.zeros(3, np.float32)
    ((rc, _, (y,)),) = run_ops(tmp_path, [("ScatterElements", [data, np.array([1, 1, 1], np.int32),
                                                               np.array([5.0, 6.0, 7.0], np.float32)],
                                           [(ACL_FLOAT, [3])], None)], **SOC)
    assert rc == 0 and y.tolist() == [0.0, 7.0, 0.0]


def test_errors(tmp_path):
    x = np.ones((2, 3), np.float32)
    i = np.zeros((2, 3), np.int32)
    results = run_ops(tmp_path, [
        ("GatherElements", [x, i.astype(np.float32)], [(ACL_FLOAT, [2, 3])], None),
        ("GatherElements", [x, i[0]], [(ACL_FLOAT, [3])], None),
        ("GatherElements", [x, np.zeros((2, 4), np.int32)], [(ACL_FLOAT, [2, 4])], {"dim": 0}),
        ("GatherElements", [x, i], [(ACL_FLOAT, [2, 3])], {"dim": 2}),
        ("GatherElements", [x, i], [(ACL_FLOAT, [3, 2])], None),
        ("GatherElements", [x.astype(np.float64), i], [(acl_dtype(np.float64), [2, 3])], None),
        ("ScatterElements", [x, i, x], [(ACL_FLOAT, [2, 3])], {"reduction": "max"}),
        ("ScatterElements", [x, i, x[:, :2]], [(ACL_FLOAT, [2, 3])], None),
        ("ScatterElements", [x, i, x.astype(np.float16)], [(ACL_FLOAT, [2, 3])], None),
        ("ScatterElements", [x, i, x], [(ACL_FLOAT, [3, 2])], None),
        ("ScatterElements", [x, i, x], [(ACL_FLOAT, [2, 3])], {"axis": -3}),
    ], **SOC)
    assert [r[0] for r in results] == [ACL_ERROR_UNSUPPORTED_DATA_TYPE, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_ATTR_NOT_MATCH,
                                       ACL_ERROR_OP_OUTPUT_NOT_MATCH, ACL_ERROR_UNSUPPORTED_DATA_TYPE,
                                       ACL_ERROR_OP_ATTR_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_OUTPUT_NOT_MATCH,
                                       ACL_ERROR_OP_ATTR_NOT_MATCH]
    msgs = [r[1] for r in results]
    assert "GatherElements: input 1 (index) has dtype ACL_FLOAT, expected one of ACL_INT32, ACL_INT64" in msgs[0]
    assert "input 1 (index) has shape [3], expected rank 2 (x [2,3])" in msgs[1]
    assert "input 1 (index) has shape [2,4], larger than x [2,3] on dim 1" in msgs[2]
    assert "attribute dim is 2, expected a value in [-2, 1]" in msgs[3]
    assert "output 0 (y) has shape [3,2], expected [2,3] (the shape of index)" in msgs[4]
    assert 'attribute reduction is "max", expected "none", "add" or "mul"' in msgs[6]
    assert "input 1 (indices) has shape [2,3], larger than updates [2,2] on dim 1" in msgs[7]
    assert "attribute axis is -3, expected a value in [-2, 1]" in msgs[10]


# --- GatherElementsV2 and ScatterNonAliasingAdd (on Ascend 910B) ------------------------------------

SOC_910B = {"ACLSIM_SOC_NAME": "Ascend910B1"}
V2_DTYPES = [np.float32, np.float16, BF16, np.int32]  # gather_elements_v2_def.cpp
V2_IDS = ["float32", "float16", "bfloat16", "int32"]


def take_along(x, index, dim):
    """torch.gather via np.take_along_axis: x cropped to index's size off `dim`, negatives wrapped."""
    dim %= x.ndim
    crop = tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(index.shape))
    return np.take_along_axis(x[crop], np.where(index < 0, index + x.shape[dim], index), axis=dim)


# (x shape, index shape, dim): GATHER plus rank 8.
GATHER_V2 = GATHER + [((2, 1, 2, 1, 2, 1, 2, 3), (2, 1, 1, 1, 2, 1, 2, 5), -1)]


@pytest.mark.parametrize("dtype", V2_DTYPES, ids=V2_IDS)
def test_gather_elements_v2(tmp_path, dtype):
    """Index values in [-size, size) (aclnnGather.md: [-self.shape[dim], self.shape[dim] - 1]; the
    kernels add size to negatives)."""
    rng = np.random.default_rng(28)
    cases, refs = [], []
    for xs, ish, dim in GATHER_V2:
        x = values(rng, xs, dtype)
        index = rng.integers(-xs[dim], xs[dim], ish).astype(np.int32)
        cases.append(("GatherElementsV2", [x, index], [(acl_dtype(dtype), list(ish))], {"dim": dim}))
        refs.append(take_along(x, index, dim))
    x = values(rng, (3, 2), dtype)
    index = np.array([[2, -3], [-1, 0]], np.int32)
    cases.append(("GatherElementsV2", [x, index], [(acl_dtype(dtype), [2, 2])], None))  # dim defaults to 0
    refs.append(np.array([[x[2, 0], x[0, 1]], [x[2, 0], x[0, 1]]], dtype))
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases, **SOC_910B), refs):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(y, ref)


def test_gather_elements_v2_errors_and_faults(tmp_path):
    x = np.ones((2, 3), np.float32)
    i = np.zeros((2, 3), np.int32)
    refused = [np.int64, np.int8, np.int16, np.uint8, np.uint16, np.uint32, np.uint64, np.float64, bool]
    cases = [("GatherElementsV2", [x.astype(t), i], [(acl_dtype(t), [2, 3])], None) for t in refused]
    x9, i9 = np.ones((1,) * 9, np.float32), np.zeros((1,) * 9, np.int32)
    cases += [
        ("GatherElementsV2", [x, i.astype(np.int64)], [(ACL_FLOAT, [2, 3])], None),
        ("GatherElementsV2", [x9, i9], [(ACL_FLOAT, [1] * 9)], None),
        ("GatherElementsV2", [x, i[0]], [(ACL_FLOAT, [3])], None),
        ("GatherElementsV2", [x, np.zeros((3, 3), np.int32)], [(ACL_FLOAT, [3, 3])], {"dim": 1}),
        ("GatherElementsV2", [x, i], [(ACL_FLOAT, [2, 3])], {"dim": -3}),
        ("GatherElementsV2", [x, i], [(ACL_FLOAT, [3, 2])], None),
        ("GatherElementsV2", [x, i], [(ACL_FLOAT16, [2, 3])], None),
        ("GatherElementsV2", [x], [(ACL_FLOAT, [2, 3])], None),
        ("GatherElementsV2", [x, np.array([[0, 3, 0]], np.int32)], [(ACL_FLOAT, [1, 3])], {"dim": 1}),
        ("GatherElementsV2", [x, np.array([[0], [-3]], np.int32)], [(ACL_FLOAT, [2, 1])], {"dim": 0}),
    ]
    results = run_ops(tmp_path, cases, **SOC_910B)
    n = len(refused)
    assert [r[0] for r in results] == [ACL_ERROR_UNSUPPORTED_DATA_TYPE] * (n + 1) + [
        ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
        ACL_ERROR_OP_ATTR_NOT_MATCH, ACL_ERROR_OP_OUTPUT_NOT_MATCH, ACL_ERROR_OP_OUTPUT_NOT_MATCH,
        ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_RT_AICORE_EXCEPTION, ACL_ERROR_RT_AICORE_EXCEPTION]
    msgs = [r[1] for r in results]
    assert ("GatherElementsV2: input 0 (x) has dtype ACL_INT64, expected one of ACL_FLOAT, ACL_FLOAT16, ACL_BF16, "
            "ACL_INT32") in msgs[0]
    assert "input 1 (index) has dtype ACL_INT64, expected one of ACL_INT32" in msgs[n]
    assert "input 0 (x) has shape [1,1,1,1,1,1,1,1,1], rank 9, expected at most 8" in msgs[n + 1]
    assert "input 1 (index) has shape [3], expected rank 2 (x [2,3])" in msgs[n + 2]
    assert "input 1 (index) has shape [3,3], larger than x [2,3] on dim 0" in msgs[n + 3]
    assert "attribute dim is -3, expected a value in [-2, 1]" in msgs[n + 4]
    assert "output 0 (y) has shape [3,2], expected [2,3] (the shape of index)" in msgs[n + 5]
    assert "output 0 (y) has dtype ACL_FLOAT16, expected ACL_FLOAT" in msgs[n + 6]
    assert "GatherElementsV2: input 1 (index) holds 3 at [0,1], outside [-3, 3) (dim 1 of x [2,3])" in msgs[n + 8]
    assert "GatherElementsV2: input 1 (index) holds -3 at [1,0], outside [-2, 2) (dim 0 of x [2,3])" in msgs[n + 9]


def scatter_add_ref(x, indices, updates):
    """np.add.at in index order: one float16 rounding per update, int32 wraps."""
    y = x.copy()
    k = indices.shape[-1]
    if k == 0:
        for u in updates.reshape((-1,) + x.shape):
            np.add.at(y, (Ellipsis,), u)
        return y
    np.add.at(y, tuple(indices.reshape(-1, k).T), updates.reshape((-1,) + x.shape[k:]))
    return y


# (x shape, indices shape): K = indices.shape[-1] = rank, < rank, 0, batch dims, no tuples, rank 8.
NON_ALIASING = [((5,), (7, 1)), ((4, 3), (6, 1)), ((4, 3), (2, 3, 2)), ((2, 3, 4), (5, 2)), ((2, 3, 4), (2, 2, 1)),
                ((3, 4), (2, 0)), ((3, 4), (0, 2)), ((2, 1, 2, 1, 2, 1, 2, 2), (9, 8)), ((2, 1, 2, 1, 2, 1, 2, 2), (3, 3))]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32], ids=["float32", "float16", "int32"])
def test_scatter_non_aliasing_add(tmp_path, dtype):
    rng = np.random.default_rng(29)
    cases, refs = [], []
    for i, (xs, ish) in enumerate(NON_ALIASING):
        k = ish[-1]
        x = values(rng, xs, dtype)
        updates = values(rng, ish[:-1] + xs[k:], dtype)
        cols = [rng.integers(0, xs[d], ish[:-1]) for d in range(k)]  # with repeats
        indices = np.stack(cols, -1).astype(np.int64 if i % 2 else np.int32) if k else np.zeros(ish, np.int32)
        ref = scatter_add_ref(x, indices, updates)
        for out in [(acl_dtype(dtype), xs), Out(acl_dtype(dtype), xs, alias=0)]:  # and y in x's buffer
            cases.append(("ScatterNonAliasingAdd", [x, indices, updates], [out], None))
            refs.append(ref)
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases, **SOC_910B), refs):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(y, ref, nan_payload=False)


def test_scatter_non_aliasing_add_repeats_round_per_update_and_wrap(tmp_path):
    """float16: 2048 + 1 rounds back to 2048 each time (summing the updates first would give 2050);
    int32 wraps."""
    h = np.array([2048, 2048, 0], np.float16), np.array([[1], [1], [0], [1]], np.int32)
    hu = np.array([0.5, 1, 1, 1], np.float16)
    w = np.array([2**31 - 1, -2**31, 5], np.int32), np.array([[0], [1], [0], [1]], np.int64)
    wu = np.array([1, -1, 2, -3], np.int32)
    results = run_ops(tmp_path, [("ScatterNonAliasingAdd", [h[0], h[1], hu], [(ACL_FLOAT16, [3])], None),
                                 ("ScatterNonAliasingAdd", [w[0], w[1], wu], [(ACL_INT32, [3])], None)], **SOC_910B)
    assert results[0][2][0].tolist() == [2048.0, 2048.0, 0.0]
    assert results[0][2][0].tolist() == scatter_add_ref(h[0], h[1], hu).tolist()
    assert results[1][2][0].tolist() == [-2**31 + 2, 2**31 - 4, 5]
    assert results[1][2][0].tolist() == scatter_add_ref(*w, wu).tolist()


def test_scatter_non_aliasing_add_errors(tmp_path):
    x = np.ones((4, 3), np.float32)
    i = np.array([[0], [3]], np.int32)
    u = np.ones((2, 3), np.float32)
    refused = [BF16, np.int64, np.int8, np.uint8, np.int16, np.float64, bool]
    cases = [("ScatterNonAliasingAdd", [x.astype(t), i, u.astype(t)], [(acl_dtype(t), [4, 3])], None)
             for t in refused]
    cases += [
        ("ScatterNonAliasingAdd", [x, i.astype(np.float32), u], [(ACL_FLOAT, [4, 3])], None),
        ("ScatterNonAliasingAdd", [x, i.astype(np.int16), u], [(ACL_FLOAT, [4, 3])], None),
        ("ScatterNonAliasingAdd", [x, i, u.astype(np.float16)], [(ACL_FLOAT, [4, 3])], None),
        ("ScatterNonAliasingAdd", [x, i, u], [(ACL_INT32, [4, 3])], None),
        ("ScatterNonAliasingAdd", [x, np.zeros((2, 3), np.int32), u], [(ACL_FLOAT, [4, 3])], None),
        ("ScatterNonAliasingAdd", [x, np.array(0, np.int32), u], [(ACL_FLOAT, [4, 3])], None),
        ("ScatterNonAliasingAdd", [x, i, u[:, :2]], [(ACL_FLOAT, [4, 3])], None),
        ("ScatterNonAliasingAdd", [x, i, u[:1]], [(ACL_FLOAT, [4, 3])], None),
        ("ScatterNonAliasingAdd", [x, i, u], [(ACL_FLOAT, [3, 4])], None),
        ("ScatterNonAliasingAdd", [np.ones((1,) * 9, np.float32), np.zeros((1, 1), np.int32),
                                   np.ones((1,) * 9, np.float32)], [(ACL_FLOAT, [1] * 9)], None),
        ("ScatterNonAliasingAdd", [x, i], [(ACL_FLOAT, [4, 3])], None),
        ("ScatterNonAliasingAdd", [x, np.array([[0], [4]], np.int64), u], [(ACL_FLOAT, [4, 3])], None),
        ("ScatterNonAliasingAdd", [x, np.array([[0, 0], [1, -1]], np.int32), u[:, 0]], [(ACL_FLOAT, [4, 3])], None),
    ]
    results = run_ops(tmp_path, cases, **SOC_910B)
    n = len(refused)
    assert [r[0] for r in results] == [ACL_ERROR_UNSUPPORTED_DATA_TYPE] * (n + 2) + [
        ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_OUTPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
        ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
        ACL_ERROR_OP_OUTPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
        ACL_ERROR_RT_AICORE_EXCEPTION, ACL_ERROR_RT_AICORE_EXCEPTION]
    msgs = [r[1] for r in results]
    assert ("ScatterNonAliasingAdd: input 0 (x) has dtype ACL_BF16, expected one of ACL_FLOAT16, ACL_FLOAT, "
            "ACL_INT32") in msgs[0]
    assert "input 1 (indices) has dtype ACL_INT16, expected one of ACL_INT32, ACL_INT64" in msgs[n + 1]
    assert "input 2 (updates) has dtype ACL_FLOAT16, expected ACL_FLOAT (the dtype of input 0 (x))" in msgs[n + 2]
    assert "output 0 (y) has dtype ACL_INT32, expected ACL_FLOAT" in msgs[n + 3]
    assert "input 1 (indices) has shape [2,3], expected rank >= 1 and a last dim (K) <= rank 2 of x [4,3]" in msgs[n + 4]
    assert "input 1 (indices) has shape [], expected rank >= 1" in msgs[n + 5]
    assert "input 2 (updates) has shape [2,2], expected [2,3] (indices.shape[:-1] + x.shape[1:])" in msgs[n + 6]
    assert "input 2 (updates) has shape [1,3], expected [2,3]" in msgs[n + 7]
    assert "output 0 (y) has shape [3,4], expected [4,3] (the shape of x)" in msgs[n + 8]
    assert "input 0 (x) has shape [1,1,1,1,1,1,1,1,1], rank 9, expected at most 8" in msgs[n + 9]
    assert "expected 3 input(s), got 2" in msgs[n + 10]
    assert ("AI Core exception in ScatterNonAliasingAdd: input 1 (indices) holds 4 at [1,0], outside [0, 4) "
            "(dim 0 of x [4,3])") in msgs[n + 11]
    assert "input 1 (indices) holds -1 at [1,1], outside [0, 3) (dim 1 of x [4,3])" in msgs[n + 12]


def test_scatter_non_aliasing_add_fault_writes_nothing():
    """A bad tuple after good ones: y (here x's own buffer) keeps x, none of the good updates added."""
    result, _ = run_child("""
acl.init()
x = np.arange(12, dtype=np.float32).reshape(4, 3)
px = acl.to_device(x)
indices = np.array([[0], [1], [-2]], np.int32)
rc, msg, _ = acl.op("ScatterNonAliasingAdd", [(ACL_FLOAT, [4, 3], px, x.nbytes), indices, np.ones((3, 3), np.float32)],
                    [Out(ACL_FLOAT, (4, 3), alias=0)])
result = {"rc": rc, "msg": msg, "y": acl.from_device(px, (4, 3), np.float32).tolist()}
""", **SOC_910B)
    assert result["rc"] == ACL_ERROR_RT_AICORE_EXCEPTION
    assert "input 1 (indices) holds -2 at [2,0], outside [0, 4)" in result["msg"]
    assert result["y"] == np.arange(12, dtype=np.float32).reshape(4, 3).tolist()


# --- ScatterNdUpdate (on Ascend 910B): var in place, slices written (TF ScatterNdUpdate) ------------

ND_UPDATE_DTYPES = [np.float32, np.float16, BF16, np.bool_, np.int64, np.int32, np.int16, np.int8]  # arch22 def


def scatter_update_ref(x, indices, updates):
    """Each K-tuple's slice written in index order (distinct tuples here, as ONNX requires)."""
    y = x.copy()
    k = indices.shape[-1]
    for t, u in zip(indices.reshape(-1, k), updates.reshape((-1,) + x.shape[k:])):
        y[tuple(t)] = u
    return y


@pytest.mark.parametrize("dtype", ND_UPDATE_DTYPES, ids=lambda t: np.dtype(t).name)
def test_scatter_nd_update(tmp_path, dtype):
    rng = np.random.default_rng(31)
    cases, refs = [], []
    for i, (xs, ish) in enumerate(NON_ALIASING):
        k = ish[-1]
        if k == 0:
            continue
        x = values(rng, xs, dtype) if dtype != np.bool_ else rng.random(xs) < 0.5
        updates = values(rng, ish[:-1] + xs[k:], dtype) if dtype != np.bool_ else rng.random(ish[:-1] + xs[k:]) < 0.5
        n = int(np.prod(ish[:-1]))
        flat = rng.permutation(int(np.prod(xs[:k])))[:n] if n <= np.prod(xs[:k]) else None
        if flat is None:
            continue  # more tuples than positions: a repeat, undefined in ONNX
        indices = np.stack(np.unravel_index(flat, xs[:k]), -1).reshape(ish).astype(np.int64 if i % 2 else np.int32)
        ref = scatter_update_ref(x, indices, updates)
        for out in [(acl_dtype(dtype), xs), Out(acl_dtype(dtype), xs, alias=0)]:
            cases.append(("ScatterNdUpdate", [x, indices, updates], [out], None))
            refs.append(ref)
    assert len(cases) >= 10
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases, **SOC_910B), refs):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(y, ref)


def test_scatter_nd_update_repeats_keep_the_last_and_errors(tmp_path):
    x = np.zeros((4, 2), np.float32)
    repeated = np.array([[1], [3], [1]], np.int64)
    u = np.array([[1, 2], [3, 4], [5, 6]], np.float32)
    results = run_ops(tmp_path, [
        ("ScatterNdUpdate", [x, repeated, u], [(ACL_FLOAT, [4, 2])], None),
        ("ScatterNdUpdate", [x.astype(np.float64), repeated, u.astype(np.float64)], [(acl_dtype(np.float64), [4, 2])],
         None),
        ("ScatterNdUpdate", [x, repeated, u[:2]], [(ACL_FLOAT, [4, 2])], None),
        ("ScatterNdUpdate", [x, np.array([[4], [0], [1]], np.int64), u], [(ACL_FLOAT, [4, 2])], None),
    ], **SOC_910B)
    assert results[0][0] == 0 and results[0][2][0].tolist() == [[0, 0], [5, 6], [0, 0], [3, 4]]
    assert results[1][0] == ACL_ERROR_UNSUPPORTED_DATA_TYPE
    assert results[2][0] == ACL_ERROR_OP_INPUT_NOT_MATCH and "expected [3,2]" in results[2][1]
    assert results[3][0] == ACL_ERROR_RT_AICORE_EXCEPTION and "holds 4 at [0,0], outside [0, 4)" in results[3][1]


# --- ScatterElementsV2 (on Ascend 910B): ScatterElements in place, the A2/A3 configuration's types ---

SE_V2_DTYPES = [np.float32, np.float16, BF16, np.int32, np.int8, np.uint8]  # scatter_elements_v2_def.cpp


@pytest.mark.parametrize("dtype", SE_V2_DTYPES, ids=["float32", "float16", "bfloat16", "int32", "int8", "uint8"])
def test_scatter_elements_v2(tmp_path, dtype):
    """Every reduction (none, add, mul), each shape of SCATTER: one child process per dtype."""
    cases, refs, reductions = [], [], []
    for reduction, (i, (ds, ish, us, axis)) in itertools.product(["none", "add", "mul"], enumerate(SCATTER)):
        if i == 0:
            rng = np.random.default_rng(23)  # each reduction's data as when it ran on its own
        data, updates = values(rng, ds, dtype), values(rng, us, dtype)
        indices = rng.integers(0, ds[axis], ish).astype(np.int64 if i % 2 else np.int32)  # with repeats
        attrs = {"axis": axis, "reduction": reduction, "include_self": True}
        ref = scatter_ref(data, indices, updates, axis, reduction)
        cases.append(("ScatterElementsV2", [data, indices, updates], [Out(acl_dtype(dtype), ds, alias=0)], attrs))
        refs.append(ref)
        reductions.append(reduction)
    results = run_ops(tmp_path, cases, **SOC_910B)
    assert len(results) == len(refs) == 15
    for (rc, msg, (y,)), ref, reduction in zip(results, refs, reductions):
        assert rc == 0 and msg is None, (reduction, msg)
        assert_bits_equal(y, ref, nan_payload=reduction == "none")


def test_scatter_elements_v2_bool_takes_none_only_and_refuses_what_it_lacks(tmp_path):
    data, i = np.array([True, False, True]), np.array([2, 0], np.int32)
    updates = np.array([False, True])
    x = np.ones((2, 3), np.float32)
    results = run_ops(tmp_path, [
        ("ScatterElementsV2", [data, i, updates], [Out(acl_dtype(bool), [3], alias=0)], None),
        ("ScatterElementsV2", [data, i, updates], [(acl_dtype(bool), [3])], {"reduction": "add"}),
        ("ScatterElementsV2", [x.astype(np.int64), np.zeros((2, 3), np.int32), x.astype(np.int64)],
         [(acl_dtype(np.int64), [2, 3])], None),
        ("ScatterElementsV2", [x, np.zeros((2, 3), np.int32), x], [(ACL_FLOAT, [2, 3])], {"include_self": False}),
    ], **SOC_910B)
    assert results[0][0] == 0 and results[0][2][0].tolist() == [True, False, False]
    assert [r[0] for r in results[1:]] == [ACL_ERROR_OP_ATTR_NOT_MATCH, ACL_ERROR_UNSUPPORTED_DATA_TYPE,
                                           ACL_ERROR_OP_ATTR_NOT_MATCH]
    assert 'bool data takes "none" only' in results[1][1]
    assert "include_self is false" in results[3][1]


def test_scatter_elements_v2_negative_index_is_a_fault(tmp_path):
    data = np.zeros((2, 3), np.float32)
    ((rc, msg, _),) = run_ops(tmp_path, [("ScatterElementsV2", [data, np.array([[-1], [0]], np.int64),
                                                                 np.ones((2, 1), np.float32)],
                                          [Out(ACL_FLOAT, [2, 3], alias=0)], {"axis": 1})], **SOC_910B)
    assert rc == ACL_ERROR_RT_AICORE_EXCEPTION and "holds -1 at [0,0], outside [0, 3)" in msg, (rc, msg)
