"""GatherElements and ScatterElements on the simulator against NumPy references of their CANN
semantics (mindspore-ai/graphengine@cd75e149 .../ops/selection_ops.h:287 GatherElements: "Compatible
with the PyTorch operator Gather"; matrix_calculation_ops.h:794 ScatterElements: attrs axis and
reduction "none" / "add" / "mul"; hicann/ops-nn@e5c3fa93 index/scatter_elements/op_kernel/arch35/
scatter_elements.h addresses updates with their own strides, so, as in torch, the index tensor
may be smaller than the others). Out-of-range indices are device faults: tests/cann/test_sim_faults.py.

Both exist only on Ascend 950 in the SoC matrix: these children run with ACLSIM_SOC_NAME=Ascend950PR.
Choices the spec leaves open (documented in docs/cann_ops.md): ScatterElements applies updates in
row-major order of the index tensor, so with "none" and a repeated index the last update wins;
float16/bfloat16 "add"/"mul" round after every update.
"""

import ml_dtypes
import numpy as np
import pytest

from acl_ctypes import (
    ACL_ERROR_OP_ATTR_NOT_MATCH,
    ACL_ERROR_OP_INPUT_NOT_MATCH,
    ACL_ERROR_OP_OUTPUT_NOT_MATCH,
    ACL_ERROR_UNSUPPORTED_DATA_TYPE,
    ACL_FLOAT,
    Out,
    acl_dtype,
    assert_bits_equal,
    run_ops,
)

pytestmark = pytest.mark.usefixtures("sim_dir")
BF16 = ml_dtypes.bfloat16
SOC = {"ACLSIM_SOC_NAME": "Ascend950PR"}
DTYPES = [np.float32, np.float16, BF16, np.int32, np.int64]
IDS = ["float32", "float16", "bfloat16", "int32", "int64"]


def values(rng, shape, dtype):
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-100, 100, shape).astype(dtype)
    x = rng.standard_normal(shape).astype(np.float32)
    x.reshape(-1)[:2] = [np.nan, -0.0]
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
@pytest.mark.parametrize("reduction", ["none", "add", "mul"])
def test_scatter_elements(tmp_path, dtype, reduction):
    rng = np.random.default_rng(19)
    cases, refs = [], []
    for i, (ds, ish, us, axis) in enumerate(SCATTER):
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
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases, **SOC), refs):
        assert rc == 0 and msg is None, msg
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
