"""MaxPoolGrad on the CANN EP (the ACL simulator without an NPU): one CANN MaxPoolGrad per node,
bit for bit the CPU EP (float32/float16/bfloat16, VALID and TensorFlow-SAME pads, overlapping and
asymmetric windows, ties), run on CANNExecutionProvider (ORT's profile), no copy or
synchronisation of its own; the run-time error for pads CANN cannot express; where CANN's kernel
and the CPU kernel differ (windows holding two NaNs); the SoC check; empty tensors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from ort_ops import dtypes, ort_io
from ort_ops.model_builder import make_op_model
from ort_ops.ops import op
from ort_ops.ops.max_pool_grad import max_pool

cann_ep = pytest.importorskip("ort_ops.cann_ep")

from op_helpers import make_session  # noqa: E402

CANN = "CANNExecutionProvider"
OP = op("MaxPoolGrad")
# (kernel, strides, pads, H, W, CANN padding mode)
GEOMETRIES = [
    ([2, 2], [2, 2], [0, 0, 0, 0], 8, 8, "VALID"),
    ([3, 3], [1, 1], [0, 0, 0, 0], 7, 9, "VALID"),
    ([3, 3], [2, 2], [1, 1, 1, 1], 7, 9, "SAME"),
    ([2, 3], [1, 2], [0, 1, 1, 1], 7, 9, "SAME"),
    ([3, 3], [1, 1], [1, 1, 1, 1], 6, 6, "SAME"),
]


pytestmark = pytest.mark.usefixtures("cann_simulator")


def inputs(dtype, kernel, strides, pads, h, w, seed=0, ties=True):
    rng = np.random.default_rng(seed)
    x = (rng.integers(-2, 3, (2, 3, h, w)) if ties else rng.normal(0, 1, (2, 3, h, w))).astype(np.float32)
    x = x.astype(dtypes.numpy_dtype(dtype))
    y = max_pool(x, kernel, strides, pads)
    dy = rng.normal(0, 1, y.shape).astype(np.float32).astype(dtypes.numpy_dtype(dtype))
    return {"X": x, "Y": y, "dY": dy}


def model_for(dtype, feeds, **attrs):
    return make_op_model(OP, dtype, None, input_shapes=[list(a.shape) for a in feeds.values()],
                         output_shapes=[list(feeds["X"].shape)], **attrs)


def bits(a):
    return np.ascontiguousarray(a).view(np.uint8)


def sim_counters():
    import ort_ops.cann_ep.sim as sim

    return sim.op_counts(), {k: sim.stat(k) for k in ("copies_h2d", "copies_d2h", "copies_d2d", "stream_syncs")}


def diff(before, after):
    ops = {k: v - before[0].get(k, 0) for k, v in after[0].items() if v != before[0].get(k, 0)}
    return ops, {k: after[1][k] - before[1][k] for k in after[1]}


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("kernel, strides, pads, h, w, mode", GEOMETRIES)
@pytest.mark.parametrize("ties", [True, False])
def test_equals_the_cpu_ep_bit_for_bit(dtype, kernel, strides, pads, h, w, mode, ties, tmp_path):
    feeds = inputs(dtype, kernel, strides, pads, h, w, ties=ties)
    model = model_for(dtype, feeds, kernel_shape=kernel, strides=strides, pads=pads)
    session = cann_ep.session(model, profile_prefix=str(tmp_path / "p"))
    (got,) = ort_io.run(session, feeds)
    (want,) = ort_io.run(make_session(model), feeds)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(bits(got), bits(want))
    assert {(r.op_type, r.provider) for r in cann_ep.node_runs(session) if r.op_type == "MaxPoolGrad"} == {
        ("MaxPoolGrad", CANN)}


@pytest.mark.parametrize("kernel, strides, pads, h, w, mode", GEOMETRIES[:3])
def test_sends_one_cann_max_pool_grad_and_no_copy_or_sync_of_its_own(kernel, strides, pads, h, w, mode):
    feeds = inputs("float32", kernel, strides, pads, h, w)
    session = cann_ep.session(model_for("float32", feeds, kernel_shape=kernel, strides=strides, pads=pads))
    ort_io.run(session, feeds)  # warm-up: allocations, first-run work
    before = sim_counters()
    for _ in range(3):
        ort_io.run(session, feeds)
    ops, counts = diff(before, sim_counters())
    assert ops == {"MaxPoolGrad": 3}
    # per run: the three inputs in, dX out, ORT's own end-of-run synchronisation (as for EluGrad)
    assert counts == {"copies_h2d": 9, "copies_d2h": 3, "copies_d2d": 0, "stream_syncs": 3}


def test_pads_cann_cannot_express_fail_the_run_naming_them():
    feeds = inputs("float32", [2, 3], [1, 2], [1, 0, 0, 2], 7, 9)
    session = cann_ep.session(model_for("float32", feeds, kernel_shape=[2, 3], strides=[1, 2], pads=[1, 0, 0, 2]))
    with pytest.raises(Exception, match=r"pads \[1, 0, 0, 2\] for X \[2, 3, 7, 9\] are neither 0 \(VALID\) nor "
                                        r"TensorFlow's SAME pads for this shape \[0, 1, 1, 1\]"):
        ort_io.run(session, feeds)


@pytest.mark.parametrize("name, value", [("dilations", [2, 2]), ("ceil_mode", 1), ("kernel_shpae", [3, 3])])
def test_an_attribute_it_does_not_define_fails_session_creation_naming_it(name, value):
    """Issue 19: CANN put the gradient on another element (the CPU kernel dropped it)."""
    feeds = inputs("float32", [2, 2], [2, 2], [0, 0, 0, 0], 4, 4)
    model = model_for("float32", feeds, kernel_shape=[2, 2], strides=[2, 2])
    model.graph.node[0].name = "pool_grad"
    model.graph.node[0].attribute.append(onnx.helper.make_attribute(name, value))
    with pytest.raises(Exception, match=rf"node 'pool_grad' has attribute {name}, which MaxPoolGrad does not define"):
        cann_ep.session(model)


@pytest.mark.parametrize("x_shape, kernel, strides", [([1, 1, 1, 3], [2, 2], [2, 2]), ([1, 1, 3, 2], [3, 3], [1, 3])])
def test_x_smaller_than_the_window_fails_like_the_cpu_ep(x_shape, kernel, strides):
    y_shape = x_shape[:2] + [1, 1]
    feeds = {"X": np.zeros(x_shape, np.float32), "Y": np.zeros(y_shape, np.float32),
             "dY": np.ones(y_shape, np.float32)}
    model = make_op_model("MaxPoolGrad", "float32", None, input_shapes=[x_shape, y_shape, y_shape],
                          output_shapes=[x_shape], kernel_shape=kernel, strides=strides)
    for session in (cann_ep.session(model), make_session(model)):
        with pytest.raises(Exception, match=r"is smaller than the window"):
            ort_io.run(session, feeds)


def test_a_window_with_two_nans_is_where_cann_and_the_cpu_kernel_differ():
    """docs/ops/MaxPoolGrad.md: CANN's kernel finds the maximum again in X (a NaN replaces the
    running maximum: the window's last NaN wins), the CPU kernel takes the first element equal
    to Y (the first NaN when Y is NaN). Windows without NaN: identical."""
    x = np.arange(2 * 4 * 4, dtype=np.float32).reshape(1, 2, 4, 4)
    x[0, 0, 0, 0] = x[0, 0, 1, 1] = np.nan  # two NaNs in the first window of plane 0
    y = max_pool(x, [2, 2], [2, 2])
    y[0, 0, 0, 0] = np.nan  # the forward's max of that window (ORT: its first element)
    feeds = {"X": x, "Y": y, "dY": np.ones((1, 2, 2, 2), np.float32)}
    model = model_for("float32", feeds, kernel_shape=[2, 2], strides=[2, 2])
    (got,) = ort_io.run(cann_ep.session(model), feeds)
    (want,) = ort_io.run(make_session(model), feeds)
    assert want[0, 0, 0, 0] == 1 and want[0, 0, 1, 1] == 0  # CPU: the first NaN
    assert got[0, 0, 0, 0] == 0 and got[0, 0, 1, 1] == 1  # CANN: the last NaN
    window = np.zeros_like(want, bool)
    window[0, 0, :2, :2] = True
    assert np.array_equal(bits(got[~window]), bits(want[~window]))


def test_empty_batch_launches_nothing():
    feeds = {"X": np.zeros((0, 3, 4, 4), np.float32), "Y": np.zeros((0, 3, 2, 2), np.float32),
             "dY": np.zeros((0, 3, 2, 2), np.float32)}
    session = cann_ep.session(model_for("float32", feeds, kernel_shape=[2, 2], strides=[2, 2]))
    before = sim_counters()
    (dx,) = ort_io.run(session, feeds)
    assert dx.shape == (0, 3, 4, 4) and "MaxPoolGrad" not in diff(before, sim_counters())[0]


_SOC_CHILD = """
from ort_ops import cann_ep
cann_ep.use_simulator()
from ort_ops.model_builder import make_op_model
try:
    cann_ep.session(make_op_model("MaxPoolGrad", "float32", None))
    print("OK")
except Exception as exc:
    print("FAILED", str(exc).replace(chr(10), " "))
"""


@pytest.mark.parametrize("soc", ["Ascend310B1", "Ascend910B1", "Ascend950PR"])
def test_session_creation_checks_the_soc(soc):
    """No README marks MaxPoolGrad unavailable on any product (docs/ops/MaxPoolGrad.md): the check
    passes everywhere, and it runs (kernel creation reads the SoC)."""
    here = Path(__file__).resolve().parent
    env = dict(os.environ, ACLSIM_SOC_NAME=soc,
               PYTHONPATH=os.pathsep.join([str(here.parents[1]), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", _SOC_CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "OK", proc.stdout
