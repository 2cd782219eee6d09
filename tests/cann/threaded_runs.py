"""One session run from several threads against its own serial runs: the check of the concurrency
tests (test_concurrent_step_on_cann.py, test_placed_ops_threads_on_cann.py), imported by their child
processes (the simulator's stream delay is read at aclInit)."""

from __future__ import annotations

import threading

import numpy as np


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
