"""Conv3DV2 on the simulator (hicann/ops-nn conv/conv3d_v2: README.md and op_graph/conv3d_v2_proto.h),
bit-exact against a NumPy reference written here from the documented formula, in the order the
simulator promises (float32 accumulation over input channel, kd, kh, kw in increasing order, each
product and sum rounded, + bias, one rounding), and the README's Atlas A2/A3 limits as errors."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from acl_ctypes import (
    ACL_ERROR_OP_ATTR_NOT_MATCH,
    ACL_ERROR_OP_INPUT_NOT_MATCH,
    ACL_ERROR_OP_OUTPUT_NOT_MATCH,
    ACL_ERROR_UNSUPPORTED_DATA_TYPE,
    acl_dtype,
    assert_bits_equal,
    const,
    run_ops,
)

pytestmark = pytest.mark.usefixtures("sim_dir")
RNG = np.random.default_rng(5)


def conv3d_ref(x, w, bias, strides, pads, dilations, groups):
    """out[n, m, o] = sum over the group's channels c, then kd, kh, kw (increasing) of
    xpad[n, c, o * stride + k * dilation] * w[m, c, k] in float32, + bias; README's extents."""
    xf, wf = x.astype(np.float32), w.astype(np.float32)
    n, c = x.shape[:2]
    m, kc = w.shape[:2]
    k = w.shape[2:]
    xp = np.pad(xf, ((0, 0), (0, 0), (pads[0], pads[1]), (pads[2], pads[3]), (pads[4], pads[5])))
    out_sp = [(x.shape[2 + i] + pads[2 * i] + pads[2 * i + 1] - (dilations[i] * (k[i] - 1) + 1)) // strides[i] + 1
              for i in range(3)]
    out = np.zeros((n, m, *out_sp), np.float32)
    mpg = m // groups
    for g in range(groups):
        ms = slice(g * mpg, (g + 1) * mpg)
        for ci in range(kc):
            for kd in range(k[0]):
                for kh in range(k[1]):
                    for kw in range(k[2]):
                        s = [slice(q * dilations[i], q * dilations[i] + strides[i] * (out_sp[i] - 1) + 1, strides[i])
                             for i, q in enumerate((kd, kh, kw))]
                        patch = xp[:, g * kc + ci, s[0], s[1], s[2]]
                        prod = patch[:, None] * wf[ms, ci, kd, kh, kw][None, :, None, None, None]
                        out[:, ms] = out[:, ms] + prod
    if bias is not None:
        out = out + bias.astype(np.float32)[None, :, None, None, None]
    return out.astype(x.dtype)


def attrs_of(strides, pads, dilations, groups):
    return {"strides": [1, 1, *strides], "pads": list(pads), "dilations": [1, 1, *dilations], "groups": groups,
            "data_format": "NCDHW"}


CASES = [  # x shape, filter shape, bias, strides, pads, dilations, groups
    ((2, 3, 4, 5, 6), (4, 3, 2, 3, 2), True, (1, 1, 1), (0, 0, 0, 0, 0, 0), (1, 1, 1), 1),
    ((1, 2, 7, 6, 5), (2, 2, 3, 2, 2), False, (2, 1, 2), (1, 2, 0, 1, 2, 0), (1, 2, 1), 1),
    ((1, 4, 5, 5, 5), (4, 1, 2, 2, 2), True, (1, 2, 1), (1, 1, 1, 1, 1, 1), (2, 2, 2), 4),  # depthwise, dilated
    ((3, 1, 9, 1, 4), (1, 1, 3, 1, 2), False, (3, 1, 1), (2, 0, 0, 0, 0, 1), (2, 1, 3), 1),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16], ids=["f32", "f16", "bf16"])
def test_conv3d_v2_matches_the_formula_bit_for_bit(tmp_path, dtype):
    cases, refs = [], []
    for xs, ws, has_bias, strides, pads, dilations, groups in CASES:
        x = RNG.uniform(-2, 2, xs).astype(np.float32).astype(dtype)
        w = RNG.uniform(-1, 1, ws).astype(np.float32).astype(dtype)
        b = RNG.uniform(-1, 1, ws[0]).astype(np.float32).astype(dtype) if has_bias else None
        ref = conv3d_ref(x, w, b, strides, pads, dilations, groups)
        ins = [x, w] + ([b] if b is not None else [])
        cases.append(("Conv3DV2", ins, [(acl_dtype(dtype), list(ref.shape))], attrs_of(strides, pads, dilations, groups)))
        refs.append(ref)
    for (rc, msg, outs), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        assert_bits_equal(outs[0], ref)


