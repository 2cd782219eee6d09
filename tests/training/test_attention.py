"""Attention in training graphs (ort_ops.training.attention: SDPA decomposed before export).

Three levels: the decomposition against eager ``F.scaled_dot_product_attention`` (forward and
autograd, every mask/causal/scale/GQA form, float32/float16/bfloat16); single attention calls
exported with ``export_training_graph`` (its ``verify`` runs the graph in ORT against eager
autograd); and the clear export errors for what cannot be exported.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from ort_ops.tolerances import check, tolerance_of
from ort_ops.training import attention, export_training_graph
from ort_ops.training.export import _quiet_exporter

N, H, L, S, E = 2, 4, 5, 7, 8


def _qkv(gen, dtype=torch.float32, q_heads=H, kv_heads=H, length=L, source=S, value_dim=E):
    def t(*shape):
        return torch.randn(*shape, generator=gen).to(dtype).requires_grad_()
    return t(N, q_heads, length, E), t(N, kv_heads, source, E), t(N, kv_heads, source, value_dim)


def _bool(gen, *shape):
    return torch.rand(*shape, generator=gen) > 0.4


def _float(gen, *shape):
    mask = torch.randn(*shape, generator=gen)
    return mask.masked_fill(torch.rand(*shape, generator=gen) > 0.7, float("-inf"))


def _fully_masked_row(gen, dtype):
    mask = _bool(gen, N, 1, L, S)
    mask[..., 0] = True  # every query sees key 0 ...
    mask[0, 0, 1] = False  # ... but query 1 of sample 0 sees no key at all
    return mask if dtype == torch.bool else torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))


# name -> (qkv keyword arguments, sdpa keyword arguments from a generator)
FORMS = {
    "plain": ({}, lambda g: {}),
    "cross-L<S": ({"length": 3}, lambda g: {}),
    "value-dim": ({"value_dim": 6}, lambda g: {}),
    "bool-LS": ({}, lambda g: {"attn_mask": _bool(g, L, S)}),
    "bool-1S-broadcast": ({}, lambda g: {"attn_mask": _bool(g, 1, S) | (torch.arange(S) == 0)}),
    "bool-N1LS": ({}, lambda g: {"attn_mask": _bool(g, N, 1, L, S) | (torch.arange(S) == 0)}),
    "float-NHLS": ({}, lambda g: {"attn_mask": torch.randn(N, H, L, S, generator=g)}),
    "float-11LS-inf": ({}, lambda g: {"attn_mask": _float(g, 1, 1, L, S).index_fill(-1, torch.tensor([2]), 0.0)}),
    "bool-fully-masked-row": ({}, lambda g: {"attn_mask": _fully_masked_row(g, torch.bool)}),
    "float-fully-masked-row": ({}, lambda g: {"attn_mask": _fully_masked_row(g, torch.float32)}),
    "causal-L=S": ({"length": S}, lambda g: {"is_causal": True}),
    "causal-L<S": ({"length": 3}, lambda g: {"is_causal": True}),
    "causal-L>S": ({"length": 9}, lambda g: {"is_causal": True}),
    "scale": ({}, lambda g: {"scale": 0.3}),
    "causal-scale": ({"length": S}, lambda g: {"is_causal": True, "scale": 1.7}),
    "gqa": ({"kv_heads": 2}, lambda g: {"enable_gqa": True}),
    "gqa-mask-causal": ({"kv_heads": 1, "length": S}, lambda g: {"enable_gqa": True, "is_causal": True}),
}


def _forward_and_grads(fn, q, k, v, kwargs):
    """``fn``'s output and the gradients of a fixed random projection of it (q, k, v, float mask)."""
    out = fn(q, k, v, **kwargs)
    weight = torch.randn(out.shape, generator=torch.Generator().manual_seed(5)).to(out.dtype)
    leaves = [q, k, v] + [m for m in kwargs.values() if isinstance(m, torch.Tensor) and m.requires_grad]
    return [out, *torch.autograd.grad((out * weight).sum(), leaves)]


def _assert_close(got, want, dtype, what):
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert torch.isfinite(g).all(), f"{what} result {i}: non-finite values"
        result = check(g.detach().float().numpy(), w.detach().float().numpy(), tolerance_of(dtype))
        assert result.ok, f"{what} result {i} (0 = output, then q, k, v, mask gradients): {result}"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("form", list(FORMS))
