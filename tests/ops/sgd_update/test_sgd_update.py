"""SGDUpdate on the CPU EP: bit for bit the reference and the unfused ONNX update graph it replaces
(every attribute branch, the first step, NaN/inf gradients, every size path), its lowering, and
errors that name what is wrong."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnxruntime.capi.onnxruntime_pybind11_state import Fail, InvalidArgument, InvalidGraph, RuntimeException

from op_helpers import make_session
from ort_ops import ort_io
from ort_ops.model_builder import make_op_model
from ort_ops.ops import op
from ort_ops.ops.sgd_update import sgd_update
from ort_ops.rewrite.lower import LOWERINGS
from ort_ops.training.optim import SGD

OP = op("SGDUpdate")
ORT_ERRORS = (Fail, InvalidArgument, InvalidGraph, RuntimeException)
BRANCHES = [{}, *OP.examples]


def assert_same(got, want, what=""):
    """Equal dtype, shape, NaN positions and the bits of every other element (-0.0 included);
    NaN payloads are not specified by the op."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, got.shape, want.shape)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan, err_msg=f"{what}: NaN positions")
    np.testing.assert_array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32), err_msg=what)


def inputs(shape, attrs, first_step=False, seed=0):
    """param, grad (with NaN/inf), buffer (zeros on the first step), scalars of that step."""
    rng = np.random.default_rng(seed)
    attrs = {**OP.defaults(), **attrs}
    p = rng.uniform(-2, 2, shape).astype(np.float32)
    g = rng.uniform(-1, 1, shape).astype(np.float32)
    flat = g.reshape(-1)
    if flat.size >= 8:
        flat[[1, 4, 7]] = [np.nan, np.inf, -np.inf]
        flat[2] = -0.0
    buf = None
    if attrs["momentum"] != 0:
        buf = np.zeros(shape, np.float32) if first_step else rng.uniform(-1, 1, shape).astype(np.float32)
    opt = SGD(lr=0.05, momentum=attrs["momentum"], dampening=attrs["dampening"], weight_decay=attrs["weight_decay"],
              nesterov=bool(attrs["nesterov"]))
    return [p, g, buf, opt.scalar_state(0 if first_step else 3)]


def run_op(arrays, attrs, threads=None):
    model = make_op_model(OP, "float32", None, input_shapes=[None if a is None else list(a.shape) for a in arrays],
                          output_shapes=[list(arrays[0].shape), list(arrays[0].shape) if arrays[2] is not None
                                         else None], **attrs)
    feeds = {t.name: a for t, a in zip(OP.inputs, arrays) if a is not None}
    return ort_io.run(make_session(model, threads=threads), feeds)


@pytest.mark.parametrize("first_step", [False, True], ids=["later", "first"])
@pytest.mark.parametrize("attrs", BRANCHES, ids=lambda a: str(a or "defaults"))
@pytest.mark.parametrize("shape", [(5, 37), (), (1,), (3, 1 << 16)], ids=["5x37", "scalar", "one", "parallel"])
def test_cpu_kernel_is_the_reference_bit_for_bit(shape, attrs, first_step):
    arrays = inputs(shape, attrs, first_step)
    got = run_op(arrays, attrs, threads=2)
    want = [w for w in sgd_update(*arrays, **attrs) if w is not None]
    assert len(got) == len(want)
    for name, g, w in zip(("new_param", "new_momentum_buffer"), got, want):
        assert_same(g, w, name)


def test_first_step_copies_the_gradient_into_the_buffer():
    p, g, buf, scalars = inputs((4, 9), {"momentum": 0.9}, first_step=True)
    _, new_buf = run_op([p, g, buf, scalars], {"momentum": 0.9})
    want = g + np.float32(0)  # (-0.0 + 0.0 is +0.0, as 0 * buf + g * 1 gives)
    assert_same(new_buf, want)


