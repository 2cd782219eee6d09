"""LayerNormGradV3 on the simulator (hicann/ops-nn norm/layer_norm_grad_v3: README.md's formula,
op_graph/layer_norm_grad_v3_proto.h, op_host/layer_norm_grad_v3_def.cpp's dtype rows): (dy, x,
rstd, mean, gamma) -> (pd_x, pd_gamma, pd_beta) in float32 in the order the simulator documents
(cann_ep/sim/src/ops/layer_norm_grad.cc), bit for bit against the same order written in NumPy
here; one rounding per output for float16/bfloat16 (mixed rows: gamma in float32); the shape and
dtype errors; absent on the Atlas training / inference series (README)."""


import numpy as np
import pytest

from acl_ctypes import (
    ACL_ERROR_OP_INPUT_NOT_MATCH,
    ACL_ERROR_OP_OUTPUT_NOT_MATCH,
    ACL_ERROR_UNSUPPORTED_DATA_TYPE,
    ACL_FLOAT,
    BF16,
    acl_dtype,
    assert_bits_equal,
    run_ops,
)

pytestmark = pytest.mark.usefixtures("sim_dir")
F32 = np.float32
RNG = np.random.default_rng(31)


def case(shape, j, dtype, gamma_dtype=None, pd_gamma_dtype=None):
    """Inputs with x's statistics over its last ``j`` dims (float32, as LayerNormV4 gives them)."""
    gamma_dtype, pd_gamma_dtype = gamma_dtype or dtype, pd_gamma_dtype or gamma_dtype or dtype
    x = RNG.normal(0.5, 2.0, shape).astype(F32).astype(dtype)
    axes = tuple(range(len(shape) - j, len(shape)))
    x32 = x.astype(np.float64)
    mean = x32.mean(axis=axes, keepdims=True).astype(F32)
    rstd = (1.0 / np.sqrt(x32.var(axis=axes, keepdims=True) + 1e-5)).astype(F32)
    dy = RNG.normal(0.0, 1.0, shape).astype(F32).astype(dtype)
    gamma = RNG.normal(1.0, 0.5, shape[len(shape) - j:]).astype(F32).astype(gamma_dtype)
    return [dy, x, rstd, mean, gamma], pd_gamma_dtype


def in_order(dy, x, rstd, mean, gamma, pd_gamma_dtype):
    """Per row: s1 = 0 + g_0 + g_1 + ..., s2 = 0 + g_0 xhat_0 + ... (float32, each step rounded),
    pd_x = (g - (s1 / N + xhat * (s2 / N))) * rstd; pd_gamma / pd_beta: sums over the rows from 0."""
    n = gamma.size
    rows = x.size // n
    dy2, x2 = dy.astype(F32).reshape(rows, n), x.astype(F32).reshape(rows, n)
    g = dy2 * gamma.astype(F32).reshape(1, n)
    xhat = (x2 - mean.reshape(rows, 1)) * rstd.reshape(rows, 1)
    gx = g * xhat
    s1, s2 = np.zeros((rows, 1), F32), np.zeros((rows, 1), F32)
    for k in range(n):
        s1, s2 = s1 + g[:, k:k + 1], s2 + gx[:, k:k + 1]
    fn = F32(n)
    pd_x = (g - (s1 / fn + xhat * (s2 / fn))) * rstd.reshape(rows, 1)
    dyx = dy2 * xhat
    pd_gamma, pd_beta = np.zeros(n, F32), np.zeros(n, F32)
    for r in range(rows):
        pd_gamma, pd_beta = pd_gamma + dyx[r], pd_beta + dy2[r]
    return [pd_x.reshape(x.shape).astype(x.dtype), pd_gamma.reshape(gamma.shape).astype(pd_gamma_dtype),
            pd_beta.reshape(gamma.shape).astype(pd_gamma_dtype)]


def outputs_of(ins, pd_gamma_dtype):
    x, gamma = ins[1], ins[4]
    return [(acl_dtype(x.dtype), list(x.shape)), (acl_dtype(pd_gamma_dtype), list(gamma.shape)),
            (acl_dtype(pd_gamma_dtype), list(gamma.shape))]


