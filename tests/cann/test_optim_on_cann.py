"""The fused optimizer updates (``ai.ortops::SGDUpdate`` / ``AdamUpdate``) on the CANN EP (the ACL
simulator without an NPU): the CANN ops each attribute branch sends (no BroadcastToD), bit for bit
the CPU kernel where the route computes in the CPU kernel's order and within float32 tolerance
where CANN's fused op rounds in its own; the ELU MLP trained 200 steps on the NPU with parameters,
state and scalars resident there, per-step losses within relative 1e-5 of the CPU EP's; the
update copies no step scalar from the host; a learning-rate change; the SoC check."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

cann_ep = pytest.importorskip("ort_ops.cann_ep")

from test_training_graph_on_cann import CANN, make_model  # noqa: E402

from contract import feeds_of, inputs_for, produced  # noqa: E402
from op_helpers import make_session  # noqa: E402
from ort_ops import ort_io, tolerances  # noqa: E402
from ort_ops.model_builder import make_op_model  # noqa: E402
from ort_ops.ops import op  # noqa: E402
from ort_ops.training.trainer import SGD, Adam, Trainer, cpu_session_factory  # noqa: E402

STEPS = 200
LOSS_RTOL = 1e-5  # the bound for CANN vs CPU losses over 200 steps


pytestmark = pytest.mark.usefixtures("cann_simulator")


def sim_snapshot():
    import ort_ops.cann_ep.sim as sim

    return sim.op_counts(), {k: sim.stat(k) for k in ("copies_h2d", "copies_d2h", "copies_d2d")}


def sim_diff(before, after) -> tuple[dict, dict]:
    ops = {k: v - before[0].get(k, 0) for k, v in after[0].items() if v != before[0].get(k, 0)}
    return ops, {k: after[1][k] - before[1][k] for k in after[1]}


# -- one node per attribute branch ----------------------------------------------------------

# attributes -> (ACL ops one node sends, device-to-device copies, bit for bit the CPU kernel)
SGD_ROUTES = [
    ({}, {"Mul": 1, "Sub": 1}, 0, True),
    ({"weight_decay": 0.01}, {"Axpy": 1, "Mul": 1, "Sub": 1}, 0, True),
    ({"momentum": 0.9}, {"ApplyMomentum": 1}, 2, True),
    ({"momentum": 0.8, "weight_decay": 0.01}, {"Axpy": 1, "ApplyMomentum": 1}, 2, True),
    ({"momentum": 0.9, "nesterov": 1}, {"ApplyMomentum": 1}, 2, False),
    ({"momentum": 0.9, "nesterov": 1, "weight_decay": 0.01}, {"Axpy": 1, "ApplyMomentum": 1}, 2, False),
    ({"momentum": 0.9, "dampening": 0.3}, {"Mul": 3, "Add": 1, "Sub": 1}, 0, True),
    ({"momentum": 0.9, "dampening": 0.3, "weight_decay": 0.01}, {"Axpy": 1, "Mul": 3, "Add": 1, "Sub": 1}, 0, True),
]
ADAM_ROUTES = [
    ({}, {"Cast": 1, "ApplyAdamW": 1}, 3, False),
    ({"weight_decay": 0.01}, {"Cast": 1, "Axpy": 1, "ApplyAdamW": 1}, 3, False),
    ({"beta1": 0.8, "beta2": 0.99, "eps": 1e-6}, {"Cast": 1, "ApplyAdamW": 1}, 3, False),
]
ROUTES = [pytest.param("SGDUpdate", *r, id=f"SGDUpdate-{r[0] or 'defaults'}") for r in SGD_ROUTES] + \
         [pytest.param("AdamUpdate", *r, id=f"AdamUpdate-{r[0] or 'defaults'}") for r in ADAM_ROUTES]


def assert_same(got, want, what):
    """NaN at the same places, every other element's bits equal."""
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan, err_msg=what)
    np.testing.assert_array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32), err_msg=what)


@pytest.mark.parametrize("name, attrs, sent, d2d, exact", ROUTES)
def test_each_branch_sends_cann_ops_and_matches_the_cpu_kernel(name, attrs, sent, d2d, exact, tmp_path):
    definition = op(name)
    model = make_op_model(definition, "float32", None, **attrs)
    arrays = inputs_for(definition, "float32", None, seed=4, attrs=attrs)
    feeds = feeds_of(definition, arrays)
    session = cann_ep.session(model, profile_prefix=str(tmp_path / "p"))
    session.run(None, feeds)  # warm-up
    before = sim_snapshot()
    got = ort_io.run(session, feeds)
    ops, copies = sim_diff(before, sim_snapshot())
    assert ops == sent and copies["copies_d2d"] == d2d
    assert {(r.op_type, r.provider) for r in cann_ep.node_runs(session)} == {(name, CANN)}
    want = ort_io.run(make_session(model), feeds)  # the CPU kernel
    reference = produced(definition, definition.outputs_of(*arrays, **attrs))
    for (t, ref), g, w in zip(reference, got, want, strict=True):
        if exact:
            assert_same(g, w, t.name)
        closeness = tolerances.check(g, ref)
        assert closeness.ok, f"{t.name}: {closeness.message}"


