"""Every placed-op case of test_placed_ops_on_cann.py run from several threads on one session.

Each run may get its own ACL stream; a kernel's device scratch (the positions of Gather, the float16
copies of an integer MaxPool, the normalised indices of ScatterND, ...) and every host buffer it
hands to asynchronous work must live until the queued ops that read them have run. With the
simulator's stream delay (``ACLSIM_STREAM_DELAY_US``, read at aclInit: a fresh process) a buffer
released or reused too early is overwritten while queued work still reads it. The runs use several
feed sets (the case's float inputs scaled, its index and integer inputs kept, so they stay valid):
the expected results are the same session's own serial runs of the same feeds (runs are
deterministic), so any difference is a concurrency fault."""

from __future__ import annotations

import pytest
from threaded_runs import run_child_with_stream_delay

cann_ep = pytest.importorskip("ort_ops.cann_ep")

CHILD = r"""
import json
import numpy as np
from ort_ops import cann_ep
from test_placed_ops_on_cann import CASES
from threaded_runs import threads_against_serial

cann_ep.use_simulator()
THREADS, ROUNDS, FEED_SETS = 3, 2, 3


def feed_sets(case):
    base = case.feeds()
    out = []
    for k in range(FEED_SETS):
        feeds = {}
        for name, value in base.items():
            scaled = value.dtype.kind == "f" and value.size > 0
            feeds[name] = np.asarray(value * value.dtype.type(1 + 0.25 * k), value.dtype) if scaled else value
        out.append(feeds)
    return out


result = {}
for case in CASES:
    session = cann_ep.session(case.model())
    sets = feed_sets(case)
    placed = sum(e.where == "placed" for e in session.placement.nodes)
    result[case.id] = {**threads_against_serial(session, sets, THREADS, ROUNDS), "placed": placed}
print("RESULT=" + json.dumps(result))
"""


@pytest.fixture(scope="module")
def results():
    return run_child_with_stream_delay(CHILD)


def test_every_case_ran_and_most_are_placed(results):
    from test_placed_ops_on_cann import CASES

    assert set(results) == {c.id for c in CASES}
    assert sum(r["placed"] > 0 for r in results.values()) >= 0.9 * len(results)


def test_concurrent_runs_equal_the_serial_ones(results):
    faults = {case: r for case, r in results.items() if r["bad"] or r["errors"]}
    assert not faults, faults
