"""The committed training-graph fixtures (``tests/fixtures``) as the trainer takes them, without
PyTorch (for the CANN environment, which has none): parameters as graph inputs, their values,
and a batch of the fixture's input shape."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from models.fixtures_paths import FIXTURE_DIR
from ort_ops.training.interface import GRAD_PREFIX

N_CLASSES = 10


def load(name: str) -> onnx.ModelProto:
    """``tests/fixtures/<name>.onnx``."""
    return onnx.load(str(FIXTURE_DIR / f"{name}.onnx"))


def params_as_inputs(model: onnx.ModelProto) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """The trained parameters (initializers with a ``grad.<name>`` output) turned into graph inputs
    (after the data inputs), and their values."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    grads = {o.name[len(GRAD_PREFIX):] for o in model.graph.output if o.name.startswith(GRAD_PREFIX)}
    values = {}
    for init in [i for i in model.graph.initializer if i.name in grads]:
        values[init.name] = numpy_helper.to_array(init)
        model.graph.initializer.remove(init)
        model.graph.input.append(helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))
    return model, values


def batch(model: onnx.ModelProto, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A standard-normal ``input`` and class ``target`` of the graph's input shapes."""
    inputs = {i.name: i for i in model.graph.input}
    shape = [d.dim_value for d in inputs["input"].type.tensor_type.shape.dim]
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape).astype(np.float32), rng.integers(0, N_CLASSES, shape[0]).astype(np.int64)


def training_case(name: str, seed: int = 0):
    """``(graph with parameters as inputs, parameter values, (input, target))`` of fixture ``name``."""
    model, params = params_as_inputs(load(name))
    return model, params, batch(model, seed)
