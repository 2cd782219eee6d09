"""Ordinary training setups of users, written the way a PyTorch user writes them, not for this
project: the corpus that export, fusion, training and placement are tested on
(``tests/training/test_user_setups.py``, ``tests/cann/test_user_setups_on_cann.py``) and that
``docs/bring-your-own-model.md``'s table of setups is generated from (``python -m models.user_setups``).

Each :class:`Setup` builds its module with fixed seeds, gives batches (inputs, targets) for any
step, names its loss and lists the ``torch.nn`` modules / functions it exercises. Every setup has
an ELU somewhere (the op this project fuses), and the rest is what such models contain:
normalisation, attention, pooling heads, recurrent layers, embeddings (learned positions too),
residual connections, concatenation, GELU / SiLU / sigmoid / tanh activations, regression losses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

BATCH = 4
N_CLASSES = 3


@dataclass(frozen=True)
class Setup:
    """One user setup: ``build()`` the module (seeded), ``batch(step)`` its (inputs, targets)."""

    name: str
    summary: str
    modules: tuple[str, ...]
    build: Callable[[], nn.Module]
    batch: Callable[[int], tuple[tuple[torch.Tensor, ...], tuple[torch.Tensor, ...]]]
    loss: Callable
    loss_name: str = "F.cross_entropy"
    # why the CANN EP cannot run the setup's training step yet ("": it runs, nodes it lacks on the
    # CPU EP); tests/cann/test_user_setups_on_cann.py checks that placement refuses it with this
    cann_refused: str = ""
    # Adam's eps for this setup's comparison with PyTorch. Attention's key-projection bias has a
    # gradient of exactly 0 in exact arithmetic (softmax is invariant to a per-row constant), so
    # both sides compute rounding noise (~1e-9) there, and Adam with eps = 1e-8 turns noise into
    # full-size steps in unrelated directions: no two implementations agree on it. A larger eps
    # keeps those steps at noise size (lr * noise / eps; the encoder layer's biases start at 0, so
    # its in_proj_bias norm is small and needs 1e-3).
    adam_eps: float = 1e-8
    # the float16 comparison's tolerance where it is not the default (tests/training/test_user_setups.py)
    float16_tolerance: float | None = None


def _seeded(build: Callable[[], nn.Module], seed: int = 0) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            return build()
    return make


def _batches(*shapes, classes: int | None = N_CLASSES, target_shape=None, index_high: int | None = None):
    """A batch function: float inputs of ``shapes`` (or int64 indices below ``index_high``),
    class targets (``classes``) or float targets of ``target_shape``; seeded by the step."""

    def batch(step: int):
        g = torch.Generator().manual_seed(1000 + step)
        if index_high is not None:
            inputs = tuple(torch.randint(0, index_high, s, generator=g) for s in shapes)
        else:
            inputs = tuple(torch.randn(*s, generator=g) for s in shapes)
        if target_shape is not None:
            targets = (torch.randn(*target_shape, generator=g),)
        else:
            targets = (torch.randint(0, classes, (shapes[0][0],), generator=g),)
        return inputs, targets
    return batch


# -- modules -------------------------------------------------------------------------------------
class BasicBlock(nn.Module):
    """ResNet's basic block (conv-BN-ELU-conv-BN + identity, ELU) with a linear head."""

    def __init__(self, c: int = 4):
        super().__init__()
        self.stem = nn.Conv2d(3, c, 3, padding=1, bias=False)
        self.bn0 = nn.BatchNorm2d(c)
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)
        self.act = nn.ELU()
        self.head = nn.Linear(c * 16, N_CLASSES)

    def forward(self, x):
        x = self.act(self.bn0(self.stem(x)))
        y = self.act(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return self.head(self.act(x + y).flatten(1))


class RecurrentHead(nn.Module):
    """A GRU or LSTM over a sequence, ELU on its last state, a linear classifier."""

    def __init__(self, cell: str):
        super().__init__()
        self.rnn = {"gru": nn.GRU, "lstm": nn.LSTM}[cell](6, 12, batch_first=True)
        self.act = nn.ELU()
        self.out = nn.Linear(12, N_CLASSES)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.out(self.act(y[:, -1]))


class GRUCellUnrolled(nn.Module):
    """nn.GRUCell stepped over the sequence in Python (an unrolled recurrence)."""

    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(6, 10)
        self.out = nn.Linear(10, N_CLASSES)

    def forward(self, x):
        h = torch.zeros(x.shape[0], 10, dtype=x.dtype)
        for t in range(x.shape[1]):
            h = self.cell(x[:, t], h)
        return self.out(F.elu(h))


class EmbeddingMLP(nn.Module):
    """Token embeddings, flattened, through an ELU MLP."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 8)
        self.mlp = nn.Sequential(nn.Flatten(), nn.Linear(40, 16), nn.ELU(), nn.Linear(16, N_CLASSES))

    def forward(self, tokens):
        return self.mlp(self.emb(tokens))


class CatChunk(nn.Module):
    """Two branches concatenated, ELU, split in halves and recombined."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 6)
        self.b = nn.Linear(8, 6)
        self.out = nn.Linear(6, N_CLASSES)

    def forward(self, x):
        h = F.elu(torch.cat([self.a(x), self.b(x)], dim=1))
        p, q = h.chunk(2, dim=1)
        return self.out(p * q + p)


class DilatedTCN(nn.Module):
    """A temporal convolution network: dilated nn.Conv1d layers with a residual connection."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(3, 6, 3, dilation=2, padding=2)
        self.c2 = nn.Conv1d(6, 6, 3, dilation=4, padding=4)
        self.out = nn.Linear(6 * 16, N_CLASSES)

    def forward(self, x):
        h = F.elu(self.c1(x))
        h = F.elu(self.c2(h)) + h
        return self.out(h.flatten(1))


class SDPABlock(nn.Module):
    """Attention written with F.scaled_dot_product_attention (optionally causal), ELU feed-forward."""

    def __init__(self, causal: bool = False, d: int = 8, heads: int = 2, dropout: float = 0.0):
        super().__init__()
        self.causal, self.heads, self.dropout = causal, heads, dropout
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ff = nn.Sequential(nn.Linear(d, 16), nn.ELU(), nn.Linear(16, d))

    def forward(self, x):
        n, s, d = x.shape
        q, k, v = self.qkv(x).view(n, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        mask = None
        if self.causal:
            # the user's own causal mask (boolean, True = attend), not is_causal=True
            mask = torch.ones(s, s, dtype=torch.bool).tril()
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=self.dropout if self.training else 0.0)
        x = x + self.proj(a.transpose(1, 2).reshape(n, s, d))
        return x + self.ff(x)


class GeluMLP(nn.Module):
    """A transformer-style feed-forward: nn.GELU (exact, or approximate='tanh'), then ELU."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.fc1 = nn.Linear(5, 8)
        self.act = nn.GELU(approximate=approximate)
        self.fc2 = nn.Linear(8, 8)
        self.out = nn.Linear(8, N_CLASSES)

    def forward(self, x):
        return self.out(F.elu(self.fc2(self.act(self.fc1(x)))))


class SwiGLU(nn.Module):
    """A gated feed-forward (SwiGLU: nn.SiLU of a gate times an up projection), ELU, and a
    torch.sigmoid gate on the residual."""

    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(5, 8)
        self.up = nn.Linear(5, 8)
        self.act = nn.SiLU()
        self.mid = nn.Linear(8, 8)
        self.out = nn.Linear(8, N_CLASSES)

    def forward(self, x):
        h = self.act(self.gate(x)) * self.up(x)
        return self.out(F.elu(self.mid(h)) * torch.sigmoid(h))


class LearnedPositions(nn.Module):
    """Token embeddings plus a learned positional embedding indexed with torch.arange, ELU MLP, mean
    over the sequence."""

    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(20, 8)
        self.pos = nn.Embedding(16, 8)
        self.mlp = nn.Sequential(nn.Linear(8, 8), nn.ELU())
        self.out = nn.Linear(8, N_CLASSES)

    def forward(self, tokens):
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        return self.out(self.mlp(self.tok(tokens) + self.pos(positions)).mean(1))


def _encoder_layer() -> nn.Module:
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, activation=F.elu, batch_first=True)
    # attention-weight dropout inside nn.MultiheadAttention does not export (docs/bring-your-own-
    # model.md, Attention); the layer's three nn.Dropout layers do
    layer.self_attn.dropout = 0.0
    return layer


