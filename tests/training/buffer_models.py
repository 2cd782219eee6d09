"""BatchNorm models for the buffer-state tests (main and CANN suites): the model, its batches, the
exported training graph, and the same training in PyTorch eager with torch.optim."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

STEPS = 20


def conv_bn(mode: str) -> nn.Module:
    """The issue's repro: Conv2d + BatchNorm2d + ELU + Linear (batch 4 x 3 x 8 x 8, 3 classes)."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ELU(), nn.Flatten(), nn.Linear(256, 3))
    return _with_stats(m, mode)


def mlp_bn(mode: str) -> nn.Module:
    """Linear (no bias) + BatchNorm1d + ELU + Linear (batch 8 x 6, MSE to 3 outputs). (A bias before a
    train-mode BatchNorm has a zero gradient, which Adam turns into steps of rounding noise's sign.)"""
    torch.manual_seed(1)
    m = nn.Sequential(nn.Linear(6, 5, bias=False), nn.BatchNorm1d(5, momentum=0.3), nn.ELU(), nn.Linear(5, 3))
    return _with_stats(m, mode)


def _with_stats(m: nn.Module, mode: str) -> nn.Module:
    # running statistics other than the defaults (0, 1, 0): a graph starting from the defaults, or
    # from statistics advanced by one batch, differs from the module's
    gen = torch.Generator().manual_seed(7)
    for bn in (x for x in m.modules() if isinstance(x, nn.modules.batchnorm._BatchNorm)):
        bn.running_mean.copy_(torch.randn(bn.running_mean.shape, generator=gen))
        bn.running_var.copy_(torch.rand(bn.running_var.shape, generator=gen) + 0.5)
        bn.num_batches_tracked.fill_(3)
        with torch.no_grad():  # affine parameters away from (1, 0) too
            bn.weight.add_(0.1 * torch.randn(bn.weight.shape, generator=gen))
            bn.bias.add_(0.1 * torch.randn(bn.bias.shape, generator=gen))
    return m.train() if mode == "train" else m.eval()


def batches(kind: str, n: int = STEPS) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(3)
    if kind == "conv":
        return [(rng.standard_normal((4, 3, 8, 8)).astype(np.float32), rng.integers(0, 3, 4)) for _ in range(n)]
    return [(rng.standard_normal((8, 6)).astype(np.float32), rng.standard_normal((8, 3)).astype(np.float32))
            for _ in range(n)]


LOSSES = {"conv": F.cross_entropy, "mlp": F.mse_loss}
MODELS = {"conv": conv_bn, "mlp": mlp_bn}


@dataclass
class Eager:
    losses: list[float] = field(default_factory=list)
    state: dict[str, np.ndarray] = field(default_factory=dict)
    module: nn.Module | None = None


def train_eager(module: nn.Module, kind: str, optimizer: str, data, lr: float) -> Eager:
    """``STEPS`` steps of torch.optim SGD (momentum 0.9) or Adam on a copy of ``module``."""
    m = copy.deepcopy(module)
    opt = (torch.optim.SGD(m.parameters(), lr=lr, momentum=0.9) if optimizer == "sgd"
           else torch.optim.Adam(m.parameters(), lr=lr))
    out = Eager(module=m)
    for x, y in data:
        opt.zero_grad()
        loss = LOSSES[kind](m(torch.from_numpy(x)), torch.from_numpy(y))
        loss.backward()
        opt.step()
        out.losses.append(loss.item())
    out.state = {n: t.detach().numpy().copy() for n, t in m.state_dict().items()}
    return out


def normwise(got, want) -> float:
    """``||got - want|| / ||want||`` in float64 (the absolute norm when ``want`` is 0)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    scale = np.linalg.norm(want)
    return float(np.linalg.norm(got - want) / (scale if scale > 0 else 1.0))


FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "buffer_state" / "conv_bn_fp32.onnx"


def make_fixture(out: Path = FIXTURE) -> Path:
    """``tests/fixtures/buffer_state/conv_bn_fp32.onnx``: the train-mode :func:`conv_bn` training graph
    (parameters as initializers) for the CANN suite, which has no PyTorch. Regenerate with
    ``.venv/bin/python tests/training/buffer_models.py``."""
    from ort_ops.training import export_training_graph

    x, y = (torch.from_numpy(a) for a in batches("conv", 1)[0])
    out.parent.mkdir(parents=True, exist_ok=True)
    export_training_graph(conv_bn("train"), (x,), LOSSES["conv"], out, targets=(y,))
    return out


if __name__ == "__main__":
    print(make_fixture())
