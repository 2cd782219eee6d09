"""ACLSIM_LEAK_REPORT and its baseline: onnxruntime's Python binding keeps a 1 MiB arena block for
OrtValues on "cann" for the life of the process; ``cann_ep.sim.mark_leak_baseline()``
(``aclsimMarkLeakBaseline``) marks it so the exit report does not call it a leak, while device
memory allocated later and never freed still fails the process (status 66)."""

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


def run_script(body: str) -> subprocess.CompletedProcess:
    code = textwrap.dedent("""
        import ctypes
        import numpy as np
        import cann_ep
        cann_ep.use_simulator()
        import onnxruntime as ort
        from cann_ep import sim
    """) + textwrap.dedent(body)
    env = dict(os.environ, PYTHONPATH=str(REPO), ACLSIM_LEAK_REPORT="fail", ORT_DISABLE_TELEMETRY="1")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)


def test_the_bindings_ortvalue_block_is_reported_without_a_baseline():
    """The problem: one OrtValue on "cann" leaves a 1 MiB block the binding never frees."""
    proc = run_script("""
        v = ort.OrtValue.ortvalue_from_numpy(np.ones(4, np.float32), "cann", 0)
        del v
    """)
    assert proc.returncode == LEAK_EXIT, proc.stderr
    assert "1 allocation(s), 1048576 bytes never freed" in proc.stderr


def test_an_ortvalue_on_cann_exits_0_after_the_baseline():
    proc = run_script("""
        v = ort.OrtValue.ortvalue_from_numpy(np.arange(4, dtype=np.float32), "cann", 0)
        assert sim.mark_leak_baseline() == 1
        w = ort.OrtValue.ortvalue_from_numpy(np.ones(1000, np.float32), "cann", 0)  # same arena
        assert (w.numpy() == 1).all() and (v.numpy() == np.arange(4)).all()
        del v, w
    """)
    assert proc.returncode == 0, proc.stderr
    assert "baseline (not counted): 1 allocation(s), 1048576 bytes" in proc.stderr
    assert proc.stderr.count("never freed") == 1, proc.stderr  # the baseline note only


def test_a_real_leak_after_the_baseline_still_fails():
    proc = run_script("""
        assert sim.mark_leak_baseline() == 1  # warms the binding's arena first
        lib = sim.load()
        lib.aclrtMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_int]
        p = ctypes.c_void_p()
        assert lib.aclrtMalloc(ctypes.byref(p), 1234, 0) == 0
    """)
    assert proc.returncode == LEAK_EXIT, proc.stderr
    assert "leak report at exit: 1 allocation(s), 1234 bytes never freed" in proc.stderr
    assert "baseline (not counted): 1 allocation(s), 1048576 bytes" in proc.stderr


def test_sessions_after_the_baseline_leave_nothing():
    """A session's device memory is given back when it goes; with the baseline the report is clean."""
    proc = run_script("""
        import gc
        from onnx import TensorProto, helper
        from ort_ops.domain import IR_VERSION
        sim.mark_leak_baseline()
        graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = IR_VERSION
        sess = cann_ep.session(model)
        y = sess.run(None, {"x": -np.ones(64, np.float32)})[0]
        assert (y == 0).all()
        del sess
        gc.collect()
    """)
    assert proc.returncode == 0, proc.stderr
    assert "never freed" in proc.stderr and "baseline (not counted)" in proc.stderr
    assert proc.stderr.count("never freed") == 1, proc.stderr