def _mse(out, target):
    return F.mse_loss(out, target)


def _label_smoothing(out, target):
    return F.cross_entropy(out, target, label_smoothing=0.1)


CLASS_WEIGHTS = (1.0, 2.5, 0.5)  # an imbalanced data set's inverse class frequencies


def _class_weighted(out, target):
    return F.cross_entropy(out, target, weight=torch.tensor(CLASS_WEIGHTS, dtype=out.dtype))


def _huber(out, target):
    return F.smooth_l1_loss(out, target)


def _multilabel(out, target):
    """Multi-label classification: a sigmoid per class, targets in {0, 1}."""
    return F.binary_cross_entropy_with_logits(out, (target > 0).to(out.dtype))


def _focal(out, target, gamma: float = 2.0):
    """The focal loss (Lin et al. 2017): per-row cross-entropy, down-weighted where confident."""
    ce = F.cross_entropy(out, target, reduction="none")
    return ((1.0 - torch.exp(-ce)) ** gamma * ce).mean()


# -- the corpus ----------------------------------------------------------------------------------
SETUPS: tuple[Setup, ...] = (
    Setup("resnet_block_bn2d", "ResNet basic block with BatchNorm2d (train mode, running stats)",
          ("nn.Conv2d", "nn.BatchNorm2d", "nn.ELU", "residual add", "nn.Linear"),
          _seeded(BasicBlock), _batches((BATCH, 3, 4, 4)), F.cross_entropy,
          # float16: three BatchNorms over 64 values per channel divide each step's float16
          # rounding differences by the batch std: bn2.weight drifts 6.8e-3 normwise in 20 steps
          float16_tolerance=1e-2),
    Setup("mlp_bn1d_mse", "MLP with BatchNorm1d, MSE regression",
          ("nn.Linear", "nn.BatchNorm1d", "nn.ELU", "F.mse_loss"),
          # (no bias before BatchNorm, as usual: its exact gradient is 0, and Adam would step on noise)
          _seeded(lambda: nn.Sequential(nn.Linear(5, 16, bias=False), nn.BatchNorm1d(16), nn.ELU(),
                                        nn.Linear(16, 2))),
          _batches((BATCH, 5), target_shape=(BATCH, 2)), _mse, "F.mse_loss"),
    Setup("transformer_encoder",
          "nn.TransformerEncoderLayer (nn.MultiheadAttention, LayerNorm, ELU feed-forward, dropout 0.1)",
          ("nn.TransformerEncoderLayer", "nn.MultiheadAttention", "nn.LayerNorm", "F.elu", "nn.Dropout"),
          _seeded(_encoder_layer), _batches((2, 5, 8), target_shape=(2, 5, 8)), _mse, "F.mse_loss",
          adam_eps=1e-3),
    Setup("sdpa", "attention written with F.scaled_dot_product_attention (attention dropout 0.1), ELU feed-forward",
          ("F.scaled_dot_product_attention (dropout_p)", "nn.Linear", "nn.ELU", "residual add"),
          _seeded(lambda: SDPABlock(dropout=0.1)), _batches((2, 5, 8), target_shape=(2, 5, 8)), _mse, "F.mse_loss",
          adam_eps=1e-4),
    Setup("causal_attention", "causal attention with a boolean mask through F.scaled_dot_product_attention",
          ("F.scaled_dot_product_attention (attn_mask)", "nn.Linear", "nn.ELU"),
          _seeded(lambda: SDPABlock(causal=True)), _batches((2, 5, 8), target_shape=(2, 5, 8)), _mse, "F.mse_loss",
          adam_eps=1e-4),
    Setup("avgpool_head", "convolution, ELU, nn.AvgPool2d head",
          ("nn.Conv2d", "nn.ELU", "nn.AvgPool2d", "nn.Linear"),
          _seeded(lambda: nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ELU(), nn.AvgPool2d(2), nn.Flatten(),
                                        nn.Linear(64, N_CLASSES))),
          _batches((BATCH, 3, 8, 8)), F.cross_entropy),
    Setup("adaptive_avgpool_head", "convolution, ELU, nn.AdaptiveAvgPool2d(4) head on 7x7 maps",
          ("nn.Conv2d", "nn.ELU", "nn.AdaptiveAvgPool2d", "nn.Linear"),
          _seeded(lambda: nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ELU(), nn.AdaptiveAvgPool2d(4),
                                        nn.Flatten(), nn.Linear(64, N_CLASSES))),
          _batches((BATCH, 3, 7, 7)), F.cross_entropy),
    Setup("depthwise_conv", "depthwise-separable convolution (groups = channels, then 1x1)",
          ("nn.Conv2d (groups)", "nn.ELU", "nn.Linear"),
          _seeded(lambda: nn.Sequential(nn.Conv2d(4, 4, 3, padding=1, groups=4), nn.ELU(), nn.Conv2d(4, 8, 1),
                                        nn.ELU(), nn.Flatten(), nn.Linear(8 * 36, N_CLASSES))),
          _batches((BATCH, 4, 6, 6)), F.cross_entropy),
    Setup("gru", "nn.GRU over a sequence, ELU, linear classifier", ("nn.GRU", "nn.ELU", "nn.Linear"),
          _seeded(lambda: RecurrentHead("gru")), _batches((BATCH, 5, 6)), F.cross_entropy),
    Setup("lstm", "nn.LSTM over a sequence, ELU, linear classifier", ("nn.LSTM", "nn.ELU", "nn.Linear"),
          _seeded(lambda: RecurrentHead("lstm")), _batches((BATCH, 5, 6)), F.cross_entropy),
    Setup("grucell_unrolled", "nn.GRUCell stepped in Python over the sequence", ("nn.GRUCell", "F.elu", "nn.Linear"),
          _seeded(GRUCellUnrolled), _batches((BATCH, 4, 6)), F.cross_entropy),
    Setup("embedding_mlp", "nn.Embedding, flattened, ELU MLP", ("nn.Embedding", "nn.ELU", "nn.Linear"),
          _seeded(EmbeddingMLP), _batches((BATCH, 5), index_high=20), F.cross_entropy),
    Setup("cat_chunk", "two branches concatenated, split with chunk", ("torch.cat", "Tensor.chunk", "F.elu"),
          _seeded(CatChunk), _batches((BATCH, 8)), F.cross_entropy),
    Setup("dilated_tcn", "dilated nn.Conv1d layers with a residual connection", ("nn.Conv1d (dilation)", "F.elu"),
          _seeded(DilatedTCN), _batches((BATCH, 3, 16)), F.cross_entropy),
    Setup("label_smoothing", "ELU MLP with label-smoothed cross-entropy",
          ("nn.Linear", "nn.ELU", "F.cross_entropy(label_smoothing)"),
          _seeded(lambda: nn.Sequential(nn.Linear(5, 16), nn.ELU(), nn.Linear(16, N_CLASSES))),
          _batches((BATCH, 5)), _label_smoothing, "F.cross_entropy(label_smoothing=0.1)"),
    Setup("gelu_mlp", "feed-forward with nn.GELU (exact, erf-based), then ELU",
          ("nn.Linear", "nn.GELU", "F.elu"), _seeded(GeluMLP), _batches((BATCH, 5)), F.cross_entropy),
    Setup("gelu_tanh_mlp", "feed-forward with nn.GELU(approximate='tanh'), then ELU",
          ("nn.Linear", "nn.GELU(approximate='tanh')", "F.elu"), _seeded(lambda: GeluMLP("tanh")),
          _batches((BATCH, 5)), F.cross_entropy),
    Setup("swiglu", "gated feed-forward: nn.SiLU gate times an up projection, ELU, a torch.sigmoid gate",
          ("nn.Linear", "nn.SiLU", "torch.sigmoid", "F.elu"), _seeded(SwiGLU), _batches((BATCH, 5)), F.cross_entropy),
    Setup("tanh_mlp", "MLP with nn.Tanh and nn.ELU", ("nn.Linear", "nn.Tanh", "nn.ELU"),
          _seeded(lambda: nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 8), nn.ELU(),
                                        nn.Linear(8, N_CLASSES))),
          _batches((BATCH, 5)), F.cross_entropy),
    Setup("learned_positions", "token embeddings plus a learned positional embedding indexed with torch.arange",
          ("nn.Embedding", "torch.arange", "nn.ELU", "nn.Linear", "Tensor.mean"), _seeded(LearnedPositions),
          _batches((BATCH, 5), index_high=20), F.cross_entropy),
    Setup("class_weights", "ELU MLP with a class-weighted cross-entropy (imbalanced classes)",
          ("nn.Linear", "nn.ELU", "F.cross_entropy(weight)"),
          _seeded(lambda: nn.Sequential(nn.Linear(5, 16), nn.ELU(), nn.Linear(16, N_CLASSES))),
          _batches((BATCH, 5)), _class_weighted, "F.cross_entropy(weight=...)"),
    Setup("focal_loss", "ELU MLP with the focal loss over a per-row cross-entropy",
          ("nn.Linear", "nn.ELU", "F.cross_entropy(reduction='none')", "torch.exp", "Tensor.pow"),
          _seeded(lambda: nn.Sequential(nn.Linear(5, 16), nn.ELU(), nn.Linear(16, N_CLASSES))),
          _batches((BATCH, 5)), _focal, "focal loss (F.cross_entropy(reduction='none'))"),
    Setup("groupnorm_cnn", "convolution, nn.GroupNorm (exported as InstanceNormalization), ELU, linear head",
          ("nn.Conv2d", "nn.GroupNorm", "nn.ELU", "nn.Linear"),
          # (no bias before the normalisation, as with BatchNorm: GroupNorm removes most of it, and in float16
          # its small gradient is mostly rounding)
          _seeded(lambda: nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, bias=False), nn.GroupNorm(2, 4), nn.ELU(),
                                        nn.Flatten(), nn.Linear(64, N_CLASSES))),
          _batches((BATCH, 3, 4, 4)), F.cross_entropy),
    Setup("leaky_relu_huber", "MLP with nn.LeakyReLU(0.1) and nn.ELU, Huber (smooth L1) regression",
          ("nn.Linear", "nn.LeakyReLU", "nn.ELU", "F.smooth_l1_loss"),
          _seeded(lambda: nn.Sequential(nn.Linear(6, 12), nn.LeakyReLU(0.1), nn.Linear(12, 12), nn.ELU(),
                                        nn.Linear(12, 3))),
          _batches((BATCH, 6), target_shape=(BATCH, 3)), _huber, "F.smooth_l1_loss"),
    Setup("bce_multilabel", "ELU MLP, multi-label targets with F.binary_cross_entropy_with_logits",
          ("nn.Linear", "nn.ELU", "F.binary_cross_entropy_with_logits"),
          _seeded(lambda: nn.Sequential(nn.Linear(6, 12), nn.ELU(), nn.Linear(12, N_CLASSES))),
          _batches((BATCH, 6), target_shape=(BATCH, N_CLASSES)), _multilabel, "F.binary_cross_entropy_with_logits"),
)

BY_NAME = {s.name: s for s in SETUPS}

MARKDOWN_BEGIN = ("<!-- user-setups: begin (generated: python -m models.user_setups; "
                  "tests/training/test_user_setups.py checks it) -->")
MARKDOWN_END = "<!-- user-setups: end -->"


def markdown() -> str:
    """docs/bring-your-own-model.md's table of the tested setups, between its markers."""
    rows = [MARKDOWN_BEGIN,
            "| setup | what | modules and functions | loss | CANN EP |",
            "|---|---|---|---|---|"]
    for s in SETUPS:
        cann = "refused: 1-D Conv (EP defect)" if s.cann_refused else "runs"
        rows.append(f"| `{s.name}` | {s.summary} | {', '.join(f'`{m}`' for m in s.modules)} | `{s.loss_name}` "
                    f"| {cann} |")
    rows.append(MARKDOWN_END)
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
