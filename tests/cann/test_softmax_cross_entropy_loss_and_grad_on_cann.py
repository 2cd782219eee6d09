"""SoftmaxCrossEntropyLossAndGrad on the CANN EP (the ACL simulator without an NPU): equal to the
CPU EP within ort_ops.tolerances (float32/float16/bfloat16, mean and sum, ignored rows, any
ignore_index), run on CANNExecutionProvider (ORT's profile); exactly the CANN ops the kernel's
comment lists, one host copy of its own (target, range-checked as on the CPU EP); what it does
where the CPU kernel fails or differs (targets out of range, -inf logits, an empty batch); the SoC
check.

The kernel has two routes (its header): CrossEntropyLoss/CrossEntropyLossGrad on Atlas A2/A3 (the
simulator's default SoC, Ascend910B1) and SoftmaxCrossEntropyWithLogits elsewhere. The tests run
in this process on the default SoC, and ``test_the_other_route_passes_the_same_tests`` runs this
file again on an Atlas inference SoC (Ascend310P3), where the other route is taken."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ort_ops import dtypes, ort_io, tolerances
from ort_ops.model_builder import make_op_model
from ort_ops.ops import op

cann_ep = pytest.importorskip("ort_ops.cann_ep")

from op_helpers import make_session  # noqa: E402

CANN = "CANNExecutionProvider"
OP = op("SoftmaxCrossEntropyLossAndGrad")


pytestmark = pytest.mark.usefixtures("cann_simulator")


def class_index_route() -> bool:
    """Whether this process's SoC is Atlas A2 (Ascend910B<n>) or A3 (Ascend910_93...), where the
    kernel uses CANN's CrossEntropyLoss/CrossEntropyLossGrad."""
    soc = cann_ep.runtime.soc_name()
    return bool(re.match(r"Ascend910B\d|Ascend910_93", soc))


def inputs(dtype, n=32, c=10, ignore_index=-100, ignored=(3, 17), seed=0, dloss=0.75):
    rng = np.random.default_rng(seed)
    np_dtype = dtypes.numpy_dtype(dtype)
    target = rng.integers(0, c, n).astype(np.int64)
    target[list(ignored)] = ignore_index
    return {"logits": rng.normal(0, 3, (n, c)).astype(np.float32).astype(np_dtype), "target": target,
            "dloss": np.array(dloss, np.float32).astype(np_dtype)}


def model_for(dtype, feeds, **attrs):
    n, c = feeds["logits"].shape
    return make_op_model(OP, dtype, None, input_shapes=[[n, c], [n], []], output_shapes=[[], [n, c]], **attrs)


def sim_counters():
    import ort_ops.cann_ep.sim as sim

    return sim.op_counts(), {k: sim.stat(k) for k in ("copies_h2d", "copies_d2h", "copies_d2d", "stream_syncs")}


def diff(before, after):
    ops = {k: v - before[0].get(k, 0) for k, v in after[0].items() if v != before[0].get(k, 0)}
    return ops, {k: after[1][k] - before[1][k] for k in after[1]}


def assert_close(got, want, what):
    assert got.dtype == want.dtype and got.shape == want.shape, what
    closeness = tolerances.check(got, want)
    assert closeness.ok, f"{what}: {closeness.message}"


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("attrs", [{}, {"reduction": "sum"}, {"ignore_index": 4},
                                   {"ignore_index": 4, "reduction": "sum"}, {"label_smoothing": 0.1},
                                   {"label_smoothing": 0.3, "ignore_index": 4, "reduction": "sum"},
                                   {"label_smoothing": 1.0}])
def test_equals_the_cpu_ep_within_tolerance(dtype, attrs, tmp_path):
    feeds = inputs(dtype, ignore_index=attrs.get("ignore_index", -100))
    model = model_for(dtype, feeds, **attrs)
    session = cann_ep.session(model, profile_prefix=str(tmp_path / "p"))
    got = ort_io.run(session, feeds)
    want = ort_io.run(make_session(model), feeds)
    for name, g, w in zip(("loss", "dlogits"), got, want):
        assert_close(g, w, name)
    reference = OP.outputs_of(*feeds.values(), **attrs)
    for name, g, w in zip(("loss", "dlogits"), got, reference):
        assert_close(g, w, f"{name} vs reference")
    assert {(r.op_type, r.provider) for r in cann_ep.node_runs(session) if r.op_type == OP.name} == {(OP.name, CANN)}


