"""Conv2DBackpropInput on the simulator (mindspore-ai/graphengine@cd75e149
910/third_party/fwkacllib/inc/ops/nn_calculation_ops.h:470: input_size (const int32 [4], NCHW of
y), filter [M, C/groups, kh, kw], out_backprop [N, M, Ho, Wo]; attrs strides [1, 1, sh, sw], pads
[top, bottom, left, right], dilations [1, 1, dh, dw], groups, data_format).

Checked two ways:
- bit for bit against the simulator's documented order (the "gather" form): for every dx
  element, acc = 0, then over m in its group, kh, kw (increasing) acc += dy[n, m, ho, wo] * w
  where ho = (h + top - kh*dh) / sh and wo = (w + left - kw*dw) / sw are integral and in range,
  each product and sum rounded to float32; one rounding to the output dtype;
- within float32 summation error of the "scatter" form computed in float64 (every dy element
  adds dy * w to dx[n, c, ho*sh - top + kh*dh, wo*sw - left + kw*dw]): an independent derivation
  of the index arithmetic. Bound: (terms + 1) * 2^-24 * sum |term| + 0.5 ulp(dx).
"""

import numpy as np
import pytest

from acl_ctypes import (
    ACL_ERROR_FORMAT_NOT_MATCH,
    ACL_ERROR_OP_ATTR_NOT_MATCH,
    ACL_ERROR_OP_INPUT_NOT_MATCH,
    ACL_ERROR_OP_OUTPUT_NOT_MATCH,
    ACL_ERROR_UNSUPPORTED_DATA_TYPE,
    ACL_FLOAT,
    ACL_FORMAT_NCHW,
    ACL_FORMAT_NHWC,
    BF16,
    Arg,
    Out,
    acl_dtype,
    assert_bits_equal,
    assert_within,
    const,
    nchw,
    run_ops,
    ulp,
)

pytestmark = pytest.mark.usefixtures("sim_dir")


def out_size(size, k, s, d, lo, hi):
    return (size + lo + hi - (d * (k - 1) + 1)) // s + 1


