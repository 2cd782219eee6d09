"""The CANN EluGrad kernel and cann_ep sessions under concurrency and over many sessions: one
session run from several threads (each run on its own ACL stream) stays bit-exact, with and
without the simulator's stream delay; destroyed sessions give back all device memory; the
alpha != 1 path copies nothing host-to-device; bad device ids raise; options registered twice
work. Concurrency and leak checks run in fresh processes (the simulator reads its environment
at aclInit and its counters are process-wide)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import ort_ops
from ort_ops import ort_io
from ort_ops.model_builder import make_elu_grad_model
from ort_ops.reference import elu_grad

cann_ep = pytest.importorskip("ort_ops.cann_ep")
HERE = Path(__file__).resolve().parent


pytestmark = pytest.mark.usefixtures("cann_simulator")


def run_child(body: str, timeout: float = 300, **env) -> tuple[dict, subprocess.CompletedProcess]:
    """Runs `body` in a fresh interpreter (cann_ep, np, json imported; the simulator loaded); the
    body sets `result` (JSON). Returns (result, the process)."""
    code = textwrap.dedent("""
        import gc, json, sys, threading
        import numpy as np
        import ort_ops
        from ort_ops import cann_ep
        from ort_ops.cann_ep import sim
        from ort_ops import ort_io
        from ort_ops.model_builder import make_elu_grad_model
        from ort_ops.reference import elu_grad
        cann_ep.use_simulator()
        result = None
    """) + textwrap.dedent(body) + "\nprint('RESULT=' + json.dumps(result))\n"
    full_env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parents[1]), os.environ.get("PYTHONPATH", "")]))
    full_env.update({k: str(v) for k, v in env.items()})
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, env=full_env)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT=")]
    if not lines:
        raise AssertionError(f"child failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT="):]), proc


CONCURRENT = """
    dtype, alpha, threads, runs, shared = {dtype!r}, {alpha!r}, {threads}, {runs}, {shared}
    shape = (64, 999)
    npd = ort_ops.dtypes.numpy_dtype(dtype)
    model = make_elu_grad_model(dtype, shape, alpha)
    one = cann_ep.session(model) if shared else None
    bad, total, errors = [0], [0], []
    def work(t):
        sess = one if shared else cann_ep.session(model)
        rng = np.random.default_rng(t)
        try:
            for _ in range(runs):
                g = rng.uniform(-2, 2, shape).astype(np.float32).astype(npd)
                a = rng.uniform(-2, 2, shape).astype(np.float32).astype(npd)
                (y,) = ort_io.run(sess, {{"grads": g, "activations": a}})
                e = elu_grad(g, a, alpha)
                total[0] += 1
                bad[0] += not np.array_equal(y.view(np.uint8), e.view(np.uint8))
        except Exception as exc:
            errors.append(repr(exc))
    ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    del one
    gc.collect()
    result = {{"bad": bad[0], "total": total[0], "errors": errors, "live": sim.stat("live_allocations"),
               "errors_stat": sim.stat("errors")}}
