"""The ONNX translation of aten.convolution_backward (ort_ops.training.translations.conv_backward).

Two levels: the translation itself, evaluated op by op with onnxscript's eager evaluator
(ORT) against ``torch.ops.aten.convolution_backward`` over a wide matrix of attributes, and
whole CNN training graphs through ``ort_ops.training.export_training_graph`` against eager autograd.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from torch import nn

from ort_ops.training import export_training_graph
from ort_ops.training.translations import conv_backward
from ort_ops.training.verify import TOLERANCES, eager_loss_and_grads, feeds_for, run_ort, to_numpy

GROUPS = ("1", "2", "depthwise")


def _matrix():
    """Every (rank, stride, padding, dilation) combination; groups/bias/batch rotate through it."""
    cases = []
    for i, (nd, s, p, d) in enumerate(itertools.product((1, 2), (1, 2, 3), (0, 1, 2), (1, 2))):
        groups = GROUPS[i % 3]
        bias = i % 2 == 0
        batch = (1, 3)[(i // 2) % 2]
        cases.append((nd, s, p, d, groups, bias, batch))
    return cases


def _conv_case(nd, stride, padding, dilation, groups, batch, dtype, seed=0):
    """Inputs of a small convolution and a random upstream gradient (NumPy)."""
    rng = np.random.default_rng(seed)
    c_in = 4
    g = {"1": 1, "2": 2, "depthwise": c_in}[groups]
    c_out = 4 if groups == "depthwise" else 6
    spatial = (9,) if nd == 1 else (8, 7)  # odd/even sizes: stride leaves remainders
    x = rng.standard_normal((batch, c_in, *spatial)).astype(dtype)
    w = rng.standard_normal((c_out, c_in // g, *(3,) * nd)).astype(dtype)
    conv = torch.nn.functional.conv1d if nd == 1 else torch.nn.functional.conv2d
    y = conv(torch.from_numpy(x).float(), torch.from_numpy(w).float(), None, stride, padding, dilation, g)
    dy = rng.standard_normal(tuple(y.shape)).astype(dtype)
    attrs = ([stride] * nd, [padding] * nd, [dilation] * nd, False, [0] * nd, g)
    return x, w, dy, c_out, attrs


def _check(dy, x, w, bias_sizes, attrs, mask, dtype):
    got = conv_backward.convolution_backward(dy, x, w, bias_sizes, *attrs, mask)
    want = torch.ops.aten.convolution_backward(
        torch.from_numpy(dy), torch.from_numpy(x), torch.from_numpy(w), bias_sizes, *attrs, mask
    )
    rtol, atol = TOLERANCES[{np.float32: torch.float32, np.float16: torch.float16}[dtype]]
    checked = 0
    for i, (g, r) in enumerate(zip(got, want)):
        if not mask[i]:
            continue  # (aten on CPU may compute it anyway; ours must not -- see mask test)
        g, r = np.asarray(g.value, np.float64), r.numpy().astype(np.float64)
        assert g.shape == r.shape, (i, g.shape, r.shape)
        err = np.max(np.abs(g - r))
        assert err <= atol + rtol * np.max(np.abs(r)), (i, err)
        checked += 1
    assert checked == sum(mask)


@pytest.mark.parametrize("nd,stride,padding,dilation,groups,bias,batch", _matrix())
def test_translation_matches_aten_fp32(nd, stride, padding, dilation, groups, bias, batch):
    x, w, dy, c_out, attrs = _conv_case(nd, stride, padding, dilation, groups, batch, np.float32)
    mask = [True, True, bias]
    _check(dy, x, w, [c_out] if bias else None, attrs, mask, np.float32)


@pytest.mark.parametrize(
    "nd,stride,padding,dilation,groups",
    [(2, 1, 1, 1, "1"), (2, 2, 0, 2, "2"), (1, 3, 2, 1, "depthwise"), (2, 3, 1, 2, "depthwise")],
)
def test_translation_matches_aten_fp16(nd, stride, padding, dilation, groups):
    x, w, dy, c_out, attrs = _conv_case(nd, stride, padding, dilation, groups, 2, np.float16)
    _check(dy, x, w, [c_out], attrs, [True, True, True], np.float16)


@pytest.mark.parametrize("mask", [(False, True, True), (True, False, False), (False, False, True)])
def test_translation_honours_output_mask(mask):
    x, w, dy, c_out, attrs = _conv_case(2, 2, 1, 1, "2", 2, np.float32)
    _check(dy, x, w, [c_out], attrs, list(mask), np.float32)
    got = conv_backward.convolution_backward(dy, x, w, [c_out], *attrs, list(mask))
    for requested, value in zip(mask, got):
        assert (value.value.size > 0) == requested  # left-out gradients are empty placeholders


def _transposed_case(nd, stride, padding, dilation, groups, output_padding, batch, dtype, seed=1):
    """Inputs of a small transposed convolution (w [Cin, Cout/G, *k]) and a random upstream gradient."""
    rng = np.random.default_rng(seed)
    c_in = 4
    g = {"1": 1, "2": 2, "depthwise": c_in}[groups]
    c_out = 4 if groups == "depthwise" else 6
    spatial = (5,) if nd == 1 else (4, 3)
    x = rng.standard_normal((batch, c_in, *spatial)).astype(dtype)
    w = rng.standard_normal((c_in, c_out // g, *(3,) * nd)).astype(dtype)
    conv_t = torch.nn.functional.conv_transpose1d if nd == 1 else torch.nn.functional.conv_transpose2d
    y = conv_t(torch.from_numpy(x).float(), torch.from_numpy(w).float(), None, stride, padding, output_padding, g,
               dilation)
    dy = rng.standard_normal(tuple(y.shape)).astype(dtype)
    attrs = ([stride] * nd, [padding] * nd, [dilation] * nd, True, [output_padding] * nd, g)
    return x, w, dy, c_out, attrs


def _transposed_matrix():
    """(rank, stride, padding, dilation, output_padding < max(stride, dilation)); groups/bias/batch rotate."""
    cases = []
    for i, (nd, s, p, d) in enumerate(itertools.product((1, 2), (1, 2, 3), (0, 1), (1, 2))):
        op_ = (i % max(s, d))  # output_padding must be below stride or dilation
        cases.append((nd, s, p, d, GROUPS[i % 3], op_, i % 2 == 0, (1, 2)[(i // 2) % 2]))
    return cases


@pytest.mark.parametrize("nd,stride,padding,dilation,groups,output_padding,bias,batch", _transposed_matrix())
def test_transposed_translation_matches_aten_fp32(nd, stride, padding, dilation, groups, output_padding, bias, batch):
    x, w, dy, c_out, attrs = _transposed_case(nd, stride, padding, dilation, groups, output_padding, batch,
                                              np.float32)
    _check(dy, x, w, [c_out] if bias else None, attrs, [True, True, bias], np.float32)


def test_transposed_translation_matches_aten_fp16_and_honours_the_mask():
    x, w, dy, c_out, attrs = _transposed_case(2, 2, 1, 1, "2", 1, 2, np.float16)
    _check(dy, x, w, [c_out], attrs, [True, True, True], np.float16)
    x, w, dy, c_out, attrs = _transposed_case(2, 2, 1, 1, "2", 1, 2, np.float32)
    for mask in ([False, True, False], [True, False, True]):
        got = conv_backward.convolution_backward(dy, x, w, [c_out], *attrs, mask)
        assert [value.value.size > 0 for value in got] == mask


# --- whole training graphs -------------------------------------------------------------------


class TwoConv(nn.Module):
    """conv -> ELU -> conv -> sum of squares: the second conv needs grad_input too."""

    def __init__(self, nd, stride, padding, dilation, groups, bias):
        super().__init__()
        conv = nn.Conv1d if nd == 1 else nn.Conv2d
        self.c1 = conv(2, 4, 3, bias=bias)
        self.act = nn.ELU()
        self.c2 = conv(4, 4, 3, stride, padding, dilation, groups, bias=bias)

    def forward(self, x):
        return self.c2(self.act(self.c1(x)))


def _square_mean(y):
    return (y * y).mean()


E2E = [
    # nd, stride, padding, dilation, groups, bias, batch, dtype
    (2, 1, 1, 1, 1, True, 2, torch.float32),
    (2, 2, 0, 1, 2, True, 1, torch.float32),
    (2, 3, 2, 2, 4, False, 2, torch.float32),  # depthwise, no bias, stride remainder
    (1, 2, 1, 2, 1, True, 3, torch.float32),
    (1, 3, 0, 1, 4, False, 1, torch.float32),
    (2, 2, 1, 1, 2, True, 2, torch.float16),
]


@pytest.mark.parametrize("nd,stride,padding,dilation,groups,bias,batch,dtype", E2E)
def test_exported_cnn_gradients_match_eager(nd, stride, padding, dilation, groups, bias, batch, dtype):
    torch.manual_seed(nd * 100 + stride * 10 + groups)
    module = TwoConv(nd, stride, padding, dilation, groups, bias).to(dtype)
    x = torch.randn(batch, 2, *((13,) if nd == 1 else (11, 10))).to(dtype)
    model = export_training_graph(module, (x,), _square_mean, dtype=dtype, verify=False)
    n_conv_t = sum(n.op_type == "ConvTranspose" for n in model.graph.node)
    assert n_conv_t == 1  # grad_input only for c2: c1's input needs no gradient
    got = run_ort(model, feeds_for(model, module, (x,)))
    want = eager_loss_and_grads(module, (x,), _square_mean)
    assert set(got) == set(want)
    rtol, atol = TOLERANCES[dtype]
    for name, ref in want.items():
        assert got[name].dtype == to_numpy(ref).dtype == {torch.float32: np.float32, torch.float16: np.float16}[dtype]
        r = to_numpy(ref).astype(np.float64)
        err = np.max(np.abs(got[name].astype(np.float64) - r))
        assert err <= atol + rtol * np.max(np.abs(r)), (name, err)


def test_conv3d_falls_out():
    torch.manual_seed(3)
    module = nn.Sequential(nn.Conv3d(2, 3, 2, stride=2), nn.ELU(), nn.Conv3d(3, 2, 2, padding=1, groups=1))
    x = torch.randn(2, 2, 5, 4, 4)
    model = export_training_graph(module, (x,), _square_mean, verify=False)
    got = run_ort(model, feeds_for(model, module, (x,)))
    for name, ref in eager_loss_and_grads(module, (x,), _square_mean).items():
        np.testing.assert_allclose(got[name], ref.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


class Decoder(nn.Module):
    """conv (stride 2) -> ELU -> transposed conv back up: the autoencoder shape."""

    def __init__(self, nd, stride, padding, output_padding, dilation, groups, bias):
        super().__init__()
        conv = {1: nn.Conv1d, 2: nn.Conv2d, 3: nn.Conv3d}[nd]
        conv_t = {1: nn.ConvTranspose1d, 2: nn.ConvTranspose2d, 3: nn.ConvTranspose3d}[nd]
        self.down = conv(2, 4, 3, stride=2, padding=1)
        self.act = nn.ELU()
        self.up = conv_t(4, 2, 3, stride, padding, output_padding, groups, bias, dilation)

    def forward(self, x):
        return self.up(self.act(self.down(x)))


@pytest.mark.parametrize("nd,stride,padding,output_padding,dilation,groups,bias,dtype", [
    (2, 2, 1, 1, 1, 1, True, torch.float32),    # the usual 2x upsampling
    (2, 3, 0, 2, 1, 2, False, torch.float32),   # groups, output_padding 2
    (3, 2, 1, 1, 1, 1, True, torch.float32),
    (2, 2, 1, 1, 1, 1, True, torch.float16),
])
def test_exported_transposed_convolution_gradients_match_eager(nd, stride, padding, output_padding, dilation, groups,
                                                               bias, dtype):
    """export_training_graph's own verification compares every gradient with eager autograd
    (it raises on a mismatch); the gradients are checked here again against eager."""
    torch.manual_seed(7)
    module = Decoder(nd, stride, padding, output_padding, dilation, groups, bias).to(dtype)
    x = torch.randn(2, 2, *((9,) if nd == 1 else (7, 6) if nd == 2 else (5, 4, 4))).to(dtype)
    model = export_training_graph(module, (x,), _square_mean, dtype=dtype)
    got = run_ort(model, feeds_for(model, module, (x,)))
    rtol, atol = TOLERANCES[dtype]
    for name, ref in eager_loss_and_grads(module, (x,), _square_mean).items():
        r = to_numpy(ref).astype(np.float64)
        assert np.max(np.abs(got[name].astype(np.float64) - r)) <= atol + rtol * np.max(np.abs(r)), name
