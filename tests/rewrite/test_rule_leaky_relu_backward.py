"""leaky_relu_backward: PyTorch's exported LeakyReLU backward -> LeakyReluGrad, and its lowering.

Exported graphs (``export_training_graph`` of MLPs with ``nn.LeakyReLU(s)``, s in
{0.01, 0, -0.5}, and in place s in {0.2, 0}): exactly one LeakyReluGrad replaces the Greater/Mul/Where, with
``negative_slope`` = float32(s) and the LeakyRelu's input (output, in place) as features;
onnx.checker (full); ORT before and after bit for bit; the gradients against PyTorch's own
autograd; the reference evaluator. Negative controls: s = 1 (the exporter drops the Mul: nothing to
fuse), ``>=`` and swapped branches, a slope that is not a constant, operands of two shapes. The
lowering of the fused graph gives back standard ops, bit for bit the kernel, every dtype."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import onnx.reference
import pytest
import torch
import torch.nn.functional as F
from graphs_training import export
from onnx import TensorProto as TP
from onnx import helper

from checks import ops
from ort_ops import ort_io
from ort_ops.domain import DOMAIN, IR_VERSION, ONNX_OPSET, OPSET_VERSION
from ort_ops.reference import OPS
from ort_ops.rewrite import RewriteReport, fuse_training, lower
from ort_ops.rewrite.validation import session

BACKWARD = ("Greater", "Where")


pytestmark = pytest.mark.usefixtures("fast_exports")


def bits(a):
    a = np.asarray(a)
    return a.view({4: np.uint32, 2: np.uint16}[a.itemsize])


def mlp(slope, inplace):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.LeakyReLU(slope, inplace=inplace), torch.nn.Linear(8, 3))
    x = torch.randn(5, 6)
    x[0, :] = 0.0  # some pre-activations exactly the bias: the branch edge appears with real values too
    y = torch.randn(5, 3)  # MSE: no other fusion in the graph, so every output compares bit for bit
    return net, x, y


def feeds_of(net, x, y):
    feeds = {name: p.detach().numpy() for name, p in net.named_parameters()}
    feeds.update(input=x.numpy(), target=y.numpy())
    return feeds


@pytest.mark.parametrize("slope, inplace", [(0.01, False), (0.0, False), (-0.5, False), (0.2, True), (0.0, True)])
def test_exported_leaky_relu_backward_fuses(slope, inplace):
    net, x, y = mlp(slope, inplace)
    model = export(net, x, F.mse_loss, y)
    report = RewriteReport()
    fused = fuse_training(model, report=report)
    assert ops(fused).count("LeakyReluGrad") == 1, ops(fused)
    assert ops(model).count("Where") == 1 and not set(BACKWARD) & set(ops(fused)), ops(fused)
    node = next(n for n in fused.graph.node if n.op_type == "LeakyReluGrad")
    assert node.domain == DOMAIN
    assert helper.get_attribute_value(node.attribute[0]) == pytest.approx(float(np.float32(slope)), abs=0)
    forward = next(n for n in fused.graph.node if n.op_type == "LeakyRelu")
    assert node.input[1] == (forward.output[0] if inplace else forward.input[0])
    site = next(s for s in report.sites if s.rule == "leaky_relu_backward")
    assert site.status == "fused" and site.attributes == {"negative_slope": float(np.float32(slope))}
    assert not site.exact and "-0.0" in site.notes[0]
    onnx.checker.check_model(fused, full_check=True)
    feeds = feeds_of(net, x, y)
    names = [o.name for o in model.graph.output]
    want = ort_io.run(session(model), feeds, names)
    got = ort_io.run(session(fused), feeds, names)
    for name, g, w in zip(names, got, want):
        if name == "loss":  # F.mse_loss is fused too (MseLossAndGrad): its loss within float32's tolerance
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7, err_msg=name)
        else:
            assert np.array_equal(bits(g), bits(w)), name
    # independently: PyTorch's eager autograd of the same module
    net.zero_grad()
    F.mse_loss(net(x), y).backward()
    for name, g in zip(names, got):
        if name.startswith("grad."):
            eager = dict(net.named_parameters())[name[len("grad."):]].grad.numpy()
            np.testing.assert_allclose(g, eager, rtol=1e-5, atol=1e-6)
    ref = onnx.reference.ReferenceEvaluator(fused, new_ops=list(OPS)).run(None, feeds)
    for name, r, g in zip(names, ref, got):
        np.testing.assert_allclose(r, g, rtol=1e-6, atol=1e-7, err_msg=name)


def test_slope_one_has_nothing_to_fuse():
    net, x, y = mlp(1.0, False)
    model = export(net, x, F.mse_loss, y)
    (where,) = [n for n in model.graph.node if n.op_type == "Where"]  # Where(X > 0, dY, dY): dY itself
    assert where.input[1] == where.input[2]
    report = RewriteReport()
    fused = fuse_training(model, report=report)
    assert "LeakyReluGrad" not in ops(fused)
    assert not [s for s in report.sites if s.rule == "leaky_relu_backward"]


def select_graph(*, compare="Greater", swap=False, slope_const=True, f_shape=(3, 4), dtype=TP.FLOAT,
                 zero_first=False, slope=0.1):
    """Where(cmp(F, 0), dY, Mul(dY, s)) by hand (or the variants the controls need)."""
    np_dtype = {TP.FLOAT: np.float32, TP.FLOAT16: np.float16}[dtype]
    inits = [helper.make_tensor("zero", dtype, [], np.zeros((), np_dtype).reshape(-1).tolist())]
    inputs = [helper.make_tensor_value_info("dY", dtype, [3, 4]), helper.make_tensor_value_info("F", dtype, f_shape)]
    if slope_const:
        inits.append(helper.make_tensor("s", dtype, [], [float(np_dtype(slope))]))
    else:
        inputs.append(helper.make_tensor_value_info("s", dtype, []))
    cmp_inputs = ["zero", "F"] if zero_first else ["F", "zero"]
    branches = ["prod", "dY"] if swap else ["dY", "prod"]
    nodes = [helper.make_node(compare, cmp_inputs, ["mask"]),
             helper.make_node("Mul", ["dY", "s"], ["prod"]),
             helper.make_node("Where", ["mask", *branches], ["dX"])]
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("dX", dtype, [3, 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)])
    model.ir_version = IR_VERSION
    return model


def test_hand_written_forms_fuse_bit_exact():
    for kwargs in ({}, {"zero_first": True, "compare": "Less"}, {"dtype": TP.FLOAT16, "slope": 0.01}):
        model = select_graph(**kwargs)
        fused = fuse_training(model)
        assert ops(fused) == ["LeakyReluGrad"], (kwargs, ops(fused))
        np_dtype = np.float16 if kwargs.get("dtype") == TP.FLOAT16 else np.float32
        rng = np.random.default_rng(3)
        feeds = {"dY": rng.standard_normal((3, 4)).astype(np_dtype), "F": rng.standard_normal((3, 4)).astype(np_dtype)}
        feeds["F"][0, :3] = [0.0, -0.0, np.nan]  # (dY is never -0.0 here: see the test below)
        want = session(model).run(None, feeds)[0]
        got = session(fused).run(None, feeds)[0]
        assert np.array_equal(bits(got), bits(want)), kwargs


@pytest.mark.parametrize("kwargs, reason", [
    ({"compare": "GreaterOrEqual"}, "F >= 0: LeakyReluGrad takes dY where F > 0"),
    ({"compare": "Less"}, "F < 0"),
    ({"slope_const": False}, "not a one-element float constant"),
    ({"f_shape": (1, 4)}, "not one known shape"),
])
def test_other_forms_are_refused_with_the_reason(kwargs, reason):
    model = select_graph(**kwargs)
    report = RewriteReport()
    fused = fuse_training(model, report=report)
    assert ops(fused) == ops(model)
    (site,) = [s for s in report.sites if s.rule == "leaky_relu_backward"]
    assert site.status == "rejected" and reason in site.reason, site.reason


def test_where_turns_a_negative_zero_gradient_positive_the_op_does_not():
    """The one difference the report's note names (and why strict=True does not fuse)."""
    model = select_graph()
    fused = fuse_training(model)
    assert ops(fuse_training(model, strict=True)) == ops(model)
    dy = np.full((3, 4), -0.0, np.float32)
    feats = np.ones((3, 4), np.float32)
    feats[:, 2:] = -1.0
    want_bits = np.where(feats > 0, 0x00000000, 0x80000000)  # ORT's Where: +0.0; the product -0.0 * 0.1
    assert np.array_equal(bits(session(model).run(None, {"dY": dy, "F": feats})[0]), want_bits)
    assert np.all(bits(session(fused).run(None, {"dY": dy, "F": feats})[0]) == 0x80000000)  # -0.0 kept


