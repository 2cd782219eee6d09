"""MseLossAndGrad's CANN kernel on the simulated SoCs: CANN's MseLoss + MseLossGrad in float32
(2 launches; float16/bfloat16: 3 Casts in and 2 out), both outputs bit for bit the CPU EP's (the
simulator adds the loss's squares in the CPU kernel's element order; the gradient's order is
CANN's dag on every device) for both reductions, dloss 1 and not 1; on the Ascend 310B, which has
neither op (ops-nn READMEs), the session fails at creation naming the SoC and the op. Each SoC runs
in its own process (ACLSIM_SOC_NAME is read at aclInit)."""

from __future__ import annotations

import pytest

from acl_ctypes import run_script_on

pytestmark = pytest.mark.usefixtures("sim_dir")

CHILD = """
import json
import numpy as np
import onnxruntime as ort
from ort_ops import cann_ep, ort_io
from ort_ops.cann_ep import sim
from ort_ops.dtypes import numpy_dtype
from ort_ops.library import get_library_path
from ort_ops.model_builder import make_op_model
cann_ep.use_simulator()
result = {"soc": cann_ep.runtime.soc_name(), "cases": {}}
rng = np.random.default_rng(3)
options = ort.SessionOptions()
options.register_custom_ops_library(get_library_path())
for reduction in ("mean", "sum"):
    for dtype in ("float32", "float16", "bfloat16"):
        for dloss in (1.0, 0.75):
            key = f"{reduction}/{dtype}/{dloss}"
            model = make_op_model("MseLossAndGrad", dtype, None, reduction=reduction)
            try:
                session = cann_ep.session(model)
            except Exception as exc:
                result["cases"][key] = {"error": str(exc).splitlines()[0]}
                continue
            cpu = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
            t = numpy_dtype(dtype)
            feeds = {"prediction": rng.normal(0, 3, (5, 3, 4)).astype(np.float32).astype(t),
                     "target": rng.normal(0, 3, (5, 3, 4)).astype(np.float32).astype(t),
                     "dloss": np.array(dloss, t)}
            before = sim.op_counts()
            got = ort_io.run(session, feeds)
            ops = {k: v - before.get(k, 0) for k, v in sim.op_counts().items() if v != before.get(k, 0)}
            want = ort_io.run(cpu, feeds)
            view = np.uint16 if got[1].itemsize == 2 else np.uint32
            exact = [bool(np.array_equal(np.asarray(g).view(view), np.asarray(w).view(view)))
                     for g, w in zip(got, want)]
            result["cases"][key] = {"ops": ops, "exact": exact}
print("@@" + json.dumps(result))
"""


def run_on(soc: str) -> dict:
    return run_script_on(soc, CHILD)


@pytest.mark.parametrize("soc", ["Ascend910B1", "Ascend310P3"])
def test_mse_loss_and_grad_matches_the_cpu_ep_bit_for_bit(soc):
    result = run_on(soc)
    assert result["soc"] == soc and len(result["cases"]) == 12
    for key, case in result["cases"].items():
        casts = {} if "/float32/" in key else {"Cast": 5}
        assert case == {"ops": {"MseLoss": 1, "MseLossGrad": 1, **casts}, "exact": [True, True]}, key


def test_mse_loss_and_grad_fails_at_session_creation_on_310b():
    cases = run_on("Ascend310B1")["cases"]
    assert len(cases) == 12
    for key, case in cases.items():
        assert "MseLoss is not available on Ascend310B1" in case.get("error", ""), (key, case)
