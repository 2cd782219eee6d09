"""BatchNormV3 on the simulator, training form (hicann/ops-nn norm/batch_norm_v3: op_graph/batch_norm_v3_proto.h,
op_host/batch_norm_v3_def.cpp's A2/A3 dtype rows and formats, the A2/A3 kernel op_kernel/batch_norm_v3_full_reduce.h):
(x, weight, bias, running_mean, running_var) -> (y, running_mean, running_var, save_mean, save_rstd) in float32 in
the order the simulator documents (cann_ep/sim/src/ops/batch_norm_v3.cc), bit for bit against the same order in
NumPy here for NCHW and NCDHW and every A2/A3 dtype row; the running variance with the *unbiased* batch variance
(batchVarScale = M / (M - 1)) and NaN for M = 1; save_rstd the variance (A2/A3) or 1 / sqrt(var + eps) (the 950);
against the formula in float64; the dtype, shape, format and attribute errors; absent on the Atlas training /
inference series and 310B (the def configures 950, A2 and A3 only)."""

import numpy as np
import pytest
from test_sim_batch_norm_grad import BF16, arrays, fmt_of  # x's format by rank, the arrays of Args

from acl_ctypes import (
    ACL_ERROR_FORMAT_NOT_MATCH,
    ACL_ERROR_OP_ATTR_NOT_MATCH,
    ACL_ERROR_OP_INPUT_NOT_MATCH,
    ACL_ERROR_UNSUPPORTED_DATA_TYPE,
    ACL_FORMAT_NCHW,
    Arg,
    Out,
    acl_dtype,
    assert_bits_equal,
    run_ops,
)

pytestmark = pytest.mark.usefixtures("sim_dir")
F32 = np.float32
RNG = np.random.default_rng(41)


def case(shape, dtype, weight_dtype=None):
    weight_dtype = weight_dtype or dtype
    c = shape[1]
    x = RNG.normal(0.5, 2.0, shape).astype(F32).astype(dtype)
    weight = RNG.normal(1.0, 0.5, c).astype(F32).astype(weight_dtype)
    bias = RNG.normal(0.0, 0.5, c).astype(F32).astype(weight_dtype)
    running = [RNG.normal(0.0, 1.0, c).astype(F32), RNG.uniform(0.5, 2.0, c).astype(F32)]
    return [Arg(x, "device", fmt_of(shape)), weight, bias, *running]


def outputs_of(ins):
    x = arrays(ins)[0]
    c = [x.shape[1]]
    return [Out(acl_dtype(x.dtype), tuple(x.shape), fmt_of(x.shape))] + [(acl_dtype(F32), c)] * 4


def in_order(ins, eps, momentum, rstd=False):
    """Per channel over (n, spatial) in increasing order, float32 each step (the simulator's comment)."""
    x, w, b, rm, rv = arrays(ins)
    n, c = x.shape[:2]
    x3 = x.astype(F32).reshape(n, c, -1)
    m = n * x3.shape[2]
    s = np.zeros(c, F32)
    for i in range(n):
        for j in range(x3.shape[2]):
            s = s + x3[i, :, j]
    mean = s / F32(m)
    xc = x3 - mean.reshape(1, c, 1)
    sq = np.zeros(c, F32)
    for i in range(n):
        for j in range(x3.shape[2]):
            sq = sq + xc[i, :, j] * xc[i, :, j]
    var = sq / F32(m)
    sd = np.sqrt(var + F32(eps))
    scale = w.astype(F32) / sd
    y = xc * scale.reshape(1, c, 1) + b.astype(F32).reshape(1, c, 1)
    mom = F32(momentum)
    reverse = F32(1) - mom
    var_scale = F32(np.nan) if m == 1 else F32(m / (m - 1))
    with np.errstate(invalid="ignore"):
        run_var = rv * reverse + var * (var_scale * mom)
    return [y.reshape(x.shape).astype(x.dtype), rm * reverse + mean * mom, run_var, mean,
            F32(1) / sd if rstd else var]


ROWS = {  # (x, weight): batch_norm_v3_def.cpp's A2/A3 rows, running statistics float32
    "f32": (F32, F32), "f16": (np.float16, np.float16), "bf16": (BF16, BF16),
    "f16_f32": (np.float16, F32), "bf16_f32": (BF16, F32),
}
SHAPES = [(4, 3, 2, 5), (2, 3, 2, 3, 4), (8, 4, 1, 1), (3, 1, 4, 2), (5, 2, 7, 1)]


@pytest.mark.parametrize("row", ROWS)
def test_batch_norm_v3_is_the_a2_kernel_order(tmp_path, row):
    dtype, weight_dtype = ROWS[row]
    cases, refs = [], []
    for shape, eps, mom in zip(SHAPES, (1e-5, 1e-3, 0.1, 0.0, 1e-5), (0.1, 0.5, 0.0, 1.0, 0.3)):
        ins = case(shape, dtype, weight_dtype)
        cases.append(("BatchNormV3", ins, outputs_of(ins), {"is_training": True, "epsilon": eps, "momentum": mom}))
        refs.append(in_order(ins, eps, mom))
    for (rc, msg, outs), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        for got, want in zip(outs, ref):
            assert_bits_equal(got, want)


