"""Attention models (models.attention_zoo: an ELU TransformerEncoderLayer, SDPA called directly,
causal MultiheadAttention with a key padding mask) exported, fused (rewrite.fuse_training: the
ELU backward becomes EluGrad) and trained 20 steps in ORT against PyTorch eager: per-step losses
within 1e-5 relative, parameters within the float32 tolerance (normwise) after 20 steps."""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import pytest
import torch

from models import attention_fixtures
from models.attention_zoo import ALPHA, SETUPS
from ort_ops import rewrite
from ort_ops.training import export_training_graph
from ort_ops.training.trainer import SGD, Adam, Trainer
from ort_ops.training.verify import TOLERANCES, compare_all, compare_with_eager, to_numpy

N_STEPS = 20
RTOL, ATOL = TOLERANCES[torch.float32]
# Adam's eps: the key projection's bias has a gradient that is zero in exact arithmetic
# (softmax ignores a per-row shift of the logits, and q . b_k is one), so what autograd computes
# for it is rounding noise (~1e-9 here, in eager PyTorch as in ORT). With the default eps=1e-8,
# Adam turns that noise into lr-sized steps whose sign is the noise's: two implementations of the
# same math part by ~lr per step on those entries. eps=1e-4 keeps noise steps below 1e-7.
ADAM_EPS = 1e-4
OPTIMIZERS = {
    "sgd-momentum": (lambda: SGD(lr=0.05, momentum=0.9), lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9)),
    "adam": (lambda: Adam(lr=3e-3, eps=ADAM_EPS), lambda p: torch.optim.Adam(p, lr=3e-3, eps=ADAM_EPS)),
}


@pytest.fixture(scope="module", params=list(SETUPS))
def setup_graphs(request):
    """(setup, unfused graph, fused graph); the export verifies loss and gradients against eager."""
    setup = SETUPS[request.param]
    x, y = setup.batches(1)[0]
    unfused = export_training_graph(setup.module(), (x,), setup.loss_fn, targets=(y,), params_as_inputs=True)
    report = rewrite.RewriteReport()
    fused = rewrite.fuse_training(unfused, report=report)
    return setup, unfused, fused, report


def _ops(model) -> Counter:
    return Counter(n.op_type for n in model.graph.node)


def test_graph_is_standard_attention_and_elu_backward_fuses(setup_graphs):
    setup, unfused, fused, report = setup_graphs
    before, after = _ops(unfused), _ops(fused)
    assert before["Softmax"] == 1 and before["Elu"] == 1 and before["EluGrad"] == 0
    assert {n.domain for n in unfused.graph.node} == {""}
    assert after["EluGrad"] == 1 and after["Elu"] == 1 and after["Softmax"] == 1
    assert [s.status for s in report.sites if s.op == "EluGrad"] == ["fused"]
    (elu_grad,) = [n for n in fused.graph.node if n.op_type == "EluGrad"]
    assert next(a.f for a in elu_grad.attribute if a.name == "alpha") == pytest.approx(ALPHA)
    onnx.checker.check_model(fused, full_check=True)


def _torch_train(setup, make_opt, batches):
    module = setup.module()
    opt = make_opt(module.parameters())
    losses = []
    for x, y in batches:
        opt.zero_grad()
        loss = setup.loss_fn(module(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {n: to_numpy(p) for n, p in module.named_parameters()}, losses


# The fused graph with both optimizers; the unfused one (the export as it is) with SGD.
@pytest.mark.parametrize(("kind", "opt_name"), [("fused", "sgd-momentum"), ("fused", "adam"),
                                                ("unfused", "sgd-momentum")])
def test_twenty_steps_match_pytorch(setup_graphs, kind, opt_name):
    setup, unfused, fused, _ = setup_graphs
    make_ours, make_torch = OPTIMIZERS[opt_name]
    batches = setup.batches(N_STEPS)
    init = {n: to_numpy(p) for n, p in setup.module().named_parameters()}
    trainer = Trainer(unfused if kind == "unfused" else fused, init, make_ours(), progress=False)
    losses = trainer.fit([(x.numpy(), y.numpy()) for x, y in batches])
    want_params, want_losses = _torch_train(setup, make_torch, batches)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    assert sum(losses[-2:]) < sum(losses[:2])  # it is learning, not standing still
    report = compare_all(trainer.parameters(), want_params, RTOL, ATOL)
    assert report.ok, f"{setup.name} {kind} {opt_name} after {N_STEPS} steps:\n{report}"


@pytest.mark.parametrize("name", list(SETUPS))
def test_committed_fixture_is_current(name):
    """The CANN suite's graphs (models.attention_fixtures) still equal eager autograd."""
    path = attention_fixtures.path_of(name)
    assert path.exists(), f"run python -m models.attention_fixtures to create {path}"
    assert path.stat().st_size < attention_fixtures.MAX_BYTES
    model = onnx.load(path)
    setup = SETUPS[name]
    module = setup.module()
    assert [o.name for o in model.graph.output] == ["loss"] + [f"grad.{n}" for n, _ in module.named_parameters()]
    x, y = setup.batches(1)[0]
    report = compare_with_eager(model, module, (x,), setup.loss_fn, targets=(y,))
    assert report.ok, f"{path} is stale (python -m models.attention_fixtures):\n{report}"
