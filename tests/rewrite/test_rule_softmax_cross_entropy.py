"""softmax_cross_entropy: F.cross_entropy's loss and backward -> SoftmaxCrossEntropyLossAndGrad.

Each fused graph: the exact op list, onnx.checker (full), the outputs of ORT (CPU, graph
optimisations off) before and after within the float32 tolerance (ignored rows included), and the
reference evaluator on the fused graph; each refused graph: unchanged, with its reason. Graphs
from graphs_training.py (the exporter's spelling node for node) and from PyTorch itself."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.reference
import pytest
import torch
import torch.nn.functional as F
from graphs_training import cross_entropy, export

from checks import ops
from ort_ops import ort_io
from ort_ops.reference import OPS
from ort_ops.rewrite import RewriteReport, fuse_training
from ort_ops.rewrite.validation import compare, session

FUSED_OP = "SoftmaxCrossEntropyLossAndGrad"


pytestmark = pytest.mark.usefixtures("fast_exports")


def feeds(n=6, c=5, ignore_index=-100, ignored=(1, 4), seed=0):
    rng = np.random.default_rng(seed)
    target = rng.integers(0, c, n).astype(np.int64)
    target[list(ignored)] = ignore_index
    return {"logits": (rng.normal(0, 2, (n, c))).astype(np.float32), "target": target}


def run(model, inputs):
    names = [o.name for o in model.graph.output]
    return dict(zip(names, ort_io.run(session(model), inputs, names)))


def assert_same_outputs(fused, model, inputs):
    got, want = run(fused, inputs), run(model, inputs)
    for name in want:
        check = compare(name, "ort", got[name], want[name])
        assert check.ok, check
    ref = onnx.reference.ReferenceEvaluator(fused, new_ops=list(OPS)).run(None, inputs)
    for (name, g), r in zip(got.items(), ref):
        check = compare(name, "reference", r, g)
        assert check.ok, check
    return got, want


def fuse(model, **kwargs):
    before = model.SerializeToString()
    report = RewriteReport()
    fused = fuse_training(model, report=report, **kwargs)
    assert model.SerializeToString() == before, "input model was mutated"
    onnx.checker.check_model(fused, full_check=True)
    return fused, report


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("ignore_index", [-100, 2])
@pytest.mark.parametrize("equal_form", [False, True])
def test_fuses_with_every_reduction_and_ignore_index(reduction, ignore_index, equal_form):
    model = cross_entropy(reduction=reduction, ignore_index=ignore_index, equal_form=equal_form)
    fused, report = fuse(model)
    assert ops(fused) == [FUSED_OP, "Identity", "Identity"]
    (site,) = report.fused
    assert (site.rule, site.op, site.exact, site.dtype) == ("softmax_cross_entropy", FUSED_OP, False, "float32")
    assert site.attributes == {"ignore_index": ignore_index, "reduction": reduction}
    (node,) = [n for n in fused.graph.node if n.op_type == FUSED_OP]
    assert node.domain == "ai.ortops" and list(node.input)[:2] == ["logits", "target"]
    assert {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute} == \
        {"ignore_index": ignore_index, "reduction": reduction.encode()}
    assert_same_outputs(fused, model, feeds(ignore_index=ignore_index))


def test_dloss_other_than_one_is_the_ops_input():
    model = cross_entropy(dloss=0.5)
    fused, _ = fuse(model)
    (node,) = [n for n in fused.graph.node if n.op_type == FUSED_OP]
    dloss = next(t for t in fused.graph.initializer if t.name == node.input[2])
    assert onnx.numpy_helper.to_array(dloss) == np.float32(0.5)
    assert_same_outputs(fused, model, feeds())


def test_every_row_ignored_gives_nan_loss_and_zero_gradient_like_the_original():
    model = cross_entropy()
    fused, _ = fuse(model)
    inputs = feeds(ignored=range(6))
    got, want = run(fused, inputs), run(model, inputs)
    assert np.isnan(got["loss"]) and np.isnan(want["loss"])
    assert np.array_equal(got["dlogits"], np.zeros((6, 5), np.float32))
    assert np.array_equal(np.abs(want["dlogits"]), np.zeros((6, 5), np.float32))


def test_log_softmax_stays_when_read_elsewhere():
    model = cross_entropy(keep_log_softmax=True)
    fused, report = fuse(model)
    assert ops(fused) == ["LogSoftmax", FUSED_OP, "Identity", "Identity", "Identity"]
    assert any("LogSoftmax" in note and "stays" in note for note in report.fused[0].notes)
    assert_same_outputs(fused, model, feeds())


def test_target_out_of_range_fails_like_the_original():
    model = cross_entropy()
    fused, _ = fuse(model)
    inputs = feeds()
    inputs["target"][0] = 7
    with pytest.raises(Exception, match="out of data bounds"):
        run(model, inputs)
    with pytest.raises(Exception, match=r"target\[0\] = 7 is outside \[0, 5\)"):
        run(fused, inputs)


@pytest.mark.parametrize("kwargs, reason", [
    ({"label_smoothing": True}, "something other than label smoothing's uniform term"),
    ({"row_weights": True, "reduction": "sum"}, "has shape [6, 1], not one scalar"),
    ({"row_weights": True}, "is not dloss / that count"),
    ({"loss_squared": True}, "is computed from the loss itself"),
    ({"share": "mask"}, "is also read by shared_out, outside the pattern"),
    ({"share": "neg"}, "is also read by shared_out, outside the pattern"),
    ({"share": "count"}, "is also read by shared_out, outside the pattern"),
])
def test_refused_with_the_reason(kwargs, reason):
    model = cross_entropy(**kwargs)
    fused, report = fuse(model)
    assert fused.SerializeToString() == model.SerializeToString()
    (site,) = report.rejected
    assert site.rule == "softmax_cross_entropy" and reason in site.reason, site.reason


def test_strict_refuses():
    model = cross_entropy()
    fused, report = fuse(model, strict=True)
    assert fused.SerializeToString() == model.SerializeToString()
    assert report.rejected[0].reason.startswith("strict: not provably unchanged")


# --- PyTorch's own graphs ---------------------------------------------------------------------


def _torch_case(loss_fn, classes=5, n=6, seed=0, dtype=torch.float32, logits_extra=()):
    torch.manual_seed(seed)
    module = torch.nn.Linear(8, classes).to(dtype)
    x = torch.randn(n, *logits_extra, 8).to(dtype) if logits_extra else torch.randn(n, 8).to(dtype)
    if logits_extra:  # [N, C, L] logits for K-dimensional cross-entropy
        module = torch.nn.Sequential(module, Permute())
    y = torch.randint(0, classes, (n, *logits_extra))
    return export(module, x, loss_fn, y), module


class Permute(torch.nn.Module):
    def forward(self, x):
        return x.permute(0, 2, 1)


def _graph_feeds(model, module, n=6, classes=5, ignore_index=-100):
    inputs = {"input": np.random.default_rng(3).standard_normal((n, 8)).astype(np.float32),
              "target": np.random.default_rng(4).integers(0, classes, n).astype(np.int64)}
    inputs["target"][[1, 3]] = ignore_index
    for name, p in module.named_parameters():
        inputs[name] = p.detach().numpy()
    return inputs


@pytest.mark.parametrize("name, loss_fn, attributes", [
    ("mean", F.cross_entropy, {"ignore_index": -100, "reduction": "mean"}),
    ("sum", lambda o, t: F.cross_entropy(o, t, reduction="sum"), {"ignore_index": -100, "reduction": "sum"}),
    ("ignore_index", lambda o, t: F.cross_entropy(o, t, ignore_index=2), {"ignore_index": 2, "reduction": "mean"}),
    ("nll_of_log_softmax", lambda o, t: F.nll_loss(F.log_softmax(o, 1), t),
     {"ignore_index": -100, "reduction": "mean"}),
    ("scaled", lambda o, t: 0.5 * F.cross_entropy(o, t), {"ignore_index": -100, "reduction": "mean"}),
])
def test_pytorch_cross_entropy_fuses(name, loss_fn, attributes):
    model, module = _torch_case(loss_fn)
    fused, report = fuse(model)
    (site,) = [s for s in report.fused if s.rule == "softmax_cross_entropy"]
    assert site.attributes == attributes
    gone = {"LogSoftmax", "GatherElements", "ScatterElements", "Exp", "Neg", "Not", "Equal", "Where", "Squeeze",
            "Unsqueeze", "ConstantOfShape", "Div", "Cast", "Sub"}
    assert not gone & set(ops(fused)), ops(fused)
    assert ops(fused).count(FUSED_OP) == 1
    inputs = _graph_feeds(model, module, ignore_index=attributes["ignore_index"])
    got, want = run(fused, inputs), run(model, inputs)
    for out in want:
        check = compare(out, "ort", got[out], want[out])
        assert check.ok, check


@pytest.mark.parametrize("name, loss_fn, attributes", [
    ("mean", lambda o, t: F.cross_entropy(o, t, label_smoothing=0.1),
     {"ignore_index": -100, "reduction": "mean", "label_smoothing": 0.1}),
    ("sum", lambda o, t: F.cross_entropy(o, t, label_smoothing=0.25, reduction="sum"),
     {"ignore_index": -100, "reduction": "sum", "label_smoothing": 0.25}),
    ("ignore_index", lambda o, t: F.cross_entropy(o, t, label_smoothing=0.1, ignore_index=2),
     {"ignore_index": 2, "reduction": "mean", "label_smoothing": 0.1}),
    ("scaled", lambda o, t: 0.5 * F.cross_entropy(o, t, label_smoothing=0.1),
     {"ignore_index": -100, "reduction": "mean", "label_smoothing": 0.1}),
    ("eps_1", lambda o, t: F.cross_entropy(o, t, label_smoothing=1.0, ignore_index=2),
     {"ignore_index": 2, "reduction": "mean", "label_smoothing": 1.0}),
])
def test_pytorch_label_smoothing_fuses(name, loss_fn, attributes):
    """F.cross_entropy(label_smoothing=eps) -> one node with label_smoothing = eps (as float32) and
    the loss's dloss; its loss and gradients equal the exported graph's in ORT and PyTorch's own."""
    model, module = _torch_case(loss_fn)
    fused, report = fuse(model)
    (site,) = [s for s in report.fused if s.rule == "softmax_cross_entropy"]
    eps = site.attributes.pop("label_smoothing")
    want_eps = attributes.pop("label_smoothing")
    assert site.attributes == attributes and abs(eps - want_eps) <= 1e-7
    assert ops(fused).count(FUSED_OP) == 1
    gone = {"LogSoftmax", "GatherElements", "ScatterElements", "Exp", "Neg", "Not", "Equal", "Where", "Squeeze",
            "Unsqueeze", "ConstantOfShape", "Div", "Cast", "Sub", "Expand", "Add"}
    assert not gone & set(ops(fused)), ops(fused)
    inputs = _graph_feeds(model, module, ignore_index=attributes["ignore_index"])
    got, want = run(fused, inputs), run(model, inputs)
    for out in want:
        check = compare(out, "ort", got[out], want[out])
        assert check.ok, check
    # PyTorch eager on the same inputs: the loss and the parameters' gradients
    x = torch.from_numpy(inputs["input"])
    for p_name, p in module.named_parameters():
        p.data = torch.from_numpy(inputs[p_name]).clone()
        p.grad = None
    loss = loss_fn(module(x), torch.from_numpy(inputs["target"]))
    loss.backward()
    assert compare("loss", "torch", got["loss"], loss.detach().numpy()).ok
    for p_name, p in module.named_parameters():
        (out,) = [o for o in got if o.startswith("grad.") and o.endswith(p_name)]
        check = compare(out, "torch", got[out], p.grad.numpy())
        assert check.ok, check


