"""A training graph with buffer state (train-mode BatchNorm2d: running_mean, running_var,
num_batches_tracked) trained on the CANN EP (simulated here; host fallback for what the EP does not
place): losses, parameters and statistics equal the CPU EP's, with the values on the host and with
``device="cann"``. The graph is tests/fixtures/buffer_state/conv_bn_fp32.onnx (made by
tests/training/buffer_models.py: this environment has no PyTorch)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from models.fixture_graphs import params_as_inputs
from ort_ops.training.interface import buffer_state_names
from ort_ops.training.trainer import SGD, Trainer, cpu_session_factory

cann_ep = pytest.importorskip("ort_ops.cann_ep")
rewrite = pytest.importorskip("ort_ops.rewrite")
pytestmark = pytest.mark.usefixtures("cann_simulator")

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "buffer_state" / "conv_bn_fp32.onnx"
BUFFERS = ["1.running_mean", "1.running_var", "1.num_batches_tracked"]
STEPS = 8
RTOL, ATOL = 1e-4, 1e-6  # float32 sums in another order on the simulated device (as test_training_on_cann)


def _batches():
    rng = np.random.default_rng(3)
    return [(rng.standard_normal((4, 3, 8, 8)).astype(np.float32), rng.integers(0, 3, 4)) for _ in range(STEPS)]


@pytest.mark.parametrize("device", ["cpu", "cann"])
def test_buffer_state_trains_on_cann_like_on_cpu(device):
    # SGD: the conv bias before the train-mode BatchNorm has a zero gradient (the normalisation
    # removes any per-channel shift), rounding noise whose sign Adam turns into full-size steps of
    # the bias and so of running_mean: two EPs' noise differs (the main suite trains Adam on
    # bias-free BatchNorm models, tests/training/test_buffer_state.py)
    optimizer = lambda: SGD(lr=0.05, momentum=0.9)
    graph, params = params_as_inputs(onnx.load(str(FIXTURE)))
    graph = rewrite.fuse_training(graph)
    assert buffer_state_names(graph) == BUFFERS
    data = _batches()
    cpu = Trainer(graph, params, optimizer(), session_factory=cpu_session_factory(), progress=False)
    cpu_losses = cpu.fit(data)
    cann = Trainer(graph, params, optimizer(), session_factory=cann_ep.session, device=device, progress=False)
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in graph.graph.initializer}
    for name, value in cann.buffers().items():  # the module's statistics (as exported) to start
        np.testing.assert_array_equal(value, inits[name], err_msg=name)
    cann_losses = cann.fit(data)
    np.testing.assert_allclose(cann_losses, cpu_losses, rtol=RTOL)
    for name, value in cpu.state_dict().items():
        np.testing.assert_allclose(cann.state_dict()[name], value, rtol=RTOL, atol=ATOL, err_msg=name)
    assert cann.buffers()["1.num_batches_tracked"] == 3 + STEPS
