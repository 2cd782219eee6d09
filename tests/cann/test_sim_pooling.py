"""MaxPoolV3 and MaxPoolGrad (NCHW) on the simulator against NumPy references.

Semantics (hicann/ops-nn@e5c3fa93): output sizes and pads from pooling/max_pool_v3/op_host/
max_pool_v3_infershape.cpp:51-86 and op_host/arch35/max_pool_v3_tiling_base.cpp:283-331
(CALCULATED: floor((H + top + bottom - k) / s) + 1, ceil_mode rounding up unless the last window
would start past H + top; VALID: (H - k + s) / s; SAME: ceil(H / s) with pad_top = need / 2),
MaxPoolGrad's from pooling/max_pool_grad/op_host/arch35/max_pool_grad_tiling_base.cpp:333-345.
Window maximum as CANN's MaxPoolGrad kernel picks it (pooling/max_pool_grad/op_kernel/arch35/
max_pool_grad_simt.h:40-47): scan the in-image part of the window row by row; a value replaces
the running maximum (initially -inf) if it is larger or NaN. So ties keep the first position
(-0.0 before +0.0 stays), a NaN window selects its last NaN, padded positions never count.
MaxPoolV3 copies the selected element (bit-exact); MaxPoolGrad adds each grad, in float32 from 0
and in row-major output order, to the selected input position, rounding once.

The window geometry is also checked independently: without NaN, MaxPoolV3 equals NumPy's max
over sliding windows of the -inf padded input.
"""

import math

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

from acl_ctypes import (
    ACL_ERROR_FORMAT_NOT_MATCH,
    ACL_ERROR_OP_ATTR_NOT_MATCH,
    ACL_ERROR_OP_INPUT_NOT_MATCH,
    ACL_ERROR_OP_OUTPUT_NOT_MATCH,
    ACL_ERROR_UNSUPPORTED_DATA_TYPE,
    ACL_FLOAT,
    ACL_FORMAT_NHWC,
    FLOAT_IDS,
    FLOATS,
    Arg,
    acl_dtype,
    assert_bits_equal,
    nchw,
    run_ops,
)

pytestmark = pytest.mark.usefixtures("sim_dir")
# MaxPoolV3 takes double too (hicann/ops-nn pooling/max_pool_v3/op_graph/max_pool_v3_proto.h lists DT_DOUBLE)
V3_DTYPES, V3_IDS = [*FLOATS, np.float64], [*FLOAT_IDS, "float64"]


