"""Reproducible dropout: the training graph's dropout masks as graph inputs, drawn per step.

``export_training_graph`` (``dropout_masks=True``, the default) replaces every train-mode
dropout with ``p > 0`` (``nn.Dropout``, ``F.dropout``, the dropout layers of
``nn.TransformerEncoderLayer``) by ``x * (mask * 1/(1 - p))`` -- PyTorch's formula -- with ``mask``
a boolean graph input ``dropout_mask.<k>`` (``k``: the forward order of the dropout calls). The
model's metadata (:data:`METADATA_KEY`) lists each mask's ``p``. A mask is a function of
``(seed, step, k)`` only (:func:`draw`: NumPy's Philox generator keyed by them), so

- the CPU EP and the CANN EP, which have no common random stream, see the same masks;
- a run resumed from a checkpoint at step ``s`` draws step ``s + 1``'s masks, as the
  uninterrupted run does;
- PyTorch given the same masks (:class:`ort_ops.training.dropout.DropoutMasks`) computes the same
  step.

The :class:`~ort_ops.training.Trainer` draws and feeds them itself (``Trainer(...,
dropout_seed=...)``, stored in checkpoints). This module needs NumPy only (not torch).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import onnx

MASK_PREFIX = "dropout_mask."
METADATA_KEY = "ort_ops.dropout_masks"


def mask_name(index: int) -> str:
    return f"{MASK_PREFIX}{index}"


@dataclass(frozen=True)
class MaskSite:
    """One dropout of the graph: its mask input, drop probability and shape."""

    name: str
    p: float
    shape: tuple[int, ...]


def check_seed(seed) -> int:
    """``seed`` as an int >= 0 (``ValueError`` naming the value otherwise)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"dropout_seed must be an int >= 0, got {seed!r}")
    return int(seed)


def write_metadata(model: onnx.ModelProto, sites: Sequence[MaskSite]) -> None:
    """Record ``sites`` (name, p) in ``model.metadata_props`` (replacing an older record)."""
    keep = [p for p in model.metadata_props if p.key != METADATA_KEY]
    del model.metadata_props[:]
    model.metadata_props.extend(keep)
    if sites:
        entry = model.metadata_props.add()
        entry.key = METADATA_KEY
        entry.value = json.dumps([{"name": s.name, "p": s.p} for s in sites])


def sites(model: onnx.ModelProto) -> list[MaskSite]:
    """The dropout mask inputs of ``model`` (from its metadata; ``[]`` without dropout).

    ``ValueError`` when the metadata and the graph's inputs disagree."""
    raw = next((p.value for p in model.metadata_props if p.key == METADATA_KEY), None)
    inputs = {i.name: i for i in model.graph.input}
    listed = [n for n in inputs if n.startswith(MASK_PREFIX)]
    if raw is None:
        if listed:
            raise ValueError(f"graph inputs {listed} look like dropout masks but the model has no "
                             f"{METADATA_KEY!r} metadata (their drop probabilities)")
        return []
    found = []
    for entry in json.loads(raw):
        name, p = entry["name"], float(entry["p"])
        if name not in inputs:
            raise ValueError(f"dropout mask {name!r} of the {METADATA_KEY!r} metadata is not a graph input")
        if not 0.0 < p <= 1.0:
            raise ValueError(f"dropout mask {name!r}: p must be in (0, 1], got {p}")
        t = inputs[name].type.tensor_type
        if t.elem_type != onnx.TensorProto.BOOL:
            kind = onnx.TensorProto.DataType.Name(t.elem_type)
            raise ValueError(f"dropout mask {name!r} must be a bool input, is {kind}")
        found.append(MaskSite(name, p, tuple(d.dim_value for d in t.shape.dim)))
    if sorted(s.name for s in found) != sorted(listed):
        raise ValueError(f"dropout mask inputs {listed} differ from the metadata's {[s.name for s in found]}")
    return found


def draw(mask_sites: Sequence[MaskSite], seed: int, step: int) -> dict[str, np.ndarray]:
    """The masks of training step ``step`` (1-based) for ``seed``: ``True`` keeps an element, with
    probability ``1 - p`` each; site ``k`` from Philox keyed by ``(seed, step, k)``."""
    seed = check_seed(seed)
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 1:
        raise ValueError(f"step must be an int >= 1, got {step!r}")
    masks = {}
    for k, site in enumerate(mask_sites):
        key = np.random.SeedSequence([seed, int(step), k]).generate_state(2, np.uint64)
        rng = np.random.Generator(np.random.Philox(key=key))
        masks[site.name] = rng.random(site.shape, dtype=np.float32) >= np.float32(site.p)
    return masks


def mask_list(masks: Mapping[str, np.ndarray], mask_sites: Sequence[MaskSite]) -> list[np.ndarray]:
    """``masks`` in site order (what :class:`ort_ops.training.dropout.DropoutMasks` replays)."""
    return [masks[s.name] for s in mask_sites]
