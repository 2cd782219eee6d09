"""Rewrite-rule behaviours a mutation pass (a changed constant or removed branch of the rules
must fail a test) found untested."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.reference
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from checks import fuse_and_check
from graphs import Builder, elu_backward
from ort_ops.model_builder import make_elu_grad_model
from ort_ops.reference import OPS
from ort_ops.rewrite import RewriteReport, fuse_elu_grad, has_candidates, lower_elu_grad

SHAPE = [4, 6]
F32 = TP.FLOAT


def vi(name, shape=SHAPE, elem=F32):
    return helper.make_tensor_value_info(name, elem, shape)


def fuse(model, **kw):
    report = RewriteReport()
    return fuse_elu_grad(model, report=report, **kw), report


def rejected_reason(model) -> str:
    """Nothing fused, the model unchanged; the reasons of the rejected sites."""
    fused, report = fuse(model)
    assert not report.fused, report.summary()
    assert fused.SerializeToString() == model.SerializeToString()
    assert report.rejected
    return " | ".join(s.reason for s in report.rejected)


# -- every spelling of the comparison: exact / notes must tell the truth ------------------------
COND = {  # spelling -> (builder, numpy truth)
    "T<0": (lambda b, t, z: b.op("Less", t, z), lambda t: t < 0),
    "T<=0": (lambda b, t, z: b.op("LessOrEqual", t, z), lambda t: t <= 0),
    "T>0": (lambda b, t, z: b.op("Greater", t, z), lambda t: t > 0),
    "T>=0": (lambda b, t, z: b.op("GreaterOrEqual", t, z), lambda t: t >= 0),
    "0>T": (lambda b, t, z: b.op("Greater", z, t), lambda t: 0 > t),
    "0>=T": (lambda b, t, z: b.op("GreaterOrEqual", z, t), lambda t: 0 >= t),
    "0<T": (lambda b, t, z: b.op("Less", z, t), lambda t: 0 < t),
    "0<=T": (lambda b, t, z: b.op("LessOrEqual", z, t), lambda t: 0 <= t),
    "!(T>0)": (lambda b, t, z: b.op("Not", b.op("Greater", t, z)), lambda t: ~(t > 0)),
    "!(T<=0)": (lambda b, t, z: b.op("Not", b.op("LessOrEqual", t, z)), lambda t: ~(t <= 0)),
    "!!(T<0)": (lambda b, t, z: b.op("Not", b.op("Not", b.op("Less", t, z))), lambda t: t < 0),
    "!!(T>=0)": (lambda b, t, z: b.op("Not", b.op("Not", b.op("GreaterOrEqual", t, z))), lambda t: t >= 0),
}
SPECIAL_X = np.array([0.0, -0.0, np.nan, -1.0, 2.0, -0.25] * 4, np.float32).reshape(SHAPE)


def _spelled(spelling, alpha):
    """Y = Elu(X){alpha}; dX = Where(cond(Y), ..) with the negative branch dY * (Y + alpha)."""
    build, truth = COND[spelling]
    b = Builder()
    y = b.op("Elu", "X", alpha=alpha)
    cond = build(b, y, b.const(0.0))
    neg = b.op("Mul", "dY", b.op("Add", y, b.const(alpha)))
    negative_when_true = bool(truth(np.float32(-1.0)))
    dx = b.op("Where", cond, *((neg, "dY") if negative_when_true else ("dY", neg)))
    model = b.model([vi("X"), vi("dY")], [vi(y), vi(dx)])
    with np.errstate(invalid="ignore"):
        neg_at = lambda v: bool(truth(np.float32(v))) == negative_when_true
        return model, dx, neg_at(0.0), neg_at(np.nan)


@pytest.mark.parametrize("alpha", [1.0, 0.5])
@pytest.mark.parametrize("spelling", sorted(COND))
def test_every_comparison_spelling_fuses_with_truthful_notes(spelling, alpha):
    model, dx, includes_zero, includes_nan = _spelled(spelling, alpha)
    fused, report = fuse(model)
    (site,) = report.fused
    differs_at_zero = includes_zero and alpha != 1.0
    assert site.exact == (not differs_at_zero and not includes_nan), (site.exact, site.notes)
    assert any("boundary" in n for n in site.notes) == differs_at_zero, site.notes
    assert any("NaN" in n for n in site.notes) == includes_nan, site.notes
    # ... and the notes are facts: run both graphs (reference evaluator: NumPy's exact Where)
    feeds = {"X": SPECIAL_X, "dY": np.full(SHAPE, 3.0, np.float32)}
    want = onnx.reference.ReferenceEvaluator(model).run([dx], feeds)[0]
    got = onnx.reference.ReferenceEvaluator(fused, new_ops=list(OPS)).run([dx], feeds)[0]
    differ = want.view(np.uint32) != got.view(np.uint32)
    expected = (np.isnan(SPECIAL_X) & includes_nan) | ((SPECIAL_X == 0) & differs_at_zero)
    np.testing.assert_array_equal(differ, expected)


# -- factors and constants ---------------------------------------------------------------------
def _torch_like(neg, pos, alpha, b=None):
    b = b or Builder()
    y = b.op("Elu", "X", alpha=alpha)
    dx = b.op("Where", b.op("LessOrEqual", "X", b.const(0.0)), neg(b), pos(b))
    return b.model([vi("X"), vi("dY")], [vi(y), vi(dx)])


def test_constant_only_on_the_positive_side_divides_alpha():
    """Where(X <= 0, dY * exp(X), 2 * dY) = EluGrad(2 * dY, Elu(X){0.5})."""
    model = _torch_like(lambda b: b.op("Mul", "dY", b.op("Exp", "X")), lambda b: b.op("Mul", "dY", b.const(2.0)), 0.5)
    _, report = fuse_and_check(model)
    assert report.fused[0].alpha == 0.5


def test_neg_counts_as_minus_one():
    """Where(X <= 0, Neg(dY * exp(X)) * -0.5, dY): alpha 0.5."""
    model = _torch_like(lambda b: b.op("Mul", b.op("Neg", b.op("Mul", "dY", b.op("Exp", "X"))), b.const(-0.5)),
                        lambda b: "dY", 0.5)
    _, report = fuse_and_check(model)
    assert report.fused[0].alpha == 0.5


# -- the output form's checks ------------------------------------------------------------------
def _output_form(factor, *, cmp="Less", y_input=False, dy="dY", extra_inputs=(), consts=(), elu_alpha=1.0):
    b = Builder()
    b.inits += list(consts)
    y = "Y" if y_input else b.op("Elu", "X", alpha=elu_alpha)
    neg = b.op("Mul", dy, factor(b, y))
    dx = b.op("Where", b.op(cmp, y, b.const(0.0)), neg, dy)
    inputs = [vi("Y") if y_input else vi("X"), vi("dY"), *[vi(n) for n in extra_inputs]]
    return b.model(inputs, ([] if y_input else [vi(y)]) + [vi(dx)])


def test_sub_of_minus_alpha_is_y_plus_alpha():
    model = _output_form(lambda b, y: b.op("Sub", y, b.const(-0.5)), y_input=True)
    assert "Add" not in [n.op_type for n in model.graph.node]
    _, report = fuse_and_check(model)
    assert (report.fused[0].alpha, report.fused[0].exact) == (0.5, True)


def test_add_of_another_tensor_is_rejected():
    model = _output_form(lambda b, y: b.op("Add", "Z", b.const(1.0)), y_input=True, extra_inputs=["Z"])
    assert "Add reads Z, which is not the compared tensor Y" in rejected_reason(model)


def test_extra_constant_factor_is_rejected():
    model = _output_form(lambda b, y: b.op("Mul", b.const(2.0), b.op("Add", y, b.const(1.0))), y_input=True)
    assert "extra constant factor 2.0" in rejected_reason(model)


def test_less_or_equal_with_alpha_not_one_needs_an_elu():
    model = _output_form(lambda b, y: b.op("Add", y, b.const(0.5)), cmp="LessOrEqual", y_input=True)
    assert "the comparison includes 0 and alpha is 0.5" in rejected_reason(model)


def test_non_uniform_constant_is_not_alpha():
    c = numpy_helper.from_array(np.array([0.5] * 5 + [0.7], np.float32), "c6")
    model = _output_form(lambda b, y: b.op("Add", y, "c6"), y_input=True, consts=[c])
    assert "is not Y + alpha" in rejected_reason(model)


def test_constant_of_shape_zero_is_zero():
    b = Builder()
    zero = b.op("ConstantOfShape", b.op("Shape", "Y"))  # no value attribute: float32 zeros
    dx = b.op("Where", b.op("Less", "Y", zero), b.op("Mul", "dY", b.op("Add", "Y", b.const(1.0))), "dY")
    fuse_and_check(b.model([vi("Y"), vi("dY")], [vi(dx)]), remnants={"Where", "Less"})


def test_result_broadcast_by_another_operand_is_rejected():
    c = numpy_helper.from_array(np.full((3, 1, 1), 0.5, np.float32), "c311")
    b = Builder()
    b.inits.append(c)
    dx = b.op("Where", b.op("Less", "Y", b.const(0.0)), b.op("Mul", "dY", b.op("Add", "Y", "c311")), "dY")
    model = b.model([vi("Y"), vi("dY")], [vi(dx, [3, 4, 6])])
    assert "another operand broadcasts too" in rejected_reason(model)


def test_unknown_shapes_with_a_non_scalar_constant_are_rejected():
    c = numpy_helper.from_array(np.array([1.0], np.float32), "c1")
    b = Builder()
    b.inits.append(c)
    dx = b.op("Where", b.op("Less", "Y", b.const(0.0)), b.op("Mul", "dY", b.op("Add", "Y", "c1")), "dY")
    model = b.model([vi("Y", None), vi("dY", None)], [vi(dx, None)])
    assert "a constant of the pattern is not a scalar" in rejected_reason(model)


def test_reshaped_views_must_hold_the_same_positions():
    """Cond reads Reshape(Y, [24, 1]), the Add Reshape(Y, [1, 24]): same source, other positions."""
    b = Builder()
    y = b.op("Elu", "X")
    col = b.op("Reshape", y, b.const(np.array([24, 1]), np.int64))
    row = b.op("Reshape", y, b.const(np.array([1, 24]), np.int64))
    dx = b.op("Where", b.op("Less", col, b.const(0.0)), b.op("Mul", "dY", b.op("Add", row, b.const(1.0))), "dY")
    model = b.model([vi("X"), vi("dY", [24, 24])], [vi(y), vi(dx, [24, 24])])
    assert "which is not the compared tensor" in rejected_reason(model)


def test_two_reshapes_of_y_to_one_shape_are_the_same_values():
    """Exporters without CSE write one Reshape per use: Less reads one, the Add the other."""
    b = Builder()
    y = b.op("Elu", "X", alpha=0.5)
    shape = b.const(np.array([6, 4]), np.int64)
    r1, r2 = b.op("Reshape", y, shape), b.op("Reshape", y, shape)
    dx = b.op("Where", b.op("LessOrEqual", r1, b.const(0.0)), b.op("Mul", "dY", b.op("Add", r2, b.const(0.5))), "dY")
    model = b.model([vi("X", [2, 3, 4]), vi("dY", [6, 4])], [vi(y, [2, 3, 4]), vi(dx, [6, 4])])
    _, report = fuse_and_check(model)
    assert report.fused[0].alpha == 0.5


def test_float16_arithmetic_without_casts_is_noted():
    b = Builder()
    h = lambda v: b.const(v, np.float16)
    dx = b.op("Where", b.op("Less", "Y", h(0.0)), b.op("Mul", "dY", b.op("Add", "Y", h(1.0))), "dY")
    model = b.model([vi("Y", elem=TP.FLOAT16), vi("dY", elem=TP.FLOAT16)], [vi(dx, elem=TP.FLOAT16)])
    _, report = fuse_and_check(model)
    (site,) = report.fused
    assert site.dtype == "float16" and not site.exact
    assert any("float16 arithmetic" in n for n in site.notes), site.notes


def test_wrapped_reading_of_mismatched_types_falls_back_to_float32():
    """float16 operands, result cast to bfloat16: no 16-bit EluGrad fits; the float32 one does."""
    b = Builder()
    up = lambda t: b.op("Cast", t, to=TP.FLOAT)
    y = b.op("Elu", "X")
    dx = b.op("Where", b.op("Less", up(y), b.const(0.0)), b.op("Mul", up("dY"), b.op("Add", up(y), b.const(1.0))),
              up("dY"))
    out = b.op("Cast", dx, to=TP.BFLOAT16)
    model = b.model([vi("X", elem=TP.FLOAT16), vi("dY", elem=TP.FLOAT16)],
                    [vi(y, elem=TP.FLOAT16), vi(out, elem=TP.BFLOAT16)])
    fused, report = fuse(model)
    (site,) = report.fused
    assert site.dtype == "float32"
    onnx.checker.check_model(fused, full_check=True)


def test_cast_wrapped_result_that_is_also_a_graph_output_stays():
    model = elu_backward("less", "float16")
    where = next(n for n in model.graph.node if n.op_type == "Where")
    model.graph.output.append(vi(where.output[0]))  # the float32 result is an output too
    # (ORT runs the fp16 Elu in float32: ORT and the reference evaluator differ on Y, not on the rewrite)
    fused, report = fuse_and_check(model, reference=False)
    assert report.fused[0].dtype == "float32"


# -- the SELU guard: exactly SELU ---------------------------------------------------------------
SELU_ALPHA, SELU_SCALE = 1.6732632423543772, 1.0507009873554805


@pytest.mark.parametrize("alpha, scale, is_selu", [(SELU_ALPHA, SELU_SCALE, True), (SELU_ALPHA, None, False),
                                                   (0.5, SELU_SCALE, False)])
def test_only_selu_is_left_alone(alpha, scale, is_selu):
    """An Elu whose output is scaled: SELU only for SELU's alpha *and* scale."""
    b = Builder()
    y = b.op("Elu", "X", alpha=alpha)
    scaled = b.op("Mul", y, b.const(scale) if scale is not None else "W")
    g = b.op("Mul", "dY", b.const(np.float32(alpha)))
    dx = b.op("Where", b.op("LessOrEqual", "X", b.const(0.0)), b.op("Mul", g, b.op("Exp", "X")), "dY")
    model = b.model([vi("X"), vi("dY"), vi("W")], [vi(scaled), vi(dx)])
    _, report = fuse(model)
    assert bool(report.fused) == (not is_selu), report.summary()
    if is_selu:
        assert "SELU" in report.rejected[0].reason


