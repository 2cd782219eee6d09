"""The real, unmodified onnxruntime-cann provider running on the ACL simulator.

Each test runs in a child process: the provider calls aclInit once per process and the
simulator's environment variables are read at aclInit.
"""

import json
import subprocess
import sys

import numpy as np
import pytest

from acl_ctypes import sim_env

pytestmark = pytest.mark.usefixtures("sim_dir")

CHILD = r'''
import json, os, sys
import numpy as np
import ort_ops.cann_ep.sim as sim
sim.load()
import onnxruntime as ort
from onnx import TensorProto, helper

def run(nodes, inputs, outputs, feeds, opset=13, optimize=True, mode="0", runs=1, between=None):
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)
    so = ort.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(os.environ["PROFILE_DIR"], "prof")
    if not optimize:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=[
        ("CANNExecutionProvider", {"enable_cann_graph": mode, "dump_om_model": "0"}), "CPUExecutionProvider"])
    results = []
    for i in range(runs):
        if between:
            between(i)
        try:
            results.append({"ok": [o.tolist() for o in sess.run(None, feeds)]})
        except Exception as e:
            results.append({"error": str(e)})
    prof = json.load(open(sess.end_profiling()))
    placed = {e["args"]["op_name"] + ":" + e["name"].rsplit("_kernel_time", 1)[0]: e["args"]["provider"]
              for e in prof if e.get("cat") == "Node" and "provider" in e.get("args", {})}
    return {"results": results, "placed": placed, "ops_executed": sim.stat("ops_executed")}

T = TensorProto
vi = helper.make_tensor_value_info
'''


def run_child(body: str, tmp_path, **env) -> dict:
    code = CHILD + body + "\nprint('@@RESULT@@' + json.dumps(result))\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env=sim_env(PROFILE_DIR=tmp_path, **env), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("@@RESULT@@")][-1]
    return json.loads(line[len("@@RESULT@@"):])


MIXED_GRAPH = '''
rng = np.random.default_rng(0)
feeds = {"x": rng.standard_normal((2, 3)).astype(np.float32), "w": rng.integers(-3, 4, (3, 4)).astype(np.float32),
         "b": rng.standard_normal((4,)).astype(np.float32), "c": (rng.random((2, 4)) + 1).astype(np.float32)}
nodes = [
    helper.make_node("Relu", ["x"], ["r"], name="relu"),
    helper.make_node("MatMul", ["r", "w"], ["m"], name="matmul"),
    helper.make_node("Add", ["m", "b"], ["a"], name="add"),          # b broadcast: BroadcastToD
    helper.make_node("Mul", ["a", "a"], ["sq"], name="mul"),
    helper.make_node("Sub", ["sq", "c"], ["s"], name="sub"),
    helper.make_node("Div", ["s", "c"], ["d"], name="div"),
    helper.make_node("Cast", ["d"], ["h"], to=T.FLOAT16, name="cast16"),
    helper.make_node("Neg", ["h"], ["n"], name="neg"),
    helper.make_node("Exp", ["n"], ["e"], name="exp"),
    helper.make_node("Cast", ["e"], ["y"], to=T.FLOAT, name="cast32"),
]
ins = [vi("x", T.FLOAT, [2, 3]), vi("w", T.FLOAT, [3, 4]), vi("b", T.FLOAT, [4]), vi("c", T.FLOAT, [2, 4])]
result = run(nodes, ins, [vi("y", T.FLOAT, [2, 4])], feeds, optimize=False)
result["feeds"] = {k: v.tolist() for k, v in feeds.items()}
'''


def mixed_reference(f):
    x, w, b, c = (np.array(f[k], np.float32) for k in ("x", "w", "b", "c"))
    a = np.maximum(x, 0) @ w + b
    d = (a * a - c) / c
    e = np.exp(-(d.astype(np.float16)))
    return e.astype(np.float32)


@pytest.mark.parametrize("delay", [0, 5000], ids=["no-delay", "stream-delay"])
def test_mixed_graph_runs_on_the_cann_ep_and_matches_numpy(tmp_path, delay):
    result = run_child(MIXED_GRAPH, tmp_path, ACLSIM_STREAM_DELAY_US=delay)
    (run,) = result["results"]
    assert "ok" in run, run
    y = np.array(run["ok"][0], np.float32)
    np.testing.assert_allclose(y, mixed_reference(result["feeds"]), rtol=2e-3, atol=1e-6)
    placed = result["placed"]
    for node, op in [("relu", "Relu"), ("matmul", "MatMul"), ("add", "Add"), ("mul", "Mul"), ("sub", "Sub"),
                     ("div", "Div"), ("cast16", "Cast"), ("neg", "Neg"), ("exp", "Exp"), ("cast32", "Cast")]:
        assert placed.get(f"{op}:{node}") == "CANNExecutionProvider", (node, sorted(placed.items()))
    assert result["ops_executed"] == 11  # 10 nodes + BroadcastToD for the Add


