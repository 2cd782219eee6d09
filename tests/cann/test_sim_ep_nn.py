"""BatchNorm (inference), AvgPoolV2 and Flatten, the CANN ops behind the EP's BatchNormalization,
AveragePool / GlobalAveragePool and Flatten kernels, on the simulator against NumPy references.

Semantics (cited in cann_ep/sim/src/ops/batch_norm.cc, avg_pool.cc, flatten.cc):
- BatchNorm (GE nn_batch_norm_ops.h; hicann/ops-nn norm/batch_norm): y = ((x - mean) * scale) * rstd +
  offset in float32, rstd = 1 / sqrt(variance + epsilon); batch_mean = reserve_space_1 = mean,
  batch_variance = reserve_space_2 = variance (inference); scale/offset/mean/variance float32 [C].
- AvgPoolV2 (ops-nn pooling/avg_pool_v2: proto and infershape): pads [top, bottom, left, right];
  exclusive (default true) divides by the in-image count, false by the count within the padded
  image; divisor_override replaces the divisor; global_pooling pools the whole plane.
- Flatten (ops-math conversion/flatten): y = x as [prod(d[:axis]), prod(d[axis:])], axis in [-r, r].
"""

import numpy as np
import pytest

from acl_ctypes import (
    ACL_ERROR_OP_ATTR_NOT_MATCH,
    ACL_ERROR_OP_INPUT_NOT_MATCH,
    ACL_ERROR_OP_OUTPUT_NOT_MATCH,
    ACL_ERROR_UNSUPPORTED_DATA_TYPE,
    ACL_FLOAT,
    ACL_FLOAT16,
    ACL_INT32,
    BF16,
    acl_dtype,
    assert_bits_equal,
    nchw,
    run_ops,
)

pytestmark = pytest.mark.usefixtures("sim_dir")


# --- BatchNorm ---------------------------------------------------------------------------------

def batch_norm_ref(x, scale, offset, mean, var, eps):
    """The kernel's float32 sequence: ((x - mean) * scale) * rstd + offset, each step rounded."""
    shape = (1, -1) + (1,) * (x.ndim - 2)
    f = np.float32
    rstd = (f(1) / np.sqrt(var.astype(f) + f(eps))).reshape(shape)
    xf = x.astype(f)
    y = ((xf - mean.reshape(shape)) * scale.reshape(shape)) * rstd + offset.reshape(shape)
    return y.astype(x.dtype)


def bn_case(x, c, eps=1e-5, outs=5, attrs=None, x_arg=None, stat_shape=None):
    rng = np.random.default_rng(3)
    stat = stat_shape or (c,)
    scale, offset = rng.normal(size=stat).astype(np.float32), rng.normal(size=stat).astype(np.float32)
    mean, var = rng.normal(size=stat).astype(np.float32), rng.uniform(0.1, 2, stat).astype(np.float32)
    a = {"epsilon": eps, "data_format": "NCHW", "is_training": False}
    a.update(attrs or {})
    out = [(acl_dtype(x.dtype), list(x.shape))] + [(ACL_FLOAT, [c])] * 4 + [(ACL_FLOAT, [1])] * (outs - 5)
    return ("BatchNorm", [x_arg if x_arg is not None else nchw(x), scale, offset, mean, var], out, a), \
        (scale, offset, mean, var)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16], ids=["float32", "float16", "bfloat16"])
