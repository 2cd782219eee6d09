"""Transpose (perm as a constant input; hicann/ops-math@c4193324 conversion/transpose/op_graph/
transpose_proto.h:41), Slice (offsets and size as constant inputs, size -1 = to the end; TF
Slice, mindspore-ai/graphengine@cd75e149 .../ops/selection_ops.h:924) and StridedSlice (begin,
end, strides as constant inputs, begin_mask / end_mask; TF StridedSlice, hicann/ops-math@c4193324
conversion/strided_slice/op_graph/strided_slice_proto.h) on the simulator, against NumPy's
transpose and basic slicing (Python's slice clamps as TF's StridedSlice does: a negative index + n,
then [0, n] for a positive stride, [-1, n - 1] for a negative one; a masked bound is None), for every dtype (they copy elements), including rank 0,
empty tensors and the errors (perm / offsets / size in device memory are refused: their values
decide the output shape, which is checked when the op is enqueued).
"""

import numpy as np
import pytest

from acl_ctypes import (
    ACL_ERROR_OP_ATTR_NOT_MATCH,
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
ALL = [np.float32, np.float16, BF16, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8, np.bool_]
ALL_IDS = ["float32", "float16", "bfloat16", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"]


def data(shape, dtype):
    n = int(np.prod(shape))
    return (np.arange(n) % 7 - 3).astype(np.float32).reshape(shape).astype(dtype)


@pytest.mark.parametrize("dtype", ALL, ids=ALL_IDS)
def test_transpose(tmp_path, dtype):
    cases, refs = [], []
    for shape, perm in [((2, 3, 4), (2, 0, 1)), ((2, 3, 4), (0, 1, 2)), ((5, 7), (1, 0)), ((2, 1, 3, 2), (3, 1, 0, 2)),
                        ((), ()), ((0, 3), (1, 0))]:
        x = data(shape, dtype)
        for ptype in (np.int32, np.int64):
            ref = np.transpose(x, perm)
            cases.append(("Transpose", [x, const(np.array(perm, ptype))], [(acl_dtype(dtype), list(ref.shape))],
                          None))
            refs.append(ref)
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(y, ref.copy())


@pytest.mark.parametrize("dtype", ALL, ids=ALL_IDS)
def test_slice(tmp_path, dtype):
    x = data((4, 5, 6), dtype)
    specs = [([0, 0, 0], [4, 5, 6]), ([1, 2, 3], [2, 2, 2]), ([1, 0, 2], [-1, -1, -1]), ([3, 4, 5], [1, 1, 1]),
             ([0, 5, 0], [4, 0, 6]), ([2, 1, 0], [-1, 3, 1])]
    cases, refs = [], []
    for i, (off, size) in enumerate(specs):
        t = np.int32 if i % 2 else np.int64
        ref = x[tuple(slice(o, x.shape[d] if s == -1 else o + s) for d, (o, s) in enumerate(zip(off, size)))]
        cases.append(("Slice", [x, const(np.array(off, t)), const(np.array(size, t))],
                      [(acl_dtype(dtype), list(ref.shape))], None))
        refs.append(ref)
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(y, ref.copy())


STRIDED_SPECS = [  # per dim (begin, end, stride); None = that bound's mask bit
    [(0, 4, 1), (0, 5, 2), (5, None, -1)],
    [(3, None, -1), (-1, -6, -2), (0, 6, 3)],
    [(-100, 100, 2), (100, -100, -1), (2, 2, 1)],
    [(None, None, -1), (None, 1, -3), (-2, None, 4)],
    [(1, 0, 1), (0, 5, -1), (None, None, 7)],
]


@pytest.mark.parametrize("dtype", ALL, ids=ALL_IDS)
def test_strided_slice(tmp_path, dtype):
    x = data((4, 5, 6), dtype)
    cases, refs = [], []
    for i, spec in enumerate(STRIDED_SPECS):
        t = np.int32 if i % 2 else np.int64
        begin = [0 if b is None else b for b, _, _ in spec]
        end = [0 if e is None else e for _, e, _ in spec]
        strides = [s for _, _, s in spec]
        begin_mask = sum(1 << d for d, (b, _, _) in enumerate(spec) if b is None)
        end_mask = sum(1 << d for d, (_, e, _) in enumerate(spec) if e is None)
        ref = x[tuple(slice(b, e, s) for b, e, s in spec)]
        cases.append(("StridedSlice", [x, const(np.array(begin, t)), const(np.array(end, t)),
                                       const(np.array(strides, t))],
                      [(acl_dtype(dtype), list(ref.shape))], {"begin_mask": begin_mask, "end_mask": end_mask}))
        refs.append(ref)
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(y, ref.copy())


def test_strided_slice_errors(tmp_path):
    x = np.ones((2, 3), np.float32)
    b, e, s = const(np.array([0, 0], np.int64)), const(np.array([2, 3], np.int64)), const(np.array([1, 2], np.int64))
    results = run_ops(tmp_path, [
        ("StridedSlice", [x, b, e, const(np.array([1, 0], np.int64))], [(ACL_FLOAT, [2, 3])], None),
        ("StridedSlice", [x, b, e, s], [(ACL_FLOAT, [2, 2])], {"shrink_axis_mask": 1}),
        ("StridedSlice", [x, np.array([0, 0], np.int64), e, s], [(ACL_FLOAT, [2, 2])], None),
        ("StridedSlice", [x, b, e, s], [(ACL_FLOAT, [2, 3])], None),
        ("StridedSlice", [x, const(np.array([0], np.int64)), e, s], [(ACL_FLOAT, [2, 2])], None),
        ("StridedSlice", [x, b, e, s], [(ACL_FLOAT, [2, 2])], None),
    ])
    assert [r[0] for r in results] == [ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_ATTR_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_OUTPUT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, 0]
    msgs = [r[1] for r in results]
    assert "StridedSlice: strides[1] must be non-zero" in msgs[0]
    assert "shrink_axis_mask 1 is not simulated" in msgs[1]
    assert "input 1 (begin) must be a constant input" in msgs[2]
    assert "output 0 (y) has shape [2,3], expected [2,2]" in msgs[3]
    assert "need one entry per dim of x [2,3]" in msgs[4]


def test_errors(tmp_path):
    x = np.ones((2, 3), np.float32)
    p = np.array([1, 0], np.int32)
    o, s = np.array([0, 1], np.int64), np.array([2, 2], np.int64)
    results = run_ops(tmp_path, [
        ("Transpose", [x, p], [(ACL_FLOAT, [3, 2])], None),  # perm in device memory
        ("Transpose", [x, const(np.array([1, 1], np.int32))], [(ACL_FLOAT, [3, 3])], None),
        ("Transpose", [x, const(np.array([0], np.int32))], [(ACL_FLOAT, [2])], None),
        ("Transpose", [x, const(p.astype(np.float32))], [(ACL_FLOAT, [3, 2])], None),
        ("Transpose", [x, const(p)], [(ACL_FLOAT, [2, 3])], None),
        ("Slice", [x, o, const(s)], [(ACL_FLOAT, [2, 2])], None),
        ("Slice", [x, const(np.array([0, 2], np.int64)), const(s)], [(ACL_FLOAT, [2, 2])], None),
        ("Slice", [x, const(np.array([3, 0], np.int64)), const(np.array([-1, -1], np.int64))], [(ACL_FLOAT, [0, 3])],
         None),
        ("Slice", [x, const(np.array([0], np.int64)), const(np.array([1], np.int64))], [(ACL_FLOAT, [1])], None),
        ("Slice", [x, const(o), const(s)], [(ACL_FLOAT, [2, 3])], None),
        ("Slice", [x, const(o), const(np.array([2, -2], np.int64))], [(ACL_FLOAT, [2, 2])], None),
    ])
    assert [r[0] for r in results] == [ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_ATTR_NOT_MATCH,
                                       ACL_ERROR_OP_ATTR_NOT_MATCH, ACL_ERROR_UNSUPPORTED_DATA_TYPE,
                                       ACL_ERROR_OP_OUTPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_OUTPUT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH]
    msgs = [r[1] for r in results]
    assert "Transpose: input 1 (perm) must be a constant input (aclSetTensorConst)" in msgs[0]
    assert "Transpose: input 1 (perm) [1,1] is not a permutation of rank 2" in msgs[1]
    assert "Transpose: output 0 has shape [2,3], expected [3,2]" in msgs[4]
    assert "Slice: input 1 (offsets) must be a constant input" in msgs[5]
    assert "size 2 of dim 1 does not fit x [2,3] from offset 2 (-1 = to the end)" in msgs[6]
    assert "Slice: input 1 (offsets) [3,0]: offset 3 of dim 0 is outside [0, 2]" in msgs[7]
    assert "need one entry per dim of x [2,3]" in msgs[8]
    assert "output 0 (y) has shape [2,3], expected [2,2]" in msgs[9]


# Fill(dims, value) -> y of shape dims filled with value (GE op_proto fill.h, REG_OP(Fill): dims a
# 1-D int32/int64 tensor, value one element of BasicType, which has no bool).
FILL_TYPES = [np.float32, np.float16, BF16, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8]


@pytest.mark.parametrize("dtype", FILL_TYPES, ids=ALL_IDS[:-1])
def test_fill(tmp_path, dtype):
    cases, refs = [], []
    for i, (dims, v) in enumerate([([2, 3], 1.5 if np.dtype(dtype).kind == "f" else 5), ([300, 300], -3),
                                   ([4, 0, 2], 7), ([1], 0), ([2, 1, 3], 2)]):
        value = np.array([v]).astype(dtype)  # (-3 wraps for uint8) as the CANN EP's Fill sends it: shape [1]
        ref = np.full(dims, value[0])
        dims_type = np.int32 if i % 2 else np.int64
        cases.append(("Fill", [const(np.array(dims, dims_type)), const(value) if i % 2 else value],
                      [(acl_dtype(dtype), dims)], None))
        refs.append(ref)
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(y, ref)


def test_fill_errors(tmp_path):
    dims = const(np.array([2, 3], np.int64))
    results = run_ops(tmp_path, [
        ("Fill", [dims, np.array([True])], [(acl_dtype(np.bool_), [2, 3])], None),  # bool: not in BasicType
        ("Fill", [dims, np.array([1.0], np.float32)], [(ACL_FLOAT, [3, 2])], None),  # y's shape is not dims
        ("Fill", [dims, np.array([1.0, 2.0], np.float32)], [(ACL_FLOAT, [2, 3])], None),  # two values
        ("Fill", [const(np.array([2.0, 3.0], np.float32)), np.array([1.0], np.float32)], [(ACL_FLOAT, [2, 3])], None),
        ("Fill", [dims, np.array([1], np.int32)], [(ACL_FLOAT, [2, 3])], None),  # y's type is not value's
    ])
    assert [r[0] for r in results] == [ACL_ERROR_UNSUPPORTED_DATA_TYPE, ACL_ERROR_OP_OUTPUT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_UNSUPPORTED_DATA_TYPE,
                                       ACL_ERROR_OP_OUTPUT_NOT_MATCH]
    msgs = [r[1] for r in results]
    assert "Fill: output 0 (y) has shape [3,2], input 0 (dims) is [2,3]" in msgs[1]
    assert "Fill: input 1 (value) must hold one element, got shape [2]" in msgs[2]
    assert "Fill: input 0 (dims) has dtype" in msgs[3]


# Expand(x, shape) -> x broadcast with shape like ONNX's Expand (hicann/ops-math@27338be9
# math/expand/op_graph/expand_proto.h: x float16/float/int32/int64/int8/uint8/bool/bfloat16, shape
# 1-D, no empty inputs; README: y at most 8-D). NumPy's broadcast_to of x to the broadcast shape is
# the reference.
EXPAND_TYPES = [np.float32, np.float16, BF16, np.int8, np.int32, np.int64, np.uint8, np.bool_]
EXPAND_IDS = ["float32", "float16", "bfloat16", "int8", "int32", "int64", "uint8", "bool"]


@pytest.mark.parametrize("dtype", EXPAND_TYPES, ids=EXPAND_IDS)
def test_expand(tmp_path, dtype):
    cases, refs = [], []
    for i, (shape, to) in enumerate([((3, 1), (3, 4)), ((1,), (2, 3)), ((2, 1, 3), (4, 1, 5, 1)), ((3,), (1,)),
                                     ((1, 4), (3, 1)), ((), (2, 2)), ((2, 3), (2, 3))]):
        x = data(shape, dtype)
        ref = np.broadcast_to(x, np.broadcast_shapes(shape, to)).copy()
        spec = np.array(to, np.int32 if i % 2 else np.int64)
        # shape as a constant (what ort_ops sends) and, for odd cases, in device memory (read when it runs)
        cases.append(("Expand", [x, spec if i % 2 else const(spec)], [(acl_dtype(dtype), list(ref.shape))], None))
        refs.append(ref)
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(y, ref)


def test_expand_errors(tmp_path):
    x = np.ones((2, 3), np.float32)
    results = run_ops(tmp_path, [
        ("Expand", [x, const(np.array([4, 3], np.int64))], [(ACL_FLOAT, [4, 3])], None),  # 2 vs 4
        ("Expand", [x, const(np.array([2, 1, 3], np.int64))], [(ACL_FLOAT, [2, 3])], None),  # y is [2,2,3]
        ("Expand", [np.ones((0, 3), np.float32), const(np.array([2, 1, 3], np.int64))], [(ACL_FLOAT, [2, 0, 3])],
         None),
        ("Expand", [x.astype(np.float64), const(np.array([2, 3], np.int64))], [(acl_dtype(np.float64), [2, 3])], None),
        ("Expand", [x, const(np.array([2, 3], np.float32))], [(ACL_FLOAT, [2, 3])], None),
        ("Expand", [x, np.array([5, 3], np.int64)], [(ACL_FLOAT, [2, 3])], None),  # device shape: at run time
        ("Expand", [x, const(np.array([1] * 9, np.int64))], [(ACL_FLOAT, [1, 1, 1, 1, 1, 1, 1, 2, 3])], None),
        ("Expand", [x, const(np.array([2, 3], np.int64))], [(acl_dtype(np.float16), [2, 3])], None),
    ])
    assert [r[0] for r in results[:5]] == [ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_OUTPUT_NOT_MATCH,
                                           ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_UNSUPPORTED_DATA_TYPE,
                                           ACL_ERROR_UNSUPPORTED_DATA_TYPE]
    assert results[5][0] != 0 and results[5][1] is not None  # the device fault, at synchronisation
    assert [r[0] for r in results[6:]] == [ACL_ERROR_OP_OUTPUT_NOT_MATCH, ACL_ERROR_OP_OUTPUT_NOT_MATCH]
    msgs = [r[1] for r in results]
    assert "Expand: input 0 (x) shape [2,3] does not broadcast with input 1 (shape) [4,3]" in msgs[0]
    assert "output 0 (y) has shape [2,3], expected [2,2,3] (x broadcast with shape)" in msgs[1]
    assert "input 0 (x) has no element" in msgs[2]
    assert "input 1 (shape) has dtype" in msgs[4]
    assert "Expand: input 1 (shape) [5,3] does not broadcast input 0 (x) [2,3] to output 0 (y) [2,3]" in msgs[5]
    assert "at most 8 dims" in msgs[6]
    assert "output 0 (y) has dtype" in msgs[7]


# ConcatV2(x_0, ..., x_{N-1}, concat_dim) and SplitV(x, size_splits, split_dim) (hicann/ops-math@c4193324
# conversion/concat_v2, conversion/split_v: protos and READMEs): NumPy's concatenate / split are the
# references; at least two inputs to join, every piece >= 1, no bfloat16 on ascend910 / ascend310p.
JOIN_TYPES = [np.float32, np.float16, BF16, np.float64, np.int8, np.int32, np.int64, np.uint8, np.bool_]
JOIN_IDS = ["float32", "float16", "bfloat16", "float64", "int8", "int32", "int64", "uint8", "bool"]


@pytest.mark.parametrize("dtype", JOIN_TYPES, ids=JOIN_IDS)
def test_concat_v2_and_split_v(tmp_path, dtype):
    cases, refs = [], []
    for shapes, axis in [([(2, 3), (2, 5)], 1), ([(1, 4), (3, 4), (2, 4)], 0), ([(2, 1, 3), (2, 4, 3)], -2),
                         ([(3,), (0,), (2,)], 0), ([(2, 2, 1), (2, 2, 2)], 2)]:
        xs = [data(s, dtype) for s in shapes]
        ref = np.concatenate(xs, axis=axis)
        dim = np.array(axis, np.int32 if len(shapes) == 2 else np.int64)
        cases.append(("ConcatV2", xs + [const(dim)], [(acl_dtype(dtype), list(ref.shape))], {"N": len(xs)}))
        refs.append([ref])
    for shape, sizes, axis in [((4, 7), [2, 4, 1], 1), ((6, 2), [3, 3], 0), ((2, 3, 5), [1, 4], -1), ((3,), [1, 1, 1], 0)]:
        x = data(shape, dtype)
        pieces = np.split(x, np.cumsum(sizes)[:-1], axis=axis)
        cases.append(("SplitV", [x, const(np.array(sizes, np.int64)), const(np.array(axis, np.int32))],
                      [(acl_dtype(dtype), list(p.shape)) for p in pieces], {"num_split": len(sizes)}))
        refs.append(pieces)
    for (rc, msg, outs), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        assert len(outs) == len(ref)
        for y, r in zip(outs, ref):
            assert_bits_equal(y, r.copy())


def test_concat_v2_and_split_v_errors(tmp_path):
    x = np.ones((2, 3), np.float32)
    d1 = const(np.array(1, np.int64))
    sizes = const(np.array([1, 2], np.int64))
    results = run_ops(tmp_path, [
        ("ConcatV2", [x, d1], [(ACL_FLOAT, [2, 3])], None),  # one tensor
        ("ConcatV2", [x, np.ones((3, 3), np.float32), d1], [(ACL_FLOAT, [2, 6])], None),
        ("ConcatV2", [x, x, const(np.array(2, np.int64))], [(ACL_FLOAT, [2, 6])], None),
        ("ConcatV2", [x, x, np.array(1, np.int64)], [(ACL_FLOAT, [2, 6])], None),  # concat_dim in device memory
        ("ConcatV2", [x, x.astype(np.float16), d1], [(ACL_FLOAT, [2, 6])], None),
        ("ConcatV2", [x, x, d1], [(ACL_FLOAT, [2, 5])], None),
        ("SplitV", [x, sizes, d1], [(ACL_FLOAT, [2, 1]), (ACL_FLOAT, [2, 2])], None),  # no num_split
        ("SplitV", [x, const(np.array([0, 3], np.int64)), d1], [(ACL_FLOAT, [2, 0]), (ACL_FLOAT, [2, 3])],
         {"num_split": 2}),
        ("SplitV", [x, const(np.array([1, 1], np.int64)), d1], [(ACL_FLOAT, [2, 1]), (ACL_FLOAT, [2, 1])],
         {"num_split": 2}),
        ("SplitV", [x, sizes, d1], [(ACL_FLOAT, [2, 1]), (ACL_FLOAT, [2, 2])], {"num_split": 3}),
        ("SplitV", [x, sizes, d1], [(ACL_FLOAT, [2, 1]), (ACL_FLOAT, [2, 3])], {"num_split": 2}),
    ])
    assert [r[0] for r in results] == [ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_OUTPUT_NOT_MATCH,
                                       ACL_ERROR_OP_ATTR_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_OUTPUT_NOT_MATCH,
                                       ACL_ERROR_OP_OUTPUT_NOT_MATCH], results
    msgs = [r[1] for r in results]
    assert "ConcatV2: 1 input tensor(s) x, expected at least 2" in msgs[0]
    assert "ConcatV2: input x1 has shape [3,3], x0 [2,3]: they differ outside dim 1" in msgs[1]
    assert "input concat_dim is 2, out of range [-2, 1]" in msgs[2]
    assert "must be a constant input" in msgs[3]
    assert "output 0 (y) has shape [2,5], expected [2,6]" in msgs[5]
    assert "the required attribute num_split is not set" in msgs[6]
    assert "input 1 (size_splits) [0,3]: each size must be >= 1" in msgs[7]
    assert "must hold num_split = 2 sizes summing to dim 1 of x [2,3]" in msgs[8]
    assert "attribute num_split is 3, but there are 2 outputs" in msgs[9]
    assert "output 1 has shape [2,3], expected [2,2]" in msgs[10]


@pytest.mark.parametrize("soc, refused", [("Ascend910A", True), ("Ascend310P3", True), ("Ascend910B1", False)])
def test_concat_v2_and_split_v_bfloat16_by_soc(tmp_path, soc, refused):
    x = data((2, 3), BF16)
    d1 = const(np.array(1, np.int64))
    results = run_ops(tmp_path, [
        ("ConcatV2", [x, x, d1], [(acl_dtype(BF16), [2, 6])], None),
        ("SplitV", [x, const(np.array([1, 2], np.int64)), d1], [(acl_dtype(BF16), [2, 1]), (acl_dtype(BF16), [2, 2])],
         {"num_split": 2}),
    ], ACLSIM_SOC_NAME=soc)
    for rc, msg, _ in results:
        if refused:
            assert rc == ACL_ERROR_UNSUPPORTED_DATA_TYPE and "bfloat16 is not supported on ascend" in msg, msg
        else:
            assert rc == 0 and msg is None, msg


# -- Tile (hicann/ops-math math/tile: TensorFlow's Tile, multiples one per dim, constant) ---------

@pytest.mark.parametrize("dtype", ALL, ids=ALL_IDS)
def test_tile_is_numpy_tile(tmp_path, dtype):
    cases, refs = [], []
    for shape, reps in [((2, 3), (2, 3)), ((1, 4, 1), (3, 1, 2)), ((5,), (1,)), ((2, 0), (2, 2)), ((2, 3), (0, 1))]:
        x = data(shape, dtype)
        ref = np.tile(x, reps)
        for index_type in (np.int64, np.int32):
            cases.append(("Tile", [x, const(np.array(reps, index_type))], [(acl_dtype(dtype), list(ref.shape))], None))
            refs.append(ref)
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(y, ref)


def test_tile_errors(tmp_path):
    x = data((2, 3), np.float32)
    results = run_ops(tmp_path, [
        ("Tile", [x, const(np.array([2], np.int64))], [(ACL_FLOAT, [4, 3])], None),       # one entry per dim
        ("Tile", [x, const(np.array([2, -1], np.int64))], [(ACL_FLOAT, [4, 3])], None),   # negative
        ("Tile", [x, np.array([2, 1], np.int64)], [(ACL_FLOAT, [4, 3])], None),           # not constant
        ("Tile", [x, const(np.array([2, 1], np.int64))], [(ACL_FLOAT, [4, 4])], None),    # wrong y
    ])
    assert [r[0] for r in results] == [ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_OUTPUT_NOT_MATCH], results
    assert "one entry per dim" in results[0][1] and "negative" in results[1][1]


# -- PadV3 (hicann/ops-math conversion/pad_v3: "Compatible with ONNX operator Pad") -------------

PAD_CASES = [  # x shape, paddings [[begin, end] per axis], mode
    ((2, 3), [[1, 2], [0, 3]], "constant"),
    ((2, 3, 4), [[0, 0], [2, 1], [3, 3]], "reflect"),
    ((2, 3, 4), [[1, 1], [2, 0], [0, 5]], "edge"),
    ((3, 5), [[-1, 1], [2, -3]], "constant"),  # negative pads remove elements
    ((3, 5), [[-1, 2], [-2, 4]], "edge"),
    ((4,), [[0, 0]], "edge"),
]


def numpy_pad(x, paddings, mode):
    """np.pad after cropping the negative pads; ONNX's / PadV3's modes are NumPy's constant, edge, reflect."""
    crop = tuple(slice(max(0, -b), x.shape[i] - max(0, -e)) for i, (b, e) in enumerate(paddings))
    return np.pad(x[crop], [(max(0, b), max(0, e)) for b, e in paddings], mode=mode)


@pytest.mark.parametrize("dtype", ALL, ids=ALL_IDS)
def test_pad_v3_is_numpy_pad(tmp_path, dtype):
    cases, refs = [], []
    for shape, paddings, mode in PAD_CASES:
        x = data(shape, dtype)
        ref = numpy_pad(x, paddings, mode)
        flat = np.array(paddings, np.int64).reshape(-1)
        cases.append(("PadV3", [x, const(flat)], [(acl_dtype(dtype), list(ref.shape))], {"mode": mode}))
        refs.append(ref)
        noncontiguous = np.array(paddings, np.int32).T.reshape(-1)  # [begins..., ends...]: ONNX's order
        cases.append(("PadV3", [x, const(noncontiguous)], [(acl_dtype(dtype), list(ref.shape))],
                      {"mode": mode, "paddings_contiguous": False}))
        refs.append(ref)
    value = np.array(2, dtype)
    x = data((2, 3), dtype)
    cases.append(("PadV3", [x, const(np.array([1, 0, 2, 1], np.int64)), value],
                  [(acl_dtype(dtype), [3, 6])], {"mode": "constant"}))
    refs.append(np.pad(x, [(1, 0), (2, 1)], constant_values=value))
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(y, ref)


def test_pad_v3_errors(tmp_path):
    x = data((2, 3), np.float32)
    results = run_ops(tmp_path, [
        ("PadV3", [x, const(np.array([0, 0, 3, 0], np.int64))], [(ACL_FLOAT, [2, 6])], {"mode": "reflect"}),
        ("PadV3", [x, const(np.array([0, 0, 1, 0], np.int64))], [(ACL_FLOAT, [2, 4])], {"mode": "circular"}),
        ("PadV3", [x, const(np.array([0, 0, 1], np.int64))], [(ACL_FLOAT, [2, 4])], None),
        ("PadV3", [x, const(np.array([-3, 0, 0, 0], np.int64))], [(ACL_FLOAT, [0, 3])], None),
        ("PadV3", [x, const(np.array([0, 0, 1, 0], np.int64)), np.array(1.0, np.float32)], [(ACL_FLOAT, [2, 4])],
         {"mode": "edge"}),
        ("PadV3", [x, const(np.array([0, 0, 1, 0], np.int64))], [(ACL_FLOAT, [2, 5])], None),
        ("PadV3", [x, const(np.array([-1, 0, 1, 0], np.int64))], [(ACL_FLOAT, [1, 4])], {"mode": "reflect"}),
    ])
    assert [r[0] for r in results] == [ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_ATTR_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_OUTPUT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH], results
    assert "out of the proto's range for mode reflect" in results[0][1] and "arch35" in results[1][1]
    assert "negative reflect pads are not simulated" in results[6][1]
