"""ort_ops/training/translations/batch_norm.py, the translation of aten._native_batch_norm_legit_functional,
against eager PyTorch: through export_training_graph (its verify compares loss, gradients and the
running statistics' update with eager autograd) for the variants it handles, and directly."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from ort_ops.training import export_training_graph
from ort_ops.training.export import _quiet_exporter
from ort_ops.training.translations import CUSTOM_TRANSLATION_TABLE
from ort_ops.training.translations.batch_norm import BATCH_NORM_FUNCTIONAL
from ort_ops.training.verify import eager_loss_and_grads, feeds_for, run_ort

OURS = str(BATCH_NORM_FUNCTIONAL)


def test_batch_norm_without_affine_on_3d_input_matches_eager():
    # weight and bias absent (affine=False), statistics over batch and length, momentum 0.25
    torch.manual_seed(2)
    model = nn.Sequential(nn.Conv1d(2, 3, 3), nn.BatchNorm1d(3, affine=False, momentum=0.25), nn.ELU(),
                          nn.Flatten(), nn.Linear(3 * 5, 2))
    x, y = torch.randn(4, 2, 7), torch.randint(0, 2, (4,))
    graph, report = export_training_graph(model, (x,), F.cross_entropy, targets=(y,), params_as_inputs=True,
                                          report=True)  # verify=True: raises on any mismatch with eager
    assert OURS in {o.aten_op for o in report.toolkit_ops}
    # the statistics' update itself, tighter than verify's table: unbiased variance, momentum 0.25
    got = run_ort(graph, feeds_for(graph, model, (x,), (y,)))
    want = eager_loss_and_grads(model, (x,), F.cross_entropy, (y,), buffers=["1.running_mean", "1.running_var"])
    for name in ("new.1.running_mean", "new.1.running_var"):
        np.testing.assert_allclose(got[name], want[name].numpy(), rtol=1e-6, atol=1e-7, err_msg=name)


def test_float16_batch_norm_matches_eager():
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(6, 5, bias=False), nn.BatchNorm1d(5), nn.ELU(), nn.Linear(5, 3))
    x, y = torch.randn(8, 6), torch.randn(8, 3)
    graph, report = export_training_graph(model, (x,), F.mse_loss, targets=(y,), params_as_inputs=True,
                                          dtype=torch.float16, report=True)  # verified in float16's tolerance
    assert [b.dtype for b in report.state_buffers] == ["float16", "float16", "int64"]
    assert OURS in {o.aten_op for o in report.toolkit_ops}


class _Frozen(nn.Module):
    """The op itself with training=False (frozen statistics): what the translation's other branch does."""

    def __init__(self, affine: bool):
        super().__init__()
        self.w = nn.Parameter(torch.rand(3) + 0.5) if affine else None
        self.b = nn.Parameter(torch.randn(3)) if affine else None
        self.register_buffer("mean", torch.randn(3))
        self.register_buffer("var", torch.rand(3) + 0.5)

    def forward(self, x):
        y, _, _, mean, var = torch.ops.aten._native_batch_norm_legit_functional(
            x, self.w, self.b, self.mean, self.var, False, 0.1, 1e-3)
        return y, mean, var


@pytest.mark.parametrize("affine", [True, False])
def test_frozen_branch_matches_eager(affine):
    torch.manual_seed(4)
    module = _Frozen(affine).eval()
    x = torch.randn(2, 3, 4, 5)
    with _quiet_exporter():
        program = torch.onnx.export(module, (x,), dynamo=True, custom_translation_table=CUSTOM_TRANSLATION_TABLE)
    session = ort.InferenceSession(program.model_proto.SerializeToString(), providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: x.numpy()})
    with torch.no_grad():
        want = [t.numpy() for t in module(x)]
    for g, w, name in zip(got, want, ("y", "running mean", "running var")):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6, err_msg=name)