# per route, reduction and dtype: the ACL ops one node sends (the kernel's comment lists them), with
# some row ignored (inputs()' rows 3 and 17)
CLASS_INDEX_MEAN = {"LogSoftmaxV2": 1, "CrossEntropyLoss": 1, "CrossEntropyLossGrad": 2, "NotEqual": 1,
                    "SelectV2": 1}
CLASS_INDEX_SUM = {"LogSoftmaxV2": 1, "CrossEntropyLoss": 1, "CrossEntropyLossGrad": 1}
# Equal + SelectV2 (labels), SoftmaxCrossEntropyWithLogits, LogSoftmaxV2 + SelectV2 + ReduceSum (the
# target's log-probability), NotEqual + SelectV2 (valid rows), ReduceSum + Mul(-1) (the total), the
# gradient's SelectV2 + Mul; mean: Cast + ReduceSum (the count) and two RealDiv
MEAN = {"Equal": 1, "Cast": 1, "SoftmaxCrossEntropyWithLogits": 1, "LogSoftmaxV2": 1, "NotEqual": 1, "SelectV2": 4,
        "ReduceSum": 3, "RealDiv": 2, "Mul": 2}
SUM = {"Equal": 1, "SoftmaxCrossEntropyWithLogits": 1, "LogSoftmaxV2": 1, "NotEqual": 1, "SelectV2": 4,
       "ReduceSum": 2, "Mul": 2}


# label_smoothing != 0 (either SoC: the A2/A3 gradient kernel implements only 0): the smoothed labels'
# loss is SoftmaxCrossEntropyWithLogits's own (no LogSoftmaxV2 + SelectV2 + ReduceSum, no Mul(-1))
def smoothed(sent: dict) -> dict:
    out = {**sent, "SelectV2": sent["SelectV2"] - 1, "ReduceSum": sent["ReduceSum"] - 1, "Mul": sent["Mul"] - 1}
    del out["LogSoftmaxV2"]
    return out


SMOOTHED_MEAN, SMOOTHED_SUM = smoothed(MEAN), smoothed(SUM)

# no row ignored (known on the host from the range check): no valid mask (NotEqual, the two
# SelectV2 on it), and "mean" divides by the constant N (no Cast + ReduceSum); the class-index
# route's mean gradient is CrossEntropyLossGrad's alone
def unmasked(sent: dict, mean: bool) -> dict:
    if "CrossEntropyLoss" in sent:
        return CLASS_INDEX_SUM  # one CrossEntropyLossGrad of either reduction, no select
    drop = {"NotEqual": 1, "SelectV2": 2, **({"Cast": 1, "ReduceSum": 1} if mean else {})}
    return {k: v - drop.get(k, 0) for k, v in sent.items() if v - drop.get(k, 0)}


def second_run_counts(session, feeds):
    """The ACL ops and the copies of the session's second run (after a warm-up run)."""
    ort_io.run(session, feeds)
    before = sim_counters()
    ort_io.run(session, feeds)
    return diff(before, sim_counters())


def with_casts(sent: dict, casts: int) -> dict:
    return {**sent, "Cast": sent.get("Cast", 0) + casts}


@pytest.mark.parametrize("dtype, reduction", [("float32", "mean"), ("float32", "sum"), ("float16", "mean"),
                                              ("bfloat16", "sum")])
