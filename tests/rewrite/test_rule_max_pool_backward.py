"""max_pool_backward: MaxPool indices + ScatterElements(add) backward -> MaxPoolGrad.

Each fused graph: the exact op list (the forward MaxPool without its Indices output, no 1x1
MaxPool / Slice / Sub / ScatterElements), onnx.checker (full), ORT (CPU, graph optimisations off)
before and after bit for bit in float32 (ties included), and the reference evaluator on the fused
graph; NaN windows: the outputs differ exactly where the docs say; each refused graph: unchanged,
with its reason. Graphs from graphs_training.py and from PyTorch itself."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.reference
import pytest
import torch
import torch.nn.functional as F
from graphs_training import export, max_pool
from onnx import TensorProto as TP

from checks import ops
from ort_ops import ort_io
from ort_ops.ops.max_pool_grad import max_pool_grad, windows
from ort_ops.reference import OPS
from ort_ops.rewrite import RewriteReport, fuse_training
from ort_ops.rewrite.validation import compare, session

FUSED_OP = "MaxPoolGrad"
GEOMETRIES = [((2, 2), (2, 2), (0, 0, 0, 0)), ((3, 3), (2, 2), (1, 1, 1, 1)), ((3, 3), (1, 1), (1, 1, 1, 1)),
              ((2, 3), (1, 2), (1, 0, 0, 2))]


pytestmark = pytest.mark.usefixtures("fast_exports")


def fuse(model, **kwargs):
    before = model.SerializeToString()
    report = RewriteReport()
    fused = fuse_training(model, report=report, **kwargs)
    assert model.SerializeToString() == before, "input model was mutated"
    onnx.checker.check_model(fused, full_check=True)
    return fused, report


def run(model, inputs):
    names = [o.name for o in model.graph.output]
    return dict(zip(names, ort_io.run(session(model), inputs, names)))


def feeds(model, seed=0, ties=True, dtype=np.float32):
    rng = np.random.default_rng(seed)
    shapes = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input}
    x = rng.integers(-2, 3, shapes["X"]) if ties else rng.normal(0, 1, shapes["X"])
    return {"X": x.astype(dtype), "dY": rng.normal(0, 1, shapes["dY"]).astype(dtype)}


def bits_equal(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a.view(np.uint8), b.view(np.uint8))


@pytest.mark.parametrize("kernel, strides, pads", GEOMETRIES)
@pytest.mark.parametrize("flat_dy", [True, False])
@pytest.mark.parametrize("final_reshape", [True, False])
def test_fuses_bit_exact_in_float32(kernel, strides, pads, flat_dy, final_reshape):
    model = max_pool((2, 3, 7, 9), kernel, strides, pads, flat_dy=flat_dy, final_reshape=final_reshape)
    fused, report = fuse(model)
    reshapes = ["Reshape"] * flat_dy + [FUSED_OP] + ["Reshape"] * (not final_reshape)
    assert ops(fused) == ["MaxPool", "Identity", *reshapes, "Identity"], ops(fused)
    (site,) = report.fused
    assert (site.rule, site.op, site.exact, site.dtype) == ("max_pool_backward", FUSED_OP, False, "float32")
    assert site.attributes == {"kernel_shape": list(kernel), "strides": list(strides), "pads": list(pads)}
    pool = fused.graph.node[0]
    assert len(pool.output) == 1, "the forward MaxPool keeps its Indices output"
    (node,) = [n for n in fused.graph.node if n.op_type == FUSED_OP]
    assert node.domain == "ai.ortops" and list(node.input)[:2] == ["X", pool.output[0]]
    for ties in (True, False):
        inputs = feeds(model, ties=ties)
        got, want = run(fused, inputs), run(model, inputs)
        for name in want:
            assert bits_equal(got[name], want[name]), name
        ref = onnx.reference.ReferenceEvaluator(fused, new_ops=list(OPS)).run(None, inputs)
        for name, r in zip(got, ref):
            assert bits_equal(np.asarray(r), got[name]), name


def test_float16_fuses_and_then_runs_on_the_cpu_ep():
    """ORT's CPU ScatterElements has no float16 'add': the exported float16 backward does not run
    on the CPU EP at all; fused, it does, and equals the reference (float32 sums, one rounding)."""
    model = max_pool((2, 3, 7, 9), (3, 3), (1, 1), (1, 1, 1, 1), dtype=TP.FLOAT16)
    fused, report = fuse(model)
    (site,) = report.fused
    assert any("overlapping windows" in n for n in site.notes), site.notes
    inputs = feeds(model, ties=False, dtype=np.float16)
    with pytest.raises(Exception, match="MLFloat16 data type is not supported with ScatterElements"):
        run(model, inputs)
    got = run(fused, inputs)
    x, dy = inputs["X"], inputs["dY"].reshape(2, 3, 7, 9)
    assert bits_equal(got["dX"], max_pool_grad(x, got["Y"], dy, (3, 3), (1, 1), (1, 1, 1, 1)))


def test_nan_windows_are_where_the_results_may_differ():
    """The documented difference: with Indices, ORT's MaxPool makes Y NaN exactly when a window's
    first element is NaN; without (MLAS) it skips NaNs by position too, but other positions (here
    the last). Outside windows holding NaN both graphs agree bit for bit; inside, Y and the
    element that gets the gradient may differ, and the fused graph follows MaxPoolGrad's rule."""
    model = max_pool((1, 2, 6, 6), (2, 2), (2, 2))
    fused, _ = fuse(model)
    inputs = feeds(model, ties=False)
    x = inputs["X"]
    x[0, 0, 0, 0] = np.nan  # first element of a window
    x[0, 1, 3, 3] = np.nan  # last element of a window
    got, want = run(fused, inputs), run(model, inputs)
    nan_windows = np.zeros((1, 2, 3, 3), bool)
    nan_windows[0, 0, 0, 0] = nan_windows[0, 1, 1, 1] = True
    same = (got["Y"] == want["Y"]) | (np.isnan(got["Y"]) & np.isnan(want["Y"]))
    assert same[~nan_windows].all() and not same[nan_windows].any()
    assert np.isnan(want["Y"][0, 0, 0, 0]) and np.isnan(got["Y"][0, 1, 1, 1])  # measured on ORT 1.31.1
    touched = np.zeros((1, 2, 6, 6), bool)
    touched[0, 0, :2, :2] = touched[0, 1, 2:4, 2:4] = True
    assert bits_equal(got["dX"][~touched], want["dX"][~touched])
    assert not bits_equal(got["dX"][touched], want["dX"][touched])
    dy = inputs["dY"].reshape(1, 2, 3, 3)
    assert bits_equal(got["dX"], max_pool_grad(x, got["Y"], dy, (2, 2), (2, 2)))


