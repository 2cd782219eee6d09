"""Where a training step runs on the CANN EP, counted exactly by the ACL simulator: before and
after placement, for the ELU MLP and CNN training steps (SGD momentum and Adam) and their
inference graphs.

Per step (after warm-up), one fresh process per configuration:
- node runs per execution provider (ORT's profile; Memcpy nodes counted apart),
- host->device and device->host copies (``aclrtMemcpy*`` counted by the simulator),
- ACL single-op launches per op type (``BroadcastToD`` among them).

``before``: the graph as the project built it until now: the exporter's graph with the ELU
backward fused (EluGrad), the optimizer update as an ONNX graph, no placement.
``after``: :func:`ort_ops.rewrite.fuse_training` (EluGrad, softmax cross-entropy, MaxPool backward), the
fused optimizer update ops, and :func:`ort_ops.rewrite.placement.place` (``cann_ep.session``'s default).

``--corpus``: the same counts for one training step of each users' setup of
``models/user_setups.py`` (the corpus of tests/cann/test_user_setups_on_cann.py), SGD and Adam,
``before`` (fused graph, no placement, the update as an ONNX graph) and ``after`` (placed, fused
update ops), as one table.

    .venv-cann/bin/python benchmarks/bench_cann_step.py [--steps 5] [--soc Ascend910B1] [--json out.json]
    .venv-cann/bin/python -m benchmarks.bench_cann_step --corpus [--steps 3] [--only gelu_mlp,swiglu]  # -m: models/
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import collections, json, sys, tempfile
import numpy as np
import onnx
from ort_ops import cann_ep
from ort_ops.cann_ep import sim
from benchmarks.step_graphs import build
cann_ep.use_simulator()
kind, model, optimizer, mode, steps = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
with tempfile.TemporaryDirectory() as tmp:
    run, graph, session = build(kind, model, optimizer, mode, profile_prefix=f"{tmp}/prof")
    for _ in range(3):
        run()
    c0 = {k: sim.stat(k) for k in ("copies_h2d", "copies_d2h", "copies_d2d", "stream_syncs")}
    ops0 = sim.op_counts()
    for _ in range(steps):
        run()
    copies = {k: (sim.stat(k) - v) / steps for k, v in c0.items()}
    ops = {k: (v - ops0.get(k, 0)) / steps for k, v in sim.op_counts().items() if v != ops0.get(k, 0)}
    # every node runs once per step: the profile's nodes per provider are the runs per step
    runs = cann_ep.node_runs(session)
    providers = collections.Counter(r.provider for r in runs if not r.op_type.startswith("Memcpy"))
    memcpy = collections.Counter(r.op_type for r in runs if r.op_type.startswith("Memcpy"))
    cpu_ops = collections.Counter(r.op_type for r in runs if r.provider == "CPUExecutionProvider")
    report = session.placement
    print("@@" + json.dumps({
        "nodes": len(graph.graph.node),
        "providers": dict(providers), "memcpy_nodes": dict(memcpy), "cpu_ops": dict(cpu_ops),
        "copies": copies, "launches": ops, "launch_total": sum(ops.values()),
        "placement": report.counts() if report is not None else None,
    }))
"""


def measure(kind: str, model: str, optimizer: str, mode: str, steps: int, soc: str) -> dict:
    env = dict(os.environ, ACLSIM_SOC_NAME=soc, ORT_DISABLE_TELEMETRY="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", CHILD, kind, model, optimizer, mode, str(steps)], env=env,
                          capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} {model} {optimizer} {mode} failed:\n{proc.stderr[-3000:]}")
    return json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("@@")][-1][2:])


