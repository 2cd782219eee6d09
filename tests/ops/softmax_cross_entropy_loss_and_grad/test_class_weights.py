"""SoftmaxCrossEntropyLossAndGrad's class weights (input 3): the float64 reference against PyTorch's
F.cross_entropy(weight=...) and its autograd in float64 (ignored rows, every row ignored, zero
weights, -inf logits, label smoothing, both reductions), the CPU kernel and the lowering against the
reference, and the weight's errors."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch
import torch.nn.functional as F
from onnxruntime.capi.onnxruntime_pybind11_state import Fail, InvalidArgument, InvalidGraph, RuntimeException

from op_helpers import make_session
from ort_ops import dtypes, ort_io, tolerances
from ort_ops.model_builder import make_op_model
from ort_ops.ops import op
from ort_ops.ops.softmax_cross_entropy_loss_and_grad import softmax_cross_entropy_loss_and_grad as reference
from ort_ops.rewrite.lower import LOWERINGS

OP = op("SoftmaxCrossEntropyLossAndGrad")
ORT_ERRORS = (Fail, InvalidArgument, InvalidGraph, RuntimeException)
ATTRS = [{"reduction": r, "ignore_index": k, "label_smoothing": e}
         for r in ("mean", "sum") for k in (-100, 2) for e in (0.0, 0.1, 1.0)]


def case(kind: str, n=7, c=5, seed=0, ignore_index=2):
    """(logits float64, target, weight float64) of a named corner."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0.0, 2.0, (n, c))
    t = rng.integers(0, c, n).astype(np.int64)
    w = rng.uniform(0.25, 3.0, c)
    if kind == "ignored":
        t[[1, 4]] = ignore_index
    elif kind == "all_ignored":
        t[:] = ignore_index
    elif kind == "zero_weights":  # some rows' classes weigh 0, another class weighs 0 too
        t[[0, 3]] = 1
        w[[1, 4]] = 0.0
    elif kind == "all_targets_weigh_zero":  # the normaliser is 0 with rows that count
        t[:] = 1
        w[1] = 0.0
    elif kind == "neg_inf":  # -inf logits at a target and at other classes, one weighing 0
        t[[0, 5]] = [3, 0]
        x[0, 3] = -np.inf
        x[2, 4] = -np.inf
        x[5, 1] = -np.inf
        w[1] = 0.0
    return x, t, w


def torch_result(x, t, w, dloss, ignore_index, reduction, label_smoothing):
    logits = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    loss = F.cross_entropy(logits, torch.from_numpy(t), weight=torch.from_numpy(w), ignore_index=ignore_index,
                           reduction=reduction, label_smoothing=label_smoothing)
    (loss * dloss).backward()
    return loss.detach().numpy(), logits.grad.numpy()


def assert_close(got, want, what, tol=tolerances.TOLERANCES["float64"]):
    check = tolerances.check(got, want, tol)
    assert check.ok, f"{what}: {check}"


@pytest.mark.parametrize("kind", ["plain", "ignored", "all_ignored", "zero_weights", "all_targets_weigh_zero",
                                  "neg_inf"])
@pytest.mark.parametrize("attrs", ATTRS, ids=lambda a: "-".join(str(v) for v in a.values()))
def test_reference_is_pytorchs_weighted_cross_entropy_and_its_autograd(kind, attrs):
    x, t, w = case(kind, ignore_index=attrs["ignore_index"])
    x, w = x.astype(np.float32), w.astype(np.float32)  # the reference computes in float64, rounds to float32
    eps = float(np.float32(attrs["label_smoothing"]))
    with np.errstate(all="ignore"):
        loss, grad = reference(x, t, np.float32(0.75), w, **attrs)
    want_loss, want_grad = torch_result(x.astype(np.float64), t, w.astype(np.float64), 0.75, attrs["ignore_index"],
                                        attrs["reduction"], eps)
    if kind == "neg_inf" and attrs["label_smoothing"] == 1.0:
        # PyTorch adds 0 * nll (inf) + 1 * smooth: NaN where the op's one distribution gives the smooth term
        pytest.skip("eps = 1 with an infinite nll: PyTorch's 0 * inf")
    tol = tolerances.TOLERANCES["float32"]
    assert_close(loss, want_loss.astype(np.float32), "loss", tol)
    assert_close(grad, want_grad.astype(np.float32), "dlogits", tol)