def geometry(h, k, s, mode, pads=(0, 0), ceil_mode=False):
    """(output size, pad before) along one axis."""
    if mode == "CALCULATED":
        lo, hi = pads
        o = math.floor((h + lo + hi - k + (s - 1 if ceil_mode else 0)) / s) + 1
        if ceil_mode and (o - 1) * s >= h + lo:
            o -= 1
        return o, lo
    if mode == "VALID":
        return (h - k + s) // s, 0
    o = -(-h // s)
    return o, max(0, (o - 1) * s + k - h) // 2


def select(plane, y0, x0, kh, kw):
    """(row, col) of the window's selected maximum, the CANN kernel's scan."""
    h, w = plane.shape
    rows, cols = range(max(y0, 0), min(y0 + kh, h)), range(max(x0, 0), min(x0 + kw, w))
    best, arg = -np.inf, (rows[0], cols[0])
    for r in rows:
        for c in cols:
            v = float(plane[r, c])
            if v > best or v != v:
                best, arg = v, (r, c)
    return arg


def pool_ref(x, k, s, mode, pads=(0, 0, 0, 0), ceil_mode=False):
    n, c, h, w = x.shape
    oh, pt = geometry(h, k[0], s[0], mode, pads[:2], ceil_mode)
    ow, pl = geometry(w, k[1], s[1], mode, pads[2:], ceil_mode)
    y = np.empty((n, c, oh, ow), x.dtype)
    args = np.empty((n, c, oh, ow, 2), np.int64)
    for i in range(n):
        for j in range(c):
            for a in range(oh):
                for b in range(ow):
                    args[i, j, a, b] = select(x[i, j], a * s[0] - pt, b * s[1] - pl, *k)
                    y[i, j, a, b] = x[i, j][tuple(args[i, j, a, b])]
    return y, args, (pt, pl)


def sample(rng, shape, dtype, nans=True):
    x = rng.integers(-4, 5, shape).astype(np.float32)  # small integers: many ties
    flat = x.reshape(-1)
    flat[:4] = [-0.0, 0.0, -np.inf, 4.0]
    if nans:  # NaNs with different payloads (the kernel selects a window's last NaN)
        nan_bits = np.array([0x7FC00001, 0xFFC00002, 0x7FC00003], np.uint32).view(np.float32)
        flat[[7, 8, 20]] = nan_bits if dtype is np.float32 else np.nan
    return x.astype(dtype)


POOL_CASES = [  # ksize, strides, padding_mode, pads, ceil_mode
    ((2, 2), (2, 2), "CALCULATED", (0, 0, 0, 0), False),
    ((3, 3), (1, 1), "CALCULATED", (1, 1, 1, 1), False),
    ((3, 2), (2, 1), "CALCULATED", (1, 0, 0, 1), False),
    ((3, 3), (2, 2), "CALCULATED", (1, 1, 1, 1), True),
    ((2, 3), (3, 2), "CALCULATED", (0, 1, 1, 0), True),
    ((3, 3), (2, 2), "SAME", None, False),
    ((2, 2), (3, 3), "SAME", None, False),
    ((3, 2), (2, 2), "VALID", None, False),
]


@pytest.mark.parametrize("dtype", V3_DTYPES, ids=V3_IDS)
def test_max_pool_v3(tmp_path, dtype):
    rng = np.random.default_rng(22)
    x = sample(rng, (2, 3, 7, 8), dtype)
    x_finite = sample(rng, (2, 3, 7, 8), dtype, nans=False)
    cases, refs = [], []
    for k, s, mode, pads, ceil_mode in POOL_CASES:
        attrs = {"ksize": [1, 1, *k], "strides": [1, 1, *s], "padding_mode": mode, "data_format": "NCHW",
                 "ceil_mode": ceil_mode, "global_pooling": False}
        if pads is not None:
            attrs["pads"] = list(pads)
        for data in (x, x_finite):
            ref, _, (pt, pl) = pool_ref(data, k, s, mode, pads or (0, 0, 0, 0), ceil_mode)
            cases.append(("MaxPoolV3", [nchw(data)], [(acl_dtype(dtype), list(ref.shape))], attrs))
            refs.append(ref)
            if data is x_finite:  # the geometry, independently: max over -inf padded sliding windows
                padded = np.pad(data.astype(np.float32), ((0, 0), (0, 0), (pt, k[0] * 4), (pl, k[1] * 4)),
                                constant_values=-np.inf)
                win = sliding_window_view(padded, k, axis=(2, 3))[:, :, ::s[0], ::s[1]]
                assert np.array_equal(win.max(axis=(4, 5))[:, :, :ref.shape[2], :ref.shape[3]],
                                      ref.astype(np.float32))
    cases.append(("MaxPoolV3", [x], [(acl_dtype(dtype), [2, 3, 1, 1])],
                  {"ksize": [1, 1, 2, 2], "strides": [1, 1, 1, 1], "global_pooling": True}))
    refs.append(pool_ref(x, (7, 8), (1, 1), "VALID")[0])
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(y, ref)


def test_max_pool_v3_double_compares_in_double(tmp_path):
    """Doubles that round to the same float32 are told apart: the window's largest double wins."""
    x = (1.0 + np.array([1, 3, 2, 0], np.float64) * 1e-12).reshape(1, 1, 2, 2)
    assert len(set(x.astype(np.float32).ravel())) == 1  # one float32 value: a float compare would pick the first
    attrs = {"ksize": [1, 1, 2, 2], "strides": [1, 1, 2, 2]}
    ((rc, msg, (y,)),) = run_ops(tmp_path, [("MaxPoolV3", [x], [(acl_dtype(np.float64), [1, 1, 1, 1])], attrs)])
    assert rc == 0 and msg is None, msg
    assert_bits_equal(y, x.max(axis=(2, 3), keepdims=True))


def test_max_pool_v3_ties_and_nan_selection(tmp_path):
    nan1, nan2 = np.array([0x7FC00011, 0x7FC00022], np.uint32).view(np.float32)
    x = np.array([[[[-0.0, 0.0], [nan1, 1.0]], [[0.0, -0.0], [1.0, nan2]]]], np.float32).reshape(1, 2, 2, 2)
    x = np.concatenate([x, np.array([[[[nan1, nan2], [3.0, -np.inf]], [[-np.inf, -np.inf], [-np.inf, -np.inf]]]],
                                    np.float32)], axis=0)
    attrs = {"ksize": [1, 1, 2, 2], "strides": [1, 1, 2, 2]}
    row_attrs = {"ksize": [1, 1, 1, 2], "strides": [1, 1, 1, 2]}
    results = run_ops(tmp_path, [("MaxPoolV3", [x], [(ACL_FLOAT, [2, 2, 1, 1])], attrs),
                                 ("MaxPoolV3", [x], [(ACL_FLOAT, [2, 2, 2, 1])], row_attrs)])
    y, rows = results[0][2][0], results[1][2][0]
    assert y.view(np.uint32)[0, 0, 0, 0] == nan1.view(np.uint32)  # the window's (only) NaN
    assert y.view(np.uint32)[1, 0, 0, 0] == nan2.view(np.uint32)  # its last NaN
    assert y[1, 1, 0, 0] == -np.inf
    assert np.signbit(rows[0, 0, 0, 0]) and not np.signbit(rows[0, 1, 0, 0])  # first of -0.0 / +0.0 wins


def grad_ref(x, grad, k, s, padding):
    """float32 accumulation of grad into the selected positions, in row-major output order."""
    _, args, _ = pool_ref(x, k, s, padding)
    acc = np.zeros(x.shape, np.float32)
    g32 = grad.astype(np.float32)
    n, c, oh, ow = grad.shape
    with np.errstate(all="ignore"):
        for i in range(n):
            for j in range(c):
                for a in range(oh):
                    for b in range(ow):
                        r, q = args[i, j, a, b]
                        acc[i, j, r, q] = acc[i, j, r, q] + g32[i, j, a, b]
    return acc.astype(x.dtype)


GRAD_CASES = [((2, 2), (2, 2), "VALID"), ((3, 3), (1, 1), "VALID"), ((3, 3), (2, 2), "SAME"), ((2, 3), (1, 2), "SAME"),
              ((3, 2), (3, 1), "VALID")]


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
def test_max_pool_grad(tmp_path, dtype):
    rng = np.random.default_rng(23)
    x = sample(rng, (2, 2, 7, 6), dtype)
    cases, refs = [], []
    for k, s, padding in GRAD_CASES:
        fwd, _, _ = pool_ref(x, k, s, padding)
        grad = rng.standard_normal(fwd.shape).astype(dtype)
        attrs = {"ksize": [1, 1, *k], "strides": [1, 1, *s], "padding": padding, "data_format": "NCHW"}
        cases.append(("MaxPoolGrad", [x, fwd, grad], [(acl_dtype(dtype), list(x.shape))], attrs))
        refs.append(grad_ref(x, grad, k, s, padding))
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(y, ref)


def test_max_pool_grad_routes_like_tf_without_ties(tmp_path):
    """Distinct values: each grad goes to its window's unique maximum (TF MaxPoolGrad); x2 is
    only checked for its shape (the kernel finds the maxima again in x1)."""
    rng = np.random.default_rng(24)
    x = rng.permutation(2 * 3 * 6 * 6).astype(np.float32).reshape(2, 3, 6, 6)
    grad = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
    attrs = {"ksize": [1, 1, 2, 2], "strides": [1, 1, 1, 1], "padding": "VALID", "data_format": "NCHW"}
    ((rc, _, (y,)),) = run_ops(tmp_path, [("MaxPoolGrad", [x, np.zeros_like(grad), grad], [(ACL_FLOAT, list(x.shape))],
                                           attrs)])
    assert rc == 0
    want = np.zeros(x.shape, np.float64)
    win = sliding_window_view(x, (2, 2), axis=(2, 3))  # [n, c, 5, 5, 2, 2]
    flat = win.reshape(*win.shape[:4], 4).argmax(axis=-1)
    for idx in np.ndindex(*flat.shape):
        n, c, a, b = idx
        dr, dc = divmod(flat[idx], 2)
        want[n, c, a + dr, b + dc] += grad[idx]
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)


