"""Train with an ONNX training graph in ONNX Runtime: parameters and optimizer state stay in ORT.

    from ort_ops.training.trainer import Trainer, SGD, Adam

    trainer = Trainer(graph, init_params, SGD(lr=0.1, momentum=0.9))       # CPU EP
    losses = trainer.fit(batches)              # batches: tuples of arrays (graph data inputs)
    trainer.save_checkpoint("ckpt.npz")        # atomic; Trainer(...).load_checkpoint(...) resumes
    params = trainer.parameters()              # NumPy copies, for inspection

The training graph is what ``ort_ops.training.export_training_graph(..., params_as_inputs=True)`` (then
optionally ``rewrite.fuse_elu_grad``) produces: data inputs, then parameter inputs named like
the parameters; outputs ``loss`` and ``grad.<param>``. It is checked against the initial
parameters before anything runs (:func:`check_training_graph`, raising ``ValueError``).

Each step is one ORT run with IOBinding of the step graph (:mod:`ort_ops.training.step_graph`): the
training graph followed by the optimizer's update graph (:mod:`ort_ops.training.optim`, one graph
for all parameters; for float32 parameters the fused one, one ``ai.ortops::SGDUpdate`` /
``AdamUpdate`` per parameter). Parameters and optimizer state (the fused graph's per-step scalars
included) are bound as inputs, gradients to preallocated outputs, and the new parameters and
state to a second set of preallocated values; the two sets swap every step. Only the batch goes
in and the scalar loss comes out. With ``device="cann"`` these values live on the NPU.
``set_learning_rate`` changes the learning rate from the next step on.

Buffer state (a module buffer ``forward`` changes: BatchNorm's running statistics in train mode;
:mod:`ort_ops.training.interface`) is bound like the parameters, each step's ``new.<buffer>``
output becoming the next step's input; the optimizer does not see it. It starts from the graph's
initializers (the module's buffers at export) or ``Trainer(..., buffers=...)``, keeps its own
dtype (``num_batches_tracked`` is int64), and is in checkpoints (format 2: ``buffer/<name>``).

Sessions come from ``session_factory(model) -> InferenceSession`` (default: the op library
registered, ``providers`` or the CPU EP); plug in ``cann_ep.session`` for the CANN EP.

Device-resident values on CANN (onnxruntime-cann 1.24.4): a parameter bound on the NPU whose
first consumer is a CPU node (the forward Gemms) is copied by IOBinding at bind time into
ordinary (pageable) CPU memory with ``aclrtMemcpyAsync`` on the session's CANN stream, and no
synchronisation follows (the CANN EP has no ``Sync()``, so ``synchronize_inputs()`` does
nothing). That is correct because the CANN runtime documents that ``aclrtMemcpyAsync`` with
non-page-locked host memory returns only after the copy is complete. The ACL simulator used to
treat such a copy as a stream-ordered asynchronous one (and to snapshot pageable host->device
copies at call time, ahead of earlier work on the stream), which made ``device="cann"`` diverge
(NaN, or wrong from the first step with ``ACLSIM_STREAM_DELAY_US``); fixed in ``cann_ep/sim``,
the results now match the CPU EP (``tests/cann/test_training_on_cann.py``, with and without the
delay). The EP relies on that documented runtime behaviour: older CANN (8.0) documentation
calls async copies with memory not from ``aclrtMallocHost`` unpredictable on training products.
"""

from __future__ import annotations

import copy
import json
import math
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import onnx
import onnxruntime as ort

import ort_ops
from ort_ops.files import atomic_write
from ort_ops.input_ranges import check_labels, label_ranges
from ort_ops.training import dropout_masks as mask_inputs
from ort_ops.training.interface import GRAD_PREFIX, LOSS_NAME, buffer_state_names, new_name, without_buffer_defaults
from ort_ops.training.optim import MAX_STEPS, SGD, Adam, Optimizer
from ort_ops.training.step_graph import build_step_graph

CHECKPOINT_FORMAT = 2  # what save_checkpoint writes: 2 added the buffer state ("buffer/<name>" entries)
READABLE_FORMATS = (1, 2)  # 1: no buffer state (written before buffers were state)

__all__ = ["Adam", "Checkpoint", "CheckpointError", "NonFiniteLossError", "SGD", "Optimizer", "Trainer",
           "check_training_graph", "cpu_session_factory", "initial_buffers", "load_checkpoint_arrays",
           "read_checkpoint"]

NONFINITE_POLICIES = ("raise", "skip")


class CheckpointError(ValueError):
    """A checkpoint file that cannot be read or does not fit the trainer (the message names the
    file and what is wrong). The trainer it was loaded into is unchanged."""


