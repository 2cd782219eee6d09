"""The project's reference models: small ELU networks for the 8x8 digits data set (10 classes).

- :class:`EluMLP` -- ``64 -> hidden... -> 10`` with ``nn.ELU(alpha, inplace)`` between layers.
- :class:`EluCNN` -- ``conv -> ELU -> max-pool -> conv -> ELU -> max-pool -> linear`` on
  ``[N, 1, 8, 8]`` images.
- :func:`elu_avgpool_cnn` / :func:`elu_adaptive_cnn` -- ELU CNNs with average-pooling heads
  (``nn.AvgPool2d``; ``nn.AdaptiveAvgPool2d(4)`` on 6x6 maps, whose windows overlap), whose
  backward ``ort_ops.training.translations`` supplies.

Factories give the variants the fixtures and tests use; every factory seeds its own
initialisation so the same call always builds the same weights.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

N_FEATURES = 64  # 8x8 digits images, flattened
N_CLASSES = 10
IMAGE_SHAPE = (1, 8, 8)


class EluMLP(nn.Module):
    """Linear layers with ``nn.ELU(alpha, inplace)`` between them (none after the last)."""

    def __init__(
        self,
        in_features: int = N_FEATURES,
        hidden: Sequence[int] = (32, 16),
        out_features: int = N_CLASSES,
        alpha: float = 1.0,
        inplace: bool = False,
    ):
        super().__init__()
        sizes = [in_features, *hidden]
        layers: list[nn.Module] = []
        for a, b in zip(sizes, sizes[1:]):
            layers += [nn.Linear(a, b), nn.ELU(alpha=alpha, inplace=inplace)]
        layers.append(nn.Linear(sizes[-1], out_features))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class EluCNN(nn.Module):
    """A small CNN for ``[N, 1, 8, 8]`` images: two conv + ELU + pool stages, then a linear."""

    def __init__(self, channels: Sequence[int] = (8, 16), alpha: float = 1.0, n_classes: int = N_CLASSES):
        super().__init__()
        c1, c2 = channels
        self.conv1 = nn.Conv2d(1, c1, kernel_size=3, padding=1)
        self.act1 = nn.ELU(alpha=alpha)
        self.pool1 = nn.MaxPool2d(2)  # 8x8 -> 4x4
        self.conv2 = nn.Conv2d(c1, c2, kernel_size=3, padding=1)
        self.act2 = nn.ELU(alpha=alpha)
        self.pool2 = nn.MaxPool2d(2)  # 4x4 -> 2x2
        self.fc = nn.Linear(c2 * 2 * 2, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool1(self.act1(self.conv1(x)))
        x = self.pool2(self.act2(self.conv2(x)))
        return self.fc(torch.flatten(x, 1))


def _seeded(build, seed: int):
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return build()


def elu_mlp(alpha: float = 1.0, inplace: bool = False, hidden: Sequence[int] = (32, 16), seed: int = 0) -> EluMLP:
    """The reference ELU MLP (64 -> 32 -> 16 -> 10)."""
    return _seeded(lambda: EluMLP(hidden=hidden, alpha=alpha, inplace=inplace), seed)


def elu_mlp_alpha(alpha: float = 0.5, seed: int = 0) -> EluMLP:
    """The reference MLP with ``alpha != 1``."""
    return elu_mlp(alpha=alpha, seed=seed)


def elu_mlp_inplace(seed: int = 0) -> EluMLP:
    """The reference MLP with ``nn.ELU(inplace=True)`` (backward reads the ELU output)."""
    return elu_mlp(inplace=True, seed=seed)


def elu_cnn(alpha: float = 1.0, seed: int = 0, channels: Sequence[int] = (8, 16)) -> EluCNN:
    """The reference ELU CNN for 8x8 digits images (``channels``: the two convs' outputs)."""
    return _seeded(lambda: EluCNN(channels=channels, alpha=alpha), seed)


def example_batch(kind: str = "mlp", batch: int = 8, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """A deterministic random ``(inputs, class targets)`` batch shaped like digits data.

    ``kind`` is ``"mlp"`` (``[batch, 64]``) or ``"cnn"`` (``[batch, 1, 8, 8]``); the values are
    standard normal (like standardised pixels), targets are int64 class indices.
    """
    shapes = {"mlp": (batch, N_FEATURES), "cnn": (batch, *IMAGE_SHAPE)}
    if kind not in shapes:
        raise ValueError(f"kind must be one of {sorted(shapes)}, got {kind!r}")
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shapes[kind], generator=g)
    y = torch.randint(0, N_CLASSES, (batch,), generator=g)
    return x, y


def elu_avgpool_cnn(seed: int = 0) -> nn.Sequential:
    """conv -> ELU -> AvgPool2d(2) -> conv -> ELU -> AvgPool2d(3, 2, 1, count_include_pad=False)
    -> linear on ``[N, 1, 8, 8]`` (8x8 -> 4x4 -> 2x2)."""
    return _seeded(lambda: nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ELU(), nn.AvgPool2d(2),
        nn.Conv2d(8, 8, 3, padding=1), nn.ELU(), nn.AvgPool2d(3, 2, 1, count_include_pad=False),
        nn.Flatten(), nn.Linear(8 * 2 * 2, N_CLASSES)), seed)


def elu_adaptive_cnn(seed: int = 0) -> nn.Sequential:
    """conv (no padding, 8x8 -> 6x6) -> ELU -> AdaptiveAvgPool2d(4) (overlapping windows) -> linear."""
    return _seeded(lambda: nn.Sequential(
        nn.Conv2d(1, 8, 3), nn.ELU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(8 * 4 * 4, N_CLASSES)), seed)


def elu_mlp_dropout(seed: int = 0) -> nn.Sequential:
    """64 -> 32 -> 16 -> 10 with ELU and train-mode ``nn.Dropout(0.2)`` / ``nn.Dropout(0.1)``
    after the hidden layers (exported with dropout mask inputs, ``ort_ops.training.dropout_masks``)."""
    return _seeded(lambda: nn.Sequential(
        nn.Linear(N_FEATURES, 32), nn.ELU(), nn.Dropout(0.2), nn.Linear(32, 16), nn.ELU(), nn.Dropout(0.1),
        nn.Linear(16, N_CLASSES)), seed)