def test_errors(tmp_path):
    x = np.ones((1, 2, 4, 4), np.float32)
    ok = {"ksize": [1, 1, 2, 2], "strides": [1, 1, 2, 2]}
    g = np.ones((1, 2, 2, 2), np.float32)
    grad_ok = {**ok, "padding": "VALID", "data_format": "NCHW"}
    results = run_ops(tmp_path, [
        ("MaxPoolV3", [x], [(ACL_FLOAT, [1, 2, 3, 3])], {**ok, "pads": [2, 0, 0, 0]}),
        ("MaxPoolV3", [x], [(ACL_FLOAT, [1, 2, 2, 2])], {"ksize": [2, 2], "strides": [1, 1, 2, 2]}),
        ("MaxPoolV3", [x], [(ACL_FLOAT, [1, 2, 2, 2])], {**ok, "padding_mode": "FULL"}),
        ("MaxPoolV3", [x], [(ACL_FLOAT, [1, 2, 2, 2])], {**ok, "data_format": "NHWC"}),
        ("MaxPoolV3", [x], [(ACL_FLOAT, [1, 2, 3, 3])], ok),
        ("MaxPoolV3", [Arg(x, "device", ACL_FORMAT_NHWC)], [(ACL_FLOAT, [1, 2, 2, 2])], ok),
        ("MaxPoolV3", [x[0]], [(ACL_FLOAT, [2, 2, 2])], ok),
        ("MaxPoolV3", [x.astype(np.bool_)], [(acl_dtype(np.bool_), [1, 2, 2, 2])], ok),  # no DT_BOOL
        ("MaxPoolV3", [x], [(ACL_FLOAT, [1, 2, 2, 2])], {"strides": [1, 1, 2, 2]}),
        ("MaxPoolGrad", [x, g, g], [(ACL_FLOAT, [1, 2, 4, 4])], {**ok, "data_format": "NCHW"}),
        ("MaxPoolGrad", [x, g, g], [(ACL_FLOAT, [1, 2, 4, 4])], {**ok, "padding": "VALID"}),
        ("MaxPoolGrad", [x, g, np.ones((1, 2, 3, 3), np.float32)], [(ACL_FLOAT, [1, 2, 4, 4])], grad_ok),
        ("MaxPoolGrad", [x, np.ones((1, 2, 3, 3), np.float32), g], [(ACL_FLOAT, [1, 2, 4, 4])], grad_ok),
        ("MaxPoolGrad", [x, g, g], [(ACL_FLOAT, [1, 2, 4, 4])], {**grad_ok, "padding": "CALCULATED"}),
        ("MaxPoolGrad", [np.ones((1, 2, 0, 4), np.float32), g, g], [(ACL_FLOAT, [1, 2, 0, 4])], grad_ok),
        ("MaxPoolGrad", [x, g, g], [(ACL_FLOAT, [1, 2, 4, 3])], grad_ok),
    ])
    assert [r[0] for r in results] == [ACL_ERROR_OP_ATTR_NOT_MATCH, ACL_ERROR_OP_ATTR_NOT_MATCH,
                                       ACL_ERROR_OP_ATTR_NOT_MATCH, ACL_ERROR_OP_ATTR_NOT_MATCH,
                                       ACL_ERROR_OP_OUTPUT_NOT_MATCH, ACL_ERROR_FORMAT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_UNSUPPORTED_DATA_TYPE,
                                       ACL_ERROR_OP_ATTR_NOT_MATCH,
                                       ACL_ERROR_OP_ATTR_NOT_MATCH, ACL_ERROR_OP_ATTR_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_OP_ATTR_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_OP_OUTPUT_NOT_MATCH]
    msgs = [r[1] for r in results]
    assert "attribute pads is [2,0,0,0], expected 4 values [top, bottom, left, right], each >= 0 and smaller than " \
        "the kernel (2x2)" in msgs[0]
    assert "attribute ksize is [2,2], expected 4 values [1, 1, h, w] (NCHW order)" in msgs[1]
    assert 'attribute padding_mode is "FULL"' in msgs[2]
    assert 'attribute data_format is "NHWC"; the simulator implements NCHW only' in msgs[3]
    assert "output 0 (y) has shape [1,2,3,3], expected [1,2,2,2] (pooled x)" in msgs[4]
    assert "input 0 (x) has format NHWC" in msgs[5]
    assert "required attribute ksize is missing" in msgs[8]
    assert 'required attribute padding ("VALID" or "SAME") is missing' in msgs[9]
    assert 'attribute data_format is "NHWC" (the default); the simulator implements NCHW only' in msgs[10]
    assert "input 2 (grad) has shape [1,2,3,3], expected [1,2,2,2]" in msgs[11]
    assert "input 1 (x2) has shape [1,2,3,3], expected [1,2,2,2] (the shape of input 2 (grad))" in msgs[12]
    assert 'attribute padding is "CALCULATED", expected "VALID" or "SAME"' in msgs[13]
    assert "input 0 (x1) has shape [1,2,0,4], expected every dim >= 1" in msgs[14]


