"""AdamUpdate on the CPU EP: bit for bit the reference and the unfused ONNX update graph it replaces
(every attribute branch, the first step, NaN/inf gradients, every size path), how the float32
beta attributes are read, its lowering, and errors that name what is wrong."""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from onnxruntime.capi.onnxruntime_pybind11_state import Fail, InvalidArgument, InvalidGraph, RuntimeException

from op_helpers import make_session
from ort_ops import ort_io
from ort_ops.model_builder import make_op_model
from ort_ops.ops import op
from ort_ops.ops.adam_update import adam_update, attribute_double, step_scalars
from ort_ops.rewrite.lower import LOWERINGS
from ort_ops.training.optim import Adam

OP = op("AdamUpdate")
ORT_ERRORS = (Fail, InvalidArgument, InvalidGraph, RuntimeException)
BRANCHES = [{}, *OP.examples]


def assert_same(got, want, what=""):
    """Equal dtype, shape, NaN positions and the bits of every other element; NaN payloads are
    not specified by the op."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, got.shape, want.shape)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan, err_msg=f"{what}: NaN positions")
    np.testing.assert_array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32), err_msg=what)


def optimizer(attrs, lr=1e-2):
    a = {**OP.defaults(), **attrs}
    return Adam(lr=lr, betas=(a["beta1"], a["beta2"]), eps=a["eps"], weight_decay=a["weight_decay"])


def inputs(shape, attrs, steps=6, seed=0):
    """param, grad (with NaN/inf), moments (zeros before the first step), the scalars after ``steps``."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(-2, 2, shape).astype(np.float32)
    g = rng.uniform(-1, 1, shape).astype(np.float32)
    flat = g.reshape(-1)
    if flat.size >= 8:
        flat[[1, 4, 7]] = [np.nan, np.inf, -np.inf]
    first = steps == 0
    m = np.zeros(shape, np.float32) if first else rng.uniform(-0.5, 0.5, shape).astype(np.float32)
    v = np.zeros(shape, np.float32) if first else rng.uniform(0, 0.25, shape).astype(np.float32)
    return [p, g, m, v, optimizer(attrs).scalar_state(steps)]


def run_op(arrays, attrs, threads=None):
    shape = list(arrays[0].shape)
    model = make_op_model(OP, "float32", None, input_shapes=[list(a.shape) for a in arrays],
                          output_shapes=[shape] * 3, **attrs)
    return ort_io.run(make_session(model, threads=threads), dict(zip((t.name for t in OP.inputs), arrays)))


@pytest.mark.parametrize("steps", [6, 0], ids=["later", "first"])
@pytest.mark.parametrize("attrs", BRANCHES, ids=lambda a: str(a or "defaults"))
@pytest.mark.parametrize("shape", [(5, 37), (), (1,), (3, 1 << 16)], ids=["5x37", "scalar", "one", "parallel"])
def test_cpu_kernel_is_the_reference_bit_for_bit(shape, attrs, steps):
    arrays = inputs(shape, attrs, steps)
    got = run_op(arrays, attrs, threads=2)
    for name, g, w in zip(("new_param", "new_exp_avg", "new_exp_avg_sq"), got, adam_update(*arrays, **attrs),
                          strict=True):
        assert_same(g, w, name)


