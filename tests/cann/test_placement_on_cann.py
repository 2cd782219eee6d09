"""Placed graphs on the CANN EP (the ACL simulator without an NPU): the ELU MLP and CNN training
and inference graphs run on CANNExecutionProvider node for node (profile-checked), give the CPU
EP's results within the fp32 tolerance, and move only the inputs in and the outputs out. What
cannot be placed is named in the report, and the graph still runs."""

from __future__ import annotations

import collections
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper

import ort_ops
from models.fixture_graphs import batch, load, training_case
from ort_ops import tolerances

cann_ep = pytest.importorskip("ort_ops.cann_ep")
rewrite = pytest.importorskip("ort_ops.rewrite")
PROVIDER, CPU = "CANNExecutionProvider", "CPUExecutionProvider"
ASCEND950 = "Ascend950PR"


@pytest.fixture(scope="module", autouse=True)
def cann_runtime():
    if PROVIDER not in ort.get_available_providers():
        pytest.skip(f"onnxruntime {ort.__version__} here has no {PROVIDER} (run in .venv-cann)")
    if not cann_ep.available():
        pytest.skip("no ACL runtime (neither CANN nor the built simulator)")
    cann_ep.use_simulator()


def cpu_run(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), ort_ops.register(ort.SessionOptions()), providers=[CPU])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))


def cann_run(model, feeds, tmp_path, runs=2):
    """Outputs, node runs and per-run counters (after one warm-up run) of a placed CANN session."""
    from ort_ops.cann_ep import sim

    session = cann_ep.session(model, profile_prefix=str(tmp_path / "p"))
    names = [o.name for o in session.get_outputs()]
    session.run(None, feeds)
    counters = ("copies_h2d", "copies_d2h")
    before, ops_before = {k: sim.stat(k) for k in counters}, sim.op_counts()
    for _ in range(runs):
        out = session.run(None, feeds)
    per_run = {k: (sim.stat(k) - before[k]) / runs for k in counters}
    ops = {k: v - ops_before.get(k, 0) for k, v in sim.op_counts().items() if v != ops_before.get(k, 0)}
    return dict(zip(names, out)), cann_ep.node_runs(session), per_run, ops, session.placement


def assert_close_to_cpu(got, want):
    for name, w in want.items():
        check = tolerances.check(got[name], w)
        assert check.ok, f"{name}: {check.message}"


def assert_all_on_cann(runs, report):
    off = [(r.node, r.op_type) for r in runs if r.provider != PROVIDER]
    assert not off, f"not on CANN: {off}\n{report.summary()}"


@pytest.mark.parametrize("model_name", ["mlp", "cnn"])
def test_inference_graph_runs_fully_on_cann(model_name, tmp_path):
    model = load(f"{model_name}_elu_fp32_infer")
    x, _ = batch(model)
    got, runs, per_run, ops, report = cann_run(model, {"input": x}, tmp_path)
    assert_all_on_cann(runs, report)
    assert not [r for r in runs if r.op_type.startswith("Memcpy")], runs  # only the input in, the output out
    assert per_run == {"copies_h2d": 1, "copies_d2h": 1}, per_run
    assert "BroadcastToD" not in ops
    assert_close_to_cpu(got, cpu_run(model, {"input": x}))


def training_feeds(name):
    model, params, (x, y) = training_case(name)
    y[1] = -100  # cross_entropy's ignore_index: the masked branches run too
    return model, {"input": x, "target": y, **params}