def test_decomposition_matches_eager_sdpa(form, dtype):
    qkv_kwargs, make_kwargs = FORMS[form]
    gen = torch.Generator().manual_seed(1)
    q, k, v = _qkv(gen, dtype, **qkv_kwargs)
    kwargs = make_kwargs(gen)
    mask = kwargs.get("attn_mask")
    if mask is not None and mask.is_floating_point():
        kwargs["attn_mask"] = mask.to(dtype).requires_grad_()  # a learned bias gets a gradient
    want = _forward_and_grads(F.scaled_dot_product_attention, q, k, v, kwargs)
    got = _forward_and_grads(attention.scaled_dot_product_attention_math, q, k, v, kwargs)
    assert got[0].dtype == dtype
    _assert_close(got, want, dtype, f"{form} {dtype}")


def test_fully_masked_row_is_zero_with_zero_gradient():
    gen = torch.Generator().manual_seed(2)
    q, k, v = _qkv(gen)
    mask = _fully_masked_row(gen, torch.bool)
    out, dq, _, _ = _forward_and_grads(attention.scaled_dot_product_attention_math, q, k, v,
                                       {"attn_mask": mask})
    assert torch.equal(out[0, :, 1], torch.zeros_like(out[0, :, 1]))
    assert torch.equal(dq[0, :, 1], torch.zeros_like(dq[0, :, 1]))
    assert out[0, :, 0].abs().sum() > 0


def test_decomposition_rejects_what_eager_rejects_or_we_cannot_export():
    q, k, v = _qkv(torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="dropout_p must be 0.0 to export, got 0.1"):
        attention.scaled_dot_product_attention_math(q, k, v, dropout_p=0.1)
    with pytest.raises(ValueError, match="attn_mask must be None with is_causal=True"):
        attention.scaled_dot_product_attention_math(q, k, v, attn_mask=torch.ones(L, S, dtype=torch.bool),
                                                    is_causal=True)


# -- exported: ORT against eager autograd (export_training_graph's verify) -------------------

class Attend(nn.Module):
    """Projections of ``x`` (queries) and ``memory`` (keys/values) into one SDPA call."""

    def __init__(self, kv_heads=H, learned_bias=False, **sdpa):
        super().__init__()
        self.kv_heads, self.sdpa = kv_heads, sdpa
        self.q = nn.Linear(6, H * E)
        self.kv = nn.Linear(6, 2 * kv_heads * E)
        self.out = nn.Linear(H * E, 3)
        if learned_bias:
            self.bias = nn.Parameter(torch.randn(1, H, 1, S) * 0.5)

    def forward(self, x, memory):
        q = self.q(x).reshape(N, -1, H, E).transpose(1, 2)
        k, v = self.kv(memory).reshape(N, S, 2, self.kv_heads, E).permute(2, 0, 3, 1, 4)
        mask = self.bias if hasattr(self, "bias") else self.sdpa.get("attn_mask")
        kwargs = {**self.sdpa, "attn_mask": mask} if mask is not None else self.sdpa
        out = F.scaled_dot_product_attention(q, k, v, **kwargs)
        return self.out(out.transpose(1, 2).reshape(N, -1, H * E))


EXPORTED = {
    "bool-mask-broadcast": (L, {"attn_mask": torch.tensor([[True, False, True, True, False, True, True]])}),
    "float-mask-fully-masked-row": (L, {"attn_mask": _fully_masked_row(torch.Generator().manual_seed(4),
                                                                       torch.float32)}),
    "causal-scale": (S, {"is_causal": True, "scale": 0.2}),
    "gqa": (L, {"enable_gqa": True}),
    "learned-float-bias": (L, {}),
}


def _export(module, x, memory, dtype=None):
    target = torch.randn(N, x.shape[1], 3, generator=torch.Generator().manual_seed(9))
    # verify=True (the default): loss and every gradient from ORT against eager autograd.
    return export_training_graph(module, (x, memory), F.mse_loss, targets=(target,), dtype=dtype)


