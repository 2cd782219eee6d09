"""A corpus of small real PyTorch training setups, and PyTorch's own count of ELU backwards.

Every setup is a function returning ``(module, inputs, loss_fn, targets)`` (deterministic:
each seeds its own weights and data), registered in :data:`SETUPS` with a :class:`Setup`
record (dtype for tolerances, whether fusion is required, whether the graph is random...).
The architectures are ones the project's zoo does not use: sequence models on ``[B, T, C]``,
residual LayerNorm + Dropout blocks, Conv1d, conv nets with average pooling and with
overlapping/padded max pooling, shared-input ELU heads, attention-style ``elu + 1`` feature maps,
several alphas on one tensor, fp32 ELU inside fp16 models, frozen layers, mixed precision,
bfloat16, batch size 1, cross-entropy summed or label-smoothed, and the negative controls SELU / CELU.

:func:`expected_elu_backward` derives how many ``ai.ortops::EluGrad`` nodes the fused graph
should contain *independently of the rewrite*: it runs the setup in eager PyTorch and records,
with a :class:`~torch.utils._python_dispatch.TorchDispatchMode`, every
``aten.elu_backward.default`` that ``loss.backward()`` executes -- with its ``alpha``
(``negcoef``), ``scale``, ``input_scale`` and ``is_result``. SELU and CELU dispatch to the
same kernel with ``scale`` / ``input_scale`` != 1; only calls with
``scale == input_scale == 1`` are ELU's gradient (:func:`fusable`). :func:`expected_fusions`
does the same for the cross-entropy and max-pool backwards ``rewrite.fuse_training`` fuses.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

ELU_BACKWARD = torch.ops.aten.elu_backward.default


@dataclass(frozen=True)
class Setup:
    """One corpus entry; ``build()`` returns ``(module, inputs, loss_fn, targets)``."""

    name: str
    build: Callable[[], tuple]
    dtype: torch.dtype = torch.float32  # the lowest precision in the graph: picks tolerances
    description: str = ""
    negative: bool = False  # a negative control: no ELU backward may be fused
    fusion_optional: bool = False  # fusing is allowed but not required (CELU(alpha=1))
    random: bool = False  # random ops in training mode (Dropout): no eager comparison


SETUPS: dict[str, Setup] = {}


def setup(dtype: torch.dtype = torch.float32, **flags):
    """Register the decorated builder in :data:`SETUPS` under its function name."""

    def register(build):
        SETUPS[build.__name__] = Setup(build.__name__, build, dtype, (build.__doc__ or "").strip(), **flags)
        return build

    return register


def _seeded(seed: int, build):
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return build()


def _randn(seed: int, *shape, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def _classes(seed: int, n: int, k: int):
    return torch.randint(0, k, (n,), generator=torch.Generator().manual_seed(seed))


def ce_float(logits, target):
    """Cross-entropy computed in float32 (for fp16 / bf16 models)."""
    return F.cross_entropy(logits.float(), target)


def mse_float(out, target):
    return F.mse_loss(out.float(), target)


B, T, C, H, K = 4, 5, 6, 8, 3


# --- 1-3: sequence models on [B, T, C] -------------------------------------------------------


class SeqElu(nn.Module):
    """Linear + ELU on ``[B, T, C]``, mean over T, linear classifier."""

    def __init__(self, alpha: float = 1.0):
        super().__init__()
        self.proj = nn.Linear(C, H)
        self.act = nn.ELU(alpha)
        self.head = nn.Linear(H, K)

    def forward(self, x):
        return self.head(self.act(self.proj(x)).mean(dim=1))


@setup()
def seq_elu():
    """Linear + nn.ELU on [B, T, C] activations, mean-pooled classifier (fp32)."""
    module = _seeded(10, lambda: SeqElu(alpha=1.0))
    return module, (_randn(11, B, T, C),), F.cross_entropy, (_classes(12, B, K),)


class SeqEluInplace(nn.Module):
    """Two Linear layers on ``[B, T, C]``: ``nn.ELU(inplace=True)`` then ``F.elu_``."""

    def __init__(self, alpha1: float = 1.0, alpha2: float = 0.7):
        super().__init__()
        self.proj1 = nn.Linear(C, H)
        self.act1 = nn.ELU(alpha1, inplace=True)
        self.proj2 = nn.Linear(H, H)
        self.alpha2 = alpha2
        self.head = nn.Linear(H, K)

    def forward(self, x):
        h = self.act1(self.proj1(x))
        h = F.elu_(self.proj2(h), self.alpha2)
        return self.head(h.mean(dim=1))


@setup()
def seq_elu_inplace():
    """nn.ELU(inplace=True) and F.elu_(alpha 0.7) after Linears on [B, T, C] (fp32)."""
    module = _seeded(20, SeqEluInplace)
    return module, (_randn(21, B, T, C),), F.cross_entropy, (_classes(22, B, K),)


@setup(dtype=torch.float16)
def seq_elu_inplace_fp16():
    """The in-place sequence model in float16 (module.half(), fp16 input, fp32 loss)."""
    module = _seeded(20, SeqEluInplace).half()
    return module, (_randn(21, B, T, C, dtype=torch.float16),), ce_float, (_classes(22, B, K),)


# --- 4: residual block with LayerNorm, ELU, Dropout (training mode) --------------------------


class ResidualBlock(nn.Module):
    """``x + Linear(Dropout(ELU(Linear(LayerNorm(x)))))`` on ``[B, T, C]``, then a classifier."""

    def __init__(self, p: float = 0.25, alpha: float = 0.9):
        super().__init__()
        self.norm = nn.LayerNorm(C)
        self.up = nn.Linear(C, H)
        self.act = nn.ELU(alpha)
        self.drop = nn.Dropout(p)
        self.down = nn.Linear(H, C)
        self.head = nn.Linear(C, K)

    def forward(self, x):
        x = x + self.down(self.drop(self.act(self.up(self.norm(x)))))
        return self.head(x.mean(dim=1))


@setup(random=True)
def residual_ln_dropout():
    """Residual block LayerNorm -> Linear -> ELU(0.9) -> Dropout(0.25, TRAINING) -> Linear (fp32)."""
    module = _seeded(30, ResidualBlock).train()
    return module, (_randn(31, B, T, C),), F.cross_entropy, (_classes(32, B, K),)


# --- 5-6: convolutions ------------------------------------------------------------------------


class Conv1dElu(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(C, H, 3, padding=1)
        self.act1 = nn.ELU(0.5)
        self.conv2 = nn.Conv1d(H, H, 3, stride=2)
        self.act2 = nn.ELU()
        self.head = nn.Linear(H, K)

    def forward(self, x):
        h = self.act2(self.conv2(self.act1(self.conv1(x))))
        return self.head(h.mean(dim=2))


@setup()
def conv1d_elu():
    """Conv1d -> ELU(0.5) -> Conv1d(stride 2) -> ELU on [B, C, L], mean over L (fp32)."""
    module = _seeded(40, Conv1dElu)
    return module, (_randn(41, B, C, 9),), F.cross_entropy, (_classes(42, B, K),)


class Conv2dAvgPool(nn.Module):
    """Conv2d + ELU, ``nn.AdaptiveAvgPool2d(1)`` (global average pooling, which the exporter
    lowers to a mean; ``nn.AvgPool2d`` does not export: torch 2.13's exporter has no
    translation for ``aten.avg_pool2d_backward``), Conv2d + ELU, flatten, linear."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(2, 4, 3, padding=1)
        self.act1 = nn.ELU(1.3)
        self.conv2 = nn.Conv2d(4, 4, 3, stride=2)
        self.act2 = nn.ELU()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(4 * 2 * 2 + 4, K)

    def forward(self, x):
        h = self.act1(self.conv1(x))  # [B, 4, 6, 6]
        pooled = torch.flatten(self.pool(h), 1)  # [B, 4]
        g = self.act2(self.conv2(h))  # [B, 4, 2, 2]
        return self.fc(torch.cat([torch.flatten(g, 1), pooled], dim=1))