def test_ops_sent_and_one_copy_of_its_own(dtype, reduction):
    if class_index_route():
        sent = CLASS_INDEX_MEAN if reduction == "mean" else CLASS_INDEX_SUM
    else:
        sent = MEAN if reduction == "mean" else SUM
    if dtype != "float32":  # logits and dloss in, loss and dlogits out
        sent = with_casts(sent, 4)
    feeds = inputs(dtype)
    ops, counts = second_run_counts(cann_ep.session(model_for(dtype, feeds, reduction=reduction)), feeds)
    assert ops == sent
    # the three inputs in (target by the kernel: it is a host input, range-checked where it is), loss
    # and dlogits out; ORT's own end-of-run synchronisation
    assert counts == {"copies_h2d": 3, "copies_d2h": 2, "copies_d2d": 0, "stream_syncs": 1}


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_label_smoothing_takes_the_one_hot_route_with_smoothed_labels(reduction):
    sent = SMOOTHED_MEAN if reduction == "mean" else SMOOTHED_SUM
    feeds = inputs("float32")
    model = model_for("float32", feeds, reduction=reduction, label_smoothing=0.2)
    ops, counts = second_run_counts(cann_ep.session(model), feeds)
    assert ops == sent
    assert counts == {"copies_h2d": 3, "copies_d2h": 2, "copies_d2d": 0, "stream_syncs": 1}


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
def test_with_no_row_ignored_no_mask_is_sent_and_the_results_agree(reduction, label_smoothing):
    feeds = inputs("float32", ignored=())
    attrs = {"reduction": reduction, "label_smoothing": label_smoothing}
    model = model_for("float32", feeds, **attrs)
    session = cann_ep.session(model)
    if class_index_route() and label_smoothing == 0.0:
        sent = CLASS_INDEX_MEAN if reduction == "mean" else CLASS_INDEX_SUM
    else:
        sent = MEAN if reduction == "mean" else SUM
        sent = smoothed(sent) if label_smoothing else sent
    ops, counts = second_run_counts(session, feeds)
    assert ops == unmasked(sent, reduction == "mean")
    assert counts == {"copies_h2d": 3, "copies_d2h": 2, "copies_d2d": 0, "stream_syncs": 1}
    got = ort_io.run(session, feeds)
    for name, g, w in zip(("loss", "dlogits"), got, ort_io.run(make_session(model), feeds)):
        assert_close(g, w, name)
    for name, g, w in zip(("loss", "dlogits"), got, OP.outputs_of(*feeds.values(), **attrs)):
        assert_close(g, w, f"{name} vs reference")


def test_every_row_ignored_gives_nan_loss_and_zero_gradient_like_the_cpu_ep():
    feeds = inputs("float32", ignored=range(32))
    model = model_for("float32", feeds)
    loss, dlogits = ort_io.run(cann_ep.session(model), feeds)
    want_loss, want_dlogits = ort_io.run(make_session(model), feeds)
    assert np.isnan(loss) and np.isnan(want_loss)
    assert np.array_equal(dlogits, want_dlogits) and not dlogits.any()


def test_confident_rows_keep_float32_precision():
    """Large logits (normal * 10: confident rows): dlogits within 4e-7 of max|want| of the float64
    definition, 20 batches. (CANN's CrossEntropyLoss on the raw logits forms x - (max + log sum),
    an ulp of the largest logit: 1.8e-6 here; the kernel feeds it log-probabilities instead.)"""
    rng = np.random.default_rng(7)
    n, c = 32, 10
    feeds = inputs("float32", n=n, c=c)
    session = cann_ep.session(model_for("float32", feeds))
    worst = 0.0
    for _ in range(20):
        x = (rng.standard_normal((n, c)) * 10).astype(np.float32)
        t = rng.integers(0, c, n).astype(np.int64)
        loss, g = ort_io.run(session, {"logits": x, "target": t, "dloss": np.array(1.0, np.float32)})
        x64 = x.astype(np.float64)
        m = x64.max(axis=1, keepdims=True)
        p = np.exp(x64 - m) / np.exp(x64 - m).sum(axis=1, keepdims=True)
        want = (p - np.eye(c)[t]) / n
        worst = max(worst, float(np.max(np.abs(g - want)) / np.max(np.abs(want))))
    assert worst <= 4e-7, worst


@pytest.mark.parametrize("case", ["nan logits in an ignored row", "inf logits in an ignored row",
                                  "nan logits in a counted row", "inf dloss", "every row ignored, nan in one",
                                  "every row ignored, sum"])