ADAM_TRACK_STEPS = 200


@pytest.mark.parametrize("attrs", [{}, {"weight_decay": 0.01}, {"beta1": 0.8, "beta2": 0.99, "eps": 1e-6}])
def test_adam_with_cann_scalars_launches_no_cast_and_tracks_the_cpu_kernel(attrs):
    """200 updates of one parameter from zero state with a fixed gradient sequence, on CANN with and
    without cann_scalars (the trainer's graph forms them once for every parameter) and on the CPU.
    Given them, the kernel launches ApplyAdamW without a Cast, and ApplyAdamW forms no bias
    correction from float32 powers: the parameter ends within 1e-6 of max|p| of the CPU kernel's
    (without them the first steps' bias corrections leave up to 7e-6). The moments each EP carries
    are its own, as in training: CANN's second moment is k2 times PyTorch's (docs/ops/AdamUpdate.md)."""
    from ort_ops.ops.adam_update import cann_scalars

    definition = op("AdamUpdate")
    a = {**definition.defaults(), **attrs}
    opt = Adam(lr=1e-2, betas=(a["beta1"], a["beta2"]), eps=a["eps"], weight_decay=a["weight_decay"])
    rng = np.random.default_rng(7)
    shape = (5, 37)
    grads = [(rng.standard_normal(shape) * rng.uniform(0.01, 1)).astype(np.float32) for _ in range(ADAM_TRACK_STEPS)]

    def track(session, given):
        p, m, v = (np.zeros(shape, np.float32) for _ in range(3))
        sent = None
        for t, g in enumerate(grads):
            f = {"param": p, "grad": g, "exp_avg": m, "exp_avg_sq": v, "scalars": opt.scalar_state(t)}
            if given:
                f["cann_scalars"] = cann_scalars(f["scalars"], a["beta1"], a["beta2"], a["eps"]).astype(np.float32)
            before = sim_snapshot()
            p, m, v = ort_io.run(session, f)
            if t == 1:
                sent = sim_diff(before, sim_snapshot())[0]
        return p, sent

    results = {}
    for given in (False, True):
        shapes = [list(shape)] * 4 + [[3]] + ([[3]] if given else [])
        model = make_op_model(definition, "float32", None, input_shapes=shapes, output_shapes=[list(shape)] * 3,
                              **attrs)
        results[given] = track(cann_ep.session(model), given)
        if given:
            want, _ = track(make_session(model), given)  # the CPU kernel
    (old, sent_old), (new, sent_new) = results[False], results[True]
    assert sent_old.pop("Cast") == 1 and sent_old == sent_new and "Cast" not in sent_new, (sent_old, sent_new)
    scale = np.abs(want).max()
    errors = [float(np.abs(x - want).max() / scale) for x in (old, new)]
    assert errors[1] <= 1e-6, errors
    if a["beta2"] == 0.999:  # measured 6.3e-6 without, 4.4e-7 with: the test tells the routes apart
        assert errors[0] > 4 * errors[1], errors


def test_apply_momentum_first_step_equals_the_cpu_kernel():
    """On the first step the CPU kernel computes 0 * buf + 1 * g from the scalars [lr, 0, 1];
    ApplyMomentum gets the constant momentum: equal because the buffer is zero."""
    definition = op("SGDUpdate")
    attrs = {"momentum": 0.9, "weight_decay": 0.01}
    p, g, _, _ = inputs_for(definition, "float32", None, seed=2, attrs=attrs)
    feeds = {"param": p, "grad": g, "momentum_buffer": np.zeros_like(p),
             "scalars": SGD(lr=0.05, momentum=0.9, weight_decay=0.01).scalar_state(0)}
    model = make_op_model(definition, "float32", None, **attrs)
    got = ort_io.run(cann_ep.session(model), feeds)
    want = ort_io.run(make_session(model), feeds)
    for name, a, b in zip(("new_param", "new_momentum_buffer"), got, want, strict=True):
        assert_same(a, b, name)