ROWS = {  # (dy = x, gamma, pd_gamma): every row of layer_norm_grad_v3_def.cpp
    "f32": (F32, F32, F32), "f16_f32_f32": (np.float16, F32, F32), "f16_f16_f32": (np.float16, np.float16, F32),
    "bf16_f32_f32": (BF16, F32, F32), "bf16_bf16_f32": (BF16, BF16, F32), "f16": (np.float16,) * 3,
    "bf16": (BF16,) * 3,
}


@pytest.mark.parametrize("row", ROWS)
def test_layer_norm_grad_v3_is_the_formula_in_order(tmp_path, row):
    dtype, gamma_dtype, pd_gamma_dtype = ROWS[row]
    cases, refs = [], []
    for shape, j in [((4, 7), 1), ((3, 5, 6), 1), ((3, 5, 6), 2), ((2, 1, 4), 1), ((9,), 1), ((1, 130), 1)]:
        ins, pd = case(shape, j, dtype, gamma_dtype, pd_gamma_dtype)
        cases.append(("LayerNormGradV3", ins, outputs_of(ins, pd), None))
        refs.append(in_order(*ins, pd))
    for (rc, msg, outs), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        for got, want in zip(outs, ref):
            assert_bits_equal(got, want)


def test_layer_norm_grad_v3_agrees_with_its_float64_definition(tmp_path):
    """Independent of the order: the README's formula in float64 (the sums over 6 and 3 rows)."""
    ins, pd = case((3, 6), 1, F32)
    ((rc, msg, outs),) = run_ops(tmp_path, [("LayerNormGradV3", ins, outputs_of(ins, pd), None)])
    assert rc == 0, msg
    dy, x, rstd, mean, gamma = (a.astype(np.float64) for a in ins)
    xhat, g = (x - mean) * rstd, dy * gamma
    want = [(g - (g.mean(-1, keepdims=True) + xhat * (g * xhat).mean(-1, keepdims=True))) * rstd,
            (dy * xhat).sum(0), dy.sum(0)]
    for got, w in zip(outs, want):
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-5)


def test_layer_norm_grad_v3_errors(tmp_path):
    ins, pd = case((2, 3), 1, F32)
    dy, x, rstd, mean, gamma = ins
    outs = outputs_of(ins, pd)
    int_ins = [dy.astype(np.int32), x.astype(np.int32), rstd, mean, gamma.astype(np.int32)]
    results = run_ops(tmp_path, [
        ("LayerNormGradV3", [dy, x, rstd, mean, np.ones(2, F32)], outs, None),             # gamma not x's last dims
        ("LayerNormGradV3", [dy, x, rstd.reshape(1, 2), mean, gamma], outs, None),          # rstd's shape
        ("LayerNormGradV3", [dy, x, rstd.astype(np.float16), mean, gamma], outs, None),     # rstd float32 only
        ("LayerNormGradV3", [dy.astype(np.float16), x.astype(np.float16), rstd, mean, gamma.astype(np.float16)],
         [(acl_dtype(np.float16), [2, 3]), (acl_dtype(BF16), [3]), (acl_dtype(BF16), [3])], None),  # no such row
        ("LayerNormGradV3", int_ins, [(acl_dtype(np.int32), [2, 3])] + outs[1:], None),
        ("LayerNormGradV3", ins, [(ACL_FLOAT, [3, 2])] + outs[1:], None),                   # pd_x's shape
        ("LayerNormGradV3", ins, outs, None),                                               # still works after
    ])
    assert [r[0] for r in results] == [ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_UNSUPPORTED_DATA_TYPE, ACL_ERROR_UNSUPPORTED_DATA_TYPE,
                                       ACL_ERROR_UNSUPPORTED_DATA_TYPE, ACL_ERROR_OP_OUTPUT_NOT_MATCH, 0], results
    assert "input 4 (gamma) has shape [2]: not the last dims of x [2,3]" in results[0][1]
    assert "rstd [1,2] and mean [2,1] must be [2,1]" in results[1][1]
    assert "not a dtype row" in results[3][1]


@pytest.mark.parametrize("soc", ["Ascend910A", "Ascend310P3"])
def test_layer_norm_grad_v3_is_not_on_the_atlas_training_and_inference_series(tmp_path, soc):
    ins, pd = case((2, 3), 1, F32)
    ((rc, msg, _),) = run_ops(tmp_path, [("LayerNormGradV3", ins, outputs_of(ins, pd), None)], ACLSIM_SOC_NAME=soc)
    assert rc != 0 and "LayerNormGradV3" in msg, msg