def test_non_finite_values_land_where_the_cpu_ep_puts_them(case):
    """NaN/inf in ignored rows stay out of the loss and give that row NaN gradients (0 * NaN, as
    the exporter's graph); a non-finite dloss leaves ignored rows at 0; CANN's mean gradient with
    a count of 0 is not let through."""
    ignored = range(32) if case.startswith("every") else (3, 17)
    feeds = inputs("float32", ignored=ignored)
    if "ignored row" in case or "nan in one" in case:
        feeds["logits"][3, 2] = np.inf if case.startswith("inf") else np.nan
    if case == "nan logits in a counted row":
        feeds["logits"][5, 1] = np.nan
    if case == "inf dloss":
        feeds["dloss"] = np.array(np.inf, np.float32)
    attrs = {"reduction": "sum"} if case.endswith("sum") else {}
    model = model_for("float32", feeds, **attrs)
    got = ort_io.run(cann_ep.session(model), feeds)
    want = ort_io.run(make_session(model), feeds)
    if case == "inf dloss":
        # ignored rows 0 on both; the counted rows are non-finite on both, but where the CPU kernel
        # has -inf (inf * (p - 1)) CANN's CrossEntropyLossGrad computes inf * p - inf = NaN
        assert np.array_equal(got[1][[3, 17]], want[1][[3, 17]]) and not want[1][[3, 17]].any()
        assert np.array_equal(np.isfinite(got[1]), np.isfinite(want[1]))
        return
    for name, g, w in zip(("loss", "dlogits"), got, want):
        assert np.array_equal(np.isnan(g), np.isnan(w)), (name, np.argwhere(np.isnan(g) != np.isnan(w))[:5])
        finite = np.isfinite(w)
        assert np.array_equal(np.isfinite(g), finite), name
        assert_close(np.where(finite, g, 0).astype(g.dtype), np.where(finite, w, 0).astype(w.dtype), name)


@pytest.mark.parametrize("bad", [10, -1, -101, 1 << 40])
def test_a_target_out_of_range_fails_the_run_like_the_cpu_ep(bad):
    """Issue 19: the SoftmaxCrossEntropyWithLogits route gave such a row an all-zero one-hot label
    (a finite loss, no error); CANN's CrossEntropyLoss reads past the row (a device fault in the
    simulator). The kernel checks the targets on the host first, with the CPU kernel's message;
    ignore_index itself (-100) stays allowed."""
    feeds = inputs("float32")
    feeds["target"][5] = bad
    model = model_for("float32", feeds)
    message = rf"target\[5\] = {bad} is outside \[0, 10\) and is not ignore_index -100"
    with pytest.raises(Exception, match=message):
        ort_io.run(make_session(model), feeds)
    session = cann_ep.session(model)
    with pytest.raises(Exception, match=message):
        ort_io.run(session, feeds)
    feeds["target"][5] = -100
    assert_close(ort_io.run(session, feeds)[0], ort_io.run(make_session(model), feeds)[0], "loss")


@pytest.mark.parametrize("where", ["another class", "the target class"])
def test_with_label_smoothing_a_minus_inf_logit_gives_an_infinite_loss_like_pytorch(where):
    """With label_smoothing every class has a share of the target distribution: a -inf logit
    anywhere in a valid row makes its loss +inf (PyTorch's too); the gradient stays finite."""
    feeds = inputs("float32")
    t = feeds["target"][0]
    feeds["logits"][0, t if where == "the target class" else (t + 1) % 10] = -np.inf
    model = model_for("float32", feeds, label_smoothing=0.1)
    loss, dlogits = ort_io.run(cann_ep.session(model), feeds)
    want_loss, want_dlogits = ort_io.run(make_session(model), feeds)
    assert want_loss == np.inf and loss == np.inf
    assert np.isfinite(want_dlogits).all() and np.isfinite(dlogits).all()
    assert_close(dlogits, want_dlogits, "dlogits")


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("where", ["another class", "the target class", "every class but the target"])
def test_a_minus_inf_logit_gives_the_cpu_eps_loss(where, reduction):
    """Issue 19: CANN's SoftmaxCrossEntropyWithLogits sums labels * (lse - (x - max)) over every
    class, 0 * inf = NaN for a -inf logit of another class; both routes pick the target's
    log-probability instead, as the CPU kernel: finite loss there, +inf for a -inf target logit."""
    feeds = inputs("float32")
    row = 0 if feeds["target"][0] != 0 else 1
    t = feeds["target"][row]
    if where == "another class":
        feeds["logits"][row, (t + 1) % 10] = -np.inf
    elif where == "the target class":
        feeds["logits"][row, t] = -np.inf
    else:
        feeds["logits"][row, np.arange(10) != t] = -np.inf
    model = model_for("float32", feeds, reduction=reduction)
    loss, dlogits = ort_io.run(cann_ep.session(model), feeds)
    want_loss, want_dlogits = ort_io.run(make_session(model), feeds)
    assert np.isfinite(want_loss) == (where != "the target class")
    if where == "the target class":
        assert want_loss == np.inf and loss == np.inf
    else:
        assert_close(loss, want_loss, "loss")
    finite = np.isfinite(want_dlogits)
    assert np.array_equal(np.isfinite(dlogits), finite)
    assert_close(np.where(finite, dlogits, 0).astype(np.float32), np.where(finite, want_dlogits, 0), "dlogits")