# -- Celu ---------------------------------------------------------------------------------------
def test_celu_alpha_one_is_an_elu_and_passes_the_prefilter():
    model = elu_backward("torch")
    for n in model.graph.node:
        if n.op_type == "Elu":
            n.op_type = "Celu"
    assert "Elu" not in [n.op_type for n in model.graph.node] and has_candidates(model)
    fuse_and_check(model)


def test_celu_of_another_alpha_is_not_an_elu():
    model = _torch_like(lambda b: b.op("Mul", b.op("Mul", "dY", b.const(0.5)), b.op("Exp", "X")), lambda b: "dY", 0.5)
    for n in model.graph.node:
        if n.op_type == "Elu":
            n.op_type = "Celu"
    assert "does not feed an Elu node" in rejected_reason(model)


# -- looking through Mul by 1 -----------------------------------------------------------------
def test_elu_of_x_times_one_is_found():
    b = Builder()
    y = b.op("Elu", b.op("Mul", "X", b.const(1.0)), alpha=0.5)
    g = b.op("Mul", "dY", b.const(0.5))
    dx = b.op("Where", b.op("LessOrEqual", "X", b.const(0.0)), b.op("Mul", g, b.op("Exp", "X")), "dY")
    fuse_and_check(b.model([vi("X"), vi("dY")], [vi(y), vi(dx)]))


