"""The average-pooling translations (ort_ops.training.translations: avg_pool, avg_pool_backward,
adaptive_avg_pool_backward, adaptive_avg_pool3d) against PyTorch eager.

Two levels: each translation run op by op with onnxscript's eager evaluator (ORT) against the aten
op over a grid of parameters (every padding/stride/ceil_mode/count_include_pad/divisor_override
branch, windows wholly in the padding, non-divisible and upsampling adaptive sizes), and whole
exported training graphs of nn.AvgPool1d/2d/3d and nn.AdaptiveAvgPool1d/2d/3d modules against
eager autograd. The measure is the normwise relative error ``||got - want|| / ||want||``:
float32 within 1e-6, float16 within 1e-3 (a float16 ulp is 9.8e-4 relative; ours computes in
float32 and rounds once, PyTorch's CPU kernels likewise).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from torch import nn

from ort_ops.training import export_training_graph
from ort_ops.training.translations import (
    CUSTOM_TRANSLATION_TABLE,
    MODULES,
    adaptive_avg_pool3d,
    adaptive_avg_pool_backward,
    avg_pool,
    avg_pool_backward,
)
from ort_ops.training.verify import eager_loss_and_grads, feeds_for, run_ort, to_numpy

aten = torch.ops.aten
NORMWISE = {np.float32: 1e-6, np.float16: 1e-3}


def _normwise(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300))


def _assert_close(got, want, dtype):
    err = _normwise(got, want)
    assert err <= NORMWISE[dtype], f"normwise relative error {err:.3g} > {NORMWISE[dtype]}"


def _value(result):
    return np.asarray(getattr(result, "value", result))


# --- avg_pool{2,3}d_backward ------------------------------------------------------------------

def _avg_grid():
    """(nd, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override, size)."""
    cases = []
    # every (kernel, stride, padding); (ceil_mode, count_include_pad) and divisor_override rotate
    # through their combinations, each combination meeting several kernel/stride/padding ones
    flags = list(itertools.product((False, True), (True, False)))
    for i, (k, s, p) in enumerate(itertools.product((2, 3), (1, 2, 3), (0, 1))):
        ceil, cip = flags[i % 4]
        cases.append((2, k, s, p, ceil, cip, (None, None, 5)[i % 3], (9, 8)))
    # 3-D, asymmetric kernels / strides, a window that starts in the padding only (ceil_mode)
    cases += [(3, 2, 2, 1, True, True, None, (5, 6, 7)), (3, 3, 2, 1, False, False, 7, (5, 6, 7)),
              (3, (1, 3, 2), (1, 2, 2), (0, 1, 1), True, False, None, (3, 7, 6)),
              (2, (3, 1), (2, 1), (1, 0), True, True, None, (8, 5)), (2, 4, 3, 2, True, True, None, (7, 7)),
              (2, 1, 1, 0, False, True, None, (4, 4)), (2, (1, 3), (1, 2), (0, 1), True, True, None, (1, 9))]
    return cases


def _avg_case(nd, k, s, p, ceil, cip, div, size, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = torch.from_numpy(rng.standard_normal((2, 3, *size)).astype(np.float32))
    pool = (torch.nn.functional.avg_pool2d, torch.nn.functional.avg_pool3d)[nd - 2]
    kw = dict(kernel_size=k, stride=s, padding=p, ceil_mode=ceil, count_include_pad=cip, divisor_override=div)
    y = pool(x, **kw)
    dy = rng.standard_normal(tuple(y.shape)).astype(dtype)
    as_list = [list(v) if isinstance(v, tuple) else [v] * nd for v in (k, s, p)]
    return x.numpy().astype(dtype), dy, as_list, kw


@pytest.mark.parametrize("nd,k,s,p,ceil,cip,div,size", _avg_grid())
def test_avg_pool_backward_matches_aten_fp32(nd, k, s, p, ceil, cip, div, size):
    x, dy, (kl, sl, pl), _ = _avg_case(nd, k, s, p, ceil, cip, div, size, np.float32)
    fn = (avg_pool_backward.avg_pool2d_backward, avg_pool_backward.avg_pool3d_backward)[nd - 2]
    op = (aten.avg_pool2d_backward, aten.avg_pool3d_backward)[nd - 2]
    got = _value(fn(dy, x, kl, sl, pl, ceil, cip, div))
    want = op(torch.from_numpy(dy), torch.from_numpy(x), kl, sl, pl, ceil, cip, div).numpy()
    _assert_close(got, want, np.float32)


@pytest.mark.parametrize("k,s,p,ceil,cip,div", [(3, 2, 1, True, False, None), (2, 3, 1, True, True, None),
                                                (3, 1, 1, False, True, 4)])
def test_avg_pool2d_backward_matches_aten_fp16(k, s, p, ceil, cip, div):
    x, dy, (kl, sl, pl), _ = _avg_case(2, k, s, p, ceil, cip, div, (9, 8), np.float16)
    got = _value(avg_pool_backward.avg_pool2d_backward(dy, x, kl, sl, pl, ceil, cip, div))
    want = aten.avg_pool2d_backward(torch.from_numpy(dy), torch.from_numpy(x), kl, sl, pl, ceil, cip, div)
    assert got.dtype == np.float16 and want.dtype == torch.float16
    _assert_close(got, want.numpy(), np.float16)


def test_avg_pool_backward_default_stride_is_the_kernel():
    x, dy, (kl, _, pl), _ = _avg_case(2, 2, 2, 0, False, True, None, (8, 6), np.float32)
    got = _value(avg_pool_backward.avg_pool2d_backward(dy, x, kl, [], pl, False, True, None))
    want = aten.avg_pool2d_backward(torch.from_numpy(dy), torch.from_numpy(x), kl, [], pl, False, True, None)
    _assert_close(got, want.numpy(), np.float32)


# --- the forward avg_pool with divisor_override (the exporter ignores it) ----------------------

@pytest.mark.parametrize("nd,k,s,p,ceil,cip,div,size", [
    (2, 3, 2, 1, True, True, 5, (9, 8)), (2, 3, 2, 1, False, False, 2, (9, 8)), (2, 2, 3, 1, True, True, None, (8, 8)),
    (2, 3, 2, 1, True, False, None, (9, 8)), (3, 3, 2, 1, True, False, 7, (5, 6, 7)),
    (3, 2, 1, 0, False, True, None, (3, 4, 5))])
def test_avg_pool_forward_matches_torch(nd, k, s, p, ceil, cip, div, size):
    x, _, (kl, sl, pl), kw = _avg_case(nd, k, s, p, ceil, cip, div, size, np.float32)
    fn = (avg_pool.avg_pool2d, avg_pool.avg_pool3d)[nd - 2]
    pool = (torch.nn.functional.avg_pool2d, torch.nn.functional.avg_pool3d)[nd - 2]
    got = _value(fn(x, kl, sl, pl, ceil, cip, div))
    _assert_close(got, pool(torch.from_numpy(x), **kw).numpy(), np.float32)


@pytest.mark.parametrize("size,k,s,p,ceil", [(9, 3, 2, 1, True), (8, 2, 3, 1, True), (7, 3, 2, 1, False),
                                             (5, 4, 3, 2, True)])
def test_pooled_size_is_pytorchs(size, k, s, p, ceil):
    want = torch.nn.functional.avg_pool1d(torch.zeros(1, 1, size), k, s, p, ceil).shape[-1]
    assert avg_pool.pooled_size(size, k, s, p, ceil) == want


# --- adaptive average pooling -----------------------------------------------------------------

ADAPTIVE_2D = [((8, 8), (4, 4)), ((7, 7), (4, 4)), ((7, 7), (1, 1)), ((7, 9), (3, 5)), ((5, 6), (5, 6)),
               ((3, 4), (7, 5)), ((1, 7), (1, 4)), ((10, 13), (4, 3))]


@pytest.mark.parametrize("size,out", ADAPTIVE_2D)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_adaptive_avg_pool2d_backward_matches_aten(size, out, dtype):
    rng = np.random.default_rng(sum(size) + sum(out))
    x = rng.standard_normal((2, 3, *size)).astype(dtype)
    dy = rng.standard_normal((2, 3, *out)).astype(dtype)
    got = _value(adaptive_avg_pool_backward.adaptive_avg_pool2d_backward(dy, x))
    want = aten._adaptive_avg_pool2d_backward(torch.from_numpy(dy), torch.from_numpy(x)).numpy()
    assert got.dtype == want.dtype == dtype
    _assert_close(got, want, dtype)


@pytest.mark.parametrize("size,out", [((5, 5, 5), (2, 2, 2)), ((4, 7, 6), (3, 4, 6)), ((3, 3, 3), (1, 1, 1))])
def test_adaptive_avg_pool3d_forward_and_backward_match_aten(size, out):
    rng = np.random.default_rng(len(size) + sum(out))
    x = rng.standard_normal((2, 2, *size)).astype(np.float32)
    dy = rng.standard_normal((2, 2, *out)).astype(np.float32)
    got = _value(adaptive_avg_pool_backward.adaptive_avg_pool3d_backward(dy, x))
    want = aten._adaptive_avg_pool3d_backward(torch.from_numpy(dy), torch.from_numpy(x)).numpy()
    _assert_close(got, want, np.float32)
    got = _value(adaptive_avg_pool3d.adaptive_avg_pool3d(x, list(out)))
    _assert_close(got, aten._adaptive_avg_pool3d(torch.from_numpy(x), list(out)).numpy(), np.float32)


def test_overlapping_windows_share_the_input():
    """7 -> 4: windows [0,2) [1,4) [3,6) [5,7) (PyTorch's floor/ceil): inputs 1, 3, 5 get two cells' shares."""
    x = np.zeros((1, 1, 1, 7), np.float32)
    dy = np.ones((1, 1, 1, 4), np.float32)
    got = _value(adaptive_avg_pool_backward.adaptive_avg_pool2d_backward(dy, x)).reshape(-1)
    np.testing.assert_allclose(got, [1 / 2, 1 / 2 + 1 / 3, 1 / 3, 2 / 3, 1 / 3, 1 / 3 + 1 / 2, 1 / 2], rtol=1e-7)


def test_symbolic_shapes_are_refused_naming_the_op():
    class Symbolic:
        shape = ("N", 3, 8, 8)
        dtype = np.dtype(np.float32)

    with pytest.raises(ValueError, match=r"_adaptive_avg_pool2d_backward: input needs a static shape"):
        adaptive_avg_pool_backward.adaptive_avg_pool2d_backward(np.zeros((2, 3, 4, 4), np.float32), Symbolic())


def test_table_is_assembled_from_the_modules_once():
    assert {aten.avg_pool2d_backward.default, aten.avg_pool3d_backward.default,
            aten._adaptive_avg_pool2d_backward.default, aten._adaptive_avg_pool3d_backward.default,
            aten.avg_pool2d.default, aten._adaptive_avg_pool3d.default,
            aten.convolution_backward.default} <= set(CUSTOM_TRANSLATION_TABLE)
    assert sum(len(m.TRANSLATIONS) for m in MODULES) == len(CUSTOM_TRANSLATION_TABLE)
    from ort_ops.training import translations

    with pytest.raises(ValueError, match="translated by two modules"):
        translations._assemble((avg_pool, avg_pool))


# --- whole training graphs --------------------------------------------------------------------

def _square_mean(y):
    return (y * y).mean()


def _pooled(pool: nn.Module, nd: int) -> nn.Module:
    conv = (nn.Conv1d, nn.Conv2d, nn.Conv3d)[nd - 1]
    return nn.Sequential(conv(2, 3, 3, padding=1), nn.ELU(), pool, conv(3, 2, 1))


E2E = [
    ("AvgPool1d(3, 2, 1, ceil_mode)", lambda: nn.AvgPool1d(3, 2, 1, ceil_mode=True), 1, (11,)),
    ("AvgPool2d(3, 2, 1, ceil, no pad count)",
     lambda: nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False), 2, (9, 8)),
    ("AvgPool2d(3, 2, 1, divisor_override=4)", lambda: nn.AvgPool2d(3, 2, 1, divisor_override=4), 2, (9, 8)),
    ("AvgPool3d(3, divisor_override=5)", lambda: nn.AvgPool3d(3, 2, 1, divisor_override=5), 3, (5, 4, 5)),
    ("AdaptiveAvgPool1d(4)", lambda: nn.AdaptiveAvgPool1d(4), 1, (7,)),
    ("AdaptiveAvgPool2d(4) 8x8", lambda: nn.AdaptiveAvgPool2d(4), 2, (8, 8)),
    ("AdaptiveAvgPool2d(4) 7x7", lambda: nn.AdaptiveAvgPool2d(4), 2, (7, 7)),
    ("AdaptiveAvgPool2d(1)", lambda: nn.AdaptiveAvgPool2d(1), 2, (7, 7)),
    ("AdaptiveAvgPool3d(2)", lambda: nn.AdaptiveAvgPool3d(2), 3, (5, 3, 4)),
]


@pytest.mark.parametrize("name,make,nd,size", E2E, ids=[e[0] for e in E2E])
def test_exported_pooling_gradients_match_eager(name, make, nd, size):
    torch.manual_seed(nd)
    module = _pooled(make(), nd)
    x = torch.randn(2, 2, *size)
    model = export_training_graph(module, (x,), _square_mean, verify=False)
    got = run_ort(model, feeds_for(model, module, (x,)))
    want = eager_loss_and_grads(module, (x,), _square_mean)
    assert set(got) == set(want)
    for key, ref in want.items():
        err = _normwise(got[key], to_numpy(ref))
        assert err <= 1e-6, f"{name}: {key} normwise relative error {err:.3g}"


def test_exported_avg_pool_float16_matches_eager():
    torch.manual_seed(7)
    module = _pooled(nn.AvgPool2d(3, 2, 1, ceil_mode=True), 2).half()
    x = torch.randn(2, 2, 9, 8).half()
    model = export_training_graph(module, (x,), _square_mean, dtype=torch.float16, verify=False)
    got = run_ort(model, feeds_for(model, module, (x,)))
    for key, ref in eager_loss_and_grads(module, (x,), _square_mean).items():
        assert got[key].dtype == np.float16
        assert _normwise(got[key], to_numpy(ref)) <= 1e-2, key  # float16 forward and backward throughout
