"""ApplyMomentum and ApplyAdamW on the simulator.

Bit for bit against NumPy float32 references of CANN's kernels (hicann/ops-nn@e5c3fa93):
- ApplyMomentum, optim/apply_momentum/op_kernel/arch35/apply_momentum_dag.h:40-78 (accum is
  written back into input 1's buffer, apply_momentum.cpp:35):
  accum' = grad + accum*momentum; var' = var - lr*accum', or with use_nesterov
  var' = var - (grad*lr + (accum'*momentum)*lr);
- ApplyAdamW, optim/apply_adam_w/op_kernel/arch35/apply_adam_w_dag.h:78-138, 186-266:
  g = grad * (maximize ? -1 : 1); m' = m*b1 - (b1 + -1)*g; v' = b2*v - ((b2 + -1)*g)*g;
  var_t = var*((wd*lr)*-1 + 1); denom = sqrt((v'*-1) / (b2p*b2 + -1)) + eps;
  var' = var_t + ((lr / (b1p*b1 + -1))*m') / denom, with m', v' unrounded in var'.
float16/bfloat16: every input (scalars too) loads exactly into float32, each output rounds once.

And the meaning of ApplyAdamW's beta powers, against PyTorch's AdamW written in float64: they
are beta^(t-1) for step t (the op multiplies them by beta itself).
"""

import numpy as np
import pytest

from acl_ctypes import (
    ABSENT,
    ACL_ERROR_OP_ATTR_NOT_MATCH,
    ACL_ERROR_OP_INPUT_NOT_MATCH,
    ACL_ERROR_OP_OUTPUT_NOT_MATCH,
    ACL_ERROR_UNSUPPORTED_DATA_TYPE,
    ACL_FLOAT,
    FLOAT_IDS,
    FLOATS,
    Out,
    acl_dtype,
    assert_bits_equal,
    const,
    host,
    run_ops,
    ulp,
)

pytestmark = pytest.mark.usefixtures("sim_dir")
f32 = np.float32


def momentum_ref(var, accum, lr, grad, mom, nesterov):
    v, a, g = (t.astype(np.float32) for t in (var, accum, grad))
    lr, mom = f32(lr.astype(np.float32)[0]), f32(mom.astype(np.float32)[0])
    with np.errstate(all="ignore"):
        a_new = g + a * mom
        v_new = v - (g * lr + (a_new * mom) * lr) if nesterov else v - lr * a_new
    return v_new.astype(var.dtype), a_new.astype(var.dtype)


