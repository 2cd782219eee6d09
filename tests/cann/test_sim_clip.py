"""ClipByValueV2 on the simulator against NumPy (hicann/ops-math@c4193324 conversion/clip_by_value_v2/).

y = min(max(x, clip_value_min), clip_value_max): the kernels' order (op_kernel/arch35/
clip_by_value_v2_dag.h, op_kernel_aicpu/clip_by_value_v2_aicpu.cpp), so min > max gives max, as in
np.clip; any NaN operand gives NaN (payload not compared). The AI Core dtypes (op_host def: float16,
bfloat16, float, int32, int64) broadcast min and max to x; the AI CPU ones (double, int8, int16,
uint8..uint64) take two one-element bounds or two of x's shape. Runs on Ascend910B1 (A2 row: supported).
"""

import numpy as np
import pytest

from acl_ctypes import (
    ACL_ERROR_OP_INPUT_NOT_MATCH,
    ACL_ERROR_OP_OUTPUT_NOT_MATCH,
    ACL_ERROR_UNSUPPORTED_DATA_TYPE,
    ACL_FLOAT,
    ACL_FLOAT16,
    BF16,
    acl_dtype,
    assert_bits_equal,
    run_ops,
)

pytestmark = pytest.mark.usefixtures("sim_dir")
SOC = {"ACLSIM_SOC_NAME": "Ascend910B1"}
AI_CORE = [np.float16, BF16, np.float32, np.int32, np.int64]
AI_CPU = [np.float64, np.int8, np.int16, np.uint8, np.uint16, np.uint32, np.uint64]
DTYPES = AI_CORE + AI_CPU
IDS = [np.dtype(t).name for t in DTYPES]


def values(rng, shape, dtype, bound=False):
    """x: the dtype's extremes (floats: NaN, -0.0, 0.0, +-inf) first; a bound: a NaN last (floats,
    when it has at least 7 elements)."""
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        x = np.asarray(rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True))  # int64: beyond 2**53
        if not bound:
            x.reshape(-1)[:2] = [info.min, info.max][:x.size]
        return x
    x = np.asarray(rng.standard_normal(shape) * 3, np.float32)
    if not bound:
        x.reshape(-1)[:5] = [np.nan, -0.0, 0.0, np.inf, -np.inf][:x.size]
    elif x.size >= 7:
        x.reshape(-1)[-1] = np.nan
    return x.astype(dtype)


def clip_ref(x, lo, hi):
    """np.minimum(np.maximum(x, lo), hi); float16/bfloat16 in float32 (exact: the result is an input)."""
    half = x.dtype in (np.float16, BF16)
    a, b, c = (v.astype(np.float32) if half else v for v in (x, lo, hi))
    return np.minimum(np.maximum(a, b), c).astype(x.dtype)


# (x shape, min shape, max shape) for every dtype: scalars ([] and [1]), same shape, rank 0, empty.
COMMON = [((3, 4, 5), (), ()), ((3, 4, 5), (1,), (1,)), ((3, 4, 5), (3, 4, 5), (3, 4, 5)), ((), (), ()),
          ((0, 3), (), (1,)), ((7,), (7,), (7,))]
# AI Core dtypes only: NumPy broadcasting that keeps x's shape.
BROADCAST = [((3, 4, 5), (4, 1), (5,)), ((3, 4, 5), (1, 1, 5), ()), ((3, 4, 5), (3, 4, 5), (1, 4, 1))]


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_clip_by_value_v2(tmp_path, dtype):
    rng = np.random.default_rng(30)
    shapes = COMMON + (BROADCAST if dtype in AI_CORE else [])
    cases, refs = [], []
    for xs, ls, hs in shapes:
        x, a, b = values(rng, xs, dtype), values(rng, ls, dtype, True), values(rng, hs, dtype, True)
        lo, hi = np.minimum(a, b), np.maximum(a, b)  # ordinary bounds (NaN ones stay NaN)
        for bounds in [(lo, hi), (hi, lo)]:  # and min > max: y is max
            cases.append(("ClipByValueV2", [x, *bounds], [(acl_dtype(dtype), list(xs))], None))
            refs.append(clip_ref(x, *bounds))
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases, **SOC), refs):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(y, ref, nan_payload=False)


