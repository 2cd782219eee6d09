"""Placed BatchNormalization on the CANN EP (the ACL simulator): training mode (opset 14/15 ``training_mode=1``:
CANN BatchNormV3, and Axpy + Muls making its unbiased running variance ONNX's population one) at ranks 2-5, and
inference of non-4-D X (CANN BatchNorm over X as [N, C, S, 1]). Against ONNX's definition in float64 in NumPy
(itself checked against onnx.reference), within ort_ops.tolerances; the launches per node counted; the running
outputs read or not; what the kernel must refuse, with the reason; and a PyTorch model (BatchNorm2d,
BatchNorm1d) exported in training mode, run wholly on CANN against PyTorch's train-mode forward."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from session_runs import launched_by

from ort_ops import tolerances
from ort_ops.domain import IR_VERSION

cann_ep = pytest.importorskip("ort_ops.cann_ep")
pytestmark = pytest.mark.usefixtures("cann_simulator")
RNG = np.random.default_rng(23)
ROOT = Path(__file__).resolve().parents[2]
F16, F32 = np.float16, np.float32
TRAIN_OPS = {"BatchNormV3": 1, "Axpy": 1, "Muls": 1}


def inputs(shape, x_dtype=F32, param_dtype=F32, stat_dtype=F32):
    c = shape[1]
    return [RNG.normal(0.5, 2.0, shape).astype(x_dtype), RNG.uniform(0.5, 1.5, c).astype(param_dtype),
            RNG.normal(0.0, 0.5, c).astype(param_dtype), RNG.normal(0.0, 1.0, c).astype(stat_dtype),
            RNG.uniform(0.5, 2.0, c).astype(stat_dtype)]


def model(values, opset, attrs, outputs=("y",)):
    """One BatchNormalization node; ``outputs``: names, "" for one not produced."""
    names = ["x", "scale", "b", "mean", "var"]
    graph_in = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
                for n, v in zip(names, values)]
    node = helper.make_node("BatchNormalization", names, list(outputs), name="bn", **attrs)
    graph = helper.make_graph([node], "bn", graph_in, [helper.make_empty_tensor_value_info(o) for o in outputs if o])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = IR_VERSION
    return m


def reference(values, training, momentum=0.9, epsilon=1e-5):
    """ONNX's BatchNormalization in float64: training mode normalises with the batch mean and *population*
    variance over every axis but 1 and gives running = input * momentum + current * (1 - momentum)."""
    x, scale, b, mean, var = (v.astype(np.float64) for v in values)
    axes = tuple(i for i in range(x.ndim) if i != 1)
    col = (1, -1) + (1,) * (x.ndim - 2)
    if training:
        cur_mean, cur_var = x.mean(axis=axes), x.var(axis=axes)
    else:
        cur_mean, cur_var = mean, var
    y = (x - cur_mean.reshape(col)) / np.sqrt(cur_var.reshape(col) + epsilon) * scale.reshape(col) + b.reshape(col)
    return [y, mean * momentum + cur_mean * (1 - momentum), var * momentum + cur_var * (1 - momentum)]


def assert_close(got, want, dtype):
    assert got.dtype == dtype, (got.dtype, dtype)
    closeness = tolerances.check(got, want.astype(dtype) if dtype == F16 else want, tolerances.tolerance_of(dtype))
    assert closeness.ok, closeness.message


def run_placed(m, values, tmp_path):
    session = cann_ep.session(m, profile_prefix=str(tmp_path / "p"))
    (entry,) = session.placement.nodes
    assert entry.where == "placed", session.placement.summary()
    got, launched = launched_by(session, dict(zip(["x", "scale", "b", "mean", "var"], values)))
    runs = cann_ep.node_runs(session)
    assert [(r.op_type, r.provider) for r in runs if r.node == "bn"] == [("BatchNormalization", cann_ep.PROVIDER)]
    return entry, got, launched


def test_the_reference_is_onnx_reference():
    """The float64 reference here against onnx.reference's BatchNormalization (training and inference)."""
    from onnx.reference import ReferenceEvaluator

    values = inputs((4, 3, 5))
    feeds = dict(zip(["x", "scale", "b", "mean", "var"], values))
    for training, outs in ((1, ("y", "rm", "rv")), (0, ("y",))):
        attrs = {"training_mode": training, "momentum": 0.7, "epsilon": 1e-3}
        got = ReferenceEvaluator(model(values, 15, attrs, outs)).run(None, feeds)
        for g, w in zip(got, reference(values, training, 0.7, 1e-3)):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


