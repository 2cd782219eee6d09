"""The ELU MLP training graph (``tests/fixtures/mlp_elu_fp32.onnx``: loss + every parameter
gradient), unfused and with the ELU backward fused into ``ai.ortops::EluGrad``, on ONNX
Runtime's CANN EP in single-op mode (on the ACL simulator when there is no NPU), as the EP runs
it by itself: without the placement pass (``cann_ep.session(..., place=False)``; with it:
tests/cann/test_placement_on_cann.py).

Checked:
- loss and gradients equal the CPU EP's (same process, CPU-only session with the op library
  registered): bit for bit where every CANN node upstream is elementwise (``loss``,
  ``grad.net.4.bias``), otherwise ``max|got - want| <= 1e-6 + 1e-5 * max|want|`` (fp32 row of
  ``ort_ops.training.verify.TOLERANCES``; the differences come from BatchMatMul's accumulation order);
- placement from ORT's profile: exactly the expected op types run on CANNExecutionProvider
  (EluGrad included), everything else on CPU, with Memcpy nodes in between;
- the ACL op types the provider sent (the simulator's per-op-type counters);
- each CANN node on its own, fed the graph's real intermediate values: elementwise ops and
  EluGrad equal the CPU EP bit for bit; MatMul (``BatchMatMul``) equals float32 accumulation
  in k order bit for bit (the simulator's documented order) and the CPU EP within tolerance.

Parameters are graph inputs (as a training runner feeds them) or initializers (as exported).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

import ort_ops
from ort_ops.domain import DOMAIN

cann_ep = pytest.importorskip("ort_ops.cann_ep")
rewrite = pytest.importorskip("ort_ops.rewrite")

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "mlp_elu_fp32.onnx"
CANN, CPU = "CANNExecutionProvider", "CPUExecutionProvider"
RTOL, ATOL = 1e-5, 1e-6  # fp32 row of ort_ops.training.verify.TOLERANCES (max|d| <= atol + rtol*max|want|)
EXACT_OUTPUTS = ("loss", "grad.net.4.bias")  # only elementwise CANN nodes upstream

# ONNX op types the CANN EP (onnxruntime-cann 1.24.4) claims in this graph, with node counts.
CLAIMED = {
    "unfused": {"MatMul": 5, "Mul": 4, "Sub": 1, "Div": 2, "Neg": 1},
    "fused": {"MatMul": 5, "Mul": 2, "Sub": 1, "Div": 2, "Neg": 1, "EluGrad": 2},
}
# ACL op types the provider sends for one run (aclopCompileAndExecute calls per type).
SENT = {
    "unfused": {"BatchMatMul": 5, "Mul": 4, "BroadcastToD": 2, "Sub": 1, "Div": 2, "Neg": 1},
    "fused": {"BatchMatMul": 5, "Mul": 2, "BroadcastToD": 2, "Sub": 1, "Div": 2, "Neg": 1, "EluGrad": 2},
}
# CANN node op types whose result must equal the CPU EP's bit for bit.
BIT_EXACT_OPS = {"Mul", "Sub", "Div", "Neg", "EluGrad"}


pytestmark = pytest.mark.usefixtures("cann_simulator")


def params_as_inputs(model: onnx.ModelProto) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """The parameters (initializers ``net.*``) turned into graph inputs, and their values."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    values = {}
    for init in [i for i in model.graph.initializer if i.name.startswith("net.")]:
        values[init.name] = onnx.numpy_helper.to_array(init)
        model.graph.initializer.remove(init)
        model.graph.input.append(helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))
    return model, values


def make_model(variant: str, params: str) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    model = onnx.load(FIXTURE)
    if variant == "fused":
        model = rewrite.fuse_elu_grad(model)
        assert [n.op_type for n in model.graph.node if n.domain == DOMAIN] == ["EluGrad", "EluGrad"]
    extra = {}
    if params == "inputs":
        model, extra = params_as_inputs(model)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((8, 64)).astype(np.float32)
    target = rng.integers(0, 10, 8).astype(np.int64)
    target[3] = -100  # cross_entropy's ignore_index: exercises the masked branches
    return model, {"input": x, "target": target, **extra}


def cpu_session(model: onnx.ModelProto):
    import onnxruntime as ort

    return ort.InferenceSession(model.SerializeToString(), ort_ops.register(ort.SessionOptions()), providers=[CPU])


def run_on_cann(model, feeds, tmp_path):
    import ort_ops.cann_ep.sim as sim

    before = sim.op_counts()
    session = cann_ep.session(model, profile_prefix=str(tmp_path / "profile"), place=False)
    names = [o.name for o in session.get_outputs()]
    outputs = dict(zip(names, session.run(None, feeds)))
    after = sim.op_counts()
    sent = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
    return outputs, cann_ep.node_runs(session), sent


def assert_bits_equal(name, got, want):
    assert got.dtype == want.dtype and got.shape == want.shape, name
    assert np.array_equal(np.atleast_1d(got).view(np.uint8), np.atleast_1d(want).view(np.uint8)), (
        f"{name}: not bit-identical, max |diff| {np.max(np.abs(got.astype(np.float64) - want))}")


