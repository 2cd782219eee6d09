"""where_output_add, min_add_mul and foreign_elu_grad: every dtype / alpha / operand order."""

import pytest

from checks import fuse_and_check
from graphs import elu_backward
from ort_ops.rewrite import RewriteReport, fuse_elu_grad

FUSED = ["Elu", "Identity", "EluGrad", "Identity"]


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("alpha", [1.0, 0.5])
@pytest.mark.parametrize("form", ["inplace", "less"])
@pytest.mark.parametrize("swap", [False, True])
def test_where_output_add(dtype, alpha, form, swap):
    model = elu_backward(form, dtype, alpha, const_kind="constant", swap=swap)
    _, report = fuse_and_check(model, FUSED, ort=dtype != "bfloat16", reference=dtype != "bfloat16")
    (site,) = report.fused
    assert site.rule == "where_output_add" and site.dtype == dtype and site.alpha == alpha
    # Less is EluGrad's own formula; LessOrEqual is exact only for alpha = 1
    assert site.exact == (form == "less" or alpha == 1.0)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_exact_sites_fuse_in_strict_mode(dtype):
    fuse_and_check(elu_backward("less", dtype, 0.5), FUSED, strict=True)
    fuse_and_check(elu_backward("inplace", dtype, 1.0), FUSED, strict=True)


def test_inplace_alpha_not_one_rejected_in_strict_mode():
    report = RewriteReport()
    fuse_elu_grad(elu_backward("inplace", alpha=0.5), strict=True, report=report)
    assert "boundary" in report.rejected[0].reason


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("swap", [False, True])
def test_min_add_mul(dtype, swap):
    _, report = fuse_and_check(elu_backward("min", dtype, swap=swap), FUSED)
    assert report.fused[0].rule == "min_add_mul" and not report.fused[0].exact


def test_min_form_is_elu_grad_with_alpha_one_whatever_y_is():
    """(min(Y, 0) + 1) * dY is EluGrad's formula with alpha 1 for any Y: fused as that, also when
    Y comes from an Elu of another alpha (the graph computes alpha 1's formula, and so does the
    result)."""
    import onnx
    model = elu_backward("min")
    for n in model.graph.node:
        if n.op_type == "Elu":
            del n.attribute[:]
            n.attribute.append(onnx.helper.make_attribute("alpha", 0.5))
    _, report = fuse_and_check(model, FUSED)
    assert report.fused[0].alpha == 1.0


def test_foreign_tf_elu_grad():
    # the original cannot run in ORT (unknown domain): check structure, checker, reference
    fused, report = fuse_and_check(elu_backward("tf"), FUSED, strict=True, ort=False)
    assert report.fused[0].rule == "foreign_elu_grad" and report.fused[0].exact


def test_several_layers_one_elu_grad_each():
    fuse_and_check(elu_backward("torch", layers=3), n_sites=3)
