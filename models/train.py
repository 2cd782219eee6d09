"""Train with an ONNX training graph in ONNX Runtime: parameters and optimizer state stay in ORT.

    from models.train import Trainer, SGD, Adam

    trainer = Trainer(graph, init_params, SGD(lr=0.1, momentum=0.9))       # CPU EP
    losses = trainer.fit(batches)              # batches: tuples of arrays (graph data inputs)
    trainer.save_checkpoint("ckpt.npz")        # atomic; Trainer(...).load_checkpoint(...) resumes
    params = trainer.parameters()              # NumPy copies, for inspection

The training graph is what ``models.export_training_graph(..., params_as_inputs=True)`` (then
optionally ``rewrite.fuse_elu_grad``) produces: data inputs, then parameter inputs named like
the parameters; outputs ``loss`` and ``grad.<param>``. It is checked against the initial
parameters before anything runs (:func:`check_training_graph`, raising ``ValueError``).

Each step is one ORT run with IOBinding of the step graph (:mod:`models.step_graph`): the
training graph followed by the optimizer's update graph (:mod:`models.train_optim`, one graph
for all parameters). Parameters and optimizer state are bound as inputs, gradients to
preallocated outputs, and the new parameters and state to a second set of preallocated values;
the two sets swap every step. Only the batch goes in and the scalar loss comes out. With
``device="cann"`` these values live on the NPU.

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

import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import onnx
import onnxruntime as ort

import ort_ops
from models.step_graph import build_step_graph
from models.train_optim import SGD, Adam, Optimizer, from_config

LOSS_NAME = "loss"  # the names models.export uses (not imported: that module needs torch)
GRAD_PREFIX = "grad."
CHECKPOINT_FORMAT = 1

__all__ = ["Adam", "SGD", "Optimizer", "Trainer", "check_training_graph", "cpu_session_factory",
           "load_checkpoint_arrays"]

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
    differs from the graph's; a ``grad.<name>`` output without an initial value.
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
        if array.dtype not in (np.float32, np.float64):
            raise ValueError(f"parameter {name!r}: only float32/float64 parameters can be trained, "
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
    return [n for n in inputs if n not in params and n not in inits]


class Trainer:
    """Training steps of ``graph`` in ORT with ``optimizer``; see the module docstring.

    ``params``: initial values ``name -> array`` (copied). ``session_factory`` or
    ``providers`` choose the execution providers (default CPU). ``device``/``device_id``:
    where parameters, gradients and optimizer state live (``"cpu"``, ``"cann"``, ...).
    ``progress``: ``None`` shows a bar only when stderr is a terminal.
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
    ):
        if not isinstance(graph, onnx.ModelProto):
            graph = onnx.load(os.fspath(graph))
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"optimizer must be an SGD or Adam instance, got {type(optimizer).__name__}")
        if session_factory is not None and providers is not None:
            raise ValueError("pass session_factory or providers, not both")
        params = {n: np.asarray(a) for n, a in params.items()}
        self.data_inputs = check_training_graph(graph, params)
        self._data_specs = {i.name: i for i in graph.graph.input if i.name in self.data_inputs}
        self.names = list(params)
        self.shapes = {n: a.shape for n, a in params.items()}
        self.dtype = next(iter(params.values())).dtype
        self.optimizer = optimizer
        self.device, self.device_id = device, device_id
        self.progress = progress
        self.step_count = 0
        factory = session_factory or cpu_session_factory(providers)
        self.update_graph = optimizer.build_graph(self.shapes, self.dtype)
        self.step_graph = build_step_graph(graph, self.update_graph, self.names)
        self.session = factory(self.step_graph)
        self._grads = {n: self._alloc(self.shapes[n]) for n in self.names}
        loss_shape = _shape(next(o for o in graph.graph.output if o.name == LOSS_NAME)) or ()
        self._loss = ort.OrtValue.ortvalue_from_shape_and_type(list(loss_shape), self.dtype)
        state = {f"{slot}.{n}": np.zeros(self.shapes[n], self.dtype)
                 for slot in optimizer.slots for n in self.names}
        self._set_values(params, state)

    # -- values and bindings -------------------------------------------------------------
    def _alloc(self, shape) -> ort.OrtValue:
        if self.device == "cpu":
            return ort.OrtValue.ortvalue_from_shape_and_type(list(shape), self.dtype)
        # (onnxruntime-cann cannot allocate device values from a shape: copy zeros over)
        return self._put(np.zeros(shape, self.dtype))

    def _put(self, array: np.ndarray) -> ort.OrtValue:
        # A fresh copy: a CPU OrtValue wraps the array's memory, which the updates overwrite.
        array = np.array(array, dtype=self.dtype, order="C", copy=True)
        return ort.OrtValue.ortvalue_from_numpy(array, self.device, self.device_id)

    def _set_values(self, params: Mapping[str, np.ndarray], state: Mapping[str, np.ndarray]) -> None:
        """(Re)create both value sets and their bindings from NumPy arrays."""
        keys = self.names + list(state)
        cur = {**{n: self._put(params[n]) for n in self.names}, **{k: self._put(v) for k, v in state.items()}}
        nxt = {k: self._alloc(self.shapes[k.split(".", 1)[1] if k not in self.names else k]) for k in keys}
        self._sets = [cur, nxt]
        self._state_keys = list(state)
        self._bindings = []
        for parity in (0, 1):
            src, dst = self._sets[parity], self._sets[1 - parity]
            b = self.session.io_binding()
            for k in keys:
                b.bind_ortvalue_input(k, src[k])
                b.bind_ortvalue_output("new." + k, dst[k])
            for n in self.names:
                b.bind_ortvalue_output(GRAD_PREFIX + n, self._grads[n])
            b.bind_ortvalue_output(LOSS_NAME, self._loss)
            self._bindings.append(b)

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
        for k in self.names + self._state_keys:
            b.bind_ortvalue_input(k, src[k])
        for n, a in feeds.items():
            b.bind_cpu_input(n, a)
        # bind_cpu_input wraps the arrays' memory: keep them alive until the run is done.
        scalars = {n: np.array(v, dtype=self.dtype)
                   for n, v in self.optimizer.step_scalars(self.step_count + 1).items()}
        for n, a in scalars.items():
            b.bind_cpu_input(n, a)
        b.synchronize_inputs()  # syncs the EPs of the inputs' consumers (a no-op for CANN, see above)
        self.session.run_with_iobinding(b)
        b.synchronize_outputs()
        self.step_count += 1
        return float(self._loss.numpy().reshape(()))

    def fit(self, batches: Iterable, *, max_steps: int | None = None, progress: bool | None = None,
            desc: str = "train") -> list[float]:
        """Run a step per batch (at most ``max_steps``); returns the per-step losses.

        Shows a tqdm bar with the loss when ``progress`` (default: the trainer's setting, else
        only when stderr is a terminal).
        """
        from tqdm.auto import tqdm

        show = progress if progress is not None else self.progress
        if show is None:
            show = sys.stderr.isatty()
        total = len(batches) if hasattr(batches, "__len__") else None
        if max_steps is not None:
            total = max_steps if total is None else min(total, max_steps)
        losses: list[float] = []
        with tqdm(total=total, desc=desc, disable=not show, leave=False) as bar:
            for batch in batches:
                if max_steps is not None and len(losses) >= max_steps:
                    break
                losses.append(self.step(batch))
                bar.update(1)
                bar.set_postfix(loss=f"{losses[-1]:.4f}", refresh=False)
        return losses

    # -- inspection and checkpoints ------------------------------------------------------
    def _current(self) -> dict[str, ort.OrtValue]:
        return self._sets[self.step_count % 2]

    def parameters(self) -> dict[str, np.ndarray]:
        """NumPy copies of the current parameters."""
        cur = self._current()
        return {n: np.array(cur[n].numpy()) for n in self.names}

    def gradients(self) -> dict[str, np.ndarray]:
        """NumPy copies of the gradients of the last step (taken at that step's parameters)."""
        return {n: np.array(self._grads[n].numpy()) for n in self.names}

    def optimizer_state(self) -> dict[str, np.ndarray]:
        """NumPy copies of the optimizer state, keyed ``<slot>.<param name>``."""
        cur = self._current()
        return {k: np.array(cur[k].numpy()) for k in self._state_keys}

    def save_checkpoint(self, path: str | os.PathLike) -> None:
        """Write parameters, optimizer state and step to ``path`` (.npz) atomically."""
        meta = {"format": CHECKPOINT_FORMAT, "step": self.step_count,
                "optimizer": self.optimizer.config(), "params": self.names}
        arrays = {f"param/{n}": a for n, a in self.parameters().items()}
        arrays.update({f"state/{k}": a for k, a in self.optimizer_state().items()})
        arrays["meta"] = np.array(json.dumps(meta))
        path = os.fspath(path)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".npz", dir=os.path.dirname(os.path.abspath(path)))
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, **arrays)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    def load_checkpoint(self, path: str | os.PathLike) -> None:
        """Resume from a checkpoint of the same graph and optimizer (``ValueError`` otherwise)."""
        meta, params, state = load_checkpoint_arrays(path)
        if meta["optimizer"] != json.loads(json.dumps(self.optimizer.config())):
            raise ValueError(f"checkpoint optimizer {meta['optimizer']} differs from the trainer's "
                             f"{self.optimizer.config()}")
        if sorted(params) != sorted(self.names):
            raise ValueError(f"checkpoint parameters {sorted(params)} differ from {sorted(self.names)}")
        for n in self.names:
            if params[n].shape != self.shapes[n] or params[n].dtype != self.dtype:
                raise ValueError(f"checkpoint parameter {n!r} is {params[n].dtype}{params[n].shape}, "
                                 f"expected {self.dtype}{self.shapes[n]}")
        if sorted(state) != sorted(self._state_keys):
            raise ValueError(f"checkpoint optimizer state {sorted(state)} differs from "
                             f"{sorted(self._state_keys)}")
        self.step_count = 0  # _set_values puts the values in set 0
        self._set_values(params, state)
        self.step_count = int(meta["step"])
        if self.step_count % 2:
            self._sets.reverse()
            self._bindings.reverse()


def load_checkpoint_arrays(path: str | os.PathLike) -> tuple[dict, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """``(meta, params, optimizer state)`` from a checkpoint written by :meth:`Trainer.save_checkpoint`."""
    with np.load(os.fspath(path), allow_pickle=False) as z:
        if "meta" not in z.files:
            raise ValueError(f"{os.fspath(path)} is not a training checkpoint (no 'meta' entry)")
        meta = json.loads(str(z["meta"]))
        if meta.get("format") != CHECKPOINT_FORMAT:
            raise ValueError(f"checkpoint format {meta.get('format')} is not {CHECKPOINT_FORMAT}")
        params = {k[len("param/"):]: z[k] for k in z.files if k.startswith("param/")}
        state = {k[len("state/"):]: z[k] for k in z.files if k.startswith("state/")}
    return meta, params, state
