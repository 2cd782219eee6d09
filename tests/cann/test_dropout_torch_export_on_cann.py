"""End to end: a PyTorch model with nn.Dropout exported by torch.onnx.export(..., training=
TrainingMode.TRAINING) (the TorchScript exporter, dynamo=False: it keeps the Dropout node with its
ratio and training_mode constants) runs wholly on the CANN EP after placement: ORT's profile shows
no node run on the CPU EP. The export runs in the main environment (.venv, which has PyTorch); the
expected output is NumPy's Linear -> ReLU -> (mask / (1 - p)) -> Linear from the exported weights
with the node's own mask (made a graph output), within float32 matrix-product rounding."""

from __future__ import annotations

import os
import subprocess
import textwrap

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

cann_ep = pytest.importorskip("ort_ops.cann_ep")
pytestmark = pytest.mark.usefixtures("cann_simulator")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAIN_PYTHON = os.path.join(ROOT, ".venv", "bin", "python")  # the main environment, with PyTorch
P = 0.3

EXPORT = textwrap.dedent(f"""
    import sys, warnings
    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.drop, self.b = torch.nn.Linear(16, 64), torch.nn.Dropout({P}), torch.nn.Linear(64, 8)

        def forward(self, x):
            return self.b(self.drop(torch.relu(self.a(x))))

    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        torch.onnx.export(Net().train(), (torch.randn(32, 16),), sys.argv[1], dynamo=False, opset_version=13,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                          input_names=["x"], output_names=["y"])
""")


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    if not os.path.isfile(MAIN_PYTHON):
        pytest.skip(f"no main environment with PyTorch ({MAIN_PYTHON}; scripts/setup.sh)")
    path = tmp_path_factory.mktemp("export") / "dropout_net.onnx"
    proc = subprocess.run([MAIN_PYTHON, "-c", EXPORT, str(path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return onnx.load(str(path))


def test_exported_training_dropout_runs_wholly_on_cann(exported, tmp_path):
    assert [n.op_type for n in exported.graph.node].count("Dropout") == 1
    session = cann_ep.session(exported, profile_prefix=str(tmp_path / "p"))
    drop = next(n for n in session.placement.nodes if n.op_type == "Dropout")
    assert drop.where == "placed" and drop.cann_ops == ("DropOutGenMask", "DropOutDoMask"), drop.line()
    x = np.random.default_rng(0).standard_normal((32, 16)).astype(np.float32)
    first, second = (session.run(None, {"x": x})[0] for _ in range(2))
    assert first.shape == (32, 8) and not np.array_equal(first, second)  # training mode: fresh masks
    runs = cann_ep.node_runs(session)
    on_cpu = [(r.op_type, r.name) for r in runs if r.provider != "CANNExecutionProvider"]
    assert runs and on_cpu == [], on_cpu
    assert "Dropout" in {r.op_type for r in runs}


def test_exported_model_output_is_numpys_with_the_nodes_mask(exported):
    model = onnx.ModelProto()
    model.CopyFrom(exported)
    node = next(n for n in model.graph.node if n.op_type == "Dropout")
    model.graph.output.append(helper.make_tensor_value_info(node.output[1], onnx.TensorProto.BOOL, None))
    weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    session = cann_ep.session(model)
    x = np.random.default_rng(1).standard_normal((32, 16)).astype(np.float32)
    y, mask = session.run(None, {"x": x})
    keep = mask.mean()
    assert abs(keep - (1 - P)) <= 6 * np.sqrt((1 - P) * P / mask.size), keep
    h = np.maximum(x @ weights["a.weight"].T + weights["a.bias"], 0)
    want = (h * mask * (np.float32(1) / np.float32(1 - P))) @ weights["b.weight"].T + weights["b.bias"]
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
