"""Demo: train an ELU model on scikit-learn's digits in PyTorch eager and in ORT (fused ops), compare.

    python -m models.train_digits                  # .venv: PyTorch eager + ORT CPU EP (fused graph)
    python -m models.train_digits --ep cann        # .venv-cann: ORT CANN EP, compared with the CPU run
    python -m models.train_digits --model cnn      # the ELU CNN on 8x8 images (then --ep cann too)

``--model mlp`` (default) trains the reference ELU MLP on the 64 pixels, ``--model cnn`` the
reference ELU CNN (conv -> ELU -> pool, twice, -> linear) on ``[N, 1, 8, 8]`` images; both get
the same per-pixel standardisation. The CPU run (needs torch) exports the training graph, fuses it
(``rewrite.fuse_training``: the ELU backwards become ``EluGrad``, the cross-entropy loss and its
gradient ``SoftmaxCrossEntropyLossAndGrad``, the CNN's max-pool backwards ``MaxPoolGrad``) and
writes it, the initial parameters and the per-step loss curves to ``--out-dir/<model>/``;
the CANN run (no torch there) loads the same graph and parameters, trains on the CANN EP and
compares its curve with the saved ones. Both show an epoch progress bar, print one summary line per
run (loss of the first and last epoch, held-out accuracy) and write ``curves.json`` and
``loss_curves.png`` (``--no-plot``: the curves only).

With ``--ep cann`` the parameters and the optimizer state live on the NPU (``Trainer(...,
device="cann")``; ``--device cpu`` keeps them in host memory and binds them every step), and
the step's one session (training graph and optimizer update, ``ort_ops.training.step_graph``) is a CANN EP
session.

On CANN every node of the step runs on the CANN EP: onnxruntime-cann 1.24.4 claims the Conv nodes
(``Conv2D``), and ``cann_ep.session``'s placement pass puts the rest (Gemm, Elu, Transpose,
ConvTranspose, MaxPool, ...) into ``ai.ortops.cann`` (docs/placement.md, docs/cann_ops.md); the
run prints the placement. The ACL simulator in ``cann_ep/sim`` implements every CANN op they
launch, so ``--ep cann`` runs there as on a real NPU.
Agreement: per-step relative loss difference <= 1e-4 over the first 100 steps (fp32). Later,
training amplifies any change of rounding chaotically: PyTorch in float32 against PyTorch in
float64 differs by 2.8e-5 at step 200 (CNN, seed 0), and the fused graph against PyTorch by
1.4e-4 at step 181 (a loss of 0.064; 1.8e-6 over the first 100 steps; 1.6e-5 and 1.7e-5 over 200
steps with seeds 1 and 2): the plot shows every step, the verdict the first 100.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

from ort_ops.files import atomic_write, atomic_write_text
from ort_ops.training.trainer import SGD, Adam, Trainer

AGREE_STEPS = 100  # see the module docstring
AGREE_RTOL = 1e-4
TARGET_ACCURACY = 0.95
ALPHA = 1.0
HIDDEN = (32, 16)
CHANNELS = (8, 16)  # the CNN's conv output channels
IMAGE_SHAPE = (1, 8, 8)
MODELS = ("mlp", "cnn")
# Per model and optimizer: (epochs, SGD-momentum lr, Adam lr) when not given on the command line.
DEFAULTS = {"mlp": (10, 0.05, 3e-3), "cnn": (10, 0.05, 3e-3)}


def load_digits(seed: int = 0):
    """``(x_train, y_train, x_test, y_test)``: standardised float32 pixels, int64 labels (75/25)."""
    from sklearn.datasets import load_digits as sk_load
    from sklearn.model_selection import train_test_split

    x, y = sk_load(return_X_y=True)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.25, stratify=y, random_state=seed)
    mean, std = x_tr.mean(0), x_tr.std(0) + 1e-3
    prep = lambda a: ((a - mean) / std).astype(np.float32)
    return prep(x_tr), y_tr.astype(np.int64), prep(x_te), y_te.astype(np.int64)


def epoch_batches(x, y, batch: int, epoch: int, seed: int = 0):
    """Shuffled full batches for ``epoch`` (the partial last batch is dropped: shapes are fixed)."""
    order = np.random.default_rng([seed, epoch]).permutation(len(x))
    return [(x[order[i:i + batch]], y[order[i:i + batch]]) for i in range(0, len(x) - batch + 1, batch)]


def as_model_input(x: np.ndarray, model: str) -> np.ndarray:
    """Flat ``[N, 64]`` pixels as the model's input: unchanged (mlp) or ``[N, 1, 8, 8]`` (cnn)."""
    return x if model == "mlp" else np.ascontiguousarray(x.reshape(-1, *IMAGE_SHAPE))


