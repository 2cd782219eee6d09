"""ONNX Runtime's own training stack (``onnxruntime-training``) with the op library: ELU models.

ORT-training has no gradient for ``Elu`` ("The gradient builder has not been registered: Elu").
:func:`register_gradients` registers one: ``Elu``'s input gradient is ``ai.ortops::EluGrad(dY, Y)``
(its output gradient and its output), computed by this package's kernels.

    import ort_ops.ort_training as ot
    from onnxruntime.training import artifacts

    ot.generate_artifacts(forward_model, requires_grad=["W1", "b1"], loss=artifacts.LossType.MSELoss,
                          optimizer=artifacts.OptimType.AdamW, artifact_directory="art")
    state, module, optimizer = ot.load_training("art")          # onnxruntime.training.api objects
    loss = module(x, target); optimizer.step(); module.lazy_reset_grad()

:func:`generate_artifacts` wraps ``onnxruntime.training.artifacts.generate_artifacts``: it calls
:func:`register_gradients`, adds the ``ai.ortops`` opset import to the forward model, passes the
op library (``custom_op_library=``), and afterwards gives each ``EluGrad`` the ``alpha`` of its
forward ``Elu`` (a registered gradient's attributes are fixed, one definition for every Elu).
:func:`load_training` makes the ``CheckpointState``, ``Module`` and ``Optimizer`` with the library
registered in the session options.

The reverse route, for a forward ONNX model without PyTorch source: :func:`to_trainer_graph` turns
the artifacts' training model into a graph of this project's interface (``loss`` and
``grad.<param>`` outputs, parameters as inputs) that :class:`ort_ops.training.Trainer` runs, with
:func:`initial_parameters` as its starting values.

Needs onnxruntime-training 1.19.2 (the last release: Python <= 3.11, onnx <= 1.17, torch
importable); ``scripts/setup.sh`` builds such an environment in ``.venv-ort-training``.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence

import numpy as np
import onnx
from onnx import numpy_helper

from ort_ops.domain import DOMAIN, OPSET_VERSION
from ort_ops.library import get_library_path, register
from ort_ops.training.interface import GRAD_PREFIX, LOSS_NAME

__all__ = ["ELU_GRADIENT", "generate_artifacts", "initial_parameters", "load_training", "register_gradients",
           "set_elu_grad_alphas", "to_trainer_graph", "with_ortops_opset"]

# The gradient definitions, in ORT-training's notation: (op_type or (op_type, domain), inputs,
# outputs). GO(i) is the i-th output's gradient, O(i) the i-th output, GI(i) the i-th input's
# gradient. alpha is not given here: set_elu_grad_alphas copies it from each forward Elu.
ELU_GRADIENT = {"::Elu": [(("EluGrad", DOMAIN), ["GO(0)", "O(0)"], ["GI(0)"])]}
ELU_DEFAULT_ALPHA = 1.0  # the ONNX Elu's default

# the training model's names (onnxruntime.training.onnxblock): gradient accumulation
_ACCUMULATOR = ("com.microsoft", "InPlaceAccumulatorV2")
_LAZY_RESET = "lazy_reset_grad"
_GRAD_SUFFIX = "_grad"
_BUFFER_SUFFIX = "_grad.accumulation.buffer"

_registered = False


def _pybind():
    try:
        from onnxruntime.capi import _pybind_state as C
    except ImportError as error:
        raise ImportError(f"ort_ops.ort_training needs onnxruntime-training: {error}") from error
    if not hasattr(C, "register_gradient_definition"):
        import onnxruntime

        raise ImportError(f"this onnxruntime ({onnxruntime.__version__}) is not a training build "
                          "(no register_gradient_definition): pip install onnxruntime-training-cpu==1.19.2 "
                          "in an environment of its own (scripts/setup.sh: .venv-ort-training)")
    return C


def register_gradients() -> None:
    """Register the gradients of :data:`ELU_GRADIENT` with ORT-training (once per process;
    further calls do nothing). Raises ``ImportError`` outside an onnxruntime-training install."""
    global _registered
    if _registered:
        return
    C = _pybind()
    for key, nodes in ELU_GRADIENT.items():
        definitions = []
        for op, inputs, outputs in nodes:
            node = C.GradientNodeDefinition()
            node.op_type, node.domain = op if isinstance(op, tuple) else (op, "")
            node.inputs, node.outputs, node.attributes = list(inputs), list(outputs), []
            definitions.append(node)
        C.register_gradient_definition(key, definitions)
    _registered = True


def with_ortops_opset(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model``, or a copy of it that imports the ``ai.ortops`` opset (the gradient graph's
    EluGrad nodes are in that domain)."""
    versions = {o.domain: o.version for o in model.opset_import}
    if DOMAIN in versions:
        if versions[DOMAIN] != OPSET_VERSION:
            raise ValueError(f"the model imports {DOMAIN} opset {versions[DOMAIN]}, the op library has "
                             f"{OPSET_VERSION}")
        return model
    model = copy.deepcopy(model)
    model.opset_import.append(onnx.helper.make_opsetid(DOMAIN, OPSET_VERSION))
    return model


