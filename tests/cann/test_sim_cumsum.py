"""Cumsum on the simulator against CANN's spec (hicann/ops-math math/cumsum: README.md formula, op_graph/
cumsum_proto.h: x, a one-element int32/int64 axis in [-rank, rank), attrs exclusive / reverse; dtypes of the
AI Core rows of op_host/cumsum_def.cpp; available on every family of its README): a sequential sum along the
axis (op_kernel_aicpu/cumsum_aicpu.cpp), float16 / bfloat16 in float32 rounded once per output (op_kernel/
cumsum_apt.cpp's PromoteType), integers wrapping."""

import itertools

import numpy as np
import pytest

from acl_ctypes import (
    ACL_ERROR_OP_INPUT_NOT_MATCH,
    ACL_ERROR_UNSUPPORTED_DATA_TYPE,
    BF16,
    acl_dtype,
    assert_bits_equal,
    const,
    run_ops,
)

pytestmark = pytest.mark.usefixtures("sim_dir")


def cumsum_reference(x: np.ndarray, axis: int, exclusive: bool, reverse: bool) -> np.ndarray:
    acc_type = np.float32 if x.dtype.kind == "f" or x.dtype == BF16 else x.dtype
    a = np.moveaxis(x.astype(acc_type), axis, -1)
    if reverse:
        a = a[..., ::-1]
    out = np.zeros_like(a)
    run = np.zeros(a.shape[:-1], acc_type)
    with np.errstate(over="ignore"):
        for k in range(a.shape[-1]):  # sequential, one addition per step in the accumulation type
            if exclusive:
                out[..., k] = run
                run = (run + a[..., k]).astype(acc_type)
            else:
                run = (run + a[..., k]).astype(acc_type)
                out[..., k] = run
    if reverse:
        out = out[..., ::-1]
    return np.moveaxis(out, -1, axis).astype(x.dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.int32, np.int64, np.int8, np.uint8],
                         ids=["float32", "float16", "bfloat16", "int32", "int64", "int8", "uint8"])
def test_cumsum_matches_the_spec(tmp_path, dtype):
    """Every axis (0, 1, -1), exclusive, reverse and axis dtype, in one child process per dtype."""
    rng = np.random.default_rng(11)
    if np.dtype(dtype).kind in "iu":
        x = rng.integers(0 if np.dtype(dtype).kind == "u" else -100, 100, (3, 17, 5)).astype(dtype)
    else:
        x = (rng.standard_normal((3, 17, 5)) * 100).astype(np.float32).astype(dtype)
    combos = list(itertools.product((0, 1, -1), (False, True), (False, True), (np.int32, np.int64)))
    results = run_ops(tmp_path, [("Cumsum", [x, const(np.array([axis], axis_dtype))], [(acl_dtype(dtype), list(x.shape))],
                                  {"exclusive": exclusive, "reverse": reverse})
                                 for axis, exclusive, reverse, axis_dtype in combos])
    assert len(results) == len(combos) == 24
    for (axis, exclusive, reverse, _), (rc, msg, outs) in zip(combos, results):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(outs[0], cumsum_reference(x, axis, exclusive, reverse))


def test_cumsum_float16_accumulates_in_float32(tmp_path):
    # 2048 + 1 + 1 + ...: float16 steps of 1 are lost at 2048, float32 keeps them (one rounding per output).
    x = np.array([2048] + [1] * 8, np.float16)
    ((rc, msg, (y,)),) = run_ops(tmp_path, [("Cumsum", [x, const(np.array([0], np.int64))], [(acl_dtype(np.float16), [9])],
                                             None)])
    assert rc == 0 and msg is None, msg
    np.testing.assert_array_equal(y, np.array([2048, 2049, 2050, 2051, 2052, 2053, 2054, 2055, 2056], np.float32)
                                  .astype(np.float16))


@pytest.mark.parametrize("dtype", [np.float64, np.int16, np.bool_])
def test_cumsum_refuses_types_outside_its_def(tmp_path, dtype):
    x = np.ones(3, dtype)
    ((rc, msg, _),) = run_ops(tmp_path, [("Cumsum", [x, np.array([0], np.int64)], [(acl_dtype(dtype), [3])], None)])
    assert rc == ACL_ERROR_UNSUPPORTED_DATA_TYPE and "Cumsum: input 0 (x) has dtype" in msg, msg


def test_cumsum_axis_checks(tmp_path):
    x = np.ones((2, 3), np.float32)
    out = [(acl_dtype(np.float32), [2, 3])]
    (bad_axis, two_axes, float_axis) = run_ops(tmp_path, [
        ("Cumsum", [x, const(np.array([2], np.int64))], out, None),
        ("Cumsum", [x, const(np.array([0, 1], np.int64))], out, None),
        ("Cumsum", [x, const(np.array([0], np.float32))], out, None)])
    # a device-memory axis is read when the op runs: out of range, a device fault
    (device,) = run_ops(tmp_path, [("Cumsum", [x, np.array([-3], np.int64)], out, None)])
    assert device[0] != 0 and "input 1 (axis) is -3" in device[1], device[1]
    assert bad_axis[0] == ACL_ERROR_OP_INPUT_NOT_MATCH and "input 1 (axis) is 2" in bad_axis[1], bad_axis[1]
    assert two_axes[0] == ACL_ERROR_OP_INPUT_NOT_MATCH and "input 1 (axis)" in two_axes[1], two_axes[1]
    assert float_axis[0] == ACL_ERROR_UNSUPPORTED_DATA_TYPE and "input 1 (axis)" in float_axis[1], float_axis[1]
