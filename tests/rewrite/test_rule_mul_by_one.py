"""A multiplication by an exact 1 is value-preserving, and the ELU rules see through it (issue 19
item 18): ``torch.onnx.export(..., optimize=False)`` spells ELU ``Mul(Elu(Mul(x, CastLike(1))),
CastLike(1))`` (scale and input_scale of 1), and the output-form backward of an in-place ELU on a
[B, T, C] tensor reads that product through Reshapes. Only a constant that is exactly 1 in the dtype
the Mul computes in is looked through: never 1 + eps, nor a constant that broadcasts."""

from __future__ import annotations

import numpy as np
import onnx_graphsurgeon as gs
import pytest
from onnx import TensorProto as TP
from onnx import helper

from checks import fuse_and_check
from graphs import Builder
from ort_ops.rewrite import RewriteReport, fuse_elu_grad
from ort_ops.rewrite.graph_view import GraphView

ALPHA = 0.7
BTC, FLAT = [2, 3, 4], [6, 4]


def vi(name, shape, elem=TP.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def one(b: Builder, spelling: str, like: str) -> str:
    """A 1 in the spellings exporters write (the value the Mul multiplies by, in float32)."""
    if spelling == "castlike-int64":  # the unoptimised PyTorch export: CastLike(Constant(1), x)
        return b.op("CastLike", b.const(1, np.int64), like)
    if spelling == "castlike-float64":
        return b.op("CastLike", b.const(1.0, np.float64), like)
    if spelling == "castlike-float64-rounds-to-1":  # 1 + 2^-52 is float32 1 exactly: multiplied is 1
        return b.op("CastLike", b.const(1.0 + 2.0**-52, np.float64), like)
    if spelling == "cast-int64":
        return b.op("Cast", b.const(1, np.int64), to=TP.FLOAT)
    if spelling == "float32":
        return b.const(1.0)
    if spelling == "expanded":
        return b.op("Expand", b.const(1.0), b.const(np.array([1, 1, 1]), np.int64))
    raise ValueError(spelling)


SPELLINGS = ["castlike-int64", "castlike-float64", "castlike-float64-rounds-to-1", "cast-int64", "float32",
             "expanded"]


def inplace_elu_model(scale_in: str | None, scale_out: str | None, compare="LessOrEqual", const=None):
    # const: a function of the Builder making the output scale (instead of a spelling of 1)
    """Y = Mul(Elu(Mul(X, 1)), 1) on [2, 3, 4]; dX = Where(R <= 0, dY * (R + alpha), dY) with R
    the [6, 4] Reshape of Y (the in-place ELU's output-form backward, as PyTorch exports it)."""
    b = Builder()
    x = "X" if scale_in is None else b.op("Mul", "X", one(b, scale_in, "X"))
    elu = b.op("Elu", x, alpha=ALPHA)
    y = elu if scale_out is None else b.op("Mul", elu, const(b) if const else one(b, scale_out, "X"))
    r = b.op("Reshape", b.op("Reshape", y, b.const(np.array([6, 4]), np.int64)), b.const(np.array([6, 4]), np.int64))
    dx = b.op("Where", b.op(compare, r, b.const(0.0)), b.op("Mul", "dY", b.op("Add", r, b.const(ALPHA))), "dY")
    return b.model([vi("X", BTC), vi("dY", FLAT)], [vi(y, BTC), vi(dx, FLAT)]), r, dx


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_the_unoptimised_export_of_an_inplace_elu_fuses(spelling):
    """Fused as the same graph without the Muls is (Y <= 0 with alpha != 1: not exact at Y == 0)."""
    model, r, dx = inplace_elu_model(spelling, spelling)
    fused, report = fuse_and_check(model)
    (site,) = report.fused
    _, plain = fuse_and_check(inplace_elu_model(None, None)[0])
    assert (site.alpha, site.exact, site.notes) == (plain.fused[0].alpha, plain.fused[0].exact, plain.fused[0].notes)
    assert site.alpha == ALPHA
    (node,) = [n for n in fused.graph.node if n.op_type == "EluGrad"]
    assert list(node.input) == ["dY", r] and list(node.output) == [dx]


@pytest.mark.parametrize("value, dtype", [(1.0 + 2.0**-23, np.float32), (1.0 - 2.0**-24, np.float32),
                                          (-1.0, np.float32), (1.0 + 2.0**-10, np.float16)],
                         ids=["1+2^-23", "1-2^-24", "-1", "float16 1+2^-10"])
def test_a_scale_that_is_not_exactly_1_is_not_looked_through(value, dtype):
    """Y = Mul(Elu(X), c) with c not 1 (as float32, what the Mul multiplies by) is not an Elu's output."""
    def scale(b):
        c = b.const(value, dtype)
        return c if dtype == np.float32 else b.op("Cast", c, to=TP.FLOAT)

    model, r, _ = inplace_elu_model(None, "float32", const=scale)
    report = RewriteReport()
    fused = fuse_elu_grad(model, report=report)
    assert not report.fused, report.summary()
    (site,) = report.rejected
    assert f"{r} is not the output of an Elu with that alpha" in site.reason, site.reason
    assert fused.SerializeToString() == model.SerializeToString()


def test_a_scale_of_ones_that_broadcasts_is_not_looked_through():
    """Mul(Elu(X), ones([1, 2, 3, 4])) has rank 4: not Elu(X)'s values at the same positions."""
    model, r, _ = inplace_elu_model(None, "float32", const=lambda b: b.const(np.ones([1, 2, 3, 4])))
    report = RewriteReport()
    fuse_elu_grad(model, report=report)
    assert not report.fused, report.summary()
    assert f"{r} is not the output of an Elu with that alpha" in report.rejected[0].reason


def _mul_view(const: np.ndarray, dtype=np.float64):
    x = gs.Variable("x", dtype=dtype, shape=[3])
    c = gs.Constant("c", const)
    y = gs.Variable("y", dtype=dtype, shape=[3])
    graph = gs.Graph(nodes=[gs.Node("Mul", "m", inputs=[x, c], outputs=[y])], inputs=[x], outputs=[y])
    return GraphView(graph), x, y


@pytest.mark.parametrize("value, dtype, is_one", [
    (1.0, np.float64, True), (1.0 + 2.0**-52, np.float64, False), (1.0 - 2.0**-53, np.float64, False),
    (1.0, np.float32, True), (1.0 + 2.0**-23, np.float32, False), (1, np.int64, True), (2, np.int64, False),
], ids=["f64-1", "f64-1+2^-52", "f64-1-2^-53", "f32-1", "f32-1+2^-23", "i64-1", "i64-2"])
def test_strip_looks_through_a_mul_only_by_an_exact_1_in_its_own_dtype(value, dtype, is_one):
    """A float64 1 + 2^-52 is float32 1: it was looked through, a Mul by it is not the identity."""
    view, x, y = _mul_view(np.array(value, dtype), dtype)
    assert (view.strip(y) is x) == is_one
    assert (view.view_source(y) is x) == is_one
    assert view.is_one(view.graph.nodes[0].inputs[1]) == is_one