def set_elu_grad_alphas(training_model: onnx.ModelProto) -> int:
    """Give every ``ai.ortops::EluGrad`` of ``training_model`` the ``alpha`` of the ``Elu`` whose
    output is its ``activations`` input (in place); returns how many were set. ``ValueError``
    names an EluGrad whose activations no Elu produces."""
    producers = {out: node for node in training_model.graph.node for out in node.output}
    count = 0
    for node in training_model.graph.node:
        if node.domain != DOMAIN or node.op_type != "EluGrad":
            continue
        forward = producers.get(node.input[1]) if len(node.input) > 1 else None
        if forward is None or forward.domain not in ("", "ai.onnx") or forward.op_type != "Elu":
            found = "nothing" if forward is None else f"{forward.domain or 'ai.onnx'}::{forward.op_type}"
            raise ValueError(f"EluGrad node {node.name!r}: its activations {list(node.input[1:2])} should be an "
                             f"Elu's output, produced by {found}")
        alpha = next((a.f for a in forward.attribute if a.name == "alpha"), ELU_DEFAULT_ALPHA)
        del node.attribute[:]
        node.attribute.append(onnx.helper.make_attribute("alpha", alpha))
        count += 1
    return count


def generate_artifacts(model: onnx.ModelProto | str | os.PathLike, requires_grad: Sequence[str] | None = None,
                       *, artifact_directory: str | os.PathLike, prefix: str = "", **kwargs) -> None:
    """``onnxruntime.training.artifacts.generate_artifacts`` for models with ``Elu``: see the module
    docstring. The other keyword arguments (``loss``, ``optimizer``, ``frozen_params``, ...) go to
    ORT unchanged; ``custom_op_library`` is this package's library; ``ort_format`` is not supported
    (the alphas are set in the ONNX training model after ORT wrote it)."""
    if kwargs.get("ort_format"):
        raise ValueError("ort_format=True is not supported: EluGrad's alpha is set in the ONNX training model "
                         "afterwards (convert it with onnxruntime.tools.convert_onnx_models_to_ort then)")
    if "custom_op_library" in kwargs:
        raise ValueError("custom_op_library is set by ort_ops.ort_training.generate_artifacts (the op library)")
    from onnxruntime.training import artifacts

    register_gradients()
    if not isinstance(model, onnx.ModelProto):
        model = onnx.load(os.fspath(model))
    artifacts.generate_artifacts(with_ortops_opset(model), requires_grad=list(requires_grad or []) or None,
                                 artifact_directory=artifact_directory, prefix=prefix,
                                 custom_op_library=get_library_path(), **kwargs)
    path = os.path.join(os.fspath(artifact_directory), f"{prefix}training_model.onnx")
    training = onnx.load(path)
    if set_elu_grad_alphas(training):
        onnx.save(training, path)


def load_training(artifact_directory: str | os.PathLike, *, prefix: str = "", device: str = "cpu",
                  session_options=None):
    """``(CheckpointState, Module, Optimizer or None)`` of the artifacts in ``artifact_directory``
    (``onnxruntime.training.api``), with the op library registered in ``session_options`` (default:
    new ones). The optimizer is ``None`` when the artifacts have no optimizer model."""
    import onnxruntime as ort
    from onnxruntime.training import api

    def path(name):
        return os.path.join(os.fspath(artifact_directory), f"{prefix}{name}")

    so = register(session_options if session_options is not None else ort.SessionOptions())
    state = api.CheckpointState.load_checkpoint(path("checkpoint"))
    eval_model = path("eval_model.onnx")
    module = api.Module(path("training_model.onnx"), state, eval_model if os.path.isfile(eval_model) else None,
                        device=device, session_options=so)
    optimizer = api.Optimizer(path("optimizer_model.onnx"), module) if os.path.isfile(
        path("optimizer_model.onnx")) else None
    return state, module, optimizer


def initial_parameters(forward_model: onnx.ModelProto, names: Sequence[str]) -> dict[str, np.ndarray]:
    """The initializers ``names`` of the forward model, as arrays (the Trainer's starting values)."""
    inits = {t.name: t for t in forward_model.graph.initializer}
    missing = [n for n in names if n not in inits]
    if missing:
        raise ValueError(f"parameters {missing} are not initializers of the forward model "
                         f"(initializers: {sorted(inits)})")
    return {n: numpy_helper.to_array(inits[n]).copy() for n in names}