def corpus(steps: int, soc: str, only: frozenset = frozenset()) -> dict:
    """The --corpus table: per setup (those in ``only`` if given), optimizer and mode, the per-step
    counts (or the error)."""
    from models import user_setup_fixtures

    print(f"{'setup':22s} {'opt':4s} {'mode':6s} {'CPU runs':>8s} {'H2D':>5s} {'D2H':>5s} {'D2D':>5s} "
          f"{'launches':>8s} {'nodes':>5s} {'BcastD':>6s}  on the CPU")
    results = {}
    names = user_setup_fixtures.names()
    unknown = sorted(only - set(names))
    if unknown:
        raise SystemExit(f"--only: no setup {unknown}; the corpus: {names}")
    for name in [n for n in names if not only or n in only]:
        for optimizer in ("sgd", "adam"):
            for mode in ("before", "after"):
                key = f"{name} {optimizer} {mode}"
                try:
                    r = measure("setup", name, optimizer, mode, steps, soc)
                except RuntimeError as error:
                    last = [ln for ln in str(error).splitlines() if ln.strip()][-1]
                    results[key] = {"error": last}
                    print(f"{name:22s} {optimizer:4s} {mode:6s} failed: {last[:110]}")
                    continue
                results[key] = r
                c = r["copies"]
                print(f"{name:22s} {optimizer:4s} {mode:6s} {r['providers'].get('CPUExecutionProvider', 0):8g} "
                      f"{c['copies_h2d']:5g} {c['copies_d2h']:5g} {c['copies_d2d']:5g} {r['launch_total']:8g} "
                      f"{r['nodes']:5d} {r['launches'].get('BroadcastToD', 0):6g}  {fmt_counts(r['cpu_ops'])}")
    return results


def fmt_counts(counts: dict, width: int = 0) -> str:
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{k} {v:g}" for k, v in items) or "-"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=5, help="measured steps per configuration (after 3 warm-up)")
    p.add_argument("--soc", default="Ascend910B1", help="ACLSIM_SOC_NAME of the simulated device")
    p.add_argument("--only", default="", help="comma-separated subset, e.g. train:mlp:sgd,infer:cnn "
                                              "(with --corpus: setup names, e.g. gelu_mlp,swiglu)")
    p.add_argument("--json", help="write the numbers here")
    p.add_argument("--corpus", action="store_true", help="the users' setups of models/user_setups.py instead")
    args = p.parse_args(argv)
    import onnxruntime as ort

    if args.corpus:
        print(f"onnxruntime {ort.__version__} CANN EP on the ACL simulator (SoC {args.soc}); one training step of "
              f"each users' setup, per step after 3 warm-up steps, {args.steps} measured")
        results = corpus(args.steps, args.soc, frozenset(filter(None, args.only.split(","))))
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=2))
        return 0

    configs = [("train", m, o) for m in ("mlp", "cnn") for o in ("sgd", "adam")]
    configs += [("infer", m, "-") for m in ("mlp", "cnn")]
    if args.only:
        wanted = set(args.only.split(","))
        configs = [c for c in configs if ":".join(c).rstrip(":-") in wanted or ":".join(c[:2]) in wanted]
    print(f"onnxruntime {ort.__version__} CANN EP on the ACL simulator (SoC {args.soc}); per step after 3 "
          f"warm-up steps, {args.steps} measured")
    results = {}
    for kind, model, optimizer in configs:
        name = f"{kind} {model}" + (f" {optimizer}" if kind == "train" else "")
        for mode in ("before", "after"):
            r = measure(kind, model, optimizer, mode, args.steps, args.soc)
            results[f"{name} {mode}"] = r
            c = r["copies"]
            print(f"\n{name:16s} {mode:6s}: {r['nodes']} graph nodes; node runs {fmt_counts(r['providers'])}"
                  f" (+ Memcpy nodes {fmt_counts(r['memcpy_nodes'])}); "
                  f"H2D {c['copies_h2d']:g}, D2H {c['copies_d2h']:g}, D2D {c['copies_d2d']:g}, "
                  f"syncs {c['stream_syncs']:g}; ACL launches {r['launch_total']:g}"
                  f" (BroadcastToD {r['launches'].get('BroadcastToD', 0):g})")
            print(f"{'':24s}launches: {fmt_counts(r['launches'])}")
            if r["cpu_ops"]:
                print(f"{'':24s}on the CPU: {fmt_counts(r['cpu_ops'])}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
