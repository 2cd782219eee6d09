"""The users' setups (:mod:`models.user_setups`) as committed fixtures, for environments without
PyTorch (the CANN EP's): ``tests/fixtures/user_setups/<name>.onnx`` is the setup's training graph
as :func:`ort_ops.training.export_training_graph` writes it (parameters as graph inputs, not
fused), ``<name>.npz`` its initial parameters (``param/<name>``), module buffers
(``buffer/<name>``), :data:`N_BATCHES` batches (``batch/<step>/<input index>``) and
``Setup.cann_refused`` / ``Setup.adam_eps`` (``meta/...``).

Regenerate with ``.venv/bin/python -m models.fixtures --user-setups [NAME ...]``. Loading
(:func:`load`) needs only NumPy and onnx.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import NamedTuple

import numpy as np
import onnx

from models.fixtures_paths import FIXTURE_DIR

DIRECTORY = FIXTURE_DIR / "user_setups"
N_BATCHES = 6


class SetupFixture(NamedTuple):
    graph: onnx.ModelProto
    params: dict[str, np.ndarray]
    buffers: dict[str, np.ndarray]
    batches: list[tuple[np.ndarray, ...]]
    cann_refused: str
    adam_eps: float


def names(directory: str | os.PathLike = DIRECTORY) -> list[str]:
    """The setups with a fixture in ``directory``."""
    return sorted(p.stem for p in Path(directory).glob("*.onnx"))


def load(name: str, directory: str | os.PathLike = DIRECTORY) -> SetupFixture:
    """Setup ``name``'s committed training graph, initial parameters, buffers and batches."""
    base = Path(directory) / name
    graph = onnx.load(base.with_suffix(".onnx"))
    with np.load(base.with_suffix(".npz")) as z:
        arrays = {k: z[k] for k in z.files}
    params = {k[len("param/"):]: v for k, v in arrays.items() if k.startswith("param/")}
    buffers = {k[len("buffer/"):]: v for k, v in arrays.items() if k.startswith("buffer/")}
    steps = sorted({int(k.split("/")[1]) for k in arrays if k.startswith("batch/")})
    batches = []
    for step in steps:
        prefix = f"batch/{step}/"
        count = sum(1 for k in arrays if k.startswith(prefix))
        batches.append(tuple(arrays[f"{prefix}{i}"] for i in range(count)))
    return SetupFixture(graph, params, buffers, batches, str(arrays.get("meta/cann_refused", "")),
                        float(arrays.get("meta/adam_eps", 1e-8)))


def cann_refused(directory: str | os.PathLike = DIRECTORY) -> dict[str, str]:
    """``name -> reason`` of the committed setups the CANN EP cannot run yet."""
    return {n: r for n in names(directory) if (r := load(n, directory).cann_refused)}


def write(name: str, directory: str | os.PathLike = DIRECTORY) -> Path:
    """Export setup ``name`` (verified against eager autograd) and write its two files."""
    from models.user_setups import BY_NAME
    from ort_ops.files import atomic_write_bytes
    from ort_ops.training import export_training_graph
    from ort_ops.training.verify import to_numpy

    setup = BY_NAME[name]
    inputs, targets = setup.batch(0)
    graph = export_training_graph(setup.build(), inputs, setup.loss, targets=targets, params_as_inputs=True)
    module = setup.build()
    arrays = {f"param/{n}": to_numpy(p) for n, p in module.named_parameters()}
    arrays.update({f"buffer/{n}": to_numpy(b) for n, b in module.named_buffers()})
    arrays["meta/cann_refused"] = np.array(setup.cann_refused)
    arrays["meta/adam_eps"] = np.array(setup.adam_eps)
    for step in range(N_BATCHES):
        inputs, targets = setup.batch(step)
        for i, t in enumerate(inputs + targets):
            arrays[f"batch/{step}/{i}"] = to_numpy(t)
    out = Path(directory) / name
    out.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    atomic_write_bytes(out.with_suffix(".npz"), buffer.getvalue())
    atomic_write_bytes(out.with_suffix(".onnx"), graph.SerializeToString())
    return out.with_suffix(".onnx")