def to_trainer_graph(training_model: onnx.ModelProto | str | os.PathLike,
                     params: Sequence[str] | None = None) -> onnx.ModelProto:
    """The artifacts' training model as a training graph of this project's interface
    (:mod:`ort_ops.training.interface`), for :class:`ort_ops.training.Trainer`.

    ORT's training model takes the parameters as inputs and accumulates each gradient ``<p>_grad``
    into an input buffer (``com.microsoft::InPlaceAccumulatorV2``, with ``lazy_reset_grad``). Here
    the accumulators, their buffers and ``lazy_reset_grad`` are removed; the outputs become the
    loss as ``loss`` and ``grad.<p>`` per parameter (default: every accumulated one, in the
    model's order). ``com.microsoft::Scale`` (the mean losses' gradient) is lowered to standard
    ops, so an MSE/L1 training graph runs on any ONNX Runtime with the op library; other
    ORT-training ops (e.g. the cross-entropy losses' ``SoftmaxCrossEntropyLossInternal``) stay
    and need onnxruntime-training.
    """
    if not isinstance(training_model, onnx.ModelProto):
        training_model = onnx.load(os.fspath(training_model))
    model = copy.deepcopy(training_model)
    graph = model.graph
    accumulators = [n for n in graph.node if (n.domain, n.op_type) == _ACCUMULATOR]
    accumulated = {}
    for node in accumulators:
        buffer, grad = node.input[0], node.input[1]
        if not buffer.endswith(_BUFFER_SUFFIX) or not grad.endswith(_GRAD_SUFFIX):
            raise ValueError(f"accumulator node {node.name!r}: inputs {list(node.input)} are not "
                             f"'<param>{_BUFFER_SUFFIX}', '<param>{_GRAD_SUFFIX}'")
        accumulated[grad[: -len(_GRAD_SUFFIX)]] = grad
    names = list(accumulated) if params is None else list(params)
    unknown = [p for p in names if p not in accumulated]
    if unknown:
        raise ValueError(f"parameters {unknown} have no gradient in the training model "
                         f"(gradients of: {list(accumulated)})")
    inputs = {i.name for i in graph.input}
    missing = [p for p in names if p not in inputs]
    if missing:
        raise ValueError(f"parameters {missing} are not inputs of the training model")
    if len(graph.output) < 1 or graph.output[0].name.endswith(".accumulation.out"):
        raise ValueError(f"the training model's first output should be the loss, outputs: "
                         f"{[o.name for o in graph.output]}")
    loss = graph.output[0]
    remove = {id(n) for n in accumulators}
    kept = [n for n in graph.node if id(n) not in remove]
    used = {i for n in kept for i in n.input}
    if _LAZY_RESET in used:
        raise ValueError(f"{_LAZY_RESET!r} is used by nodes other than the gradient accumulators")
    if loss.name != LOSS_NAME:
        kept.append(onnx.helper.make_node("Identity", [loss.name], [LOSS_NAME], name="ortops_loss"))
    kept += [onnx.helper.make_node("Identity", [accumulated[p]], [GRAD_PREFIX + p], name=f"ortops_grad_{p}")
             for p in names]
    del graph.node[:]
    graph.node.extend(_lower_scale(kept, _onnx_opset(model)))
    produced = {o for n in graph.node for o in n.output}
    value_info = [v for v in graph.value_info if v.name in produced]
    del graph.value_info[:]
    graph.value_info.extend(value_info)
    by_name = {i.name: i for i in graph.input}
    new_inputs = [i for i in graph.input if i.name != _LAZY_RESET and not i.name.endswith(_BUFFER_SUFFIX)]
    del graph.input[:]
    graph.input.extend(new_inputs)
    loss_info = onnx.helper.make_tensor_value_info(LOSS_NAME, loss.type.tensor_type.elem_type, [])
    grads = [onnx.helper.make_tensor_value_info(GRAD_PREFIX + p, by_name[p].type.tensor_type.elem_type,
                                                [d.dim_value for d in by_name[p].type.tensor_type.shape.dim])
             for p in names]
    del graph.output[:]
    graph.output.extend([loss_info, *grads])
    return model


def _onnx_opset(model: onnx.ModelProto) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


def _lower_scale(nodes: list, opset: int) -> list:
    """``com.microsoft::Scale(x, s)`` -> ``Mul(x, CastLike(f, x))`` with ``f = float(s)``, or
    ``1 / float(s)`` with ``scale_down`` (ORT-training's CPU kernel: the factor formed in float,
    cast to x's type, one multiply). Needs opset >= 15 (CastLike); below, Scale stays."""
    if opset < 15:
        return nodes
    out = []
    for node in nodes:
        if (node.domain, node.op_type) != ("com.microsoft", "Scale"):
            out.append(node)
            continue
        x, scale = node.input[0], node.input[1]
        down = next((a.i for a in node.attribute if a.name == "scale_down"), 0)
        tag = f"ortops_scale_{len(out)}_{node.output[0]}"
        factor = f"{tag}/factor"
        out.append(onnx.helper.make_node("Cast", [scale], [factor], name=f"{tag}/cast", to=onnx.TensorProto.FLOAT))
        if down:
            out.append(onnx.helper.make_node("Reciprocal", [factor], [f"{tag}/inverse"], name=f"{tag}/reciprocal"))
            factor = f"{tag}/inverse"
        out.append(onnx.helper.make_node("CastLike", [factor, x], [f"{tag}/typed"], name=f"{tag}/cast_like"))
        out.append(onnx.helper.make_node("Mul", [x, f"{tag}/typed"], list(node.output), name=f"{tag}/mul"))
    return out
