"""Check an exported training graph against PyTorch eager autograd in ONNX Runtime (CPU EP).

Tolerances are the project's one table, :mod:`ort_ops.tolerances`: a tensor ``got`` matches the
eager ``want`` when ``max|got - want| <= atol + rtol * max|want|``: gradients are sums whose
order differs between ORT and PyTorch, so the error scales with the tensor's magnitude, not
with each (possibly near-zero) element.
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass, field

import numpy as np
import onnx
import onnxruntime as ort
import torch

from ort_ops import ort_io
from ort_ops.tolerances import TOLERANCES as _TABLE
from ort_ops.tolerances import Tolerance, check
from ort_ops.training.interface import LOSS_NAME, buffer_state_names, grad_name, new_name, without_buffer_defaults

#: torch dtype -> (rtol, atol), the rows of ort_ops.tolerances.TOLERANCES
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    getattr(torch, name): (t.rtol, t.atol) for name, t in _TABLE.items()
}


@dataclass
class Comparison:
    """One output's comparison: name, max abs error, the allowed error, and the verdict."""

    name: str
    max_abs_err: float
    allowed: float
    ok: bool


@dataclass
class Report:
    """Every output's :class:`Comparison`; ``ok`` when all match."""

    items: list[Comparison] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.items) and all(c.ok for c in self.items)

    def __str__(self) -> str:
        return "\n".join(
            f"{'ok  ' if c.ok else 'FAIL'} {c.name}: max abs err {c.max_abs_err:.3g} "
            f"(allowed {c.allowed:.3g})"
            for c in self.items
        )


def to_numpy(t: torch.Tensor) -> np.ndarray:
    """A NumPy copy of a CPU tensor (bfloat16 as ``ml_dtypes.bfloat16``)."""
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.view(torch.uint16).numpy().view(ml_dtypes.bfloat16).copy()
    return t.numpy().copy()


def eager_loss_and_grads(module, inputs, loss_fn, targets=(), masks=None, buffers=()) -> dict[str, torch.Tensor]:
    """``{"loss": ..., "grad.<name>": ...}`` from PyTorch autograd on a copy of ``module``;
    ``masks``: the dropout masks to use (:class:`ort_ops.training.dropout.DropoutMasks`); and
    ``new.<name>`` (the value after the forward) for each buffer named in ``buffers``."""
    from ort_ops.training.dropout import DropoutMasks

    module = copy.deepcopy(module)
    module.zero_grad(set_to_none=True)
    inputs = [t.detach().clone() for t in inputs]  # a model may write to its inputs
    with DropoutMasks(masks) if masks is not None else contextlib.nullcontext():
        loss = loss_fn(module(*inputs), *targets)
    loss.backward()
    out = {LOSS_NAME: loss.detach()}
    for name, p in module.named_parameters():
        if p.requires_grad:
            out[grad_name(name)] = p.grad if p.grad is not None else torch.zeros_like(p)
    after = dict(module.named_buffers())
    for name in buffers:
        out[new_name(name)] = after[name].detach()
    return out


def feeds_for(model: onnx.ModelProto, module, inputs, targets=()) -> dict[str, np.ndarray]:
    """Feeds for ``model``: data inputs in order, then any parameter and buffer inputs by name."""
    data = list(inputs) + list(targets)
    params = {**dict(module.named_buffers()), **dict(module.named_parameters())}
    feeds = {}
    graph_inputs = [i.name for i in model.graph.input]
    for i, name in enumerate(graph_inputs):
        if i < len(data):
            feeds[name] = to_numpy(data[i])
        elif name in params:
            feeds[name] = to_numpy(params[name])
        else:
            raise ValueError(f"graph input {name!r} is neither a data input nor a parameter or buffer")
    return feeds


def run_ort(model: onnx.ModelProto, feeds) -> dict[str, np.ndarray]:
    """Run ``model`` in ORT (CPU EP, default optimisations); ``{output name: array}``."""
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, ort_io.run(session, feeds, names)))


def compare_arrays(name: str, got, ref, rtol: float, atol: float) -> Comparison:
    """``max|got - ref| <= atol + rtol * max|ref|``, in float64; a shape mismatch fails."""
    result = check(got, ref, Tolerance(rtol=rtol, atol=atol))
    label = name if not result.message.startswith("shape") else f"{name} {result.message}"
    return Comparison(label, result.max_abs, result.allowed, result.ok)


def compare_all(got: dict, want: dict, rtol: float, atol: float) -> Report:
    """:func:`compare_arrays` for every name in ``want``; a name missing from ``got`` fails."""
    report = Report()
    for name, ref in want.items():
        if name not in got:
            report.items.append(Comparison(name, float("inf"), 0.0, False))
        else:
            report.items.append(compare_arrays(name, got[name], ref, rtol, atol))
    return report


def compare_with_eager(model: onnx.ModelProto, module, inputs, loss_fn, targets=(), masks=()) -> Report:
    """Compare every output of ``model`` (run in ORT) with eager autograd on the same inputs
    (and the same dropout ``masks``, the graph's ``dropout_mask.<k>`` inputs in order; the
    module's buffers feed the graph's buffer-state inputs)."""
    got = run_ort(without_buffer_defaults(model), feeds_for(model, module, inputs, list(targets) + list(masks)))
    want = eager_loss_and_grads(module, inputs, loss_fn, targets, masks=list(masks) if len(masks) else None,
                                buffers=buffer_state_names(model))
    report = Report()
    for name, ref in want.items():
        # integer buffers (BatchNorm's num_batches_tracked) are exact
        rtol, atol = TOLERANCES[ref.dtype] if ref.is_floating_point() else (0.0, 0.0)
        report.items += compare_all(got, {name: to_numpy(ref)}, rtol, atol).items
    return report