"""


@pytest.mark.parametrize("policy", ["stream", "sync"])
@pytest.mark.parametrize("alpha", [0.5, 1.0])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_one_session_from_several_threads_is_exact(dtype, alpha, policy):
    env = {"ACLSIM_STREAM_DELAY_US": 200}
    if policy == "sync":
        env["ORTOPS_CANN_SCRATCH"] = "sync"
    result, _ = run_child(CONCURRENT.format(dtype=dtype, alpha=alpha, threads=4, runs=25, shared=True), **env)
    assert result["errors"] == [] and result["total"] == 100
    assert result["bad"] == 0, f"{result['bad']} of 100 runs differ from the reference"
    assert result["live"] == 0 and result["errors_stat"] == 0


def test_separate_sessions_in_threads_are_exact():
    result, _ = run_child(CONCURRENT.format(dtype="float16", alpha=2.0, threads=3, runs=15, shared=False),
                          ACLSIM_STREAM_DELAY_US=200)
    assert result == {"bad": 0, "total": 45, "errors": [], "live": 0, "errors_stat": 0}


def test_destroyed_sessions_give_back_all_device_memory():
    """Device memory is visible to the simulator after the sessions are gone (the CANN EP never
    calls aclFinalize): 21 sessions, each after a run of every path, leave no live allocation."""
    result, proc = run_child("""
        counts = []
        for i in range(21):
            alpha = (0.5, 1.0, 3.0)[i % 3]
            dtype = ("float32", "float16", "bfloat16")[i % 3]
            npd = ort_ops.dtypes.numpy_dtype(dtype)
            sess = cann_ep.session(make_elu_grad_model(dtype, (1000, 1000), alpha))
            g = np.ones((1000, 1000), npd)
            ort_io.run(sess, {"grads": g, "activations": -g})
            del sess
            gc.collect()
            counts.append(sim.stat("live_allocations"))
        result = {"counts": counts, "bytes": sim.stat("live_bytes"), "peak": sim.stat("peak_bytes")}
    """, ACLSIM_LEAK_REPORT="fail")
    assert result["counts"] == [0] * 21 and result["bytes"] == 0
    assert result["peak"] > 20_000_000  # the runs did use device memory (1M elements, scratch)
    assert proc.returncode == 0 and "leak report" not in proc.stderr


def test_the_simulator_reports_leaks_at_exit_when_asked():
    """The leak report the test above relies on does fire: a block never freed makes the
    process exit with status 66 and a message naming it."""
    result, proc = run_child("""
        import ctypes
        lib = sim.load()
        lib.aclInit(None)
        p = ctypes.c_void_p()
        lib.aclrtMalloc(ctypes.byref(p), 1234, 0)
        result = {"live": sim.stat("live_allocations")}
    """, ACLSIM_LEAK_REPORT="fail")
    assert result == {"live": 1}
    assert proc.returncode == 66
    assert "leak report at exit: 1 allocation(s), 1234 bytes never freed" in proc.stderr


def test_alpha_path_keeps_no_host_memory_per_run():
    """glibc's allocated-bytes counter after 3000 runs: the kernel used to leak the allocator
    object it got from ORT (about 110 bytes per run, 330 KB here)."""
    result, _ = run_child("""
        import ctypes
        class MallInfo2(ctypes.Structure):
            _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                        "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = MallInfo2
        sess = cann_ep.session(make_elu_grad_model("float32", (64,), 0.5))
        g = np.ones(64, np.float32)
        feeds = {"grads": g, "activations": -g}
        for _ in range(500):
            sess.run(None, feeds)
        before = libc.mallinfo2().uordblks
        for _ in range(3000):
            sess.run(None, feeds)
        result = {"growth": libc.mallinfo2().uordblks - before}
    """)
    assert result["growth"] < 60_000, f"{result['growth']} bytes more allocated after 3000 runs"


def test_scalars_need_no_host_to_device_copy():
    """With inputs and output on the device (IOBinding), an EluGrad run copies nothing between
    host and device: alpha != 1 passes 0 and alpha as constant tensors (aclSetTensorConst)."""
    result, _ = run_child("""
        import onnxruntime as ort
        out = {}
        for alpha in (0.5, 1.0):
            sess = cann_ep.session(make_elu_grad_model("float32", (8, 33), alpha))
            rng = np.random.default_rng(0)
            g, a = (rng.uniform(-2, 2, (8, 33)).astype(np.float32) for _ in range(2))
            dg, da = (ort.OrtValue.ortvalue_from_numpy(x, "cann", 0) for x in (g, a))
            dy = ort.OrtValue.ortvalue_from_numpy(np.zeros((8, 33), np.float32), "cann", 0)
            b = sess.io_binding()
            b.bind_ortvalue_input("grads", dg)
            b.bind_ortvalue_input("activations", da)
            b.bind_ortvalue_output("y", dy)
            sess.run_with_iobinding(b)  # warm-up
            counts = {k: sim.stat(k) for k in ("copies_h2d", "copies_d2h", "pageable_copies")}
            sess.run_with_iobinding(b)
            out[str(alpha)] = {k: sim.stat(k) - v for k, v in counts.items()}
            out[str(alpha)]["exact"] = bool(np.array_equal(dy.numpy(), elu_grad(g, a, alpha)))
        result = out
    """)
    for alpha in ("0.5", "1.0"):
        assert result[alpha] == {"copies_h2d": 0, "copies_d2h": 0, "pageable_copies": 0, "exact": True}, alpha


@pytest.mark.parametrize("device_id", [7, -1, 1])
def test_device_id_out_of_range_raises(device_id):
    with pytest.raises(ValueError, match=rf"device_id {device_id} does not exist: the ACL runtime reports 1 NPU"):
        cann_ep.session(make_elu_grad_model("float32", (2,)), device_id=device_id)
    with pytest.raises(ValueError, match=rf"device_id {device_id} does not exist"):
        cann_ep.session(make_elu_grad_model("float32", (2,)), provider_options={"device_id": device_id})


@pytest.mark.parametrize("device_id", ["abc", 1.5, True, None])
def test_device_id_of_the_wrong_type_raises(device_id):
    with pytest.raises((TypeError, ValueError), match="device_id"):
        cann_ep.session(make_elu_grad_model("float32", (2,)), device_id=device_id)


def test_second_device_exists_when_the_runtime_has_two():
    result, _ = run_child("""
        s = cann_ep.session(make_elu_grad_model("float32", (2,)), device_id=1)
        try:
            cann_ep.session(make_elu_grad_model("float32", (2,)), device_id=2)
            raised = None
        except ValueError as e:
            raised = str(e)
        result = {"providers": s.get_providers(), "raised": raised}
    """, ACLSIM_DEVICE_COUNT=2)
    assert result["providers"][0] == "CANNExecutionProvider"
    assert "device_id 2 does not exist: the ACL runtime reports 2 NPU(s) (device ids 0 to 1)" in result["raised"]


def test_registered_options_can_be_passed_to_cann_sessions():
    import onnxruntime as ort

    so = ort_ops.register(ort_ops.register(ort.SessionOptions()))
    model = make_elu_grad_model("float32", (4, 2), 0.5)
    g = np.full((4, 2), 2.0, np.float32)
    a = np.array([[-1, 2]] * 4, np.float32)
    for _ in range(2):  # the same options for two sessions
        sess = cann_ep.session(model, session_options=so)
        assert sess.get_providers()[0] == "CANNExecutionProvider"
        np.testing.assert_array_equal(ort_io.run(sess, {"grads": g, "activations": a})[0], elu_grad(g, a, 0.5))
