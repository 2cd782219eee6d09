"""BatchNormGradV3 on the simulator, training form (hicann/ops-nn norm/batch_norm_grad_v3:
op_graph/batch_norm_grad_v3_proto.h, op_host/batch_norm_grad_v3_def.cpp's dtype rows and formats,
docs/aclnnBatchNormBackward.md's formula): (dy, x, weight, running_mean, running_var, save_mean,
save_rstd) -> (dx, dweight, dbias) in float32 in the order the simulator documents
(cann_ep/sim/src/ops/batch_norm_grad.cc: the A2/A3 kernel's, save_rstd a variance to which epsilon is
added), bit for bit against the same order written in NumPy here, for NCHW and NCDHW and every dtype
row of the def (mixed rows: weight in float32); on the Ascend 950 save_rstd is 1 / sqrt(var + eps)
(the arch35 kernel); against the formula in float64; the dtype, shape, format and attribute errors;
absent on the Atlas training / inference series and 310B (the def configures 950, A2 and A3 only)."""


import ml_dtypes
import numpy as np
import pytest

from acl_ctypes import (
    ACL_ERROR_FORMAT_NOT_MATCH,
    ACL_ERROR_OP_ATTR_NOT_MATCH,
    ACL_ERROR_OP_INPUT_NOT_MATCH,
    ACL_ERROR_OP_OUTPUT_NOT_MATCH,
    ACL_ERROR_UNSUPPORTED_DATA_TYPE,
    ACL_FORMAT_NCHW,
    Arg,
    Out,
    acl_dtype,
    assert_bits_equal,
    run_ops,
)

pytestmark = pytest.mark.usefixtures("sim_dir")
BF16 = ml_dtypes.bfloat16
F32 = np.float32
RNG = np.random.default_rng(37)
ACL_FORMAT_NCDHW = 30  # acl_base.h


def fmt_of(shape):
    return ACL_FORMAT_NCHW if len(shape) == 4 else ACL_FORMAT_NCDHW


def case(shape, dtype, weight_dtype=None, running_dtype=F32, rstd=False, eps=1e-5):
    """Inputs with x's batch statistics per channel (axis 1), float32 save_mean, save_rstd the
    variance (A2/A3) or 1 / sqrt(var + eps) (``rstd``: the 950)."""
    weight_dtype = weight_dtype or dtype
    x = RNG.normal(0.5, 2.0, shape).astype(F32).astype(dtype)
    axes = tuple(i for i in range(len(shape)) if i != 1)
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=axes).astype(F32)
    var = x64.var(axis=axes).astype(F32)
    save = (1.0 / np.sqrt(var.astype(np.float64) + np.float64(F32(eps)))).astype(F32) if rstd else var
    dy = RNG.normal(0.0, 1.0, shape).astype(F32).astype(dtype)
    weight = RNG.normal(1.0, 0.5, shape[1]).astype(F32).astype(weight_dtype)
    running = [np.zeros(shape[1], running_dtype), np.ones(shape[1], running_dtype)]
    fmt = fmt_of(shape)
    return [Arg(dy, "device", fmt), Arg(x, "device", fmt), weight, *running, mean, save]


def arrays(ins):
    return [a.array if isinstance(a, Arg) else a for a in ins]


