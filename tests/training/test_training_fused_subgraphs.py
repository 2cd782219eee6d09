"""Training with every fused op (rewrite.fuse_training: EluGrad, SoftmaxCrossEntropyLossAndGrad,
MaxPoolGrad) on the CPU EP against PyTorch, with the tolerances of test_training.py and
test_training_cnn.py: first-step loss and gradients, per-step losses (rtol 1e-5) and parameters
after N steps; the trainer still checks class labels through the fused cross-entropy."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from models.zoo import IMAGE_SHAPE, elu_cnn, elu_mlp, example_batch
from ort_ops import rewrite, training
from ort_ops.training.trainer import SGD, Adam, Trainer
from ort_ops.training.verify import TOLERANCES, compare_all, to_numpy

BATCH = 16
N_STEPS = 10
RTOL, ATOL = TOLERANCES[torch.float32]
MODELS = {
    "mlp": (lambda: elu_mlp(alpha=0.7, seed=3), lambda seed: example_batch("mlp", BATCH, seed=seed)),
    "cnn": (lambda: elu_cnn(alpha=0.7, seed=3), lambda seed: _images(seed)),
}
OPTIMIZERS = {
    "sgd-momentum": (SGD(lr=0.05, momentum=0.9), lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9)),
    "adam": (Adam(lr=3e-3), lambda p: torch.optim.Adam(p, lr=3e-3)),
}


def _images(seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(BATCH, *IMAGE_SHAPE, generator=g), torch.randint(0, 10, (BATCH,), generator=g)


@pytest.fixture(scope="module", params=list(MODELS))
def case(request):
    make, batch = MODELS[request.param]
    x, y = batch(0)
    unfused = training.export_training_graph(make(), (x,), F.cross_entropy, targets=(y,), params_as_inputs=True,
                                             verify=False)
    report = rewrite.RewriteReport()
    fused = rewrite.fuse_training(unfused, report=report)
    ops = Counter(n.op_type for n in fused.graph.node)
    want = {"EluGrad": 2, "SoftmaxCrossEntropyLossAndGrad": 1,
            "MaxPoolGrad": 2 if request.param == "cnn" else 0}
    assert {op: ops[op] for op in want} == want, report.summary()
    assert not report.rejected, report.summary()
    return request.param, make, batch, fused


def _init(make):
    return {n: to_numpy(p) for n, p in make().named_parameters()}


def test_first_step_loss_and_gradients_match_autograd(case):
    _, make, batch, fused = case
    x, y = batch(100)
    trainer = Trainer(fused, _init(make), SGD(lr=0.1), progress=False)
    loss = trainer.step((x.numpy(), y.numpy()))
    module = make()
    want = F.cross_entropy(module(x), y)
    want.backward()
    assert abs(loss - want.item()) <= ATOL + RTOL * abs(want.item())
    report = compare_all(trainer.gradients(), {n: to_numpy(p.grad) for n, p in module.named_parameters()}, RTOL,
                         ATOL)
    assert report.ok, str(report)


@pytest.mark.parametrize("opt_name", list(OPTIMIZERS))
def test_losses_and_parameters_after_n_steps_match_pytorch(case, opt_name):
    _, make, batch, fused = case
    ours, make_torch = OPTIMIZERS[opt_name]
    batches = [batch(200 + i) for i in range(N_STEPS)]
    trainer = Trainer(fused, _init(make), ours, progress=False)
    losses = trainer.fit([(x.numpy(), y.numpy()) for x, y in batches])
    module = make()
    opt = make_torch(module.parameters())
    want_losses = []
    for x, y in batches:
        opt.zero_grad()
        loss = F.cross_entropy(module(x), y)
        loss.backward()
        opt.step()
        want_losses.append(loss.item())
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    report = compare_all(trainer.parameters(), {n: to_numpy(p) for n, p in module.named_parameters()}, RTOL, ATOL)
    assert report.ok, str(report)


def test_labels_are_still_checked_through_the_fused_cross_entropy(case):
    _, make, batch, fused = case
    x, y = batch(300)
    y = y.numpy().copy()
    y[3] = 10
    trainer = Trainer(fused, _init(make), SGD(lr=0.1), progress=False)
    with pytest.raises(ValueError, match="10"):
        trainer.step((x.numpy(), y))
