"""Training on the CANN EP (simulated here) with ort_ops.training.trainer: the same losses and parameters
as the same training on the CPU EP, with EluGrad, the claimed training-graph ops and the
optimizer update verified from ORT's profile to have run on CANNExecutionProvider."""

from __future__ import annotations

import numpy as np
import pytest

cann_ep = pytest.importorskip("ort_ops.cann_ep")

from test_training_graph_on_cann import CANN, make_model  # noqa: E402

from ort_ops.training.step_graph import UPDATE_PREFIX  # noqa: E402
from ort_ops.training.trainer import SGD, Adam, Trainer, cpu_session_factory  # noqa: E402

STEPS = 12
# BatchMatMul accumulates in k order, the CPU EP's MLAS in blocks: tiny float32 differences
# that training carries forward; the bound for losses is relative 1e-4.
LOSS_RTOL = 1e-4
PARAM_RTOL, PARAM_ATOL = 1e-4, 1e-6


pytestmark = pytest.mark.usefixtures("cann_simulator")


def batches(n: int):
    """Two fixed batches in turn: the model can fit them, so the loss must fall."""
    rng = np.random.default_rng(11)
    pair = [(rng.standard_normal((8, 64)).astype(np.float32),
             rng.integers(0, 10, 8).astype(np.int64)) for _ in range(2)]
    return [pair[i % 2] for i in range(n)]


@pytest.mark.parametrize("make_optimizer", [lambda: SGD(lr=0.05, momentum=0.9),
                                            lambda: Adam(lr=1e-3)], ids=["sgd", "adam"])
def test_cann_training_matches_cpu(make_optimizer, tmp_path):
    model, feeds = make_model("fused", "inputs")
    params = {name: value for name, value in feeds.items() if name.startswith("net.")}
    data = batches(STEPS)

    cpu = Trainer(model, params, make_optimizer(), session_factory=cpu_session_factory())
    cpu_losses = cpu.fit(data, progress=False)
    counter = iter(range(100))
    cann = Trainer(model, params, make_optimizer(), session_factory=lambda m: cann_ep.session(
        m, profile_prefix=str(tmp_path / f"profile{next(counter)}")))
    cann_losses = cann.fit(data, progress=False)

    np.testing.assert_allclose(cann_losses, cpu_losses, rtol=LOSS_RTOL)
    assert cpu_losses[-2] < cpu_losses[0]  # it is training, not standing still
    for name, value in cpu.parameters().items():
        np.testing.assert_allclose(cann.parameters()[name], value, rtol=PARAM_RTOL,
                                   atol=PARAM_ATOL, err_msg=name)

    runs = cann_ep.node_runs(cann.session)
    train_runs = [r for r in runs if not r.node.startswith(UPDATE_PREFIX)]
    update_runs = [r for r in runs if r.node.startswith(UPDATE_PREFIX)]
    by_op = {}
    for run in train_runs:
        by_op.setdefault(run.op_type, set()).add(run.provider)
    for op in ("EluGrad", "MatMul", "Mul", "Sub", "Div", "Neg"):
        assert by_op.get(op) == {CANN}, (op, by_op.get(op))
    assert update_runs and all(r.provider == CANN for r in update_runs), update_runs


# -- parameters, gradients and optimizer state resident on the (simulated) NPU -------------
OPTIMIZERS = {"sgd": lambda: SGD(lr=0.05, momentum=0.9), "adam": lambda: Adam(lr=1e-3)}


def train_cpu_and_device(optimizer: str, steps: int) -> dict:
    """The same training on the CPU EP and on CANN with ``device="cann"``: losses, final
    parameters and optimizer state of both, and the device of every value the trainer keeps."""
    model, feeds = make_model("fused", "inputs")
    params = {name: value for name, value in feeds.items() if name.startswith("net.")}
    data = batches(steps)
    cpu = Trainer(model, params, OPTIMIZERS[optimizer](), session_factory=cpu_session_factory())
    npu = Trainer(model, params, OPTIMIZERS[optimizer](), session_factory=lambda m: cann_ep.session(m),
                  device="cann")
    out = {"cpu_losses": cpu.fit(data, progress=False), "npu_losses": npu.fit(data, progress=False),
           "cpu_params": cpu.parameters(), "npu_params": npu.parameters(),
           "cpu_state": cpu.optimizer_state(), "npu_state": npu.optimizer_state()}
    values = [v for value_set in npu._sets for v in value_set.values()] + list(npu._grads.values())
    out["devices"] = sorted({v.device_name() for v in values})
    return out


def check_device_training(out: dict) -> None:
    assert out["devices"] == ["cann"]  # parameters, state and gradients never left the NPU
    np.testing.assert_allclose(out["npu_losses"], out["cpu_losses"], rtol=LOSS_RTOL)
    assert out["cpu_losses"][-2] < out["cpu_losses"][0]
    for kind in ("params", "state"):
        for name, value in out[f"cpu_{kind}"].items():
            np.testing.assert_allclose(out[f"npu_{kind}"][name], value, rtol=PARAM_RTOL, atol=PARAM_ATOL,
                                       err_msg=f"{kind} {name}")


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_device_resident_training_matches_cpu(optimizer):
    check_device_training(train_cpu_and_device(optimizer, STEPS))


_CHILD = """
import pickle, sys
from ort_ops import cann_ep
cann_ep.use_simulator()
import test_training_on_cann as t
with open(sys.argv[2], "wb") as f:
    pickle.dump(t.train_cpu_and_device(sys.argv[1], int(sys.argv[3])), f)
"""


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_device_resident_training_matches_cpu_with_stream_delay(optimizer, tmp_path):
    """ACLSIM_STREAM_DELAY_US (read at aclInit, so in a fresh process) makes every queued ACL
    operation late: a value read before the work producing it has run would be stale."""
    import os
    import pickle
    import subprocess
    import sys
    from pathlib import Path

    here = Path(__file__).resolve().parent
    env = dict(os.environ, ACLSIM_STREAM_DELAY_US="200",
               PYTHONPATH=os.pathsep.join([str(here), str(here.parents[1]), os.environ.get("PYTHONPATH", "")]))
    out_file = tmp_path / "out.pkl"
    proc = subprocess.run([sys.executable, "-c", _CHILD, optimizer, str(out_file), str(STEPS)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    with open(out_file, "rb") as f:
        check_device_training(pickle.load(f))