def test_reference_weights_of_one_are_no_weights():
    x, t, _ = case("ignored")
    x = x.astype(np.float32)
    for attrs in ATTRS:
        a = reference(x, t, np.float32(1.5), np.ones(5, np.float32), **attrs)
        b = reference(x, t, np.float32(1.5), None, **attrs)
        assert_close(a[0], b[0], "loss")
        assert_close(a[1], b[1], "dlogits")


def weighted_inputs(dtype, seed=1, n=9, c=6):
    x, t, w = case("ignored", n=n, c=c, seed=seed)
    w[2] = 0.0
    np_dtype = dtypes.numpy_dtype(dtype)
    cast = lambda a: np.asarray(a, np.float32).astype(np_dtype)
    return [cast(x), t, cast(np.float32(1.25)), cast(w)]


def model_of(attrs, dtype, n=9, c=6, weighted=True):
    return make_op_model("SoftmaxCrossEntropyLossAndGrad", dtype=dtype, **attrs,
                         input_shapes=[[n, c], [n], [], [c] if weighted else None], output_shapes=[[], [n, c]])


def run(model, inputs):
    feeds = {k: v for k, v in zip(["logits", "target", "dloss", "weight"], inputs) if v is not None}
    return ort_io.run(make_session(model), feeds, ["loss", "dlogits"])


@pytest.mark.parametrize("dtype", dtypes.FLOAT_TYPES)
@pytest.mark.parametrize("attrs", ATTRS, ids=lambda a: "-".join(str(v) for v in a.values()))
def test_cpu_kernel_is_the_reference_with_weights(attrs, dtype):
    inputs = weighted_inputs(dtype)
    got = run(model_of(attrs, dtype), inputs)
    want = reference(*inputs, **attrs)
    for g, r, name in zip(got, want, ("loss", "dlogits")):
        assert g.dtype == r.dtype
        assert_close(g, r, name, tolerances.tolerance_of(dtype))


@pytest.mark.parametrize("kind", ["all_ignored", "zero_weights", "all_targets_weigh_zero", "neg_inf"])
@pytest.mark.parametrize("attrs", ATTRS, ids=lambda a: "-".join(str(v) for v in a.values()))
def test_cpu_kernel_corners_with_weights(attrs, kind):
    x, t, w = case(kind, ignore_index=attrs["ignore_index"])
    inputs = [x.astype(np.float32), t, np.float32(0.75), w.astype(np.float32)]
    got = run(model_of(attrs, "float32", 7, 5), inputs)
    with np.errstate(all="ignore"):
        want = reference(*inputs, **attrs)
    for g, r, name in zip(got, want, ("loss", "dlogits")):
        assert_close(g, r, name, tolerances.tolerance_of("float32"))


@pytest.mark.parametrize("weighted", [True, False])
@pytest.mark.parametrize("dtype", dtypes.FLOAT_TYPES)
@pytest.mark.parametrize("attrs", ATTRS, ids=lambda a: "-".join(str(v) for v in a.values()))
def test_lowering_is_the_reference(attrs, dtype, weighted):
    inputs = weighted_inputs(dtype)
    if not weighted:
        inputs[3] = None
    lowered = LOWERINGS["SoftmaxCrossEntropyLossAndGrad"](model_of(attrs, dtype, weighted=weighted))
    assert {n.domain for n in lowered.graph.node} == {""}
    onnx.checker.check_model(lowered, full_check=True)
    got = run(lowered, inputs)
    want = reference(*inputs, **attrs)
    for g, r, name in zip(got, want, ("loss", "dlogits")):
        assert_close(g, r, name, tolerances.tolerance_of(dtype))


def test_weight_of_another_shape_is_refused_naming_it():
    inputs = weighted_inputs("float32")
    model = make_op_model("SoftmaxCrossEntropyLossAndGrad", dtype="float32",
                          input_shapes=[[9, 6], [9], [], [5]], output_shapes=[[], [9, 6]])
    inputs[3] = inputs[3][:5]
    with pytest.raises(ORT_ERRORS, match=r"weight shape \[5\] is not \[C\] = \[6\]"):
        run(model, inputs)
    with pytest.raises(ValueError, match=r"weight shape \[5\] is not \[C\] = \[6\]"):
        reference(*inputs)
