"""LayerNormGrad's CANN kernel on the simulated Ascend910B1: CANN's LayerNormGradV3 (one launch for
every dtype: the op_host def has the rows dy = gamma = pd_gamma = T, statistics float32), bit for
bit the CPU kernel (both sum from 0 in increasing order in float32 and round once) for several
axes; optional outputs left out (dscale named "" in the middle: written to scratch); rows of no
elements launch nothing, no rows give zero parameter gradients; the session from three threads
with the simulator's stream delay equals its serial runs; on the Ascend910 (Atlas training
series), which has no LayerNormGradV3 (ops-nn README), the session fails at creation naming the
SoC and the op."""

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

from ort_ops import DOMAIN, OPSET_VERSION, dtypes, ort_io
from ort_ops.domain import ONNX_OPSET

cann_ep = pytest.importorskip("ort_ops.cann_ep")
pytestmark = pytest.mark.usefixtures("cann_simulator")
DTYPES = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
NAMES = ("dy", "x", "mean", "inv_std_dev", "scale")
ALL = ("dx", "dscale", "dbias")


def model(dtype, shapes, axis, outputs=ALL):
    elem = dtypes.onnx_type_of(dtype)
    types = [elem, elem, TensorProto.FLOAT, TensorProto.FLOAT, elem]
    node = helper.make_node("LayerNormGrad", list(NAMES), list(outputs), domain=DOMAIN, axis=axis)
    graph = helper.make_graph([node], "layer_norm_grad",
                              [helper.make_tensor_value_info(n, t, s) for n, t, s in zip(NAMES, types, shapes)],
                              [helper.make_tensor_value_info(n, elem, None) for n in outputs if n])
    return helper.make_model(graph, ir_version=8, opset_imports=[helper.make_opsetid("", ONNX_OPSET),
                                                                  helper.make_opsetid(DOMAIN, OPSET_VERSION)])


def feeds(shape, axis, dtype, seed=29):
    """x, its float32 statistics over the dims from axis (as LayerNormalization gives them), dy, scale."""
    rng = np.random.default_rng(seed)
    a = axis % len(shape)
    x = rng.normal(0.3, 2.0, shape).astype(np.float32).astype(DTYPES[dtype])
    x64 = x.astype(np.float64)
    axes = tuple(range(a, len(shape)))
    mean = x64.mean(axis=axes, keepdims=True)
    rstd = 1.0 / np.sqrt(((x64 - mean) ** 2).mean(axis=axes, keepdims=True) + 1e-5)
    dy = rng.normal(0.0, 1.0, shape).astype(np.float32).astype(DTYPES[dtype])
    scale = rng.normal(1.0, 0.5, shape[a:]).astype(np.float32).astype(DTYPES[dtype])
    return dict(zip(NAMES, (dy, x, mean.astype(np.float32), rstd.astype(np.float32), scale)))


def shapes_of(f):
    return [list(f[n].shape) for n in NAMES]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, axis", [((4, 6, 9), -1), ((4, 6, 9), 1), ((3, 70), -1), ((5, 2, 3), 0)])
def test_cann_kernel_is_the_cpu_kernel_bit_for_bit(dtype, shape, axis):
    f = feeds(shape, axis, dtype)
    m = model(dtype, shapes_of(f), axis)
    session = cann_ep.session(m)
    assert [e.where for e in session.placement.nodes] == ["ortops"], session.placement.summary()
    got, launched = launched_by(session, f)
    assert launched == {"LayerNormGradV3": 1}, launched
    assert_bits(got, cpu(m, f))


@pytest.mark.parametrize("outputs", [("dx",), ("dx", "", "dbias"), ("dx", "dscale")])
def test_optional_outputs_left_out(outputs):
    f = feeds((6, 10), -1, "float32")
    want = dict(zip(ALL, cpu(model("float32", shapes_of(f), -1), f)))
    got, launched = launched_by(cann_ep.session(model("float32", shapes_of(f), -1, outputs)), f)
    assert launched == {"LayerNormGradV3": 1}, launched
    assert_bits(got, [want[n] for n in outputs if n])


def test_no_rows_and_empty_rows():
    x, stats, scale = np.zeros((0, 4), np.float32), np.zeros((0, 1), np.float32), np.ones(4, np.float32)
    f = dict(zip(NAMES, (x, x, stats, stats, scale)))
    got, launched = launched_by(cann_ep.session(model("float32", shapes_of(f), -1)), f)
    assert launched == {} and got[0].shape == (0, 4)
    np.testing.assert_array_equal(got[1], np.zeros(4, np.float32))
    np.testing.assert_array_equal(got[2], np.zeros(4, np.float32))
    x = np.zeros((3, 0), np.float32)
    f = dict(zip(NAMES, (x, x, np.zeros((3, 1), np.float32), np.ones((3, 1), np.float32), np.zeros(0, np.float32))))
    got, launched = launched_by(cann_ep.session(model("float32", shapes_of(f), -1)), f)
    assert launched == {} and [g.shape for g in got] == [(3, 0), (0,), (0,)]


def test_bad_shapes_name_the_input():
    f = feeds((2, 3), -1, "float32")
    f["mean"] = f["mean"].reshape(1, 2)
    session = cann_ep.session(model("float32", [["a", "b"]] * 4 + [["c"]], -1))
    with pytest.raises(Exception, match=r"mean shape \[1, 2\] is not \[2, 1\]"):
        ort_io.run(session, f)


THREADS_CHILD = r"""
import json
import numpy as np
from ort_ops import cann_ep
from test_layer_norm_grad_on_cann import feeds, model, shapes_of
from threaded_runs import threads_against_serial

cann_ep.use_simulator()
result = {}
for outputs in (("dx", "dscale", "dbias"), ("dx", "", "dbias")):
    sets = [feeds((16, 48), -1, "float16", seed) for seed in range(3)]
    session = cann_ep.session(model("float16", shapes_of(sets[0]), -1, outputs))
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
from ort_ops import cann_ep
from test_layer_norm_grad_on_cann import model
cann_ep.use_simulator()
try:
    cann_ep.session(model("float32", [[2, 3], [2, 3], [2, 1], [2, 1], [3]], -1))
    print("@@" + json.dumps({"error": None}))
except Exception as exc:
    print("@@" + json.dumps({"error": str(exc)}))
"""


def test_session_fails_on_a_soc_without_layer_norm_grad_v3():
    from threaded_runs import HERE

    from acl_ctypes import sim_env

    env = sim_env(ACLSIM_SOC_NAME="Ascend910A")
    env["PYTHONPATH"] = f"{HERE}:{HERE.parents[1]}:{env.get('PYTHONPATH', '')}"
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(SOC_CHILD)], capture_output=True, text=True,
                          timeout=300, env=env, cwd=HERE)
    assert proc.returncode == 0, proc.stderr[-3000:]
    error = json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("@@")][-1][2:])["error"]
    assert error and "LayerNormGradV3 is not available on Ascend910A" in error, error