@setup()
def conv2d_avgpool():
    """Conv2d -> ELU(1.3) -> AdaptiveAvgPool2d(1) + Conv2d(stride 2) -> ELU -> flatten (fp32)."""
    module = _seeded(50, Conv2dAvgPool)
    return module, (_randn(51, B, 2, 6, 6),), F.cross_entropy, (_classes(52, B, K),)


# --- 7: two ELUs on one tensor ----------------------------------------------------------------


class TwoHeads(nn.Module):
    """``h1 = elu(t); h2 = elu(t); out = h1 * w1 + h2 * w2`` (the same ELU computed twice)."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(C, H)
        self.w1 = nn.Parameter(torch.randn(H))
        self.w2 = nn.Parameter(torch.randn(H))
        self.head = nn.Linear(H, K)

    def forward(self, x):
        t = self.proj(x)
        h1 = F.elu(t)
        h2 = F.elu(t)
        return self.head(h1 * self.w1 + h2 * self.w2)


@setup()
def two_elu_heads():
    """F.elu(t) twice on the same tensor, combined with two weight vectors (fp32)."""
    module = _seeded(60, TwoHeads)
    return module, (_randn(61, B, C),), F.cross_entropy, (_classes(62, B, K),)


class LinearAttention(nn.Module):
    """Linear attention with the ``elu(x) + 1`` feature map, applied twice to one projection."""

    def __init__(self):
        super().__init__()
        self.qk = nn.Linear(C, H)
        self.v = nn.Linear(C, H)
        self.out = nn.Linear(H, K)

    def forward(self, x):  # [B, T, C]
        qk = self.qk(x)
        q = F.elu(qk) + 1
        k = F.elu(qk) + 1
        v = self.v(x)
        kv = torch.einsum("bth,btd->bhd", k, v)
        norm = torch.einsum("bth,bh->bt", q, k.sum(dim=1)).unsqueeze(-1)
        y = torch.einsum("bth,bhd->btd", q, kv) / norm
        return self.out(y.mean(dim=1))


@setup()
def linear_attention():
    """Attention-style feature map F.elu(qk) + 1 used twice (q and k) on [B, T, C] (fp32)."""
    module = _seeded(70, LinearAttention)
    return module, (_randn(71, B, T, C),), F.cross_entropy, (_classes(72, B, K),)


# --- 8: several alphas on one input -----------------------------------------------------------


class MultiAlpha(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(C, H)
        self.a = nn.Linear(H, K)
        self.b = nn.Linear(H, K)
        self.c = nn.Linear(H, K)

    def forward(self, x):
        t = self.proj(x)
        return self.a(F.elu(t, 0.5)) + self.b(F.elu(t, 2.0)) + self.c(F.elu(t))


@setup()
def multi_alpha():
    """F.elu(t, 0.5), F.elu(t, 2.0) and F.elu(t) on the same tensor (fp32)."""
    module = _seeded(80, MultiAlpha)
    return module, (_randn(81, B, C),), F.cross_entropy, (_classes(82, B, K),)


# --- 9: fp32 ELU inside an fp16 model ---------------------------------------------------------


class Fp32EluInFp16(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(C, H)
        self.mid = nn.Linear(H, H)
        self.head = nn.Linear(H, K)

    def forward(self, x):
        z = self.proj(x)
        h = F.elu(z.float()).to(torch.float16)  # the ELU in float32, the rest in float16
        h = F.elu(self.mid(h).float(), 0.4).to(torch.float16)
        return self.head(h)


@setup(dtype=torch.float16)
def fp32_elu_in_fp16():
    """fp16 model whose ELUs run in fp32: F.elu(z.float()).to(float16), alphas 1 and 0.4."""
    module = _seeded(90, Fp32EluInFp16).half()
    return module, (_randn(91, B, C, dtype=torch.float16),), ce_float, (_classes(92, B, K),)


# --- 10: frozen layers ------------------------------------------------------------------------


class Frozen(nn.Module):
    """frozen Linear -> ELU(0.3) -> Linear -> ELU(0.6) -> frozen Linear -> ELU(1.5) -> Linear.

    No gradient reaches ELU(0.3) (everything before it is frozen): PyTorch runs no backward for it.
    """

    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(C, H)
        self.l2 = nn.Linear(H, H)
        self.l3 = nn.Linear(H, H)
        self.l4 = nn.Linear(H, K)
        for p in (*self.l1.parameters(), *self.l3.parameters()):
            p.requires_grad_(False)

    def forward(self, x):
        h = F.elu(self.l1(x), 0.3)
        h = F.elu(self.l2(h), 0.6)
        h = F.elu(self.l3(h), 1.5)
        return self.l4(h)


@setup()
def frozen_layers():
    """Frozen Linears (requires_grad=False) with ELUs before and after them (fp32)."""
    module = _seeded(100, Frozen)
    return module, (_randn(101, B, T, C),), lambda o, t: F.mse_loss(o, t), (_randn(102, B, T, K),)


# --- 11: mixed precision and bfloat16 ---------------------------------------------------------


class MixedPrecision(nn.Module):
    """fp16 Linear + ELU(0.8), then ``.float()`` into an fp32 Linear + ELU(inplace) + head."""

    def __init__(self):
        super().__init__()
        self.low = nn.Linear(C, H).half()
        self.high = nn.Linear(H, H)
        self.head = nn.Linear(H, K)

    def forward(self, x):
        h = F.elu(self.low(x), 0.8).float()
        h = F.elu(self.high(h), inplace=True)
        return self.head(h)


@setup(dtype=torch.float16)
def mixed_fp16_fp32():
    """fp16 Linear + ELU(0.8) feeding fp32 Linear + ELU(inplace) on [B, T, C]."""
    module = _seeded(110, MixedPrecision)
    return module, (_randn(111, B, T, C, dtype=torch.float16),), ce_pooled, (_classes(112, B, K),)


def ce_pooled(logits, target):
    """Cross-entropy of the ``[B, T, K]`` logits averaged over T."""
    return F.cross_entropy(logits.mean(dim=1), target)


@setup(dtype=torch.bfloat16)
def seq_elu_bf16():
    """The [B, T, C] sequence model with ELU(0.6) in bfloat16 (module.to(bfloat16), fp32 loss)."""
    module = _seeded(120, lambda: SeqElu(alpha=0.6)).to(torch.bfloat16)
    return module, (_randn(121, B, T, C, dtype=torch.bfloat16),), ce_float, (_classes(122, B, K),)


# --- 12: batch size 1 -------------------------------------------------------------------------


class TinyMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(C, H)
        self.l2 = nn.Linear(H, H)
        self.l3 = nn.Linear(H, K)

    def forward(self, x):
        h = F.elu(self.l1(x), 1.7)
        h = F.elu(self.l2(h), inplace=True)
        return self.l3(h)


@setup()
def batch1():
    """Batch size 1: [1, C] through Linear -> ELU(1.7) -> Linear -> ELU(inplace) -> Linear (fp32)."""
    module = _seeded(130, TinyMLP)
    return module, (_randn(131, 1, C),), F.cross_entropy, (_classes(132, 1, K),)


# --- 13: negative controls --------------------------------------------------------------------


class Act(nn.Module):
    def __init__(self, act: nn.Module):
        super().__init__()
        self.l1 = nn.Linear(C, H)
        self.act = act
        self.l2 = nn.Linear(H, K)

    def forward(self, x):
        return self.l2(self.act(self.l1(x)))


@setup(negative=True)
def selu():
    """Negative control: nn.SELU (elu_backward with scale != 1): must not be fused."""
    module = _seeded(140, lambda: Act(nn.SELU()))
    return module, (_randn(141, B, C),), F.cross_entropy, (_classes(142, B, K),)


@setup(negative=True)
def celu_half():
    """Negative control: nn.CELU(alpha=0.5) (input_scale 2): must not be fused."""
    module = _seeded(150, lambda: Act(nn.CELU(alpha=0.5)))
    return module, (_randn(151, B, C),), F.cross_entropy, (_classes(152, B, K),)


@setup(fusion_optional=True)
def celu_one():
    """nn.CELU(alpha=1) == ELU(1): fusing it is allowed, not required."""
    module = _seeded(160, lambda: Act(nn.CELU(alpha=1.0)))
    return module, (_randn(161, B, C),), F.cross_entropy, (_classes(162, B, K),)


# --- 14: max pooling and cross-entropy variants ----------------------------------------------


class ConvMaxPool(nn.Module):
    """Conv2d + ELU + ``nn.MaxPool2d(3, stride=2, padding=1)`` (overlapping, padded windows), then
    Conv2d + ELU + ``nn.MaxPool2d(2)``, flatten, linear."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(2, 4, 3, padding=1)
        self.pool1 = nn.MaxPool2d(3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1)
        self.pool2 = nn.MaxPool2d(2)
        self.fc = nn.Linear(4 * 2 * 2, K)

    def forward(self, x):
        h = self.pool1(F.elu(self.conv1(x)))  # [B, 4, 4, 4]
        h = self.pool2(F.elu(self.conv2(h), 0.8))  # [B, 4, 2, 2]
        return self.fc(torch.flatten(h, 1))


