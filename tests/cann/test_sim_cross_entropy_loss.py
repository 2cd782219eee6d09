"""CrossEntropyLoss and CrossEntropyLossGrad on the simulator against float64 NumPy references
written from their documented semantics (PyTorch's cross_entropy with class indices, as
hicann/ops-nn@e5c3fa93 loss/cross_entropy_loss*/docs/aclnnCrossEntropyLoss*.md describe it):
log_prob = x - logsumexp(x); loss = -sum of w[t] * log_prob[n, t] over the rows not ignored
(/ sum of their w[t] for "mean"); x_grad = (softmax - one_hot) * s_n with s_n = 0 for ignored rows,
w[t] * g (/ that sum for "mean"). Plus the A2/A3 kernels' own results the simulator models
(cross_entropy_loss.cc): ignored rows are selected out of the loss (a NaN there stays out) but
multiplied by 0 in the gradient (a NaN there stays in), and "mean" over no row gives NaN loss and
an all-NaN gradient.

Tolerance: float32 steps over C classes; |error| <= (C + 16 + |lse|) * 2^-24 * scale, where scale
is the magnitude the element is computed at (|log_prob| and |lse| for log_prob, |s_n| for x_grad,
the sum of |terms| for the loss); half outputs add one ulp of their dtype. NaN and infinities
must match exactly.
"""

import numpy as np
import pytest

from acl_ctypes import (
    ABSENT,
    ACL_ERROR_OP_ATTR_NOT_MATCH,
    ACL_ERROR_OP_INPUT_NOT_MATCH,
    ACL_ERROR_OP_OUTPUT_NOT_MATCH,
    ACL_ERROR_RT_AICORE_EXCEPTION,
    ACL_ERROR_UNSUPPORTED_DATA_TYPE,
    ACL_FLOAT,
    FLOAT_IDS,
    FLOATS,
    acl_dtype,
    assert_within,
    run_child,
    run_ops,
    ulp,
)

pytestmark = pytest.mark.usefixtures("sim_dir")
U = 2.0 ** -24


def reference(x, target, ignore_index, weight=None, reduction="mean", grad=1.0):
    """float64 (log_prob, loss, x_grad) of PyTorch's cross_entropy with class indices."""
    x64 = x.astype(np.float64)
    n, c = x.shape
    with np.errstate(all="ignore"):
        m = x64.max(axis=1, keepdims=True)
        lse = m + np.log(np.exp(x64 - m).sum(axis=1, keepdims=True))
        lp = x64 - lse
        valid = target != ignore_index
        w = np.where(valid, 1.0 if weight is None else weight.astype(np.float64)[np.where(valid, target, 0)], 0.0)
        picked = np.where(valid, lp[np.arange(n), np.where(valid, target, 0)], 0.0)  # selected: NaN stays out
        terms = -picked * w
        if reduction == "none":
            loss = terms
        elif reduction == "sum":
            loss = np.array([terms.sum()])
        else:
            loss = np.array([terms.sum() / w.sum()])
        g = np.broadcast_to(np.asarray(grad, np.float64), (n,)) if reduction == "none" else np.full(n, float(grad))
        s = w * g / (w.sum() if reduction == "mean" else 1.0)
        one_hot = np.zeros((n, c))
        one_hot[valid, target[valid]] = 1.0
        x_grad = (np.exp(lp) - one_hot) * s[:, None]  # 0 * NaN stays NaN, as the kernel multiplies
    return lp, loss, x_grad, lse, terms, s


def check(dtype, x, target, got, ignore_index, weight=None, reduction="mean", grad=1.0, grad_out=None):
    lp64, loss64, grad64, lse, terms, s = reference(x, target, ignore_index, weight, reduction, grad)
    c = x.shape[1]
    with np.errstate(invalid="ignore"):
        k = (c + 16 + np.abs(np.where(np.isfinite(lse), lse, 0.0))) * U
        tol_lp = k * (np.abs(lp64) + np.abs(lse)) + ulp(lp64)
        scale = np.abs(np.where(np.isfinite(terms), terms, 0.0)).sum() if reduction != "none" else np.abs(terms)
        tol_loss = (k.max() + x.shape[0] * U) * (scale + np.abs(loss64)) + ulp(loss64)
        tol_grad = k * np.abs(s)[:, None] + ulp(grad64)
    if dtype != np.float32:
        tol_lp = tol_lp + ulp(lp64, dtype)
        tol_loss = tol_loss + ulp(loss64, dtype)
        tol_grad = tol_grad + ulp(grad64, dtype)
    loss, lp = got[:2]
    assert_within(lp, lp64, tol_lp)
    assert_within(loss, loss64, tol_loss)
    if grad_out is not None:
        assert_within(grad_out, grad64, tol_grad)