def _elu(h: np.ndarray) -> np.ndarray:
    return np.where(h > 0, h, ALPHA * np.expm1(np.minimum(h, 0)))


def mlp_logits(params: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    """The ELU MLP's forward pass in NumPy (for held-out accuracy of any run's parameters)."""
    layers = sorted({k.rsplit(".", 1)[0] for k in params}, key=lambda k: int(k.split(".")[1]))
    h = x.astype(np.float64)
    for i, layer in enumerate(layers):
        h = h @ params[layer + ".weight"].T + params[layer + ".bias"]
        if i < len(layers) - 1:
            h = _elu(h)
    return h


def _conv2d_same(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``nn.Conv2d(kernel k, stride 1, padding k // 2)`` for odd ``k``: ``[N,C,H,W] -> [N,O,H,W]``."""
    k = w.shape[2]
    pad = k // 2
    n, _, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.zeros((n, w.shape[0], h, wd))
    for i in range(k):
        for j in range(k):
            out += np.einsum("nchw,oc->nohw", xp[:, :, i:i + h, j:j + wd], w[:, :, i, j])
    return out + b[None, :, None, None]


def _max_pool2(x: np.ndarray) -> np.ndarray:
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def cnn_logits(params: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    """The ELU CNN's forward pass in NumPy (``models.zoo.EluCNN``; ``x`` is ``[N, 1, 8, 8]``)."""
    p = {k: v.astype(np.float64) for k, v in params.items()}
    h = x.astype(np.float64)
    for conv in ("conv1", "conv2"):
        h = _max_pool2(_elu(_conv2d_same(h, p[conv + ".weight"], p[conv + ".bias"])))
    return h.reshape(len(h), -1) @ p["fc.weight"].T + p["fc.bias"]


def logits(params, x) -> np.ndarray:
    """The forward pass of whichever model ``params`` belong to (by parameter names)."""
    return cnn_logits(params, x) if "conv1.weight" in params else mlp_logits(params, x)


def accuracy(params, x, y) -> float:
    return float((logits(params, x).argmax(1) == y).mean())


def build_module(args):
    """The torch module for ``args.model`` (the same seeded initial weights every call)."""
    from models.zoo import elu_cnn, elu_mlp

    if args.model == "cnn":
        return elu_cnn(alpha=ALPHA, seed=args.seed, channels=CHANNELS)
    return elu_mlp(alpha=ALPHA, hidden=HIDDEN, seed=args.seed)


def make_optimizer(args):
    if args.optimizer == "sgd":
        return SGD(lr=args.lr, momentum=0.9)
    return Adam(lr=args.lr)


def torch_run(args, data, init):
    """PyTorch eager training on the same batches; ``(per-step losses, per-epoch params)``."""
    import torch
    import torch.nn.functional as F

    module = build_module(args)
    opt = (torch.optim.SGD(module.parameters(), lr=args.lr, momentum=0.9) if args.optimizer == "sgd"
           else torch.optim.Adam(module.parameters(), lr=args.lr))
    x_tr, y_tr, x_te, y_te = data
    losses, report = [], []
    for epoch in epoch_bar(args, "torch"):
        for xb, yb in epoch_batches(x_tr, y_tr, args.batch, epoch, args.seed):
            opt.zero_grad()
            loss = F.cross_entropy(module(torch.from_numpy(xb)), torch.from_numpy(yb))
            loss.backward()
            opt.step()
            losses.append(loss.item())
        params = {n: p.detach().numpy().copy() for n, p in module.named_parameters()}
        report.append(accuracy(params, x_te, y_te))
    return losses, report


def ort_run(args, data, graph, init, session_factory=None, device="cpu", label="ort"):
    x_tr, y_tr, x_te, y_te = data
    trainer = Trainer(graph, init, make_optimizer(args), session_factory=session_factory,
                      device=device, progress=False)
    losses, report = [], []
    for epoch in epoch_bar(args, label):
        losses += trainer.fit(epoch_batches(x_tr, y_tr, args.batch, epoch, args.seed))
        report.append(accuracy(trainer.parameters(), x_te, y_te))
    return losses, report, trainer


def epoch_bar(args, label):
    """``range(args.epochs)``, shown as one tqdm bar per run (stderr, cleared when done) where
    tqdm is installed, progress is on and stderr is a terminal."""
    epochs = range(args.epochs)
    if not args.progress:
        return epochs
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return epochs
    return tqdm(epochs, desc=f"{label} epochs", unit="epoch", leave=False, disable=None)  # None: not on a pipe


def summary_line(label, losses, accs, steps_per_epoch) -> str:
    """One line per run: mean loss of the first and of the last epoch, and held-out accuracy."""
    first, last = losses[:steps_per_epoch], losses[-steps_per_epoch:]
    return (f"  {label:9s} loss {np.mean(first):.4f} (epoch 1) -> {np.mean(last):.4f} (epoch {len(accs)}), "
            f"held-out accuracy {accs[0]:.2%} -> {accs[-1]:.2%}")


def agreement(losses, reference) -> tuple[bool, float]:
    """Per-step relative difference over the first AGREE_STEPS steps: (agree, max rel diff)."""
    n = min(AGREE_STEPS, len(losses), len(reference))
    a, b = np.asarray(losses[:n]), np.asarray(reference[:n])
    rel = float(np.max(np.abs(a - b) / np.abs(b))) if n else float("inf")
    return rel <= AGREE_RTOL, rel


def have_matplotlib() -> bool:
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


def plot(curves: dict[str, list[float]], path: str, model: str = "mlp") -> bool:
    """The loss curves (top) and, below, each ORT curve's per-step relative difference from
    PyTorch's against the agreement limit: the curves overlap, the difference shows how much."""
    if not have_matplotlib():
        print(f"(matplotlib not installed: no plot written to {path})")
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, diff) = plt.subplots(2, 1, figsize=(8, 7), sharex=True, height_ratios=(3, 2))
    styles = {"torch": "-", "ort_cpu": "--", "ort_cann": ":"}
    for name, losses in curves.items():
        ax.plot(np.arange(1, len(losses) + 1), losses, styles.get(name, "-"), label=name, linewidth=1.2)
    ax.set_ylabel("cross-entropy loss")
    ax.set_yscale("log")
    ax.set_title(f"ELU {model.upper()} on digits: PyTorch eager vs ONNX Runtime (fused ops)")
    ax.legend()
    reference = np.asarray(curves["torch"])
    for name, losses in curves.items():
        if name == "torch":
            continue
        n = min(len(losses), len(reference))
        rel = np.abs(np.asarray(losses[:n]) - reference[:n]) / np.abs(reference[:n])
        diff.plot(np.arange(1, n + 1), np.maximum(rel, 1e-12), styles.get(name, "-"), label=f"{name} vs torch",
                  linewidth=1.0)
    # The verdict judges the first AGREE_STEPS steps only: the limit is drawn over those, the
    # later steps are shaded as not judged (see the module docstring).
    steps = max(len(v) for v in curves.values())
    diff.hlines(AGREE_RTOL, 1, min(AGREE_STEPS, steps), color="red", linewidth=1.0,
                label=f"limit {AGREE_RTOL:.0e} (the verdict: steps 1-{AGREE_STEPS})")
    if steps > AGREE_STEPS:
        diff.axvspan(AGREE_STEPS, steps, color="gray", alpha=0.15, linewidth=0, label="not judged")
    diff.set_yscale("log")
    diff.set_xlabel("step")
    diff.set_ylabel("relative loss difference\n(equal steps drawn at 1e-12)")
    diff.legend(fontsize=8)
    fig.tight_layout()
    atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=120))
    plt.close(fig)
    return True


def write_json(obj, path):
    atomic_write_text(path, json.dumps(obj, indent=1))


def run_cpu(args, data, files) -> int:
    import onnx
    import torch
    import torch.nn.functional as F

    from ort_ops import rewrite, training

    module = build_module(args)
    x_tr, y_tr = data[0], data[1]
    xb, yb = epoch_batches(x_tr, y_tr, args.batch, 0, args.seed)[0]
    graph = training.export_training_graph(module, (torch.from_numpy(xb),), F.cross_entropy,
                                         targets=(torch.from_numpy(yb),), params_as_inputs=True)
    graph = rewrite.fuse_training(graph)
    count = lambda op: sum(n.op_type == op for n in graph.graph.node)
    init = {n: p.detach().numpy().copy() for n, p in module.named_parameters()}
    training.save_atomic(graph, files["graph"])
    np.savez(files["init"], **init)
    fused = {"EluGrad": count("EluGrad"), "SoftmaxCrossEntropyLossAndGrad": count("SoftmaxCrossEntropyLossAndGrad"),
             "MaxPoolGrad": count("MaxPoolGrad")}
    wanted = {"EluGrad": count("Elu"), "SoftmaxCrossEntropyLossAndGrad": 1, "MaxPoolGrad": count("MaxPool")}
    print(f"training graph ({args.model}): {len(graph.graph.node)} nodes, "
          + ", ".join(f"{n} {op}" for op, n in fused.items() if wanted[op]) + f" -> {files['graph']}")
    missing = [f"{wanted[op] - n} {op}" for op, n in fused.items() if n != wanted[op]]
    if missing:
        print(f"error: not fused: {', '.join(missing)} (the ELU backwards, the cross-entropy, the max-pool "
              "backwards)", file=sys.stderr)
        return 1

    t_losses, t_acc = torch_run(args, data, init)
    o_losses, o_acc, _ = ort_run(args, data, onnx.load(files["graph"]), init, label="ort_cpu")
    spe = len(t_losses) // args.epochs
    print(summary_line("torch", t_losses, t_acc, spe))
    print(summary_line("ort_cpu", o_losses, o_acc, spe))
    ok, rel = agreement(o_losses, t_losses)
    result = {"config": config(args), "curves": {"torch": t_losses, "ort_cpu": o_losses},
              "accuracy": {"torch": t_acc[-1], "ort_cpu": o_acc[-1]}}
    return finish(result, files, [("ort_cpu vs torch", ok, rel)], o_acc[-1], args.plot)


def run_cann(args, data, files) -> int:
    import onnx

    from ort_ops import cann_ep

    for key in ("graph", "init", "curves"):
        if not os.path.exists(files[key]):
            print(f"error: {files[key]} is missing: run `python -m models.train_digits "
                  f"--model {args.model}` (CPU, in .venv) with the same --out-dir first", file=sys.stderr)
            return 2
    with open(files["curves"], encoding="utf-8") as f:
        result = json.load(f)
    if result["config"] != config(args):
        print(f"error: the saved CPU run used {result['config']}, this run {config(args)}", file=sys.stderr)
        return 2
    with np.load(files["init"]) as z:
        init = {k: z[k] for k in z.files}

    sessions = []

    def factory(model):
        sessions.append(cann_ep.session(model))  # placed on CANN (rewrite.placement)
        return sessions[-1]

    graph = onnx.load(files["graph"])
    print(f"CANN EP: parameters and optimizer state on {args.device}")
    try:
        c_losses, c_acc, _ = ort_run(args, data, graph, init, factory, args.device, "ort_cann")
    except RuntimeError as e:  # ORT's error for a failing kernel: one line is enough
        lines = str(e).strip().splitlines()
        print(f"error: training on the CANN EP failed: {lines[0] if lines else e}", file=sys.stderr)
        from ort_ops.cann_ep.runtime import simulated

        if simulated():
            print("note: on the ACL simulator an `[aclsim] error` line above names the ACL op and the "
                  "check that failed (implemented op types: docs/cann_ops.md)", file=sys.stderr)
        return 2
    print(summary_line("ort_cann", c_losses, c_acc, len(c_losses) // args.epochs))
    for session in sessions:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(session.placement.counts().items()))
        on_cpu = [f"{p.node} ({p.op_type})" for p in session.placement.on_cpu]
        print(f"placement of a {len(session.placement.nodes)}-node graph: {counts}; on the CPU EP: "
              f"{', '.join(on_cpu) or 'none'}")
    result["curves"]["ort_cann"] = c_losses
    result["accuracy"]["ort_cann"] = c_acc[-1]
    checks = [(f"ort_cann vs {ref}", *agreement(c_losses, result["curves"][ref]))
              for ref in ("torch", "ort_cpu")]
    return finish(result, files, checks, c_acc[-1], args.plot)


def finish(result, files, checks, acc, draw: bool = True) -> int:
    """Save the curves, draw the plot (or say how it gets drawn; nothing when not ``draw``), print
    the verdicts.

    Exit status 1 when a curve disagrees, or when a run of at least the default length misses
    the accuracy target; a shorter run only reports its accuracy."""
    write_json(result, files["curves"])
    model = result["config"].get("model", "mlp")
    if not draw:
        print(f"loss curves -> {files['curves']}")
    elif have_matplotlib():
        if plot(result["curves"], files["png"], model):
            print(f"loss curves -> {files['png']}")
    else:
        print(f"(no matplotlib in this environment: the curves are in {files['curves']}; draw the plot with "
              f"`python -m models.train_digits --model {model} --plot-only` where matplotlib is, as "
              "scripts/demo.sh does)")
    ok_all = True
    for label, ok, rel in checks:
        print(f"{label}: {'AGREE' if ok else 'DISAGREE'} (max per-step relative loss difference "
              f"over the first {AGREE_STEPS} steps {rel:.2e}, limit {AGREE_RTOL:.0e})")
        ok_all &= ok
    epochs, default_epochs = result["config"]["epochs"], DEFAULTS[model][0]
    if epochs >= default_epochs:
        met = acc >= TARGET_ACCURACY
        print(f"held-out accuracy {acc:.2%} (target {TARGET_ACCURACY:.0%} after {default_epochs} epochs: "
              f"{'met' if met else 'NOT met'})")
    else:
        met = True
        print(f"held-out accuracy {acc:.2%} after {epochs} epoch(s) (the {TARGET_ACCURACY:.0%} target is for "
              f"{default_epochs} epochs)")
    return 0 if ok_all and met else 1


def config(args) -> dict:
    arch = {"hidden": list(HIDDEN)} if args.model == "mlp" else {"channels": list(CHANNELS)}
    return {"model": args.model, "epochs": args.epochs, "batch": args.batch, "optimizer": args.optimizer,
            "lr": args.lr, "seed": args.seed, **arch, "alpha": ALPHA}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ep", choices=["cpu", "cann"], default="cpu")
    p.add_argument("--device", choices=["cpu", "cann"], default="cann",
                   help="where parameters and optimizer state live with --ep cann (default cann: on the "
                        "device; cpu: host memory, bound every step)")
    p.add_argument("--plot-only", action="store_true",
                   help="redraw loss_curves.png from curves.json (e.g. in .venv after the CANN run)")
    p.add_argument("--model", choices=MODELS, default="mlp",
                   help="mlp: the ELU MLP on 64 pixels (default); cnn: the ELU CNN on 1x8x8 images")
    p.add_argument("--epochs", type=int, default=None, help="default 10")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd")
    p.add_argument("--lr", type=float, default=None,
                   help="default 0.05 (SGD, momentum 0.9) / 3e-3 (Adam)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out-dir", default=os.path.join("build", "train_digits"),
                   help="artifacts go to <out-dir>/<model>/ (default build/train_digits)")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no epoch progress bar")
    p.add_argument("--no-plot", dest="plot", action="store_false",
                   help="write curves.json only (scripts/demo.sh draws the plot afterwards with --plot-only)")
    args = p.parse_args(argv)
    epochs, sgd_lr, adam_lr = DEFAULTS[args.model]
    if args.epochs is None:
        args.epochs = epochs
    if args.lr is None:
        args.lr = sgd_lr if args.optimizer == "sgd" else adam_lr
    out_dir = os.path.join(args.out_dir, args.model)
    os.makedirs(out_dir, exist_ok=True)
    files = {k: os.path.join(out_dir, v) for k, v in
             {"graph": "train_graph.onnx", "init": "init_params.npz", "curves": "curves.json",
              "png": "loss_curves.png"}.items()}
    if args.plot_only:
        with open(files["curves"], encoding="utf-8") as f:
            curves = json.load(f)["curves"]
        if not plot(curves, files["png"], args.model):
            return 1
        print(f"loss curves -> {files['png']}")
        return 0
    x_tr, y_tr, x_te, y_te = load_digits(args.seed)
    data = (as_model_input(x_tr, args.model), y_tr, as_model_input(x_te, args.model), y_te)
    print(f"digits ({args.model}, input {list(data[0].shape[1:])}): {len(data[0])} train / "
          f"{len(data[2])} held-out samples, batch {args.batch}, {args.epochs} epochs, "
          f"{args.optimizer} lr {args.lr}")
    return run_cann(args, data, files) if args.ep == "cann" else run_cpu(args, data, files)


if __name__ == "__main__":
    sys.exit(main())
