"""SoftmaxCrossEntropyLossAndGrad on the CANN EP (the ACL simulator without an NPU): equal to the
CPU EP within ort_ops.tolerances (float32/float16/bfloat16, mean and sum, ignored rows, any
ignore_index), run on CANNExecutionProvider (ORT's profile); exactly the CANN ops the kernel's
comment lists, no host-device copy or synchronisation of its own; what it does where the CPU
kernel fails or differs (targets out of range, -inf logits, an empty batch); the SoC check."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ort_ops import dtypes, ort_io, tolerances
from ort_ops.model_builder import make_op_model
from ort_ops.ops import op

cann_ep = pytest.importorskip("cann_ep")

from op_helpers import make_session  # noqa: E402

CANN = "CANNExecutionProvider"
OP = op("SoftmaxCrossEntropyLossAndGrad")


@pytest.fixture(scope="module", autouse=True)
def cann_runtime():
    import onnxruntime as ort

    if CANN not in ort.get_available_providers():
        pytest.skip(f"onnxruntime {ort.__version__} here has no {CANN} (run in .venv-cann)")
    if not cann_ep.available():
        pytest.skip("no ACL runtime: neither a CANN toolkit nor the built simulator (cann_ep/sim)")
    cann_ep.use_simulator()


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
    import cann_ep.sim as sim

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
                                   {"ignore_index": 4, "reduction": "sum"}])
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


# per reduction and dtype: the ACL ops one node sends (the kernel's comment lists them)
MEAN = {"Equal": 1, "Cast": 2, "SoftmaxCrossEntropyWithLogits": 1, "NotEqual": 1, "SelectV2": 2, "ReduceSum": 2,
        "RealDiv": 2, "Mul": 1}
SUM = {"Equal": 1, "Cast": 1, "SoftmaxCrossEntropyWithLogits": 1, "NotEqual": 1, "SelectV2": 2, "ReduceSum": 1,
       "Mul": 1}


@pytest.mark.parametrize("dtype, reduction, sent", [
    ("float32", "mean", MEAN), ("float32", "sum", SUM),
    ("float16", "mean", {**MEAN, "Cast": MEAN["Cast"] + 4}), ("bfloat16", "sum", {**SUM, "Cast": SUM["Cast"] + 4}),
])
def test_ops_sent_and_no_copy_or_sync_of_its_own(dtype, reduction, sent):
    feeds = inputs(dtype)
    session = cann_ep.session(model_for(dtype, feeds, reduction=reduction))
    ort_io.run(session, feeds)  # warm-up
    before = sim_counters()
    ort_io.run(session, feeds)
    ops, counts = diff(before, sim_counters())
    assert ops == sent
    # the three inputs in, loss and dlogits out, ORT's own end-of-run synchronisation
    assert counts == {"copies_h2d": 3, "copies_d2h": 2, "copies_d2d": 0, "stream_syncs": 1}


def test_every_row_ignored_gives_nan_loss_and_zero_gradient_like_the_cpu_ep():
    feeds = inputs("float32", ignored=range(32))
    model = model_for("float32", feeds)
    loss, dlogits = ort_io.run(cann_ep.session(model), feeds)
    want_loss, want_dlogits = ort_io.run(make_session(model), feeds)
    assert np.isnan(loss) and np.isnan(want_loss)
    assert np.array_equal(dlogits, want_dlogits) and not dlogits.any()


def test_a_target_out_of_range_is_not_checked_on_the_device():
    """The CPU kernel fails the run; CANN (no copy to the host) gives that row an all-zero one-hot
    label: loss contribution 0 (the row still counts), gradient w * softmax (docs)."""
    feeds = inputs("float32")
    feeds["target"][5] = 10
    model = model_for("float32", feeds)
    with pytest.raises(Exception, match=r"target\[5\] = 10 is outside \[0, 10\)"):
        ort_io.run(make_session(model), feeds)
    loss, dlogits = ort_io.run(cann_ep.session(model), feeds)
    x = feeds["logits"][5].astype(np.float64)
    p = np.exp(x - x.max()) / np.exp(x - x.max()).sum()
    np.testing.assert_allclose(dlogits[5], 0.75 / 30 * p, rtol=1e-5, atol=1e-7)
    assert np.isfinite(loss)


def test_a_minus_inf_logit_gives_cann_a_nan_loss():
    """CANN's SoftmaxCrossEntropyWithLogits sums labels * log_softmax over every class: 0 * -inf is
    NaN (the CPU kernel and the exporter's graph pick the target's log-probability only)."""
    feeds = inputs("float32")
    row = 0 if feeds["target"][0] != 0 else 1
    feeds["logits"][row, (feeds["target"][row] + 1) % 10] = -np.inf
    model = model_for("float32", feeds)
    loss, dlogits = ort_io.run(cann_ep.session(model), feeds)
    want_loss, want_dlogits = ort_io.run(make_session(model), feeds)
    assert np.isfinite(want_loss) and np.isnan(loss)
    assert_close(dlogits, want_dlogits, "dlogits")


def test_an_empty_batch_fails_naming_the_shape():
    feeds = {"logits": np.zeros((0, 10), np.float32), "target": np.zeros(0, np.int64),
             "dloss": np.array(1.0, np.float32)}
    model = make_op_model(OP, "float32", None, input_shapes=[[0, 10], [0], []], output_shapes=[[], [0, 10]])
    loss, _ = ort_io.run(make_session(model), feeds)
    assert np.isnan(loss)
    with pytest.raises(Exception, match=r"logits shape \[0, 10\] is empty"):
        ort_io.run(cann_ep.session(model), feeds)


_SOC_CHILD = """
import cann_ep
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