def test_an_empty_batch_fails_naming_the_shape():
    feeds = {"logits": np.zeros((0, 10), np.float32), "target": np.zeros(0, np.int64),
             "dloss": np.array(1.0, np.float32)}
    model = make_op_model(OP, "float32", None, input_shapes=[[0, 10], [0], []], output_shapes=[[], [0, 10]])
    loss, _ = ort_io.run(make_session(model), feeds)
    assert np.isnan(loss)
    with pytest.raises(Exception, match=r"logits shape \[0, 10\] is empty"):
        ort_io.run(cann_ep.session(model), feeds)


_SOC_CHILD = """
from ort_ops import cann_ep
cann_ep.use_simulator()
from ort_ops.model_builder import make_op_model
try:
    cann_ep.session(make_op_model("SoftmaxCrossEntropyLossAndGrad", "float32", None))
    print("OK")
except Exception as exc:
    print("FAILED", str(exc).replace(chr(10), " "))
"""


@pytest.mark.parametrize("soc, expected", [
    ("Ascend310B1", "the CANN op SoftmaxCrossEntropyWithLogits is not available on Ascend310B1"),
    ("Ascend310P3", "OK"), ("Ascend910B1", "OK"),
])
def test_session_creation_checks_the_soc(soc, expected):
    here = Path(__file__).resolve().parent
    env = dict(os.environ, ACLSIM_SOC_NAME=soc,
               PYTHONPATH=os.pathsep.join([str(here.parents[1]), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", _SOC_CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert expected in proc.stdout, proc.stdout


def test_the_other_route_passes_the_same_tests():
    """This file's tests on Ascend310P3 (Atlas inference: no CrossEntropyLoss), where the kernel
    takes the SoftmaxCrossEntropyWithLogits route."""
    assert class_index_route(), "this process is expected to run on the simulator's default SoC (Atlas A2)"
    here = Path(__file__).resolve()
    env = dict(os.environ, ACLSIM_SOC_NAME="Ascend310P3")
    # (not the SoC test, which sets its own SoCs, nor the class-count test, for the first route only)
    select = "not the_other_route and not checks_the_soc and not more_classes"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(here), "-k", select],
                          env=env, capture_output=True, text=True, timeout=600, cwd=here.parents[2])
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and "skipped" not in proc.stdout, proc.stdout[-2000:]


def test_more_classes_than_float32_counts_exactly_take_the_other_route():
    """C = 2^24 + 1: CANN's gradient compares target with ignore_index in float32, where 2^24 and
    2^24 + 1 are one value, so the kernel takes the SoftmaxCrossEntropyWithLogits route there."""
    if not class_index_route():
        pytest.skip("this SoC takes the SoftmaxCrossEntropyWithLogits route for every C")
    c = (1 << 24) + 1
    # two classes that count, the rest far below (exp underflows to 0: the row sums are exact; a
    # float32 kernel summing 2^24 comparable terms one by one would be off by far more than the
    # tolerance, whichever route)
    feeds = {"logits": np.full((1, c), -200.0, np.float32), "target": np.array([1 << 24], np.int64),
             "dloss": np.array(1.0, np.float32)}
    feeds["logits"][0, [5, 1 << 24]] = [1.0, 3.0]
    model = model_for("float32", feeds, ignore_index=c)
    session = cann_ep.session(model)
    before = sim_counters()
    loss, dlogits = ort_io.run(session, feeds)
    ops, _ = diff(before, sim_counters())
    assert "SoftmaxCrossEntropyWithLogits" in ops and "CrossEntropyLoss" not in ops, ops
    want_loss, want_dlogits = ort_io.run(make_session(model), feeds)
    assert_close(loss, want_loss, "loss")
    assert_close(dlogits, want_dlogits, "dlogits")


def test_2_to_the_24_plus_1_comparable_classes_keep_float32_precision():
    """Issue 19: C = 2^24 + 1 logits ~ N(0, 1) (every class adds to the row sum): a float32
    running sum stalls near 2^24 and the simulated loss was 1.7e-3 relative off. The simulator
    sums rows as CANN's kernels reduce (blocks, combined pairwise: cann_ep/sim/src/ops/row_sum.h).

    Tolerance, from the float32 steps (U = 2^-24, acl_ctypes.ULPS): the row sum s has relative
    error r <= (63 + 19 + 2 ulps(expf) + max|sub|) U (63 roundings in a 64-block, 19 pairwise
    levels for 2^18 + 1 blocks, expf's error, each sub's rounding through exp); log s is off by
    r + ulps(logf) ulp(log s); the log-probability adds half an ulp of sub and of itself; the
    select, sum with zeros, negation and division by a count of 1 are exact."""
    from acl_ctypes import ULPS, ulp

    c = (1 << 24) + 1
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, c)).astype(np.float32)
    t = 12345
    feeds = {"logits": x, "target": np.array([t], np.int64), "dloss": np.array(1.0, np.float32)}
    model = model_for("float32", feeds, ignore_index=c)
    loss, _ = ort_io.run(cann_ep.session(model), feeds)
    x64 = x[0].astype(np.float64)
    sub = x64 - x64.max()
    ls = np.log(np.exp(sub).sum())
    want = ls - sub[t]
    u = 2.0 ** -24
    r = (63 + 19 + 2 * ULPS["expf"] + np.abs(sub).max()) * u
    tol = float(r + ULPS["logf"] * ulp(ls) + 0.5 * ulp(sub[t]) + 0.5 * ulp(want))
    assert abs(float(loss) - want) <= tol, (float(loss), want, tol)
    # the running sum's error: far outside it
    assert tol / want < 1e-6