def test_batch_norm_inference(tmp_path, dtype):
    rng = np.random.default_rng(1)
    x = (rng.normal(size=(2, 3, 4, 5)) * 3).astype(dtype)
    case5, (scale, offset, mean, var) = bn_case(x, 3, eps=1e-3)
    case6, _ = bn_case(x, 3, eps=1e-3, outs=6)
    (rc, msg, ys), (rc6, msg6, ys6) = run_ops(tmp_path, [case5, case6])
    assert rc == 0 and msg is None, msg
    assert rc6 == 0 and msg6 is None, msg6
    assert_bits_equal(ys[0], batch_norm_ref(x, scale, offset, mean, var, 1e-3))
    for got, want in zip(ys[1:5], (mean, var, mean, var)):  # batch stats and reserve spaces = inputs
        assert_bits_equal(got, want)
    assert_bits_equal(ys6[0], ys[0])
    # Independently of the operation order: the textbook formula in float64.
    ref64 = (x.astype(np.float64) - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-3) * \
        scale[None, :, None, None] + offset[None, :, None, None]
    tol = {np.float32: 1e-5, np.float16: 2e-3, BF16: 2e-2}[dtype]
    np.testing.assert_allclose(ys[0].astype(np.float64), ref64, rtol=tol, atol=tol * 4)


def test_batch_norm_default_epsilon_and_nd_input(tmp_path):
    """epsilon defaults to 1e-4 (REG_OP(BatchNorm)); an ND x of rank 2 takes C from its second dim."""
    rng = np.random.default_rng(2)
    x4 = rng.normal(size=(1, 2, 3, 3)).astype(np.float32)
    x2 = rng.normal(size=(4, 3)).astype(np.float32)
    case_eps, stats_eps = bn_case(x4, 2, attrs={"epsilon": None})
    case_eps[3].pop("epsilon")
    case_nd, stats_nd = bn_case(x2, 3, x_arg=x2)
    (rc, msg, ys), (rc2, msg2, ys2) = run_ops(tmp_path, [case_eps, case_nd])
    assert rc == 0 and rc2 == 0, (msg, msg2)
    assert_bits_equal(ys[0], batch_norm_ref(x4, *stats_eps, 1e-4))
    assert_bits_equal(ys2[0], batch_norm_ref(x2, *stats_nd, 1e-5))


def test_batch_norm_rejects_what_cann_rejects(tmp_path):
    x = np.ones((2, 3, 4, 4), np.float32)
    bad = [
        (bn_case(x, 3, attrs={"data_format": "NHWC"})[0], ACL_ERROR_OP_ATTR_NOT_MATCH, "data_format"),
        (bn_case(x, 3, attrs={"is_training": True})[0], ACL_ERROR_OP_ATTR_NOT_MATCH, "is_training"),
        (bn_case(np.ones((2, 3, 4), np.float32), 3)[0], ACL_ERROR_OP_INPUT_NOT_MATCH, "4-D"),  # NCHW, rank 3
        (bn_case(np.ones((2, 3, 4, 4, 2), np.float32), 3)[0], ACL_ERROR_OP_INPUT_NOT_MATCH, "4-D"),
        (bn_case(x, 4, stat_shape=(4,))[0], ACL_ERROR_OP_INPUT_NOT_MATCH, "expected [3]"),
        (bn_case(np.ones((2, 3, 4, 4), np.float64), 3)[0], ACL_ERROR_UNSUPPORTED_DATA_TYPE, "ACL_DOUBLE"),
    ]
    wrong_stat = bn_case(x, 3)[0]
    wrong_stat[1][1] = np.ones(3, np.float16)  # scale must be float32
    bad.append((wrong_stat, ACL_ERROR_UNSUPPORTED_DATA_TYPE, "input 1 (scale)"))
    wrong_out = bn_case(x, 3)[0]
    wrong_out[2][1] = (ACL_FLOAT16, [3])
    bad.append((wrong_out, ACL_ERROR_OP_OUTPUT_NOT_MATCH, "output 1 (batch_mean)"))
    for (rc, msg, _), (_, code, text) in zip(run_ops(tmp_path, [b[0] for b in bad]), bad):
        assert rc == code and text in msg, (rc, msg)


# --- AvgPoolV2 ---------------------------------------------------------------------------------