TRAINING = {  # id: (shape, opset, dtypes (x, scale / B, statistics), attributes, outputs)
    "2d_opset14": ((6, 4), 14, (F32, F32, F32), {}, ("y", "rm", "rv")),
    "3d_momentum_epsilon": ((4, 3, 5), 15, (F32, F32, F32), {"momentum": 0.3, "epsilon": 1e-2}, ("y", "rm", "rv")),
    "4d_y_only": ((2, 3, 4, 5), 15, (F32, F32, F32), {"momentum": 0.5}, ("y", "", "")),
    "5d_no_running_mean": ((2, 3, 2, 3, 2), 15, (F32, F32, F32), {"momentum": 0.0}, ("y", "", "rv")),
    "3d_no_running_var_momentum_1": ((3, 2, 7), 14, (F32, F32, F32), {"momentum": 1.0}, ("y", "rm", "")),
    "f16_x_f32_params": ((4, 3, 8), 15, (F16, F32, F32), {}, ("y", "rm", "rv")),
    "f16_x_f16_params_opset14": ((2, 3, 4, 4), 14, (F16, F16, F32), {"epsilon": 1e-3}, ("y", "rm", "rv")),
    "two_values_per_channel": ((2, 5), 15, (F32, F32, F32), {"momentum": 0.25}, ("y", "rm", "rv")),
}


@pytest.mark.parametrize("case", TRAINING)
def test_training_mode(case, tmp_path):
    shape, opset, dtypes, attrs, outs = TRAINING[case]
    values = inputs(shape, *dtypes)
    m = model(values, opset, {"training_mode": 1, **attrs}, outs)
    entry, got, launched = run_placed(m, values, tmp_path)
    assert entry.cann_ops == tuple(TRAIN_OPS)
    assert launched == ({"BatchNormV3": 1} if outs[2] == "" else TRAIN_OPS), launched
    want = reference(values, True, attrs.get("momentum", 0.9), attrs.get("epsilon", 1e-5))
    produced = [(w, dtype) for name, w, dtype in zip(outs, want, (dtypes[0], F32, F32)) if name]
    assert len(got) == len(produced)
    for g, (w, dtype) in zip(got, produced):
        assert_close(g, w, dtype)


INFERENCE = {  # id: (shape, opset, dtypes, epsilon)
    "2d": ((5, 4), 15, (F32, F32, F32), 1e-5),
    "3d_opset9": ((3, 4, 7), 9, (F32, F32, F32), 1e-3),
    "5d_opset13": ((2, 3, 2, 3, 2), 13, (F32, F32, F32), 0.5),
    "3d_f16": ((3, 4, 7), 15, (F16, F32, F32), 1e-5),
}


@pytest.mark.parametrize("case", INFERENCE)
def test_inference_of_non_4d_input(case, tmp_path):
    shape, opset, dtypes, eps = INFERENCE[case]
    values = inputs(shape, *dtypes)
    entry, (y,), launched = run_placed(model(values, opset, {"epsilon": eps}), values, tmp_path)
    assert entry.cann_ops == ("BatchNorm",) and launched == {"BatchNorm": 1}, launched
    assert_close(y, reference(values, False, epsilon=eps)[0], dtypes[0])


def test_4d_inference_stays_on_the_ep_kernel():
    from ort_ops.rewrite.placement import PlacementReport, place

    report = PlacementReport()
    place(model(inputs((2, 3, 4, 4)), 15, {}), report=report)
    (entry,) = report.nodes
    assert entry.where == "cann_ep" and entry.error is None and "4-D inference" in entry.reason, report.summary()