def test_empty_parameter_launches_nothing():
    definition = op("AdamUpdate")
    model = make_op_model(definition, "float32", None, input_shapes=[[0, 3]] * 4 + [[3]], output_shapes=[[0, 3]] * 3)
    feeds = {t.name: np.zeros((0, 3), np.float32) for t in definition.inputs[:4]}
    feeds["scalars"] = Adam().scalar_state(0)
    session = cann_ep.session(model)
    before = sim_snapshot()
    got = ort_io.run(session, feeds)
    assert all(g.shape == (0, 3) for g in got)
    assert sim_diff(before, sim_snapshot())[0] == {}


# -- training on the NPU ----------------------------------------------------------------------

OPTIMIZERS = {"sgd-momentum": lambda: SGD(lr=0.05, momentum=0.9),
              "adam": lambda: Adam(lr=1e-3)}


def mlp():
    model, feeds = make_model("fused", "inputs")
    return model, {name: value for name, value in feeds.items() if name.startswith("net.")}


def batches(n: int, seed: int = 11):
    """Fresh batches of a learnable task: the class is the largest of the first 10 features."""
    rng = np.random.default_rng(seed)
    xs = [rng.standard_normal((8, 64)).astype(np.float32) for _ in range(n)]
    return [(x, x[:, :10].argmax(axis=1).astype(np.int64)) for x in xs]


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_200_steps_on_the_npu_match_the_cpu_ep(optimizer):
    model, params = mlp()
    data = batches(STEPS)
    cpu = Trainer(model, params, OPTIMIZERS[optimizer](), session_factory=cpu_session_factory())
    npu = Trainer(model, params, OPTIMIZERS[optimizer](), session_factory=cann_ep.session, device="cann")
    assert cpu.fused and npu.fused
    cpu_losses, npu_losses = cpu.fit(data, progress=False), npu.fit(data, progress=False)
    np.testing.assert_allclose(npu_losses, cpu_losses, rtol=LOSS_RTOL)
    assert np.mean(cpu_losses[-20:]) < np.mean(cpu_losses[:20])  # it trains
    values = [v for value_set in npu._sets for v in value_set.values()]
    assert {v.device_name() for v in values} == {"cann"}  # scalars included
    np.testing.assert_array_equal(npu._current()[npu.optimizer.scalars_name].numpy(),
                                  npu.optimizer.scalar_state(STEPS))


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_the_update_sends_no_broadcast_and_copies_no_scalars_per_step(optimizer, tmp_path):
    """Per step on the NPU: the fused update's ACL ops are one fused op per parameter, one or two for
    the scalar state and, for Adam, 8 that form the cann_scalars of all of them, with no
    BroadcastToD; the host-to-device copies are the unfused update's minus its per-step scalars, the
    same every step."""
    model, params = mlp()
    data = batches(5)
    counts = {}
    for fused in (False, True):
        prefix = str(tmp_path / f"profile-{fused}")
        trainer = Trainer(model, params, OPTIMIZERS[optimizer](), device="cann", fused_update=fused,
                          session_factory=lambda m, prefix=prefix: cann_ep.session(m, profile_prefix=prefix))
        trainer.fit(data[:2], progress=False)
        per_step = []
        for batch in data[2:]:
            before = sim_snapshot()
            trainer.step(batch)
            per_step.append(sim_diff(before, sim_snapshot()))
        assert all(s == per_step[0] for s in per_step), per_step  # steady state
        counts[fused] = per_step[0]
        runs = [r for r in cann_ep.node_runs(trainer.session) if r.node.startswith("update/")]
        assert runs and {r.provider for r in runs} == {CANN}, runs
    (unfused_ops, unfused_copies), (fused_ops, fused_copies) = counts[False], counts[True]
    n_params, n_scalars = len(params), len(OPTIMIZERS[optimizer]().scalar_names)
    fused_op = "ApplyMomentum" if optimizer.startswith("sgd") else "ApplyAdamW"
    assert fused_ops[fused_op] == n_params
    # what the update adds to the training graph's own ops
    training_ops = dict(fused_ops)
    training_ops.pop(fused_op)
    if optimizer == "adam":
        # the scalar state (Mul by [1, beta1, beta2]) and the cann_scalars every AdamUpdate reads:
        # the bias state's Mul, Sub, Cast, Sqrt; Mul, Add, Cast of the scalars; their product
        for acl, n in {"Mul": 4, "Sub": 1, "Cast": 2, "Sqrt": 1, "Add": 1}.items():
            training_ops[acl] -= n
    else:
        training_ops["Mul"] -= 1  # the scalar state: Mul by [1, 0, 0], Add [0, momentum, 1 - dampening]
        training_ops["Add"] -= 1
    training_ops = {k: v for k, v in training_ops.items() if v}
    assert all(unfused_ops.get(k, 0) >= v for k, v in training_ops.items())
    update_unfused = {k: v - training_ops.get(k, 0) for k, v in unfused_ops.items() if v != training_ops.get(k, 0)}
    assert "BroadcastToD" not in set(fused_ops) - set(training_ops)
    assert fused_ops.get("BroadcastToD", 0) == training_ops.get("BroadcastToD", 0)
    assert fused_copies["copies_h2d"] == unfused_copies["copies_h2d"] - n_scalars, (counts, update_unfused)
    print(f"\n{optimizer}: per step unfused {sum(unfused_ops.values())} ACL ops ({update_unfused} for the update), "
          f"{unfused_copies}; fused {sum(fused_ops.values())} ops, {fused_copies}")


