"""softmax_backward (and its factored spelling): PyTorch's exported softmax backward -> SoftmaxGrad.

Exported graphs (``export_training_graph`` of a Linear + ``F.softmax(dim)`` for dims -1, 1 and 0 of
2-D / 3-D activations, and of an attention block): one SoftmaxGrad per softmax replaces the
Mul/ReduceSum/Mul/Sub, with the Softmax's axis and output; onnx.checker (full); ORT before and
after within float32 rounding (the sum's order differs); the gradients against PyTorch's eager
autograd. Hand-written graphs: the factored spelling Y * (dY - sum) and the operand orders fuse;
negative controls: a sum over another axis, keepdims=0, a Mul by a tensor that is not the Softmax's
output, the Sub reversed, dY of another dtype; an opset 11 Softmax over an earlier axis."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch
import torch.nn.functional as F
from graphs_training import export
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from checks import ops
from ort_ops import ort_io
from ort_ops.domain import DOMAIN, IR_VERSION, ONNX_OPSET
from ort_ops.rewrite import RewriteReport, fuse_training
from ort_ops.rewrite.validation import session

BACKWARD = ("ReduceSum", "Sub")


pytestmark = pytest.mark.usefixtures("fast_exports")


class SoftmaxHead(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.linear, self.dim = torch.nn.Linear(6, 5), dim

    def forward(self, x):
        return F.softmax(self.linear(x), dim=self.dim)


@pytest.mark.parametrize("dim, shape", [(-1, (4, 6)), (1, (3, 4, 6)), (0, (4, 6)), (-2, (2, 3, 6))])
def test_exported_softmax_backward_fuses(dim, shape):
    torch.manual_seed(0)
    net = SoftmaxHead(dim)
    x = torch.randn(*shape)
    y = torch.randn(*shape[:-1], 5)
    model = export(net, x, F.mse_loss, y)
    report = RewriteReport()
    fused = fuse_training(model, report=report)
    assert ops(fused).count("SoftmaxGrad") == 1, ops(fused)
    node = next(n for n in fused.graph.node if n.op_type == "SoftmaxGrad")
    softmax = next(n for n in fused.graph.node if n.op_type == "Softmax")
    assert node.domain == DOMAIN and node.input[1] == softmax.output[0]
    rank = len(shape)
    assert helper.get_attribute_value(node.attribute[0]) == dim % rank
    (site,) = [s for s in report.sites if s.rule == "softmax_backward"]
    assert site.status == "fused" and not site.exact and "order" in site.notes[0]
    assert ops(fused).count("Sub") < ops(model).count("Sub")
    onnx.checker.check_model(fused, full_check=True)
    feeds = {name: p.detach().numpy() for name, p in net.named_parameters()}
    feeds.update(input=x.numpy(), target=y.numpy())
    names = [o.name for o in model.graph.output]
    want = ort_io.run(session(model), feeds, names)
    got = ort_io.run(session(fused), feeds, names)
    for name, g, w in zip(names, got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-7, err_msg=name)
    net.zero_grad()  # independently: PyTorch's eager autograd
    F.mse_loss(net(x), y).backward()
    for name, g in zip(names, got):
        if name.startswith("grad."):
            eager = dict(net.named_parameters())[name[len("grad."):]].grad.numpy()
            np.testing.assert_allclose(g, eager, rtol=1e-5, atol=1e-6, err_msg=name)


def test_attention_block_softmax_backward_fuses():
    torch.manual_seed(1)
    attn = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    x = torch.randn(2, 5, 8)
    target = torch.randn(2, 5, 8)

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = attn

        def forward(self, x):
            return self.attn(x, x, x, need_weights=False)[0]

    net = Block()
    model = export(net, x, F.mse_loss, target)
    fused = fuse_training(model)
    assert ops(fused).count("SoftmaxGrad") == ops(model).count("Softmax") == 1, ops(fused)
    feeds = {name: p.detach().numpy() for name, p in net.named_parameters()}
    feeds.update(input=x.numpy(), target=target.numpy())
    names = [o.name for o in model.graph.output]
    for name, g, w in zip(names, ort_io.run(session(fused), feeds, names), ort_io.run(session(model), feeds, names)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=name)


def backward_graph(*, factored=False, sum_axis=-1, keepdims=1, other_y=False, reversed_sub=False,
                   dy_dtype=TP.FLOAT, softmax_axis=-1, opset=ONNX_OPSET, swap=False):
    """Softmax(X){axis} then its backward by hand: Sub(t, Mul(s, Y)) or Mul(Y, Sub(dY, s))."""
    shape = [3, 4, 5]
    nodes = [helper.make_node("Softmax", ["X"], ["Y"], axis=softmax_axis)]
    y_used = "Z" if other_y else "Y"
    mul_t = ["Y", "dY"] if swap else ["dY", y_used]
    nodes.append(helper.make_node("Mul", mul_t, ["t"]))
    if opset >= 13:
        nodes.append(helper.make_node("ReduceSum", ["t", "axes"], ["s"], keepdims=keepdims))
    else:
        nodes.append(helper.make_node("ReduceSum", ["t"], ["s"], keepdims=keepdims, axes=[sum_axis]))
    if factored:
        nodes += [helper.make_node("Sub", ["dY", "s"], ["d"]), helper.make_node("Mul", ["Y", "d"], ["dX"])]
    else:
        nodes.append(helper.make_node("Mul", ["s", "Y"] if not swap else ["Y", "s"], ["u"]))
        nodes.append(helper.make_node("Sub", ["u", "t"] if reversed_sub else ["t", "u"], ["dX"]))
    inputs = [helper.make_tensor_value_info("X", TP.FLOAT, shape), helper.make_tensor_value_info("dY", dy_dtype, shape)]
    if other_y:
        inputs.append(helper.make_tensor_value_info("Z", TP.FLOAT, shape))
    inits = [numpy_helper.from_array(np.array([sum_axis], np.int64), "axes")] if opset >= 13 else []
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("dX", TP.FLOAT, shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = IR_VERSION
    return model


@pytest.mark.parametrize("kwargs", [{}, {"factored": True}, {"swap": True}, {"sum_axis": 2},
                                    {"softmax_axis": 1, "sum_axis": -2}, {"opset": 11, "softmax_axis": 2}])
def test_hand_written_spellings_fuse(kwargs):
    model = backward_graph(**kwargs)
    fused = fuse_training(model)
    assert ops(fused) == ["Softmax", "SoftmaxGrad"], (kwargs, ops(fused))
    rng = np.random.default_rng(5)
    feeds = {"X": rng.normal(0, 2, (3, 4, 5)).astype(np.float32), "dY": rng.normal(0, 1, (3, 4, 5)).astype(np.float32)}
    np.testing.assert_allclose(session(fused).run(None, feeds)[0], session(model).run(None, feeds)[0], rtol=1e-5,
                               atol=1e-7)


@pytest.mark.parametrize("kwargs, reason", [
    ({"sum_axis": 0}, "reduces axis 0, the Softmax"),
    ({"keepdims": 0}, "keepdims=0"),
    ({"dy_dtype": TP.FLOAT16}, "dY dY has dtype float16"),
    ({"opset": 11, "softmax_axis": 1, "sum_axis": 1}, "normalises the dims from axis 1 together"),
])
def test_other_forms_are_refused_with_the_reason(kwargs, reason):
    model = backward_graph(**kwargs)
    report = RewriteReport()
    fused = fuse_training(model, report=report)
    assert "SoftmaxGrad" not in ops(fused)
    (site,) = [s for s in report.sites if s.rule.startswith("softmax_backward")]
    assert site.status == "rejected" and reason in site.reason, site.reason


@pytest.mark.parametrize("kwargs", [{"other_y": True}, {"reversed_sub": True}])
def test_non_sites(kwargs):
    report = RewriteReport()
    fused = fuse_training(backward_graph(**kwargs), report=report)
    assert "SoftmaxGrad" not in ops(fused)
    assert not [s for s in report.sites if s.rule.startswith("softmax_backward")]


def test_strict_leaves_it():
    model = backward_graph()
    assert "SoftmaxGrad" not in ops(fuse_training(model, strict=True))