# --- class weights (input 3): the class-index route on Atlas A2/A3 (eps = 0), else the weighted route


def weighted(feeds, seed=1, zero_class=None):
    """``feeds`` with class weights [C] of the logits' dtype (one class weighing 0 if asked)."""
    c = feeds["logits"].shape[1]
    w = np.random.default_rng(seed).uniform(0.25, 3.0, c).astype(np.float32)
    if zero_class is not None:
        w[zero_class] = 0.0
    return {**feeds, "weight": w.astype(feeds["logits"].dtype)}


def weighted_model(dtype, feeds, **attrs):
    n, c = feeds["logits"].shape
    return make_op_model(OP, dtype, None, input_shapes=[[n, c], [n], [], [c]], output_shapes=[[], [n, c]], **attrs)


# The weighted route's ACL ops (the kernel's comment), eps = 0, some row ignored: Equal, SelectV2 (q)
# + ReduceSum (w_t), LogSoftmaxV2 + SelectV2 + ReduceSum + Mul (the rows), NotEqual + SelectV2 (the
# rows' mask), ReduceSum + Mul(-1) (the total), SelectV2 (r), Mul + ReduceSum (s * q and its row
# sums), SoftmaxV2 + Mul + Sub (the gradient); mean: SelectV2 (w_t's mask), ReduceSum (W), 2 RealDiv
WEIGHTED_SUM = {"Equal": 1, "SelectV2": 4, "ReduceSum": 4, "LogSoftmaxV2": 1, "Mul": 4, "NotEqual": 1,
                "SoftmaxV2": 1, "Sub": 1}
WEIGHTED_MEAN = {**WEIGHTED_SUM, "SelectV2": 5, "ReduceSum": 5, "RealDiv": 2}


