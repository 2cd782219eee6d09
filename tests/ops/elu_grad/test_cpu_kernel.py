"""EluGrad CPU kernel vs the NumPy reference, bit for bit, over dtypes, ranks, alphas, edge
values, thread counts, both code paths (AVX2 and portable), and large tensors."""

from __future__ import annotations

import numpy as np
import pytest

import ort_ops.library
from gen_data import DTYPES, edge_pairs, gen_inputs, golden
from op_helpers import assert_bits_equal, make_session, run_elu_grad, run_elu_grad_bound
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
        if not ort_ops.library.elu_grad_cpu_loops() == "avx2":
            pytest.skip("this CPU has no AVX2+F16C: only the portable loops exist")
    assert ort_ops.library.elu_grad_cpu_loops() == request.param
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


@pytest.mark.parametrize("offsets", [(1, 3, 5), (2, 0, 1), (0, 0, 3)])
@pytest.mark.parametrize("n", [37, (1 << 16) + 9])
def test_odd_address_buffers(dtype, offsets, n, code_path):
    """Inputs and output at byte offsets that are not multiples of the element size (IOBinding
    over any memory): exact, and defined behaviour (the sanitizer run checks the loads)."""
    grads, activations = gen_inputs((n,), dtype, seed=n)
    session = make_session(make_elu_grad_model(dtype, (n,), 0.5), threads=2)
    assert_bits_equal(run_elu_grad_bound(session, grads, activations, offsets),
                      elu_grad(grads, activations, 0.5))


@pytest.mark.parametrize("y_offset", [0, 1])
def test_odd_address_streaming_output(y_offset, code_path):
    """An output large enough for non-temporal stores, at an aligned and at an odd address."""
    n = (1 << 22) + 3
    grads, activations = gen_inputs((n,), "float32", seed=3)
    session = make_session(make_elu_grad_model("float32", (n,), 2.0), threads=2)
    assert_bits_equal(run_elu_grad_bound(session, grads, activations, (3, 1, y_offset)),
                      elu_grad(grads, activations, 2.0))


def _f32(bits: int) -> np.float32:
    return np.array([bits], np.uint32).view(np.float32)[0]


def _bits(x) -> int:
    return int(np.array([x], np.float32).view(np.uint32)[0])


QUIET = 0x00400000
G_NAN, ALPHA_NAN, DEFAULT_NAN = 0x7F812345, 0xFFA0BEEF, 0xFFC00000  # (signalling, signalling)

# (grads, activations, alpha) -> float32 bits of y, written out by hand from the rule of
# docs/ops/EluGrad.md (not computed by the reference).
NAN_RULE_CASES = [
    (_f32(G_NAN), -1.0, 0.5, G_NAN | QUIET),                    # grads' NaN, quieted
    (_f32(G_NAN), -1.0, _f32(ALPHA_NAN), G_NAN | QUIET),        # both NaN: grads' wins
    (2.0, -1.0, _f32(ALPHA_NAN), ALPHA_NAN | QUIET),            # alpha's NaN, quieted
    (0.0, -np.inf, 1.0, DEFAULT_NAN),                           # 0 * -inf
    (2.0, -np.inf, np.inf, DEFAULT_NAN),                        # -inf + inf
    (_f32(G_NAN), -np.inf, np.inf, G_NAN | QUIET),              # grads' NaN beats an invalid op
    (_f32(G_NAN), 1.0, _f32(ALPHA_NAN), G_NAN),                 # grads branch: copied as is
    (3.0, np.nan, _f32(ALPHA_NAN), _bits(3.0)),                 # NaN activations: grads
]


def _rule(g: np.float32, a: np.float32, alpha: np.float32) -> int:
    """The NaN rule by hand, on float32 values (for the float16/bfloat16 cases)."""
    if not a < 0:
        return _bits(g)
    with np.errstate(all="ignore"):
        p = np.float32(g * np.float32(a + alpha))
    if not np.isnan(p):
        return _bits(p)
    if np.isnan(g):
        return _bits(g) | QUIET
    if np.isnan(alpha):
        return _bits(alpha) | QUIET
    return DEFAULT_NAN


@pytest.mark.parametrize("case", range(len(NAN_RULE_CASES)))
def test_nan_payload_rule(dtype, case, code_path):
    g, a, alpha, bits = NAN_RULE_CASES[case]
    assert _rule(np.float32(g), np.float32(a), np.float32(alpha)) == bits  # the hand rule itself
    n = 37  # a vector block and a scalar tail, the case in every position
    cast = DTYPES[dtype]
    with np.errstate(invalid="ignore"):
        grads = np.full(n, g, np.float32).astype(cast)
        activations = np.full(n, a, np.float32).astype(cast)
        y32 = _rule(grads[0].astype(np.float32), activations[0].astype(np.float32), np.float32(alpha))
        if not activations[0].astype(np.float32) < 0:
            expected = grads.copy()  # the grads branch is a copy (no cast round trip)
        else:
            expected = np.full(n, _f32(y32), np.float32).astype(cast)
    session = make_session(make_elu_grad_model(dtype, (n,), float(alpha)))
    assert_bits_equal(run_elu_grad(session, grads, activations), expected)
    assert_bits_equal(elu_grad(grads, activations, float(alpha)), expected)


@pytest.mark.parametrize("alpha", [float("nan"), float("inf"), 0.5])
def test_nan_payloads_random_both_loops_agree(dtype, alpha, monkeypatch):
    """4M random inputs, a quarter NaNs with random payloads, -inf and 0 mixed in: the portable
    and the AVX2 loops and the reference agree bit for bit."""
    n = 1 << 22
    rng = np.random.default_rng(7)
    uint = np.uint32 if dtype == "float32" else np.uint16
    grads, activations = gen_inputs((n,), dtype, seed=11)
    for x in (grads, activations):
        bits = x.view(uint)
        nan = rng.random(n) < 0.25
        exp_mask = uint(0x7F800000) if dtype == "float32" else uint(0x7C00 if dtype == "float16" else 0x7F80)
        payload = rng.integers(1, int(~exp_mask & ~(uint(1) << (bits.itemsize * 8 - 1)) & (2**(bits.itemsize*8)-1)),
                               size=n, dtype=np.uint64).astype(uint)
        bits[nan] = (exp_mask | payload)[nan] | (rng.integers(0, 2, n).astype(uint) << (bits.itemsize * 8 - 1))[nan]
        special = rng.random(n) < 0.05
        x[special] = rng.choice(np.array([-np.inf, 0.0, -0.0, np.inf], np.float32), special.sum()).astype(x.dtype)
    session = make_session(make_elu_grad_model(dtype, (n,), alpha), threads=2)
    expected = elu_grad(grads, activations, alpha)
    results = {}
    for path in ("avx2", "portable"):
        if path == "portable":
            monkeypatch.setenv("ORTOPS_FORCE_PORTABLE", "1")
        elif ort_ops.library.elu_grad_cpu_loops() != "avx2":
            continue
        results[path] = run_elu_grad(session, grads, activations)
        assert_bits_equal(results[path], expected)
    assert results