def ce_sum(logits, target):
    return F.cross_entropy(logits, target, reduction="sum")


@setup()
def conv2d_maxpool():
    """Conv2d -> ELU -> MaxPool2d(3, 2, padding 1) -> Conv2d -> ELU(0.8) -> MaxPool2d(2), summed CE (fp32)."""
    module = _seeded(170, ConvMaxPool)
    return module, (_randn(171, B, 2, 7, 7),), ce_sum, (_classes(172, B, K),)


def ce_smoothed(logits, target):
    return F.cross_entropy(logits, target, label_smoothing=0.1)


@setup()
def label_smoothing():
    """The batch-1 MLP's layers on [B, C] with F.cross_entropy(label_smoothing=0.1): not a plain CE (fp32)."""
    module = _seeded(180, TinyMLP)
    return module, (_randn(181, B, C),), ce_smoothed, (_classes(182, B, K),)


# --- PyTorch's own count ----------------------------------------------------------------------


class _RecordEluBackward(TorchDispatchMode):
    """Records every ``aten.elu_backward.default`` dispatched while active."""

    def __init__(self):
        super().__init__()
        self.calls: list[dict] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is ELU_BACKWARD:
            names = ("grad_output", "alpha", "scale", "input_scale", "is_result", "self_or_result")
            bound = dict(zip(names, args)) | kwargs
            self.calls.append({
                "alpha": float(bound["alpha"]),
                "is_result": bool(bound["is_result"]),
                "scale": float(bound["scale"]),
                "input_scale": float(bound["input_scale"]),
                "dtype": bound["grad_output"].dtype,
            })
        return func(*args, **kwargs)


