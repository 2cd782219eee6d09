"""Rule behaviours that survived a mutation pass: the constants matched by value, the dtype that
cannot be determined, each rule's own protobuf pre-filter and the Celu that is not an Elu."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.reference
import pytest
from onnx import TensorProto as TP
from onnx import helper

from checks import fuse_and_check, ops
from graphs import Builder
from ort_ops.reference import OPS
from ort_ops.rewrite import RewriteReport, fuse_elu_grad, has_candidates
from ort_ops.rewrite.rules import where_input_exp, where_output_add

SHAPE = [4, 6]
F32 = TP.FLOAT


def vi(name, shape=SHAPE, elem=F32):
    return helper.make_tensor_value_info(name, elem, shape)


def fuse(model, **kw):
    report = RewriteReport()
    return fuse_elu_grad(model, report=report, **kw), report


def elu_grads(model):
    return [n for n in model.graph.node if n.op_type == "EluGrad"]


def alpha_of(node):
    return next(a.f for a in node.attribute if a.name == "alpha")


def run_both(model, fused, feeds, names):
    want = onnx.reference.ReferenceEvaluator(model).run(names, feeds)
    got = onnx.reference.ReferenceEvaluator(fused, new_ops=list(OPS)).run(names, feeds)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


FEEDS = {
    "X": np.linspace(-3.0, 2.0, 24, dtype=np.float32).reshape(SHAPE),
    "dY": np.linspace(-1.5, 2.5, 24, dtype=np.float32).reshape(SHAPE),
}


# -- extra_factors: a positive-branch constant is found in the negative branch by value -------------
def test_equal_valued_zero_constants_in_both_branches_match_by_value():
    """Where(X <= 0, (dY * z1) * exp(X), dY * z2) with z1, z2 two *different* constants holding 0:
    z2 is z1 by value, so the negative branch is the positive one times exp(X) (alpha 1). Read by
    identity only, z2 would have to divide the constant (1 / 0)."""
    b = Builder()
    y = b.op("Elu", "X")
    z1, z2 = b.const(0.0), b.const(0.0)
    assert z1 != z2
    pos = b.op("Mul", "dY", z2)
    neg = b.op("Mul", b.op("Mul", "dY", z1), b.op("Exp", "X"))
    dx = b.op("Where", b.op("LessOrEqual", "X", b.const(0.0)), neg, pos)
    model = b.model([vi("X"), vi("dY")], [vi(y), vi(dx)])
    fused, report = fuse_and_check(model, remnants={"Where", "LessOrEqual", "Exp"})
    (site,) = report.fused
    assert site.alpha == 1.0 and site.rule == "where_input_exp"
    (node,) = elu_grads(fused)
    assert alpha_of(node) == 1.0
    assert list(node.input) == [pos, y] and list(node.output) == [dx]
    run_both(model, fused, FEEDS, [y, dx])


def test_equal_valued_constants_in_both_branches_give_alpha():
    """Where(X <= 0, (dY * c1) * 0.5 * exp(X), dY * c2), c1 and c2 different tensors holding 3."""
    b = Builder()
    y = b.op("Elu", "X", alpha=0.5)
    c1, c2 = b.const(3.0), b.const(3.0)
    pos = b.op("Mul", "dY", c2)
    neg = b.op("Mul", b.op("Mul", b.op("Mul", "dY", c1), b.const(0.5)), b.op("Exp", "X"))
    dx = b.op("Where", b.op("LessOrEqual", "X", b.const(0.0)), neg, pos)
    model = b.model([vi("X"), vi("dY")], [vi(y), vi(dx)])
    fused, report = fuse_and_check(model, remnants={"Where", "LessOrEqual", "Exp"})
    assert report.fused[0].alpha == 0.5
    (node,) = elu_grads(fused)
    assert alpha_of(node) == 0.5 and list(node.input) == [pos, y]


# -- dtype_of_site: no dtype known is a rejection with its reason ----------------------------------
@pytest.mark.parametrize("elem", [TP.UNDEFINED, TP.DOUBLE])
def test_site_of_no_supported_dtype_is_rejected_with_the_dtypes_found(elem):
    """grads, activations and result all of an unknown (or unsupported) type: the reason names what
    was found, and nothing is fused."""
    b = Builder()
    y = b.op("Elu", "Y0")  # an Elu feeding nothing of the site: the activations are the input Y
    dx = b.op("Where", b.op("Less", "Y", b.const(0.0)), b.op("Mul", "dY", b.op("Add", "Y", b.const(1.0))), "dY")
    model = b.model([vi("Y0"), vi("Y", elem=elem), vi("dY", elem=elem)], [vi(y), vi(dx, elem=elem)])
    fused, report = fuse(model)
    assert not report.fused and not elu_grads(fused), report.summary()
    (site,) = report.rejected
    assert site.reason == ("cannot determine the dtype of the gradient (float32/float16/bfloat16 expected; "
                           "found ['None'])"), site.reason


# -- each rule's own pre-filter --------------------------------------------------------------------
def _celu_input_form():
    """Y = Celu(X){1}, Where(X <= 0, dY * exp(X), dY): no Elu node at all."""
    b = Builder()
    y = b.op("Celu", "X", alpha=1.0)
    dx = b.op("Where", b.op("LessOrEqual", "X", b.const(0.0)), b.op("Mul", "dY", b.op("Exp", "X")), "dY")
    return b.model([vi("X"), vi("dY")], [vi(y), vi(dx)]), y, dx


def test_celu_alpha_one_passes_the_input_form_rules_own_prefilter():
    model, y, dx = _celu_input_form()
    assert "Elu" not in ops(model)
    rules = (where_input_exp.RULE,)
    assert has_candidates(model, rules)
    fused, report = fuse(model, rules=rules)
    (site,) = report.fused
    assert site.rule == "where_input_exp" and site.alpha == 1.0
    (node,) = elu_grads(fused)
    assert alpha_of(node) == 1.0 and list(node.input) == ["dY", y] and list(node.output) == [dx]
    assert "Where" not in ops(fused) and "Exp" not in ops(fused)
    onnx.checker.check_model(fused, full_check=True)
    run_both(model, fused, FEEDS, [y, dx])


def _sub_output_form():
    """Y = Elu(X){0.5}, Where(Y < 0, dY * Sub(Y, -0.5), dY): no Add node at all."""
    b = Builder()
    y = b.op("Elu", "X", alpha=0.5)
    dx = b.op("Where", b.op("Less", y, b.const(0.0)), b.op("Mul", "dY", b.op("Sub", y, b.const(-0.5))), "dY")
    return b.model([vi("X"), vi("dY")], [vi(y), vi(dx)]), y, dx


def test_sub_of_minus_alpha_passes_the_output_form_rules_own_prefilter():
    model, y, dx = _sub_output_form()
    assert "Add" not in ops(model)
    rules = (where_output_add.RULE,)
    assert has_candidates(model, rules)
    fused, report = fuse(model, rules=rules)
    (site,) = report.fused
    assert site.rule == "where_output_add" and (site.alpha, site.exact) == (0.5, True)
    (node,) = elu_grads(fused)
    assert alpha_of(node) == 0.5 and list(node.input) == ["dY", y] and list(node.output) == [dx]
    assert "Where" not in ops(fused) and "Sub" not in ops(fused)
    onnx.checker.check_model(fused, full_check=True)
    run_both(model, fused, FEEDS, [y, dx])


# -- elu_of: a Celu of alpha != 1 is not an Elu ------------------------------------------------------
def test_less_or_equal_on_a_celu_of_alpha_not_one_is_rejected():
    """Where(Y <= 0, dY * (Y + 0.5), dY) with Y = Celu(X){0.5}: with alpha != 1 and ``<=`` the
    output form needs Y to be an Elu's output of that alpha; Celu(.., 0.5) is not Elu(.., 0.5)."""
    b = Builder()
    y = b.op("Celu", "X", alpha=0.5)
    dx = b.op("Where", b.op("LessOrEqual", y, b.const(0.0)), b.op("Mul", "dY", b.op("Add", y, b.const(0.5))), "dY")
    model = b.model([vi("X"), vi("dY")], [vi(y), vi(dx)])
    fused, report = fuse(model)
    assert not report.fused and not elu_grads(fused), report.summary()
    assert fused.SerializeToString() == model.SerializeToString()
    (site,) = report.rejected
    assert site.reason == (f"the comparison includes 0 and alpha is 0.5: the original gives alpha*dY where {y} is 0, "
                           f"EluGrad gives dY, and {y} is not the output of an Elu with that alpha (where it is 0 "
                           "only for X == 0)"), site.reason


def test_less_or_equal_on_an_elu_of_that_alpha_fuses():
    """The same site with Y = Elu(X){0.5} (the contrast of the test above)."""
    b = Builder()
    y = b.op("Elu", "X", alpha=0.5)
    dx = b.op("Where", b.op("LessOrEqual", y, b.const(0.0)), b.op("Mul", "dY", b.op("Add", y, b.const(0.5))), "dY")
    model = b.model([vi("X"), vi("dY")], [vi(y), vi(dx)])
    fused, report = fuse_and_check(model)
    (node,) = elu_grads(fused)
    assert alpha_of(node) == 0.5 and list(node.input) == ["dY", y]