class NonFiniteLossError(FloatingPointError):
    """A training step whose loss is NaN or infinite; the trainer keeps the parameters and
    optimizer state from before that step (its update is discarded)."""

    def __init__(self, step: int, loss: float):
        self.step, self.loss = step, loss
        super().__init__(
            f"the loss is {loss} at training step {step}: its update was discarded and the parameters "
            f"and optimizer state are those after step {step - 1}. Non-finite values in the batch or "
            "a learning rate that is too high are the usual causes; Trainer(on_nonfinite='skip') "
            "skips such steps instead of raising")

SessionFactory = Callable[[onnx.ModelProto], ort.InferenceSession]


def cpu_session_factory(providers: Sequence | None = None) -> SessionFactory:
    """``model -> InferenceSession`` with the op library registered on ``providers`` (CPU EP)."""
    providers = list(providers) if providers is not None else ["CPUExecutionProvider"]

    def make(model: onnx.ModelProto) -> ort.InferenceSession:
        so = ort_ops.register(ort.SessionOptions())
        return ort.InferenceSession(model.SerializeToString(), so, providers=providers)

    return make


def _shape(value_info) -> tuple | None:
    """Static shape of a graph input/output (``None`` entries for symbolic dims)."""
    t = value_info.type.tensor_type
    if not t.HasField("shape"):
        return None
    return tuple(d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim)


def _shape_matches(declared: tuple | None, actual: tuple) -> bool:
    if declared is None:
        return True
    return len(declared) == len(actual) and all(d is None or d == a for d, a in zip(declared, actual))


def check_training_graph(model: onnx.ModelProto, params: Mapping[str, np.ndarray]) -> list[str]:
    """Check ``model`` is a training graph for ``params``; return its data input names.

    Raises ``ValueError`` naming the problem: no ``loss`` output or a non-scalar one, a
    parameter that is not a graph input, has no ``grad.<name>`` output, or whose shape/dtype
    differs from the graph's; a ``grad.<name>`` output without an initial value; a parameter
    that is also buffer state (has a ``new.<name>`` output). Buffer-state inputs are not data
    inputs (:func:`initial_buffers` checks their values).
    """
    if not params:
        raise ValueError("no initial parameters given: nothing to train")
    inputs = {i.name: i for i in model.graph.input}
    inits = {t.name for t in model.graph.initializer}
    outputs = {o.name: o for o in model.graph.output}
    if LOSS_NAME not in outputs:
        raise ValueError(f"training graph has no {LOSS_NAME!r} output (outputs: {sorted(outputs)})")
    loss_shape = _shape(outputs[LOSS_NAME])
    if loss_shape is not None and loss_shape not in ((), (1,)):
        raise ValueError(f"training graph output {LOSS_NAME!r} must be a scalar, has shape {loss_shape}")
    for name, array in params.items():
        array = np.asarray(array)
        if name not in inputs:
            hint = " (it is an initializer: export with params_as_inputs=True)" if name in inits else ""
            raise ValueError(f"parameter {name!r} is not an input of the training graph{hint}")
        declared = _shape(inputs[name])
        if not _shape_matches(declared, array.shape):
            raise ValueError(f"parameter {name!r}: the training graph expects shape {declared}, "
                             f"the initial value has shape {array.shape}")
        elem = inputs[name].type.tensor_type.elem_type
        want = onnx.helper.tensor_dtype_to_np_dtype(elem)
        if array.dtype != want:
            raise ValueError(f"parameter {name!r}: the training graph expects dtype {want}, "
                             f"the initial value has dtype {array.dtype}")
        if array.dtype not in (np.float16, np.float32, np.float64):
            raise ValueError(f"parameter {name!r}: only float16/float32/float64 parameters can be trained, "
                             f"got {array.dtype}")
        grad = GRAD_PREFIX + name
        if grad not in outputs:
            raise ValueError(f"training graph has no gradient output {grad!r} for parameter {name!r}")
        if not _shape_matches(_shape(outputs[grad]), array.shape):
            raise ValueError(f"gradient output {grad!r} has shape {_shape(outputs[grad])}, "
                             f"parameter {name!r} has shape {array.shape}")
    orphans = [o for o in outputs if o.startswith(GRAD_PREFIX) and o[len(GRAD_PREFIX):] not in params]
    if orphans:
        raise ValueError(f"gradient outputs {orphans} have no initial parameter value "
                         f"(given: {sorted(params)})")
    dtypes = {np.asarray(a).dtype for a in params.values()}
    if len(dtypes) != 1:
        raise ValueError(f"all parameters must share one dtype, got {sorted(map(str, dtypes))}")
    buffers = buffer_state_names(model)
    both = sorted(set(buffers) & set(params))
    if both:
        raise ValueError(f"parameters {both} are also buffer state of the training graph (it has outputs "
                         f"{[new_name(n) for n in both]}): a value is trained or carried, not both")
    return [n for n in inputs if n not in params and n not in inits and n not in buffers]