def gather_ref(dy, w, size, strides, pads, dilations, groups):
    """The simulator's documented order, float32."""
    n, c, h, wd = size
    m_all, kc, kh, kw = w.shape
    (sh, sw), (t, _, left, _), (dh, dw) = strides, pads, dilations
    _, _, oh, ow = dy.shape
    dy32, w32 = dy.astype(np.float32), w.astype(np.float32)
    mpg = m_all // groups
    acc = np.zeros((n, c, h, wd), np.float32)
    hh, ww = np.arange(h)[:, None], np.arange(wd)[None, :]
    for g in range(groups):
        cs = slice(g * kc, (g + 1) * kc)
        for m in range(g * mpg, (g + 1) * mpg):
            for ky in range(kh):
                ty = hh + t - ky * dh
                vy = (ty >= 0) & (ty % sh == 0) & (ty // sh < oh)
                for kx in range(kw):
                    tx = ww + left - kx * dw
                    vx = (tx >= 0) & (tx % sw == 0) & (tx // sw < ow)
                    valid = vy & vx  # [h, w]
                    yy, xx = np.clip(ty // sh, 0, oh - 1), np.clip(tx // sw, 0, ow - 1)
                    d = dy32[:, m][:, yy, xx]  # [n, h, w]
                    with np.errstate(all="ignore"):
                        prod = d[:, None] * w32[m, :, ky, kx][None, :, None, None]  # [n, kc, h, w]
                    acc[:, cs] = np.where(valid[None, None], acc[:, cs] + prod, acc[:, cs])
    return acc.astype(dy.dtype)


def scatter_ref64(dy, w, size, strides, pads, dilations, groups):
    """float64 dx and sum |term| by scattering every dy element through the filter."""
    n, c, h, wd = size
    m_all, kc, kh, kw = w.shape
    (sh, sw), (t, _, left, _), (dh, dw) = strides, pads, dilations
    mpg = m_all // groups
    dx = np.zeros((n, c, h, wd))
    mag = np.zeros((n, c, h, wd))
    counts = np.zeros((n, c, h, wd))
    dy64, w64 = dy.astype(np.float64), w.astype(np.float64)
    for m in range(m_all):
        g = m // mpg
        for ho in range(dy.shape[2]):
            for ky in range(kh):
                y = ho * sh - t + ky * dh
                if not 0 <= y < h:
                    continue
                for wo in range(dy.shape[3]):
                    for kx in range(kw):
                        x = wo * sw - left + kx * dw
                        if not 0 <= x < wd:
                            continue
                        term = dy64[:, m, ho, wo][:, None] * w64[m, :, ky, kx][None, :]  # [n, kc]
                        dx[:, g * kc:(g + 1) * kc, y, x] += term
                        mag[:, g * kc:(g + 1) * kc, y, x] += np.abs(term)
                        counts[:, g * kc:(g + 1) * kc, y, x] += 1
    return dx, mag, counts


CASES = {
    "basic": dict(size=(2, 3, 6, 6), w=(4, 3, 3, 3), strides=(1, 1), pads=(1, 1, 1, 1), dil=(1, 1), groups=1),
    "strided": dict(size=(2, 2, 9, 8), w=(3, 2, 3, 2), strides=(2, 3), pads=(1, 0, 2, 1), dil=(1, 1), groups=1),
    "uncovered_rows": dict(size=(1, 2, 8, 8), w=(2, 2, 2, 2), strides=(3, 3), pads=(0, 0, 0, 0), dil=(1, 1), groups=1),
    "dilated": dict(size=(1, 2, 9, 7), w=(3, 2, 3, 2), strides=(1, 2), pads=(2, 1, 0, 1), dil=(2, 1), groups=1),
    "groups": dict(size=(2, 6, 5, 5), w=(4, 3, 3, 3), strides=(1, 1), pads=(1, 1, 1, 1), dil=(1, 1), groups=2),
    "depthwise": dict(size=(1, 4, 6, 5), w=(8, 1, 3, 3), strides=(2, 1), pads=(1, 1, 1, 1), dil=(1, 1), groups=4),
    "one_by_one": dict(size=(3, 5, 4, 4), w=(7, 5, 1, 1), strides=(1, 1), pads=(0, 0, 0, 0), dil=(1, 1), groups=1),
}


def build(rng, spec, dtype):
    n, c, h, wd = spec["size"]
    m, kc, kh, kw = spec["w"]
    t, b, left, r = spec["pads"]
    oh = out_size(h, kh, spec["strides"][0], spec["dil"][0], t, b)
    ow = out_size(wd, kw, spec["strides"][1], spec["dil"][1], left, r)
    dy = rng.standard_normal((n, m, oh, ow)).astype(dtype)
    w = rng.standard_normal((m, kc, kh, kw)).astype(dtype)
    attrs = {"strides": [1, 1, *spec["strides"]], "pads": list(spec["pads"]), "dilations": [1, 1, *spec["dil"]],
             "groups": spec["groups"], "data_format": "NCHW"}
    return dy, w, attrs


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16], ids=["float32", "float16", "bfloat16"])
def test_conv2d_backprop_input(tmp_path, dtype):
    rng = np.random.default_rng(20)
    cases, checks = [], []
    for i, (name, spec) in enumerate(CASES.items()):
        dy, w, attrs = build(rng, spec, dtype)
        size = const(np.array(spec["size"], np.int32))
        if i % 2:  # NCHW descriptors (what Conv2D needs); ND is accepted too
            ins, out = [size, nchw(w), nchw(dy)], Out(acl_dtype(dtype), spec["size"], ACL_FORMAT_NCHW)
        else:
            ins, out = [size, w, dy], (acl_dtype(dtype), list(spec["size"]))
        cases.append(("Conv2DBackpropInput", ins, [out], attrs))
        checks.append((name, spec, dy, w))
    for (rc, msg, (y,)), (name, spec, dy, w) in zip(run_ops(tmp_path, cases), checks):
        assert rc == 0 and msg is None, (name, msg)
        args = (spec["size"], spec["strides"], spec["pads"], spec["dil"], spec["groups"])
        assert_bits_equal(y, gather_ref(dy, w, *args))
        if dtype is np.float32:
            dx64, mag, counts = scatter_ref64(dy, w, *args)
            assert_within(y, dx64, (counts + 1) * 2.0**-24 * mag + 0.5 * ulp(dx64))
    # positions no window reaches get exactly +0
    y_uncovered = run_ops(tmp_path, [cases[2]])[0][2][0]
    assert (y_uncovered[:, :, 2::3] == 0).all() and not np.signbit(y_uncovered[:, :, 2::3]).any()


def test_errors(tmp_path):
    rng = np.random.default_rng(21)
    dy, w, attrs = build(rng, CASES["basic"], np.float32)
    size = np.array(CASES["basic"]["size"], np.int32)
    out = [(ACL_FLOAT, list(size))]
    no_format = {k: v for k, v in attrs.items() if k != "data_format"}
    results = run_ops(tmp_path, [
        ("Conv2DBackpropInput", [size, w, dy], out, attrs),  # input_size in device memory
        ("Conv2DBackpropInput", [const(size.astype(np.int64)), w, dy], out, attrs),
        ("Conv2DBackpropInput", [const(size), w, dy], out, no_format),
        ("Conv2DBackpropInput", [const(size), Arg(w, "device", ACL_FORMAT_NHWC), dy], out, attrs),
        ("Conv2DBackpropInput", [const(size), w, dy[:, :, :5]], out, attrs),
        ("Conv2DBackpropInput", [const(size), w, dy], out, {**attrs, "groups": 2}),
        ("Conv2DBackpropInput", [const(size), w, dy], [(ACL_FLOAT, [2, 3, 6, 5])], attrs),
        ("Conv2DBackpropInput", [const(size), w, dy], out, {k: v for k, v in attrs.items() if k != "strides"}),
        ("Conv2DBackpropInput", [const(size), w, dy], out, {**attrs, "pads": [1, 1]}),
        ("Conv2DBackpropInput", [const(size), w, dy.astype(np.float16)], out, attrs),
        ("Conv2DBackpropInput", [const(size[:3]), w, dy], out, attrs),
    ])
    assert [r[0] for r in results] == [ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_UNSUPPORTED_DATA_TYPE,
                                       ACL_ERROR_OP_ATTR_NOT_MATCH, ACL_ERROR_FORMAT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_OP_OUTPUT_NOT_MATCH, ACL_ERROR_OP_ATTR_NOT_MATCH,
                                       ACL_ERROR_OP_ATTR_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH]
    msgs = [r[1] for r in results]
    assert "input 0 (input_size) must be a constant input (aclSetTensorConst)" in msgs[0]
    assert "input 0 (input_size) has dtype ACL_INT64, expected ACL_INT32" in msgs[1]
    assert 'attribute data_format is "NHWC (default)", expected "NCHW"' in msgs[2]
    assert "input 1 (filter) has format NHWC; the simulator implements NCHW only" in msgs[3]
    assert "input 2 (out_backprop) has shape [2,4,5,6], expected [2,4,6,6]: Ho = (H + top + bottom" in msgs[4]
    assert "do not fit groups=2" in msgs[5]
    assert "output 0 (y) has shape [2,3,6,5], expected [2,3,6,6] (input_size)" in msgs[6]
    assert "required attribute strides is missing" in msgs[7]
    assert "attribute pads is [1,1], expected 4 values >= 0 [top, bottom, left, right]" in msgs[8]
    assert "input 0 (input_size) is [2,3,6], expected 4 values (NCHW of y)" in msgs[10]