def test_attributes_default_to_1e_5_and_0_1(tmp_path):
    ins = case((2, 3, 2, 2), F32)
    ((rc, msg, outs),) = run_ops(tmp_path, [("BatchNormV3", ins, outputs_of(ins), None)])
    assert rc == 0, msg
    for got, want in zip(outs, in_order(ins, 1e-5, 0.1)):
        assert_bits_equal(got, want)


def test_one_value_per_channel_gives_a_nan_running_variance(tmp_path):
    """M = 1: batchVarScale is 0 / 0 in the kernel (batch_norm_v3_full_reduce.h), so running_var is NaN."""
    ins = case((1, 3, 1, 1), F32)
    ((rc, msg, outs),) = run_ops(tmp_path, [("BatchNormV3", ins, outputs_of(ins), None)])
    assert rc == 0, msg
    assert np.isnan(outs[2]).all() and np.isfinite(outs[1]).all()


def test_ascend950_saves_the_inverse_standard_deviation(tmp_path):
    ins = case((4, 3, 2, 5), F32)
    ((rc, msg, outs),) = run_ops(tmp_path, [("BatchNormV3", ins, outputs_of(ins), {"epsilon": 1e-3})],
                                 ACLSIM_SOC_NAME="Ascend950PR")
    assert rc == 0, msg
    for got, want in zip(outs, in_order(ins, 1e-3, 0.1, rstd=True)):
        assert_bits_equal(got, want)


def test_batch_norm_v3_agrees_with_its_float64_definition(tmp_path):
    """Independent of the order: the README's y and PyTorch's running statistics (unbiased variance) in float64."""
    eps, mom = 1e-5, 0.2
    ins = case((5, 3, 2, 2), F32)
    ((rc, msg, outs),) = run_ops(tmp_path, [("BatchNormV3", ins, outputs_of(ins), {"epsilon": eps, "momentum": mom})])
    assert rc == 0, msg
    x, w, b, rm, rv = (a.astype(np.float64) for a in arrays(ins))
    axes = (0, 2, 3)
    mean, var = x.mean(axis=axes), x.var(axis=axes)
    col = (1, 3, 1, 1)
    y = (x - mean.reshape(col)) / np.sqrt(var.reshape(col) + eps) * w.reshape(col) + b.reshape(col)
    m = x.size // 3
    want = [y, rm * (1 - mom) + mean * mom, rv * (1 - mom) + var * m / (m - 1) * mom, mean, var]
    for got, wv in zip(outs, want):
        np.testing.assert_allclose(got, wv, rtol=1e-5, atol=1e-5)


def test_batch_norm_v3_errors(tmp_path):
    ins = case((2, 3, 2, 2), F32)
    x, w, b, rm, rv = ins
    outs = outputs_of(ins)
    results = run_ops(tmp_path, [
        ("BatchNormV3", [Arg(x.array), w, b, rm, rv], [(acl_dtype(F32), [2, 3, 2, 2])] + outs[1:], None),  # ND
        ("BatchNormV3", [Arg(x.array.reshape(2, 3, 4), "device", ACL_FORMAT_NCHW), w, b, rm, rv],
         [Out(acl_dtype(F32), (2, 3, 4), ACL_FORMAT_NCHW)] + outs[1:], None),                       # 3-D NCHW
        ("BatchNormV3", [x, np.ones(2, F32), b, rm, rv], outs, None),                               # weight not [C]
        ("BatchNormV3", [x, w, b, rm.astype(np.float16), rv.astype(np.float16)],
         outs[:1] + [(acl_dtype(np.float16), [3])] * 2 + outs[3:], None),                           # f16 running
        ("BatchNormV3", [x, w.astype(np.float16), b.astype(np.float16), rm, rv], outs, None),       # f32 x, f16 w
        ("BatchNormV3", ins, outs, {"is_training": False}),                                          # inference
        ("BatchNormV3", [Arg(np.zeros((0, 3, 2, 2), F32), "device", ACL_FORMAT_NCHW), w, b, rm, rv],
         [Out(acl_dtype(F32), (0, 3, 2, 2), ACL_FORMAT_NCHW)] + outs[1:], None),                    # no element
        ("BatchNormV3", ins, outs, None),                                                             # still works
    ])
    assert [r[0] for r in results] == [ACL_ERROR_FORMAT_NOT_MATCH, ACL_ERROR_FORMAT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_UNSUPPORTED_DATA_TYPE,
                                       ACL_ERROR_UNSUPPORTED_DATA_TYPE, ACL_ERROR_OP_ATTR_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, 0], results
    assert "format NCHW" in results[0][1]
    assert "input 1 (weight) has shape [2], expected [3]" in results[2][1]
    assert "not a dtype row" in results[3][1] and "not a dtype row" in results[4][1]
    assert "training form only" in results[5][1]
    assert "no element per channel" in results[6][1]


@pytest.mark.parametrize("soc", ["Ascend910A", "Ascend310P3", "Ascend310B1"])
def test_batch_norm_v3_is_only_on_950_a2_and_a3(tmp_path, soc):
    ins = case((2, 3, 2, 2), F32)
    ((rc, msg, _),) = run_ops(tmp_path, [("BatchNormV3", ins, outputs_of(ins), None)], ACLSIM_SOC_NAME=soc)
    assert rc != 0 and "BatchNormV3" in msg, msg
