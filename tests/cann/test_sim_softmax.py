"""SoftmaxV2, LogSoftmaxV2 and SoftmaxCrossEntropyWithLogits on the simulator against float64 NumPy
references of CANN's semantics (mindspore-ai/graphengine@cd75e149 .../ops/nn_norm_ops.h:464
LogSoftmaxV2, :95 SoftmaxCrossEntropyWithLogits; the loss/backprop formulas of
hicann/ops-nn@e5c3fa93 activation/softmax_cross_entropy_with_logits/op_kernel/arch35/
softmax_cross_entropy_with_logits_full_load.h): along the axis, m = max (NaN propagates),
sub = x - m, s = sum exp(sub), y = sub - log(s) (SoftmaxV2, hicann/ops-nn@31dc6805
activation/softmax_v2/README.md: y = exp(sub) / s, which is e^x / sum e^x); backprop = exp(sub)/s - labels,
loss = sum (log(s) - sub) * labels (un-normalised soft labels allowed, per-row loss, no 1/N).

Tolerance (first-order error bound of the simulator's float32 steps, from ``acl_ctypes.ULPS``):
s has relative error r = (n + 2*ulps(expf) + max|sub|) * 2^-24 (n roundings of the sum, expf's
error, and the rounding of each sub propagated through exp), so log(s) is off by r + ulps(logf)
ulp(log s); y adds half an ulp of sub and of y. backprop: exp(sub)/s carries 2r relative; loss:
each term carries |label| * (err(log s) + ulp(log s - sub)), plus n roundings of the sum.
float16/bfloat16 outputs add one ulp of their dtype. Values without rounding (-inf, NaN) must
match exactly.
"""

import numpy as np
import pytest

from acl_ctypes import (
    ACL_ERROR_INVALID_PARAM,
    ACL_ERROR_OP_ATTR_NOT_MATCH,
    ACL_ERROR_OP_INPUT_NOT_MATCH,
    ACL_ERROR_OP_OUTPUT_NOT_MATCH,
    ACL_ERROR_UNSUPPORTED_DATA_TYPE,
    ACL_FLOAT,
    FLOAT_IDS,
    FLOATS,
    ULPS,
    acl_dtype,
    assert_within,
    run_ops,
    ulp,
)

pytestmark = pytest.mark.usefixtures("sim_dir")
U = 2.0 ** -24


def softmax_parts(x: np.ndarray, axis: int):
    """float64 m, sub, s, log s along `axis` (kept dims)."""
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        m = np.max(x64, axis=axis, keepdims=True)  # NaN propagates
        sub = x64 - m
        s = np.exp(sub).sum(axis=axis, keepdims=True)
        ls = np.log(s)
    return sub, s, ls


def rel_err_of_s(sub: np.ndarray, axis: int) -> np.ndarray:
    n = sub.shape[axis]
    big = np.max(np.where(np.isfinite(sub), np.abs(sub), 0.0), axis=axis, keepdims=True)
    return (n + 2 * ULPS["expf"] + big) * U


def log_softmax_check(y: np.ndarray, x: np.ndarray, axis: int) -> None:
    sub, _, ls = softmax_parts(x, axis)
    with np.errstate(invalid="ignore"):
        y64 = sub - ls
    err_ls = rel_err_of_s(sub, axis) + ULPS["logf"] * ulp(ls)
    tol = err_ls + 0.5 * ulp(sub) + 1.0 * ulp(y64)
    if x.dtype != np.float32:
        tol = tol + ULPS["half_output"] * ulp(y64, x.dtype)
    assert_within(y, y64, tol)


def specials_3d(rng, dtype):
    x = (rng.standard_normal((3, 5, 7)) * 3).astype(np.float32)
    x[0, 0, :] = 1000.0  # equal, large: no overflow thanks to the max
    x[0, 1, 2] = -np.inf
    x[0, 2, 3] = np.nan  # its row along the last axis is NaN
    x[1, 0, :] = -np.inf  # (-inf) - (-inf) = NaN
    x[1, 1, 4] = 88.0
    x[2, 3, :] = 0.0
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
def test_log_softmax_v2_every_axis(tmp_path, dtype):
    rng = np.random.default_rng(12)
    x = specials_3d(rng, dtype)
    axes = [None, [-1], [0], [1], [-2], [2]]
    cases = [("LogSoftmaxV2", [x], [(acl_dtype(dtype), list(x.shape))], None if a is None else {"axes": a})
             for a in axes]
    for (rc, msg, (y,)), a in zip(run_ops(tmp_path, cases), axes):
        assert rc == 0 and msg is None, msg
        log_softmax_check(y, x, -1 if a is None else a[0])


def test_log_softmax_v2_shapes(tmp_path):
    rng = np.random.default_rng(13)
    xs = [rng.standard_normal(9).astype(np.float32), rng.standard_normal((1, 1)).astype(np.float32),
          rng.standard_normal((4, 300)).astype(np.float32) * 20, np.zeros((0, 5), np.float32)]
    results = run_ops(tmp_path, [("LogSoftmaxV2", [x], [(ACL_FLOAT, list(x.shape))], {"axes": [-1]}) for x in xs])
    for (rc, msg, (y,)), x in zip(results, xs):
        assert rc == 0 and msg is None, msg
        log_softmax_check(y, x, -1)
    assert results[1][2][0].tolist() == [[0.0]]  # one class: 0 - log(1)


