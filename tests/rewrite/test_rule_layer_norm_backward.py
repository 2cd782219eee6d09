"""layer_norm_backward: PyTorch's exported LayerNorm backward -> LayerNormGrad (dx, dscale, dbias).

Exported graphs (``export_training_graph``) of a Linear + ``nn.LayerNorm`` over the last dim and the
last two, without bias, without affine parameters, in float16 (the backward in float32 on Casts),
and of a TransformerEncoderLayer (two LayerNorms on 3-D activations, pre- and post-norm): one
LayerNormGrad per LayerNormalization whose dx the backward computes (not the pre-norm encoder's
first, which reads the graph's input: only its parameters' sums are exported), reading its Mean
and InvStdDev; onnx.checker (full); ORT
before and after within float32 rounding; the parameter gradients against PyTorch's eager
autograd (independent of the exporter and of the code under test). Negative controls, by mutating
an exported graph: the M constant off by one, a sum over another axis, the forward's stash_type,
keepdims=0 on a row sum; a forward-only graph has no site."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch
import torch.nn.functional as F
from graphs_training import export
from onnx import helper, numpy_helper

from checks import ops
from ort_ops import ort_io
from ort_ops.domain import DOMAIN
from ort_ops.rewrite import RewriteReport, fuse_training
from ort_ops.rewrite.validation import session

pytestmark = pytest.mark.usefixtures("fast_exports")


class NormHead(torch.nn.Module):
    def __init__(self, shape, **kwargs):
        super().__init__()
        self.linear, self.head = torch.nn.Linear(8, 8), torch.nn.Linear(8, 3)
        self.norm = torch.nn.LayerNorm(shape, **kwargs)

    def forward(self, x):
        return self.head(self.norm(self.linear(x)))


def _encoder(norm_first):
    return torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True,
                                            norm_first=norm_first)


SETUPS = {
    "last_dim": (lambda: NormHead(8), (2, 4, 8), {"dx", "dscale", "dbias"}),
    "two_dims": (lambda: NormHead([4, 8]), (2, 4, 8), {"dx", "dscale", "dbias"}),
    "no_bias": (lambda: NormHead(8, bias=False), (5, 8), {"dx", "dscale"}),
    "no_affine": (lambda: NormHead(8, elementwise_affine=False), (3, 4, 8), {"dx"}),
    "encoder_post_norm": (lambda: _encoder(False), (2, 5, 8), {"dx", "dscale", "dbias"}),
    "encoder_pre_norm": (lambda: _encoder(True), (2, 5, 8), {"dx", "dscale", "dbias"}),
}


def _feeds(net, x, y):
    feeds = {name: p.detach().numpy() for name, p in net.named_parameters()}
    feeds.update(input=x.numpy(), target=y.numpy())
    return feeds


@pytest.mark.parametrize("name", SETUPS)
def test_exported_layer_norm_backward_fuses(name):
    build, shape, produced = SETUPS[name]
    torch.manual_seed(3)
    net = build()
    x = torch.randn(*shape)
    y = torch.randn(*net(x).shape)
    model = export(net, x, F.mse_loss, y)
    report = RewriteReport()
    fused = fuse_training(model, report=report)
    norms = [n for n in fused.graph.node if n.op_type == "LayerNormalization"]
    grads = [n for n in fused.graph.node if n.op_type == "LayerNormGrad"]
    # a LayerNorm reading the graph's input (the pre-norm encoder's first) has no dx in the
    # exported backward (nobody asks for the input's gradient), only its parameters' sums: no site
    inputs = {i.name for i in fused.graph.input}
    with_dx = [n for n in norms if n.input[0] not in inputs]
    assert len(grads) == len(with_dx) >= 1, ops(fused)
    for node in grads:
        assert node.domain == DOMAIN
        forward = next(n for n in norms if n.output[2] == node.input[3])
        assert node.input[2] == forward.output[1]
        named = {role for role, t in zip(("dx", "dscale", "dbias"), node.output) if t}
        graph_outputs = {o.name for o in fused.graph.output}
        if name.startswith("encoder"):
            assert named == produced
        else:
            assert named == produced and all(t in graph_outputs for t in node.output[1:] if t)
    sites = [s for s in report.sites if s.rule == "layer_norm_backward"]
    assert len(sites) == len(grads) and all(s.status == "fused" and not s.exact for s in sites)
    assert len(fused.graph.node) < len(model.graph.node)
    onnx.checker.check_model(fused, full_check=True)
    feeds = _feeds(net, x, y)
    names = [o.name for o in model.graph.output]
    want = ort_io.run(session(model), feeds, names)
    got = ort_io.run(session(fused), feeds, names)
    for out, g, w in zip(names, got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6, err_msg=out)
    net.zero_grad()  # independently: PyTorch's eager autograd
    F.mse_loss(net(x), y).backward()
    params = dict(net.named_parameters())
    for out, g in zip(names, got):
        if out.startswith("grad."):
            np.testing.assert_allclose(g, params[out[len("grad."):]].grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=out)


def test_float16_export_fuses_on_the_float32_casts():
    from ort_ops import training

    torch.manual_seed(4)
    net = NormHead(8)
    x = torch.randn(2, 4, 8)
    y = torch.randn(2, 4, 3)
    model = training.export_training_graph(net, (x,), F.mse_loss, targets=(y,), params_as_inputs=True, verify=False,
                                           dtype=torch.float16)
    report = RewriteReport()
    fused = fuse_training(model, report=report)
    (node,) = [n for n in fused.graph.node if n.op_type == "LayerNormGrad"]
    (forward,) = [n for n in fused.graph.node if n.op_type == "LayerNormalization"]
    assert list(node.input[2:4]) == list(forward.output[1:3])  # the float32 statistics themselves
    (site,) = [s for s in report.sites if s.rule == "layer_norm_backward"]
    assert site.dtype == "float32" and any("float16" in note for note in site.notes)
    feeds = {k: v.astype(np.float16) for k, v in _feeds(net.half(), x.half(), y.half()).items()}
    names = [o.name for o in model.graph.output]
    for out, g, w in zip(names, ort_io.run(session(fused), feeds, names), ort_io.run(session(model), feeds, names)):
        scale = float(np.abs(w.astype(np.float32)).max()) or 1.0
        np.testing.assert_allclose(g.astype(np.float32), w.astype(np.float32), rtol=1e-2, atol=2e-3 * scale,
                                   err_msg=out)


def _exported():
    torch.manual_seed(5)
    net = NormHead(8)
    x = torch.randn(4, 8)
    return export(net, x, F.mse_loss, torch.randn(4, 3))


def _mutate_constant(model, producer_op, input_index, fn):
    """Replace the initializer read at ``input_index`` by the first ``producer_op`` node of the
    LayerNorm backward with fn(its value)."""
    inits = {i.name: i for i in model.graph.initializer}
    for node in model.graph.node:
        if producer_op(node):
            name = node.input[input_index]
            value = fn(numpy_helper.to_array(inits[name]))
            new = f"{name}_mutated"
            model.graph.initializer.append(numpy_helper.from_array(value, new))
            node.input[input_index] = new
            return model
    raise AssertionError("no such node")


def _is_rstd_div(model):
    norm = next(n for n in model.graph.node if n.op_type == "LayerNormalization")
    return lambda n: n.op_type == "Div" and n.input[0] == norm.output[2]


def _row_sums(model):
    mul = {n.output[0]: n for n in model.graph.node if n.op_type == "Mul"}
    sub = next(n for n in model.graph.node if n.op_type == "Sub" and n.input[0] in mul and
               any(i.endswith("scalar_tensor_default") for i in mul[n.input[0]].input))
    return next(n for n in model.graph.node if n.output[0] == sub.input[1])


@pytest.mark.parametrize("mutation, reason", [
    ("m_off_by_one", "not the 8 elements"),
    ("other_axis", "reduces axes [0]"),
    ("stash_type", "stash_type 0"),
    ("keepdims", "keepdims=0"),
])
def test_other_forms_are_refused_with_the_reason(mutation, reason):
    model = _exported()
    if mutation == "m_off_by_one":
        _mutate_constant(model, _is_rstd_div(model), 1, lambda v: (v + 1).astype(v.dtype))
    elif mutation == "other_axis":
        s1 = _row_sums(model)
        _mutate_constant(model, lambda n: n is s1, 1, lambda v: np.zeros_like(v))
    elif mutation == "stash_type":
        norm = next(n for n in model.graph.node if n.op_type == "LayerNormalization")
        for a in norm.attribute:
            if a.name == "stash_type":
                a.i = 0
    else:
        s1 = _row_sums(model)
        kept = [a for a in s1.attribute if a.name == "keepdims"]
        if kept:
            kept[0].i = 0
        else:
            s1.attribute.append(helper.make_attribute("keepdims", 0))
    report = RewriteReport()
    fused = fuse_training(model, report=report)
    assert "LayerNormGrad" not in ops(fused)
    (site,) = [s for s in report.sites if s.rule == "layer_norm_backward"]
    assert site.status == "rejected" and reason in site.reason, site.reason


def test_forward_only_graph_has_no_site():
    net = NormHead(8).eval()
    model = _exported()
    forward = [n for n in model.graph.node if n.op_type in ("Gemm", "LayerNormalization")]
    assert forward  # the graph holds the forward; cut the backward by keeping only the forward nodes' outputs
    report = RewriteReport()
    graph = helper.make_graph(forward[:2], "fwd", list(model.graph.input),
                              [helper.make_tensor_value_info(forward[1].output[0], onnx.TensorProto.FLOAT, None)],
                              list(model.graph.initializer))
    small = helper.make_model(graph, opset_imports=list(model.opset_import))
    small.ir_version = model.ir_version
    fused = fuse_training(small, report=report)
    assert "LayerNormGrad" not in ops(fused) and not report.sites
    del net


def test_strict_leaves_it():
    model = _exported()
    assert "LayerNormGrad" not in ops(fuse_training(model, strict=True))