@pytest.mark.parametrize("config", [
    dict(lr=0.05), dict(lr=0.05, momentum=0.9), dict(lr=0.05, momentum=0.9, nesterov=True),
    dict(lr=0.05, momentum=0.9, dampening=0.3), dict(lr=0.05, momentum=0.8, weight_decay=1e-2),
    dict(lr=0.05, momentum=0.8, weight_decay=1e-2, nesterov=True), dict(lr=0.1, weight_decay=1e-2),
], ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
def test_fused_graph_equals_the_unfused_graph_bit_for_bit(config):
    """What the trainer relies on: the fused update graph computes the unfused one's bits, step
    after step (the scalar state advanced by its own nodes, the buffers carried over)."""
    opt = SGD(**config)
    shapes = {"w": (6, 35), "b": (35,)}
    fused = make_session(opt.build_graph(shapes, fused=True))
    unfused = make_session(opt.build_graph(shapes, fused=False))
    rng = np.random.default_rng(1)
    values = {n: rng.uniform(-1, 1, s).astype(np.float32) for n, s in shapes.items()}
    values.update({f"{slot}.{n}": np.zeros(s, np.float32) for slot in opt.slots for n, s in shapes.items()})
    state = {opt.scalars_name: opt.scalar_state(0)}
    twin = dict(values)
    for step in range(1, 6):
        grads = {f"grad.{n}": rng.uniform(-1, 1, s).astype(np.float32) for n, s in shapes.items()}
        grads["grad.w"].reshape(-1)[step] = np.nan
        got = dict(zip([o.name for o in fused.get_outputs()], fused.run(None, {**values, **grads, **state})))
        scalars = {k: np.array(v, np.float32) for k, v in opt.step_scalars(step).items()}
        want = dict(zip([o.name for o in unfused.get_outputs()], unfused.run(None, {**twin, **grads, **scalars})))
        assert set(got) == set(want) | {"new." + opt.scalars_name}
        for name, w in want.items():
            assert_same(got[name], w, f"step {step} {name}")
        np.testing.assert_array_equal(got["new." + opt.scalars_name], opt.scalar_state(step))
        values = twin = {k[len("new."):]: v for k, v in want.items()}
        state = {opt.scalars_name: got["new." + opt.scalars_name]}


@pytest.mark.parametrize("attrs", BRANCHES, ids=lambda a: str(a or "defaults"))
def test_lowering_is_bit_exact(attrs):
    arrays = inputs((5, 37), attrs)
    model = make_op_model(OP, "float32", None, **attrs)
    lowered = LOWERINGS["SGDUpdate"](model)
    assert {n.domain for n in lowered.graph.node} == {""}
    onnx.checker.check_model(lowered, full_check=True)
    feeds = {t.name: a for t, a in zip(OP.inputs, arrays) if a is not None}
    want = ort_io.run(make_session(model), feeds)
    got = ort_io.run(make_session(lowered), feeds)
    for g, w in zip(got, want, strict=True):
        assert_same(g, w)


# -- errors -------------------------------------------------------------------------------------

def _session_with(input_shapes, output_shapes, **attrs):
    return make_session(make_op_model(OP, "float32", None, input_shapes=input_shapes, output_shapes=output_shapes,
                                      **attrs))


@pytest.mark.parametrize("index, name", [(1, "grad"), (2, "momentum_buffer")])
def test_shape_mismatch_names_both_shapes(index, name):
    shapes = [[2, 3], [2, 3], [2, 3], [3]]
    shapes[index] = [3, 2]
    session = _session_with(shapes, [[2, 3], [2, 3]], momentum=0.9)
    feeds = {t.name: np.zeros(s, np.float32) for t, s in zip(OP.inputs, shapes)}
    with pytest.raises(ORT_ERRORS, match=rf"param shape \[2, 3\] differs from {name} shape \[3, 2\]"):
        ort_io.run(session, feeds)
    with pytest.raises(ValueError, match=rf"param shape \[2, 3\] differs from {name} shape \[3, 2\]"):
        sgd_update(*feeds.values(), momentum=0.9)


def test_scalars_must_have_three_values():
    session = _session_with([[4], [4], None, [2]], [[4], None])
    feeds = {"param": np.zeros(4, np.float32), "grad": np.zeros(4, np.float32), "scalars": np.zeros(2, np.float32)}
    with pytest.raises(ORT_ERRORS, match=r"scalars must have shape \[3\].*got \[2\]"):
        ort_io.run(session, feeds)


def test_momentum_buffer_is_given_exactly_when_momentum_is_not_zero():
    """Checked when the session is created (the node's inputs against momentum)."""
    with pytest.raises(ORT_ERRORS, match="momentum_buffer must be given exactly when momentum != 0.*absent"):
        _session_with([[4], [4], None, [3]], [[4], None], momentum=0.9)
    with pytest.raises(ORT_ERRORS, match="momentum_buffer must be given exactly when momentum != 0.*given"):
        _session_with([[4], [4], [4], [3]], [[4], None], momentum=0.0)
    with pytest.raises(onnx.shape_inference.InferenceError, match=r"momentum 0.89\d* needs the momentum_buffer"):
        onnx.shape_inference.infer_shapes(make_op_model(OP, "float32", None, input_shapes=[[4], [4], None, [3]],
                                                        output_shapes=[[4], None], momentum=0.9), strict_mode=True)


def test_new_momentum_buffer_with_momentum_zero_fails_session_creation_naming_it():
    """With momentum 0 there is no buffer (the reference returns None): a node that asks for
    new_momentum_buffer is refused when the session is created, as on CANN (tests/cann)."""
    arrays = [np.zeros(4, np.float32), np.zeros(4, np.float32), None, np.array([0.1, 0.0, 1.0], np.float32)]
    assert sgd_update(*arrays)[1] is None
    with pytest.raises(ORT_ERRORS, match=r"output new_momentum_buffer \('new_momentum_buffer'\) is produced only "
                                         r"when momentum != 0; momentum is 0"):
        _session_with([[4], [4], None, [3]], [[4], [4]])


def test_momentum_without_new_momentum_buffer_fails_session_creation():
    with pytest.raises(ORT_ERRORS, match=r"momentum 0.9\d* != 0 needs the new_momentum_buffer output"):
        _session_with([[4], [4], [4], [3]], [[4], None], momentum=0.9)


@pytest.mark.parametrize("attrs, message", [
    ({"nesterov": 1}, "nesterov=1 needs momentum > 0 and dampening = 0"),
    ({"nesterov": 1, "momentum": 0.9, "dampening": 0.1}, "nesterov=1 needs momentum > 0 and dampening = 0"),
    ({"nesterov": 2, "momentum": 0.9}, "nesterov must be 0 or 1, got 2"),
    ({"momentum": -0.5}, "momentum must be >= 0"),
    ({"weight_decay": -1.0}, "weight_decay must be >= 0"),
    ({"dampening": float("inf"), "momentum": 0.9}, "dampening must be finite"),
])
def test_bad_attributes_fail_at_session_creation(attrs, message):
    momentum = attrs.get("momentum", 0.0) != 0
    with pytest.raises(ORT_ERRORS, match=message):
        _session_with([[4], [4], [4] if momentum else None, [3]], [[4], [4] if momentum else None], **attrs)
    arrays = [np.zeros(4, np.float32), np.zeros(4, np.float32), np.zeros(4, np.float32) if momentum else None,
              np.zeros(3, np.float32)]
    with pytest.raises(ValueError, match=message):
        sgd_update(*arrays, **attrs)


def test_dtypes_are_checked_by_the_reference():
    with pytest.raises(TypeError, match="scalars has dtype float64, expected float32"):
        sgd_update(np.zeros(2, np.float32), np.zeros(2, np.float32), None, np.zeros(3))
