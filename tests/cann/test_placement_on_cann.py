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


pytestmark = pytest.mark.usefixtures("cann_simulator")


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
    cross-entropy and MaxPool-backward nodes that use them take GatherElementsV2 / ScatterElementsV2;
    only the CNN's exporter MaxPool (its indices output used) stays on the CPU, named in the report;
    the results match."""
    model, feeds = training_feeds(name)
    model = rewrite.fuse_elu_grad(model)
    got, runs, _, ops, report = cann_run(model, feeds, tmp_path)
    on_cpu = {r.op_type for r in runs if r.provider == CPU}
    reasons = {n.op_type: n.reason for n in report.on_cpu}
    assert on_cpu <= {"MaxPool"}, (on_cpu, report.summary())
    assert set(reasons) == on_cpu, report.summary()
    placed = {n.op_type: n.cann_ops for n in report.placed}
    assert placed["GatherElements"] == ("ClipByValueV2", "Cast", "GatherElementsV2"), report.summary()
    assert {"GatherElementsV2", "ScatterElementsV2"} & set(ops), ops
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


# --- Broadcasting arithmetic on CANN vs the CPU EP (issue 19, item 1) ----------------------------

from ort_ops import ort_io  # noqa: E402
from ort_ops.dtypes import TYPES  # noqa: E402
from ort_ops.rewrite.placement import PlacementError  # noqa: E402
from ort_ops.rewrite.placement.cann_ep_kernels import KERNELS as EP_KERNELS  # noqa: E402

# Every dtype the CANN EP's Add/Sub/Mul/Div kernels take (opset 14+), and bfloat16.
ARITH_CASES = [(op, t) for op in ("Add", "Sub", "Mul", "Div")
               for t in [*next(ts for first, _, ts in EP_KERNELS[op] if first == 14), "bfloat16"]]
A_SHAPE, B_SHAPE = (4, 1), (1, 3)


def operands(op, dtype):
    """a [4, 1], b [1, 3]: no zero divisor, no overflow of int8/uint8."""
    np_type = TYPES[dtype][0]
    a = np.array([[7], [-9], [12], [-1]], np.float64)
    b = np.array([[3, -2, 5]], np.float64)
    if np.issubdtype(np_type, np.unsignedinteger):
        a, b = np.abs(a), np.abs(b)
    if np.issubdtype(np_type, np.floating) or dtype == "bfloat16":
        a, b = a / 4, b / 8  # fractions: Div's quotients are not integers
    return a.astype(np_type), b.astype(np_type)


def numpy_reference(op, a, b):
    """bfloat16 (no CPU-EP kernel): computed in float32, rounded once (CANN's and the simulator's
    documented rule); integer Div truncates (ONNX)."""
    if a.dtype == TYPES["bfloat16"][0]:
        fn = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}[op]
        return fn(a.astype(np.float32), b.astype(np.float32)).astype(a.dtype)
    raise AssertionError("only bfloat16 lacks a CPU-EP kernel")


def arith_model(op, elem, where, symbolic):
    a_shape = ["n", 1] if symbolic else list(A_SHAPE)
    b_shape = [1, "m"] if symbolic else list(B_SHAPE)
    y_shape = ["n", "m"] if symbolic else [A_SHAPE[0], B_SHAPE[1]]
    vi = helper.make_tensor_value_info
    inputs = [vi("a", elem, a_shape), vi("b", elem, b_shape)]
    if where == "top":
        nodes, outputs = [helper.make_node(op, ["a", "b"], ["y"], name="arith")], [vi("y", elem, y_shape)]
    elif where == "if":
        def branch(name, first, second):
            return helper.make_graph([helper.make_node(op, [first, second], [f"{name}_y"], name=f"{name}_arith")],
                                     name, [], [vi(f"{name}_y", elem, y_shape)])
        # then: a op b; else: the same op (both branches are placed; the feed takes then)
        nodes = [helper.make_node("If", ["c"], ["y"], name="if", then_branch=branch("then", "a", "b"),
                                  else_branch=branch("else", "a", "b"))]
        inputs.append(vi("c", TP.BOOL, []))
        outputs = [vi("y", elem, y_shape)]
    else:
        body = helper.make_graph(
            [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="cond"),
             helper.make_node(op, ["a", "b"], ["y"], name="body_arith")], "body",
            [vi("i", TP.INT64, []), vi("cond_in", TP.BOOL, [])], [vi("cond_out", TP.BOOL, []), vi("y", elem, y_shape)])
        nodes = [helper.make_node("Loop", ["trips", ""], ["y"], name="loop", body=body)]
        inputs.append(vi("trips", TP.INT64, []))
        outputs = [vi("y", elem, ["trips_n", *y_shape])]
    model = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs),
                              opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = ort_ops.domain.IR_VERSION
    onnx.checker.check_model(model, full_check=True)
    return model


@pytest.mark.parametrize("symbolic", [False, True], ids=["static", "symbolic"])
@pytest.mark.parametrize("where", ["top", "if", "loop"])
@pytest.mark.parametrize("op,dtype", ARITH_CASES, ids=[f"{op}-{t}" for op, t in ARITH_CASES])
def test_broadcasting_arithmetic_matches_the_cpu_ep(op, dtype, where, symbolic, tmp_path):
    """[4, 1] op [1, 3], both inputs broadcast: placed (CANN's op broadcasts) at the top level and in
    If/Loop bodies, never the EP's kernel (which gives B op B); bit-identical to the CPU EP (one IEEE
    op per element; integer Div truncates), bfloat16 to NumPy's float32-then-round."""
    elem = TYPES[dtype][1]
    model = arith_model(op, elem, where, symbolic)
    a, b = operands(op, dtype)
    feeds = {"a": a, "b": b, **({"c": np.array(True)} if where == "if" else {}),
             **({"trips": np.array(2, np.int64)} if where == "loop" else {})}
    session = cann_ep.session(model, profile_prefix=str(tmp_path / "p"))
    (got,) = ort_io.run(session, feeds)
    if dtype == "bfloat16":
        want = numpy_reference(op, a, b)
        want = np.stack([want, want]) if where == "loop" else want
    else:
        (want,) = ort.InferenceSession(model.SerializeToString(), providers=[CPU]).run(None, feeds)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    label = {"top": "arith", "if": "if/then_branch/then_arith", "loop": "loop/body/body_arith"}[where]
    node = next(n for n in session.placement.nodes if n.node == label)
    assert node.where == "placed" and not session.placement.errors, session.placement.summary()
    runs = {r.node: r.provider for r in cann_ep.node_runs(session)}
    assert runs[label.rsplit("/", 1)[-1]] == PROVIDER, runs