@pytest.mark.parametrize("case", list(EXPORTED))
def test_exported_attention_matches_eager(case):
    length, sdpa = EXPORTED[case]
    torch.manual_seed(0)
    module = Attend(kv_heads=2 if sdpa.get("enable_gqa") else H, learned_bias=case == "learned-float-bias", **sdpa)
    gen = torch.Generator().manual_seed(8)
    model = _export(module, torch.randn(N, length, 6, generator=gen), torch.randn(N, S, 6, generator=gen))
    ops = {n.op_type for n in model.graph.node}
    assert {"MatMul", "Softmax"} <= ops
    assert {n.domain for n in model.graph.node} <= {""}, "standard ONNX ops only"
    assert not model.functions
    if case == "learned-float-bias":
        assert "grad.bias" in [o.name for o in model.graph.output]


class SelfAttention(nn.Module):
    """MultiheadAttention with a key padding mask; with need_weights its (averaged) weights
    feed the output too, so their backward is in the graph."""

    def __init__(self, need_weights: bool, batch_first: bool):
        super().__init__()
        self.need_weights = need_weights
        self.attn = nn.MultiheadAttention(16, 4, batch_first=batch_first)
        padding = torch.zeros(3, 5, dtype=torch.bool)
        padding[1, -2:] = True
        self.register_buffer("padding", padding)

    def forward(self, x):
        out, weights = self.attn(x, x, x, key_padding_mask=self.padding, need_weights=self.need_weights)
        return out if weights is None else out + weights.square().mean()


# (need_weights=False, sequence-first, float32 is the causal setup of test_training_attention.py)
@pytest.mark.parametrize(("need_weights", "batch_first", "dtype"), [
    (True, False, torch.float32), (False, True, torch.float16), (True, True, torch.float16)])
def test_multihead_attention_matches_eager(need_weights, batch_first, dtype):
    torch.manual_seed(0)
    shape = (3, 5, 16) if batch_first else (5, 3, 16)
    model = export_training_graph(SelfAttention(need_weights, batch_first), (torch.randn(*shape),), F.mse_loss,
                                  targets=(torch.randn(*shape),), dtype=dtype)
    # need_weights=True is PyTorch's explicit bmm/softmax path, False the SDPA call we decompose:
    # one Softmax either way.
    assert [n.op_type for n in model.graph.node].count("Softmax") == 1


def test_direct_sdpa_float16_matches_eager():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(8)
    _export(Attend(is_causal=True), torch.randn(N, S, 6, generator=gen), torch.randn(N, S, 6, generator=gen),
            dtype=torch.float16)


def test_decomposition_keeps_buffer_mutations_and_module_paths():
    """The program stays training IR: a train-mode BatchNorm's running-statistics updates stay
    buffer mutations of the joint graph (run_decompositions would make them outputs that the
    joint export mistakes for the loss), and the math's nodes carry the attention's module."""
    from torch.export.experimental import _export_forward_backward
    from torch.export.graph_signature import OutputKind

    class NormThenAttend(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.BatchNorm1d(5)
            self.attn = nn.MultiheadAttention(16, 4, batch_first=True)

        def forward(self, x):
            x = self.norm(x)
            return self.attn(x, x, x, need_weights=False)[0].square().mean()

    torch.manual_seed(0)
    with _quiet_exporter():
        program = torch.export.export(NormThenAttend(), (torch.randn(3, 5, 16),), strict=False)
        assert attention.decompose(program) is program
        joint = _export_forward_backward(program)
    targets = {n.target for n in program.graph.nodes}
    assert attention.SDPA not in targets and torch.ops.aten.softmax.int in targets
    softmax = next(n for n in program.graph.nodes if n.target == torch.ops.aten.softmax.int)
    assert attention.module_path(softmax) == "attn (MultiheadAttention)"
    kinds = [s.kind for s in joint.graph_signature.output_specs]
    assert kinds.count(OutputKind.BUFFER_MUTATION) == 3 and kinds.count(OutputKind.LOSS_OUTPUT) == 1


def test_program_without_attention_is_left_alone():
    program = torch.export.export(nn.Linear(3, 2), (torch.randn(1, 3),), strict=False)
    before = [(n.op, n.target) for n in program.graph.nodes]
    assert attention.decompose(program) is program
    assert [(n.op, n.target) for n in program.graph.nodes] == before


# -- what cannot be exported: errors naming the op, the module path and the way around ------

def test_attention_dropout_in_train_mode_names_op_module_and_fix():
    torch.manual_seed(0)
    model = nn.Sequential(nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.1, batch_first=True))
    x = torch.randn(2, 5, 16)
    with pytest.raises(ValueError) as info:
        export_training_graph(model, (x,), F.mse_loss, targets=(torch.randn(2, 5, 16),))
    message = str(info.value)
    for part in ("aten.scaled_dot_product_attention", "dropout_p=0.1", "module 0.self_attn (MultiheadAttention)",
                 "layer.self_attn.dropout = 0.0"):
        assert part in message, (part, message)
    # The documented ways around: no attention dropout (the layer's nn.Dropouts stay: random, so
    # no verification against eager), or eval mode (the attention module passes dropout_p=0.0).
    model[0].self_attn.dropout = 0.0
    graph = export_training_graph(model, (x,), F.mse_loss, targets=(torch.randn(2, 5, 16),), verify=False)
    assert "Softmax" in {n.op_type for n in graph.graph.node}
    model[0].self_attn.dropout = 0.1
    export_training_graph(model.eval(), (x,), F.mse_loss, targets=(torch.randn(2, 5, 16),))