def assert_close(name, got, want):
    assert got.dtype == want.dtype and got.shape == want.shape, name
    err = float(np.max(np.abs(got.astype(np.float64) - want))) if want.size else 0.0
    allowed = ATOL + RTOL * float(np.max(np.abs(want)))
    assert err <= allowed, f"{name}: max |diff| {err:.3g} > allowed {allowed:.3g}"


@pytest.mark.parametrize("params", ["inputs", "initializers"])
@pytest.mark.parametrize("variant", ["unfused", "fused"])
def test_training_graph_on_cann_matches_cpu(variant, params, tmp_path):
    model, feeds = make_model(variant, params)
    cpu = cpu_session(model)
    want = dict(zip([o.name for o in cpu.get_outputs()], cpu.run(None, feeds)))
    got, runs, sent = run_on_cann(model, feeds, tmp_path)

    assert set(got) == {"loss"} | {f"grad.net.{i}.{p}" for i in (0, 2, 4) for p in ("weight", "bias")}
    for name in got:
        assert np.all(np.isfinite(want[name])), name
        (assert_bits_equal if name in EXACT_OUTPUTS else assert_close)(name, got[name], want[name])

    # Placement, from the profile: exactly the expected op types on CANN, the rest on CPU.
    on_cann: dict[str, int] = {}
    for r in runs:
        if r.op_type.startswith("Memcpy"):
            assert r.provider == CANN, r
        elif r.provider == CANN:
            on_cann[r.op_type] = on_cann.get(r.op_type, 0) + 1
        else:
            assert r.provider == CPU, r
    assert on_cann == CLAIMED[variant]
    assert {r.op_type for r in runs} >= {"MemcpyFromHost", "MemcpyToHost"}  # automatic copies
    elu_grads = [r for r in runs if r.op_type == "EluGrad"]
    assert len(elu_grads) == (2 if variant == "fused" else 0)
    assert all(r.provider == CANN for r in elu_grads)
    # The ACL op types the provider sent, each executed by the simulator.
    assert sent == SENT[variant]


def intermediate_values(model, feeds) -> dict[str, np.ndarray]:
    """Every value of the graph (CPU EP run with all node outputs exposed)."""
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {vi.name: vi for vi in list(inferred.graph.value_info) + list(inferred.graph.output)}
    exposed = onnx.ModelProto.FromString(model.SerializeToString())
    del exposed.graph.output[:]
    names = [o for n in model.graph.node for o in n.output if o]
    for name in names:
        if name in types:
            exposed.graph.output.append(types[name])
        else:  # EluGrad output (custom op: no ONNX shape inference): same type as its grads input
            exposed.graph.output.append(helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    values = dict(zip(names, cpu_session(exposed).run(names, feeds)))
    values.update(feeds)
    values.update({i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer})
    return values


def single_node_model(model, node, values) -> onnx.ModelProto:
    def info(name):
        v = values[name]
        return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))

    graph = helper.make_graph([node], node.name, [info(i) for i in node.input], [info(o) for o in node.output])
    return helper.make_model(graph, opset_imports=list(model.opset_import), ir_version=model.ir_version)


def batch_matmul_k_order(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The simulator's BatchMatMul for 2-D float32: y[i,j] = sum over p in increasing order of
    a[i,p]*b[p,j], each product and each partial sum rounded to float32 (no FMA)."""
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for p in range(a.shape[1]):
        acc = acc + np.multiply.outer(a[:, p], b[p, :]).astype(np.float32)
    return acc


@pytest.mark.parametrize("variant", ["unfused", "fused"])
def test_each_cann_node_has_cann_semantics(variant, tmp_path):
    """Each node the CANN EP claims, run alone on CANN with its real inputs from the graph."""
    model, feeds = make_model(variant, "inputs")
    _, runs, _ = run_on_cann(model, feeds, tmp_path)
    claimed = {r.node for r in runs if r.provider == CANN and not r.op_type.startswith("Memcpy")}
    nodes = {n.name: n for n in model.graph.node}
    assert claimed <= set(nodes), claimed - set(nodes)  # the EP claims nodes as exported
    assert len(claimed) == sum(CLAIMED[variant].values())
    values = intermediate_values(model, feeds)
    for i, name in enumerate(sorted(claimed)):
        node = nodes[name]
        single = single_node_model(model, node, values)
        node_feeds = {k: values[k] for k in node.input}
        (tmp_path / str(i)).mkdir()
        node_out, node_runs, _ = run_on_cann(single, node_feeds, tmp_path / str(i))
        (got,) = node_out.values()
        assert [(r.op_type, r.provider) for r in node_runs if not r.op_type.startswith("Memcpy")] == [
            (node.op_type, CANN)], name
        (want,) = cpu_session(single).run(None, node_feeds)
        if node.op_type in BIT_EXACT_OPS:
            assert_bits_equal(name, got, want)
        else:
            assert node.op_type == "MatMul", name
            assert_bits_equal(name, got, batch_matmul_k_order(*(values[k] for k in node.input)))
            assert_close(name, got, want)
