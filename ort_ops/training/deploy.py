"""The model to deploy after training: the forward pass in eval mode, with the trained state.

    from ort_ops.training import export_inference_graph

    model = export_inference_graph(module, (x,), state=trainer.state_dict(), path="model.onnx")

``state`` (``name -> array``: :meth:`ort_ops.training.Trainer.state_dict`, the trained parameters
and buffer state such as BatchNorm's running statistics) is loaded into a copy of ``module`` (the
user's module is not changed), which is put in ``eval()`` mode and exported with torch's dynamo
ONNX exporter. Its initializers are named like ``module.state_dict()`` (unless the exporter's
optimiser folds them, e.g. a BatchNorm into the preceding convolution); inputs are ``input``,
``input_1``, ... as in the training graph.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np
import onnx
import torch
from torch import nn

from ort_ops.domain import IR_VERSION
from ort_ops.training.export import _default_names, _quiet_exporter, _root_cause, prepare, save_atomic


def load_state(module: nn.Module, state: Mapping[str, np.ndarray]) -> None:
    """Copy ``state`` into ``module``'s parameters and buffers of the same names, in place.

    ``ValueError`` naming the entry for a name the module lacks, or a shape or dtype that differs
    from the module's; nothing is changed then.
    """
    own = module.state_dict(keep_vars=True)
    values = {}
    for name, value in state.items():
        if name not in own:
            raise ValueError(f"state entry {name!r} is not a parameter or buffer of the module "
                             f"({type(module).__name__}: {sorted(own)[:8]}...)")
        tensor = value.detach().cpu() if isinstance(value, torch.Tensor) else torch.from_numpy(np.asarray(value))
        target = own[name]
        if tuple(tensor.shape) != tuple(target.shape) or tensor.dtype != target.dtype:
            raise ValueError(f"state entry {name!r} is {tensor.dtype}{list(tensor.shape)}, the module's is "
                             f"{target.dtype}{list(target.shape)}")
        values[name] = tensor
    with torch.no_grad():
        for name, tensor in values.items():
            own[name].copy_(tensor)


def export_inference_graph(
    module: nn.Module,
    example_inputs,
    path: str | os.PathLike | None = None,
    *,
    state: Mapping[str, np.ndarray] | None = None,
    dtype: torch.dtype | None = None,
    input_names: Sequence[str] | None = None,
    optimize: bool = True,
) -> onnx.ModelProto:
    """The eval-mode forward of ``module`` with ``state`` loaded (see the module docstring), as ONNX.

    ``dtype`` converts the copy first (as :func:`~ort_ops.training.export_training_graph` does; pass
    the same). ``path`` is written atomically. Shapes are static (the example inputs').
    """
    mod, inputs, _ = prepare(module, example_inputs, None, dtype)
    if not inputs:
        raise ValueError("example_inputs is empty: the model needs at least one input tensor")
    if state is not None:
        load_state(mod, state)
    mod.eval()
    names = list(input_names) if input_names is not None else _default_names(len(inputs), 0)
    if len(names) != len(inputs):
        raise ValueError(f"input_names must be {len(inputs)} names, got {names}")
    try:
        with _quiet_exporter():
            program = torch.onnx.export(mod, inputs, dynamo=True, optimize=optimize, verbose=False,
                                        input_names=names)
    except Exception as e:
        raise ValueError(f"torch.onnx.export failed on the inference graph: {_root_cause(e)}") from e
    model = program.model_proto
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    if path is not None:
        save_atomic(model, path)
    return model