def test_mul_by_a_larger_ones_tensor_is_not_the_tensor_itself():
    """dY * ones[2, 1, 1] has shape [2, 4, 6]: EluGrad must read it (expanded), not dY."""
    ones = numpy_helper.from_array(np.ones((2, 1, 1), np.float32), "ones")
    b = Builder()
    b.inits.append(ones)
    g = b.op("Mul", "dY", "ones")
    dx = b.op("Where", b.op("Less", "Y", b.const(0.0)), b.op("Mul", g, b.op("Add", "Y", b.const(1.0))), g)
    fuse_and_check(b.model([vi("Y"), vi("dY")], [vi(dx, [2, 4, 6])]), remnants={"Where", "Less"})


# -- mul_where_factor, min_add_mul, foreign_elu_grad ---------------------------------------------
def _mul_where(negative, positive=1.0, *, where_first=False, grads="dY", cmp="Less", t=None, alpha=0.5,
               other_add=False):
    b = Builder()
    y = b.op("Elu", "X", alpha=alpha)
    t = y if t is None else t
    w = b.op("Where", b.op(cmp, t, b.const(0.0)), negative(b, y), b.const(positive))
    g = b.const(grads) if isinstance(grads, float) else grads
    dx = b.op("Mul", w, g) if where_first else b.op("Mul", g, w)
    extra = [b.op("Add", "X", "X")] if other_add else []  # an Add elsewhere: the pre-filter lets it through
    return b.model([vi("X"), vi("dY")], [vi(y), vi(dx), *map(vi, extra)])


