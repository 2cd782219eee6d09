"""Export a PyTorch module + loss as an ONNX *training* graph (loss and parameter gradients).

Route (torch 2.13 / onnxscript 0.7): ``torch.export.export`` of a wrapper computing the loss
-> ``torch.export.experimental._export_forward_backward`` (joint forward + backward graph)
-> ``torch.onnx.export(..., dynamo=True)``.

The trap this module works around: ``torch.onnx.export`` keeps only ``USER_OUTPUT`` output
specs, so the joint graph's ``LOSS_OUTPUT`` / ``GRADIENT_TO_PARAMETER`` specs are relabelled
as user outputs and the module-call ``out_spec`` made a flat tuple; otherwise every gradient
and the whole backward are silently dropped.

Graph interface:

- inputs: the model inputs, then the loss targets (names from ``input_names``, by default
  ``input``/``input_1``... and ``target``/``target_1``...).
- outputs: ``loss``, then ``grad.<name>`` for every trainable parameter in
  ``module.named_parameters()`` order (e.g. ``grad.fc1.weight``).
- trainable parameters, named exactly as in ``module.named_parameters()``: initializers by
  default (a self-contained graph), or graph inputs after the data inputs with
  ``params_as_inputs=True`` -- **the documented way for training**, where updated parameters
  are fed every step. Frozen parameters and buffers stay initializers.

During export the trainable parameters are always graph inputs, so the exporter's optimiser
cannot constant-fold them into unnamed tensors (it would otherwise fold e.g. ``Transpose(W)``
of a Linear weight into a new initializer and lose the parameter's name). Shapes are static:
the graph is valid for the example inputs' shapes only.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import logging
import os
import warnings
from collections.abc import Callable, Sequence

import numpy as np
import onnx
import torch
import torch.utils._pytree as pytree
from torch import nn
from torch.export.graph_signature import OutputKind, OutputSpec

from ort_ops.domain import IR_VERSION
from ort_ops.files import atomic_write_bytes
from ort_ops.training import dropout_masks as mask_inputs
from ort_ops.training import export_report, translations
from ort_ops.training.dropout import DropoutMasks
from ort_ops.training.interface import GRAD_PREFIX, LOSS_NAME, grad_name, new_name

STACK_TRACE_KEY = "pkg.torch.onnx.stack_trace"
_WRAPPED = "model"  # attribute of the loss wrapper holding the user's module

class _WithLoss(nn.Module):
    """``forward(*inputs, *targets, *masks) -> (loss_fn(module(*inputs), *targets),)``; with
    ``n_masks`` set (not ``None``), every train-mode dropout uses the next of the ``n_masks``
    masks (:class:`ort_ops.training.dropout.DropoutMasks`)."""

    def __init__(self, module: nn.Module, loss_fn: Callable, n_inputs: int):
        super().__init__()
        setattr(self, _WRAPPED, module)
        self.loss_fn = loss_fn
        self.n_inputs = n_inputs
        self.n_masks: int | None = None

    def forward(self, *args):
        n_data = len(args) - (self.n_masks or 0)
        replay = DropoutMasks(args[n_data:]) if self.n_masks is not None else contextlib.nullcontext()
        with replay:
            out = getattr(self, _WRAPPED)(*args[: self.n_inputs])
            return (self.loss_fn(out, *args[self.n_inputs : n_data]),)


def _as_tuple(x) -> tuple:
    if x is None:
        return ()
    if isinstance(x, torch.Tensor):
        return (x,)
    return tuple(x)


def _default_names(n_inputs: int, n_targets: int) -> list[str]:
    def names(base, n):
        return [base] if n == 1 else [base if i == 0 else f"{base}_{i}" for i in range(n)]

    return names("input", n_inputs) + names("target", n_targets)


def prepare(module: nn.Module, example_inputs, targets=None, dtype: torch.dtype | None = None):
    """Copy ``module`` (cast to ``dtype`` if given) and the inputs/targets as the export sees them.

    Floating-point inputs and targets are cast to ``dtype``; integer ones (class indices) are
    kept. Returns ``(module_copy, inputs, targets)``.
    """
    inputs, tgts = _as_tuple(example_inputs), _as_tuple(targets)
    for i, t in enumerate(inputs + tgts):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"example input/target {i} must be a torch.Tensor, got {type(t).__name__}")
    module = copy.deepcopy(module)
    inputs = tuple(t.detach().clone() for t in inputs)  # a model may write to its inputs
    tgts = tuple(t.detach().clone() for t in tgts)
    if dtype is not None:
        if not dtype.is_floating_point:
            raise ValueError(f"dtype must be a floating-point torch dtype, got {dtype}")
        module = module.to(dtype)

        def cast(t):
            return t.to(dtype) if t.is_floating_point() else t

        inputs, tgts = tuple(map(cast, inputs)), tuple(map(cast, tgts))
    return module, inputs, tgts


def trainable_parameters(module: nn.Module) -> dict[str, torch.Tensor]:
    """``name -> tensor`` of the parameters that get a gradient output, in module order."""
    return {n: p for n, p in module.named_parameters() if p.requires_grad}


def _check_loss(loss) -> None:
    if not isinstance(loss, torch.Tensor):
        raise ValueError(f"loss_fn must return a scalar tensor, got {type(loss).__name__}")
    if loss.dim() != 0:
        raise ValueError(
            f"loss_fn must return a scalar tensor (0-d), got shape {tuple(loss.shape)}; "
            "reduce it, e.g. with .mean()"
        )
    if not loss.is_floating_point():
        raise ValueError(f"loss_fn must return a floating-point scalar, got dtype {loss.dtype}")


LOSS, GRAD, BUFFER = "loss", "grad", "buffer"  # the kinds of the joint graph's outputs we keep


def _joint_program(wrapper: nn.Module, args: tuple) -> tuple[torch.export.ExportedProgram, list, torch.fx.Graph]:
    """The joint graph with loss, gradients and buffer updates relabelled as (flat) user outputs.

    Returns the program; per user output ``(kind, name)``: ``(LOSS, None)``, ``(GRAD, parameter
    name)`` or ``(BUFFER, buffer name)`` (a buffer ``forward`` mutates: BatchNorm's running
    statistics in train mode; the exporter checks the graph's outputs against the buffer
    mutations, so dropping those breaks the export); and the forward graph it came from (its
    nodes know their modules; the joint graph's do not).
    """
    from torch.export.experimental import _export_forward_backward

    from ort_ops.training import attention

    ep = attention.decompose(torch.export.export(wrapper, args, strict=False), _WRAPPED)  # SDPA -> math
    joint = _export_forward_backward(ep, joint_loss_index=0)
    translations.check_supported(joint.graph, _WRAPPED, forward=ep.graph)
    specs, kinds = [], []
    prefix = _WRAPPED + "."
    for spec in joint.graph_signature.output_specs:
        if spec.kind == OutputKind.LOSS_OUTPUT:
            kind = (LOSS, None)
        elif spec.kind == OutputKind.GRADIENT_TO_PARAMETER:
            if not spec.target.startswith(prefix):
                continue  # a parameter of the loss module itself: not part of the model
            kind = (GRAD, spec.target[len(prefix):])
        elif spec.kind == OutputKind.BUFFER_MUTATION:
            if not spec.target.startswith(prefix):
                raise ValueError(f"loss_fn changes a buffer of its own ({spec.target!r}) in forward: only the "
                                 "model's buffers can be carried as state; pass a loss function that does not")
            kind = (BUFFER, spec.target[len(prefix):])
        else:
            continue  # other mutations (of inputs) are not graph outputs
        kinds.append(kind)
        specs.append(OutputSpec(kind=OutputKind.USER_OUTPUT, arg=spec.arg, target=None))
    joint.graph_signature.output_specs[:] = specs
    flat = pytree.tree_structure(tuple(range(len(specs))))
    for entry in joint.module_call_graph:
        if entry.fqn == "" and entry.signature is not None:
            entry.signature.out_spec = flat
    return joint, kinds, ep.graph


def export_training_graph(
    module: nn.Module,
    example_inputs,
    loss_fn: Callable,
    path: str | os.PathLike | None = None,
    *,
    targets=None,
    optimize: bool = True,
    dtype: torch.dtype | None = None,
    params_as_inputs: bool = False,
    input_names: Sequence[str] | None = None,
    verify: bool = True,
    keep_stack_traces: bool = False,
    dropout_masks: bool = True,
    report: bool = False,
) -> onnx.ModelProto | tuple[onnx.ModelProto, export_report.ExportReport]:
    """Export ``loss_fn(module(*example_inputs), *targets)`` and its parameter gradients to ONNX.

    Outputs are ``loss`` and ``grad.<param name>`` per trainable parameter; parameters are
    initializers named like ``module.named_parameters()``, or graph inputs with
    ``params_as_inputs=True`` (use this for training). A buffer that ``forward`` changes
    (BatchNorm's running statistics in train mode) is state: an input named like the buffer with
    the module's value (as given, before any forward) as its initializer, and an output
    ``new.<buffer name>`` (:mod:`ort_ops.training.interface`); other buffers are initializers.
    ``dtype`` exports a converted copy (e.g. ``torch.float16``; the user's module is never
    modified). ``optimize`` runs the exporter's onnxscript optimiser. ``verify`` runs the graph in
    ONNX Runtime (CPU) and compares the loss, every gradient and every buffer update with eager
    autograd (:mod:`ort_ops.training.verify`), raising ``ValueError`` on mismatch. ``path`` is
    written atomically. Shapes are static. The
    exporter's per-node Python stack traces (local file paths) are dropped unless
    ``keep_stack_traces``; its other node metadata is kept. ``dropout_masks``: every
    train-mode dropout (``p > 0``) takes its mask from a bool graph input ``dropout_mask.<k>``
    (after the targets), which the Trainer draws per step from its ``dropout_seed``
    (:mod:`ort_ops.training.dropout_masks`: reproducible on any EP and across resumed runs, and
    verifiable); ``False`` keeps the exporter's ONNX ``Dropout`` (random, not reproducible).
    ``report=True`` returns ``(model, ExportReport)``: the aten ops translated by this toolkit and
    by PyTorch's exporter, and the buffers carried as state
    (:class:`ort_ops.training.export_report.ExportReport`).
    """
    from ort_ops.training import verify as verify_mod

    if importlib.util.find_spec("onnxscript") is None:
        raise ImportError("export_training_graph needs onnxscript (torch's ONNX exporter uses it): "
                          "pip install 'ort-ops[training]'")
    mod, inputs, tgts = prepare(module, example_inputs, targets, dtype)
    if not inputs:
        raise ValueError("example_inputs is empty: the model needs at least one input tensor")
    params = trainable_parameters(mod)
    if not params:
        raise ValueError(
            f"module {type(module).__name__} has no trainable parameters "
            "(none with requires_grad=True): there is no gradient to export"
        )
    names = list(input_names) if input_names is not None else _default_names(len(inputs), len(tgts))
    if len(names) != len(inputs) + len(tgts) or len(set(names)) != len(names):
        raise ValueError(
            f"input_names must be {len(inputs) + len(tgts)} distinct names "
            f"(inputs then targets), got {names}"
        )
    _check_batch_norms(mod)
    # the buffers as given: the eager check below runs forward, which advances BatchNorm's statistics
    initial_buffers = {n: b.detach().clone() for n, b in mod.named_buffers()}
    clash = set(names) & (set(params) | {LOSS_NAME} | {GRAD_PREFIX + n for n in params}
                          | set(initial_buffers) | {new_name(n) for n in initial_buffers})
    if clash:
        raise ValueError(f"input_names {sorted(clash)} clash with parameter, buffer or output names")

    wrapper = _WithLoss(mod, loss_fn, len(inputs))
    recorder = DropoutMasks() if dropout_masks else contextlib.nullcontext()
    with recorder:  # the dropout calls of a train-mode forward: their p and shapes
        loss = wrapper(*inputs, *tgts)[0]
    sites = [mask_inputs.MaskSite(mask_inputs.mask_name(k), p, shape)
             for k, (p, shape, _) in enumerate(recorder.recorded)] if dropout_masks else []
    mask_names = [s.name for s in sites]
    if set(mask_names) & (set(names) | set(params)):
        raise ValueError(f"input or parameter names clash with the dropout mask inputs {mask_names}")
    masks = tuple(torch.from_numpy(m) for m in mask_inputs.mask_list(mask_inputs.draw(sites, 0, 1), sites))
    if dropout_masks:
        wrapper.n_masks = len(masks)
    _check_loss(loss)
    grads = torch.autograd.grad(loss, list(params.values()), allow_unused=True)
    missing = [n for n, g in zip(params, grads) if g is None]
    if missing:
        raise ValueError(
            f"parameters {missing} receive no gradient from the loss (unused in forward?); "
            "set requires_grad=False on them to export"
        )
    del loss, grads
    _restore_buffers(mod, initial_buffers)

    with _quiet_exporter():
        model, export_info = _export(wrapper, mod, inputs, tgts + masks, names + mask_names, params,
                                     params_as_inputs, optimize, initial_buffers)
    mask_inputs.write_metadata(model, sites)
    _restore_buffers(mod, initial_buffers)  # (tracing does not change them today; verify starts from these)
    if not keep_stack_traces:
        _drop_metadata(model, STACK_TRACE_KEY)
    model.ir_version = IR_VERSION
    model.producer_name = "ort_ops.training"
    onnx.checker.check_model(model)

    if verify:
        check = verify_mod.compare_with_eager(model, mod, inputs, loss_fn, targets=tgts, masks=masks)
        if not check.ok:
            raise ValueError(f"exported training graph does not match eager autograd:\n{check}")
    if path is not None:
        save_atomic(model, path)
    return (model, export_info) if report else model


def _check_batch_norms(module: nn.Module) -> None:
    """``ValueError`` naming the module for a train-mode BatchNorm with ``momentum=None`` (a
    cumulative average: its factor ``1 / num_batches_tracked`` is read as a Python number in
    ``forward``, which ``torch.export`` cannot trace)."""
    for path, m in module.named_modules():
        if (isinstance(m, nn.modules.batchnorm._BatchNorm) and m.training and m.track_running_stats
                and m.momentum is None):
            raise ValueError(f"module {path or '<model>'!r} ({type(m).__name__}) has momentum=None (a cumulative "
                             "moving average) in train mode, which torch.export cannot trace (it reads "
                             "num_batches_tracked as a Python number): set a float momentum (e.g. 0.1), or "
                             "export in eval() mode with frozen statistics")


def _restore_buffers(module: nn.Module, values: dict[str, torch.Tensor]) -> None:
    """Put ``values`` back into ``module``'s buffers (in place, as ``forward`` changed them)."""
    with torch.no_grad():
        for name, buffer in module.named_buffers():
            buffer.copy_(values[name])


def _export(wrapper, mod, inputs, tgts, names, params, params_as_inputs, optimize, initial_buffers):
    """The joint forward/backward program of ``wrapper``, exported to ONNX and rewired.

    Returns the model and the :class:`~ort_ops.training.export_report.ExportReport` of the export.
    """
    joint, kinds, forward = _joint_program(wrapper, inputs + tgts)
    grads = [n for kind, n in kinds if kind == GRAD]
    if sorted(grads) != sorted(params):
        raise AssertionError(f"joint graph gradients {grads} do not match parameters {list(params)}")
    losses = sum(kind == LOSS for kind, _ in kinds)
    if losses != 1:
        raise ValueError(f"expected exactly one loss output in the joint graph, got {losses}")
    mutated = {n for kind, n in kinds if kind == BUFFER}
    state_buffers = [n for n in initial_buffers if n in mutated]  # in module.named_buffers() order

    try:
        program = torch.onnx.export(
            joint,
            inputs + tgts,
            dynamo=True,
            optimize=False,
            verbose=False,
            custom_translation_table=translations.CUSTOM_TRANSLATION_TABLE,
        )
    except Exception as e:  # the exporter's errors are long reports: surface the cause
        cause = _root_cause(e)
        raise ValueError(f"torch.onnx.export failed on the training graph: {cause}"
                         f"{translations.untranslated_hint(cause, [joint.graph, forward], _WRAPPED)}") from e
    translated = getattr(program, "exported_program", None) or joint  # after the exporter's decompositions
    all_params = dict(mod.named_parameters())
    _rewire(program.model, names, kinds, list(params), list(all_params), state_buffers, optimize, program)
    model = program.model_proto
    frozen = {n: p.detach() for n, p in all_params.items() if n not in params or not params_as_inputs}
    model = _inputs_to_initializers(model, frozen)
    # buffer state: inputs whose initializer of the same name is the starting value
    model = _inputs_to_initializers(model, {n: initial_buffers[n] for n in state_buffers}, keep_inputs=True)
    report = export_report.build(translated.graph, translations.CUSTOM_TRANSLATION_TABLE, model,
                                 {n: initial_buffers[n] for n in state_buffers},
                                 {n: b for n, b in initial_buffers.items() if n not in mutated})
    return model, report


# What torch 2.13's exporter says on every export that is not about the user's model: a
# FutureWarning from its own pytree internals, and "torchvision is not installed" log lines.
_EXPORTER_NOISE = (r"`isinstance\(treespec, LeafSpec\)` is deprecated",
                   r".*_export_forward_backward.*", r".*export_for_training.*deprecated")
_EXPORTER_LOGGERS = ("torch.onnx._internal.exporter._registration",)
# nn.RNN/GRU/LSTM re-assign their own ``_flat_weights`` list while being traced (PyTorch's
# internals, not the user's code): a UserWarning on every recurrent model. Other tensor
# attributes assigned during export (a user's own state outside buffers) still warn.
_RNN_FLAT_WEIGHTS_NOISE = (r"The tensor attributes? (self\.[\w.]*_flat_weights\[\d+\](, )?)+ (was|were) "
                           r"assigned during export")


@contextlib.contextmanager
def _quiet_exporter():
    """Silence the exporter's own noise (by message and logger); the user's warnings pass."""
    loggers = [logging.getLogger(name) for name in _EXPORTER_LOGGERS]
    levels = [lg.level for lg in loggers]
    with warnings.catch_warnings():
        for message in _EXPORTER_NOISE:
            warnings.filterwarnings("ignore", message=message, category=FutureWarning)
            warnings.filterwarnings("ignore", message=message, category=DeprecationWarning)
        warnings.filterwarnings("ignore", message=_RNN_FLAT_WEIGHTS_NOISE, category=UserWarning)
        for lg in loggers:
            lg.setLevel(logging.ERROR)
        try:
            yield
        finally:
            for lg, level in zip(loggers, levels):
                lg.setLevel(level)


def _root_cause(error: BaseException) -> str:
    """The innermost exception's first line (e.g. ``No ONNX function found for aten...``)."""
    while error.__cause__ is not None:
        error = error.__cause__
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0] if lines else ''}"