def tensors(rng, shape, dtype):
    var = rng.standard_normal(shape).astype(np.float32)
    grad = rng.standard_normal(shape).astype(np.float32)
    var.reshape(-1)[:3] = [np.nan, -0.0, np.inf]
    grad.reshape(-1)[3:5] = [-0.0, 1e-30]
    return var.astype(dtype), grad.astype(dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
@pytest.mark.parametrize("nesterov", [False, True], ids=["plain", "nesterov"])
def test_apply_momentum(tmp_path, dtype, nesterov):
    rng = np.random.default_rng(25)
    var, grad = tensors(rng, (4, 6), dtype)
    accum = rng.standard_normal((4, 6)).astype(dtype)
    lr, mom = np.array([0.05], dtype), np.array([0.9], dtype)
    want_var, want_accum = momentum_ref(var, accum, lr, grad, mom, nesterov)
    attrs = {"use_nesterov": nesterov, "use_locking": False}
    code = acl_dtype(dtype)
    cases = [
        ("ApplyMomentum", [var, accum, lr, grad, mom], [(code, [4, 6])], attrs, [1]),
        # var written in place, scalars from host / constant memory
        ("ApplyMomentum", [var, accum, host(lr), grad, const(mom)], [Out(code, (4, 6), alias=0)], attrs, [1]),
        ("ApplyMomentum", [var, np.zeros_like(accum), lr, grad, mom], [(code, [4, 6])], attrs, [1]),
    ]
    results = run_ops(tmp_path, cases)
    for rc, msg, (y, accum_after) in results[:2]:
        assert rc == 0 and msg is None, msg
        assert_bits_equal(y, want_var, nan_payload=False)
        assert_bits_equal(accum_after, want_accum)  # input 1 updated in place
    # from accum = 0 the first step is torch.optim.SGD(momentum) / nesterov: buf = grad
    rc, _, (y, accum_after) = results[2]
    assert rc == 0
    assert_bits_equal(accum_after, (grad.astype(np.float32) + f32(0.0)).astype(dtype))


def adamw_ref(var, m, v, b1p, b2p, lr, wd, b1, b2, eps, grad, maximize):
    s = {k: f32(np.asarray(val).astype(np.float32).reshape(-1)[0]) for k, val in
         dict(b1p=b1p, b2p=b2p, lr=lr, wd=wd, b1=b1, b2=b2, eps=eps).items()}
    var32, m32, v32 = var.astype(np.float32), m.astype(np.float32), v.astype(np.float32)
    with np.errstate(all="ignore"):
        g = grad.astype(np.float32) * (f32(-1) if maximize else f32(1))
        m_new = m32 * s["b1"] - (s["b1"] + f32(-1)) * g
        v_new = s["b2"] * v32 - ((s["b2"] + f32(-1)) * g) * g
        var_t = var32 * ((s["wd"] * s["lr"]) * f32(-1) + f32(1))
        denom = np.sqrt((v_new * f32(-1)) / (s["b2p"] * s["b2"] + f32(-1))) + s["eps"]
        var_new = var_t + ((s["lr"] / (s["b1p"] * s["b1"] + f32(-1))) * m_new) / denom
    return var_new.astype(var.dtype), m_new.astype(var.dtype), v_new.astype(var.dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
@pytest.mark.parametrize("maximize,wd", [(False, 0.0), (False, 0.01), (True, 0.1)], ids=["adam", "adamw", "maximize"])
def test_apply_adam_w(tmp_path, dtype, maximize, wd):
    rng = np.random.default_rng(26)
    shape = (5, 7)
    var, grad = tensors(rng, shape, dtype)
    m = (rng.standard_normal(shape) * 0.1).astype(dtype)
    v = (rng.random(shape) * 0.01).astype(dtype)
    step = 3
    b1, b2 = 0.9, 0.999
    eps = 1e-8 if dtype is np.float32 else 1e-3
    scalars = [b1 ** (step - 1), b2 ** (step - 1), 1e-3, wd, b1, b2, eps]
    sc = [np.array([x], dtype) for x in scalars]
    want = adamw_ref(var, m, v, *sc, grad, maximize)
    attrs = {"amsgrad": False, "maximize": maximize}
    code = acl_dtype(dtype)
    outs = [(code, list(shape))] * 3
    in_place = [Out(code, shape, alias=i) for i in range(3)]
    cases = [
        ("ApplyAdamW", [var, m, v, *sc, grad], outs, attrs),
        ("ApplyAdamW", [var, m, v, *sc, grad, ABSENT], in_place, attrs),
        ("ApplyAdamW", [var, m, v, *[const(s) for s in sc], grad], outs, None if not maximize else attrs),
    ]
    for rc, msg, ys in run_ops(tmp_path, cases):
        assert rc == 0 and msg is None, msg
        for y, w in zip(ys, want):
            assert_bits_equal(y, w, nan_payload=False)


def test_adam_w_beta_powers_are_beta_to_the_previous_step(tmp_path):
    """Three steps; each is compared with one step of PyTorch's AdamW in float64 from the same
    state, fed beta^(t-1) as the powers: var, m, v agree within float32 rounding (var: 8 ulp +
    1e-5 of the update; m, v: 1e-5 relative). Fed beta^t instead, the updates are off (step 1:
    ~25% short)."""
    rng = np.random.default_rng(27)
    cur = [rng.standard_normal(64).astype(np.float32), np.zeros(64, np.float32), np.zeros(64, np.float32)]
    # the hyperparameters as the op sees them (float32), so only the update rule is compared
    lr, wd, b1, b2, eps = (float(f32(x)) for x in (1e-2, 0.01, 0.9, 0.999, 1e-8))
    for t in (1, 2, 3):
        g = rng.standard_normal(64)
        p, m, v = (c.astype(np.float64) for c in cur)
        decayed = p * (1 - lr * wd)  # PyTorch AdamW, float64
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        p = decayed - lr / (1 - b1**t) * m / (np.sqrt(v / (1 - b2**t)) + eps)
        sc = [np.array([x], np.float32) for x in (b1 ** (t - 1), b2 ** (t - 1), lr, wd, b1, b2, eps)]
        wrong = [np.array([x], np.float32) for x in (b1**t, b2**t)] + sc[2:]
        ((rc, msg, ys), (_, _, ys_wrong)) = run_ops(tmp_path, [
            ("ApplyAdamW", [*cur, *sc, g.astype(np.float32)], [(ACL_FLOAT, [64])] * 3, None),
            ("ApplyAdamW", [*cur, *wrong, g.astype(np.float32)], [(ACL_FLOAT, [64])] * 3, None)])
        assert rc == 0, msg
        tol = 8 * ulp(p) + 1e-5 * np.abs(p - decayed)
        assert not np.all(np.abs(ys_wrong[0] - p) <= tol)
        assert np.all(np.abs(ys[0] - p) <= tol), (t, np.max(np.abs(ys[0] - p) / tol))
        np.testing.assert_allclose(ys[1], m, rtol=1e-5, atol=1e-9)
        np.testing.assert_allclose(ys[2], v, rtol=1e-5, atol=1e-12)
        cur = ys


def test_errors(tmp_path):
    x = np.ones(4, np.float32)
    one = np.ones(1, np.float32)
    adam = [x, x, x, one, one, one, one, one, one, one, x]
    results = run_ops(tmp_path, [
        ("ApplyMomentum", [x, const(x), one, x, one], [(ACL_FLOAT, [4])], None),
        ("ApplyMomentum", [x, x, np.ones(2, np.float32), x, one], [(ACL_FLOAT, [4])], None),
        ("ApplyMomentum", [x, x.astype(np.float16), one, x, one], [(ACL_FLOAT, [4])], None),
        ("ApplyMomentum", [x, x, one, np.ones(5, np.float32), one], [(ACL_FLOAT, [4])], None),
        ("ApplyMomentum", [x, x, one, x, one], [(ACL_FLOAT, [4]), (ACL_FLOAT, [4])], None),
        ("ApplyMomentum", [x.astype(np.float64)] * 5, [(acl_dtype(np.float64), [4])], None),
        ("ApplyAdamW", adam, [(ACL_FLOAT, [4])] * 3, {"amsgrad": True}),
        ("ApplyAdamW", adam[:10], [(ACL_FLOAT, [4])] * 3, None),
        ("ApplyAdamW", adam, [(ACL_FLOAT, [4])] * 2, None),
        ("ApplyAdamW", adam[:5] + [x] + adam[6:], [(ACL_FLOAT, [4])] * 3, None),
        ("ApplyAdamW", adam, [(ACL_FLOAT, [4]), (ACL_FLOAT, [4]), (ACL_FLOAT, [5])], None),
        ("ApplyAdamW", adam[:10] + [ABSENT], [(ACL_FLOAT, [4])] * 3, None),
    ])
    assert [r[0] for r in results] == [ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_OP_INPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_OP_OUTPUT_NOT_MATCH, ACL_ERROR_UNSUPPORTED_DATA_TYPE,
                                       ACL_ERROR_OP_ATTR_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_OP_OUTPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH,
                                       ACL_ERROR_OP_OUTPUT_NOT_MATCH, ACL_ERROR_OP_INPUT_NOT_MATCH]
    msgs = [r[1] for r in results]
    assert "input 1 (accum) is host or constant memory, but the op updates it in place" in msgs[0]
    assert "ApplyMomentum: input 2 (lr) has shape [2], expected one element ([1])" in msgs[1]
    assert "input 1 (accum) has dtype ACL_FLOAT16, expected ACL_FLOAT (the dtype of input 0 (var))" in msgs[2]
    assert "input 3 (grad) has shape [5], expected [4] (the shape of input 0 (var))" in msgs[3]
    assert "ApplyAdamW: attribute amsgrad is true; only amsgrad=false is simulated" in msgs[6]
    assert "expected 11 or 12 inputs (var, m, v, beta1_power" in msgs[7]
    assert "expected 3 outputs (var, m, v), got 2" in msgs[8]
    assert "input 5 (lr) has shape [4], expected one element ([1])" in msgs[9]
    assert "output 2 (v) has shape [5], expected [4]" in msgs[10]
    assert "input 10 (grad) is required" in msgs[11]
