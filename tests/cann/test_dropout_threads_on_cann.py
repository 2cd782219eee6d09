"""Training-mode Dropout placed on CANN, one session run from several threads with the simulator's
stream delay (``ACLSIM_STREAM_DELAY_US``): each run must draw its own mask (the kernel's atomic seed2
counter: no two runs share a stream) and its output must be its input dropped by that mask (the bit
mask, the float16 buffers of the mask route and the host constants handed to the stream live until
the queued ops have run). Runs are random, so the check is per run, not against serial runs: y ==
x * mask * scale (NumPy) for the run's own mask, and every mask distinct."""

from __future__ import annotations

import pytest
from threaded_runs import run_child_with_stream_delay

cann_ep = pytest.importorskip("ort_ops.cann_ep")

CHILD = r"""
import json
import threading
import numpy as np
from ort_ops import cann_ep
from test_dropout_on_cann import dropout_model, data, expected

cann_ep.use_simulator()
THREADS, RUNS = 3, 6
result = {}
for mask_out, dtype in ((True, np.float32), (False, np.float32), (True, np.float16)):
    session = cann_ep.session(dropout_model(dtype, 0.5, mask=mask_out))
    feeds = [data(dtype, seed=k) for k in range(3)]
    got, errors = [], []

    def work(t):
        try:
            for r in range(RUNS):
                k = (t + r) % len(feeds)
                got.append((k, session.run(None, {"x": feeds[k]})))
        except Exception as exc:
            errors.append(repr(exc)[:500])

    workers = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    [w.start() for w in workers]
    [w.join() for w in workers]
    bad, masks = 0, set()
    for k, outs in got:
        x = feeds[k]
        mask = outs[1] if mask_out else outs[0] != 0
        bad += not np.array_equal(outs[0].view(np.uint8), expected(x, mask, 0.5).view(np.uint8))
        masks.add(mask.tobytes())
    result[f"{'mask' if mask_out else 'y_only'}_{np.dtype(dtype).name}"] = {
        "runs": len(got), "bad": bad, "distinct": len(masks), "errors": errors}
print("RESULT=" + json.dumps(result))
"""


@pytest.fixture(scope="module")
def results():
    return run_child_with_stream_delay(CHILD)


@pytest.mark.parametrize("name", ["mask_float32", "y_only_float32", "mask_float16"])
def test_each_threaded_run_is_its_input_dropped_by_its_own_mask(results, name):
    r = results[name]
    assert r["errors"] == [] and r["runs"] == 18, r
    assert r["bad"] == 0, r
    assert r["distinct"] == r["runs"], r  # no two runs drew the same stream