def _rewire(ir_model, names, kinds, param_order, all_params, state_buffers, optimize, program) -> None:
    """Name inputs/outputs, move every parameter and buffer state to graph inputs, optionally optimise.

    Inputs after the data: trainable parameters (``param_order``), then frozen ones (the caller
    turns those back into initializers: as inputs, the optimiser cannot fold them away), then the
    buffers ``forward`` changes (``state_buffers``). Outputs: ``loss``, ``grad.<param>``,
    ``new.<buffer>``.
    """
    import onnx_ir as ir

    graph = ir_model.graph
    prefix = _WRAPPED + "."
    data_inputs = list(graph.inputs)
    if len(data_inputs) != len(names):
        raise AssertionError(f"exporter produced {len(data_inputs)} inputs, expected {len(names)}")
    for value, name in zip(data_inputs, names):
        value.name = name
    # Parameters and buffer state: initializers named "model.<name>" -> graph inputs named "<name>".
    lifted = []
    ordered = list(param_order) + [n for n in all_params if n not in param_order] + list(state_buffers)
    for pname in ordered:
        if pname not in param_order and pname not in state_buffers and prefix + pname not in graph.initializers:
            continue  # a frozen parameter the exporter dropped
        value = graph.initializers.pop(prefix + pname)
        value.const_value = None
        value.name = pname
        lifted.append(value)
    graph.inputs.extend(lifted)
    # Other buffers and constants keep their initializers; drop the wrapper prefix.
    for key in [k for k in graph.initializers if k.startswith(prefix)]:
        value = graph.initializers.pop(key)
        value.name = key[len(prefix) :]
        graph.initializers[value.name] = value

    by_kind = dict(zip(kinds, graph.outputs))
    ordered_out = ([(LOSS_NAME, by_kind[(LOSS, None)])] + [(grad_name(n), by_kind[(GRAD, n)]) for n in param_order]
                   + [(new_name(n), by_kind[(BUFFER, n)]) for n in state_buffers])
    graph.outputs.clear()
    seen = set()
    for out_name, value in ordered_out:
        if value.is_graph_input() or value.is_initializer() or id(value) in seen:
            # An output that is an input, or repeated, gets its own Identity.
            node = ir.Node("", "Identity", [value], num_outputs=1)
            graph.append(node)
            new = node.outputs[0]
            new.shape, new.dtype = value.shape, value.dtype
            value = new
        seen.add(id(value))
        value.name = out_name
        graph.outputs.append(value)
    if optimize:
        program.optimize()