@pytest.mark.parametrize("op,b_op_b", [("Sub", 0.0), ("Div", 1.0), ("Add", None), ("Mul", None)])
def test_the_eps_own_kernel_computes_b_op_b_when_both_inputs_broadcast(op, b_op_b):
    """The upstream defect that decides the routing: with place=False the CANN EP's own kernel
    runs [4, 1] op [1, 3] and gives broadcast(b) op broadcast(b) (its scratch buffer for A is freed
    before B's is allocated, and B's broadcast overwrites it; docs/cann_ops.md "Upstream defects")."""
    model = arith_model(op, TP.FLOAT, "top", False)
    a, b = operands(op, "float32")
    session = cann_ep.session(model, place=False)
    (got,) = session.run(None, {"a": a, "b": b})
    bb = np.broadcast_to(b, (4, 3))
    want = {"Add": bb + bb, "Sub": bb - bb, "Mul": bb * bb, "Div": bb / bb}[op]
    np.testing.assert_array_equal(got, want)
    if b_op_b is not None:
        assert np.all(got == b_op_b)
    (cpu,) = ort.InferenceSession(model.SerializeToString(), providers=[CPU]).run(None, {"a": a, "b": b})
    assert not np.array_equal(got, cpu)


def test_integer_div_by_zero_on_the_device_does_not_fault():
    """ONNX and the CPU EP leave integer division by zero undefined (the CPU EP traps); CANN's
    TruncateDiv gives -1 for int32 (arch35 kernel), never a device fault."""
    model = arith_model("Div", TP.INT32, "top", False)
    a = np.array([[7], [-9], [0], [5]], np.int32)
    b = np.array([[0, 2, -3]], np.int32)
    (got,) = cann_ep.session(model).run(None, {"a": a, "b": b})
    want = np.array([[-1, 3, -2], [-1, -4, 3], [-1, 0, 0], [-1, 2, -1]], np.int32)
    np.testing.assert_array_equal(got, want)