def expected_elu_backward(s: Setup | str) -> list[dict]:
    """Every ``aten.elu_backward`` PyTorch runs in ``loss.backward()`` for the setup, in order.

    Each entry: ``alpha`` (negcoef), ``is_result`` (the backward reads the ELU output: in-place
    ELU), ``scale``, ``input_scale`` and ``dtype``. Runs on a fresh build (a copy of the module,
    cloned inputs); the forward runs outside the recording mode, only the backward inside.
    """
    s = SETUPS[s] if isinstance(s, str) else s
    module, inputs, loss_fn, targets = s.build()
    module = copy.deepcopy(module)
    inputs = [t.detach().clone() for t in inputs]
    loss = loss_fn(module(*inputs), *targets)
    recorder = _RecordEluBackward()
    with recorder:
        loss.backward()
    return recorder.calls


NLL_BACKWARD = torch.ops.aten.nll_loss_backward.default
LOG_SOFTMAX_BACKWARD = torch.ops.aten._log_softmax_backward_data.default
MAX_POOL_BACKWARD = torch.ops.aten.max_pool2d_with_indices_backward.default
REDUCTIONS = {1: "mean", 2: "sum"}  # torch's Reduction enum (0: none)


class _RecordSubgraphBackward(TorchDispatchMode):
    """Records the backward calls CANN has one op for: every ``aten._log_softmax_backward_data``
    (whether its incoming gradient is exactly the output of an ``aten.nll_loss_backward``, or that
    output plus one other gradient (label smoothing's, which autograd adds in), and that call's
    reduction, ignore_index and weight) and every ``aten.max_pool2d_with_indices_backward``."""

    def __init__(self):
        super().__init__()
        self.cross_entropy: list[dict] = []
        self.max_pool: list[dict] = []
        self._nll: dict[int, dict] = {}  # id(nll_loss_backward result) -> its arguments
        self._smoothed: dict[int, dict] = {}  # id(that result + another gradient) -> the same

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func is NLL_BACKWARD:
            names = ("grad_output", "self", "target", "weight", "reduction", "ignore_index", "total_weight")
            bound = dict(zip(names, args)) | kwargs
            self._nll[id(out)] = {"reduction": REDUCTIONS.get(int(bound["reduction"]), "none"),
                                  "ignore_index": int(bound["ignore_index"]), "weight": bound["weight"] is not None,
                                  "rank": bound["self"].dim(), "dtype": bound["self"].dtype, "result": out}
        elif func is torch.ops.aten.add.Tensor and len(args) == 2:
            for mine in args:
                nll = self._nll.get(id(mine))
                if nll is not None and nll["result"] is mine:
                    self._smoothed[id(out)] = {**nll, "result": out}
        elif func is LOG_SOFTMAX_BACKWARD:
            nll = self._nll.get(id(args[0]))
            plain = nll is not None and nll["result"] is args[0]
            smoothed = self._smoothed.get(id(args[0]))
            smoothed = smoothed if smoothed is not None and smoothed["result"] is args[0] else None
            found = nll if plain else smoothed
            self.cross_entropy.append({**({k: v for k, v in found.items() if k != "result"} if found else {}),
                                       "direct": plain, "smoothed": smoothed is not None})
        elif func is MAX_POOL_BACKWARD:
            names = ("grad_output", "self", "kernel_size", "stride", "padding", "dilation", "ceil_mode", "indices")
            bound = dict(zip(names, args)) | kwargs
            self.max_pool.append({"kernel": list(bound["kernel_size"]), "stride": list(bound["stride"]),
                                  "padding": list(bound["padding"]), "dilation": list(bound["dilation"]),
                                  "ceil_mode": bool(bound["ceil_mode"]), "rank": bound["self"].dim()})
        return out