def in_order(ins, eps, rstd=False):
    """Per channel over (n, spatial) in increasing order, float32 each step: db = 0 + dy_0 + ...,
    s = 0 + (x_0 - mean) dy_0 + ...; std = sqrt(v + eps); dw = s / std; k = ((s / std) / std) * (1 / M);
    dx = (((dy - db * (1 / M)) - (x - mean) k) / std) * w (the 950: * rstd for / std)."""
    dy, x, w, _, _, mean, save = arrays(ins)
    n, c = x.shape[:2]
    dy3 = dy.astype(F32).reshape(n, c, -1)
    x3 = x.astype(F32).reshape(n, c, -1)
    m = dy3.shape[0] * dy3.shape[2]
    inv_m = F32(1) / F32(m)
    std = np.sqrt(save + F32(eps))

    def down(v):  # per channel: * rstd (950) or / std (A2/A3)
        shaped = (lambda a: a) if v.ndim == 1 else (lambda a: a.reshape(1, c, 1))
        return v * shaped(save) if rstd else v / shaped(std)

    xc = x3 - mean.reshape(1, c, 1)
    db, s = np.zeros(c, F32), np.zeros(c, F32)
    for i in range(n):
        for j in range(dy3.shape[2]):
            db = db + dy3[i, :, j]
            s = s + xc[i, :, j] * dy3[i, :, j]
    dw = down(s)
    k = down(down(s)) * inv_m
    a = db * inv_m
    dx = down((dy3 - a.reshape(1, c, 1)) - xc * k.reshape(1, c, 1)) * w.astype(F32).reshape(1, c, 1)
    return [dx.reshape(x.shape).astype(x.dtype), dw.astype(w.dtype), db.astype(w.dtype)]


def outputs_of(ins):
    dy, x, w = arrays(ins)[:3]
    return [Out(acl_dtype(x.dtype), tuple(x.shape), fmt_of(x.shape)), (acl_dtype(w.dtype), [x.shape[1]]),
            (acl_dtype(w.dtype), [x.shape[1]])]


ROWS = {  # (dy = x, weight, running): every row of batch_norm_grad_v3_def.cpp's A2/A3 configuration
    "f32": (F32, F32, F32), "f16": (np.float16, np.float16, np.float16), "bf16": (BF16, BF16, BF16),
    "f16_f32_f32": (np.float16, F32, F32), "bf16_f32_f32": (BF16, F32, F32),
    "f16_f16_f32": (np.float16, np.float16, F32), "bf16_bf16_f32": (BF16, BF16, F32),
}
SHAPES = [(4, 3, 2, 5), (2, 3, 2, 3, 4), (8, 4, 1, 1), (1, 2, 3, 3), (3, 1, 4, 2)]


@pytest.mark.parametrize("row", ROWS)
def test_batch_norm_grad_v3_is_the_a2_kernel_order(tmp_path, row):
    dtype, weight_dtype, running_dtype = ROWS[row]
    cases, refs = [], []
    for shape, eps in zip(SHAPES, (1e-5, 1e-3, 0.1, 0.0, 1e-5)):
        ins = case(shape, dtype, weight_dtype, running_dtype, eps=eps)
        cases.append(("BatchNormGradV3", ins, outputs_of(ins), {"is_training": True, "epsilon": eps}))
        refs.append(in_order(ins, eps))
    for (rc, msg, outs), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        for got, want in zip(outs, ref):
            assert_bits_equal(got, want)


def test_epsilon_defaults_to_1e_5(tmp_path):
    ins = case((2, 3, 2, 2), F32, eps=1e-5)
    ((rc, msg, outs),) = run_ops(tmp_path, [("BatchNormGradV3", ins, outputs_of(ins), None)])
    assert rc == 0, msg
    for got, want in zip(outs, in_order(ins, 1e-5)):
        assert_bits_equal(got, want)


def test_ascend950_reads_save_rstd_as_the_inverse_standard_deviation(tmp_path):
    ins = case((4, 3, 2, 5), F32, rstd=True, eps=1e-3)
    ((rc, msg, outs),) = run_ops(tmp_path, [("BatchNormGradV3", ins, outputs_of(ins), {"epsilon": 1e-3})],
                                 ACLSIM_SOC_NAME="Ascend950PR")
    assert rc == 0, msg
    for got, want in zip(outs, in_order(ins, 1e-3, rstd=True)):
        assert_bits_equal(got, want)