def forward_case(x, target, reduction="mean", ignore_index=-100, weight=None):
    n, c = x.shape
    t = acl_dtype(x.dtype)
    outs = [(t, [n] if reduction == "none" else [1]), (t, [n, c]), (t, [1]), (t, [n])]
    return ("CrossEntropyLoss", [x, target, ABSENT if weight is None else weight], outs,
            {"reduction": reduction, "ignore_index": ignore_index})


def grad_case(g, lp, target, reduction="mean", ignore_index=-100, weight=None, **attrs):
    n, c = lp.shape
    return ("CrossEntropyLossGrad", [g, lp, target, ABSENT if weight is None else weight, ABSENT, ABSENT],
            [(acl_dtype(lp.dtype), [n, c])], {"reduction": reduction, "ignore_index": ignore_index, **attrs})


def sample(rng, dtype, n=24, c=10, ignore_index=-100, ignored=(3, 11)):
    x = (rng.standard_normal((n, c)) * 3).astype(np.float32)
    x[0, :] = 40.0  # uniform and large
    x[1, 4] = -np.inf  # another class's -inf: the loss stays finite
    target = rng.integers(0, c, n).astype(np.int64)
    target[list(ignored)] = ignore_index
    return x.astype(dtype), target


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_loss_and_gradient_match_pytorchs_definition(tmp_path, dtype, reduction):
    rng = np.random.default_rng(21)
    x, target = sample(rng, dtype)
    ((rc, msg, fwd),) = run_ops(tmp_path, [forward_case(x, target, reduction)])
    assert rc == 0 and msg is None, msg
    lp = fwd[1]
    g = (np.linspace(-1, 2, x.shape[0]) if reduction == "none" else np.array([0.75])).astype(dtype)
    ((rc, msg, (x_grad,)),) = run_ops(tmp_path, [grad_case(g, lp, target, reduction)])
    assert rc == 0 and msg is None, msg
    # the gradient of the op's own log_prob (rounded to dtype), as a caller chains them
    check(dtype, x, target, fwd, -100, reduction=reduction)
    want = grad_of_log_prob(lp, target, -100, reduction, g.astype(np.float64))
    s = np.abs(grad_of_log_prob(np.zeros_like(lp, np.float64) - np.inf, target, -100, reduction,
                                g.astype(np.float64))).max(axis=1, keepdims=True)  # |s_n| per row
    assert_within(x_grad, want, 4 * U * s + ulp(want, dtype) + ulp(want))
    np.testing.assert_array_equal(x_grad[[3, 11]], 0.0)  # ignored rows: 0 * finite


def grad_of_log_prob(lp, target, ignore_index, reduction, g):
    """float64 (exp(lp) - one_hot) * s_n of a given log_prob: the gradient's documented formula."""
    lp = np.asarray(lp, np.float64)
    n, c = lp.shape
    valid = target != ignore_index
    w = valid.astype(np.float64)
    g = np.broadcast_to(g, (n,)) if reduction == "none" else np.full(n, float(np.asarray(g).reshape(-1)[0]))
    s = w * g / (w.sum() if reduction == "mean" else 1.0)
    one_hot = np.zeros((n, c))
    one_hot[valid, target[valid]] = 1.0
    with np.errstate(invalid="ignore"):
        return (np.exp(lp) - one_hot) * s[:, None]


def test_weight_scales_rows_and_the_mean_divides_by_their_sum(tmp_path):
    rng = np.random.default_rng(22)
    x, target = sample(rng, np.float32)
    weight = rng.uniform(0.1, 3.0, x.shape[1]).astype(np.float32)
    ((rc, msg, fwd),) = run_ops(tmp_path, [forward_case(x, target, weight=weight)])
    assert rc == 0 and msg is None, msg
    g = np.array([1.0], np.float32)
    ((rc, msg, (x_grad,)),) = run_ops(tmp_path, [grad_case(g, fwd[1], target, weight=weight)])
    assert rc == 0 and msg is None, msg
    check(np.float32, x, target, fwd, -100, weight=weight, grad_out=x_grad)


def test_ignored_rows_nan_stays_out_of_the_loss_and_in_the_gradient(tmp_path):
    rng = np.random.default_rng(23)
    x, target = sample(rng, np.float32)
    x[3, 2] = np.nan  # row 3 is ignored
    ((rc, msg, fwd),) = run_ops(tmp_path, [forward_case(x, target)])
    assert rc == 0 and msg is None, msg
    assert np.isfinite(fwd[0]).all() and np.isnan(fwd[1][3]).all()
    ((rc, msg, (x_grad,)),) = run_ops(tmp_path, [grad_case(np.array([1.0], np.float32), fwd[1], target)])
    assert rc == 0 and msg is None, msg
    assert np.isnan(x_grad[3]).all() and np.isfinite(np.delete(x_grad, 3, axis=0)).all()
    check(np.float32, x, target, fwd, -100, grad_out=x_grad)


