"""BatchNormGrad's CANN kernel on the simulated Ascend910B1: CANN's BatchNormGradV3 (training form,
one launch for every dtype; x viewed as NCHW [N, C, L, 1]; the A2/A3 kernel reads the variance and
adds epsilon itself), bit for bit the CPU kernel (both sum from 0 in increasing order in float32 in
the A2/A3 kernel's order and round once) for ranks 2 to 5, [C] and [1, C, 1, ...] statistics and
several epsilons; optional outputs left out (dscale named "" in the middle: written to scratch); an
x without elements launches nothing and gives zero parameter gradients; on the Ascend 950 (whose
kernel reads 1 / sqrt(var + eps)) Adds, Sqrt and Reciprocal come first and the result is within
float32 tolerance of the CPU kernel; the session from three threads with the simulator's stream
delay equals its serial runs; on the Ascend910 (Atlas training series), which has no
BatchNormGradV3 (its op_host def), the session fails at creation naming the SoC and the op."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper
from session_runs import assert_bits, cpu, launched_by
from threaded_runs import run_child_with_stream_delay

from ort_ops import DOMAIN, OPSET_VERSION, dtypes, ort_io, tolerances
from ort_ops.domain import ONNX_OPSET

cann_ep = pytest.importorskip("ort_ops.cann_ep")
pytestmark = pytest.mark.usefixtures("cann_simulator")
DTYPES = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
NAMES = ("dy", "x", "mean", "var", "scale")
ALL = ("dx", "dscale", "dbias")


def model(dtype, shapes, epsilon=1e-5, outputs=ALL):
    elem = dtypes.onnx_type_of(dtype)
    types = [elem, elem, TensorProto.FLOAT, TensorProto.FLOAT, elem]
    node = helper.make_node("BatchNormGrad", list(NAMES), list(outputs), domain=DOMAIN, epsilon=epsilon)
    graph = helper.make_graph([node], "batch_norm_grad",
                              [helper.make_tensor_value_info(n, t, s) for n, t, s in zip(NAMES, types, shapes)],
                              [helper.make_tensor_value_info(n, elem, None) for n in outputs if n])
    return helper.make_model(graph, ir_version=8, opset_imports=[helper.make_opsetid("", ONNX_OPSET),
                                                                  helper.make_opsetid(DOMAIN, OPSET_VERSION)])


def feeds(shape, dtype, seed=29, column=False):
    """x, its float32 batch mean and biased variance per channel (axis 1), dy, scale."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0.3, 2.0, shape).astype(np.float32).astype(DTYPES[dtype])
    x64 = x.astype(np.float64)
    axes = tuple(i for i in range(len(shape)) if i != 1)
    mean = x64.mean(axis=axes, keepdims=column)
    var = ((x64 - x64.mean(axis=axes, keepdims=True)) ** 2).mean(axis=axes, keepdims=column)
    dy = rng.normal(0.0, 1.0, shape).astype(np.float32).astype(DTYPES[dtype])
    scale = rng.normal(1.0, 0.5, shape[1]).astype(np.float32).astype(DTYPES[dtype])
    return dict(zip(NAMES, (dy, x, mean.astype(np.float32), var.astype(np.float32), scale)))


def shapes_of(f):
    return [list(f[n].shape) for n in NAMES]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, epsilon, column", [((8, 4), 1e-5, False), ((8, 4), 0.1, True),
                                                    ((4, 3, 7), 1e-5, False), ((4, 3, 5, 5), 1e-3, True),
                                                    ((2, 3, 2, 3, 4), 0.0, False), ((6, 1, 3, 3), 1e-5, False)])
def test_cann_kernel_is_the_cpu_kernel_bit_for_bit(dtype, shape, epsilon, column):
    f = feeds(shape, dtype, column=column)
    m = model(dtype, shapes_of(f), epsilon)
    session = cann_ep.session(m)
    assert [e.where for e in session.placement.nodes] == ["ortops"], session.placement.summary()
    got, launched = launched_by(session, f)
    assert launched == {"BatchNormGradV3": 1}, launched
    want = cpu(m, f)
    assert_bits(got, want)
    from ort_ops.ops.batch_norm_grad import batch_norm_grad

    for g, r in zip(got, batch_norm_grad(*(f[n] for n in NAMES), epsilon)):  # and the op's definition
        assert tolerances.check(g, r).ok, tolerances.check(g, r).message