# --- A node whose EP kernel the SoC cannot run fails the session at creation (issue 19, item 7) ---

SOC_CHILD = "Ascend310P3"


def test_sqrt_on_310p_fails_at_session_creation():
    if os.environ.get("ACLSIM_SOC_NAME") != SOC_CHILD:
        pytest.skip("runs in the child of test_310p_in_a_child (ACLSIM_SOC_NAME=Ascend310P3)")
    vi = helper.make_tensor_value_info
    model = helper.make_model(helper.make_graph([helper.make_node("Sqrt", ["x"], ["y"], name="the_sqrt")], "g",
                                                [vi("x", TP.FLOAT, [3])], [vi("y", TP.FLOAT, [3])]),
                              opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = ort_ops.domain.IR_VERSION
    with pytest.raises(PlacementError) as err:
        cann_ep.session(model)
    message = str(err.value)
    assert "Ascend310P3" in message and "'the_sqrt'" in message and "CANN op Sqrt" in message, message
    # Without placement the EP's kernel is created and the first run fails, naming neither.
    session = cann_ep.session(model, place=False)
    with pytest.raises(Exception, match="OP_NOT_FOUND|not available|Sqrt"):
        session.run(None, {"x": np.ones(3, np.float32)})


def test_adam_trainer_on_310p_fails_at_creation():
    if os.environ.get("ACLSIM_SOC_NAME") != SOC_CHILD:
        pytest.skip("runs in the child of test_310p_in_a_child (ACLSIM_SOC_NAME=Ascend310P3)")
    from ort_ops.training.trainer import Adam, Trainer

    model, params, _ = training_case("mlp_elu_fp32")
    model = rewrite.fuse_training(model)
    with pytest.raises(PlacementError, match=r"(?s)Ascend310P3.*Sqrt node .*CANN op Sqrt"):
        Trainer(model, params, Adam(lr=1e-3), session_factory=lambda m: cann_ep.session(m), device="cann")


def test_310p_in_a_child(tmp_path):
    env = {**os.environ, "ACLSIM_SOC_NAME": SOC_CHILD}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k",
                           "on_310p", "--basetemp", str(tmp_path / "child")],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0 and "2 passed" in proc.stdout, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_library_soc_table_matches_the_simulator_for_the_eps_launched_ops():
    """For every CANN op a CANN EP kernel launches (rewrite/placement/ep_launches.py) and the
    placed arithmetic's, the library's SoC table (what placement checks) says what the simulated
    device does, on every SoC family."""
    import json
    import textwrap

    from acl_ctypes import sim_env
    from ort_ops.rewrite.placement.ep_launches import LAUNCHES

    ops = sorted({op for launched in LAUNCHES.values() for op in launched} | {"RealDiv", "TruncateDiv"})
    code = textwrap.dedent(f"""
        import ctypes, json
        from ort_ops import cann_ep
        from ort_ops.library import cann_op_unavailable
        cann_ep.use_simulator()
        soc = cann_ep.runtime.soc_name()
        lib = ctypes.CDLL("libascendcl.so")
        lib.aclsimOpAvailable.argtypes = [ctypes.c_char_p]
        print("@@" + json.dumps({{op: [bool(lib.aclsimOpAvailable(op.encode())), cann_op_unavailable(soc, op) is None]
                                  for op in {ops!r}}}))
    """)
    for soc in ("Ascend910B1", "Ascend310P3", "Ascend310B1", "Ascend910A", "Ascend950PR", "Ascend910_9391"):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                              env=sim_env(ACLSIM_SOC_NAME=soc))
        assert proc.returncode == 0, proc.stderr[-2000:]
        table = json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("@@")][-1][2:])
        differ = {op: v for op, v in table.items() if v[0] != v[1]}
        assert not differ, f"{soc}: simulator vs library table (available?) {differ}"