def test_mean_over_no_row_is_nan_loss_and_all_nan_gradient(tmp_path):
    """The A2/A3 gradient kernel divides g by the count 0 and multiplies the 0 mask by the inf
    (PyTorch gives zeros there; SoftmaxCrossEntropyLossAndGrad's CANN kernel selects them)."""
    rng = np.random.default_rng(24)
    x, target = sample(rng, np.float32, ignored=range(24))
    ((rc, msg, fwd),) = run_ops(tmp_path, [forward_case(x, target)])
    assert rc == 0 and msg is None, msg
    assert np.isnan(fwd[0]).all()
    results = run_ops(tmp_path, [grad_case(np.array([1.0], np.float32), fwd[1], target),
                                 grad_case(np.array([1.0], np.float32), fwd[1], target, reduction="sum")])
    assert [r[0] for r in results] == [0, 0]
    assert np.isnan(results[0][2][0]).all()
    np.testing.assert_array_equal(results[1][2][0], 0.0)


def test_ignore_index_inside_the_classes(tmp_path):
    rng = np.random.default_rng(25)
    x, target = sample(rng, np.float32, ignore_index=4)
    ((rc, msg, fwd),) = run_ops(tmp_path, [forward_case(x, target, ignore_index=4)])
    assert rc == 0 and msg is None, msg
    ((rc, msg, (x_grad,)),) = run_ops(tmp_path, [grad_case(np.array([2.0], np.float32), fwd[1], target,
                                                           ignore_index=4)])
    assert rc == 0 and msg is None, msg
    check(np.float32, x, target, fwd, 4, grad=2.0, grad_out=x_grad)
    np.testing.assert_array_equal(x_grad[target == 4], 0.0)


def test_errors(tmp_path):
    x = np.ones((2, 3), np.float32)
    t = np.array([0, 2], np.int64)
    lp = np.full((2, 3), -1.0986123, np.float32)
    g = np.array([1.0], np.float32)
    results = run_ops(tmp_path, [
        forward_case(x, t, reduction="avg"),
        ("CrossEntropyLoss", [x, t, ABSENT], [(ACL_FLOAT, [1]), (ACL_FLOAT, [2, 3]), (ACL_FLOAT, [1]),
                                              (ACL_FLOAT, [2])], {"label_smoothing": 0.1}),
        forward_case(x, t.astype(np.int32)),
        forward_case(x.astype(np.float64), t),
        ("CrossEntropyLoss", [x, t, ABSENT], [(ACL_FLOAT, [2]), (ACL_FLOAT, [2, 3]), (ACL_FLOAT, [1]),
                                              (ACL_FLOAT, [2])], None),
        forward_case(x, np.array([0, 1, 2], np.int64)),
        grad_case(g, lp, t, label_smoothing=0.1),
        grad_case(np.ones(2, np.float32), lp, t),
        grad_case(g, lp, t, reduction="none"),
        forward_case(x, t, weight=np.ones(4, np.float32)),
    ])
    assert [r[0] for r in results] == [ACL_ERROR_OP_ATTR_NOT_MATCH, ACL_ERROR_OP_ATTR_NOT_MATCH,
                                       ACL_ERROR_UNSUPPORTED_DATA_TYPE, ACL_ERROR_UNSUPPORTED_DATA_TYPE,
                                       ACL_ERROR_OP_OUTPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_OP_ATTR_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH]
    msgs = [r[1] for r in results]
    assert 'attribute reduction is "avg"' in msgs[0]
    assert "label_smoothing is 0.1; the Atlas A2/A3 kernels implement only 0.0" in msgs[1]
    assert "input 1 (target)" in msgs[2]
    assert "output 0 (loss) has shape [2], expected [1]" in msgs[4]
    assert "input 1 (target) has shape [3], expected [N] = [2]" in msgs[5]
    assert "expected [N] = [2] for reduction none" in msgs[8]
    assert "input 2 (weight) has shape [4], expected [C] = [3]" in msgs[9]


def test_target_out_of_range_is_a_device_fault():
    body = """
acl.init()
x = np.zeros((2, 3), np.float32)
outs = [(ACL_FLOAT, [1]), (ACL_FLOAT, [2, 3]), (ACL_FLOAT, [1]), (ACL_FLOAT, [2])]
rc, msg, _ = acl.op("CrossEntropyLoss", [x, np.array([0, 3], np.int64), ABSENT], outs, {"ignore_index": -100})
result = {"rc": rc, "msg": msg}
"""
    result, _ = run_child(body)
    assert result["rc"] == ACL_ERROR_RT_AICORE_EXCEPTION, result
    assert "holds 3 at [1], outside [0, 3) and not ignore_index -100" in result["msg"], result
