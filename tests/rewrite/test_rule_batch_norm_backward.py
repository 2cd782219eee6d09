"""batch_norm_backward: PyTorch's exported BatchNorm training backward -> BatchNormGrad (dx, dscale, dbias).

Exported graphs (``export_training_graph``) of a Linear + ``nn.BatchNorm1d`` on 2-D activations and
a Conv2d + ``nn.BatchNorm2d`` on 4-D ones, each with and without affine parameters, a Conv1d +
``BatchNorm1d`` on 3-D ones, two BatchNorm2d in a row (eps 1e-3), and float16 exports (the backward
in float32 on Casts): one BatchNormGrad per BatchNorm whose dx the backward computes, reading the
forward's batch mean and variance; onnx.checker (full); ORT before and after within float32
rounding; every gradient against PyTorch's eager autograd
(independent of the exporter and of the code under test). Negative controls, by mutating an
exported graph: a 1/M constant off by one element, a sum over another axis, keepdims=1 on a sum, a
Mul(invstd, invstd) whose second factor is another tensor, an eps that is not a constant, an
invstd whose numerator is not 1, a broadcast that puts C at another axis; a forward-only graph has
no site; ``strict=True`` leaves it.
"""

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

RULE = "batch_norm_backward"


class Bn1dHead(torch.nn.Module):
    def __init__(self, **kwargs):
        super().__init__()
        self.linear, self.head = torch.nn.Linear(6, 4), torch.nn.Linear(4, 3)
        self.norm = torch.nn.BatchNorm1d(4, **kwargs)

    def forward(self, x):
        return self.head(F.elu(self.norm(self.linear(x))))


class Bn1dSequence(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.norm = torch.nn.Conv1d(2, 3, 3, padding=1), torch.nn.BatchNorm1d(3)

    def forward(self, x):
        return self.norm(self.conv(x)).sum(dim=2)


class Bn2dHead(torch.nn.Module):
    def __init__(self, layers=1, **kwargs):
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 3, 3, padding=1)
        self.norms = torch.nn.ModuleList(torch.nn.BatchNorm2d(3, **kwargs) for _ in range(layers))
        self.head = torch.nn.Linear(3 * 5 * 5, 2)

    def forward(self, x):
        h = self.conv(x)
        for norm in self.norms:
            h = F.elu(norm(h))
        return self.head(h.flatten(1))


SETUPS = {  # build, input shape, BatchNormGrads expected, outputs each produces
    "bn1d": (lambda: Bn1dHead(), (8, 6), 1, {"dx", "dscale", "dbias"}),
    "bn1d_no_affine": (lambda: Bn1dHead(affine=False), (8, 6), 1, {"dx"}),
    "bn1d_3d": (lambda: Bn1dSequence(), (4, 2, 7), 1, {"dx", "dscale", "dbias"}),
    "bn2d": (lambda: Bn2dHead(), (4, 2, 5, 5), 1, {"dx", "dscale", "dbias"}),
    "bn2d_no_affine": (lambda: Bn2dHead(affine=False), (4, 2, 5, 5), 1, {"dx"}),
    "bn2d_twice": (lambda: Bn2dHead(layers=2, eps=1e-3), (3, 2, 5, 5), 2, {"dx", "dscale", "dbias"}),
}


def _feeds(net, model, x, y):
    values = {name: t.detach().numpy() for name, t in [*net.named_parameters(), *net.named_buffers()]}
    values.update(input=x.numpy(), target=y.numpy())
    return {i.name: values[i.name] for i in model.graph.input}


def _build(name, seed=3):
    build, shape, _, _ = SETUPS[name]
    torch.manual_seed(seed)
    net = build()
    x = torch.randn(*shape) * 2 + 0.5
    y = torch.randn(*net(x).shape)
    net.zero_grad()
    return net, x, y


