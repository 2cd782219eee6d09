"""How far ``rewrite.fuse_training``'s fused ops are from the exporter's subgraphs they replace, and
what they save: the numbers of docs/ops/SoftmaxCrossEntropyLossAndGrad.md and docs/ops/MaxPoolGrad.md.

    python -m benchmarks.bench_fused_subgraphs [--seeds 20] [--out build/bench_fused]       # .venv
    .venv-cann/bin/python -m benchmarks.bench_fused_subgraphs --ep cann [--out build/bench_fused]

CPU run (needs torch): exports ``F.cross_entropy`` training graphs (a Linear layer to [N, C]
logits, 10% of the targets ignore_index) and ``nn.MaxPool2d`` training graphs, fuses them, and
compares the fused graph with the exported one on the CPU EP: for the cross-entropy the loss's
relative difference and the logits gradient's ``max|diff| / max|want|`` (the tolerance rule of
``ort_ops.tolerances``) and largest difference in float32 ulps; for the max pool the number of
outputs with any differing bit (inputs with ties: small integers). Then the time of a whole
training step (the digits MLP and CNN, batch 32 and 256), exported vs ELU-only fused vs fully
fused, best of 9 interleaved passes of 50 runs. The graphs and inputs are saved in ``--out``; the
CANN run (no torch there) runs the fused graphs on the CANN EP and compares them with the exported graphs on the CPU EP.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time

import numpy as np

try:
    import models  # noqa: F401  (the checkout's models/, not installed)
except ModuleNotFoundError:
    raise SystemExit("bench_fused_subgraphs needs the checkout's models/ package: run it from the checkout root as "
                     "python -m benchmarks.bench_fused_subgraphs") from None

import onnx

import ort_ops
from ort_ops import ort_io

CE_SHAPES = [(32, 10), (256, 100), (64, 1000)]
LOGIT_SCALES = [1.0, 5.0, 20.0]


def ulps(got: np.ndarray, want: np.ndarray) -> int:
    """The largest distance in float32 units in the last place (ordered bit patterns) over the
    elements of ``want`` at least 1e-3 of its largest magnitude (near 0 an ulp means nothing)."""
    def ordered(a):
        bits = np.ascontiguousarray(a, np.float32).view(np.int32).astype(np.int64)
        return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)
    big = np.isfinite(got) & np.isfinite(want) & (np.abs(want) >= 1e-3 * np.max(np.abs(want)))
    return int(np.max(np.abs(ordered(got[big]) - ordered(want[big])))) if big.any() else 0


def with_output(model: onnx.ModelProto, name: str) -> onnx.ModelProto:
    out = onnx.ModelProto.FromString(model.SerializeToString())
    out.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    return out


def cpu_session(model: onnx.ModelProto):
    import onnxruntime as ort

    return ort.InferenceSession(model.SerializeToString(), ort_ops.register(ort.SessionOptions()),
                                providers=["CPUExecutionProvider"])


def dlogits_name(fused: onnx.ModelProto) -> str:
    node = next(n for n in fused.graph.node if n.op_type == "SoftmaxCrossEntropyLossAndGrad")
    return node.output[1]


def export_cross_entropy(n: int, c: int):
    import torch
    import torch.nn.functional as F

    from ort_ops import rewrite, training
    from ort_ops.rewrite.rules import softmax_cross_entropy

    torch.manual_seed(0)
    module = torch.nn.Linear(16, c)
    unfused = training.export_training_graph(module, (torch.randn(n, 16),), F.cross_entropy,
                                             targets=(torch.randint(0, c, (n,)),), params_as_inputs=True, verify=False)
    fused = rewrite.fuse_elu_grad(unfused, rules=(softmax_cross_entropy.RULE,))  # this rule alone
    name = dlogits_name(fused)
    return with_output(unfused, name), with_output(fused, name), module


def ce_feeds(module, n, c, scale, seed):
    rng = np.random.default_rng(seed)
    target = rng.integers(0, c, n).astype(np.int64)
    target[rng.random(n) < 0.1] = -100
    feeds = {"input": (rng.standard_normal((n, 16)) * scale).astype(np.float32), "target": target}
    feeds.update({k: v.detach().numpy() for k, v in module.named_parameters()})
    return feeds


def compare_ce(got, want) -> dict:
    (loss, dl), (loss0, dl0) = got, want
    return {"loss_rel": float(abs(float(loss) - float(loss0)) / abs(float(loss0))),
            "dlogits_rel": float(np.max(np.abs(dl - dl0)) / np.max(np.abs(dl0))), "dlogits_ulps": ulps(dl, dl0)}


def worst(rows: list[dict]) -> dict:
    return {k: max(r[k] for r in rows) for k in rows[0]}


def cpu_cross_entropy(args) -> dict:
    results = {}
    for n, c in CE_SHAPES:
        unfused, fused, module = export_cross_entropy(n, c)
        a, b = cpu_session(unfused), cpu_session(fused)
        rows, saved = [], []
        names = ["loss", dlogits_name(fused)]
        for scale in LOGIT_SCALES:
            for seed in range(args.seeds):
                feeds = ce_feeds(module, n, c, scale, seed)
                rows.append(compare_ce(ort_io.run(b, feeds, names), ort_io.run(a, feeds, names)))
                if seed == 0:
                    saved.append(feeds)
        results[f"{n}x{c}"] = worst(rows)
        onnx.save(unfused, os.path.join(args.out, f"ce_{n}x{c}_unfused.onnx"))
        onnx.save(fused, os.path.join(args.out, f"ce_{n}x{c}_fused.onnx"))
        np.savez(os.path.join(args.out, f"ce_{n}x{c}_feeds.npz"),
                 **{f"{i}:{k}": v for i, f in enumerate(saved) for k, v in f.items()})
    return results


def cpu_max_pool(args) -> dict:
    import torch
    import torch.nn.functional as F

    from ort_ops import rewrite, training
    from ort_ops.rewrite.rules import max_pool_backward

    out = {}
    for kernel, stride, padding in ((2, 2, 0), (3, 2, 1), (3, 1, 1)):
        torch.manual_seed(0)
        module = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.MaxPool2d(kernel, stride, padding),
                                     torch.nn.Flatten())
        flat = module(torch.randn(1, 3, 16, 16)).shape[1]
        module = torch.nn.Sequential(*module, torch.nn.Linear(flat, 10))
        x, y = torch.randn(8, 3, 16, 16), torch.randint(0, 10, (8,))
        unfused = training.export_training_graph(module, (x,), F.cross_entropy, targets=(y,), params_as_inputs=True,
                                                 verify=False)
        fused = rewrite.fuse_elu_grad(unfused, rules=(max_pool_backward.RULE,))  # this rule alone
        assert any(n.op_type == "MaxPoolGrad" for n in fused.graph.node)
        a, b = cpu_session(unfused), cpu_session(fused)
        names = [o.name for o in unfused.graph.output]
        differing = 0
        for seed in range(args.seeds):
            rng = np.random.default_rng(seed)
            feeds = {"input": rng.integers(-2, 3, (8, 3, 16, 16)).astype(np.float32), "target": y.numpy()}
            feeds.update({k: v.detach().numpy() for k, v in module.named_parameters()})
            for g, w in zip(ort_io.run(b, feeds, names), ort_io.run(a, feeds, names)):
                differing += int(not np.array_equal(np.atleast_1d(g).view(np.uint32), np.atleast_1d(w).view(np.uint32)))
        out[f"k{kernel}s{stride}p{padding}"] = {"outputs_with_any_differing_bit": differing,
                                                "runs": args.seeds, "outputs_per_run": len(names)}
    return out


def step_times(args) -> dict:
    import torch.nn.functional as F

    from models.zoo import elu_cnn, elu_mlp, example_batch
    from ort_ops import rewrite, training

    out = {}
    for kind, make in (("mlp", lambda: elu_mlp(seed=0)), ("cnn", lambda: elu_cnn(seed=0))):
        for batch in (32, 256):
            x, y = example_batch(kind, batch)
            module = make()
            unfused = training.export_training_graph(module, (x,), F.cross_entropy, targets=(y,),
                                                     params_as_inputs=True, verify=False)
            graphs = {"exported": unfused, "elu_only": rewrite.fuse_elu_grad(unfused),
                      "fused": rewrite.fuse_training(unfused)}
            feeds = {"input": x.numpy(), "target": y.numpy(), **{k: v.detach().numpy()
                                                                for k, v in module.named_parameters()}}
            sessions = {k: cpu_session(g) for k, g in graphs.items()}
            best = {k: float("inf") for k in sessions}
            for s in sessions.values():
                for _ in range(10):
                    s.run(None, feeds)
            for _ in range(args.repeats):  # interleaved passes: a shared machine's drifts hit all alike
                for k, s in sessions.items():
                    t0 = time.perf_counter()
                    for _ in range(50):
                        s.run(None, feeds)
                    best[k] = min(best[k], (time.perf_counter() - t0) / 50)
            out[f"{kind} batch {batch}"] = {k: round(v * 1e3, 3) for k, v in best.items()}
    return out


def cann_cross_entropy(args) -> dict:
    from ort_ops import cann_ep

    cann_ep.use_simulator()
    results = {}
    for path in sorted(glob.glob(os.path.join(args.out, "ce_*_fused.onnx"))):
        key = os.path.basename(path)[3:-11]
        fused, unfused = onnx.load(path), onnx.load(path.replace("_fused", "_unfused"))
        on_cann, on_cpu = cann_ep.session(fused), cpu_session(unfused)
        names = ["loss", dlogits_name(fused)]
        with np.load(path.replace("_fused.onnx", "_feeds.npz")) as z:
            runs = {}
            for k in z.files:
                i, name = k.split(":", 1)
                runs.setdefault(i, {})[name] = z[k]
        rows = [compare_ce(ort_io.run(on_cann, f, names), ort_io.run(on_cpu, f, names)) for f in runs.values()]
        results[key] = worst(rows)
    return results


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ep", choices=["cpu", "cann"], default="cpu")
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--repeats", type=int, default=9, help="timed passes per contender (best is kept)")
    p.add_argument("--out", default=os.path.join("build", "bench_fused"))
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    if args.ep == "cann":
        report = {"cross_entropy_cann_vs_exported_cpu": cann_cross_entropy(args)}
    else:
        report = {"cross_entropy_fused_vs_exported_cpu": cpu_cross_entropy(args),
                  "max_pool_fused_vs_exported_cpu": cpu_max_pool(args),
                  "training_step_ms_cpu": step_times(args)}
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