def test_clip_matches_np_clip_and_orders_min_before_max(tmp_path):
    x = np.array([-3.0, -0.5, 0.0, 0.5, 3.0, np.nan], np.float32)
    lo, hi = np.float32(-1.0), np.float32(1.0)
    nan = np.array([1.0, np.nan, 1.0, 1.0, 1.0, 1.0], np.float32)
    results = run_ops(tmp_path, [("ClipByValueV2", [x, lo, hi], [(ACL_FLOAT, [6])], None),
                                 ("ClipByValueV2", [x, hi, lo], [(ACL_FLOAT, [6])], None),
                                 ("ClipByValueV2", [x, nan * -1, nan], [(ACL_FLOAT, [6])], None),
                                 ("ClipByValueV2", [x, np.float32(-1), nan], [(ACL_FLOAT, [6])], None)], **SOC)
    assert_bits_equal(results[0][2][0], np.clip(x, lo, hi))
    assert results[1][2][0][:5].tolist() == [-1.0] * 5  # min 1 > max -1: every value is max
    assert np.isnan(results[2][2][0]).tolist() == [False, True, False, False, False, True]  # NaN min
    assert np.isnan(results[3][2][0]).tolist() == [False, True, False, False, False, True]  # NaN max


def test_errors(tmp_path):
    x = np.ones((4, 5), np.float32)
    s = np.float32(0)
    i8 = np.ones((4, 5), np.int8)
    cases = [
        ("ClipByValueV2", [x.astype(bool), s.astype(bool), s.astype(bool)], [(acl_dtype(bool), [4, 5])], None),
        ("ClipByValueV2", [x, s.astype(np.float16), s], [(ACL_FLOAT, [4, 5])], None),
        ("ClipByValueV2", [x, s, s.astype(np.int32)], [(ACL_FLOAT, [4, 5])], None),
        ("ClipByValueV2", [x, s, s], [(ACL_FLOAT16, [4, 5])], None),
        ("ClipByValueV2", [x, np.zeros((3, 4, 5), np.float32), s], [(ACL_FLOAT, [4, 5])], None),  # grows x
        ("ClipByValueV2", [x, s, np.zeros((2, 5), np.float32)], [(ACL_FLOAT, [4, 5])], None),
        ("ClipByValueV2", [x, s, s], [(ACL_FLOAT, [5, 4])], None),
        ("ClipByValueV2", [x, s], [(ACL_FLOAT, [4, 5])], None),
        ("ClipByValueV2", [i8, np.int8(0), i8], [(acl_dtype(np.int8), [4, 5])], None),  # AI CPU: mixed
        ("ClipByValueV2", [i8, np.zeros((4, 1), np.int8), np.zeros((4, 1), np.int8)], [(acl_dtype(np.int8), [4, 5])],
         None),
    ]
    results = run_ops(tmp_path, cases, **SOC)
    assert [r[0] for r in results] == [ACL_ERROR_UNSUPPORTED_DATA_TYPE, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_OUTPUT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_OP_OUTPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH]
    msgs = [r[1] for r in results]
    assert "ClipByValueV2: input 0 (x) has dtype ACL_BOOL, expected one of ACL_FLOAT16, ACL_BF16, ACL_FLOAT" in msgs[0]
    assert "input 1 (clip_value_min) has dtype ACL_FLOAT16, expected ACL_FLOAT (the dtype of input 0 (x))" in msgs[1]
    assert "input 2 (clip_value_max) has dtype ACL_INT32, expected ACL_FLOAT" in msgs[2]
    assert "output 0 (y) has dtype ACL_FLOAT16, expected ACL_FLOAT" in msgs[3]
    assert "input 1 (clip_value_min) has shape [3,4,5], which does not broadcast to x [4,5]" in msgs[4]
    assert "input 2 (clip_value_max) has shape [2,5], which does not broadcast to x [4,5]" in msgs[5]
    assert "output 0 (y) has shape [5,4], expected [4,5] (the shape of x)" in msgs[6]
    assert "expected 3 input(s), got 2" in msgs[7]
    assert ("clip_value_min [] and clip_value_max [4,5] must both hold one element or both have the shape of x "
            "[4,5] (dtype ACL_INT8 runs on AI CPU)") in msgs[8]
    assert "clip_value_min [4,1] and clip_value_max [4,1]" in msgs[9]