# --- MaxPool3D (NCDHW, dilation): hicann/ops-nn@e5c3fa93 pooling/max_pool3_d (proto, def, infershape:
# output floor((L - d(k - 1) - 1) / s) + 1, ceil_mode rounding up and dropping a last window that
# would start past the input + front pad; tiling: pads each in [0, dilated extent)) -----------------

def pool3d_ref(x, k, s, d, pads, ceil_mode):
    """The window scan of select(), over the dilated in-image positions in row-major order."""
    n, c = x.shape[:2]
    outs = []
    for a in range(3):
        extent = d[a] * (k[a] - 1) + 1
        span = x.shape[2 + a] + pads[2 * a] + pads[2 * a + 1] - extent
        o = (-(-span // s[a]) if ceil_mode else span // s[a]) + 1
        if (o - 1) * s[a] >= x.shape[2 + a] + pads[2 * a]:
            o -= 1
        outs.append(o)
    y = np.empty((n, c, *outs), x.dtype)
    for idx in np.ndindex(n, c, *outs):
        start = [idx[2 + a] * s[a] - pads[2 * a] for a in range(3)]
        best, arg = -np.inf, None
        for off in np.ndindex(*k):
            pos = tuple(start[a] + off[a] * d[a] for a in range(3))
            if all(0 <= pos[a] < x.shape[2 + a] for a in range(3)):
                v = float(x[idx[0], idx[1]][pos])
                if arg is None or v > best or v != v:
                    best, arg = v, pos
        y[idx] = x[idx[0], idx[1]][arg] if arg is not None else -np.inf
    return y


POOL3D_CASES = [  # ksize, strides, dilation, pads, ceil_mode
    ((2, 2, 2), (1, 1, 1), (1, 1, 1), (0,) * 6, 0),
    ((2, 2, 2), (1, 1, 1), (2, 2, 2), (0,) * 6, 0),
    ((3, 2, 3), (2, 1, 2), (1, 2, 1), (1, 0, 0, 1, 2, 2), 1),
    ((1, 3, 3), (1, 2, 2), (1, 1, 2), (0, 0, 1, 1, 4, 0), 0),
    ((1, 1, 3), (1, 1, 3), (1, 1, 3), (0, 0, 0, 0, 2, 6), 1),
]


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
def test_max_pool_3d(tmp_path, dtype):
    rng = np.random.default_rng(23)
    x = sample(rng, (2, 2, 4, 5, 7), dtype)
    x_finite = sample(rng, (2, 2, 4, 5, 7), dtype, nans=False)
    cases, refs = [], []
    for k, s, d, pads, ceil_mode in POOL3D_CASES:
        attrs = {"ksize": [1, 1, *k], "strides": [1, 1, *s], "dilation": [1, 1, *d], "padding": "CALCULATED",
                 "pads": list(pads), "ceil_mode": ceil_mode, "data_format": "NCDHW"}
        for data in (x, x_finite):
            ref = pool3d_ref(data, k, s, d, pads, ceil_mode)
            cases.append(("MaxPool3D", [data], [(acl_dtype(dtype), list(ref.shape))], attrs))
            refs.append(ref)
            if data is x_finite and d == (1, 1, 1):  # the geometry, independently: -inf padded windows
                padded = np.pad(data.astype(np.float32), ((0, 0), (0, 0), *[(pads[2 * a], k[a] * 4) for a in range(3)]),
                                constant_values=-np.inf)
                win = sliding_window_view(padded, k, axis=(2, 3, 4))[:, :, ::s[0], ::s[1], ::s[2]]
                got = win.max(axis=(5, 6, 7))[:, :, :ref.shape[2], :ref.shape[3], :ref.shape[4]]
                assert np.array_equal(got, ref.astype(np.float32))
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(y, ref)


def test_max_pool_3d_errors(tmp_path):
    x = np.ones((1, 1, 3, 4, 4), np.float32)
    ok = {"ksize": [1, 1, 2, 2, 2], "strides": [1, 1, 1, 1, 1], "padding": "CALCULATED", "data_format": "NCDHW"}
    y = [(ACL_FLOAT, [1, 1, 2, 3, 3])]
    results = run_ops(tmp_path, [
        ("MaxPool3D", [x], y, {**ok, "data_format": "NDHWC"}),
        ("MaxPool3D", [x], y, {k: v for k, v in ok.items() if k != "padding"}),
        ("MaxPool3D", [x], y, {**ok, "padding": "SAME"}),
        ("MaxPool3D", [x], y, {**ok, "pads": [2, 0, 0, 0, 0, 0]}),
        ("MaxPool3D", [x], y, {**ok, "ksize": [2, 2, 2]}),
        ("MaxPool3D", [x.astype(np.float64)], [(acl_dtype(np.float64), [1, 1, 2, 3, 3])], ok),
        ("MaxPool3D", [x[0]], [(ACL_FLOAT, [1, 2, 3, 3])], ok),
        ("MaxPool3D", [x], [(ACL_FLOAT, [1, 1, 2, 3, 4])], ok),
        ("MaxPool3D", [x], y, ok),
    ])
    assert [r[0] for r in results] == [ACL_ERROR_OP_ATTR_NOT_MATCH] * 5 + [
        ACL_ERROR_UNSUPPORTED_DATA_TYPE, ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_OUTPUT_NOT_MATCH, 0]
    msgs = [r[1] for r in results]
    assert "data_format is \"NDHWC\"; the simulator implements NCDHW only" in msgs[0]
    assert "required attribute padding is missing" in msgs[1]
    assert "smaller than the dilated kernel extent" in msgs[3]
    assert "expected 5 values [1, 1, d, h, w]" in msgs[4]


# --- AvgPool3D (NCDHW): hicann/ops-nn@e5c3fa93 pooling/avg_pool3_d (proto, def, infershape; the
# Atlas A2/A3 kernels divide with each axis's front pad at both ends: avg_pool3_d_tiling.cpp:641-649,
# op_kernel/avg_pool3d_common.h:100-112) -------------------------------------------------------------

def avg_pool3d_ref(x, k, s, pads, ceil_mode, include_pad, front_pads_only=False):
    """Sum of the in-image window in float64 (exact for these small integers), divided by PyTorch's
    divisor: the window clipped to the padded input, or its in-image count."""
    outs = []
    for a in range(3):
        span = x.shape[2 + a] + pads[2 * a] + pads[2 * a + 1] - k[a]
        o = (-(-span // s[a]) if ceil_mode else span // s[a]) + 1
        if (o - 1) * s[a] >= x.shape[2 + a] + pads[2 * a]:
            o -= 1
        outs.append(o)
    y = np.empty(x.shape[:2] + tuple(outs), np.float64)
    for idx in np.ndindex(*y.shape):
        lo, hi, padded = [], [], 1
        for a in range(3):
            start = idx[2 + a] * s[a] - pads[2 * a]
            back = pads[2 * a] if front_pads_only else pads[2 * a + 1]
            padded *= min(start + k[a], x.shape[2 + a] + back) - start
            lo.append(max(start, 0))
            hi.append(min(start + k[a], x.shape[2 + a]))
        window = x[idx[0], idx[1], lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]].astype(np.float64)
        y[idx] = window.sum() / (padded if include_pad else window.size)
    return y


AVG3D_CASES = [  # ksize, strides, pads, ceil_mode, count_include_pad
    ((2, 2, 2), (1, 1, 1), (0,) * 6, False, True),
    ((3, 2, 3), (2, 1, 2), (1, 1, 0, 1, 2, 2), True, False),
    ((3, 3, 3), (2, 2, 2), (1, 1, 1, 1, 1, 1), True, True),
    ((1, 3, 2), (1, 3, 1), (0, 0, 2, 2, 1, 1), False, True),
]


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
@pytest.mark.parametrize("soc", ["Ascend950PR", "Ascend910B1"])
def test_avg_pool_3d(tmp_path, dtype, soc):
    rng = np.random.default_rng(24)
    x = rng.integers(-8, 9, (2, 2, 4, 5, 7)).astype(dtype)
    cases, refs = [], []
    for k, s, pads, ceil_mode, include in AVG3D_CASES:
        attrs = {"ksize": list(k), "strides": [1, 1, *s], "pads": list(pads), "ceil_mode": ceil_mode,
                 "count_include_pad": include, "data_format": "NCDHW"}
        ref = avg_pool3d_ref(x, k, s, pads, ceil_mode, include)
        cases.append(("AvgPool3D", [x], [(acl_dtype(dtype), list(ref.shape))], attrs))
        refs.append(ref)
    cases.append(("AvgPool3D", [x], [(acl_dtype(dtype), [2, 2, 3, 4, 6])],
                  {"ksize": [2], "strides": [1], "pads": [0], "divisor_override": 3, "data_format": "NCDHW"}))
    refs.append(sliding_window_view(x.astype(np.float64), (2, 2, 2), axis=(2, 3, 4)).sum(axis=(5, 6, 7)) / 3)
    for (rc, msg, (y,)), ref in zip(run_ops(tmp_path, cases, ACLSIM_SOC_NAME=soc), refs):
        assert rc == 0 and msg is None, msg
        np.testing.assert_array_equal(y.astype(np.float32), ref.astype(np.float32).astype(dtype).astype(np.float32))


def test_avg_pool_3d_asymmetric_pads_divide_with_the_front_pad_on_atlas_a2(tmp_path):
    """count_include_pad with back pad != front pad: Ascend 950 divides by PyTorch's window; the A2/A3
    kernels as if the back pad were the front one (the placed kernel refuses that case there)."""
    x = np.arange(1, 1 + 2 * 3 * 4, dtype=np.float32).reshape(1, 1, 2, 3, 4)
    attrs = {"ksize": [1, 2, 2], "strides": [1, 1, 1, 2, 2], "pads": [0, 0, 0, 1, 1, 0], "count_include_pad": True,
             "data_format": "NCDHW"}
    want = {soc: avg_pool3d_ref(x, (1, 2, 2), (1, 2, 2), (0, 0, 0, 1, 1, 0), False, True, soc == "Ascend910B1")
            for soc in ("Ascend950PR", "Ascend910B1")}
    assert not np.array_equal(want["Ascend950PR"], want["Ascend910B1"])
    for soc, ref in want.items():
        ((rc, msg, (y,)),) = run_ops(tmp_path, [("AvgPool3D", [x], [(ACL_FLOAT, list(ref.shape))], attrs)],
                                     ACLSIM_SOC_NAME=soc)
        assert rc == 0, msg
        np.testing.assert_array_equal(y, ref.astype(np.float32))


def test_avg_pool_3d_errors(tmp_path):
    x = np.ones((1, 1, 3, 4, 4), np.float32)
    ok = {"ksize": [2, 2, 2], "strides": [1, 1, 1], "pads": [0, 0, 0], "data_format": "NCDHW"}
    y = [(ACL_FLOAT, [1, 1, 2, 3, 3])]
    results = run_ops(tmp_path, [
        ("AvgPool3D", [x], y, {**ok, "data_format": "NDHWC"}),
        ("AvgPool3D", [x], y, {k: v for k, v in ok.items() if k != "pads"}),
        ("AvgPool3D", [x], y, {**ok, "pads": [2, 0, 0, 0, 0, 0]}),
        ("AvgPool3D", [x], y, {**ok, "ksize": [2, 2]}),
        ("AvgPool3D", [x.astype(np.float64)], [(acl_dtype(np.float64), [1, 1, 2, 3, 3])], ok),
        ("AvgPool3D", [x[0]], [(ACL_FLOAT, [1, 2, 3, 3])], ok),
        ("AvgPool3D", [x], [(ACL_FLOAT, [1, 1, 2, 3, 4])], ok),
    ], ACLSIM_SOC_NAME="Ascend910B1")
    assert [r[0] for r in results] == [ACL_ERROR_OP_ATTR_NOT_MATCH] * 4 + [
        ACL_ERROR_UNSUPPORTED_DATA_TYPE, ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_OUTPUT_NOT_MATCH]
    msgs = [r[1] for r in results]
    assert "data_format is \"NDHWC\"; the simulator implements NCDHW only" in msgs[0]
    assert "required attribute pads is missing" in msgs[1]
    assert "smaller than the kernel on its axis" in msgs[2]
    assert "expected 1, 3 ([d, h, w]) or 5" in msgs[3]


# --- MaxPool3DWithArgmaxV2: hicann/ops-nn pooling/max_pool3d_with_argmax_v2 (proto: ksize / strides /
# pads of 3 values, pads symmetric in [0, k / 2]; golden: torch.nn.MaxPool3d(return_indices=True),
# argmax the index in the (n, c) plane; aclnn doc: on Atlas A2/A3 dilation 1 and int32 only) --------

def argmax_ref(x, k, s, p, ceil_mode):
    """(y, argmax) from sliding windows over x padded with -inf: np.argmax of each window in (d, h, w)
    order (the first maximum), its plane index d * H * W + h * W + w. Finite x only."""
    n, c, D, H, W = x.shape
    outs = []
    for a, L in enumerate((D, H, W)):
        span = L + 2 * p[a] - k[a]
        o = (-(-span // s[a]) if ceil_mode else span // s[a]) + 1
        outs.append(o - 1 if ceil_mode and (o - 1) * s[a] >= L + p[a] else o)
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), *[(p[a], k[a] * 3) for a in range(3)]),
                    constant_values=-np.inf)
    win = sliding_window_view(padded, k, axis=(2, 3, 4))[:, :, ::s[0], ::s[1], ::s[2]][:, :, :outs[0], :outs[1], :outs[2]]
    flat = win.reshape(*win.shape[:5], -1)
    j = flat.argmax(axis=-1)
    kd, kh, kw = np.unravel_index(j, k)
    od, oh, ow = np.meshgrid(*[np.arange(o) for o in outs], indexing="ij")
    d, h, w = od * s[0] - p[0] + kd, oh * s[1] - p[1] + kh, ow * s[2] - p[2] + kw
    y = np.take_along_axis(flat, j[..., None], -1)[..., 0].astype(x.dtype)
    return y, (d * H * W + h * W + w).astype(np.int32)


ARGMAX_CASES = [  # ksize, strides, pads, ceil_mode
    ((1, 5, 5), (1, 1, 1), (0, 2, 2), False),  # ONNX's maxpool_with_argmax_2d_precomputed_pads, as 3-D
    ((1, 2, 2), (1, 2, 2), (0, 0, 0), False),
    ((2, 3, 3), (2, 2, 1), (1, 1, 0), True),
    ((3, 1, 2), (1, 1, 2), (1, 0, 1), True),
]


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
def test_max_pool3d_with_argmax_v2(tmp_path, dtype):
    rng = np.random.default_rng(25)
    x = rng.standard_normal((2, 3, 4, 5, 6)).astype(np.float32).astype(dtype)  # distinct values: no ties
    cases, refs = [], []
    for k, s, p, ceil_mode in ARGMAX_CASES:
        y, arg = argmax_ref(x, k, s, p, ceil_mode)
        attrs = {"ksize": list(k), "strides": list(s), "pads": list(p), "ceil_mode": ceil_mode,
                 "data_format": "NCDHW"}
        cases.append(("MaxPool3DWithArgmaxV2", [x], [(acl_dtype(dtype), list(y.shape)), (acl_dtype(np.int32),
                                                                                          list(y.shape))], attrs))
        refs.append((y, arg))
    for (rc, msg, outs), (y, arg) in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(outs[0], y)
        np.testing.assert_array_equal(outs[1], arg)


def test_max_pool3d_with_argmax_v2_ties_and_nans(tmp_path):
    """Ties: the first maximum in (d, h, w) order; a NaN beats numbers, and of several the last wins
    (torch's `val > max || isnan(val)`, the golden's)."""
    x = np.array([3, 1, np.nan, 2, 3, 2, 5, np.nan], np.float32).reshape(1, 1, 1, 2, 4)
    attrs = {"ksize": [1, 2, 2], "strides": [1, 2, 2], "pads": [0, 0, 0], "data_format": "NCDHW"}
    ((rc, msg, (y, arg)),) = run_ops(tmp_path, [("MaxPool3DWithArgmaxV2", [x], [(ACL_FLOAT, [1, 1, 1, 1, 2]),
                                                                                (acl_dtype(np.int32), [1, 1, 1, 1, 2])],
                                                 attrs)])
    assert rc == 0 and msg is None, msg
    assert arg.ravel().tolist() == [0, 7] and y.ravel()[0] == 3 and np.isnan(y.ravel()[1])


def test_max_pool3d_with_argmax_v2_errors(tmp_path):
    x = np.ones((1, 1, 2, 4, 4), np.float32)
    ok = {"ksize": [1, 2, 2], "strides": [1, 2, 2], "pads": [0, 0, 0], "data_format": "NCDHW"}
    outs = [(ACL_FLOAT, [1, 1, 2, 2, 2]), (acl_dtype(np.int32), [1, 1, 2, 2, 2])]
    results = run_ops(tmp_path, [
        ("MaxPool3DWithArgmaxV2", [x], outs, {**ok, "pads": [0, 2, 0]}),          # pad > ksize / 2
        ("MaxPool3DWithArgmaxV2", [x], outs, {**ok, "dilation": [1, 2, 1]}),      # A2: dilation 1 only
        ("MaxPool3DWithArgmaxV2", [x], [outs[0], (acl_dtype(np.int64), [1, 1, 2, 2, 2])], {**ok, "dtype": 9}),
        ("MaxPool3DWithArgmaxV2", [x], [outs[0], (acl_dtype(np.int64), [1, 1, 2, 2, 2])], ok),
        ("MaxPool3DWithArgmaxV2", [x], outs, {**ok, "data_format": "NDHWC"}),
        ("MaxPool3DWithArgmaxV2", [x], outs, {k: v for k, v in ok.items() if k != "pads"}),
        ("MaxPool3DWithArgmaxV2", [x], outs, ok),
    ])
    assert [r[0] for r in results] == [ACL_ERROR_OP_ATTR_NOT_MATCH] * 3 + [ACL_ERROR_OP_OUTPUT_NOT_MATCH] + [
        ACL_ERROR_OP_ATTR_NOT_MATCH] * 2 + [0], results
    assert "[0, ksize / 2]" in results[0][1] and "ascend910b" in results[1][1] and "int64" in results[2][1]