def test_conv3d_v2_refuses_what_the_readme_excludes(tmp_path):
    x = np.ones((1, 2, 4, 4, 4), np.float32)
    w = np.ones((2, 2, 2, 2, 2), np.float32)
    good = attrs_of((1, 1, 1), (0,) * 6, (1, 1, 1), 1)
    out = [(acl_dtype(np.float32), [1, 2, 3, 3, 3])]
    results = run_ops(tmp_path, [
        ("Conv3DV2", [x, w], out, dict(good, strides=[1, 1, 1, 64, 1])),          # stride h > 63
        ("Conv3DV2", [x, w], out, dict(good, pads=[0, 0, 256, 0, 0, 0])),          # pad h > 255
        ("Conv3DV2", [x, w], out, dict(good, dilations=[1, 1, 1, 1, 256])),        # dilation w > 255
        ("Conv3DV2", [x, w], out, dict(good, data_format="NDHWC")),
        ("Conv3DV2", [x.astype(np.int32), w.astype(np.int32)], out, good),
        ("Conv3DV2", [x, w], [(acl_dtype(np.float32), [1, 2, 3, 3, 4])], good),
        ("Conv3DV2", [x[:, :, :0], w], [(acl_dtype(np.float32), [1, 2, 0, 3, 3])], good),  # empty
        ("Conv3DV2", [x, w], out, good),                                           # the good one runs
    ])
    assert [r[0] for r in results] == [ACL_ERROR_OP_ATTR_NOT_MATCH] * 4 + [
        ACL_ERROR_UNSUPPORTED_DATA_TYPE, ACL_ERROR_OP_OUTPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH, 0], results
    assert "h and w in [1, 63]" in results[0][1] and "[0, 255]" in results[1][1]
    assert "empty tensors" in results[6][1]
    np.testing.assert_array_equal(results[7][2][0], np.full((1, 2, 3, 3, 3), 16, np.float32))


# -- Conv3DBackpropInputV2: hicann/ops-nn conv/conv3d_backprop_input_v2 ----------------------------

def conv3d_backprop_input_ref(dy, w, x_shape, strides, pads, dilations, groups):
    """The README's formula as a scatter: every dy[n, m, o] * w[m, c, k] lands on x position
    o * stride - front + k * dilation (inside x), in float64."""
    dx = np.zeros(x_shape, np.float64)
    m_total, kc = w.shape[:2]
    mpg = m_total // groups
    dy64, w64 = dy.astype(np.float64), w.astype(np.float64)
    for n, m, *o in np.ndindex(*dy.shape):
        g = m // mpg
        for ci, *k in np.ndindex(kc, *w.shape[2:]):
            p = [o[a] * strides[a] - pads[2 * a] + k[a] * dilations[a] for a in range(3)]
            if all(0 <= p[a] < x_shape[2 + a] for a in range(3)):
                dx[(n, g * kc + ci, *p)] += dy64[(n, m, *o)] * w64[(m, ci, *k)]
    return dx


BACKPROP_CASES = [  # x shape, filter shape, strides, pads, dilations, groups
    ((2, 3, 4, 5, 6), (4, 3, 2, 3, 2), (1, 1, 1), (0, 0, 0, 0, 0, 0), (1, 1, 1), 1),
    ((1, 2, 7, 6, 5), (2, 2, 3, 2, 2), (2, 1, 2), (1, 2, 0, 1, 2, 0), (1, 2, 1), 1),
    ((1, 4, 5, 5, 5), (4, 1, 2, 2, 2), (1, 2, 1), (1, 1, 1, 1, 1, 1), (2, 2, 2), 4),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["f32", "f16"])
def test_conv3d_backprop_input_v2_is_the_formula(tmp_path, dtype):
    cases, refs = [], []
    for xs, ws, strides, pads, dilations, groups in BACKPROP_CASES:
        out = [(xs[2 + a] + pads[2 * a] + pads[2 * a + 1] - (dilations[a] * (ws[2 + a] - 1) + 1)) // strides[a] + 1
               for a in range(3)]
        dy = RNG.uniform(-1, 1, (xs[0], ws[0], *out)).astype(dtype)
        w = RNG.uniform(-1, 1, ws).astype(dtype)
        attrs = attrs_of(strides, pads, dilations, groups)
        cases.append(("Conv3DBackpropInputV2", [const(np.array(xs, np.int32)), w, dy], [(acl_dtype(dtype), list(xs))],
                      attrs))
        refs.append(conv3d_backprop_input_ref(dy, w, xs, strides, pads, dilations, groups))
    for (rc, msg, outs), ref in zip(run_ops(tmp_path, cases), refs):
        assert rc == 0 and msg is None, msg
        tol = 1e-5 if dtype == np.float32 else 4e-3
        np.testing.assert_allclose(outs[0].astype(np.float64), ref, rtol=tol, atol=tol)


def test_conv3d_backprop_input_v2_errors(tmp_path):
    w = np.ones((2, 2, 2, 2, 2), np.float32)
    dy = np.ones((1, 2, 3, 3, 3), np.float32)
    size = const(np.array([1, 2, 4, 4, 4], np.int32))
    good = attrs_of((1, 1, 1), (0,) * 6, (1, 1, 1), 1)
    out = [(acl_dtype(np.float32), [1, 2, 4, 4, 4])]
    results = run_ops(tmp_path, [
        ("Conv3DBackpropInputV2", [size, w, dy], out, dict(good, strides=[1, 1, 256, 1, 1])),  # stride d > 255
        ("Conv3DBackpropInputV2", [size, w, dy], out, {k: v for k, v in good.items() if k != "data_format"}),
        ("Conv3DBackpropInputV2", [size, w, dy[:, :, :2]], out, good),
        ("Conv3DBackpropInputV2", [size, w, dy], out, good),
    ])
    assert [r[0] for r in results] == [ACL_ERROR_OP_ATTR_NOT_MATCH, ACL_ERROR_OP_ATTR_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, 0], results
    assert "NDHWC (default)" in results[1][1] and "forward convolution's output" in results[2][1]
    # all ones: each x position counts the dy positions whose window covers it
    np.testing.assert_array_equal(results[3][2][0], conv3d_backprop_input_ref(dy, w, (1, 2, 4, 4, 4), (1, 1, 1),
                                                                              (0,) * 6, (1, 1, 1), 1))