@pytest.mark.parametrize("name", SETUPS)
def test_exported_batch_norm_backward_fuses(name):
    _, _, count, produced = SETUPS[name]
    net, x, y = _build(name)
    model = export(net, x, F.mse_loss, y)
    feeds = _feeds(net, model, x, y)
    report = RewriteReport()
    fused = fuse_training(model, report=report)
    grads = [n for n in fused.graph.node if n.op_type == "BatchNormGrad"]
    assert len(grads) == count, ops(fused)
    graph_outputs = {o.name for o in fused.graph.output}
    for node in grads:
        assert node.domain == DOMAIN
        named = {role for role, t in zip(("dx", "dscale", "dbias"), node.output) if t}
        assert named == produced and all(t in graph_outputs for t in node.output[1:] if t)
        eps = next(a.f for a in node.attribute if a.name == "epsilon")
        norms = [m for m in net.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
        assert eps == np.float32(norms[0].eps)
    sites = [s for s in report.sites if s.rule == RULE]
    assert len(sites) == count and all(s.status == "fused" and not s.exact for s in sites)
    # the decomposed backward is gone: its two per-channel sums each
    assert ops(model).count("ReduceSum") - ops(fused).count("ReduceSum") == 2 * count
    assert len(fused.graph.node) < len(model.graph.node)
    onnx.checker.check_model(fused, full_check=True)
    names = [o.name for o in model.graph.output]
    want = ort_io.run(session(model), feeds, names)
    got = ort_io.run(session(fused), feeds, names)
    for out, g, w in zip(names, got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5, err_msg=out)
    F.mse_loss(net(x), y).backward()  # independently: PyTorch's eager autograd
    params = dict(net.named_parameters())
    checked = 0
    for out, g in zip(names, got):
        if out.startswith("grad."):
            np.testing.assert_allclose(g, params[out[len("grad."):]].grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=out)
            checked += 1
    assert checked == len(params)


@pytest.mark.parametrize("name", ["bn1d", "bn2d"])
def test_float16_export_fuses_on_the_float32_casts(name):
    from ort_ops import training

    net, x, y = _build(name, seed=4)
    model = training.export_training_graph(net, (x,), F.mse_loss, targets=(y,), params_as_inputs=True, verify=False,
                                           dtype=torch.float16)
    report = RewriteReport()
    fused = fuse_training(model, report=report)
    (node,) = [n for n in fused.graph.node if n.op_type == "BatchNormGrad"]
    (site,) = [s for s in report.sites if s.rule == RULE]
    assert site.status == "fused" and site.dtype == "float32" and any("float16" in note for note in site.notes)
    producers = {o: n for n in fused.graph.node for o in n.output}
    assert producers[node.input[3]].op_type == "ReduceMean"  # the float32 variance itself, not a rounding
    onnx.checker.check_model(fused, full_check=True)
    values = {k: v.detach().numpy() for k, v in [*net.named_parameters(), *net.named_buffers()]}
    values.update(input=x.numpy(), target=y.numpy())
    feeds = {i.name: values[i.name].astype(np.float16) if values[i.name].dtype == np.float32 else values[i.name]
             for i in model.graph.input}
    names = [o.name for o in model.graph.output]
    for out, g, w in zip(names, ort_io.run(session(fused), feeds, names), ort_io.run(session(model), feeds, names)):
        scale = max(float(np.abs(w.astype(np.float32)).max()), 1.0)
        np.testing.assert_allclose(g.astype(np.float32), w.astype(np.float32), rtol=1e-2, atol=2e-3 * scale,
                                   err_msg=out)


def test_the_op_reads_the_forward_statistics_and_eps():
    net, x, y = _build("bn2d")
    model = export(net, x, F.mse_loss, y)
    fused = fuse_training(model)
    (node,) = [n for n in fused.graph.node if n.op_type == "BatchNormGrad"]
    producers = {o: n for n in fused.graph.node for o in n.output}
    # var is the biased variance ReduceMean((x - mean)^2); mean (through its Reshape) the ReduceMean of x
    var = producers[node.input[3]]
    assert var.op_type == "ReduceMean"
    square = producers[var.input[0]]
    assert square.op_type == "Mul" and square.input[0] == square.input[1]
    mean = producers[node.input[2]]
    while mean.op_type in ("Reshape", "Unsqueeze"):
        mean = producers[mean.input[0]]
    assert mean.op_type == "ReduceMean" and mean.input[0] == node.input[1]
    assert next(a.f for a in node.attribute if a.name == "epsilon") == np.float32(1e-5)


def _exported(name="bn1d"):
    net, x, y = _build(name, seed=5)
    return export(net, x, F.mse_loss, y)


def _backward_nodes(model):
    """The backward's sums ``s1 = ReduceSum(dy)`` and ``dot = ReduceSum(dy * xmu)``, and its products."""
    producers = {o: n for n in model.graph.node for o in n.output}
    sums = [n for n in model.graph.node if n.op_type == "ReduceSum" and
            any(a.name == "keepdims" and a.i == 0 for a in n.attribute) and n.input[0] in producers]
    dot = next(n for n in sums if producers[n.input[0]].op_type == "Mul" and
               any(producers.get(i) is not None and producers[i].op_type == "Sub" for i in producers[n.input[0]].input))
    s1 = next(n for n in sums if n is not dot and n.input[0] in producers[dot.input[0]].input)
    return s1, dot


def _norm_muls(model, s1):
    """The Mul(s1, 1/M) node."""
    return next(n for n in model.graph.node if n.op_type == "Mul" and s1.output[0] in n.input)


def _invstd_square(model):
    return next(n for n in model.graph.node if n.op_type == "Mul" and n.input[0] == n.input[1] and
                n.input[0].startswith("getitem"))


def _const_value(model, name):
    for init in model.graph.initializer:
        if init.name == name:
            return numpy_helper.to_array(init)
    for node in model.graph.node:
        if node.op_type == "Constant" and node.output[0] == name:
            return numpy_helper.to_array(node.attribute[0].t)
    raise AssertionError(f"no constant {name}")


def _set_input(model, node, index, value):
    new = f"{node.input[index]}_mutated_{len(model.graph.initializer)}"
    model.graph.initializer.append(numpy_helper.from_array(np.asarray(value), new))
    node.input[index] = new


@pytest.mark.parametrize("mutation, reason", [
    ("m_off_by_one", "not 1 / 8"),
    ("other_axis", "reduces axes [1]"),
    ("keepdims", "keepdims=1"),
    ("square_of_two_tensors", "multiplies two tensors"),
    ("eps_not_constant", "not 1 / sqrt(var + eps)"),
    ("numerator_not_one", "not of 1"),
])
def test_other_forms_are_refused_with_the_reason(mutation, reason):
    model = _exported()
    s1, dot = _backward_nodes(model)
    if mutation == "m_off_by_one":
        mul = _norm_muls(model, s1)
        index = 1 if mul.input[0] == s1.output[0] else 0
        _set_input(model, mul, index, np.float32(1.0 / 9))
    elif mutation == "other_axis":
        _set_input(model, dot, 1, np.array([1], dtype=np.int64))
    elif mutation == "keepdims":
        for a in s1.attribute:
            if a.name == "keepdims":
                a.i = 1
    elif mutation == "square_of_two_tensors":
        square = _invstd_square(model)
        square.input[1] = next(n for n in model.graph.node if n.op_type == "Reshape" and
                               n.output[0].startswith("getitem") and n.output[0] != square.input[0]).output[0]
    elif mutation in ("eps_not_constant", "numerator_not_one"):
        sqrt = next(n for n in model.graph.node if n.op_type == "Sqrt")
        producers = {o: n for n in model.graph.node for o in n.output}
        add = producers[sqrt.input[0]]
        div = next(n for n in model.graph.node if n.op_type == "Div" and sqrt.output[0] in n.input)
        if mutation == "eps_not_constant":  # var + var instead of var + eps
            add.input[1] = add.input[0]
        else:
            _set_input(model, div, 0, np.float32(2.0))
    report = RewriteReport()
    fused = fuse_training(model, report=report)
    assert "BatchNormGrad" not in ops(fused)
    (site,) = [s for s in report.sites if s.rule == RULE]
    assert site.status == "rejected" and reason in site.reason, site.reason


def test_a_broadcast_that_puts_c_elsewhere_is_refused():
    """The scale broadcast Unsqueeze(Unsqueeze(invstd * scale, [0, 2]), [3]) of a BatchNorm2d mutated
    to axes [0, 1]: C at axis 2 of [1, 1, C, 1] (the mutated tensors' stale value_info dropped)."""
    model = _exported("bn2d")
    mul = next(n for n in model.graph.node if n.op_type == "Mul" and n.input[0].startswith("getitem") and
               any(i.endswith(".weight") for i in n.input))
    first = next(n for n in model.graph.node if n.op_type == "Unsqueeze" and n.input[0] == mul.output[0])
    second = next(n for n in model.graph.node if n.op_type == "Unsqueeze" and n.input[0] == first.output[0])
    _set_input(model, first, 1, np.array([0, 1], dtype=np.int64))
    kept = [v for v in model.graph.value_info if v.name not in (first.output[0], second.output[0])]
    del model.graph.value_info[:]
    model.graph.value_info.extend(kept)
    report = RewriteReport()
    fused = fuse_training(model, report=report)
    assert "BatchNormGrad" not in ops(fused)
    (site,) = [s for s in report.sites if s.rule == RULE]
    assert site.status == "rejected" and "[1, 1, 3, 1]: not C = 3 channels broadcast at axis 1" in site.reason, \
        site.reason


def test_forward_only_graph_has_no_site():
    model = _exported()
    producers = {o: n for n in model.graph.node for o in n.output}
    sqrt = next(n for n in model.graph.node if n.op_type == "Sqrt")
    keep, stack = [], [sqrt]
    while stack:  # the forward up to the variance's square root
        node = stack.pop()
        if node in keep:
            continue
        keep.append(node)
        stack += [producers[i] for i in node.input if i in producers]
    order = [n for n in model.graph.node if n in keep]
    graph = helper.make_graph(order, "fwd", list(model.graph.input),
                              [helper.make_tensor_value_info(sqrt.output[0], onnx.TensorProto.FLOAT, None)],
                              list(model.graph.initializer))
    small = helper.make_model(graph, opset_imports=list(model.opset_import))
    small.ir_version = model.ir_version
    report = RewriteReport()
    fused = fuse_training(small, report=report)
    assert "BatchNormGrad" not in ops(fused) and not [s for s in report.sites if s.rule == RULE]


def test_strict_leaves_it():
    model = _exported()
    assert "BatchNormGrad" in ops(fuse_training(_exported()))
    assert "BatchNormGrad" not in ops(fuse_training(model, strict=True))


def test_the_committed_users_graphs_fuse():
    """The corpus' two BatchNorm setups (tests/fixtures/user_setups): every BatchNorm's backward."""
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "user_setups"
    for name, count in (("mlp_bn1d_mse", 1), ("resnet_block_bn2d", 3)):
        path = root / f"{name}.onnx"
        if not path.exists():
            pytest.skip(f"{path} is absent (python -m models.fixtures --user-setups writes it)")
        model = onnx.load(path)
        report = RewriteReport()
        fused = fuse_training(model, report=report)
        assert ops(fused).count("BatchNormGrad") == count, name
        assert len([s for s in report.sites if s.rule == RULE and s.status == "fused"]) == count
