"""LayerNormV4(x, normalized_shape, gamma?, beta?; epsilon) -> y, mean, rstd on the simulator, bit for bit against
a NumPy reference written from the spec (hicann/ops-nn@41ec22c5 norm/layer_norm_v4/README.md: mean = E[x], rstd =
1/sqrt(Var[x] + eps), y = w*((x - mean)*rstd) + b; interface op_host/layer_norm_v4_def.cpp: mean and rstd float32
for every x type, gamma/beta float32 or x's type) and the order the simulator documents (cann_ep/sim/src/ops/
layer_norm.cc: two passes, row sums in blocks of 64 combined pairwise, one float32 rounding per operation).
"""

import numpy as np
import pytest

from acl_ctypes import (
    ABSENT,
    ACL_BF16,
    ACL_ERROR_OP_INPUT_NOT_MATCH,
    ACL_ERROR_OP_OUTPUT_NOT_MATCH,
    ACL_ERROR_UNSUPPORTED_DATA_TYPE,
    ACL_FLOAT,
    ACL_FLOAT16,
    BF16,
    acl_dtype,
    assert_bits_equal,
    const,
    run_ops,
)

pytestmark = pytest.mark.usefixtures("sim_dir")
F32 = np.float32


def row_sum(v: np.ndarray) -> np.float32:
    """Blocks of 64 summed in order, halves (split at a multiple of 64) summed pairwise, in float32."""
    n = v.shape[0]
    if n <= 64:
        s = F32(v[0])
        for t in v[1:]:
            s = F32(s + t)
        return s
    half = ((n + 63) // 64 // 2) * 64
    return F32(row_sum(v[:half]) + row_sum(v[half:]))


def layer_norm_ref(x, r, gamma, beta, eps):
    rows = x.reshape(-1, r).astype(F32)
    g = None if gamma is None else gamma.reshape(-1).astype(F32)
    b = None if beta is None else beta.reshape(-1).astype(F32)
    y = np.empty_like(rows)
    means, rstds = np.empty(rows.shape[0], F32), np.empty(rows.shape[0], F32)
    n = F32(r)
    with np.errstate(all="ignore"):
        for i, row in enumerate(rows):
            mean = F32(row_sum(row) / n)
            c = (row - mean).astype(F32)
            var = F32(row_sum((c * c).astype(F32)) / n)
            rstd = F32(F32(1) / np.sqrt(F32(var + F32(eps))))
            v = (c * rstd).astype(F32)
            if g is not None:
                v = (v * g).astype(F32)
            if b is not None:
                v = (v + b).astype(F32)
            y[i], means[i], rstds[i] = v, mean, rstd
    return y.reshape(x.shape).astype(x.dtype), means, rstds


def stats_shape(shape, k):
    return list(shape[: len(shape) - k]) + [1] * k


CASES = [  # x shape, number of normalised trailing dims, x dtype, weight dtype (None: absent), beta?
    ((4, 8), 1, F32, F32, True),
    ((2, 3, 200), 1, F32, F32, True),  # R > 64: the pairwise combination
    ((2, 3, 5), 2, F32, F32, False),
    ((6, 16), 1, np.float16, np.float16, True),
    ((6, 16), 1, np.float16, F32, True),  # float32 weights beside a float16 x
    ((6, 16), 1, BF16, BF16, True),
    ((3, 7), 1, F32, None, False),  # no gamma, no beta: 1 and 0
]


@pytest.mark.parametrize("shape, k, xt, wt, with_beta", CASES)
def test_layer_norm_v4_matches_the_reference(tmp_path, shape, k, xt, wt, with_beta):
    rng = np.random.default_rng(31)
    x = (rng.standard_normal(shape) * 3 + 1.5).astype(xt)
    normalized = list(shape[len(shape) - k:])
    r = int(np.prod(normalized))
    gamma = None if wt is None else (rng.standard_normal(normalized) + 1).astype(wt)
    beta = (rng.standard_normal(normalized)).astype(wt) if with_beta and wt is not None else None
    eps = 1e-5
    inputs = [x, const(np.array(normalized, np.int32)), ABSENT if gamma is None else gamma,
              ABSENT if beta is None else beta]
    outs = [(acl_dtype(xt), list(shape)), (ACL_FLOAT, stats_shape(shape, k)), (ACL_FLOAT, stats_shape(shape, k))]
    ((rc, msg, (y, mean, rstd)),) = run_ops(tmp_path, [("LayerNormV4", inputs, outs, {"epsilon": eps})])
    assert rc == 0 and msg is None, msg
    want_y, want_mean, want_rstd = layer_norm_ref(x, r, gamma, beta, eps)
    assert_bits_equal(mean.reshape(-1), want_mean)
    assert_bits_equal(rstd.reshape(-1), want_rstd)
    assert_bits_equal(y, want_y)
    # and the spec's formula in float64 (independent of the order): within float32 rounding
    x64 = x.astype(np.float64).reshape(-1, r)
    m64 = x64.mean(axis=1)
    r64 = 1 / np.sqrt(x64.var(axis=1) + eps)
    np.testing.assert_allclose(mean.reshape(-1), m64, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rstd.reshape(-1), r64, rtol=1e-5)


def test_epsilon_defaults_to_1e_5(tmp_path):
    x = np.array([[1.0, 1.0, 1.0, 1.0]], F32)  # variance 0: rstd = 1/sqrt(eps)
    ins = [x, const(np.array([4], np.int32)), ABSENT, ABSENT]
    outs = [(ACL_FLOAT, [1, 4]), (ACL_FLOAT, [1, 1]), (ACL_FLOAT, [1, 1])]
    ((rc, msg, (_, _, rstd)),) = run_ops(tmp_path, [("LayerNormV4", ins, outs, None)])
    assert rc == 0, msg
    assert_bits_equal(rstd.reshape(-1), np.array([F32(1) / np.sqrt(F32(1e-5))], F32))


def test_errors_name_the_input(tmp_path):
    x = np.ones((2, 4), F32)
    good_outs = [(ACL_FLOAT, [2, 4]), (ACL_FLOAT, [2, 1]), (ACL_FLOAT, [2, 1])]
    shape4 = const(np.array([4], np.int32))
    results = run_ops(tmp_path, [
        ("LayerNormV4", [x, const(np.array([3], np.int32)), ABSENT, ABSENT], good_outs, None),
        ("LayerNormV4", [x, const(np.array([4], np.int64)), ABSENT, ABSENT], good_outs, None),
        ("LayerNormV4", [x, shape4, np.ones(4, np.float16), ABSENT], good_outs, None),
        ("LayerNormV4", [x, shape4, np.ones(3, F32), ABSENT], good_outs, None),
        ("LayerNormV4", [x, shape4, ABSENT, ABSENT], [(ACL_FLOAT, [2, 4]), (ACL_FLOAT16, [2, 1]), (ACL_FLOAT, [2, 1])],
         None),
        ("LayerNormV4", [x, shape4, ABSENT, ABSENT], [(ACL_FLOAT, [2, 4]), (ACL_FLOAT, [2]), (ACL_FLOAT, [2, 1])], None),
        ("LayerNormV4", [x.astype(np.int32), shape4, ABSENT, ABSENT],
         [(acl_dtype(np.int32), [2, 4]), (ACL_FLOAT, [2, 1]), (ACL_FLOAT, [2, 1])], None),
        ("LayerNormV4", [np.ones((2, 4), BF16), shape4, np.ones(4, BF16), np.ones(4, F32)],
         [(ACL_BF16, [2, 4]), (ACL_FLOAT, [2, 1]), (ACL_FLOAT, [2, 1])], None),
    ])
    want = [
        (ACL_ERROR_OP_INPUT_NOT_MATCH, "normalized_shape"),
        (ACL_ERROR_UNSUPPORTED_DATA_TYPE, "normalized_shape"),
        (ACL_ERROR_UNSUPPORTED_DATA_TYPE, "input 2 (gamma)"),
        (ACL_ERROR_OP_INPUT_NOT_MATCH, "input 2 (gamma)"),
        (ACL_ERROR_OP_OUTPUT_NOT_MATCH, "output 1 (mean)"),
        (ACL_ERROR_OP_OUTPUT_NOT_MATCH, "output 1 (mean)"),
        (ACL_ERROR_UNSUPPORTED_DATA_TYPE, "input 0 (x)"),
        (ACL_ERROR_UNSUPPORTED_DATA_TYPE, "input 3 (beta)"),
    ]
    for (rc, msg, _), (code, needle) in zip(results, want):
        assert rc == code and needle in (msg or ""), (rc, msg, needle)