@pytest.mark.parametrize("config", [
    dict(lr=1e-2), dict(lr=3e-3, betas=(0.8, 0.99), eps=1e-6, weight_decay=1e-2),
    dict(lr=1e-3, betas=(0.95, 0.9999), eps=1e-7), dict(lr=0.1, betas=(0.0, 0.5), eps=0.0, weight_decay=0.1),
], ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
def test_fused_graph_equals_the_unfused_graph_bit_for_bit(config):
    """What the trainer relies on: the fused update graph computes the unfused one's bits, step
    after step (the scalar state advanced by its own nodes, the moments carried over)."""
    opt = Adam(**config)
    shapes = {"w": (6, 35), "b": (35,)}
    fused = make_session(opt.build_graph(shapes, fused=True))
    unfused = make_session(opt.build_graph(shapes, fused=False))
    rng = np.random.default_rng(1)
    values = {n: rng.uniform(-1, 1, s).astype(np.float32) for n, s in shapes.items()}
    values.update({f"{slot}.{n}": np.zeros(s, np.float32) for slot in opt.slots for n, s in shapes.items()})
    state = opt.scalar_states(0)
    assert sorted(state) == ["adam.bias", "adam.scalars"]
    for step in range(1, 8):
        grads = {f"grad.{n}": rng.uniform(-1, 1, s).astype(np.float32) for n, s in shapes.items()}
        grads["grad.b"].reshape(-1)[step] = np.inf
        got = dict(zip([o.name for o in fused.get_outputs()], fused.run(None, {**values, **grads, **state})))
        scalars = {k: np.array(v, np.float32) for k, v in opt.step_scalars(step).items()}
        want = dict(zip([o.name for o in unfused.get_outputs()], unfused.run(None, {**values, **grads, **scalars})))
        for name, w in want.items():
            assert_same(got[name], w, f"step {step} {name}")
        for k, v in opt.scalar_states(step).items():
            np.testing.assert_array_equal(got["new." + k], v, err_msg=k)
        values = {k[len("new."):]: v for k, v in want.items()}
        state = {k: got["new." + k] for k in state}


@pytest.mark.parametrize("betas", [(0.9, 0.999), (0.8, 0.99), (0.95, 0.9999), (0.5, 0.75), (0.99, 0.999999)])
def test_beta_powers_by_multiplication_round_like_pow_for_10000_steps(betas):
    """The fused state forms beta^t by multiplying (the graph's float64 Mul), PyTorch by
    ``beta ** t``: a few float64 ulps apart, which never changes the two float32 scalars the
    update uses over these 10000 steps (the step size and sqrt(1 - beta2^t))."""
    opt = Adam(lr=1e-3, betas=betas)
    p1 = p2 = 1.0
    for t in range(1, 10001):
        want = opt.step_scalars(t)
        got = step_scalars(opt.lr, p1, p2, *betas)
        assert got[0] == np.float32(want["adam.neg_step_size"]) and got[1] == np.float32(want["adam.bc2_sqrt"]), t
        p1, p2 = p1 * betas[0], p2 * betas[1]


def test_beta_attributes_are_read_as_their_shortest_decimal():
    assert attribute_double(np.float32(0.9)) == 0.9 and attribute_double(0.999) == 0.999
    assert attribute_double(1e-8) == 1e-8 and attribute_double(0.0) == 0.0
    # the kernel reads them the same way: random betas, whose float32 and shortest decimal differ
    rng = np.random.default_rng(5)
    for beta1, beta2 in rng.uniform(0, 1, (40, 2)).astype(np.float32):
        attrs = {"beta1": float(beta1), "beta2": float(beta2)}
        arrays = inputs((3, 7), attrs, steps=4, seed=int(beta1 * 1000))
        for g, w in zip(run_op(arrays, attrs), adam_update(*arrays, **attrs), strict=True):
            assert_same(g, w, str(attrs))


@pytest.mark.parametrize("attrs", BRANCHES, ids=lambda a: str(a or "defaults"))
def test_lowering_is_bit_exact(attrs):
    arrays = inputs((5, 37), attrs)
    model = make_op_model(OP, "float32", None, **attrs)
    lowered = LOWERINGS["AdamUpdate"](model)
    assert {n.domain for n in lowered.graph.node} == {""}
    onnx.checker.check_model(lowered, full_check=True)
    feeds = dict(zip((t.name for t in OP.inputs), arrays))
    want = ort_io.run(make_session(model), feeds)
    got = ort_io.run(make_session(lowered), feeds)
    for g, w in zip(got, want, strict=True):
        assert_same(g, w)


# -- errors -------------------------------------------------------------------------------------

def _session_with(input_shapes, **attrs):
    return make_session(make_op_model(OP, "float32", None, input_shapes=input_shapes,
                                      output_shapes=[input_shapes[0]] * 3, **attrs))


@pytest.mark.parametrize("index, name", [(1, "grad"), (2, "exp_avg"), (3, "exp_avg_sq")])
def test_shape_mismatch_names_both_shapes(index, name):
    shapes = [[2, 3], [2, 3], [2, 3], [2, 3], [3]]
    shapes[index] = [3, 2]
    session = _session_with(shapes)
    arrays = [np.zeros(s, np.float32) for s in shapes[:4]] + [np.array([1e-3, 1.0, 1.0])]
    with pytest.raises(ORT_ERRORS, match=rf"param shape \[2, 3\] differs from {name} shape \[3, 2\]"):
        ort_io.run(session, dict(zip((t.name for t in OP.inputs), arrays)))
    with pytest.raises(ValueError, match=rf"param shape \[2, 3\] differs from {name} shape \[3, 2\]"):
        adam_update(*arrays)


def test_scalars_must_have_three_values():
    session = _session_with([[4], [4], [4], [4], [4]])
    arrays = [np.zeros(4, np.float32)] * 4 + [np.zeros(4)]
    with pytest.raises(ORT_ERRORS, match=r"scalars must have shape \[3\].*got \[4\]"):
        ort_io.run(session, dict(zip((t.name for t in OP.inputs), arrays)))


@pytest.mark.parametrize("attrs, message", [
    ({"beta1": 1.0}, r"beta1 must be in \[0, 1\)"),
    ({"beta2": -0.1}, r"beta2 must be in \[0, 1\)"),
    ({"beta2": math.nan}, r"beta2 must be in \[0, 1\)"),
    ({"eps": -1e-8}, "eps must be >= 0"),
    ({"weight_decay": -0.5}, "weight_decay must be >= 0"),
])
def test_bad_attributes_fail_at_session_creation(attrs, message):
    with pytest.raises(ORT_ERRORS, match=message):
        _session_with([[4], [4], [4], [4], [3]], **attrs)
    with pytest.raises(ValueError, match=message):
        adam_update(*[np.zeros(4, np.float32)] * 4, np.array([1e-3, 1.0, 1.0]), **attrs)


def test_scalars_are_float64():
    with pytest.raises(TypeError, match="scalars has dtype float32, expected float64"):
        adam_update(*[np.zeros(2, np.float32)] * 4, np.zeros(3, np.float32))


def want_cann_scalars(lr, beta1, beta2, eps, t):
    """cann_scalars of step t written out from its definition (docs/ops/AdamUpdate.md) with
    PyTorch's ``beta ** t``, not with the code under test: [lr·k1·sqrt(k2·bc2), beta1^(t-1),
    eps·sqrt(k2·bc2)]."""
    f = np.float32
    b1, b2 = float(str(f(beta1))), float(str(f(beta2)))
    k1 = float(f(1 - b1)) / (1 - float(f(beta1)))
    k2 = (1 - float(f(beta2))) / float(f(1 - b2))
    root = math.sqrt(k2 * (1 - b2**t))
    return np.array([lr * k1 * root, b1 ** (t - 1), float(f(eps)) * root])


@pytest.mark.parametrize("config", [dict(lr=1e-3), dict(lr=0.1, betas=(0.8, 0.99), eps=1e-6),
                                    dict(lr=3e-4, betas=(0.0, 0.5), eps=0.0), dict(lr=1.0, betas=(0.99, 0.999999))])
def test_the_fused_graph_forms_cann_scalars_within_their_tolerance_for_3000_steps(config):
    """The fused graph's own nodes (bias state, Sub, Cast, Sqrt, Mul) give every AdamUpdate the
    cann_scalars of its definition within relative 2^-21 (4 to 8 float32 ulps) at every step, against
    the formula written out here; the CPU kernel's own check passes at every step too (it would fail
    the run)."""
    opt = Adam(**config)
    probe = opt.build_graph({"w": (3,)}, fused=True)
    probe.graph.output.append(onnx.helper.make_tensor_value_info("adam.cann_scalars", onnx.TensorProto.FLOAT, [3]))
    sess = make_session(probe)
    names = [o.name for o in sess.get_outputs()]
    assert names[-1] == "adam.cann_scalars"
    feeds = {"w": np.ones(3, np.float32), "grad.w": np.full(3, 0.5, np.float32),
             "exp_avg.w": np.zeros(3, np.float32), "exp_avg_sq.w": np.zeros(3, np.float32), **opt.scalar_states(0)}
    worst = 0.0
    for t in range(1, 3001):
        got = dict(zip(names, sess.run(None, feeds)))
        want = want_cann_scalars(opt.lr, *opt.betas, opt.eps, t)
        cs = got["adam.cann_scalars"].astype(np.float64)
        assert (cs[want == 0] == 0).all(), (t, cs, want)
        rel = np.abs(cs - want) / np.maximum(np.abs(want), 2.0**-126)
        worst = max(worst, float(rel.max()))
        feeds.update({k: got["new." + k] for k in ("adam.scalars", "adam.bias")})
    assert worst <= 2.0**-21, worst


@pytest.mark.parametrize("steps", [6, 0], ids=["later", "first"])
def test_cann_scalars_given_changes_nothing_on_the_cpu(steps):
    """The optional cann_scalars (computed once for every parameter in the trainer's graph): the
    CPU kernel only checks them and computes from the float64 scalars, bit for bit the reference."""
    arrays = inputs((5, 37), {}, steps)
    given = want_cann_scalars(1e-2, 0.9, 0.999, 1e-8, steps + 1).astype(np.float32)
    got = run_op([*arrays, given], {})
    for name, g, w, w2 in zip(("new_param", "new_exp_avg", "new_exp_avg_sq"), got, adam_update(*arrays),
                              adam_update(*arrays, given), strict=True):
        assert_same(g, w, name)
        assert_same(w2, w, f"{name} (reference)")


@pytest.mark.parametrize("change", ["lr", "beta1 power", "eps", "nine ulps"])
def test_cann_scalars_off_their_definition_fail_naming_both(change):
    arrays = inputs((4,), {}, 6)
    given = want_cann_scalars(1e-2, 0.9, 0.999, 1e-8, 7).astype(np.float32)
    if change == "lr":
        given[0] *= np.float32(2)
    elif change == "beta1 power":
        given[1] = np.float32(0.9**7)  # beta1^t instead of beta1^(t-1)
    elif change == "eps":
        given[2] = np.float32(1e-8)  # eps not scaled by sqrt(k2 * bc2)
    else:
        for _ in range(9):  # more than 8 ulps: over relative 2^-21 for every value
            given[0] = np.nextafter(given[0], np.float32(1))
    with pytest.raises(ORT_ERRORS, match=r"cann_scalars \[.*\] is not \[lr\*k1\*sqrt\(k2\*bc2\).*\] = \[.*\]"):
        run_op([*arrays, given], {})
    with pytest.raises(ValueError, match=r"cann_scalars \[.*\] is not \[lr\*k1\*sqrt\(k2\*bc2\)"):
        adam_update(*arrays, given)


def test_cann_scalars_one_ulp_off_are_accepted():
    arrays = inputs((4,), {}, 6)
    given = np.nextafter(want_cann_scalars(1e-2, 0.9, 0.999, 1e-8, 7).astype(np.float32), np.float32(1))
    run_op([*arrays, given], {})
    adam_update(*arrays, given)


def test_cann_scalars_of_another_shape_or_dtype_fails():
    arrays = inputs((4,), {}, 6)
    with pytest.raises(ORT_ERRORS, match=r"cann_scalars must have shape \[3\].*got \[4\]"):
        run_op([*arrays, np.zeros(4, np.float32)], {})
    with pytest.raises(ValueError, match=r"cann_scalars must have shape \[3\].*got \[4\]"):
        adam_update(*arrays, np.zeros(4, np.float32))
    with pytest.raises(TypeError, match="cann_scalars has dtype float64, expected float32"):
        adam_update(*arrays, arrays[4])