def expected_fusions(s: Setup | str) -> dict[str, list[dict]]:
    """The cross-entropy and max-pool backwards PyTorch runs in ``loss.backward()`` that
    ``rewrite.fuse_training`` must fuse: ``{"cross_entropy": [...], "max_pool": [...]}``.

    A fusable cross-entropy: a ``log_softmax`` backward whose incoming gradient is exactly an
    ``nll_loss`` backward's result, or that plus one other gradient (label smoothing's), without
    class weights, reduction mean or sum, on ``[N, C]`` float32 logits. A plain max pool: 4-D input,
    no dilation, no ceil_mode."""
    s = SETUPS[s] if isinstance(s, str) else s
    module, inputs, loss_fn, targets = s.build()
    module = copy.deepcopy(module)
    inputs = [t.detach().clone() for t in inputs]
    loss = loss_fn(module(*inputs), *targets)
    recorder = _RecordSubgraphBackward()
    with recorder:
        loss.backward()
    ce = [c for c in recorder.cross_entropy if (c["direct"] or c["smoothed"]) and not c["weight"]
          and c["reduction"] != "none"
          and c["rank"] == 2 and c["dtype"] == torch.float32]
    pools = [p for p in recorder.max_pool if p["rank"] == 4 and not p["ceil_mode"] and set(p["dilation"]) == {1}]
    return {"cross_entropy": ce, "max_pool": pools, "all_cross_entropy": recorder.cross_entropy,
            "all_max_pool": recorder.max_pool}


def fusable(calls: list[dict]) -> list[dict]:
    """The calls that are ELU's gradient proper (``scale == input_scale == 1``)."""
    return [c for c in calls if c["scale"] == 1.0 and c["input_scale"] == 1.0]