def avg_ref(x, k, s, pads=(0, 0, 0, 0), exclusive=True, ceil_mode=False, divisor=0):
    """Sliding-window mean in float64 from the padded geometry (CALCULATED pads)."""
    n, c, h, w = x.shape
    pt, pb, pl, pr = pads

    def size(d, kk, ss, lo, hi):
        o = (d + lo + hi - kk + (ss - 1 if ceil_mode else 0)) // ss + 1
        return o - 1 if ceil_mode and (o - 1) * ss >= d + lo else o

    oh, ow = size(h, k[0], s[0], pt, pb), size(w, k[1], s[1], pl, pr)
    xf = x.astype(np.float64)
    y = np.empty((n, c, oh, ow))
    for a in range(oh):
        for b in range(ow):
            hs, ws = a * s[0] - pt, b * s[1] - pl
            h0, w0, h1, w1 = max(hs, 0), max(ws, 0), min(hs + k[0], h), min(ws + k[1], w)
            total = xf[:, :, h0:h1, w0:w1].sum(axis=(2, 3))
            if divisor:
                count = divisor
            elif exclusive:
                count = (h1 - h0) * (w1 - w0)
            else:
                count = (min(hs + k[0], h + pb) - hs) * (min(ws + k[1], w + pr) - ws)
            y[:, :, a, b] = total / count
    return y


AVG_CASES = [  # ksize, strides, pads, exclusive, ceil_mode, divisor_override
    ((2, 2), (2, 2), (0, 0, 0, 0), True, False, 0),
    ((3, 3), (1, 1), (1, 1, 1, 1), True, False, 0),
    ((3, 3), (1, 1), (1, 1, 1, 1), False, False, 0),
    ((3, 2), (2, 1), (1, 0, 0, 1), True, False, 0),  # asymmetric: top/bottom vs left/right order
    ((3, 2), (2, 1), (1, 0, 0, 1), False, False, 0),
    ((3, 3), (2, 2), (1, 1, 1, 1), True, True, 0),
    ((2, 2), (1, 1), (0, 0, 0, 0), True, False, 3),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.float64],
                         ids=["float32", "float16", "bfloat16", "float64"])
