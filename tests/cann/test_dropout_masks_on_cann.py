"""Reproducible dropout on the CANN EP (simulated): the committed training graph with dropout mask
inputs (tests/fixtures/dropout/mlp_dropout_elu_fp32, ort_ops.training.dropout_masks) trained on
CANN draws the same masks as on the CPU EP -- the losses and parameters agree step by step -- and
a run resumed from a CPU checkpoint on CANN continues the CPU run."""

from __future__ import annotations

import numpy as np
import pytest

cann_ep = pytest.importorskip("ort_ops.cann_ep")

from models.fixture_graphs import batch, training_case  # noqa: E402
from ort_ops import rewrite  # noqa: E402
from ort_ops.tolerances import check  # noqa: E402
from ort_ops.training.trainer import SGD, Trainer, cpu_session_factory  # noqa: E402

pytestmark = pytest.mark.usefixtures("cann_simulator")
FIXTURE = "dropout/mlp_dropout_elu_fp32"
STEPS = 10


def _assert_close(got, want, what):
    closeness = check(np.asarray(got, np.float32), np.asarray(want, np.float32))
    assert closeness.ok, f"{what}: {closeness.message}"


def test_cann_and_cpu_draw_the_same_masks(tmp_path):
    graph, params, _ = training_case(FIXTURE)
    graph = rewrite.fuse_training(graph)
    data = [batch(graph, seed=i % 3) for i in range(STEPS)]

    def trainer(seed, on_cann):
        factory = (lambda m: cann_ep.session(m)) if on_cann else cpu_session_factory()
        return Trainer(graph, params, SGD(lr=0.05, momentum=0.9), session_factory=factory, dropout_seed=seed)

    cpu = trainer(3, False)
    cpu_losses = cpu.fit(data, progress=False)
    cann = trainer(3, True)
    cann_losses = cann.fit(data, progress=False)
    _assert_close(cann_losses, cpu_losses, "losses")
    for name, value in cpu.parameters().items():
        _assert_close(cann.parameters()[name], value, name)
    other = trainer(4, True).fit(data, progress=False)  # other masks, other losses: the masks matter
    assert np.max(np.abs(np.array(other) - cpu_losses)) > 1e-3

    half = trainer(3, False)
    half.fit(data[:4], progress=False)
    half.save_checkpoint(tmp_path / "ckpt.npz")
    resumed = trainer(0, True)
    resumed.load_checkpoint(tmp_path / "ckpt.npz")  # the seed comes from the checkpoint
    _assert_close(resumed.fit(data[4:], progress=False), cpu_losses[4:], "resumed losses")
