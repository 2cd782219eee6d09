"""Small attention models with an ELU, as users write them, for the training-graph tests.

Each :class:`Setup` builds a freshly seeded module, and two fixed batches of inputs and targets
(:meth:`Setup.batches` repeats them):

- ``encoder``: ``nn.TransformerEncoderLayer(activation=nn.ELU(0.7), dropout=0.0,
  batch_first=True)`` (``nn.MultiheadAttention(need_weights=False)`` inside), mean-pooled into
  a linear classifier, cross-entropy.
- ``sdpa``: ``F.scaled_dot_product_attention`` called directly with a float attention bias
  (broadcast ``[1, H, L, L]``), ``scale`` and grouped-query heads (``enable_gqa``), ELU
  feed-forward, MSE.
- ``causal``: sequence-first ``nn.MultiheadAttention`` with a causal boolean ``attn_mask``
  and a ``key_padding_mask`` (padded tail keys), ELU feed-forward, MSE.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

D_MODEL, N_HEADS, SEQ, BATCH = 16, 4, 6, 4
ALPHA = 0.7  # non-default ELU alpha: the fused EluGrad must carry it


class EncoderClassifier(nn.Module):
    """TransformerEncoderLayer (ELU feed-forward, LayerNorm, no dropout) -> mean -> Linear."""

    def __init__(self, n_classes: int = 5):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(D_MODEL, N_HEADS, dim_feedforward=32, dropout=0.0,
                                                activation=nn.ELU(ALPHA), batch_first=True)
        self.head = nn.Linear(D_MODEL, n_classes)

    def forward(self, x):
        return self.head(self.layer(x).mean(1))


class DirectSDPA(nn.Module):
    """Query/key/value projections, SDPA with a fixed float bias, scale and GQA, ELU FF."""

    def __init__(self, q_heads: int = 4, kv_heads: int = 2, head_dim: int = 4, scale: float = 0.3):
        super().__init__()
        self.q_heads, self.kv_heads, self.head_dim, self.scale = q_heads, kv_heads, head_dim, scale
        self.q = nn.Linear(D_MODEL, q_heads * head_dim)
        self.kv = nn.Linear(D_MODEL, 2 * kv_heads * head_dim)
        self.ff = nn.Sequential(nn.Linear(q_heads * head_dim, 24), nn.ELU(ALPHA), nn.Linear(24, D_MODEL))
        bias = torch.linspace(-1.0, 1.0, q_heads * SEQ * SEQ).reshape(1, q_heads, SEQ, SEQ)
        self.register_buffer("bias", bias)

    def forward(self, x):
        n, length, _ = x.shape
        q = self.q(x).reshape(n, length, self.q_heads, self.head_dim).transpose(1, 2)
        k, v = self.kv(x).reshape(n, length, 2, self.kv_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=self.bias, scale=self.scale,
                                             enable_gqa=True)
        return self.ff(out.transpose(1, 2).reshape(n, length, -1))


class CausalMaskedAttention(nn.Module):
    """Sequence-first MultiheadAttention, causal mask + key padding mask, ELU feed-forward."""

    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(D_MODEL, N_HEADS)
        self.ff = nn.Sequential(nn.Linear(D_MODEL, 24), nn.ELU(ALPHA), nn.Linear(24, D_MODEL))
        self.register_buffer("causal", torch.ones(SEQ, SEQ, dtype=torch.bool).triu(1))  # True: masked
        padding = torch.zeros(BATCH, SEQ, dtype=torch.bool)
        padding[1, -2:] = True  # sample 1 has two padded tail positions
        self.register_buffer("padding", padding)

    def forward(self, x):
        out, _ = self.attn(x, x, x, attn_mask=self.causal, key_padding_mask=self.padding,
                           need_weights=False, is_causal=True)
        return self.ff(out)


@dataclass(frozen=True)
class Setup:
    """A model factory (seeded) and ``n`` fixed (inputs, targets) batches."""

    name: str
    build: Callable[[], nn.Module]
    loss_fn: Callable
    batch: Callable[[torch.Generator], tuple[torch.Tensor, torch.Tensor]]

    def module(self) -> nn.Module:
        torch.manual_seed(7)
        return self.build()

    def batches(self, n: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Two fixed batches in turn (the model can fit them, so the loss falls)."""
        gen = torch.Generator().manual_seed(3)
        pair = [self.batch(gen) for _ in range(2)]
        return [pair[i % 2] for i in range(n)]


def _tokens(gen, shape=(BATCH, SEQ, D_MODEL)):
    return torch.randn(*shape, generator=gen)


SETUPS = {
    "encoder": Setup("encoder", EncoderClassifier, F.cross_entropy,
                     lambda g: (_tokens(g), torch.randint(0, 5, (BATCH,), generator=g))),
    "sdpa": Setup("sdpa", DirectSDPA, F.mse_loss, lambda g: (_tokens(g), _tokens(g))),
    "causal": Setup("causal", CausalMaskedAttention, F.mse_loss,
                    lambda g: (_tokens(g, (SEQ, BATCH, D_MODEL)), _tokens(g, (SEQ, BATCH, D_MODEL)))),
}