def test_learning_rate_change_on_the_npu_matches_the_cpu_ep():
    model, params = mlp()
    data = batches(30, seed=3)
    trainers = [Trainer(model, params, Adam(lr=1e-3), session_factory=cpu_session_factory()),
                Trainer(model, params, Adam(lr=1e-3), session_factory=cann_ep.session, device="cann")]
    losses = []
    for t in trainers:
        first = t.fit(data[:15], progress=False)
        before = sim_snapshot()
        t.set_learning_rate(3e-3)
        if t.device == "cann":
            assert sim_diff(before, sim_snapshot())[1]["copies_h2d"] == 1  # one copy, at the call
        losses.append(first + t.fit(data[15:], progress=False))
    np.testing.assert_allclose(losses[1], losses[0], rtol=LOSS_RTOL)
    for t in trainers:
        np.testing.assert_array_equal(t._current()["adam.scalars"].numpy(), Adam(lr=3e-3).scalar_state(30))


def test_a_skipped_step_does_not_advance_the_scalars_on_the_npu():
    model, params = mlp()
    data = batches(4, seed=5)
    x, y = data[1]
    bad = (np.where(np.arange(x.size).reshape(x.shape) == 7, np.nan, x).astype(np.float32), y)
    skipping = Trainer(model, params, SGD(lr=0.05, momentum=0.9), session_factory=cann_ep.session, device="cann",
                       on_nonfinite="skip")
    skipping.fit([data[0], bad, data[2], data[3]], progress=False)
    clean = Trainer(model, params, SGD(lr=0.05, momentum=0.9), session_factory=cann_ep.session, device="cann")
    clean.fit([data[0], data[2], data[3]], progress=False)
    assert skipping.skipped_steps == 1 and skipping.step_count == clean.step_count == 3
    for k, v in clean._current().items():
        np.testing.assert_array_equal(skipping._current()[k].numpy(), v.numpy(), err_msg=k)


def test_sgd_new_momentum_buffer_with_momentum_zero_fails_session_creation_like_the_cpu_ep():
    """Issue 19: CANN failed the run with "Unsupported OrtValue type", the CPU EP returned None."""
    model = make_op_model(op("SGDUpdate"), "float32", None, input_shapes=[[4], [4], None, [3]],
                          output_shapes=[[4], [4]])
    message = r"output new_momentum_buffer \('new_momentum_buffer'\) is produced only when momentum != 0"
    with pytest.raises(Exception, match=message):
        cann_ep.session(model)
    with pytest.raises(Exception, match=message):
        make_session(model)


# -- SoCs without the fused ops ----------------------------------------------------------------

_SOC_CHILD = """
import sys
from ort_ops import cann_ep
cann_ep.use_simulator()
from ort_ops.model_builder import make_op_model
for name, attrs in [("SGDUpdate", {"momentum": 0.9}), ("SGDUpdate", {}), ("AdamUpdate", {})]:
    try:
        cann_ep.session(make_op_model(name, "float32", None, **attrs))
        print(name, attrs, "OK")
    except Exception as exc:
        print(name, attrs, "FAILED", str(exc).replace(chr(10), " "))
"""


@pytest.mark.parametrize("soc, expected", [
    ("Ascend310B1", ["ApplyMomentum is not available on Ascend310B1", "Mul is not available on Ascend310B1",
                     "ApplyAdamW is not available on Ascend310B1"]),
    ("Ascend310P3", ["OK", "OK", "OK"]),
])
def test_session_creation_checks_the_soc(soc, expected):
    here = Path(__file__).resolve().parent
    env = dict(os.environ, ACLSIM_SOC_NAME=soc,
               PYTHONPATH=os.pathsep.join([str(here.parents[1]), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", _SOC_CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 3, proc.stdout
    for line, want in zip(lines, expected):
        assert want in line, line
        if want != "OK":
            assert "FAILED" in line and line.split()[0] + " on CANN" in line, line