def softmax_check(y: np.ndarray, x: np.ndarray, axis: int) -> None:
    sub, s, _ = softmax_parts(x, axis)
    with np.errstate(invalid="ignore"):
        p = np.exp(sub) / s
    tol = p * (rel_err_of_s(sub, axis) + ULPS["expf"] * U) + 0.5 * ulp(p) + 0.5 * ulp(p)
    if y.dtype != np.float32:
        tol = tol + ULPS["half_output"] * ulp(p, y.dtype)
    assert_within(y, p, tol)


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
def test_softmax_v2_every_axis(tmp_path, dtype):
    rng = np.random.default_rng(16)
    x = specials_3d(rng, dtype)
    axes = [None, [-1], [0], [1], [-2], [2]]
    cases = [("SoftmaxV2", [x], [(acl_dtype(dtype), list(x.shape))], None if a is None else {"axes": a})
             for a in axes]
    for (rc, msg, (y,)), a in zip(run_ops(tmp_path, cases), axes):
        assert rc == 0 and msg is None, msg
        softmax_check(y, x, -1 if a is None else a[0])
        sums = np.nansum(y.astype(np.float64), axis=-1 if a is None else a[0])
        finite = ~np.isnan(y.astype(np.float64)).any(axis=-1 if a is None else a[0])
        assert np.allclose(sums[finite], 1.0, atol=1e-2)  # each row is a distribution


def test_softmax_v2_shapes_and_half_to_float(tmp_path):
    rng = np.random.default_rng(17)
    xs = [rng.standard_normal(9).astype(np.float32), rng.standard_normal((1, 1)).astype(np.float32),
          rng.standard_normal((4, 300)).astype(np.float32) * 20, np.zeros((0, 5), np.float32)]
    cases = [("SoftmaxV2", [x], [(ACL_FLOAT, list(x.shape))], {"axes": [-1]}) for x in xs]
    h = (rng.standard_normal((3, 17)) * 4).astype(np.float16)
    cases.append(("SoftmaxV2", [h], [(ACL_FLOAT, [3, 17])], {"axes": [1], "half_to_float": True}))
    results = run_ops(tmp_path, cases)
    for (rc, msg, (y,)), x in zip(results, xs + [h]):
        assert rc == 0 and msg is None, msg
        assert y.dtype == np.float32
        softmax_check(y, x, -1)
    assert results[1][2][0].tolist() == [[1.0]]  # one class: e / e


def softmax_ce_check(loss, backprop, x, labels):
    sub, s, ls = softmax_parts(x, 1)
    lab = labels.astype(np.float64)
    with np.errstate(invalid="ignore"):
        p = np.exp(sub) / s
        bp64 = p - lab
        terms = (ls - sub) * lab
        loss64 = terms.sum(axis=1)
    r = rel_err_of_s(sub, 1)
    err_ls = r + ULPS["logf"] * ulp(ls)
    tol_bp = p * 2 * (r + ULPS["expf"] * U) + 0.5 * ulp(p) + 1.0 * ulp(bp64)
    n = x.shape[1]
    with np.errstate(invalid="ignore"):
        tol_loss = (np.abs(lab) * (err_ls + ulp(np.abs(ls - sub)))).sum(axis=1) + n * U * np.abs(terms).sum(axis=1) \
            + ulp(loss64)
    if x.dtype != np.float32:
        tol_bp = tol_bp + ULPS["half_output"] * ulp(bp64, x.dtype)
        tol_loss = tol_loss + ULPS["half_output"] * ulp(loss64, x.dtype)
    assert_within(backprop, bp64, tol_bp)
    assert_within(loss, loss64, tol_loss)


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
def test_softmax_cross_entropy_with_soft_labels(tmp_path, dtype):
    rng = np.random.default_rng(14)
    n, c = 12, 10
    x = (rng.standard_normal((n, c)) * 3).astype(np.float32)
    labels = rng.random((n, c)).astype(np.float32)
    labels /= labels.sum(axis=1, keepdims=True)  # probability rows
    labels[0] = np.eye(c, dtype=np.float32)[3]  # one-hot
    labels[1] = rng.standard_normal(c).astype(np.float32)  # arbitrary weights (the op does not check)
    x[2, :] = 50.0  # uniform, large
    x[3, 5] = -np.inf
    x[4, 1] = np.nan  # row 4: NaN loss and backprop
    labels[5, 2] = np.nan  # row 5: NaN loss, NaN backprop only at [5, 2]
    x, labels = x.astype(dtype), labels.astype(dtype)
    ((rc, msg, (loss, backprop)),) = run_ops(tmp_path, [
        ("SoftmaxCrossEntropyWithLogits", [x, labels], [(acl_dtype(dtype), [n]), (acl_dtype(dtype), [n, c])], None)])
    assert rc == 0 and msg is None, msg
    softmax_ce_check(loss, backprop, x, labels)
    assert np.isnan(loss[4]) and np.isnan(backprop[4]).all()
    assert np.isnan(loss[5]) and np.isnan(backprop[5]).tolist() == [k == 2 for k in range(c)]