def weighted_sent(reduction: str, label_smoothing: float, some_ignored: bool, dtype: str) -> dict:
    """The ACL ops of one weighted node, from the kernel's documented sequence: on Atlas A2/A3 with
    eps = 0 the class-index route's (CANN's CrossEntropyLoss/Grad take the weights), else the
    weighted route's."""
    mean = reduction == "mean"
    casts = {"Cast": 5} if dtype != "float32" else {}  # logits, dloss and weight in, loss and dlogits out
    if class_index_route() and not label_smoothing:
        return {**(CLASS_INDEX_MEAN if mean and some_ignored else CLASS_INDEX_SUM), **casts}
    sent = dict(WEIGHTED_MEAN if mean else WEIGHTED_SUM)
    if label_smoothing:
        # SelectV2 (labels) + Mul (q) + SoftmaxCrossEntropyWithLogits (the rows) instead of SelectV2 (q)
        # + ReduceSum (w_t), LogSoftmaxV2 + SelectV2 + ReduceSum + Mul (the rows) and Mul(-1); mean
        # adds SelectV2 + ReduceSum back (w_t)
        del sent["LogSoftmaxV2"]
        sent["SoftmaxCrossEntropyWithLogits"] = 1
        sent["SelectV2"] += 1 - 2 + (1 if mean else 0)
        sent["ReduceSum"] += -2 + (1 if mean else 0)
        sent["Mul"] += 1 - 2
    if not some_ignored:  # no NotEqual, no masks of the rows, w_t and the scale
        sent["NotEqual"] = 0
        sent["SelectV2"] -= 3 if mean else 2
    if dtype != "float32":  # logits, dloss and weight in, loss and dlogits out
        sent["Cast"] = 5
    return {k: v for k, v in sent.items() if v}


WEIGHTED_ATTRS = [{}, {"reduction": "sum"}, {"ignore_index": 4}, {"ignore_index": 4, "reduction": "sum"},
                  {"label_smoothing": 0.1}, {"label_smoothing": 0.3, "ignore_index": 4, "reduction": "sum"},
                  {"label_smoothing": 1.0}]


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("attrs", WEIGHTED_ATTRS)
def test_class_weights_equal_the_cpu_ep_and_the_reference(dtype, attrs, tmp_path):
    feeds = weighted(inputs(dtype, ignore_index=attrs.get("ignore_index", -100)), zero_class=2)
    model = weighted_model(dtype, feeds, **attrs)
    session = cann_ep.session(model, profile_prefix=str(tmp_path / "p"))
    got = ort_io.run(session, feeds)
    want = ort_io.run(make_session(model), feeds)
    for name, g, w in zip(("loss", "dlogits"), got, want):
        assert_close(g, w, name)
    for name, g, w in zip(("loss", "dlogits"), got, OP.outputs_of(*feeds.values(), **attrs)):
        assert_close(g, w, f"{name} vs reference")
    assert {(r.op_type, r.provider) for r in cann_ep.node_runs(session) if r.op_type == OP.name} == {(OP.name, CANN)}


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
@pytest.mark.parametrize("some_ignored", [True, False])
def test_class_weights_send_the_documented_ops_and_one_copy_of_their_own(dtype, reduction, label_smoothing,
                                                                        some_ignored):
    feeds = weighted(inputs(dtype, ignored=(3, 17) if some_ignored else ()))
    model = weighted_model(dtype, feeds, reduction=reduction, label_smoothing=label_smoothing)
    session = cann_ep.session(model)
    ops, counts = second_run_counts(session, feeds)
    assert ops == weighted_sent(reduction, label_smoothing, some_ignored, dtype)
    # four inputs in (target by the kernel), loss and dlogits out; ORT's end-of-run synchronisation
    assert counts == {"copies_h2d": 4, "copies_d2h": 2, "copies_d2d": 0, "stream_syncs": 1}
    got = ort_io.run(session, feeds)
    for name, g, w in zip(("loss", "dlogits"), got, ort_io.run(make_session(model), feeds)):
        assert_close(g, w, name)


