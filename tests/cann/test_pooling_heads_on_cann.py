"""The ELU CNNs with average-pooling heads (tests/fixtures cnn_avgpool_elu_fp32 /
cnn_adaptive_elu_fp32: nn.AvgPool2d, nn.AdaptiveAvgPool2d(4) on 6x6 maps, exported with
ort_ops.training.translations) fused with rewrite.fuse_training and trained on the CANN EP
(simulated): the same losses and parameters as on the CPU EP. Nodes the EP has no kernel for
run on the host (issue 23 puts them on the device)."""

from __future__ import annotations

import numpy as np
import pytest

cann_ep = pytest.importorskip("ort_ops.cann_ep")

from models.fixture_graphs import batch, training_case  # noqa: E402
from ort_ops import rewrite  # noqa: E402
from ort_ops.tolerances import check  # noqa: E402
from ort_ops.training.trainer import SGD, Trainer, cpu_session_factory  # noqa: E402

pytestmark = pytest.mark.usefixtures("cann_simulator")
STEPS = 8


@pytest.mark.parametrize("fixture", ["cnn_avgpool_elu_fp32", "cnn_adaptive_elu_fp32"])
def test_pooling_head_trains_on_cann_like_on_cpu(fixture, tmp_path):
    graph, params, _ = training_case(fixture)
    graph = rewrite.fuse_training(graph)
    data = [batch(graph, seed=i % 2) for i in range(STEPS)]
    cpu = Trainer(graph, params, SGD(lr=0.05, momentum=0.9), session_factory=cpu_session_factory())
    cpu_losses = np.array(cpu.fit(data, progress=False), np.float32)
    sessions = []

    def factory(model):
        sessions.append(cann_ep.session(model, profile_prefix=str(tmp_path / f"p{len(sessions)}")))
        return sessions[-1]

    cann = Trainer(graph, params, SGD(lr=0.05, momentum=0.9), session_factory=factory)
    cann_losses = np.array(cann.fit(data, progress=False), np.float32)
    closeness = check(cann_losses, cpu_losses)
    assert closeness.ok, closeness.message
    assert cpu_losses[-2:].mean() < cpu_losses[:2].mean()  # it trains
    for name, value in cpu.parameters().items():
        closeness = check(cann.parameters()[name], value)
        assert closeness.ok, f"{name}: {closeness.message}"
    providers = {r.provider for r in cann_ep.node_runs(sessions[0])}
    assert "CANNExecutionProvider" in providers, providers
