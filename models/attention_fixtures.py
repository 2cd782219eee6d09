"""The committed attention training-graph fixtures (``tests/fixtures/attention_*_fp32.onnx``).

One per :data:`models.attention_zoo.SETUPS` entry: :func:`ort_ops.training.export_training_graph`
of the setup's module on its first batch (parameters as initializers, inputs ``input`` and
``target``), verified against eager autograd. The CANN suite trains them (its venv has no
PyTorch); ``tests/training/test_training_attention.py`` checks they are current. Regenerate with
``python -m models.attention_fixtures [OUT_DIR]``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from models.attention_zoo import SETUPS
from models.fixtures_paths import FIXTURE_DIR

MAX_BYTES = 200 * 1024


def filename(setup_name: str) -> str:
    return f"attention_{setup_name}_fp32.onnx"


def path_of(setup_name: str, directory: str | os.PathLike | None = None) -> Path:
    """Where the fixture of setup ``setup_name`` lives (the committed ``tests/fixtures`` by default)."""
    return Path(directory if directory is not None else FIXTURE_DIR) / filename(setup_name)


def make(setup_name: str, directory: str | os.PathLike | None = None) -> Path:
    """Export one fixture (verified against eager autograd) and write it atomically."""
    from ort_ops.training import export_training_graph

    setup = SETUPS[setup_name]
    x, y = setup.batches(1)[0]
    out = path_of(setup_name, directory)
    out.parent.mkdir(parents=True, exist_ok=True)
    export_training_graph(setup.module(), (x,), setup.loss_fn, out, targets=(y,), verify=True)
    size = out.stat().st_size
    if size > MAX_BYTES:
        raise ValueError(f"fixture {out} is {size} bytes, more than the {MAX_BYTES} allowed")
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", nargs="?", default=str(FIXTURE_DIR))
    args = parser.parse_args(argv)
    for name in SETUPS:
        out = make(name, args.out_dir)
        print(f"{out}  {out.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
