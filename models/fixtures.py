"""The committed ONNX training-graph fixtures (``tests/fixtures/*.onnx``) and how to rebuild them.

Regenerate all of them with ``python -m models.fixtures [OUT_DIR] [--only NAME ...]`` from the
checkout root. Each fixture is :func:`ort_ops.training.export_training_graph` of a
:mod:`models.zoo` model with cross-entropy loss on a deterministic batch of 8 (parameters as
initializers, inputs ``input`` and ``target``); :func:`load_case` rebuilds the same module,
inputs and loss so tests can compare a fixture (or a rewrite of it) with eager autograd.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from models import zoo
from models.fixtures_paths import FIXTURE_DIR

BATCH = 8
MAX_BYTES = 200 * 1024


@dataclass(frozen=True)
class Fixture:
    """One fixture: file name, model factory, input kind, export options, ELU layer count."""

    name: str
    build: Callable[[], nn.Module]
    kind: str  # "mlp" or "cnn" (see zoo.example_batch)
    n_elu: int
    dtype: torch.dtype | None = None
    alpha: float = 1.0
    inplace: bool = False
    options: dict = field(default_factory=dict)
    inference: bool = False  # the forward graph only (input -> logits), no loss or gradients

    @property
    def filename(self) -> str:
        return f"{self.name}.onnx"


FIXTURES: tuple[Fixture, ...] = (
    Fixture("mlp_elu_fp32", zoo.elu_mlp, "mlp", n_elu=2),
    Fixture("mlp_elu_alpha05_fp32", zoo.elu_mlp_alpha, "mlp", n_elu=2, alpha=0.5),
    Fixture("mlp_elu_fp32_noopt", zoo.elu_mlp, "mlp", n_elu=2, options={"optimize": False}),
    Fixture("mlp_elu_inplace_fp32", zoo.elu_mlp_inplace, "mlp", n_elu=2, inplace=True),
    Fixture("mlp_elu_fp16", zoo.elu_mlp, "mlp", n_elu=2, dtype=torch.float16),
    Fixture("cnn_elu_fp32", zoo.elu_cnn, "cnn", n_elu=2),
    Fixture("cnn_avgpool_elu_fp32", zoo.elu_avgpool_cnn, "cnn", n_elu=2),
    Fixture("cnn_adaptive_elu_fp32", zoo.elu_adaptive_cnn, "cnn", n_elu=1),
    Fixture("mlp_elu_fp32_infer", zoo.elu_mlp, "mlp", n_elu=2, inference=True),
    Fixture("cnn_elu_fp32_infer", zoo.elu_cnn, "cnn", n_elu=2, inference=True),
)
#: a training graph with dropout mask inputs (``dropout_mask.<k>``) for the CANN tests, in a folder
#: of its own: the generic fixture tests feed every input random values, a mask needs the trainer's
DROPOUT = Fixture("dropout/mlp_dropout_elu_fp32", zoo.elu_mlp_dropout, "mlp", n_elu=2)
BY_NAME = {f.name: f for f in (*FIXTURES, DROPOUT)}


def loss_fn(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The fixtures' loss: mean cross-entropy."""
    return nn.functional.cross_entropy(logits, target)


def load_case(name: str):
    """``(module, inputs, targets)`` of fixture ``name``, already cast to its dtype."""
    from ort_ops.training.export import prepare

    fx = BY_NAME[name]
    x, y = zoo.example_batch(fx.kind, BATCH)
    return prepare(fx.build(), (x,), (y,), fx.dtype)


def path_of(name: str, directory: str | os.PathLike | None = None) -> Path:
    """Where fixture ``name`` lives (the committed ``tests/fixtures`` by default)."""
    return Path(directory if directory is not None else FIXTURE_DIR) / BY_NAME[name].filename


def make(fx: Fixture, directory: str | os.PathLike | None = None):
    """Export one fixture (verified against eager autograd) and write it; returns the path."""
    from ort_ops.training.export import export_training_graph

    x, y = zoo.example_batch(fx.kind, BATCH)
    out = path_of(fx.name, directory)
    out.parent.mkdir(parents=True, exist_ok=True)
    if fx.inference:
        export_inference_graph(fx.build(), x, out)
    else:
        export_training_graph(
            fx.build(), (x,), loss_fn, out, targets=(y,), dtype=fx.dtype, verify=True, **fx.options
        )
    size = out.stat().st_size
    if size > MAX_BYTES:
        raise ValueError(f"fixture {out} is {size} bytes, more than the {MAX_BYTES} allowed")
    return out


def export_inference_graph(module: nn.Module, x: torch.Tensor, out: Path) -> None:
    """``module``'s forward (``input`` -> ``logits``) as ONNX, checked against eager PyTorch in ORT."""
    import numpy as np
    import onnx
    import onnxruntime as ort

    from ort_ops.domain import IR_VERSION
    from ort_ops.tolerances import check
    from ort_ops.training.export import _quiet_exporter, save_atomic

    module.eval()
    with _quiet_exporter():
        program = torch.onnx.export(module, (x,), dynamo=True, input_names=["input"], output_names=["logits"])
    model = program.model_proto
    model.ir_version = IR_VERSION
    for node in model.graph.node:
        del node.metadata_props[:]  # (the exporter's stack traces: local paths)
    onnx.checker.check_model(model, full_check=True)
    (got,) = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"input": x.numpy()})
    with torch.no_grad():
        want = module(x).numpy()
    closeness = check(got, want.astype(np.float32))
    if not closeness.ok:
        raise ValueError(f"inference graph of {type(module).__name__} differs from eager: {closeness.message}")
    save_atomic(model, out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", nargs="?", default=str(FIXTURE_DIR))
    parser.add_argument("--only", nargs="*", choices=sorted(BY_NAME), help="fixtures to rebuild")
    parser.add_argument("--user-setups", nargs="*", metavar="SETUP",
                        help="rebuild the users' setups' fixtures instead (models/user_setup_fixtures.py): "
                             "the named ones, or all")
    args = parser.parse_args(argv)
    if args.user_setups is not None:
        from models import user_setup_fixtures
        from models.user_setups import BY_NAME as SETUPS

        unknown = sorted(set(args.user_setups) - set(SETUPS))
        if unknown:
            parser.error(f"unknown setups {unknown}; known: {sorted(SETUPS)}")
        for name in args.user_setups or sorted(SETUPS):
            out = user_setup_fixtures.write(name)
            print(f"{out}  {out.stat().st_size} bytes")
        return 0
    for fx in (*FIXTURES, DROPOUT):
        if args.only and fx.name not in args.only:
            continue
        out = make(fx, args.out_dir)
        print(f"{out}  {out.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
