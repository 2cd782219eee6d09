"""ELU CNNs with average-pooling heads (models.zoo: nn.AvgPool2d, nn.AdaptiveAvgPool2d(4) on 6x6
maps) exported, fused (rewrite.fuse_training) and trained 20 steps in ORT against PyTorch eager:
per-step losses within 1e-5 relative, parameters within 1e-5 normwise after 20 steps."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from models import zoo
from ort_ops import rewrite
from ort_ops.training import SGD, Adam, Trainer, export_training_graph
from ort_ops.training.verify import to_numpy

STEPS = 20
BATCH = 8
MODELS = {"avgpool": zoo.elu_avgpool_cnn, "adaptive": zoo.elu_adaptive_cnn}
OPTIMIZERS = {"sgd-momentum": (lambda: SGD(lr=0.05, momentum=0.9), lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9)),
              "adam": (lambda: Adam(lr=3e-3), lambda p: torch.optim.Adam(p, lr=3e-3))}


def _batches() -> list[tuple[np.ndarray, np.ndarray]]:
    """Four fixed batches in turn, labels a linear function of the image (learnable)."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((64, zoo.N_CLASSES))
    four = []
    for _ in range(4):
        x = rng.standard_normal((BATCH, *zoo.IMAGE_SHAPE)).astype(np.float32)
        four.append((x, (x.reshape(BATCH, -1) @ w).argmax(1).astype(np.int64)))
    return [four[i % 4] for i in range(STEPS)]


@pytest.fixture(scope="module", params=sorted(MODELS))
def fused_graph(request):
    x, y = (torch.from_numpy(a) for a in _batches()[0])
    graph = export_training_graph(MODELS[request.param](), (x,), F.cross_entropy, targets=(y,), params_as_inputs=True)
    return request.param, rewrite.fuse_training(graph)


def _normwise(got, want) -> float:
    return float(np.linalg.norm(got.astype(np.float64) - want) / np.linalg.norm(want.astype(np.float64)))


def test_pooling_head_trains_like_pytorch(fused_graph):
    name, graph = fused_graph
    opt = {"avgpool": "sgd-momentum", "adaptive": "adam"}[name]  # one optimizer each (test time)
    ops = Counter(n.op_type for n in graph.graph.node)
    assert ops["EluGrad"] == (2 if name == "avgpool" else 1) and ops["SoftmaxCrossEntropyLossAndGrad"] == 1, ops
    data = _batches()
    ours, theirs = OPTIMIZERS[opt]
    module = MODELS[name]()
    trainer = Trainer(graph, {n: to_numpy(p) for n, p in module.named_parameters()}, ours(), progress=False)
    losses = np.array(trainer.fit(data))
    torch_opt = theirs(module.parameters())
    want = []
    for x, y in data:
        torch_opt.zero_grad()
        loss = F.cross_entropy(module(torch.from_numpy(x)), torch.from_numpy(y))
        loss.backward()
        torch_opt.step()
        want.append(loss.item())
    want = np.array(want)
    assert np.all(np.abs(losses - want) <= 1e-5 * np.abs(want)), np.abs(losses - want) / np.abs(want)
    assert losses[-4:].mean() < losses[:4].mean()  # it learns
    for pname, p in module.named_parameters():
        err = _normwise(trainer.parameters()[pname], to_numpy(p))
        assert err <= 1e-5, f"{name}/{opt}: {pname} normwise error {err:.3g} after {STEPS} steps"