def test_mul_where_with_the_where_first():
    model = _mul_where(lambda b, y: b.op("Add", y, b.const(0.5)), where_first=True)
    assert fuse_and_check(model)[1].fused[0].rule == "mul_where_factor"


def test_mul_where_exp_form():
    model = _mul_where(lambda b, y: b.op("Mul", b.const(0.5), b.op("Exp", "X")), cmp="LessOrEqual", t="X")
    (site,) = fuse_and_check(model)[1].fused
    assert (site.rule, site.alpha) == ("mul_where_factor", 0.5)


def test_mul_where_positive_constant_must_be_one():
    model = _mul_where(lambda b, y: b.op("Add", y, b.const(0.5)), positive=2.0)
    assert "not the constant 1" in rejected_reason(model)


def test_mul_where_without_an_elu_factor_is_rejected_not_a_crash():
    """dY * Where(Y < 0, 0.5, 1): a leaky-ReLU-like derivative, no ELU factor."""
    model = _mul_where(lambda b, y: b.const(0.5), other_add=True)
    assert "times one ELU factor" in rejected_reason(model)


def test_mul_where_constant_gradient_is_not_an_upstream_gradient():
    model = _mul_where(lambda b, y: b.op("Add", y, b.const(0.5)), grads=2.0)
    _, report = fuse(model)
    assert not report.fused