@pytest.mark.parametrize("outputs", [("dx",), ("dx", "", "dbias"), ("dx", "dscale")])
def test_optional_outputs_left_out(outputs):
    f = feeds((6, 3, 4), "float32")
    want = dict(zip(ALL, cpu(model("float32", shapes_of(f)), f)))
    got, launched = launched_by(cann_ep.session(model("float32", shapes_of(f), outputs=outputs)), f)
    assert launched == {"BatchNormGradV3": 1}, launched
    assert_bits(got, [want[n] for n in outputs if n])


def test_no_elements():
    x, stats, scale = np.zeros((0, 4), np.float32), np.zeros(4, np.float32), np.ones(4, np.float32)
    f = dict(zip(NAMES, (x, x, stats, stats, scale)))
    got, launched = launched_by(cann_ep.session(model("float32", shapes_of(f))), f)
    assert launched == {} and got[0].shape == (0, 4)
    np.testing.assert_array_equal(got[1], np.zeros(4, np.float32))
    np.testing.assert_array_equal(got[2], np.zeros(4, np.float32))
    x = np.zeros((3, 0, 2), np.float32)
    f = dict(zip(NAMES, (x, x, np.zeros(0, np.float32), np.ones(0, np.float32), np.zeros(0, np.float32))))
    got, launched = launched_by(cann_ep.session(model("float32", shapes_of(f))), f)
    assert launched == {} and [g.shape for g in got] == [(3, 0, 2), (0,), (0,)]


def test_bad_shapes_name_the_input():
    f = feeds((2, 3), "float32")
    f["var"] = f["var"].reshape(3, 1)
    session = cann_ep.session(model("float32", [["a", "b"]] * 2 + [["c"], ["c", "d"], ["c"]]))
    with pytest.raises(Exception, match=r"var shape \[3, 1\] is neither \[3\] nor \[1, 3\]"):
        ort_io.run(session, f)


THREADS_CHILD = r"""
import json
import numpy as np
from ort_ops import cann_ep
from test_batch_norm_grad_on_cann import feeds, model, shapes_of
from threaded_runs import threads_against_serial

cann_ep.use_simulator()
result = {}
for outputs in (("dx", "dscale", "dbias"), ("dx", "", "dbias")):
    sets = [feeds((16, 8, 6), "float16", seed) for seed in range(3)]
    session = cann_ep.session(model("float16", shapes_of(sets[0]), outputs=outputs))
    result["/".join(outputs)] = threads_against_serial(session, sets, 3, 2)
print("RESULT=" + json.dumps(result))
"""


def test_threads_with_stream_delay_equal_serial_runs():
    results = run_child_with_stream_delay(THREADS_CHILD)
    assert len(results) == 2
    for key, r in results.items():
        assert r["runs"] == 18 and r["bad"] == 0 and not r["errors"] and r["distinct"] == 3, (key, r)


SOC_CHILD = """
import json
import numpy as np
from ort_ops import cann_ep
from test_batch_norm_grad_on_cann import cpu, feeds, launched_by, model, shapes_of
cann_ep.use_simulator()
try:
    f = feeds((4, 3, 5), "float32")
    m = model("float32", shapes_of(f), 1e-3)
    got, launched = launched_by(cann_ep.session(m), f)
    want = cpu(m, f)
    print("@@" + json.dumps({"error": None, "launched": launched,
                             "diff": [float(np.abs(g - w).max()) for g, w in zip(got, want)],
                             "scale": [float(np.abs(w).max()) for w in want]}))
except Exception as exc:
    print("@@" + json.dumps({"error": str(exc)}))
"""


def _on_soc(soc):
    from threaded_runs import HERE

    from acl_ctypes import sim_env

    env = sim_env(ACLSIM_SOC_NAME=soc)
    env["PYTHONPATH"] = f"{HERE}:{HERE.parents[1]}:{env.get('PYTHONPATH', '')}"
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(SOC_CHILD)], capture_output=True, text=True,
                          timeout=300, env=env, cwd=HERE)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("@@")][-1][2:])


def test_session_fails_on_a_soc_without_batch_norm_grad_v3():
    error = _on_soc("Ascend910A")["error"]
    assert error and "BatchNormGradV3 is not available on Ascend910A" in error, error


def test_ascend950_makes_rstd_first():
    result = _on_soc("Ascend950PR")
    assert result["error"] is None, result["error"]
    assert result["launched"] == {"Adds": 1, "Sqrt": 1, "Reciprocal": 1, "BatchNormGradV3": 1}, result["launched"]
    tol = tolerances.tolerance_of("float32")
    for diff, scale in zip(result["diff"], result["scale"]):
        assert diff <= tol.atol + tol.rtol * scale, (diff, scale)