def initial_buffers(model: onnx.ModelProto, given: Mapping[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """The starting values of training graph ``model``'s buffer state (inputs with a ``new.<name>``
    output, :mod:`ort_ops.training.interface`): ``given`` where it names them, else the input's
    initializer (what :func:`~ort_ops.training.export_training_graph` stores: the module's buffers).

    ``ValueError`` naming the buffer for a name that is not buffer state, a buffer without a value,
    or a value whose shape or dtype differs from the graph's input.
    """
    names = buffer_state_names(model)
    given = {n: _as_array(n, a) for n, a in (given or {}).items()}
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise ValueError(f"buffers {unknown} are not buffer state of the training graph (its buffers: {names})")
    inits = {t.name: t for t in model.graph.initializer}
    inputs = {i.name: i for i in model.graph.input}
    values = {}
    for name in names:
        if name in given:
            value = given[name]
        elif name in inits:
            value = onnx.numpy_helper.to_array(inits[name])
        else:
            raise ValueError(f"buffer {name!r} of the training graph has no initial value (no initializer of that "
                             "name): pass it as Trainer(..., buffers={name: value})")
        declared = _shape(inputs[name])
        want = onnx.helper.tensor_dtype_to_np_dtype(inputs[name].type.tensor_type.elem_type)
        if not _shape_matches(declared, value.shape) or value.dtype != want:
            raise ValueError(f"buffer {name!r}: the training graph expects {want}{list(declared or ())}, the initial "
                             f"value is {value.dtype}{list(value.shape)}")
        values[name] = np.array(value, copy=True)
    return values


class Trainer:
    """Training steps of ``graph`` in ORT with ``optimizer``; see the module docstring.

    ``params``: initial values ``name -> array`` (copied). ``session_factory`` or
    ``providers`` choose the execution providers (default CPU). ``device``/``device_id``:
    where parameters, gradients and optimizer state live (``"cpu"``, ``"cann"``, ...).
    ``progress``: ``None`` shows a bar only when stderr is a terminal. ``on_nonfinite``: what a
    step whose loss is NaN/inf does: ``"raise"`` :class:`NonFiniteLossError` or ``"skip"`` it
    (counted in ``skipped_steps``); either way its update is discarded. ``fused_update``: the
    optimizer's fused update graph (``None``: for float32 parameters) or the unfused one (e.g. on a
    SoC without CANN's ApplyMomentum / ApplyAdamW). ``dropout_seed``: the graph's dropout masks
    (``dropout_mask.<k>`` inputs) at step ``s`` are :func:`ort_ops.training.dropout_masks.draw`
    ``(seed, s)``, fed by the trainer (:meth:`dropout_masks_for_step`); checkpoints store it.
    ``buffers``: starting values of the graph's buffer state by name (default: the graph's own,
    :func:`initial_buffers`); the step feeds each step's ``new.<buffer>`` to the next, the
    optimizer leaves them alone.
    """

    def __init__(
        self,
        graph: onnx.ModelProto | str | os.PathLike,
        params: Mapping[str, np.ndarray],
        optimizer: Optimizer,
        *,
        session_factory: SessionFactory | None = None,
        providers: Sequence | None = None,
        device: str = "cpu",
        device_id: int = 0,
        progress: bool | None = None,
        on_nonfinite: str = "raise",
        fused_update: bool | None = None,
        dropout_seed: int = 0,
        buffers: Mapping[str, np.ndarray] | None = None,
    ):
        if not isinstance(graph, onnx.ModelProto):
            graph = onnx.load(os.fspath(graph))
        if not isinstance(optimizer, Optimizer):
            kind = f"{type(optimizer).__module__}.{type(optimizer).__qualname__}"
            hint = (" (PyTorch's optimizer: pass ort_ops.training.SGD / Adam with the same hyperparameters, e.g. "
                    "SGD(lr=0.1, momentum=0.9); the update runs inside ONNX Runtime)"
                    if type(optimizer).__module__.startswith("torch") else "")
            raise TypeError(f"optimizer must be ort_ops.training.SGD or ort_ops.training.Adam, got {kind}{hint}")
        if session_factory is not None and providers is not None:
            raise ValueError("pass session_factory or providers, not both")
        if on_nonfinite not in NONFINITE_POLICIES:
            raise ValueError(f"on_nonfinite must be one of {NONFINITE_POLICIES}, got {on_nonfinite!r}")
        self.on_nonfinite = on_nonfinite
        self.skipped_steps = 0
        params = {n: _as_array(n, a) for n, a in params.items()}
        self.dropout_seed = mask_inputs.check_seed(dropout_seed)
        self.mask_sites = mask_inputs.sites(graph)
        masks = {s.name for s in self.mask_sites}
        self.data_inputs = [n for n in check_training_graph(graph, params) if n not in masks]
        start_buffers = initial_buffers(graph, buffers)
        self.buffer_names = list(start_buffers)
        self.buffer_specs = {n: (a.shape, a.dtype) for n, a in start_buffers.items()}
        self.training_graph = graph
        self._data_specs = {i.name: i for i in graph.graph.input if i.name in self.data_inputs}
        self._label_ranges = label_ranges(graph, self.data_inputs)
        self.names = list(params)
        self.shapes = {n: a.shape for n, a in params.items()}
        self.dtype = next(iter(params.values())).dtype
        # a copy: set_learning_rate changes the trainer's, not the caller's
        self.optimizer = copy.deepcopy(optimizer)
        self.device, self.device_id = device, device_id
        self.progress = progress
        self.step_count = 0
        factory = session_factory or cpu_session_factory(providers)
        # fused (float32): the per-step scalars are state the graph updates itself
        self.fused = optimizer.fuses(self.dtype) if fused_update is None else bool(fused_update)
        self.update_graph = optimizer.build_graph(self.shapes, self.dtype, fused=self.fused)
        # the step binds every buffer: their initializers (starting values) are not needed there
        self.step_graph = build_step_graph(without_buffer_defaults(graph), self.update_graph, self.names)
        self.session = factory(self.step_graph)
        self._grads = {n: self._alloc(self.shapes[n]) for n in self.names}
        loss_shape = _shape(next(o for o in graph.graph.output if o.name == LOSS_NAME)) or ()
        self._loss = ort.OrtValue.ortvalue_from_shape_and_type(list(loss_shape), self.dtype)
        state = {f"{slot}.{n}": np.zeros(self.shapes[n], self.dtype)
                 for slot in optimizer.slots for n in self.names}
        self._state_keys = list(state)
        self._scalar_keys = list(self.optimizer.scalar_states(0)) if self.fused else []
        self._sets, self._bindings = self._make_values(params, state, self._scalar_state(0), start_buffers)

    # -- values and bindings -------------------------------------------------------------
    def _alloc(self, shape, dtype=None) -> ort.OrtValue:
        dtype = self.dtype if dtype is None else dtype
        if self.device == "cpu":
            return ort.OrtValue.ortvalue_from_shape_and_type(list(shape), dtype)
        # (onnxruntime-cann cannot allocate device values from a shape: copy zeros over)
        return self._put(np.zeros(shape, dtype))

    def _put(self, array: np.ndarray) -> ort.OrtValue:
        # A fresh copy: a CPU OrtValue wraps the array's memory, which the updates overwrite.
        array = np.array(array, dtype=array.dtype if isinstance(array, np.ndarray) else self.dtype,
                         order="C", copy=True)
        return ort.OrtValue.ortvalue_from_numpy(array, self.device, self.device_id)

    def _scalar_state(self, steps: int) -> dict[str, np.ndarray]:
        """The fused graph's scalar state after ``steps`` updates ({} for the unfused graph)."""
        return self.optimizer.scalar_states(steps) if self.fused else {}

    def _make_values(self, params: Mapping[str, np.ndarray], state: Mapping[str, np.ndarray],
                     scalars: Mapping[str, np.ndarray], buffers: Mapping[str, np.ndarray]):
        """Both value sets and their bindings from NumPy arrays (set 0 holds the values). Buffer
        state keeps its own dtype (BatchNorm's ``num_batches_tracked`` is int64); every value ``k``
        has its next value in output ``new.<k>``: the update graph's, or the training graph's for
        buffers."""
        params = {n: np.asarray(params[n], dtype=self.dtype) for n in self.names}
        state = {k: np.asarray(v, dtype=self.dtype) for k, v in state.items()}
        buffers = {n: np.asarray(buffers[n], dtype=self.buffer_specs[n][1]) for n in self.buffer_names}
        values = {**params, **state, **scalars, **buffers}
        keys = list(values)
        cur = {k: self._put(v) for k, v in values.items()}
        nxt = {k: self._alloc(v.shape, v.dtype) for k, v in values.items()}
        sets = [cur, nxt]
        bindings = []
        for parity in (0, 1):
            src, dst = sets[parity], sets[1 - parity]
            b = self.session.io_binding()
            for k in keys:
                b.bind_ortvalue_input(k, src[k])
                b.bind_ortvalue_output(new_name(k), dst[k])
            for n in self.names:
                b.bind_ortvalue_output(GRAD_PREFIX + n, self._grads[n])
            b.bind_ortvalue_output(LOSS_NAME, self._loss)
            bindings.append(b)
        return sets, bindings

    def _check_batch(self, batch) -> dict[str, np.ndarray]:
        if isinstance(batch, Mapping):
            missing = [n for n in self.data_inputs if n not in batch]
            if missing:
                raise ValueError(f"batch lacks graph inputs {missing} (got {sorted(batch)})")
            feeds = {n: np.asarray(batch[n]) for n in self.data_inputs}
        else:
            batch = list(batch)
            if len(batch) != len(self.data_inputs):
                raise ValueError(f"batch has {len(batch)} arrays, the training graph takes "
                                 f"{len(self.data_inputs)}: {self.data_inputs}")
            feeds = {n: np.asarray(a) for n, a in zip(self.data_inputs, batch)}
        for n, a in feeds.items():
            spec = self._data_specs[n]
            declared = _shape(spec)
            if not _shape_matches(declared, a.shape):
                raise ValueError(f"batch input {n!r} has shape {a.shape}, the training graph was "
                                 f"exported for {declared} (shapes are fixed: drop the last "
                                 "partial batch or export per batch size)")
            want = onnx.helper.tensor_dtype_to_np_dtype(spec.type.tensor_type.elem_type)
            if a.dtype != want:
                raise ValueError(f"batch input {n!r} has dtype {a.dtype}, the graph expects {want}")
            feeds[n] = np.ascontiguousarray(a)
        check_labels(feeds, self._label_ranges)
        return feeds

    # -- training ------------------------------------------------------------------------
    def step(self, batch) -> float:
        """One training step on ``batch`` (arrays in graph data-input order, or a dict)."""
        feeds = self._check_batch(batch)
        parity = self.step_count % 2
        b = self._bindings[parity]
        # Inputs are re-bound every step: when a value's device differs from where the session
        # consumes it, IOBinding copies it at bind time (a snapshot, not a reference).
        src = self._sets[parity]
        for k in self.names + self._state_keys + self._scalar_keys + self.buffer_names:
            b.bind_ortvalue_input(k, src[k])
        feeds.update(self.dropout_masks_for_step(self.step_count + 1))
        for n, a in feeds.items():
            b.bind_cpu_input(n, a)
        # bind_cpu_input wraps the arrays' memory: keep them alive until the run is done. (The
        # fused graph has no such inputs: its scalars are state, advanced by the graph itself.)
        scalars = {} if self.fused else {n: np.array(v, dtype=self.dtype)
                                         for n, v in self.optimizer.step_scalars(self.step_count + 1).items()}
        for n, a in scalars.items():
            b.bind_cpu_input(n, a)
        b.synchronize_inputs()  # syncs the EPs of the inputs' consumers (a no-op for CANN, see above)
        self.session.run_with_iobinding(b)
        b.synchronize_outputs()
        loss = float(self._loss.numpy().reshape(()))
        if not math.isfinite(loss):
            # The update went to the other value set (the scalar state's too); not advancing keeps
            # the current one.
            if self.on_nonfinite == "raise":
                raise NonFiniteLossError(self.step_count + 1, loss)
            self.skipped_steps += 1
            return loss
        self.step_count += 1
        return loss

    def dropout_masks_for_step(self, step: int) -> dict[str, np.ndarray]:
        """The dropout masks the trainer feeds at training step ``step`` (1-based; ``{}`` for a
        graph without dropout): replay them in PyTorch with
        :class:`ort_ops.training.dropout.DropoutMasks`."""
        return mask_inputs.draw(self.mask_sites, self.dropout_seed, step) if self.mask_sites else {}

    def fit(self, batches: Iterable, *, max_steps: int | None = None, progress: bool | None = None,
            desc: str = "train") -> list[float]:
        """Run a step per batch (at most ``max_steps``); returns the per-step losses.

        Shows a tqdm bar with the loss when ``progress`` (default: the trainer's setting, else
        only when stderr is a terminal).
        """
        if max_steps is not None and (isinstance(max_steps, bool) or not isinstance(max_steps, int)
                                      or max_steps < 0):
            raise ValueError(f"max_steps must be None or an int >= 0, got {max_steps!r}")
        show = progress if progress is not None else self.progress
        if show is None:
            show = sys.stderr.isatty()
        total = len(batches) if hasattr(batches, "__len__") else None
        if max_steps is not None:
            total = max_steps if total is None else min(total, max_steps)
        losses: list[float] = []
        with _progress_bar(total=total, desc=desc, disable=not show) as bar:
            for batch in batches:
                if max_steps is not None and len(losses) >= max_steps:
                    break
                losses.append(self.step(batch))
                bar.update(1)
                bar.set_postfix(loss=f"{losses[-1]:.4f}", refresh=False)
        return losses

    def set_learning_rate(self, lr: float) -> None:
        """Use learning rate ``lr`` from the next step on (a finite number >= 0 that the update
        graph's dtype holds; ``ValueError`` otherwise, and nothing changes). Fused update: the
        scalar state holding lr is read back and put again with the new lr (one copy each way, with
        ``device="cann"``) now, none per step. Checkpoints store it."""
        changed = copy.deepcopy(self.optimizer)
        changed.lr = changed.check_lr(lr)
        changed.check_dtype(self.dtype)
        parity = self.step_count % 2
        # A new value in place of the current one (onnxruntime-cann cannot write into a device
        # OrtValue): it is the next step's input, and the other binding's output target.
        # fused: the scalar state holding lr at index 0 (Adam's bias state does not depend on it),
        # the rest as the graph left it; unfused: none
        name = self.optimizer.scalars_name
        fresh = {}
        if self.fused:
            state = np.array(self._sets[parity][name].numpy())
            state[0] = changed.lr
            fresh[name] = self._put(state)
        for k, value in fresh.items():
            self._sets[parity][k] = value
            self._bindings[1 - parity].bind_ortvalue_output("new." + k, value)
        self.optimizer = changed

    # -- inspection and checkpoints ------------------------------------------------------
    def _current(self) -> dict[str, ort.OrtValue]:
        return self._sets[self.step_count % 2]

    def parameters(self) -> dict[str, np.ndarray]:
        """NumPy copies of the current parameters."""
        cur = self._current()
        return {n: np.array(cur[n].numpy()) for n in self.names}

    def buffers(self) -> dict[str, np.ndarray]:
        """NumPy copies of the current buffer state (e.g. BatchNorm's running statistics)."""
        cur = self._current()
        return {n: np.array(cur[n].numpy()) for n in self.buffer_names}

    def state_dict(self) -> dict[str, np.ndarray]:
        """Parameters and buffer state by name, NumPy copies: what ``module.load_state_dict(...,
        strict=False)`` and :func:`~ort_ops.training.export.export_inference_graph` take."""
        return {**self.parameters(), **self.buffers()}

    def gradients(self) -> dict[str, np.ndarray]:
        """NumPy copies of the gradients of the last step (taken at that step's parameters)."""
        return {n: np.array(self._grads[n].numpy()) for n in self.names}

    def optimizer_state(self) -> dict[str, np.ndarray]:
        """NumPy copies of the optimizer state, keyed ``<slot>.<param name>``."""
        cur = self._current()
        return {k: np.array(cur[k].numpy()) for k in self._state_keys}

    def save_checkpoint(self, path: str | os.PathLike, *, allow_nonfinite: bool = False) -> None:
        """Write parameters, optimizer state, buffer state and step to ``path`` (.npz) atomically: the
        file is the old checkpoint or the new one, never a part (:func:`ort_ops.files.atomic_write`).

        ``ValueError`` (and nothing written) when a parameter, state or buffer value is NaN/inf, unless
        ``allow_nonfinite``: a diverged run must not replace a good checkpoint by accident.
        """
        meta = {"format": CHECKPOINT_FORMAT, "step": self.step_count,
                "optimizer": self.optimizer.config(), "params": self.names, "dropout_seed": self.dropout_seed,
                "buffers": self.buffer_names}
        if self.fused:  # the graph's own scalar states (JSON floats round-trip float64 exactly)
            cur = self._current()
            meta["scalars"] = {k: np.asarray(cur[k].numpy(), np.float64).tolist() for k in self._scalar_keys}
        arrays = {f"param/{n}": a for n, a in self.parameters().items()}
        arrays.update({f"state/{k}": a for k, a in self.optimizer_state().items()})
        arrays.update({f"buffer/{n}": a for n, a in self.buffers().items()})
        if not allow_nonfinite:
            for key, a in arrays.items():
                if not np.isfinite(a).all():
                    raise ValueError(f"not saving {os.fspath(path)}: {key} holds {int((~np.isfinite(a)).sum())} "
                                     f"non-finite value(s) at step {self.step_count} (pass allow_nonfinite=True "
                                     "to save it anyway)")
        arrays["meta"] = np.array(json.dumps(meta))
        atomic_write(path, lambda f: np.savez(f, **arrays))

    def load_checkpoint(self, path: str | os.PathLike) -> None:
        """Resume from a checkpoint of the same graph and optimizer.

        All or nothing: names, shapes, dtypes and finiteness of every parameter, state and buffer
        value are checked first; on any problem :class:`CheckpointError` (a ``ValueError``) names the
        file and what is wrong, and the trainer is left as it was. The learning rate is the
        checkpoint's (it may have been changed by :meth:`set_learning_rate`); the other
        hyperparameters must equal the trainer's. The fused update's scalar states are the
        checkpoint's (checked against the step count and the hyperparameters), or, for a checkpoint
        without them (of the unfused update, or of an earlier version), formed in closed form from
        the step count and the learning rate (PyTorch's ``beta ** step``); either way in O(1). The
        dropout seed is the checkpoint's (if it has one), so the resumed run draws the masks the
        uninterrupted run would have. Buffer state must be in the checkpoint with the trainer's
        names, shapes and dtypes: a checkpoint without it (format 1, from before buffers were
        state) is refused for a graph that carries buffers, as its statistics would be the wrong
        ones.
        """
        path = os.fspath(path)
        ckpt = read_checkpoint(path)
        meta, params, state, buffers = ckpt.meta, ckpt.params, ckpt.state, ckpt.buffers

        def bad(what: str) -> CheckpointError:
            return CheckpointError(f"{path}: {what}")

        mine = json.loads(json.dumps(self.optimizer.config()))
        theirs = meta["optimizer"]
        if {**theirs, "lr": None} != {**mine, "lr": None}:
            raise bad(f"optimizer {theirs} differs from the trainer's {self.optimizer.config()}")
        loaded = copy.deepcopy(self.optimizer)
        try:
            loaded.lr = loaded.check_lr(theirs.get("lr"))
            loaded.check_dtype(self.dtype)
        except ValueError as exc:
            raise bad(f"optimizer learning rate: {exc}") from None
        if sorted(params) != sorted(self.names):
            raise bad(f"parameters {sorted(params)} differ from the trainer's {sorted(self.names)}")
        if sorted(state) != sorted(self._state_keys):
            raise bad(f"optimizer state {sorted(state)} differs from the trainer's {sorted(self._state_keys)}")
        for kind, values in (("parameter", params), ("optimizer state", state)):
            for key, a in values.items():
                shape = self.shapes[key if kind == "parameter" else key.split(".", 1)[1]]
                if a.shape != shape or a.dtype != self.dtype:
                    raise bad(f"{kind} {key!r} is {a.dtype}{list(a.shape)}, expected {self.dtype}{list(shape)}")
                if not np.isfinite(a).all():
                    raise bad(f"{kind} {key!r} holds {int((~np.isfinite(a)).sum())} non-finite value(s)")
        if sorted(buffers) != sorted(self.buffer_names):
            if not buffers:
                raise bad(f"it has no buffer state (format {meta['format']}), the trainer's graph carries buffers "
                          f"{self.buffer_names}: resuming would restart their statistics; resume from a checkpoint "
                          "saved with them")
            raise bad(f"buffers {sorted(buffers)} differ from the trainer's {sorted(self.buffer_names)}")
        for name, a in buffers.items():
            shape, dtype = self.buffer_specs[name]
            if a.shape != shape or a.dtype != dtype:
                raise bad(f"buffer {name!r} is {a.dtype}{list(a.shape)}, expected {dtype}{list(shape)}")
            if not np.isfinite(a).all():
                raise bad(f"buffer {name!r} holds {int((~np.isfinite(a)).sum())} non-finite value(s)")
        step = meta["step"]
        try:  # the checkpoint's seed: the resumed run draws the masks the original run would have
            seed = mask_inputs.check_seed(meta.get("dropout_seed", self.dropout_seed))
        except ValueError as exc:
            raise bad(f"meta 'dropout_seed': {exc}") from None
        scalars = {}
        if self.fused:
            stored = meta.get("scalars")
            try:
                scalars = loaded.resume_scalar_states(
                    step, None if stored is None else {k: np.asarray(v) for k, v in stored.items()})
            except ValueError as exc:
                raise bad(f"the fused update's scalar state (meta 'scalars'): {exc}") from None
        sets, bindings = self._make_values(params, state, scalars, buffers)  # may fail: nothing is replaced yet
        if step % 2:
            sets.reverse()
            bindings.reverse()
        self._sets, self._bindings, self.step_count = sets, bindings, step
        self.optimizer = loaded
        self.dropout_seed = seed


def _read_npz(z, bad) -> tuple[dict, dict]:
    files = set(z.files)
    if "meta" not in files:
        raise bad("no 'meta' entry")
    try:
        raw = z["meta"]
        meta = json.loads(str(raw.reshape(()))) if raw.dtype.kind == "U" and raw.size == 1 else None
    except Exception as exc:
        raise bad(f"the 'meta' entry is unreadable ({type(exc).__name__}: {exc})") from None
    if not isinstance(meta, dict):
        raise bad("the 'meta' entry is not a JSON object")
    fmt = meta.get("format")
    if isinstance(fmt, bool) or fmt not in READABLE_FORMATS:
        raise bad(f"format {fmt!r}, expected one of {list(READABLE_FORMATS)}")
    step = meta.get("step")
    if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step <= MAX_STEPS:
        raise bad(f"step {step!r} is not an int in [0, 2**53]")
    scalars = meta.get("scalars")
    if scalars is not None and not (isinstance(scalars, dict) and all(
            isinstance(v, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)
            for v in scalars.values())):
        raise bad(f"the 'scalars' in 'meta' are not lists of numbers by name: {scalars!r:.200}")
    if not isinstance(meta.get("optimizer"), dict):
        raise bad("no optimizer configuration in 'meta'")
    names = meta.get("params")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise bad("no parameter list in 'meta'")
    kinds = ("param/", "state/", "buffer/") if fmt >= 2 else ("param/", "state/")
    unknown = sorted(f for f in files if f != "meta" and not f.startswith(kinds))
    if unknown:
        raise bad(f"unexpected entries {unknown}")
    if sorted(names) != sorted(f[len("param/"):] for f in files if f.startswith("param/")):
        raise bad(f"the parameters listed in 'meta' ({sorted(names)}) are not the ones stored")
    buffers = meta.get("buffers", [])
    if not isinstance(buffers, list) or not all(isinstance(n, str) for n in buffers):
        raise bad(f"the 'buffers' in 'meta' are not a list of names: {buffers!r:.200}")
    if sorted(buffers) != sorted(f[len("buffer/"):] for f in files if f.startswith("buffer/")):
        raise bad(f"the buffers listed in 'meta' ({sorted(buffers)}) are not the ones stored")
    arrays = {}
    for key in sorted(files - {"meta"}):
        try:
            arrays[key] = z[key]
        except Exception as exc:
            raise bad(f"entry {key!r} is corrupt ({type(exc).__name__}: {exc})") from None
        if arrays[key].dtype.kind not in "fiu":
            raise bad(f"entry {key!r} has dtype {arrays[key].dtype}, not a number type")
    return meta, arrays


def _as_array(name: str, value) -> np.ndarray:
    """A parameter's initial value as NumPy: arrays, lists, and torch tensors (detached, copied)."""
    if type(value).__module__.startswith("torch"):  # without importing torch
        try:
            value = value.detach().cpu().numpy()
        except (AttributeError, TypeError, RuntimeError) as exc:
            raise TypeError(f"parameter {name!r}: cannot read the torch value ({exc})") from None
    return np.asarray(value)


def _progress_bar(total, desc, disable):
    """A tqdm bar when tqdm is installed (``pip install ort-ops[training]``), else none."""
    if not disable:
        try:
            from tqdm.auto import tqdm

            return tqdm(total=total, desc=desc, leave=False)
        except ImportError:
            pass

    class _Silent:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def update(self, n):
            pass

        def set_postfix(self, **kwargs):
            pass

    return _Silent()


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint's contents: ``meta`` (step, optimizer, names), parameters, optimizer state
    (``<slot>.<param>``) and buffer state, each ``name -> array``."""

    meta: dict
    params: dict[str, np.ndarray]
    state: dict[str, np.ndarray]
    buffers: dict[str, np.ndarray]


def read_checkpoint(path: str | os.PathLike) -> Checkpoint:
    """The :class:`Checkpoint` written by :meth:`Trainer.save_checkpoint` at ``path``.

    :class:`CheckpointError` naming the file and the problem for anything that is not such a
    checkpoint (not a zip, truncated, corrupt entries, malformed metadata); ``FileNotFoundError``
    if there is no file.
    """
    path = os.fspath(path)

    def bad(what: str) -> CheckpointError:
        return CheckpointError(f"{path}: not a training checkpoint: {what}")

    with open(path, "rb") as f:  # closed on every path (np.load leaves a file open when the zip is bad)
        try:
            z = np.load(f, allow_pickle=False)
        except Exception as exc:
            raise bad(f"cannot read it as .npz ({type(exc).__name__}: {exc})") from None
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise bad("it holds a single array, not the .npz archive save_checkpoint writes")
        with z:
            meta, arrays = _read_npz(z, bad)

    def entries(prefix: str) -> dict[str, np.ndarray]:
        return {k[len(prefix):]: a for k, a in arrays.items() if k.startswith(prefix)}

    return Checkpoint(meta, entries("param/"), entries("state/"), entries("buffer/"))


def load_checkpoint_arrays(path: str | os.PathLike) -> tuple[dict, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """``(meta, params, optimizer state)`` from a checkpoint written by :meth:`Trainer.save_checkpoint`
    (:func:`read_checkpoint` has the buffer state too); errors as :func:`read_checkpoint`'s."""
    ckpt = read_checkpoint(path)
    return ckpt.meta, ckpt.params, ckpt.state
