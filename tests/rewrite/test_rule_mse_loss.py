"""mse_loss: F.mse_loss's loss and backward -> MseLossAndGrad.

Each fused graph: the op list, onnx.checker (full), ORT (CPU, graph optimisations off) before and
after (the gradients bit for bit, the loss within the float32 tolerance), and the reference
evaluator on the fused graph; each refused graph: unchanged, with its reason. Graphs built here
node for node as the exporter writes them (switches change one piece at a time) and from PyTorch."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.reference
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from checks import ops
from ort_ops import ort_io
from ort_ops.domain import IR_VERSION
from ort_ops.reference import OPS
from ort_ops.rewrite import RewriteReport, fuse_training
from ort_ops.rewrite.validation import compare, random_inputs, session

FUSED_OP = "MseLossAndGrad"
pytestmark = pytest.mark.usefixtures("fast_exports")


def mse(shape=(4, 3), *, reduction="mean", target_shape=None, scale=None, power=2.0, sub_read=False,
        unit_mul=False, keepdims_squeeze=True, axes=None) -> onnx.ModelProto:
    """The exporter's spelling of F.mse_loss(prediction, target) and its backward: inputs
    ``prediction`` and ``target`` float32, outputs ``loss`` and ``grad`` (and ``extra`` with
    ``sub_read``: the difference also read elsewhere). ``scale``: the gradient's constant (default
    2 / N or 2); ``unit_mul``: the unoptimised Mul by Expand(CastLike(1, loss), Shape(loss));
    ``axes``: a ReduceMean over these axes only."""
    n = int(np.prod(shape))
    scale = (2.0 / n if reduction == "mean" else 2.0) if scale is None else scale
    inits = [numpy_helper.from_array(np.array(power, np.float32), "two"),
             numpy_helper.from_array(np.array(scale, np.float32), "scale"),
             numpy_helper.from_array(np.zeros(0, np.int64), "no_axes"),
             numpy_helper.from_array(np.array(1, np.int64), "one_i")]
    nodes = [helper.make_node("Sub", ["prediction", "target"], ["sub"]),
             helper.make_node("Pow", ["sub", "two"], ["pow"])]
    if reduction == "mean":
        red_inputs = ["pow"] if axes is None else ["pow", "axes"]
        if axes is not None:
            inits.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
        if keepdims_squeeze:
            nodes += [helper.make_node("ReduceMean", red_inputs, ["mean"], keepdims=1),
                      helper.make_node("Squeeze", ["mean"], ["loss"])]
        else:
            nodes.append(helper.make_node("ReduceMean", red_inputs, ["loss"], keepdims=0))
    else:
        nodes.append(helper.make_node("ReduceSum", ["pow", "no_axes"], ["loss"], keepdims=0))
    if unit_mul:
        nodes += [helper.make_node("Sub", ["prediction", "target"], ["sub_1"]),
                  helper.make_node("Mul", ["sub_1", "scale"], ["mul"]),
                  helper.make_node("CastLike", ["one_i", "loss"], ["one"]),
                  helper.make_node("Shape", ["loss"], ["loss_shape"]),
                  helper.make_node("Expand", ["one", "loss_shape"], ["full_like"]),
                  helper.make_node("Mul", ["mul", "full_like"], ["grad"])]
    else:
        nodes.append(helper.make_node("Mul", ["sub", "scale"], ["grad"]))
    outputs = [helper.make_tensor_value_info("loss", TP.FLOAT, [] if axes is None else [shape[0]]),
               helper.make_tensor_value_info("grad", TP.FLOAT, list(shape))]
    if sub_read:
        nodes.append(helper.make_node("Abs", ["sub"], ["extra"]))
        outputs.append(helper.make_tensor_value_info("extra", TP.FLOAT, list(shape)))
    inputs = [helper.make_tensor_value_info("prediction", TP.FLOAT, list(shape)),
              helper.make_tensor_value_info("target", TP.FLOAT, list(target_shape or shape))]
    graph = helper.make_graph(nodes, "mse", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = IR_VERSION
    return model


def fuse(model):
    before = model.SerializeToString()
    report = RewriteReport()
    fused = fuse_training(model, report=report)
    assert model.SerializeToString() == before, "input model was mutated"
    onnx.checker.check_model(fused, full_check=True)
    return fused, report


def assert_same_outputs(fused, model, loss_names=("loss",), seed=1, exact=True):
    """Before vs after in ORT: every output but the loss bit for bit (``exact``), the loss within
    tolerance; the reference evaluator on the fused graph within tolerance."""
    feeds = random_inputs(model, seed=seed)
    names = [o.name for o in model.graph.output]
    want = ort_io.run(session(model), feeds, names)
    got = ort_io.run(session(fused), feeds, names)
    for name, g, w in zip(names, got, want):
        if name in loss_names or not exact:
            check = compare(name, "ort", g, w)
            assert check.ok, check
        else:
            np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8), err_msg=name)
    ref = onnx.reference.ReferenceEvaluator(fused, new_ops=list(OPS)).run(None, feeds)
    for name, r, g in zip(names, ref, got):
        check = compare(name, "reference", r, g)
        assert check.ok, check


def refused_reason(report):
    (site,) = [s for s in report.rejected if s.rule == "mse_loss"]
    return site.reason


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("unit_mul", [False, True], ids=["optimised", "unoptimised"])
def test_fuses_the_exporters_spellings(reduction, unit_mul):
    model = mse(reduction=reduction, unit_mul=unit_mul)
    fused, report = fuse(model)
    assert ops(fused) == [FUSED_OP]
    (site,) = report.fused
    assert (site.rule, site.op, site.exact, site.dtype) == ("mse_loss", FUSED_OP, False, "float32")
    assert site.attributes == {"reduction": reduction}
    (node,) = fused.graph.node
    assert node.domain == "ai.ortops" and list(node.input)[:2] == ["prediction", "target"]
    assert list(node.output) == ["loss", "grad"]
    dloss = {i.name: numpy_helper.to_array(i) for i in fused.graph.initializer}[node.input[2]]
    assert dloss.dtype == np.float32 and dloss.shape == () and dloss == 1.0
    assert_same_outputs(fused, model)


def test_reduce_mean_without_keepdims_fuses():
    fused, _ = fuse(mse(keepdims_squeeze=False))
    assert ops(fused) == [FUSED_OP]


@pytest.mark.parametrize("kwargs, reason", [
    ({"target_shape": (1, 3)}, "not the prediction's"),
    ({"scale": 1.0 / 12}, "not F.mse_loss's gradient"),
    ({"reduction": "sum", "scale": 1.0}, "not F.mse_loss's gradient"),
    ({"sub_read": True}, "also read by"),
    ({"axes": [1], "keepdims_squeeze": False}, "not every element"),
])
def test_refused_with_a_reason(kwargs, reason):
    model = mse(**kwargs)
    fused, report = fuse(model)
    assert FUSED_OP not in ops(fused)
    assert ops(fused) == ops(model)
    assert reason in refused_reason(report)


def test_another_power_is_no_site():
    fused, report = fuse(mse(power=3.0))
    assert FUSED_OP not in ops(fused) and not [s for s in report.rejected if s.rule == "mse_loss"]


# -- PyTorch's own graphs ---------------------------------------------------------------------------
def export(loss_fn, *, optimize=True, dtype=None):
    from ort_ops import training

    torch.manual_seed(0)
    model, x, t = nn.Linear(5, 3), torch.randn(4, 5), torch.randn(4, 3)
    return training.export_training_graph(model, (x,), loss_fn, targets=(t,), params_as_inputs=True, verify=False,
                                          optimize=optimize, dtype=dtype)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("optimize", [True, False], ids=["optimised", "unoptimised"])
def test_pytorch_export_fuses(reduction, optimize):
    model = export(lambda o, t: F.mse_loss(o, t, reduction=reduction), optimize=optimize)
    fused, report = fuse(model)
    assert ops(fused).count(FUSED_OP) == 1
    assert not {"Pow", "ReduceMean", "Squeeze", "CastLike"} & set(ops(fused)), ops(fused)
    (site,) = [s for s in report.fused if s.rule == "mse_loss"]
    assert site.attributes == {"reduction": reduction}
    assert_same_outputs(fused, model)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_pytorch_half_export_fuses_in_its_dtype(dtype):
    """The exporter upcasts to float32 and casts the loss and gradient back: the node takes the
    half-precision tensors and gives them. Within tolerance, not bit for bit: ORT's CPU EP runs the
    half-precision Gemm in float32 and removes the Cast pair after it, so the original's Sub reads
    the unrounded product where the node reads the Gemm's output in its dtype (the graph's meaning;
    the node's gradient is (d * cof) rounded once, as the graph's Cast)."""
    model = export(lambda o, t: F.mse_loss(o, t), dtype=dtype)
    fused, report = fuse(model)
    (node,) = [n for n in fused.graph.node if n.op_type == FUSED_OP]
    (site,) = [s for s in report.fused if s.rule == "mse_loss"]
    assert site.dtype == str(dtype).removeprefix("torch.")
    assert "Pow" not in ops(fused) and node.input[0] != node.input[1]
    if dtype == torch.float16:  # ORT's CPU EP has no bfloat16 Gemm to run the original with
        assert_same_outputs(fused, model, exact=False)


@pytest.mark.parametrize("loss_fn, reason", [
    (lambda o, t: F.l1_loss(o, t), None),  # no Pow(d, 2): no site
    (lambda o, t: F.mse_loss(o, t) + (o - t).abs().mean(), "also read by"),
])
def test_pytorch_negative_controls(loss_fn, reason):
    model = export(loss_fn)
    fused, report = fuse(model)
    assert FUSED_OP not in ops(fused)
    refused = [s for s in report.rejected if s.rule == "mse_loss"]
    if reason is None:
        assert not refused
    else:
        assert reason in refused_reason(report)


def test_pytorch_scaled_loss_keeps_its_scale():
    """``0.5 * F.mse_loss``: the exporter scales the loss and the gradient Mul(d, 2 / N) by 0.5
    after the MSE's own nodes: the MSE fuses, both Muls by 0.5 stay, the gradients bit for bit."""
    model = export(lambda o, t: 0.5 * F.mse_loss(o, t))
    fused, _ = fuse(model)
    assert ops(fused).count(FUSED_OP) == 1 and ops(fused).count("Mul") == 2
    assert_same_outputs(fused, model)
