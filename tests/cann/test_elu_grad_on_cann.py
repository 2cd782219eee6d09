"""EluGrad on ONNX Runtime's CANN execution provider (on the ACL simulator when there is no
NPU): assigned to CANNExecutionProvider (checked from ORT's profile), equal to the NumPy
reference bit for bit; mixed CANN/CPU graphs; error paths."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import ort_ops
from ort_ops import ort_io
from ort_ops.domain import DOMAIN
from ort_ops.model_builder import make_elu_grad_model, make_model
from ort_ops.reference import elu_grad

cann_ep = pytest.importorskip("ort_ops.cann_ep")

SHAPES_BY_RANK = [(), (5,), (3, 4), (2, 3, 4), (2, 1, 3, 5), (1, 2, 3, 2, 2), (2, 1, 2, 1, 3, 2),
                  (1, 2, 1, 2, 1, 2, 3), (2, 1, 1, 2, 1, 2, 1, 3)]


pytestmark = pytest.mark.usefixtures("cann_simulator")


def inputs(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    np_dtype = ort_ops.dtypes.numpy_dtype(dtype)
    return [rng.uniform(-2, 2, shape).astype(np.float32).astype(np_dtype) for _ in range(2)]


def run_on_cann(model, feeds, tmp_path, place=True):
    session = cann_ep.session(model, profile_prefix=str(tmp_path / "profile"), place=place)
    outputs = ort_io.run(session, feeds)
    return outputs, cann_ep.node_runs(session)


def assert_bits_equal(actual, expected):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert np.array_equal(np.ascontiguousarray(actual).view(np.uint8),
                          np.ascontiguousarray(expected).view(np.uint8))


def check(dtype, shape, alpha, grads, activations, tmp_path):
    (y,), runs = run_on_cann(make_elu_grad_model(dtype, shape, alpha),
                             {"grads": grads, "activations": activations}, tmp_path)
    assert {(r.op_type, r.provider) for r in runs if r.op_type == "EluGrad"} == {
        ("EluGrad", "CANNExecutionProvider")}
    assert_bits_equal(y, elu_grad(grads, activations, 1.0 if alpha is None else alpha))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("rank", range(len(SHAPES_BY_RANK)))
def test_ranks_on_cann(dtype, rank, tmp_path):
    shape = SHAPES_BY_RANK[rank]
    check(dtype, shape, None, *inputs(shape, dtype, seed=rank), tmp_path)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("alpha", [1.0, 0.5, 2.0, 0.0, float("nan"), float("inf")])
def test_alphas_and_edge_values_on_cann(dtype, alpha, tmp_path):
    """Edge values (NaN, infinities, zeros) in every pair: NaN payloads follow the rule of
    docs/ops/EluGrad.md (alpha = NaN and inf too), as the reference does."""
    np_dtype = ort_ops.dtypes.numpy_dtype(dtype)
    payload_nans = np.array([0x7F812345, 0xFFA0BEEF, 0x7FC01234], np.uint32).view(np.float32)
    with np.errstate(invalid="ignore"):
        edges = np.concatenate([np.array([0.0, -0.0, 1.0, -1.0, -0.5, np.inf, -np.inf, np.nan, 1e-30, -1e-30,
                                          3.5, -3.5], np.float32), payload_nans]).astype(np_dtype)
    grads, activations = (x.ravel().copy() for x in np.meshgrid(edges, edges, indexing="ij"))
    check(dtype, (grads.size,), alpha, grads, activations, tmp_path)
    g, a = inputs((3, 33), dtype, seed=5)
    check(dtype, (3, 33), alpha, g, a, tmp_path)


@pytest.mark.parametrize("place", [False, True], ids=["ep_only", "placed"])
def test_mixed_graph_relu_cann_elugrad_cann_elu(place, tmp_path):
    """Relu (CANN) -> EluGrad (CANN) -> Elu: the CANN EP has no Elu, so without placement it runs
    on the CPU (Memcpy by ORT); placed, on CANN (CANN's Elu)."""
    shape = [4, 5]
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("EluGrad", ["grads", "r"], ["d"], domain=DOMAIN, name="elugrad",
                         alpha=0.5),
        helper.make_node("Elu", ["d"], ["y"], name="elu", alpha=1.0),
    ]
    graph = helper.make_graph(
        nodes, "mixed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape),
         helper.make_tensor_value_info("grads", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
    )
    model = make_model(graph)
    onnx.checker.check_model(model, full_check=True)
    x, grads = inputs(shape, "float32", seed=9)
    (y,), runs = run_on_cann(model, {"x": x, "grads": grads}, tmp_path, place=place)
    providers = {r.node: r.provider for r in runs}
    assert providers["relu"] == "CANNExecutionProvider"
    assert providers["elugrad"] == "CANNExecutionProvider"
    assert providers["elu"] == ("CANNExecutionProvider" if place else "CPUExecutionProvider")
    d = elu_grad(grads, np.maximum(x, np.float32(0)), 0.5)
    expected = np.where(d > 0, d, np.expm1(d)).astype(np.float32)
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-7)


def test_shape_mismatch_on_cann(tmp_path):
    session = cann_ep.session(make_elu_grad_model("float32", ["n", "m"]))
    with pytest.raises(Exception, match=r"grads shape \[4, 2\] differs from activations shape \[4, 3\]"):
        ort_io.run(session, {"grads": inputs((4, 2), "float32")[0],
                             "activations": inputs((4, 3), "float32")[1]})
    g, a = inputs((4, 2), "float32")
    assert_bits_equal(ort_io.run(session, {"grads": g, "activations": a})[0], elu_grad(g, a))


def test_mixed_dtypes_rejected_on_cann():
    with pytest.raises(Exception, match="no kernel def matches node inputs for Op: EluGrad"):
        cann_ep.session(make_elu_grad_model("float32", (4, 2), activations_dtype="float16"))


@pytest.mark.parametrize("alpha", [None, 0.5])
def test_empty_tensor_on_cann(alpha, tmp_path):
    shape = (1, 0, 2, 64)
    g, a = inputs(shape, "bfloat16")
    (y,), runs = run_on_cann(make_elu_grad_model("bfloat16", shape, alpha),
                             {"grads": g, "activations": a}, tmp_path)
    assert y.shape == shape and y.size == 0


@pytest.mark.parametrize("alpha", [None, 0.5])
def test_injected_acl_failure_surfaces_and_session_recovers(alpha):
    from ort_ops.cann_ep import sim

    session = cann_ep.session(make_elu_grad_model("float16", (8,), alpha))
    g, a = inputs((8,), "float16", seed=3)
    failing_op = "EluGrad" if alpha is None else "Select"
    sim.fail_next_op(failing_op)
    try:
        with pytest.raises(Exception) as error:
            ort_io.run(session, {"grads": g, "activations": a})
    finally:
        sim.fail_next_op(None)
    message = str(error.value)
    assert f'aclopCompileAndExecute("{failing_op}") failed with ACL error' in message
    assert_bits_equal(ort_io.run(session, {"grads": g, "activations": a})[0],
                      elu_grad(g, a, 1.0 if alpha is None else alpha))


def test_demo_on_cann(tmp_path, capsys):
    from models import demo_elugrad as demo

    assert demo.main(["--ep", "cann", "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert text.count("EluGrad ran on CANNExecutionProvider") == 2
    assert (tmp_path / "elugrad_article_bfloat16_cann_output_0.bin").stat().st_size == 16
