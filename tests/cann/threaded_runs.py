"""One session run from several threads against its own serial runs: the check of the concurrency
tests (test_concurrent_step_on_cann.py, test_placed_ops_threads_on_cann.py). They run it in a child
process (run_child_with_stream_delay: the simulator's stream delay is read at aclInit), which imports
threads_against_serial from here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def threads_against_serial(session, feed_sets, threads: int, rounds: int) -> dict:
    """Runs every feed set once serially, then `rounds` times each from `threads` threads in a
    per-thread random order; counts the threaded results that differ in any byte from the serial
    ones ("bad") and the errors raised."""
    serial = [session.run(None, f) for f in feed_sets]
    bad, errors = [0], []

    def work(t):
        order = np.random.default_rng(t).permutation(len(feed_sets) * rounds) % len(feed_sets)
        try:
            for k in order:
                got = session.run(None, feed_sets[k])
                bad[0] += any(g.tobytes() != s.tobytes() for g, s in zip(got, serial[k]))
        except Exception as exc:
            errors.append(repr(exc)[:500])

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    [w.start() for w in workers]
    [w.join() for w in workers]
    return {"runs": threads * rounds * len(feed_sets), "bad": bad[0], "errors": errors,
            "distinct": len({s[0].tobytes() for s in serial})}


def run_child_with_stream_delay(child: str, delay_us: int = 200, timeout: int = 900) -> dict:
    """Runs the Python source `child` (which prints ``RESULT=<json>``) in a fresh process with the
    simulator's stream delay and tests/cann plus the repository on its path; returns the JSON. Skips
    (saying why) without the CANN EP or an ACL runtime."""
    import onnxruntime as ort
    import pytest

    from ort_ops import cann_ep

    if cann_ep.PROVIDER not in ort.get_available_providers():
        pytest.skip(f"onnxruntime {ort.__version__} here has no CANNExecutionProvider")
    if not cann_ep.available():
        pytest.skip("no ACL runtime (neither CANN nor the built simulator)")
    env = dict(os.environ, ACLSIM_STREAM_DELAY_US=str(delay_us),
               PYTHONPATH=os.pathsep.join([str(HERE), str(HERE.parents[1]), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(child)], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=HERE)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT=")]
    assert lines, f"child failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return json.loads(lines[-1][len("RESULT="):])
