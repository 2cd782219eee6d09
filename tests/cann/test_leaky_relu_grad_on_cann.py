"""LeakyReluGrad's CANN kernel on the simulated SoCs: CANN's LeakyReluGrad in float32 (1 launch;
float16/bfloat16: Cast in, LeakyReluGrad, Cast out: 4 launches), bit for bit the reference on the
branch edges (+-0, NaN, inf features; NaN gradients) for several slopes; on the Ascend 310B, which
has no LeakyReluGrad (ops-nn README), the session fails at creation naming the SoC and the op.
Each SoC runs in its own process (ACLSIM_SOC_NAME is read at aclInit)."""

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
from ort_ops import cann_ep, ort_io
from ort_ops.cann_ep import sim
from ort_ops.dtypes import numpy_dtype
from ort_ops.model_builder import make_op_model
from ort_ops.ops.leaky_relu_grad import leaky_relu_grad
cann_ep.use_simulator()
result = {"soc": cann_ep.runtime.soc_name(), "cases": {}}
rng = np.random.default_rng(5)
special = np.array([0.0, -0.0, -1.0, 1e-30, 1.0, np.nan, np.inf, -np.inf, -1e-30, 3.0], np.float32)
for slope in (0.01, 0.0, 1.0, -0.5):
    for dtype in ("float32", "float16", "bfloat16"):
        key = f"{slope}/{dtype}"
        try:
            session = cann_ep.session(make_op_model("LeakyReluGrad", dtype, (4, 33), negative_slope=slope))
        except Exception as exc:
            result["cases"][key] = {"error": str(exc).splitlines()[0]}
            continue
        g = rng.uniform(-3, 3, (4, 33)).astype(np.float32)
        f = rng.uniform(-3, 3, (4, 33)).astype(np.float32)
        g.reshape(-1)[:10], f.reshape(-1)[10:20] = special, special
        g, f = g.astype(numpy_dtype(dtype)), f.astype(numpy_dtype(dtype))
        before = sim.op_counts()
        (y,) = ort_io.run(session, {"gradients": g, "features": f})
        ops = {k: v - before.get(k, 0) for k, v in sim.op_counts().items() if v != before.get(k, 0)}
        want = leaky_relu_grad(g, f, slope)
        view = np.uint16 if y.itemsize == 2 else np.uint32
        result["cases"][key] = {"ops": ops, "exact": bool(np.array_equal(y.view(view), want.view(view)))}
print("@@" + json.dumps(result))
"""


def run_on(soc: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(CHILD)], capture_output=True, text=True,
                          timeout=300, env=sim_env(ACLSIM_SOC_NAME=soc))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("@@")][-1][2:])


@pytest.mark.parametrize("soc", ["Ascend910B1", "Ascend310P3"])
def test_leaky_relu_grad_on_socs_that_have_it(soc):
    result = run_on(soc)
    assert result["soc"] == soc
    for key, case in result["cases"].items():
        low = not key.endswith("float32")
        assert case == {"ops": {"LeakyReluGrad": 1, "Cast": 3} if low else {"LeakyReluGrad": 1}, "exact": True}, key


def test_leaky_relu_grad_fails_at_session_creation_on_310b():
    cases = run_on("Ascend310B1")["cases"]
    assert len(cases) == 12
    for key, case in cases.items():
        assert "error" in case, (key, case)
        assert "LeakyReluGrad is not available on Ascend310B1" in case["error"], case