def test_mixed_graph_trace_shows_the_cann_op_types(tmp_path):
    trace = tmp_path / "trace.log"
    run_child(MIXED_GRAPH, tmp_path, ACLSIM_TRACE=trace)
    sent = [ln.split("opType=")[1].split(",")[0] for ln in trace.read_text().splitlines() if "opType=" in ln]
    assert sent == ["Relu", "BatchMatMul", "BroadcastToD", "Add", "Mul", "Sub", "Div", "Cast", "Neg", "Exp", "Cast"]


def test_injected_failure_surfaces_and_the_session_stays_usable(tmp_path):
    result = run_child('''
x = np.array([[-1.0, 2.0, -3.0]], np.float32)
def arm(i):
    if i == 0:
        os.environ["ACLSIM_FAIL_NEXT_OP"] = "Relu"
result = run([helper.make_node("Relu", ["x"], ["y"])], [vi("x", T.FLOAT, [1, 3])], [vi("y", T.FLOAT, [1, 3])],
             {"x": x}, runs=2, between=arm)
''', tmp_path)
    first, second = result["results"]
    assert "aclopCompileAndExecute(\"Relu\"" in first["error"]
    assert second == {"ok": [[[0.0, 2.0, 0.0]]]}


def test_graph_mode_fails_with_a_clear_error(tmp_path):
    proc_result = run_child('''
x = np.ones((1, 3), np.float32)
result = run([helper.make_node("Relu", ["x"], ["y"])], [vi("x", T.FLOAT, [1, 3])], [vi("y", T.FLOAT, [1, 3])],
             {"x": x}, mode="1")
''', tmp_path)
    (run,) = proc_result["results"]
    assert "aclgrphParseONNXFromMem" in run["error"]


def test_two_sided_broadcast_add_reproduces_the_ort_1_24_scratch_buffer_bug(tmp_path):
    """ORT 1.24's CANN BinaryElementwise::Prepare frees each broadcast scratch buffer at the end
    of its `if` block, before the kernel runs; when both operands need broadcasting the arena
    hands the same block to the second one, so Add(a, b) computes b' + b'. The simulator shows it
    (it would happen on an NPU too). One-sided broadcasting is unaffected (see the mixed graph)."""
    result = run_child('''
feeds = {"a": np.array([[1.0], [2.0], [3.0]], np.float32), "b": np.array([[10.0, 20.0, 30.0, 40.0]], np.float32)}
result = run([helper.make_node("Add", ["a", "b"], ["y"])], [vi("a", T.FLOAT, [3, 1]), vi("b", T.FLOAT, [1, 4])],
             [vi("y", T.FLOAT, [3, 4])], feeds)
''', tmp_path)
    y = np.array(result["results"][0]["ok"][0], np.float32)
    b = np.array([[10.0, 20.0, 30.0, 40.0]], np.float32)
    assert not np.array_equal(y, np.array([[1.0], [2.0], [3.0]], np.float32) + b)
    np.testing.assert_array_equal(y, np.broadcast_to(b + b, (3, 4)))


def test_binary_op_broadcasting_both_inputs_reuses_scratch(tmp_path):
    """Known bug of the 1.24 provider, reproduced (docs/cann_ops.md): BinaryElementwise::Prepare
    frees the first input's BroadcastToD scratch buffer before launching the op, so when both
    inputs need broadcasting the second broadcast lands in the same memory and Mul computes
    b*b. If this starts failing, the provider was fixed: update the docs."""
    result = run_child('''
a = (np.arange(8, dtype=np.float32) + 1).reshape(8, 1)
b = (np.arange(10, dtype=np.float32) * 10 + 100).reshape(1, 10)
result = run([helper.make_node("Mul", ["a", "b"], ["y"], name="mul")],
             [vi("a", T.FLOAT, [8, 1]), vi("b", T.FLOAT, [1, 10])], [vi("y", T.FLOAT, [8, 10])],
             {"a": a, "b": b})
''', tmp_path)
    (run,) = result["results"]
    assert result["placed"]["Mul:mul"] == "CANNExecutionProvider"
    y = np.array(run["ok"][0], np.float32)
    b = (np.arange(10, dtype=np.float32) * 10 + 100).reshape(1, 10)
    assert np.array_equal(y, np.broadcast_to(b * b, (8, 10)))  # not a*b