def test_softmax_cross_entropy_sizes(tmp_path):
    rng = np.random.default_rng(15)
    cases, data = [], []
    for n, c in [(1, 1), (3, 1000), (0, 4)]:
        x = rng.standard_normal((n, c)).astype(np.float32)
        lab = np.full((n, c), 1.0 / max(c, 1), np.float32)
        cases.append(("SoftmaxCrossEntropyWithLogits", [x, lab], [(ACL_FLOAT, [n]), (ACL_FLOAT, [n, c])], None))
        data.append((x, lab))
    for (rc, msg, (loss, bp)), (x, lab) in zip(run_ops(tmp_path, cases), data):
        assert rc == 0 and msg is None, msg
        softmax_ce_check(loss, bp, x, lab)


def test_errors(tmp_path):
    x = np.ones((2, 3), np.float32)
    results = run_ops(tmp_path, [
        ("LogSoftmaxV2", [x], [(ACL_FLOAT, [2, 3])], {"axes": [0, 1]}),
        ("LogSoftmaxV2", [x], [(ACL_FLOAT, [2, 3])], {"axes": [2]}),
        ("LogSoftmaxV2", [x.astype(np.float64)], [(acl_dtype(np.float64), [2, 3])], None),
        ("LogSoftmaxV2", [x], [(ACL_FLOAT, [3, 2])], None),
        ("SoftmaxV2", [x], [(ACL_FLOAT, [2, 3])], {"axes": [0, 1]}),
        ("SoftmaxV2", [x.astype(np.float16)], [(ACL_FLOAT, [2, 3])], None),
        ("SoftmaxV2", [x.astype(np.float16)], [(acl_dtype(np.float16), [2, 3])], {"half_to_float": True}),
        ("SoftmaxV2", [x.astype(np.int32)], [(acl_dtype(np.int32), [2, 3])], None),
        ("SoftmaxCrossEntropyWithLogits", [x, np.ones((2, 4), np.float32)], [(ACL_FLOAT, [2]), (ACL_FLOAT, [2, 3])],
         None),
        ("SoftmaxCrossEntropyWithLogits", [x[None], x[None]], [(ACL_FLOAT, [1]), (ACL_FLOAT, [1, 2, 3])], None),
        ("SoftmaxCrossEntropyWithLogits", [x, x], [(ACL_FLOAT, [3]), (ACL_FLOAT, [2, 3])], None),
        ("SoftmaxCrossEntropyWithLogits", [x, x], [(ACL_FLOAT, [2])], None),
        ("SoftmaxCrossEntropyWithLogits", [np.ones((2, 0), np.float32)] * 2, [(ACL_FLOAT, [2]), (ACL_FLOAT, [2, 0])],
         None),
        ("SoftmaxCrossEntropyWithLogits", [x, x.astype(np.float16)], [(ACL_FLOAT, [2]), (ACL_FLOAT, [2, 3])], None),
    ])
    assert [r[0] for r in results] == [ACL_ERROR_OP_ATTR_NOT_MATCH, ACL_ERROR_OP_ATTR_NOT_MATCH,
                                       ACL_ERROR_UNSUPPORTED_DATA_TYPE, ACL_ERROR_OP_OUTPUT_NOT_MATCH,
                                       ACL_ERROR_OP_ATTR_NOT_MATCH, ACL_ERROR_OP_OUTPUT_NOT_MATCH,
                                       ACL_ERROR_OP_OUTPUT_NOT_MATCH, ACL_ERROR_UNSUPPORTED_DATA_TYPE,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_OP_OUTPUT_NOT_MATCH, ACL_ERROR_OP_OUTPUT_NOT_MATCH,
                                       ACL_ERROR_INVALID_PARAM, ACL_ERROR_OP_INPUT_NOT_MATCH]
    msgs = [r[1] for r in results]
    assert "LogSoftmaxV2: attribute axes is [0,1], expected one axis" in msgs[0]
    assert "LogSoftmaxV2: attribute axes is [2], out of range for input 0 [2,3]" in msgs[1]
    assert "SoftmaxV2: attribute axes is [0,1], expected one axis" in msgs[4]
    assert "SoftmaxV2: output 0 (y) has dtype" in msgs[5] and "(the dtype of input 0 (x))" in msgs[5]
    assert "expected float32 (half_to_float with a float16 x)" in msgs[6]
    msgs = msgs[:4] + msgs[8:]
    assert "input 1 (labels) has shape [2,4], expected [2,3] (the shape of input 0 (features))" in msgs[4]
    assert "input 0 (features) has shape [1,2,3], expected 2-D [batch, classes]" in msgs[5]
    assert "output 0 (loss) has shape [3], expected [2] ([batch] of features)" in msgs[6]
    assert "expected 2 output(s), got 1" in msgs[7]
    assert "no classes to normalise over" in msgs[8]