@pytest.mark.parametrize("case", ["every row ignored", "every target weighs 0", "a target weighs 0, -inf there",
                                  "-inf logit of another class", "nan logits in an ignored row"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_class_weights_corners_land_where_the_cpu_ep_puts_them(case, label_smoothing):
    """NaN / inf at the same places as the CPU kernel (and the reference, checked against PyTorch's
    autograd in tests/ops): all rows ignored (NaN loss, zero gradients), W = 0 with rows that
    count (NaN loss and gradients there), a 0-weighted target's -inf logit (0 * inf: NaN)."""
    feeds = weighted(inputs("float32", ignored=range(32) if case == "every row ignored" else (3, 17)))
    t = feeds["target"]
    if case == "every target weighs 0":
        t[t != -100] = 2
        feeds["weight"][2] = 0.0
    if case == "a target weighs 0, -inf there":
        feeds["weight"][t[0]] = 0.0
        feeds["logits"][0, t[0]] = -np.inf
    if case == "-inf logit of another class":
        feeds["logits"][0, (t[0] + 1) % 10] = -np.inf
    if case == "nan logits in an ignored row":
        feeds["logits"][3, 2] = np.nan
    model = weighted_model("float32", feeds, label_smoothing=label_smoothing)
    got = ort_io.run(cann_ep.session(model), feeds)
    want = ort_io.run(make_session(model), feeds)
    reference = OP.outputs_of(*feeds.values(), label_smoothing=label_smoothing)
    if case == "every target weighs 0" and label_smoothing:
        # the kernel's one documented difference: W = 0 with eps > 0 divides a non-zero total by 0
        # (+inf) where PyTorch's nll is 0 / 0 (NaN); the gradients agree (NaN where rows count)
        assert np.isnan(want[0]) and got[0] == np.inf
        got, want, reference = got[1:], want[1:], reference[1:]
    for name, g, w, r in zip(("dlogits",) if len(got) == 1 else ("loss", "dlogits"), got, want, reference):
        assert np.array_equal(np.isnan(w), np.isnan(r)), name
        assert np.array_equal(np.isnan(g), np.isnan(w)), (name, np.argwhere(np.isnan(g) != np.isnan(w))[:5])
        finite = np.isfinite(w)
        assert np.array_equal(np.isfinite(g), finite), name
        assert_close(np.where(finite, g, 0).astype(g.dtype), np.where(finite, w, 0).astype(w.dtype), name)
    if case == "every row ignored":
        assert np.isnan(got[0]) and not got[1].any()
    if case == "every target weighs 0":
        assert np.isnan(got[-1][t != -100]).all() and not got[-1][t == -100].any()


_THREADS_CHILD = """
import json
import numpy as np
from ort_ops import cann_ep
cann_ep.use_simulator()
from ort_ops.model_builder import make_op_model
from threaded_runs import threads_against_serial
n, c = 32, 10
model = make_op_model("SoftmaxCrossEntropyLossAndGrad", "float32", None, input_shapes=[[n, c], [n], [], [c]],
                      output_shapes=[[], [n, c]], label_smoothing={eps}, ignore_index=4)
session = cann_ep.session(model)
feed_sets = []
for seed in range(4):
    rng = np.random.default_rng(seed)
    feed_sets.append({{"logits": rng.normal(0, 3, (n, c)).astype(np.float32),
                      "target": rng.integers(0, c, n).astype(np.int64),
                      "dloss": np.array(0.5 + seed, np.float32),
                      "weight": rng.uniform(0.25, 3.0, c).astype(np.float32)}})
print("RESULT=" + json.dumps(threads_against_serial(session, feed_sets, threads=4, rounds=3)))
"""


@pytest.mark.parametrize("eps", [0.0, 0.2])
def test_class_weights_from_several_threads_equal_the_serial_runs(eps):
    """One weighted session from 4 threads with the simulator's stream delay (its per-stream scratch
    and the target copy under concurrency): every threaded result equals its serial run byte for byte."""
    from threaded_runs import run_child_with_stream_delay

    result = run_child_with_stream_delay(_THREADS_CHILD.format(eps=eps))
    assert result["errors"] == [] and result["bad"] == 0, result
    assert result["runs"] == 48 and result["distinct"] == 4, result
