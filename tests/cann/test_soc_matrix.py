"""The SoC support matrix (CANN's operator READMEs: EluGrad is not registered for Atlas 200I/500
A2, the Ascend 310B) on the simulated 910B, 310P and 310B: the kernels pick an exact route the SoC
has, or fail at session creation naming the SoC and the op; the placement pass leaves what the SoC
lacks on the CPU, naming it. Each SoC runs in its own process (ACLSIM_SOC_NAME is read at aclInit).

The one table (ort_ops/cann_soc_table.json) is checked against what the simulated device does and
what the library's compiled table answers, for every op type anything launches; the EluGrad
routes below, and tests/cann/test_sim_soc.py's MISSING, are written from the READMEs themselves,
so a wrong entry in the table fails there.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from acl_ctypes import run_child, sim_env
from ort_ops import cann_soc

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


# One SoC name of each family, and one CANN does not know (every op available).
SOCS = ["Ascend950PR", "Ascend910_9391", "Ascend910B1", "Ascend310B1", "Ascend310P3", "Ascend910A", "Ascend999X"]
# Names that exercise the exact names and the prefixes of the SoC map.
MORE_NAMES = ["Ascend910", "Ascend910B", "Ascend910ProB", "Ascend910PremiumA", "Ascend910B4", "Ascend910_9372",
              "Ascend310P1", "Ascend310B4", "Ascend950DT", "ascend910b1", ""]


def _op_types() -> list[str]:
    """Every CANN op type the table lists, the CANN EP's kernels launch or a placed kernel launches,
    and one nobody has."""
    from ort_ops.rewrite.placement.ep_launches import LAUNCHES

    ops = set(cann_soc.table()["ops"]) | {o for launched in LAUNCHES.values() for o in launched}
    ops |= {o for routes in cann_soc.placed_routes().values() for launched in routes.values() for o in launched}
    return sorted(ops | {"NoSuchOpAnywhere"})


DEVICE_CHILD = """
from ort_ops.library import cann_op_unavailable
acl.init()
soc = acl.lib.aclrtGetSocName().decode()
x = np.array([1.0, -2.0], np.float32)
result = {}
for op in OPS:
    rc, msg, _ = acl.op(op, [x], [(ACL_FLOAT, [2])])
    refused = rc == ACL_ERROR_OP_NOT_FOUND and "is not available on SoC" in (msg or "")
    result[op] = {"refused": msg if refused else None, "library": cann_op_unavailable(soc, op)}
"""


@pytest.mark.parametrize("soc", SOCS)
def test_the_table_is_what_the_simulated_device_and_the_library_do(soc):
    """ort_ops/cann_soc_table.json (read by placement) against what the simulator does when the op
    is launched on that SoC (its compiled table and aclopCompileAndExecute's check) and against the
    library's compiled table (OrtOpsCannOpUnavailable, which the kernels' RequireOps use), for every
    op type anything launches; the refusal cites the README row the table names."""
    ops = _op_types()
    result, _ = run_child(f"OPS = {ops!r}\n" + DEVICE_CHILD, ACLSIM_SOC_NAME=soc)
    family = cann_soc.soc_family(soc)
    assert (family is None) == (soc == "Ascend999X")
    for op in ops:
        want = cann_soc.unavailable(soc, op)
        got = result[op]
        assert got["library"] == want, (soc, op, got)
        if want is None:
            assert got["refused"] is None, (soc, op, got)
        else:
            product = next(f["product"] for f in cann_soc.table()["families"] if f["name"] == family)
            assert got["refused"] == (f"[aclsim] error 100024: op type {op} is not available on SoC {soc} ({family}): "
                                      f"{cann_soc.source_line(op, family)} marks \"{product}\" as not supported"), got
    assert any(result[op]["refused"] for op in ops) == (family is not None), result  # every family lacks some


def test_the_library_maps_soc_names_as_the_table():
    from ort_ops.library import cann_op_unavailable

    probes = ["GatherElements", "Exp", "Sqrt", "EluGrad", "MaxPoolWithArgmaxV1"]  # one missing on each family
    assert {f for op in probes for f in cann_soc.families() if f not in cann_soc.available_on(op)} == \
        set(cann_soc.families())
    for soc in SOCS + MORE_NAMES:
        for op in probes:
            assert cann_op_unavailable(soc, op) == cann_soc.unavailable(soc, op), (soc, op)