def test_batch_norm_grad_v3_agrees_with_its_float64_definition(tmp_path):
    """Independent of the order: the aclnn doc's training formula in float64."""
    eps = 1e-5
    ins = case((5, 3, 2, 2), F32, eps=eps)
    ((rc, msg, outs),) = run_ops(tmp_path, [("BatchNormGradV3", ins, outputs_of(ins), {"epsilon": eps})])
    assert rc == 0, msg
    dy, x, w, _, _, mean, var = (a.astype(np.float64) for a in arrays(ins))
    col = (1, 3, 1, 1)
    std = np.sqrt(var + np.float64(F32(eps))).reshape(col)
    xc = x - mean.reshape(col)
    n = x.size // 3
    sdy, sdyx = dy.sum(axis=(0, 2, 3)), (dy * xc).sum(axis=(0, 2, 3))
    want = [w.reshape(col) / (n * std) * (n * dy - sdy.reshape(col) - xc / std * (sdyx.reshape(col) / std)),
            sdyx / std.reshape(3), sdy]
    for got, wv in zip(outs, want):
        np.testing.assert_allclose(got, wv, rtol=1e-5, atol=1e-5)


def test_batch_norm_grad_v3_errors(tmp_path):
    ins = case((2, 3, 2, 2), F32)
    dy, x, w, rm, rv, mean, var = ins
    outs = outputs_of(ins)
    nd = [Arg(dy.array), Arg(x.array)]  # format ND
    results = run_ops(tmp_path, [
        ("BatchNormGradV3", [*nd, w, rm, rv, mean, var], [(acl_dtype(F32), [2, 3, 2, 2])] + outs[1:], None),  # ND
        ("BatchNormGradV3", [Arg(dy.array.reshape(2, 3, 4), "device", ACL_FORMAT_NCHW),
                             Arg(x.array.reshape(2, 3, 4), "device", ACL_FORMAT_NCHW), w, rm, rv, mean, var],
         [Out(acl_dtype(F32), (2, 3, 4), ACL_FORMAT_NCHW)] + outs[1:], None),                  # 3-D NCHW
        ("BatchNormGradV3", [dy, x, np.ones(2, F32), rm, rv, mean, var], outs, None),          # weight not [C]
        ("BatchNormGradV3", [dy, x, w, rm, rv, mean.astype(np.float16), var], outs, None),     # save_mean f32 only
        ("BatchNormGradV3", [dy, x, w.astype(np.float16), rm, rv, mean, var],
         outs[:1] + [(acl_dtype(np.float16), [3])] * 2, None),                                 # f32 dy, f16 weight
        ("BatchNormGradV3", ins, outs, {"is_training": False}),                                # inference form
        ("BatchNormGradV3", ins, [Out(acl_dtype(F32), (2, 3, 2, 1), ACL_FORMAT_NCHW)] + outs[1:], None),  # dx
        ("BatchNormGradV3", ins, outs, None),                                                   # still works after
    ])
    assert [r[0] for r in results] == [ACL_ERROR_FORMAT_NOT_MATCH, ACL_ERROR_FORMAT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_UNSUPPORTED_DATA_TYPE,
                                       ACL_ERROR_UNSUPPORTED_DATA_TYPE, ACL_ERROR_OP_ATTR_NOT_MATCH,
                                       ACL_ERROR_OP_OUTPUT_NOT_MATCH, 0], results
    assert "format NCHW" in results[0][1]
    assert "input 2 (weight) has shape [2], expected [3]" in results[2][1]
    assert "not a dtype row" in results[4][1]
    assert "training form only" in results[5][1]


@pytest.mark.parametrize("soc", ["Ascend910A", "Ascend310P3", "Ascend310B1"])
def test_batch_norm_grad_v3_is_only_on_950_a2_and_a3(tmp_path, soc):
    ins = case((2, 3, 2, 2), F32)
    ((rc, msg, _),) = run_ops(tmp_path, [("BatchNormGradV3", ins, outputs_of(ins), None)], ACLSIM_SOC_NAME=soc)
    assert rc != 0 and "BatchNormGradV3" in msg, msg