def _min_form(one=1.0, zero_first=False):
    b = Builder()
    y = b.op("Elu", "X")
    mn = b.op("Min", b.const(0.0), y) if zero_first else b.op("Min", y, b.const(0.0))
    dx = b.op("Mul", b.op("Add", mn, b.const(one)), "dY")
    return b.model([vi("X"), vi("dY")], [vi(y), vi(dx)])


def test_min_with_zero_first():
    assert fuse_and_check(_min_form(zero_first=True))[1].fused[0].rule == "min_add_mul"


def test_min_form_add_constant_must_be_one():
    assert "the Add constant is 2.0, expected 1" in rejected_reason(_min_form(one=2.0))


def test_elu_grad_of_an_unknown_domain_is_left_alone():
    b = Builder()
    dx = b.op("EluGrad", "dY", "Y", domain="com.example")
    model = b.model([vi("Y"), vi("dY")], [vi(dx)], [helper.make_opsetid("", 18), helper.make_opsetid("com.example", 1)])
    assert "unknown semantics" in rejected_reason(model)


def test_fusing_a_fused_model_reports_nothing():
    once = fuse_elu_grad(elu_backward("torch"))
    _, report = fuse(once)
    assert not report.sites, report.summary()


def test_castlike_of_an_inexact_constant_to_an_unknown_type_is_not_read():
    b = Builder()
    unknown = b.op("Mystery", "Y", domain="example.mystery")  # element type unknown to the rewrite
    c = b.op("CastLike", b.const(0.1, np.float64), unknown)
    dx = b.op("Where", b.op("Less", "Y", b.const(0.0)), b.op("Mul", "dY", b.op("Add", "Y", c)), "dY")
    model = b.model([vi("Y"), vi("dY")], [vi(dx)], [helper.make_opsetid("", 18),
                                                   helper.make_opsetid("example.mystery", 1)])
    _, report = fuse(model)
    assert not report.fused


# -- lower_elu_grad's report and opset imports ----------------------------------------------------
def test_lower_report_says_exact_and_the_alpha():
    report = RewriteReport()
    lower_elu_grad(make_elu_grad_model("float16", (3,), alpha=0.3), report=report)
    (site,) = report.sites
    assert (site.status, site.exact, site.alpha, site.dtype) == ("lowered", True, 0.3, "float16")


def test_lower_keeps_the_domain_import_while_another_op_of_it_remains():
    model = make_elu_grad_model("float32", (3,))
    model.graph.node.append(helper.make_node("Other", ["y"], ["z"], domain="ai.ortops", name="other"))
    model.graph.output.append(vi("z", [3]))
    lowered = lower_elu_grad(model)
    assert any(o.domain == "ai.ortops" for o in lowered.opset_import)