class DirectAttentionDropout(nn.Module):
    """SDPA called by the model itself with attention dropout in train mode (and an nn.Dropout)."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(8, 24)
        self.ff = nn.Sequential(nn.Linear(8, 16), nn.ELU(), nn.Dropout(0.1), nn.Linear(16, 8))

    def forward(self, x):
        q, k, v = self.qkv(x).view(2, 5, 3, 2, 4).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.25 if self.training else 0.0, is_causal=True)
        x = x + a.transpose(1, 2).reshape(2, 5, 8)
        return x + self.ff(x)


def test_attention_dropout_of_a_direct_sdpa_call_takes_its_mask_from_an_input_and_trains_like_eager():
    """The attention weights' mask [batch, heads, queries, keys] is dropout_mask.0 (before the
    feed-forward's): ORT and eager PyTorch given the same masks (DropoutMasks) take the same steps."""
    import copy

    from ort_ops import rewrite
    from ort_ops.training.dropout import DropoutMasks
    from ort_ops.training.trainer import SGD, Trainer

    torch.manual_seed(0)
    model = DirectAttentionDropout()
    x, y = torch.randn(2, 5, 8), torch.randn(2, 5, 8)
    graph = export_training_graph(model, (x,), F.mse_loss, targets=(y,), params_as_inputs=True)
    masks = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim]
             for i in graph.graph.input if i.name.startswith("dropout_mask.")}
    assert masks == {"dropout_mask.0": [2, 2, 5, 5], "dropout_mask.1": [2, 5, 16]}
    params = {n: p.detach().numpy().copy() for n, p in model.named_parameters()}
    trainer = Trainer(rewrite.fuse_training(graph), params, SGD(lr=0.05, momentum=0.9), progress=False,
                      dropout_seed=7)
    eager = copy.deepcopy(model)
    opt = torch.optim.SGD(eager.parameters(), lr=0.05, momentum=0.9)
    for _ in range(5):
        step_masks = trainer.dropout_masks_for_step(trainer.step_count + 1)
        assert 0 < step_masks["dropout_mask.0"].mean() < 1
        loss = trainer.step((x.numpy(), y.numpy()))
        opt.zero_grad()
        with DropoutMasks(step_masks):
            want = F.mse_loss(eager(x), y)
        want.backward()
        opt.step()
        assert abs(loss - want.item()) <= 1e-5 * abs(want.item())
    for n, p in eager.named_parameters():
        np.testing.assert_allclose(trainer.parameters()[n], p.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=n)


def test_fused_attention_kernel_called_directly_names_op_module_and_fix():
    class Fused(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(E, E)

        def forward(self, x):
            q = self.proj(x)
            return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, q, q)[0]

    with pytest.raises(ValueError) as info:
        export_training_graph(Fused(), (torch.randn(N, H, L, E),), lambda y: y.square().mean())
    message = str(info.value)
    for part in ("aten._scaled_dot_product_flash_attention_for_cpu", "module <model> (Fused)",
                 "scaled_dot_product_attention instead"):
        assert part in message, (part, message)
