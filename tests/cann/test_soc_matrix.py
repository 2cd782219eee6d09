"""The SoC support matrix (CANN's operator READMEs: EluGrad is not registered for Atlas 200I/500
A2, the Ascend 310B) on the simulated 910B, 310P and 310B: the kernels pick an exact route the SoC
has, or fail at session creation naming the SoC and the op; the placement pass leaves what the SoC
lacks on the CPU, naming it. Each SoC runs in its own process (ACLSIM_SOC_NAME is read at aclInit).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from acl_ctypes import sim_env

pytestmark = pytest.mark.usefixtures("sim_dir")

CHILD = """
import json
import numpy as np
from ort_ops import cann_ep
from ort_ops.cann_ep import sim
from ort_ops import ort_io
from ort_ops.dtypes import numpy_dtype
from ort_ops.model_builder import make_elu_grad_model
from ort_ops.ops.elu_grad import elu_grad
cann_ep.use_simulator()
result = {"soc": cann_ep.runtime.soc_name(), "cases": {}}
rng = np.random.default_rng(3)
special = np.array([0.0, -0.0, -1.0, -0.5, 1.0, np.nan, np.inf, -np.inf, -1e-30, 3.0], np.float32)
for alpha in (1.0, 0.5, -0.5):
    for dtype in ("float32", "float16", "bfloat16"):
        key = f"{alpha}/{dtype}"
        try:
            session = cann_ep.session(make_elu_grad_model(dtype, (4, 33), alpha))
        except Exception as exc:
            result["cases"][key] = {"error": str(exc).splitlines()[0]}
            continue
        g = rng.uniform(-3, 3, (4, 33)).astype(np.float32)
        a = rng.uniform(-3, 3, (4, 33)).astype(np.float32)
        g.reshape(-1)[:10], a.reshape(-1)[10:20] = special, special
        g, a = g.astype(numpy_dtype(dtype)), a.astype(numpy_dtype(dtype))
        before = sim.op_counts()
        (y,) = ort_io.run(session, {"grads": g, "activations": a})
        ops = {k: v - before.get(k, 0) for k, v in sim.op_counts().items() if v != before.get(k, 0)}
        want = elu_grad(g, a, alpha)
        exact = bool(np.array_equal(y.view(np.uint16 if y.itemsize == 2 else np.uint32),
                                    want.view(np.uint16 if want.itemsize == 2 else np.uint32)))
        result["cases"][key] = {"ops": ops, "exact": exact}
print("@@" + json.dumps(result))
"""


def run_on(soc: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(CHILD)], capture_output=True, text=True,
                          timeout=300, env=sim_env(ACLSIM_SOC_NAME=soc))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("@@")][-1][2:])


SEQUENCE_F32 = {"Add": 1, "Mul": 1, "Less": 1, "Select": 1}
SEQUENCE_LOW = {"Add": 1, "Mul": 1, "Less": 1, "Select": 1, "Cast": 3}
V2 = {"EluGradV2": 1, "Greater": 1, "Select": 1}


@pytest.mark.parametrize("soc", ["Ascend910B1", "Ascend310P3"])
def test_elu_grad_routes_on_training_and_inference_socs(soc):
    result = run_on(soc)
    assert result["soc"] == soc
    cases = result["cases"]
    for dtype in ("float32", "float16", "bfloat16"):
        assert cases[f"1.0/{dtype}"] == {"ops": {"EluGrad": 1}, "exact": True}
        assert cases[f"0.5/{dtype}"] == {"ops": V2, "exact": True}  # alpha >= 0: EluGradV2, then g where a >= 0 or NaN
        negative = cases[f"-0.5/{dtype}"]
        if soc == "Ascend310P3":  # no Less there (ops-math README): no exact route for alpha < 0
            assert "the CANN op Less is not available on Ascend310P3" in negative["error"], negative
        else:
            assert negative == {"ops": SEQUENCE_F32 if dtype == "float32" else SEQUENCE_LOW, "exact": True}


def test_elu_grad_fails_at_session_creation_on_310b():
    cases = run_on("Ascend310B1")["cases"]
    for key, case in cases.items():
        assert "error" in case, (key, case)
        assert "not available on Ascend310B1" in case["error"] and "EluGrad on CANN" in case["error"], case


def test_toolkit_table_matches_the_simulated_devices():
    """The kernels' SoC table (ort_ops/csrc/cann/soc.cc) and the simulator's (which models the
    devices) agree for every CANN op the kernels launch."""
    ops = ["EluGrad", "EluGradV2", "Exp", "LogSoftmaxV2", "ReduceSum", "Select", "SelectV2", "Equal",
           "LessEqual", "Less", "LogicalNot", "GatherElements", "ScatterElements", "Conv2DBackpropInput",
           "MaxPoolV3", "MaxPoolGrad", "SoftmaxCrossEntropyWithLogits", "CrossEntropyLoss", "CrossEntropyLossGrad",
           "ApplyMomentum", "ApplyAdamW", "Muls",
           "Axpy", "Add", "Mul", "Sub", "RealDiv", "Sqrt", "Cast", "Transpose", "Slice", "MatMulV2", "Elu",
           "LeakyReluGrad"]
    code = textwrap.dedent(f"""
        import ctypes, json
        from ort_ops import cann_ep
        from ort_ops.library import cann_op_unavailable
        cann_ep.use_simulator()
        soc = cann_ep.runtime.soc_name()
        lib = ctypes.CDLL("libascendcl.so")
        lib.aclsimOpAvailable.argtypes = [ctypes.c_char_p]
        out = {{op: [bool(lib.aclsimOpAvailable(op.encode())), cann_op_unavailable(soc, op) is None]
               for op in {ops!r}}}
        print("@@" + json.dumps(out))
    """)
    for soc in ("Ascend910B1", "Ascend310P3", "Ascend310B1", "Ascend910A", "Ascend950PR"):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                              env=sim_env(ACLSIM_SOC_NAME=soc))
        assert proc.returncode == 0, proc.stderr[-2000:]
        table = json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("@@")][-1][2:])
        differ = {op: v for op, v in table.items() if v[0] != v[1]}
        assert not differ, f"{soc}: simulator vs kernels (available?) {differ}"