def _inputs_to_initializers(model: onnx.ModelProto, params: dict[str, torch.Tensor], *,
                            keep_inputs: bool = False) -> onnx.ModelProto:
    """Give the graph inputs ``params`` initializers holding their values; they stop being
    inputs unless ``keep_inputs`` (then the initializer is the input's default value)."""
    graph = model.graph
    if not keep_inputs:
        keep = [i for i in graph.input if i.name not in params]
        del graph.input[:]
        graph.input.extend(keep)
    for name, tensor in params.items():
        array = tensor.cpu().numpy() if tensor.dtype != torch.bfloat16 else None
        if array is None:
            import ml_dtypes

            array = tensor.cpu().view(torch.uint16).numpy().view(ml_dtypes.bfloat16)
        # (np.ascontiguousarray would make a 0-d buffer such as num_batches_tracked 1-d)
        graph.initializer.append(onnx.numpy_helper.from_array(np.array(array, order="C", copy=True), name))
    return model


def _drop_metadata(model: onnx.ModelProto, key: str) -> None:
    """Remove metadata entry ``key`` from every node (graph and local functions)."""
    for nodes in [model.graph.node, *(f.node for f in model.functions)]:
        for node in nodes:
            keep = [p for p in node.metadata_props if p.key != key]
            if len(keep) != len(node.metadata_props):
                del node.metadata_props[:]
                node.metadata_props.extend(keep)


def save_atomic(model: onnx.ModelProto, path: str | os.PathLike) -> None:
    """Write ``model`` to ``path`` atomically, with the umask's permissions (no partial file)."""
    atomic_write_bytes(path, model.SerializeToString())