def _mutated(model, tensor_of, factor):
    """``model`` with one node's constant input (``tensor_of(model)`` = (node, input index)) scaled
    by ``factor`` in a new initializer of its own (other readers of the constant keep it)."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    node, index = tensor_of(model)
    init = {t.name: t for t in model.graph.initializer}[node.input[index]]
    value = onnx.numpy_helper.to_array(init) * np.float32(factor)
    model.graph.initializer.append(onnx.numpy_helper.from_array(value.astype(np.float32), init.name + "_mutant"))
    node.input[index] = init.name + "_mutant"
    return model


def _loss_add(model):
    return next(n for n in model.graph.node if n.op_type == "Add" and "loss" in n.output)


def _forward_b(model):
    """(the forward Mul of the smoothing term by b, b's input index)."""
    outputs = {o: n for n in model.graph.node for o in n.output}
    inits = {t.name for t in model.graph.initializer}
    # the smoothing term's Mul: its other input descends from ReduceSum(log_softmax, axes=[1])
    lsm = next(n.output[0] for n in model.graph.node if n.op_type == "LogSoftmax")
    row_sum = next(n.output[0] for n in model.graph.node if n.op_type == "ReduceSum" and n.input[0] == lsm)
    reach, frontier = {row_sum}, [row_sum]
    while frontier:
        t = frontier.pop()
        for n in model.graph.node:
            if t in n.input and n.op_type != "Add":
                for o in n.output:
                    if o not in reach:
                        reach.add(o)
                        frontier.append(o)
    for name in _loss_add(model).input:
        mul = outputs[name]
        if name in reach:
            return mul, next(i for i, t in enumerate(mul.input) if t in inits)
    raise AssertionError("no smoothing term found")


def _backward_a(model):
    """(the Div of dloss * (1 - eps) by the count in the backward, its constant's index)."""
    inits = {t.name for t in model.graph.initializer}
    outputs = {o: n for n in model.graph.node for o in n.output}
    scatter = next(n for n in model.graph.node if n.op_type == "ScatterElements")
    mul = next(n for n in model.graph.node if n.op_type == "Mul" and scatter.output[0] in n.input)
    where = outputs[next(i for i in mul.input if i != scatter.output[0])]
    div = outputs[where.input[1]]
    return div, next(i for i, t in enumerate(div.input) if t in inits)


@pytest.mark.parametrize("name, mutate, reason", [
    ("b_not_eps_over_c", lambda m: _mutated(m, _forward_b, 1.5), "are not 1 - eps and eps / C"),
    ("backward_scale_off", lambda m: _mutated(m, _backward_a, 1.5), "are not one dloss times"),
])
def test_label_smoothing_mutants_are_refused_with_the_reason(name, mutate, reason):
    model, _ = _torch_case(lambda o, t: F.cross_entropy(o, t, label_smoothing=0.1))
    fused, report = fuse(mutate(model))
    assert FUSED_OP not in ops(fused)
    (site,) = [s for s in report.sites if s.rule == "softmax_cross_entropy"]
    assert site.status == "rejected" and reason in site.reason, site.reason


@pytest.mark.parametrize("name, loss_fn, reason", [
    ("label_smoothing_class_weights",
     lambda o, t: F.cross_entropy(o, t, weight=torch.arange(1.0, 6.0), label_smoothing=0.1),
     "other than label smoothing's uniform term"),
    ("reduction_none_weighted", lambda o, t: (F.cross_entropy(o, t, reduction="none") * torch.arange(6.0)).sum(),
     "not summed to one scalar"),
    ("reduction_none_summed", lambda o, t: F.cross_entropy(o, t, reduction="none").sum(), "not one scalar"),
    ("squared", lambda o, t: F.cross_entropy(o, t) ** 2, "computed from the loss itself"),
])
def test_pytorch_variants_are_refused_with_the_reason(name, loss_fn, reason):
    model, _ = _torch_case(loss_fn)
    fused, report = fuse(model)
    assert FUSED_OP not in ops(fused)
    (site,) = [s for s in report.sites if s.rule == "softmax_cross_entropy"]
    assert site.status == "rejected" and reason in site.reason, site.reason


CLASS_WEIGHTS = torch.tensor([0.5, 2.0, 1.0, 3.0, 0.0])  # one class weighing 0


def _export(loss_fn, optimize, seed=0):
    from ort_ops import training

    torch.manual_seed(seed)
    module = torch.nn.Linear(8, 5)
    x, y = torch.randn(6, 8), torch.randint(0, 5, (6,))
    return training.export_training_graph(module, (x,), loss_fn, targets=(y,), params_as_inputs=True, verify=False,
                                          optimize=optimize), module


def _eager(module, loss_fn, inputs):
    """PyTorch eager autograd on ``inputs``: the loss and the parameters' gradients by name."""
    for p_name, p in module.named_parameters():
        p.data = torch.from_numpy(inputs[p_name]).clone()
        p.grad = None
    loss = loss_fn(module(torch.from_numpy(inputs["input"])), torch.from_numpy(inputs["target"]))
    loss.backward()
    return loss.detach().numpy(), {p_name: p.grad.numpy() for p_name, p in module.named_parameters()}


@pytest.mark.parametrize("optimize", [True, False], ids=["optimised", "unoptimised"])
@pytest.mark.parametrize("name, loss_fn, attributes", [
    ("mean", lambda o, t: F.cross_entropy(o, t, weight=CLASS_WEIGHTS), {"ignore_index": -100, "reduction": "mean"}),
    ("sum", lambda o, t: F.cross_entropy(o, t, weight=CLASS_WEIGHTS, reduction="sum"),
     {"ignore_index": -100, "reduction": "sum"}),
    ("ignore_index", lambda o, t: F.cross_entropy(o, t, weight=CLASS_WEIGHTS, ignore_index=2),
     {"ignore_index": 2, "reduction": "mean"}),
    ("ignore_index_sum", lambda o, t: F.cross_entropy(o, t, weight=CLASS_WEIGHTS, ignore_index=2, reduction="sum"),
     {"ignore_index": 2, "reduction": "sum"}),
    ("scaled_mean", lambda o, t: 0.5 * F.cross_entropy(o, t, weight=CLASS_WEIGHTS),
     {"ignore_index": -100, "reduction": "mean"}),
    ("computed_weights", lambda o, t: F.cross_entropy(o, t, weight=torch.arange(1.0, 6.0)),
     {"ignore_index": -100, "reduction": "mean"}),
])
def test_pytorch_weighted_cross_entropy_fuses(name, loss_fn, attributes, optimize):
    """F.cross_entropy(weight=w) -> one node reading w as its input 3 ([C]: the constant, or the
    tensor the exporter reshapes); its loss and gradients equal the exported graph's in ORT and
    PyTorch's eager autograd (rows ignored, a class weighing 0)."""
    model, module = _export(loss_fn, optimize)
    fused, report = fuse(model)
    if name == "scaled_mean" and not optimize:
        # as without weights: the unoptimised dloss * 0.5 is Mul(Expand(1, Shape(loss)), 0.5), not folded
        (site,) = [s for s in report.sites if s.rule == "softmax_cross_entropy"]
        assert site.status == "rejected" and "computed from the loss itself" in site.reason, site.reason
        return
    (site,) = [s for s in report.fused if s.rule == "softmax_cross_entropy"]
    assert site.attributes == attributes
    assert ops(fused).count(FUSED_OP) == 1
    gone = {"LogSoftmax", "GatherElements", "ScatterElements", "Exp", "Neg", "Not", "Equal", "Where", "Squeeze",
            "Unsqueeze", "ConstantOfShape", "Div", "Sub"}
    assert not gone & set(ops(fused)), ops(fused)
    (node,) = [n for n in fused.graph.node if n.op_type == FUSED_OP]
    assert len(node.input) == 4
    weights = {t.name: onnx.numpy_helper.to_array(t) for t in fused.graph.initializer}
    if node.input[3] in weights:  # the exporter folded the weights: the node reads them as [C]
        want = CLASS_WEIGHTS.numpy() if name != "computed_weights" else np.arange(1.0, 6.0, dtype=np.float32)
        assert np.array_equal(weights[node.input[3]], want)
    else:  # torch.arange(1.0, 6.0) left as Range in the unoptimised export: the node reads its output
        assert not optimize and name == "computed_weights"
        (producer,) = [n for n in fused.graph.node if node.input[3] in n.output]
        assert producer.op_type == "Range"
    inputs = _graph_feeds(model, module, ignore_index=attributes["ignore_index"])
    got, want = run(fused, inputs), run(model, inputs)
    for out in want:
        check = compare(out, "ort", got[out], want[out])
        assert check.ok, check
    loss, grads = _eager(module, loss_fn, inputs)
    assert compare("loss", "torch", got["loss"], loss).ok
    for p_name, grad in grads.items():
        (out,) = [o for o in got if o.startswith("grad.") and o.endswith(p_name)]
        check = compare(out, "torch", got[out], grad)
        assert check.ok, check


def _backward_weights(model):
    """(the backward's Mul of dloss / W by the class weights, the weights' input index)."""
    inits = {t.name for t in model.graph.initializer}
    lsm = next(n.output[0] for n in model.graph.node if n.op_type == "LogSoftmax")
    forward = next(n for n in model.graph.node if n.op_type == "Mul" and lsm in n.input)
    weights = next(i for i in forward.input if i != lsm)
    mul = next(n for n in model.graph.node if n.op_type == "Mul" and weights in n.input and n is not forward)
    assert weights in inits
    return mul, list(mul.input).index(weights)


def _forward_weights(model):
    """(the forward's Mul of the log-probabilities by the class weights, the weights' input index)."""
    lsm = next(n.output[0] for n in model.graph.node if n.op_type == "LogSoftmax")
    forward = next(n for n in model.graph.node if n.op_type == "Mul" and lsm in n.input)
    return forward, next(i for i, t in enumerate(forward.input) if t != lsm)


def _weight_sum_source(model):
    """(the GatherElements reading the [N, C] weights whose picked values sum to W, input 0)."""
    lsm = next(n.output[0] for n in model.graph.node if n.op_type == "LogSoftmax")
    forward = next(n for n in model.graph.node if n.op_type == "Mul" and lsm in n.input)
    gather = next(n for n in model.graph.node if n.op_type == "GatherElements" and n.input[0] != forward.output[0])
    return gather, 0


@pytest.mark.parametrize("name, mutate, reason", [
    ("weight_sum_of_other_weights", lambda m: _mutated(m, _weight_sum_source, 1.5), "outside the pattern"),
    ("backward_weights_differ", lambda m: _mutated(m, _backward_weights, 1.5),
     "is not dloss (/ W) times the forward's class weights"),
    ("forward_weights_differ", lambda m: _mutated(m, _forward_weights, 1.5),
     "is not dloss (/ W) times the forward's class weights"),
])
def test_class_weight_mutants_are_refused_with_the_reason(name, mutate, reason):
    """Negative controls: the backward's or the forward's class weights changed alone (the normaliser
    W then sums other weights than the loss's) is no weighted cross-entropy: refused, unchanged."""
    model, _ = _export(lambda o, t: F.cross_entropy(o, t, weight=CLASS_WEIGHTS), True)
    mutant = mutate(model)
    fused, report = fuse(mutant)
    assert FUSED_OP not in ops(fused)
    (site,) = [s for s in report.sites if s.rule == "softmax_cross_entropy"]
    assert site.status == "rejected" and reason in site.reason, site.reason


def test_pytorch_float16_cross_entropy_is_refused_with_the_reason():
    model, _ = _torch_case(F.cross_entropy, dtype=torch.float16)
    fused, report = fuse(model)
    assert FUSED_OP not in ops(fused)
    (site,) = [s for s in report.sites if s.rule == "softmax_cross_entropy"]
    assert "only the float32 spelling is fused" in site.reason, site.reason


def test_pytorch_k_dimensional_cross_entropy_is_refused_with_the_reason():
    model, _ = _torch_case(F.cross_entropy, logits_extra=(3,))
    fused, report = fuse(model)
    assert FUSED_OP not in ops(fused)
    (site,) = [s for s in report.sites if s.rule == "softmax_cross_entropy"]
    assert "the op takes [N, C]" in site.reason, site.reason