def test_swapped_branches_are_not_a_site():
    report = RewriteReport()
    fused = fuse_training(select_graph(swap=True), report=report)
    assert "LeakyReluGrad" not in ops(fused)
    assert not [s for s in report.sites if s.rule == "leaky_relu_backward"]


def one_node(dtype: int, slope: float):
    node = helper.make_node("LeakyReluGrad", ["gradients", "features"], ["backprops"], domain=DOMAIN,
                            negative_slope=slope)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, dtype, [64]) for n in ("gradients",
                                                                                                 "features")],
                              [helper.make_tensor_value_info("backprops", dtype, [64])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET),
                                                    helper.make_opsetid(DOMAIN, OPSET_VERSION)])
    model.ir_version = IR_VERSION
    return model


@pytest.mark.parametrize("dtype", [TP.FLOAT, TP.FLOAT16, TP.BFLOAT16], ids=["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("slope", [0.01, 0.0, -2.0])
def test_lowering_is_bit_exact(dtype, slope):
    model = one_node(dtype, slope)
    lowered = lower(model)
    assert all(n.domain in ("", "ai.onnx") for n in lowered.graph.node), ops(lowered)
    onnx.checker.check_model(lowered, full_check=True)
    np_dtype = {TP.FLOAT: np.float32, TP.FLOAT16: np.float16, TP.BFLOAT16: ml_dtypes.bfloat16}[dtype]
    rng = np.random.default_rng(4)
    g = (rng.standard_normal(64) * 3).astype(np.float32)
    f = (rng.standard_normal(64) * 3).astype(np.float32)
    f[:6] = [0.0, -0.0, np.nan, np.inf, -np.inf, 1e-30]
    g[6:10] = [-0.0, np.nan, np.inf, 0.0]
    feeds = {"gradients": g.astype(np_dtype), "features": f.astype(np_dtype)}
    want = ort_io.run(session(model), feeds)[0]
    got = ort_io.run(session(lowered), feeds)[0]
    assert np.array_equal(bits(got), bits(want))
