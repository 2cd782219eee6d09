"""Training steps/s of the ELU MLP: ORT with fused EluGrad, ORT with the exported (unfused) ELU
backward, and PyTorch eager -- same model, batch, optimizer (SGD momentum 0.9), one run.

    python -m benchmarks.bench_training [--batch 256] [--hidden 1024 --hidden 1024,1024] [--steps 50]
                                          [--threads N]

(from the checkout root: the reference model is the checkout's ``models.zoo``, and ``ort_ops`` is
the checkout's, its ``rewrite`` found by ``ort_ops/_source_checkout.py``.)

Each --hidden (comma-separated layer widths) is one configuration; by default 64-1024-10 (the
ELU layer's tensors are large next to its matrix products) and 64-1024-1024-10 (dominated by the
1024x1024 matrix products, which fusing the ELU backward does not touch).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

try:
    import models  # noqa: F401  (the checkout's models/, not installed)
except ModuleNotFoundError:
    raise SystemExit("bench_training needs the checkout's models/ package: run it from the checkout root as "
                     "python -m benchmarks.bench_training") from None

import onnxruntime as ort
import torch
import torch.nn.functional as F

import ort_ops
from models.zoo import elu_mlp
from ort_ops import rewrite, training
from ort_ops.training.trainer import SGD, Trainer


def interleaved_steps_per_second(steppers: dict, batches: dict, warmup: int, repeats: int) -> dict:
    """Best-of-``repeats`` steps/s per contender, the contenders' timed passes interleaved
    (A B C A B C ...) so that slow drifts of a shared machine hit them all alike."""
    for name, step in steppers.items():
        for b in batches[name][:warmup]:
            step(b)
    best = {name: float("inf") for name in steppers}
    for _ in range(repeats):
        for name, step in steppers.items():
            t0 = time.perf_counter()
            for b in batches[name]:
                step(b)
            best[name] = min(best[name], time.perf_counter() - t0)
    return {name: len(batches[name]) / seconds for name, seconds in best.items()}


def bench_config(hidden: tuple[int, ...], args) -> dict[str, float]:
    """steps/s of ORT fused, ORT unfused and torch eager for one MLP configuration."""
    module = elu_mlp(hidden=hidden, seed=0)
    rng = np.random.default_rng(0)
    batches = [(rng.standard_normal((args.batch, 64), dtype=np.float32),
                rng.integers(0, 10, args.batch).astype(np.int64)) for _ in range(args.steps)]
    x0, y0 = (torch.from_numpy(a) for a in batches[0])
    unfused = training.export_training_graph(module, (x0,), F.cross_entropy, targets=(y0,),
                                           params_as_inputs=True, verify=False)
    fused = rewrite.fuse_elu_grad(unfused)
    init = {n: prm.detach().numpy().copy() for n, prm in module.named_parameters()}
    opt = SGD(lr=1e-3, momentum=0.9)

    def factory(model):
        so = ort_ops.register(ort.SessionOptions())
        if args.threads:
            so.intra_op_num_threads = args.threads
        return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])

    steppers = {name: Trainer(graph, init, opt, session_factory=factory, progress=False).step
                for name, graph in (("ort_fused", fused), ("ort_unfused", unfused))}

    tmod = elu_mlp(hidden=hidden, seed=0)
    topt = torch.optim.SGD(tmod.parameters(), lr=1e-3, momentum=0.9)
    tbatches = [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in batches]

    def torch_step(b):
        topt.zero_grad()
        loss = F.cross_entropy(tmod(b[0]), b[1])
        loss.backward()
        topt.step()
        return loss.item()

    steppers["torch_eager"] = torch_step
    inputs = {"ort_fused": batches, "ort_unfused": batches, "torch_eager": tbatches}
    results = interleaved_steps_per_second(steppers, inputs, 5, args.repeats)
    return results


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--hidden", action="append",
                   help="comma-separated hidden widths; repeat for several configurations")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--threads", type=int, default=0, help="intra-op threads for ORT and torch (0: default)")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    configs = [tuple(int(w) for w in h.split(",")) for h in (args.hidden or ["1024", "1024,1024"])]
    print(f"ELU MLP training, batch {args.batch}, SGD momentum, {args.steps} steps x best of "
          f"{args.repeats} interleaved passes, threads {args.threads or 'default'}; onnxruntime {ort.__version__}, "
          f"torch {torch.__version__}")
    for hidden in configs:
        results = bench_config(hidden, args)
        print(f"64-{'-'.join(map(str, hidden))}-10:")
        for name, sps in results.items():
            print(f"  {name:12s} {sps:8.1f} steps/s")
        ratio = results["ort_fused"] / results["ort_unfused"]
        print(f"  fused / unfused      {ratio:.2f}x (target >= 1.2x: {'met' if ratio >= 1.2 else 'NOT met'})")
        print(f"  fused / torch eager  {results['ort_fused'] / results['torch_eager']:.2f}x")
        print(f"  unfused / torch eager {results['ort_unfused'] / results['torch_eager']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
