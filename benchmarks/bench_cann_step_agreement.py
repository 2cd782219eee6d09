"""How closely the whole training step on the CANN EP (the ACL simulator) follows the CPU EP's, per
step, for the ELU MLP and CNN with SGD momentum and Adam: the configuration of
``tests/cann/test_whole_step_on_cann.py`` (four fixed batches in turn, 200 steps).

Three comparisons of per-step losses, each against the CPU EP running the fused step graph:
- ``free``: the CANN trainer runs on its own (its rounding differences accumulate in the state);
- ``lockstep``: before every step the CANN trainer loads the CPU trainer's parameters and optimizer
  state (a checkpoint), so each step's difference is that step's alone; also the largest
  difference of the parameters after the step, ``max|Δ| / max|p|`` over the parameters;
- ``cpu baseline``: a second CPU-EP trainer that differs only in rounding: the exporter's graph
  (ELU backward, loss, MaxPool backward unfused) and the unfused ONNX update.

Per comparison: the largest relative difference over the first 20 and over all steps, the largest
absolute one, the loss at the step of the largest relative one, and ``tol``: the largest
``|Δ| / (atol + rtol·|loss|)`` over the steps with float32's tolerance of ``ort_ops.tolerances``
(1e-6 + 1e-5·|loss|; ≤ 1 is within it).

    .venv-cann/bin/python -m benchmarks.bench_cann_step_agreement [--steps 200] [--only mlp:sgd] [--json out.json]

``--corpus``: the users' setups instead (models/user_setups.py; their batches in turn,
the optimizers of tests/cann/test_user_setups_on_cann.py: SGD momentum 0.9 at lr 0.05, Adam at lr 1e-2
with the setup's eps), e.g. ``--corpus --only gru:adam``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

try:
    import models  # noqa: F401  (the checkout's models/, not installed)
except ModuleNotFoundError:
    raise SystemExit("bench_cann_step_agreement needs the checkout's models/ package: run it from the checkout root as "
                     "python -m benchmarks.bench_cann_step_agreement") from None

FIXTURES = {"mlp": "mlp_elu_fp32", "cnn": "cnn_elu_fp32"}
FIRST = 20  # the "first steps" column


def optimizer(name: str):
    from ort_ops.training import SGD, Adam

    return {"sgd": SGD(lr=0.05, momentum=0.9), "adam": Adam(lr=1e-3)}[name]


def summary(got: np.ndarray, want: np.ndarray) -> dict:
    from ort_ops.tolerances import tolerance_of

    tol = tolerance_of(np.float32)
    diff = np.abs(got - want)
    rel = diff / np.abs(want)
    worst = int(rel.argmax())
    return {"rel_first": float(rel[:FIRST].max()), "rel_all": float(rel.max()), "abs_all": float(diff.max()),
            "worst_step": worst + 1, "loss_at_worst": float(want[worst]),
            "tol": float((diff / (tol.atol + tol.rtol * np.abs(want))).max())}


def measure(model: str, opt: str, steps: int) -> dict:
    from models.fixture_graphs import batch, training_case
    from ort_ops import cann_ep, rewrite
    from ort_ops.training.trainer import Trainer, cpu_session_factory

    exported, params, _ = training_case(FIXTURES[model])
    graph = rewrite.fuse_training(exported)
    fixed = [batch(graph, seed) for seed in range(4)]
    data = [fixed[i % 4] for i in range(steps)]

    def cpu_trainer(g=graph, **kw):
        return Trainer(g, params, optimizer(opt), session_factory=cpu_session_factory(), **kw)

    def cann_trainer():
        return Trainer(graph, params, optimizer(opt), session_factory=cann_ep.session, device="cann")

    want = np.array(cpu_trainer().fit(data))
    free = np.array(cann_trainer().fit(data))
    baseline = np.array(cpu_trainer(exported, fused_update=False).fit(data))

    cpu, cann, locked, param_rel = cpu_trainer(), cann_trainer(), [], 0.0
    with tempfile.TemporaryDirectory() as tmp:
        state = os.path.join(tmp, "state.npz")
        for b in data:
            cpu.save_checkpoint(state)
            cann.load_checkpoint(state)
            locked.append(cann.step(b))
            cpu.step(b)
            got, ref = cann.parameters(), cpu.parameters()
            param_rel = max(param_rel, *(float(np.abs(got[n] - ref[n]).max() / np.abs(ref[n]).max()) for n in ref))
    return {"free": summary(free, want), "lockstep": {**summary(np.array(locked), want), "param_rel": param_rel},
            "cpu baseline": summary(baseline, want)}


def measure_setup(name: str, opt: str, steps: int) -> dict:
    """A users' setup (models/user_setups.py, the committed fixtures) trained ``steps`` steps on its batches
    in turn, with tests/cann/test_user_setups_on_cann.py's optimizers: the three comparisons of
    :func:`measure` (``free``'s ``param_rel``: the parameters after the last step)."""
    from models import user_setup_fixtures
    from ort_ops import cann_ep, rewrite
    from ort_ops.training import SGD, Adam
    from ort_ops.training.trainer import Trainer, cpu_session_factory

    fx = user_setup_fixtures.load(name)
    graph = rewrite.fuse_training(fx.graph)
    data = [fx.batches[i % len(fx.batches)] for i in range(steps)]

    def make():
        return SGD(lr=0.05, momentum=0.9) if opt == "sgd" else Adam(lr=1e-2, eps=fx.adam_eps)

    def cann_trainer():
        return Trainer(graph, fx.params, make(), session_factory=cann_ep.session, device="cann", progress=False)

    def cpu_trainer(g=graph, **kw):
        return Trainer(g, fx.params, make(), session_factory=cpu_session_factory(), progress=False, **kw)

    cann, cpu = cann_trainer(), cpu_trainer()
    got, want = np.array(cann.fit(data)), np.array(cpu.fit(data))
    mine, ref = cann.parameters(), cpu.parameters()
    param_rel = max(float(np.abs(mine[n] - ref[n]).max() / max(np.abs(ref[n]).max(), 1e-30)) for n in ref)
    baseline = np.array(cpu_trainer(fx.graph, fused_update=False).fit(data))
    cpu, cann, locked = cpu_trainer(), cann_trainer(), []
    with tempfile.TemporaryDirectory() as tmp:
        state = os.path.join(tmp, "state.npz")
        for b in data:
            cpu.save_checkpoint(state)
            cann.load_checkpoint(state)
            locked.append(cann.step(b))
            cpu.step(b)
    return {"free": {**summary(got, want), "param_rel": param_rel}, "lockstep": summary(np.array(locked), want),
            "cpu baseline": summary(baseline, want)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--soc", default="Ascend910B1", help="ACLSIM_SOC_NAME of the simulated device")
    p.add_argument("--only", default="", help="comma-separated subset, e.g. mlp:sgd,cnn:adam")
    p.add_argument("--json", help="write the numbers here")
    p.add_argument("--corpus", action="store_true",
                   help="the users' setups of models/user_setups.py instead of the MLP and CNN")
    args = p.parse_args(argv)
    if args.steps <= FIRST:
        p.error(f"--steps must be more than {FIRST}")
    os.environ["ACLSIM_SOC_NAME"] = args.soc
    import onnxruntime as ort

    from ort_ops import cann_ep

    if "CANNExecutionProvider" not in ort.get_available_providers():
        p.error(f"onnxruntime {ort.__version__} here has no CANNExecutionProvider (run it with .venv-cann/bin/python)")
    cann_ep.use_simulator()
    if args.corpus:
        from models import user_setup_fixtures

        names, run = user_setup_fixtures.names(), measure_setup
    else:
        names, run = list(FIXTURES), measure
    configs = [(m, o) for m in names for o in ("sgd", "adam")]
    if args.only:
        configs = [c for c in configs if ":".join(c) in set(args.only.split(","))]
    print(f"onnxruntime {ort.__version__}, CANN EP on the ACL simulator (SoC {args.soc}) against the CPU EP; "
          f"{args.steps} steps; rel = |Δ|/|loss|; tol = max |Δ| / (1e-6 + 1e-5·|loss|)")
    results = {}
    for model, opt in configs:
        r = results[f"{model} {opt}"] = run(model, opt, args.steps)
        for kind, s in r.items():
            after = "the last step" if kind == "free" else "the step"
            extra = f"; params after {after} {s['param_rel']:.1e} of max|p|" if "param_rel" in s else ""
            print(f"{model} {opt:4s} {kind:12s}: rel first {FIRST} {s['rel_first']:.1e}, all {s['rel_all']:.1e} "
                  f"(step {s['worst_step']}, loss {s['loss_at_worst']:.2e}); abs {s['abs_all']:.1e}; "
                  f"tol {s['tol']:.2f}{extra}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
