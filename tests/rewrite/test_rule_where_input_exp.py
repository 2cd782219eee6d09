"""where_input_exp: PyTorch's Where(X <= 0, dY * alpha * exp(X), dY)."""

import onnx
import pytest
from onnx import helper

from checks import fuse_and_check
from graphs import Builder, elu_backward
from ort_ops.rewrite import RewriteReport, fuse_elu_grad

DTYPES = ["float32", "float16", "bfloat16"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("alpha", [1.0, 0.5])
@pytest.mark.parametrize("const_kind", ["initializer", "constant"])
@pytest.mark.parametrize("swap", [False, True])
def test_torch_form_fuses(dtype, alpha, const_kind, swap):
    model = elu_backward("torch", dtype, alpha, const_kind=const_kind, swap=swap)
    # ORT CPU has no bfloat16 Elu: bf16 graphs are checked with the reference evaluator only
    fused, report = fuse_and_check(model, ["Elu", "Identity", "EluGrad", "Identity"],
                                   ort=dtype != "bfloat16", reference=dtype != "bfloat16")
    (site,) = report.fused
    assert (site.rule, site.dtype, site.alpha, site.exact) == ("where_input_exp", dtype, alpha, False)
    node = next(n for n in fused.graph.node if n.op_type == "EluGrad")
    assert node.domain == "ai.ortops" and list(node.input) == ["dY0", "elu_1"]  # dY and the Elu's output
    assert helper.get_attribute_value(node.attribute[0]) == pytest.approx(alpha)
    assert any("boundary" in n for n in site.notes) == (alpha != 1.0)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_optimize_false_form_fuses(dtype, alpha):
    model = elu_backward("torch_noopt", dtype, alpha, const_kind="cast")
    fused, _ = fuse_and_check(model)
    # the forward Mul-by-CastLike(1) stays untouched; every backward node is gone
    assert fused.graph.node and "Exp" not in [n.op_type for n in fused.graph.node]


def test_strict_rejects_with_reason():
    report = RewriteReport()
    model = elu_backward("torch")
    out = fuse_elu_grad(model, strict=True, report=report)
    assert out.SerializeToString() == model.SerializeToString()
    (site,) = report.rejected
    assert site.reason.startswith("strict: not provably unchanged")


def _negative(mutate):
    """A torch-form graph built by hand so that one piece can be changed."""
    b = Builder()
    T = onnx.TensorProto.FLOAT
    x, z, dy = "X", "Z", "dY"
    ins = {"x": x, "elu_in": x, "exp_in": x, "alpha_elu": 0.5, "alpha_mul": 0.5, "extra_use": False}
    ins.update(mutate)
    y = b.op("Elu", ins["elu_in"], alpha=ins["alpha_elu"])
    le = b.op("LessOrEqual", ins["x"], b.const(0.0))
    m = b.op("Mul", b.op("Mul", dy, b.const(ins["alpha_mul"])), b.op("Exp", ins["exp_in"]))
    dx = b.op("Where", le, m, dy)
    outs = [y, dx] + ([m] if ins["extra_use"] else [])
    for o in outs:
        b.nodes.append(helper.make_node("Identity", [o], [f"out_{o}"]))
    vi = lambda n: helper.make_tensor_value_info(n, T, [3, 5])
    return b.model([vi(x), vi(z), vi(dy)], [vi(f"out_{o}") for o in outs])


@pytest.mark.parametrize("mutate, reason", [
    ({"x": "Z", "exp_in": "Z"}, "Z does not feed an Elu node"),
    ({"alpha_mul": 0.25}, "no Elu of X has alpha 0.25 (its Elus have alpha 0.5)"),
    ({"exp_in": "Z"}, "Exp reads Z, which is not the compared tensor X"),
])
def test_negative_cases_state_their_reason(mutate, reason):
    model = _negative(mutate)
    onnx.checker.check_model(model, full_check=True)
    report = RewriteReport()
    out = fuse_elu_grad(model, report=report)
    assert out.SerializeToString() == model.SerializeToString()
    (site,) = report.rejected
    assert reason in site.reason, site.reason


def test_intermediates_used_elsewhere_stay_and_the_site_fuses():
    """An Exp (or Mul) of the pattern that another node reads too is kept for that node; the
    Where is still replaced (EluGrad computes the same value)."""
    b = Builder()
    T = onnx.TensorProto.FLOAT
    y = b.op("Elu", "X")
    e = b.op("Exp", "X")
    m = b.op("Mul", "dY", e)
    dx = b.op("Where", b.op("LessOrEqual", "X", b.const(0.0)), m, "dY")
    other = b.op("Neg", e)
    vi = lambda n: helper.make_tensor_value_info(n, T, [3, 5])
    model = b.model([vi("X"), vi("dY")], [vi(y), vi(dx), vi(other), vi(m)])
    fused, report = fuse_and_check(model, ["Elu", "Exp", "Mul", "EluGrad", "Neg"], remnants={"Where"})
    assert report.fused[0].rule == "where_input_exp"