@pytest.mark.parametrize("kwargs, reason", [
    ({"indices_out": "indices"}, "the MaxPool indices maxpool_1_1 are also read by indices_out"),
    ({"indices_out": "plane"}, "the per-plane MaxPool indices sub_7 are also read by indices_out"),
    ({"shape": (2, 3, 7, 7), "ceil_mode": 1}, "has ceil_mode=1"),
    ({"shape": (2, 3, 7, 7), "dilations": (2, 2)}, "has dilations [2, 2]"),
    ({"ones_kernel": (2, 2)}, "is not a 1x1, stride-1, unpadded MaxPool"),
    ({"zeros": False}, "does not scatter into zeros"),
])
def test_refused_with_the_reason(kwargs, reason):
    model = max_pool(**kwargs)
    fused, report = fuse(model)
    assert fused.SerializeToString() == model.SerializeToString()
    (site,) = report.rejected
    assert site.rule == "max_pool_backward" and reason in site.reason, site.reason


def test_strict_refuses():
    model = max_pool()
    fused, report = fuse(model, strict=True)
    assert fused.SerializeToString() == model.SerializeToString()
    assert report.rejected[0].reason.startswith("strict: not provably unchanged")


def test_windows_cover_the_pooled_shape():
    """The reference's window list matches ORT's output size for every geometry tested."""
    for kernel, strides, pads in GEOMETRIES:
        model = max_pool((2, 3, 7, 9), kernel, strides, pads)
        y = run(model, feeds(model))["Y"]
        assert len(list(windows(7, 9, kernel, strides, pads, *y.shape[2:]))) == y.shape[2] * y.shape[3]


# --- PyTorch's own graphs ---------------------------------------------------------------------


class Net(torch.nn.Module):
    def __init__(self, pool, flat, use_indices=False):
        super().__init__()
        self.conv, self.pool, self.fc = torch.nn.Conv2d(2, 3, 3, padding=1), pool, torch.nn.Linear(flat, 4)
        self.use_indices = use_indices

    def forward(self, x):
        h = F.elu(self.conv(x))
        if self.use_indices:
            y, i = F.max_pool2d(h, 2, return_indices=True)
            return self.fc(torch.flatten(y + i.float() * 0.01, 1))
        return self.fc(torch.flatten(self.pool(h), 1))


def _torch_graph(net):
    torch.manual_seed(0)
    x, y = torch.randn(2, 2, 8, 8), torch.tensor([0, 3])
    return export(net, x, F.cross_entropy, y), net


@pytest.mark.parametrize("pool, flat", [
    (torch.nn.MaxPool2d(2), 48), (torch.nn.MaxPool2d(3, stride=2, padding=1), 48),
    (torch.nn.MaxPool2d((2, 3), stride=(1, 2)), 63), (torch.nn.MaxPool2d(3, stride=1, padding=1), 192),
])
def test_pytorch_max_pool_fuses(pool, flat):
    torch.manual_seed(1)
    model, net = _torch_graph(Net(pool, flat))
    fused, report = fuse(model)
    assert [s.rule for s in report.fused].count("max_pool_backward") == 1
    assert "ScatterElements" not in ops(fused) or ops(fused).count("ScatterElements") < ops(model).count(
        "ScatterElements")
    assert ops(fused).count("MaxPool") == 1 and ops(fused).count(FUSED_OP) == 1
    rng = np.random.default_rng(0)
    inputs = {"input": rng.normal(0, 1, (2, 2, 8, 8)).astype(np.float32), "target": np.array([0, 3], np.int64)}
    inputs.update({n: p.detach().numpy() for n, p in net.named_parameters()})
    got, want = run(fused, inputs), run(model, inputs)
    for name in want:
        check = compare(name, "ort", got[name], want[name])
        assert check.ok, check


@pytest.mark.parametrize("net, reason", [
    (lambda: Net(None, 48, use_indices=True), "are also read by"),
    (lambda: Net(torch.nn.MaxPool2d(3, stride=2, ceil_mode=True), 48), "ceil_mode=1"),
    (lambda: Net(torch.nn.MaxPool2d(2, dilation=2), 27), "dilations [2, 2]"),
])
def test_pytorch_variants_are_refused_with_the_reason(net, reason):
    torch.manual_seed(1)
    model, _ = _torch_graph(net())
    fused, report = fuse(model)
    assert FUSED_OP not in ops(fused)
    (site,) = [s for s in report.sites if s.rule == "max_pool_backward"]
    assert site.status == "rejected" and reason in site.reason, site.reason
