"""EluGrad (alpha != 1) on the CANN EP: per-stream scratch against "synchronise before release".

The alpha != 1 kernel needs device scratch for its float32 intermediates. Two correct policies:
``stream`` (default) keeps one buffer per stream, reused in stream order; ``sync``
(``ORTOPS_CANN_SCRATCH=sync``) allocates per run and synchronises the stream before freeing.
Each configuration runs in a fresh process on the ACL simulator (the policy and the simulator's
stream delay are read once per process); contenders are interleaved, best of ``--repeats``.
Counted exactly by the simulator, per run: stream synchronisations, device allocations.
On an NPU a synchronisation also stalls the host until the device has drained the stream, which
the simulator's ``--delay`` (ACLSIM_STREAM_DELAY_US per queued operation) stands in for.

    .venv-cann/bin/python benchmarks/bench_cann_scratch.py [--runs 200] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import json, sys, threading, time
import numpy as np
import ort_ops
from ort_ops import cann_ep
from ort_ops.cann_ep import sim
from ort_ops.model_builder import make_elu_grad_model
cann_ep.use_simulator()
dtype, threads, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
shape = (256, 1024)
npd = ort_ops.dtypes.numpy_dtype(dtype)
sess = cann_ep.session(make_elu_grad_model(dtype, shape, 0.5))
rng = np.random.default_rng(0)
feeds = {"grads": rng.uniform(-2, 2, shape).astype(np.float32).astype(npd),
         "activations": rng.uniform(-2, 2, shape).astype(np.float32).astype(npd)}
from ort_ops import ort_io
for _ in range(5):
    ort_io.run(sess, feeds)
syncs, allocs = sim.stat("stream_syncs"), sim.stat("total_allocations")
def work(n):
    for _ in range(n):
        ort_io.run(sess, feeds)
t0 = time.perf_counter()
ts = [threading.Thread(target=work, args=(runs // threads,)) for _ in range(threads)]
[t.start() for t in ts]
[t.join() for t in ts]
elapsed = time.perf_counter() - t0
done = runs // threads * threads
print(json.dumps({"runs_per_s": done / elapsed, "syncs": (sim.stat("stream_syncs") - syncs) / done,
                  "allocs": (sim.stat("total_allocations") - allocs) / done}))
"""


def run(policy: str, dtype: str, threads: int, runs: int, delay: int) -> dict:
    env = dict(os.environ, ACLSIM_STREAM_DELAY_US=str(delay))
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH", "")])
    env.pop("ORTOPS_CANN_SCRATCH", None)
    if policy == "sync":
        env["ORTOPS_CANN_SCRATCH"] = "sync"
    out = subprocess.run([sys.executable, "-c", CHILD, dtype, str(threads), str(runs)], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args(argv)
    import onnxruntime as ort

    print(f"EluGrad alpha=0.5, shape [256, 1024], {args.runs} runs per measurement, best of {args.repeats} "
          f"interleaved; onnxruntime {ort.__version__} CANN EP on the ACL simulator")
    print(f"{'dtype':>9} {'threads':>7} {'delay us':>8} | {'stream runs/s':>13} {'sync runs/s':>11} "
          f"{'stream/sync':>11} | syncs/run (stream, sync) | allocs/run (stream, sync)")
    for dtype in ("float32", "bfloat16"):
        for threads in (1, 4):
            for delay in (0, 50):
                best = {"stream": None, "sync": None}
                for _ in range(args.repeats):
                    for policy in best:
                        r = run(policy, dtype, threads, args.runs, delay)
                        if best[policy] is None or r["runs_per_s"] > best[policy]["runs_per_s"]:
                            best[policy] = r
                s, y = best["stream"], best["sync"]
                print(f"{dtype:>9} {threads:>7} {delay:>8} | {s['runs_per_s']:13.1f} {y['runs_per_s']:11.1f} "
                      f"{s['runs_per_s'] / y['runs_per_s']:10.2f}x | {s['syncs']:.2f}, {y['syncs']:.2f}"
                      f"{'':>14} | {s['allocs']:.2f}, {y['allocs']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
