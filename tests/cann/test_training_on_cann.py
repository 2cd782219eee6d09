"""Training on the CANN EP (simulated here) with models.train: the same losses and parameters
as the same training on the CPU EP, with EluGrad, the claimed training-graph ops and the
optimizer update verified from ORT's profile to have run on CANNExecutionProvider."""

from __future__ import annotations

import numpy as np
import pytest

cann_ep = pytest.importorskip("cann_ep")

from models.train import SGD, Adam, Trainer, cpu_session_factory  # noqa: E402
from test_training_graph_on_cann import CANN, make_model  # noqa: E402

STEPS = 12
# BatchMatMul accumulates in k order, the CPU EP's MLAS in blocks: tiny float32 differences
# that training carries forward; the bound for losses is relative 1e-4.
LOSS_RTOL = 1e-4
PARAM_RTOL, PARAM_ATOL = 1e-4, 1e-6


@pytest.fixture(scope="module", autouse=True)
def cann_runtime():
    import onnxruntime as ort

    if CANN not in ort.get_available_providers():
        pytest.skip(f"onnxruntime {ort.__version__} here has no {CANN} "
                    "(run these tests in .venv-cann, made by scripts/setup.sh)")
    if not cann_ep.available():
        pytest.skip("no ACL runtime: neither a CANN toolkit nor the built simulator (cann_ep/sim)")
    cann_ep.use_simulator()


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

    train_runs = cann_ep.node_runs(cann.train_session)
    by_op = {}
    for run in train_runs:
        by_op.setdefault(run.op_type, set()).add(run.provider)
    for op in ("EluGrad", "MatMul", "Mul", "Sub", "Div", "Neg"):
        assert by_op.get(op) == {CANN}, (op, by_op.get(op))
    update_runs = cann_ep.node_runs(cann.update_session)
    compute = [r for r in update_runs if not r.op_type.startswith("Memcpy")]
    assert compute and all(r.provider == CANN for r in compute), compute