REFUSED = {  # id: (values, opset, attributes, outputs, the reason's text)
    "opset13_training_outputs": (inputs((4, 3, 5)), 13, {}, ("y", "m", "v", "sm", "sv"),
                                 "opset 13 BatchNormalization with its training outputs"),
    "f16_running_statistics": (inputs((4, 3, 5), F32, F32, F16), 15, {"training_mode": 1}, ("y", "rm", "rv"),
                               "float32 running statistics"),
    "f16_scale_in_inference": (inputs((4, 3, 5), F32, F16, F32), 15, {}, ("y",),
                               "scale / B not float32 in inference mode"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_what_is_not_placed_is_refused_with_the_reason(case):
    """The CANN EP's own kernel gets these wrong (ep_defects) and the placed kernel does not take them: the
    session is not created, naming the node, the EP's defect and why it was not placed."""
    from ort_ops.rewrite.placement import PlacementError

    values, opset, attrs, outs, why = REFUSED[case]
    with pytest.raises(PlacementError) as err:
        cann_ep.session(model(values, opset, attrs, outs))
    text = str(err.value)
    assert "BatchNormalization node 'bn'" in text and "cannot be placed" in text and why in text, text


def test_float16_statistics_stay_on_the_cpu_with_the_reason():
    """float16 X: the CANN EP has no kernel (float32 only), so a node the placed kernel does not take runs on the
    CPU EP, the report saying why."""
    from ort_ops.rewrite.placement import PlacementReport, place

    report = PlacementReport()
    place(model(inputs((4, 3, 5), F16, F16, F16), 15, {"training_mode": 1}, ("y", "rm", "rv")), report=report)
    (entry,) = report.nodes
    assert entry.where == "cpu" and entry.error is None and "float32 running statistics" in entry.reason, entry


def test_one_value_per_channel_fails_at_run_time():
    """N * spatial = 1: BatchNormV3's running variance would be NaN (its unbiased estimate, 0 / 0)."""
    values = inputs((1, 3))
    session = cann_ep.session(model(values, 15, {"training_mode": 1}, ("y", "rm", "rv")))
    with pytest.raises(Exception, match=r"has 1 value\(s\) per channel: training mode needs at least 2"):
        session.run(None, dict(zip(["x", "scale", "b", "mean", "var"], values)))


@pytest.mark.parametrize("soc", ["Ascend910A", "Ascend310P3"])
def test_training_mode_needs_batch_norm_v3_on_the_soc(soc):
    """BatchNormV3 is configured for Atlas A2/A3 and the 950 only (batch_norm_v3_def.cpp): elsewhere the node is
    not placed, and the EP's own kernel's defect refuses it."""
    from ort_ops.rewrite.placement import PlacementReport, place

    report = PlacementReport()
    place(model(inputs((4, 3, 5)), 15, {"training_mode": 1}, ("y", "rm", "rv")), soc=soc, report=report)
    (entry,) = report.nodes
    assert entry.error is not None and f"CANN op BatchNormV3 is not available on {soc}" in entry.error, entry


EXPORT = r"""
import sys
import numpy as np
import torch

torch.manual_seed(5)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn2d = torch.nn.BatchNorm2d(4, momentum=0.2, eps=1e-3)
        self.fc = torch.nn.Linear(4 * 5 * 5, 6)
        self.bn1d = torch.nn.BatchNorm1d(6)

    def forward(self, x):
        return self.bn1d(self.fc(torch.relu(self.bn2d(self.conv(x))).flatten(1)))


net = Net().train()
x = torch.randn(8, 3, 5, 5)
torch.onnx.export(net, (x,), sys.argv[1], training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                  dynamo=False, opset_version=15)
with torch.no_grad():
    y = net(x)  # train mode: batch statistics, running statistics updated (momentum, unbiased variance)
np.savez(sys.argv[2], x=x.numpy(), y=y.numpy(), **{f"{n}.{s}": getattr(getattr(net, n), s).numpy()
                                                  for n in ("bn2d", "bn1d") for s in ("running_mean", "running_var")})
"""


def test_pytorch_batch_norm_exported_in_training_mode_runs_wholly_on_cann(tmp_path):
    """torch.onnx.export(training=TRAINING) of Conv2d-BatchNorm2d-ReLU-Linear-BatchNorm1d: every node runs on the
    CANN EP (profile: no CPU node run); Y as PyTorch's train-mode forward; the running means as PyTorch's; the
    running variances as ONNX's (population batch variance): PyTorch's (unbiased) with the factor undone."""
    python = ROOT / ".venv" / "bin" / "python"
    if not python.exists():
        pytest.skip(".venv (with torch) is missing: run scripts/setup.sh")
    onnx_path, data_path = tmp_path / "bn.onnx", tmp_path / "bn.npz"
    proc = subprocess.run([str(python), "-W", "ignore", "-c", textwrap.dedent(EXPORT), str(onnx_path),
                           str(data_path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    m, data = onnx.load(onnx_path), np.load(data_path)
    bns = [n for n in m.graph.node if n.op_type == "BatchNormalization"]
    assert len(bns) == 2 and all(helper.get_attribute_value(a) == 1 for n in bns for a in n.attribute
                                 if a.name == "training_mode")
    for n in bns:  # the running outputs as graph outputs, to compare them too
        m.graph.output.extend(helper.make_empty_tensor_value_info(o) for o in n.output[1:])
    session = cann_ep.session(m, profile_prefix=str(tmp_path / "p"))
    got = dict(zip([o.name for o in session.get_outputs()], session.run(None, {m.graph.input[0].name: data["x"]})))
    runs = cann_ep.node_runs(session)
    assert runs and [r for r in runs if r.provider != cann_ep.PROVIDER] == [], runs
    assert sum(e.where == "placed" and e.op_type == "BatchNormalization" for e in session.placement.nodes) == 2
    assert_close(got[m.graph.output[0].name], data["y"].astype(np.float64), F32)
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    batch = {"bn2d": 8 * 5 * 5, "bn1d": 8}
    for n, name in zip(bns, ("bn2d", "bn1d")):
        momentum = next(helper.get_attribute_value(a) for a in n.attribute if a.name == "momentum")
        assert_close(got[n.output[1]], data[f"{name}.running_mean"].astype(np.float64), F32)
        var0 = inits[n.input[4]].astype(np.float64)
        unbiased = (data[f"{name}.running_var"].astype(np.float64) - var0 * momentum) / (1 - momentum)
        population = unbiased * (batch[name] - 1) / batch[name]
        assert_close(got[n.output[2]], var0 * momentum + population * (1 - momentum), F32)