def test_avg_pool_v2(tmp_path, dtype):
    rng = np.random.default_rng(5)
    x = rng.integers(-8, 9, (2, 3, 7, 6)).astype(dtype)  # small integers: exact sums
    cases, refs = [], []
    for k, s, pads, exclusive, ceil_mode, divisor in AVG_CASES:
        ref = avg_ref(x, k, s, pads, exclusive, ceil_mode, divisor)
        attrs = {"ksize": [1, 1, *k], "strides": [1, 1, *s], "pads": list(pads), "padding_mode": "CALCULATED",
                 "data_format": "NCHW", "global_pooling": False, "ceil_mode": ceil_mode, "exclusive": exclusive}
        if divisor:
            attrs["divisor_override"] = divisor
        cases.append(("AvgPoolV2", [nchw(x)], [(acl_dtype(dtype), list(ref.shape))], attrs))
        refs.append(ref)
    ref = x.astype(np.float64).mean(axis=(2, 3), keepdims=True)  # the EP's GlobalAveragePool attributes
    cases.append(("AvgPoolV2", [x], [(acl_dtype(dtype), [2, 3, 1, 1])],
                  {"ksize": [1, 1, 7, 6], "strides": [1, 1, 1, 1], "pads": [0, 0, 0, 0], "padding_mode": "VALID",
                   "data_format": "NCHW", "ceil_mode": False, "exclusive": False, "global_pooling": True}))
    refs.append(ref)
    for k, s, mode in (((3, 3), (2, 2), "SAME"), ((3, 2), (2, 2), "VALID")):
        oh, ow = (-(-7 // s[0]), -(-6 // s[1])) if mode == "SAME" else ((7 - k[0] + s[0]) // s[0],
                                                                          (6 - k[1] + s[1]) // s[1])
        need_h, need_w = (oh - 1) * s[0] + k[0] - 7, (ow - 1) * s[1] + k[1] - 6
        pads = (need_h // 2, need_h - need_h // 2, need_w // 2, need_w - need_w // 2) if mode == "SAME" else (0,) * 4
        ref = avg_ref(x, k, s, pads)
        assert ref.shape[2:] == (oh, ow)
        cases.append(("AvgPoolV2", [nchw(x)], [(acl_dtype(dtype), list(ref.shape))],
                      {"ksize": [1, 1, *k], "strides": [1, 1, *s], "padding_mode": mode}))
        refs.append(ref)
    # One float32 (float64) division of an exact sum, rounded once to the output dtype.
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        want = ref.astype(np.float64 if dtype is np.float64 else np.float32).astype(dtype)
        assert_bits_equal(y, want)


def test_avg_pool_v2_rejects_what_cann_rejects(tmp_path):
    x = np.ones((1, 2, 5, 5), np.float32)
    base = {"ksize": [1, 1, 2, 2], "strides": [1, 1, 1, 1]}
    bad = [
        (np.ones((1, 2, 5), np.float32), base, [1, 2, 4], ACL_ERROR_OP_INPUT_NOT_MATCH, "4-D"),
        (x, {"strides": [1, 1, 1, 1]}, [1, 2, 4, 4], ACL_ERROR_OP_ATTR_NOT_MATCH, "ksize is missing"),
        (x, {"ksize": [2, 2], "strides": [1, 1, 1, 1]}, [1, 2, 4, 4], ACL_ERROR_OP_ATTR_NOT_MATCH, "ksize"),
        (x, {"ksize": [1, 1, 16, 16], "strides": [1, 1, 1, 1]}, [1, 2, 1, 1], ACL_ERROR_OP_ATTR_NOT_MATCH,
         "fewer than 256"),
        (x, {**base, "strides": [1, 1, 64, 1]}, [1, 2, 1, 4], ACL_ERROR_OP_ATTR_NOT_MATCH, "strides"),
        (x, {**base, "data_format": "NHWC"}, [1, 2, 4, 4], ACL_ERROR_OP_ATTR_NOT_MATCH, "data_format"),
        (x, {**base, "padding_mode": "FULL"}, [1, 2, 4, 4], ACL_ERROR_OP_ATTR_NOT_MATCH, "padding_mode"),
        (x, {**base, "pads": [0, 0, 0]}, [1, 2, 4, 4], ACL_ERROR_OP_ATTR_NOT_MATCH, "pads"),
        (x, base, [1, 2, 5, 5], ACL_ERROR_OP_OUTPUT_NOT_MATCH, "output 0"),
        (np.ones((1, 2, 5, 5), np.int32), base, [1, 2, 4, 4], ACL_ERROR_UNSUPPORTED_DATA_TYPE, "ACL_INT32"),
    ]
    cases = [("AvgPoolV2", [nchw(a)], [(acl_dtype(a.dtype), dims)], attrs) for a, attrs, dims, _, _ in bad]
    for (rc, msg, _), (_, _, _, code, text) in zip(run_ops(tmp_path, cases), bad):
        assert rc == code and text in msg, (rc, msg)


# --- Flatten -----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64, np.uint8, np.int32, BF16, np.float64],
                         ids=str)
def test_flatten(tmp_path, dtype):
    x = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5).astype(dtype)
    cases, refs = [], []
    for axis in (0, 1, 2, 4, -1, -4):
        a = axis if axis >= 0 else axis + 4
        ref = x.reshape(int(np.prod(x.shape[:a])), -1)
        cases.append(("Flatten", [x], [(acl_dtype(dtype), list(ref.shape))], {"axis": axis}))
        refs.append(ref)
    cases.append(("Flatten", [x], [(acl_dtype(dtype), [2, 60])], None))  # axis defaults to 1
    refs.append(x.reshape(2, 60))
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(y, ref)


def test_flatten_rejects_bad_axis_and_shape(tmp_path):
    x = np.zeros((2, 3, 4), np.float32)
    bad = [({"axis": 4}, [1, 24], ACL_ERROR_OP_ATTR_NOT_MATCH, "axis is 4, expected a value in [-3, 3]"),
           ({"axis": -4}, [1, 24], ACL_ERROR_OP_ATTR_NOT_MATCH, "axis is -4"),
           ({"axis": 1}, [6, 4], ACL_ERROR_OP_OUTPUT_NOT_MATCH, "output 0"),
           ({"axis": 2}, [2, 12], ACL_ERROR_OP_OUTPUT_NOT_MATCH, "[6,4]")]
    cases = [("Flatten", [x], [(ACL_FLOAT, dims)], attrs) for attrs, dims, _, _ in bad]
    cases.append(("Flatten", [x], [(ACL_INT32, [2, 12])], {"axis": 1}))
    results = run_ops(tmp_path, cases)
    for (rc, msg, _), (_, _, code, text) in zip(results, bad):
        assert rc == code and text in msg, (rc, msg)
    assert results[-1][0] != 0 and "dtype" in results[-1][1]


# --- DropoutV2 ---------------------------------------------------------------------------------

def dropout_case(x, p, seed=7.0, mask_dtype=ACL_FLOAT, p_value=None):
    return ("DropoutV2", [x, np.array([seed], np.float32)],
            [(acl_dtype(x.dtype), list(x.shape)), (mask_dtype, list(x.shape)), (ACL_FLOAT, [1])],
            {"p": float(p) if p_value is None else p_value})


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["float32", "float16"])
def test_dropout_v2(tmp_path, dtype):
    """GE random_ops.h DropoutV2: y = x * mask / (1 - p), mask 1.0 (kept) or 0.0 with P(drop) = p,
    new_seed from seed. The random stream is the simulator's: only its statistics are checked,
    and that one seed gives one mask."""
    rng = np.random.default_rng(9)
    x = rng.uniform(0.5, 2.0, (4, 100, 250)).astype(dtype)  # 100000 elements, none zero
    cases = [dropout_case(x, 0.3), dropout_case(x, 0.3), dropout_case(x, 0.3, seed=8.0), dropout_case(x, 0.0)]
    results = run_ops(tmp_path, cases)
    for rc, msg, _ in results:
        assert rc == 0 and msg is None, msg
    (y, mask, new_seed), (y2, mask2, _), (_, mask3, _), (y0, mask0, _) = (r[2] for r in results)
    assert set(np.unique(mask)) <= {0.0, 1.0}
    n, kept = mask.size, int(mask.sum())
    sigma = np.sqrt(n * 0.3 * 0.7)
    assert abs((n - kept) - 0.3 * n) < 5 * sigma, f"{n - kept} of {n} dropped, expected 0.3 * n within 5 sigma"
    scale = np.float32(1) / (np.float32(1) - np.float32(0.3))
    assert_bits_equal(y, np.where(mask == 1, (x.astype(np.float32) * scale).astype(dtype), dtype(0)))
    assert_bits_equal(y2, y)
    assert_bits_equal(mask2, mask)  # the same seed: the same mask
    assert not np.array_equal(mask3, mask)  # another seed: another mask
    assert new_seed[0] == np.float32(8.0)
    assert mask0.all() and np.array_equal(y0, x)  # p = 0 keeps everything


def test_dropout_v2_rejects_what_cann_rejects(tmp_path):
    """The EP's call (mask described as bool, p set with aclopSetAttrInt) fails: CANN's prototype has
    a float32 mask and a Float p."""
    x = np.ones((2, 3), np.float32)
    bad = [(dropout_case(x, 0.5, mask_dtype=acl_dtype(np.bool_)), ACL_ERROR_OP_OUTPUT_NOT_MATCH, "output 1 (mask)"),
           (dropout_case(x, 0.5, p_value=0), ACL_ERROR_OP_ATTR_NOT_MATCH, "p must be a Float"),
           (dropout_case(x, 1.0), ACL_ERROR_OP_ATTR_NOT_MATCH, "in [0, 1)"),
           (dropout_case(x.astype(np.float64), 0.5), ACL_ERROR_UNSUPPORTED_DATA_TYPE, "input 0 (x)")]
    for (rc, msg, _), (_, code, text) in zip(run_ops(tmp_path, [b[0] for b in bad]), bad):
        assert rc == code and text in msg, (rc, msg)
