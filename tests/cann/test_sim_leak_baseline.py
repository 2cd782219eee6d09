"""ACLSIM_LEAK_REPORT and its baseline.

onnxruntime's Python binding allocates OrtValues on "cann" from an arena it keeps until the process
ends (1 MiB from the first one on, growing with larger ones). ``cann_ep.use_simulator()`` runs the
OrtValue factories in a baseline scope (``aclsimLeakBaselineScope``), so the exit report names that
memory in a note and does not fail; device memory allocated elsewhere and never freed still fails
the process (status 66). ``cann_ep.sim.mark_leak_baseline()`` marks what is live now, for other
deliberate holders."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.usefixtures("sim_dir")
REPO = Path(__file__).resolve().parents[2]
LEAK_EXIT = 66
MIB = 1 << 20


def run_script(body: str, setup: str = "cann_ep.use_simulator()") -> subprocess.CompletedProcess:
    code = textwrap.dedent(f"""
        import ctypes
        import numpy as np
        from ort_ops import cann_ep
        from ort_ops.cann_ep import sim
        {setup}
        import onnxruntime as ort
        lib = sim.load()
        lib.aclrtMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_int]
    """) + textwrap.dedent(body)
    env = dict(os.environ, PYTHONPATH=str(REPO), ACLSIM_LEAK_REPORT="fail", ORT_DISABLE_TELEMETRY="1")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)


ORTVALUES = """
    small = ort.OrtValue.ortvalue_from_numpy(np.arange(4, dtype=np.float32), "cann", 0)
    big = ort.OrtValue.ortvalue_from_numpy(np.ones(1 << 20, np.float32), "cann", 0)  # 4 MiB: the arena grows
    larger = ort.OrtValue.ortvalue_from_numpy(np.zeros((3, 1 << 20), np.float32), "cann", 0)  # 12 MiB
    assert (small.numpy() == np.arange(4)).all() and (big.numpy() == 1).all()
    del small, big, larger
"""


def test_ortvalues_on_cann_exit_0_with_the_report_on():
    proc = run_script(textwrap.dedent("""
        cann_ep.use_simulator()  # again: the factories are wrapped once
        inner = ort.OrtValue.__dict__["ortvalue_from_numpy"].__func__.__wrapped__
        assert not getattr(inner, "_aclsim_baseline", False)
    """) + textwrap.dedent(ORTVALUES))
    assert proc.returncode == 0, proc.stderr
    assert "leak report at exit: baseline (not counted): 3 allocation(s)" in proc.stderr, proc.stderr
    assert proc.stderr.count("never freed") == 1, proc.stderr  # the baseline note only


def test_without_the_baseline_the_bindings_arena_is_reported():
    """What the baseline fixes: with the simulator loaded but the factories not wrapped, the
    binding's arena is reported as a leak and the process fails."""
    proc = run_script(ORTVALUES, setup="sim.load()")
    assert proc.returncode == LEAK_EXIT, proc.stderr
    assert f"3 allocation(s), {MIB + 4 * MIB + 16 * MIB} bytes never freed" in proc.stderr, proc.stderr


def test_a_real_leak_still_fails():
    proc = run_script(textwrap.dedent(ORTVALUES) + textwrap.dedent("""
        p = ctypes.c_void_p()
        assert lib.aclrtMalloc(ctypes.byref(p), 1234, 0) == 0
    """))
    assert proc.returncode == LEAK_EXIT, proc.stderr
    assert "leak report at exit: 1 allocation(s), 1234 bytes never freed" in proc.stderr, proc.stderr
    assert "baseline (not counted): 3 allocation(s)" in proc.stderr


def test_scopes_nest_and_end():
    proc = run_script("""
        assert lib.aclInit(None) == 0
        p, q, r = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
        with sim.leak_baseline():
            with sim.leak_baseline():
                assert lib.aclsimLeakBaselineScope(1) == 3 and lib.aclsimLeakBaselineScope(0) == 2
                assert lib.aclrtMalloc(ctypes.byref(p), 100, 0) == 0
            assert lib.aclrtMalloc(ctypes.byref(q), 200, 0) == 0
        assert lib.aclsimLeakBaselineScope(0) == 0  # unbalanced leave: stays at 0
        assert lib.aclrtMalloc(ctypes.byref(r), 300, 0) == 0  # outside: a leak
    """)
    assert proc.returncode == LEAK_EXIT, proc.stderr
    assert "baseline (not counted): 2 allocation(s), 300 bytes" in proc.stderr, proc.stderr
    assert "leak report at exit: 1 allocation(s), 300 bytes never freed" in proc.stderr, proc.stderr


def test_mark_leak_baseline_marks_what_is_live():
    proc = run_script("""
        assert lib.aclInit(None) == 0
        p, q = ctypes.c_void_p(), ctypes.c_void_p()
        assert lib.aclrtMalloc(ctypes.byref(p), 1000, 0) == 0
        assert sim.mark_leak_baseline() == 1 and sim.mark_leak_baseline() == 0
        assert lib.aclrtMalloc(ctypes.byref(q), 2000, 0) == 0
        assert lib.aclrtFree(q) == 0
    """)
    assert proc.returncode == 0, proc.stderr
    assert "baseline (not counted): 1 allocation(s), 1000 bytes" in proc.stderr, proc.stderr


def test_sessions_leave_nothing_and_stats_count_the_baseline():
    """A session's device memory goes with the session; the stats still count baseline blocks."""
    proc = run_script("""
        import gc
        from onnx import TensorProto, helper
        from ort_ops.domain import IR_VERSION
        v = ort.OrtValue.ortvalue_from_numpy(np.ones(4, np.float32), "cann", 0)
        live = sim.stat("live_allocations")
        graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = IR_VERSION
        sess = cann_ep.session(model)
        assert (sess.run(None, {"x": -np.ones(64, np.float32)})[0] == 0).all()
        del sess
        gc.collect()
        assert live == 1 and sim.stat("live_allocations") == 1, (live, sim.stat("live_allocations"))
    """)
    assert proc.returncode == 0, proc.stderr
    assert "baseline (not counted): 1 allocation(s), 1048576 bytes" in proc.stderr, proc.stderr
    assert proc.stderr.count("never freed") == 1, proc.stderr
