"""EluGrad CPU kernel vs the NumPy reference, bit for bit, over dtypes, ranks, alphas, edge
values, thread counts, both code paths (AVX2 and portable), and large tensors."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import ort_ops.library
from op_helpers import assert_bits_equal, make_session, run_elu_grad
from gen_data import DTYPES, edge_pairs, gen_inputs, golden
from ort_ops.model_builder import make_elu_grad_model
from ort_ops.reference import elu_grad

ALPHAS = [None, 1.0, 0.5, 2.0, 0.0]
SHAPES_BY_RANK = [(), (5,), (3, 4), (2, 3, 4), (2, 1, 3, 5), (1, 2, 3, 2, 2), (2, 1, 2, 1, 3, 2),
                  (1, 2, 1, 2, 1, 2, 3), (2, 1, 1, 2, 1, 2, 1, 3), (1, 2, 1, 1, 2, 1, 1, 2, 3)]


@pytest.fixture(params=["avx2", "portable"])
def code_path(request, monkeypatch):
    """Runs a test on the AVX2 loops and again on the portable loops."""
    if request.param == "portable":
        monkeypatch.setenv("ORTOPS_FORCE_PORTABLE", "1")
    else:
        monkeypatch.delenv("ORTOPS_FORCE_PORTABLE", raising=False)
        if not ort_ops.library.cpu_loops() == "avx2":
            pytest.skip("this CPU has no AVX2+F16C: only the portable loops exist")
    assert ort_ops.library.cpu_loops() == request.param
    return request.param


def check(dtype, shape, alpha, grads, activations, threads=None):
    session = make_session(make_elu_grad_model(dtype, shape, alpha), threads=threads)
    expected = elu_grad(grads, activations, 1.0 if alpha is None else alpha)
    assert_bits_equal(run_elu_grad(session, grads, activations), expected)
    return expected


def test_article_kernel_case_256_float32():
    """The CANN kernel unit test: 256 float32 elements uniform in [-2, 2]."""
    grads, activations = gen_inputs((256,), "float32", seed=256)
    expected = check("float32", (256,), None, grads, activations)
    assert_bits_equal(expected, golden(grads, activations))
    assert (activations < 0).any() and (activations >= 0).any()


@pytest.mark.parametrize("rank", range(len(SHAPES_BY_RANK)))
@pytest.mark.parametrize("alpha", ALPHAS)
def test_ranks_and_alphas(dtype, rank, alpha):
    shape = SHAPES_BY_RANK[rank]
    grads, activations = gen_inputs(shape, dtype, seed=rank)
    check(dtype, shape, alpha, grads, activations)


@pytest.mark.parametrize("alpha", ALPHAS)
def test_matches_article_golden(dtype, alpha):
    grads, activations = gen_inputs((1000,), dtype, seed=7)
    expected = check(dtype, (1000,), alpha, grads, activations)
    assert_bits_equal(expected, golden(grads, activations, 1.0 if alpha is None else alpha))


@pytest.mark.parametrize("alpha", [1.0, 0.5, 2.0, 0.0])
def test_edge_values(dtype, alpha, code_path):
    grads, activations = edge_pairs(dtype)
    # odd length so vector bodies and scalar tails both see edge values
    check(dtype, (grads.size,), alpha, grads, activations)
    check(dtype, (grads.size - 3,), alpha, grads[3:], activations[3:])


@pytest.mark.parametrize("dtype16", ["float16", "bfloat16"])
def test_every_16_bit_pattern(dtype16, code_path):
    """All 65536 bit patterns as activations and as grads (NaNs, subnormals, ties)."""
    cast = DTYPES[dtype16]
    patterns = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(cast)
    rng = np.random.default_rng(16)
    others = rng.permutation(patterns)
    for alpha in (1.0, 0.5):
        check(dtype16, (patterns.size,), alpha, others, patterns)
        check(dtype16, (patterns.size,), alpha, patterns, others)


@pytest.mark.parametrize("dtype16", ["float16", "bfloat16"])
def test_rounding_ties_go_to_even(dtype16):
    """Products exactly halfway between two representable values round to even (both ways)."""
    cast = DTYPES[dtype16]
    dropped_bits = 13 if dtype16 == "float16" else 16
    grid = np.linspace(0.5, 2.0, 301, dtype=np.float32).astype(cast)
    negatives = np.linspace(-0.99, -0.01, 301, dtype=np.float32).astype(cast)
    g, a = (x.ravel() for x in np.meshgrid(grid, negatives, indexing="ij"))
    y32 = g.astype(np.float32) * (a.astype(np.float32) + 1)  # exact: short mantissas
    low = y32.view(np.uint32) & ((1 << dropped_bits) - 1)
    ties = low == (1 << (dropped_bits - 1))
    kept_bit = (y32.view(np.uint32) >> dropped_bits) & 1
    assert (ties & (kept_bit == 0)).sum() > 10 and (ties & (kept_bit == 1)).sum() > 10
    g, a = g[ties].copy(), a[ties].copy()
    expected = check(dtype16, (g.size,), None, g, a)
    # round half to even: the result's last kept bit is always 0
    assert not (expected.view(np.uint16) & 1).any()


@pytest.mark.parametrize("threads", [1, 2, 4])
@pytest.mark.parametrize("n", [1000, (1 << 16) + 5, (1 << 18) + 3])
def test_thread_counts(dtype, threads, n):
    grads, activations = gen_inputs((n,), dtype, seed=n)
    check(dtype, (n,), 0.5, grads, activations, threads=threads)


@pytest.mark.parametrize("offset", [1, 3])
def test_unaligned_buffers_large(offset, code_path):
    """Large outputs use non-temporal stores; misaligned inputs still give exact results."""
    n = (1 << 22) + 7
    base_g, base_a = gen_inputs((n + offset,), "float32", seed=offset)
    grads, activations = base_g[offset:], base_a[offset:]
    check("float32", (n,), 2.0, grads, activations, threads=2)


def test_large_tensor_2_pow_24():
    n = 1 << 24
    for dtype in ("float32", "bfloat16"):
        grads, activations = gen_inputs((n,), dtype, seed=24)
        check(dtype, (n,), None, grads, activations, threads=2)


def test_symbolic_dims_and_reuse():
    """One session (dynamic shape) serves different shapes and sizes in turn."""
    session = make_session(make_elu_grad_model("float16", ["batch", "n"], 0.5))
    for shape in [(1, 1), (3, 7), (2, 70000), (0, 5)]:
        grads, activations = gen_inputs(shape, "float16", seed=sum(shape))
        assert_bits_equal(run_elu_grad(session, grads, activations),
                          elu_grad(grads, activations, 0.5))