@pytest.mark.parametrize("name", ["mlp_elu_fp32", "cnn_elu_fp32"])
def test_training_graph_on_910b_names_what_stays_on_the_cpu(name, tmp_path):
    """On Ascend 910B, CANN has no GatherElements/ScatterElements (Ascend 950 only): the exporter's
    cross-entropy and MaxPool-backward nodes that use them stay on the CPU, named in the report;
    everything else runs on CANN and the results match."""
    model, feeds = training_feeds(name)
    model = rewrite.fuse_elu_grad(model)
    got, runs, _, _, report = cann_run(model, feeds, tmp_path)
    on_cpu = {r.op_type for r in runs if r.provider == CPU}
    reasons = {n.op_type: n.reason for n in report.on_cpu}
    assert on_cpu <= {"GatherElements", "ScatterElements", "MaxPool"}, (on_cpu, report.summary())
    assert set(reasons) == on_cpu, report.summary()
    for op in on_cpu - {"MaxPool"}:
        assert "not available on Ascend910B1" in reasons[op]
    assert_close_to_cpu(got, cpu_run(model, feeds))


@pytest.mark.parametrize("name", ["mlp_elu_fp32", "cnn_elu_fp32"])
def test_training_graph_on_ascend950(name, tmp_path):
    if os.environ.get("ACLSIM_SOC_NAME") != ASCEND950:
        pytest.skip("runs in the child of test_ascend950_in_a_child (ACLSIM_SOC_NAME=Ascend950PR)")
    model, feeds = training_feeds(name)
    model = rewrite.fuse_elu_grad(model)
    got, runs, per_run, ops, report = cann_run(model, feeds, tmp_path)
    if name == "mlp_elu_fp32":  # (the CNN's exporter MaxPool keeps its indices output: see rewrite.fuse_training)
        assert_all_on_cann(runs, report)
        assert "BroadcastToD" not in ops
        n_outputs = len(model.graph.output)
        assert per_run["copies_d2h"] == n_outputs and per_run["copies_h2d"] == len(feeds), per_run
    assert_close_to_cpu(got, cpu_run(model, feeds))


def test_ascend950_in_a_child(tmp_path):
    env = {**os.environ, "ACLSIM_SOC_NAME": ASCEND950}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k",
                           "test_training_graph_on_ascend950", "--basetemp", str(tmp_path / "child")],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0 and "2 passed" in proc.stdout, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_unplaceable_nodes_are_named_and_the_graph_still_runs(tmp_path):
    nodes = [helper.make_node("Exp", ["x"], ["e"], name="exp"),
             helper.make_node("Hardmax", ["e"], ["h"], name="hardmax", axis=1),
             helper.make_node("Mul", ["h", "s"], ["y"], name="mul")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TP.FLOAT, [3, 4]),
                                           helper.make_tensor_value_info("s", TP.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TP.FLOAT, [3, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = ort_ops.domain.IR_VERSION
    feeds = {"x": np.arange(12, dtype=np.float32).reshape(3, 4) / 7, "s": np.float32([[1, 2, 3, 4]])}
    got, runs, _, _, report = cann_run(model, feeds, tmp_path)
    where = {n.node: (n.where, n.reason) for n in report.nodes}
    assert where["hardmax"][0] == "cpu" and "no CANN kernel" in where["hardmax"][1]
    assert where["exp"][0] == where["mul"][0] == "placed"
    providers = collections.Counter((r.node, r.provider) for r in runs if not r.op_type.startswith("Memcpy"))
    assert providers == {("exp", PROVIDER): 1, ("hardmax", CPU): 1, ("mul", PROVIDER): 1}
    assert_close_to_cpu(got, cpu_run(model, feeds))


def test_place_false_runs_the_graph_as_it_is(tmp_path):
    model = load("mlp_elu_fp32_infer")
    session = cann_ep.session(model, place=False, profile_prefix=str(tmp_path / "p"))
    x, _ = batch(model)
    session.run(None, {"input": x})
    assert session.placement is None
    assert {r.provider for r in cann_ep.node_runs(session) if r.op_type == "Gemm"} == {CPU}


def test_placement_report_fills_the_callers_report(tmp_path):
    from ort_ops.rewrite.placement import PlacementReport

    report = PlacementReport()
    session = cann_ep.session(load("cnn_elu_fp32_infer"), placement_report=report)
    assert session.placement is report and report.soc == "Ascend910B1"
    assert report.counts().get("cpu", 0) == 0, report.summary()
    onnx.checker.check_model(load("cnn_elu_fp32_infer"))
