"""Optimizers for :mod:`ort_ops.training.trainer` as ONNX graphs: PyTorch's SGD and Adam update formulas.

Each optimizer builds **one** ONNX graph that updates every parameter (and its state) in a
single ORT run. Per-parameter graph inputs are ``<name>``, ``grad.<name>`` and one input per
state slot (``<slot>.<name>``); outputs are ``new.<name>`` and ``new.<slot>.<name>``. The graph
comes in two forms:

- **fused** (the default for float32 parameters): one ``ai.ortops::SGDUpdate`` /
  ``ai.ortops::AdamUpdate`` node per parameter, and the step-dependent scalars as optimizer state
  ``<kind>.scalars`` (input; ``new.<kind>.scalars`` output) that one or two standard ONNX nodes
  advance every step (:meth:`Optimizer.scalar_state` gives its value after any number of
  steps; checkpoints keep the graph's values, :meth:`Optimizer.resume_scalar_states`): nothing
  comes from the host per step, and on CANN the update is CANN's own fused op.
  Adam also keeps a second float64 state ``adam.bias`` and derives from both, once per step for
  every parameter, the float32 ``cann_scalars`` its CANN kernel hands ApplyAdamW (bias corrections
  formed in float64, :func:`ort_ops.ops.adam_update.cann_scalars`); its CPU kernel only checks them.
- **unfused** (float16 and float64 parameters, or ``fused=False``): ~8 elementwise ONNX ops per
  parameter, and a few scalars that depend on the step count (:meth:`Optimizer.step_scalars`) as
  inputs fed every step, computed in Python double precision exactly where PyTorch computes them.
  The graph's arithmetic is in the parameters' dtype: in float16 every op rounds, where
  torch.optim's fused ``add_(x, alpha=a)`` rounds ``p + a * x`` once, so a float16 step is within
  a float16 ulp or two of PyTorch's, not equal; hyperparameters that round to 0 in float16 (Adam's
  default ``eps = 1e-8``) are refused (:meth:`Optimizer.check_dtype`).

The fused ops compute what the unfused graph computes, bit for bit on the CPU EP (their kernels
follow its operation order; ``docs/ops/SGDUpdate.md``, ``docs/ops/AdamUpdate.md``).

The formulas follow PyTorch's single-tensor (CPU) implementations, operation for operation:

- SGD: ``g += wd * p``; ``buf = g`` on the first step, else ``buf = momentum * buf +
  (1 - dampening) * g``; ``g = g + momentum * buf`` if nesterov else ``g = buf``;
  ``p -= lr * g``.
- Adam: ``g += wd * p``; ``m = m + (1 - beta1) * (g - m)`` (``lerp``);
  ``v = beta2 * v + (1 - beta2) * g * g``; ``denom = sqrt(v) / sqrt(1 - beta2**t) + eps``;
  ``p -= lr / (1 - beta1**t) * m / denom``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper

from ort_ops.domain import DOMAIN, IR_VERSION, ONNX_OPSET, OPSET_VERSION
from ort_ops.ops.adam_update import attribute_double, compensations
from ort_ops.rewrite.lowerings.adam_update import update as adam_update
from ort_ops.rewrite.lowerings.sgd_update import update as sgd_update
from ort_ops.training.interface import grad_name

_NP_TO_ONNX = {np.dtype(np.float16): TensorProto.FLOAT16, np.dtype(np.float32): TensorProto.FLOAT,
               np.dtype(np.float64): TensorProto.DOUBLE}

MAX_STEPS = 2**53  # the largest step count: integers up to it are exact in float64 (beta ** step)


class Optimizer:
    """Base: a name, hyperparameters (a dataclass), state slots, an update graph."""

    kind: str = ""
    slots: tuple[str, ...] = ()
    scalar_names: tuple[str, ...] = ()  # the unfused graph's per-step inputs
    fused_op: str = ""  # the ai.ortops op of the fused graph

    def config(self) -> dict:
        """``{"kind": ..., **hyperparameters}`` (stored in checkpoints)."""
        return {"kind": self.kind, **asdict(self)}

    def step_scalars(self, step: int) -> dict[str, float]:
        """The unfused graph's scalar inputs for update number ``step`` (1-based)."""
        raise NotImplementedError

    @property
    def scalars_name(self) -> str:
        """The fused graph's scalar state: input ``<kind>.scalars``, output ``new.<kind>.scalars``."""
        return f"{self.kind}.scalars"

    def scalar_state(self, steps: int) -> np.ndarray:
        """The fused graph's scalar state after ``steps`` updates (the input of update ``steps + 1``),
        exactly the value the graph's own scalar-update nodes reach from the start: a function of the
        step count and ``lr`` only (Adam's in O(steps): checkpoints store the graph's values, see
        :meth:`resume_scalar_states`)."""
        raise NotImplementedError

    def scalar_states(self, steps: int) -> dict[str, np.ndarray]:
        """Every scalar state of the fused graph after ``steps`` updates, by input name (its
        output is ``new.<name>``): :attr:`scalars_name` and, for Adam, ``adam.bias``. Adam's are
        formed as the graph forms them, one float64 multiplication per step: O(steps), for tests and
        a trainer's start; a resumed trainer uses :meth:`resume_scalar_states`."""
        return {self.scalars_name: self.scalar_state(steps)}

    def closed_form_scalar_states(self, steps: int) -> dict[str, np.ndarray]:
        """The scalar states after ``steps`` updates in O(1): equal to :meth:`scalar_states` for SGD;
        for Adam the powers as ``pow`` forms them (PyTorch's ``beta ** step``, a few float64 ulps from
        the graph's repeated products)."""
        return self.scalar_states(steps)

    def resume_scalar_states(self, steps: int, stored: Mapping[str, np.ndarray] | None) -> dict[str, np.ndarray]:
        """The scalar states a trainer resumed after ``steps`` updates starts from, in O(1): ``stored``
        (the graph's own values, which checkpoints keep) once :meth:`check_scalar_states` accepts
        them, else (a checkpoint of the unfused graph, or of a version that did not keep them)
        :meth:`closed_form_scalar_states`."""
        if stored is None:
            return self.closed_form_scalar_states(steps)
        self.check_scalar_states(steps, stored)
        want = self.scalar_states(0)
        return {k: np.array(stored[k], want[k].dtype) for k in want}

    def check_scalar_states(self, steps: int, stored: Mapping[str, np.ndarray]) -> None:
        """``ValueError`` naming the value unless ``stored`` can be the fused graph's scalar states
        after ``steps`` updates with these hyperparameters (names, shapes, exact values where they
        are exact, Adam's powers within the rounding of ``steps`` float64 multiplications)."""
        steps = self._check_steps(steps)
        first = self.scalar_states(0)
        if sorted(stored) != sorted(first):
            raise ValueError(f"scalar states {sorted(stored)}, expected {sorted(first)}")
        for name, start in first.items():
            value = np.asarray(stored[name])
            if value.shape != start.shape or value.dtype.kind not in "fiu":
                raise ValueError(f"scalar state {name!r} is {value.dtype}{list(value.shape)}, expected "
                                 f"{start.dtype}{list(start.shape)}")
            value = value.astype(np.float64)
            if not np.isfinite(value).all():
                raise ValueError(f"scalar state {name!r} = {value.tolist()} is not finite")
            if np.array(value, start.dtype).astype(np.float64).tolist() != value.tolist():
                raise ValueError(f"scalar state {name!r} = {value.tolist()} is not a {start.dtype} value")
            for i, (got, want, slack) in enumerate(zip(value.tolist(), *self._scalar_bounds(name, steps))):
                if not abs(got - want) <= slack:
                    raise ValueError(f"scalar state {name!r}[{i}] = {got!r} does not fit {steps} steps of "
                                     f"{self.config()}: expected {want!r}" + (f" (within {slack!r})" if slack else ""))

    def _scalar_bounds(self, name: str, steps: int) -> tuple[list[float], list[float]]:
        """What each element of scalar state ``name`` after ``steps`` updates is, and how far the graph's
        rounding can take it from that."""
        want = self.closed_form_scalar_states(steps)[name].astype(np.float64).tolist()
        return want, [0.0] * len(want)

    def _shared_inputs(self, nodes: list, inits: list, inputs: list, outputs: list) -> list[str]:
        """Nodes computing, once per step, extra inputs of every fused node (appended to them)."""
        return []

    @staticmethod
    def fuses(dtype) -> bool:
        """Whether the default graph for parameters of ``dtype`` is the fused one (float32)."""
        return np.dtype(dtype) == np.float32

    def check_lr(self, lr) -> float:
        """``lr`` as a float; ``ValueError`` unless it is a finite number >= 0."""
        return _number(self._owner(), "lr", lr, "a finite number >= 0 (the learning rate)", lambda v: v >= 0)

    def _owner(self) -> str:
        return type(self).__name__

    def check_dtype(self, dtype) -> None:
        """``ValueError`` naming the hyperparameter when one of them (or a value the update graph
        forms from them, such as Adam's first step size ``lr / (1 - beta1)``) overflows ``dtype``,
        the dtype of the update graph's constants and per-step scalars, or a nonzero one rounds to 0."""
        dtype = np.dtype(dtype)
        largest = float(np.finfo(dtype).max)
        for name, value, what in self._graph_values(dtype):
            context = f"{what}: the parameters are {dtype}, and so is the update graph's arithmetic"
            if not abs(value) <= largest:
                raise ValueError(f"{self._owner()} {name} = {value!r} overflows {dtype} (largest {largest!r}){context}")
            if value != 0 and float(np.array(value).astype(dtype)) == 0:
                raise ValueError(f"{self._owner()} {name} = {value!r} rounds to 0 in {dtype}{context}")

    def _graph_values(self, dtype: np.dtype) -> list[tuple[str, float, str]]:
        """``(name, value, explanation)`` of every value the update graph for ``dtype`` parameters holds in
        that dtype."""
        raise NotImplementedError

    def _fused_attributes(self) -> dict:
        raise NotImplementedError

    def _scalar_update(self, nodes: list, inits: list, scalars: str, out: str) -> None:
        raise NotImplementedError

    @staticmethod
    def _check_steps(steps) -> int:
        """``steps`` (a count of updates) as an int; ``ValueError`` unless an int in [0, MAX_STEPS]."""
        if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or not 0 <= steps <= MAX_STEPS:
            raise ValueError(f"a step count is an int in [0, 2**53], got {steps!r}")
        return int(steps)

    @staticmethod
    def _check_step(step) -> int:
        if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 1:
            raise ValueError(f"optimizer step numbers start at 1, got {step!r}")
        return int(step)

    def _update(self, nodes: list, name: str, p: str, g: str, state: dict[str, str],
                const) -> tuple[str, dict[str, str]]:
        raise NotImplementedError

    # The unfused graph's per-parameter nodes come from the lowering's formula
    # (ort_ops.rewrite.lowerings.<op>.update); these name its values here: role -> tag (the tensor is
    # "<tag>.<parameter>"), constant role -> "const.<tag>", step scalar role -> graph input.
    _value_tags: Mapping[str, str] = {}
    _const_tags: Mapping[str, str] = {}
    _scalar_inputs: Mapping[str, str] = {}

    def _emitters(self, nodes: list, name: str, const):
        """``op(kind, args, role)`` and ``const(role, value)`` for the formula, appending to ``nodes``."""
        def op(kind: str, args: list, role: str) -> str:
            out = f"{self._value_tags[role]}.{name}"
            nodes.append(helper.make_node(kind, args, [out]))
            return out

        return op, lambda role, value: const(self._const_tags[role], value)

    def build_graph(self, shapes: Mapping[str, tuple[int, ...]], dtype=np.float32, *,
                    fused: bool | None = None) -> onnx.ModelProto:
        """The update graph for parameters ``name -> shape`` (all of ``dtype``): fused (``None``:
        for float32, see :meth:`fuses`) or unfused (see the module docstring)."""
        dtype = np.dtype(dtype)
        if dtype not in _NP_TO_ONNX:
            raise ValueError(f"optimizer parameters must be float16, float32 or float64, got {dtype}")
        if fused is None:
            fused = self.fuses(dtype)
        self.check_dtype(dtype)
        if fused:
            if dtype != np.float32:
                raise ValueError(f"the fused {self.fused_op} update is for float32 parameters, got {dtype}")
            return self._build_fused(shapes)
        elem = _NP_TO_ONNX[dtype]
        nodes, inputs, outputs, inits = [], [], [], []
        consts: dict[str, str] = {}

        def const(tag: str, value: float) -> str:
            key = f"const.{tag}"
            if key not in consts:
                inits.append(helper.make_tensor(key, elem, [], [float(value)]))
                consts[key] = key
            return key

        for s in self.scalar_names:
            inputs.append(helper.make_tensor_value_info(s, elem, []))
        for name, shape in shapes.items():
            shape = list(shape)
            p, g = name, grad_name(name)
            state = {slot: f"{slot}.{name}" for slot in self.slots}
            for v in (p, g, *state.values()):
                inputs.append(helper.make_tensor_value_info(v, elem, shape))
            new_p, new_state = self._update(nodes, name, p, g, state, const)
            nodes.append(helper.make_node("Identity", [new_p], ["new." + p]))
            outputs.append(helper.make_tensor_value_info("new." + p, elem, shape))
            for slot, v in new_state.items():
                out = f"new.{slot}.{name}"
                nodes.append(helper.make_node("Identity", [v], [out]))
                outputs.append(helper.make_tensor_value_info(out, elem, shape))
        graph = helper.make_graph(nodes, f"{self.kind}_update", inputs, outputs, inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)],
                                  producer_name="ort_ops.training.optim")
        model.ir_version = IR_VERSION
        onnx.checker.check_model(model, full_check=True)
        return model

    def _build_fused(self, shapes: Mapping[str, tuple[int, ...]]) -> onnx.ModelProto:
        """One fused op node per parameter, and the scalar state's update."""
        import ort_ops  # noqa: F401  (registers the ai.ortops schemas the checker needs)

        f32 = TensorProto.FLOAT
        scalars = self.scalars_name
        state = self.scalar_state(0)
        elem = _NP_TO_ONNX[state.dtype]
        nodes, inits = [], []
        inputs = [helper.make_tensor_value_info(scalars, elem, list(state.shape))]
        outputs = [helper.make_tensor_value_info("new." + scalars, elem, list(state.shape))]
        shared = self._shared_inputs(nodes, inits, inputs, outputs)
        for name, shape in shapes.items():
            shape = list(shape)
            slots = [f"{slot}.{name}" for slot in self.slots]
            for v in (name, grad_name(name), *slots):
                inputs.append(helper.make_tensor_value_info(v, f32, shape))
            new = ["new." + name, *("new." + v for v in slots)]
            outputs.extend(helper.make_tensor_value_info(v, f32, shape) for v in new)
            ins = [name, grad_name(name), *slots, scalars]
            if self.fused_op == "SGDUpdate" and not slots:  # no momentum: no buffer
                ins = [name, grad_name(name), "", scalars]
            ins.extend(shared)
            nodes.append(helper.make_node(self.fused_op, ins, new, name=f"{self.fused_op}/{name}", domain=DOMAIN,
                                          **self._fused_attributes()))
        self._scalar_update(nodes, inits, scalars, "new." + scalars)
        graph = helper.make_graph(nodes, f"{self.kind}_fused_update", inputs, outputs, inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET),
                                                        helper.make_opsetid(DOMAIN, OPSET_VERSION)],
                                  producer_name="ort_ops.training.optim")
        model.ir_version = IR_VERSION
        onnx.checker.check_model(model, full_check=True)
        return model


def _number(owner: str, name: str, value, accepted: str, in_range) -> float:
    """``value`` as a float; ``ValueError`` naming ``owner``'s hyperparameter ``name``, its value and
    the ``accepted`` range unless it is a real number (not a bool) that is finite and ``in_range``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{owner} {name} must be {accepted}, got {value!r} ({type(value).__name__})")
    try:
        as_float = float(value)
    except OverflowError:  # an int beyond float64
        as_float = math.inf
    if not math.isfinite(as_float) or not in_range(as_float):
        raise ValueError(f"{owner} {name} must be {accepted}, got {value!r}")
    return as_float


def _op(nodes: list, op: str, a: str, b: str | None, out: str) -> str:
    nodes.append(helper.make_node(op, [a] if b is None else [a, b], [out]))
    return out


@dataclass
class SGD(Optimizer):
    """``torch.optim.SGD`` (defaults as in torch: lr=1e-3, no momentum)."""

    lr: float = 1e-3
    momentum: float = 0.0
    dampening: float = 0.0
    weight_decay: float = 0.0
    nesterov: bool = False

    kind = "sgd"
    scalar_names = ("sgd.neg_lr", "sgd.mom", "sgd.gscale")
    fused_op = "SGDUpdate"
    _value_tags = {"decay": "wd_p", "decayed_grad": "g_wd", "kept": "buf_m", "scaled_grad": "g_s", "new_buf": "buf",
                   "lookahead": "nb", "nesterov": "g_n", "step": "step", "new_param": "p_new"}
    _const_tags = {"weight_decay": "wd", "momentum": "momentum"}
    _scalar_inputs = {"neg_lr": "sgd.neg_lr", "step_momentum": "sgd.mom", "grad_scale": "sgd.gscale"}

    def __post_init__(self):
        # torch.optim.SGD's ranges (lr, momentum, weight_decay >= 0; dampening any number), finite
        self.lr = self.check_lr(self.lr)
        for field_name in ("momentum", "weight_decay"):
            setattr(self, field_name, _number("SGD", field_name, getattr(self, field_name), "a finite number >= 0",
                                              lambda v: v >= 0))
        self.dampening = _number("SGD", "dampening", self.dampening, "a finite number", lambda v: True)
        if not isinstance(self.nesterov, (bool, np.bool_)):
            raise ValueError(f"SGD nesterov must be True or False, got {self.nesterov!r}")
        self.nesterov = bool(self.nesterov)
        if self.nesterov and (self.momentum <= 0 or self.dampening != 0):
            raise ValueError("SGD nesterov=True requires momentum > 0 and dampening = 0 "
                             f"(got momentum={self.momentum}, dampening={self.dampening})")
        self.slots = ("momentum_buffer",) if self.momentum != 0 else ()

    def step_scalars(self, step: int) -> dict[str, float]:
        # First step: buf = g exactly (0 * zeros + 1 * g); then buf = momentum*buf + (1-damp)*g.
        if self._check_step(step) == 1:
            return {"sgd.neg_lr": -self.lr, "sgd.mom": 0.0, "sgd.gscale": 1.0}
        return {"sgd.neg_lr": -self.lr, "sgd.mom": self.momentum, "sgd.gscale": 1.0 - self.dampening}

    def scalar_state(self, steps: int) -> np.ndarray:
        """``[lr, 0, 1]`` before the first update, ``[lr, momentum, 1 - dampening]`` after (float32)."""
        steps = self._check_steps(steps)
        first = steps == 0
        return np.array([self.lr, 0.0 if first else self.momentum, 1.0 if first else 1.0 - self.dampening],
                        np.float32)

    def _graph_values(self, dtype):
        return [("lr", self.lr, ""), ("momentum", self.momentum, ""), ("dampening", self.dampening, ""),
                ("weight_decay", self.weight_decay, ""),
                ("dampening", 1.0 - self.dampening, " (as 1 - dampening, the gradient's scale)")]

    def _fused_attributes(self) -> dict:
        return {"momentum": float(self.momentum), "dampening": float(self.dampening),
                "weight_decay": float(self.weight_decay), "nesterov": int(self.nesterov)}

    def _scalar_update(self, nodes, inits, scalars, out):
        # [lr, m, s] * [1, 0, 0] + [0, momentum, 1 - dampening]: lr kept, the rest what every
        # step after the first uses (exact: x * 1 = x, x * 0 + c = c for the finite x here)
        keep = helper.make_tensor("sgd.scalars_keep", TensorProto.FLOAT, [3], [1.0, 0.0, 0.0])
        later = helper.make_tensor("sgd.scalars_later", TensorProto.FLOAT, [3],
                                   np.array([0.0, self.momentum, 1.0 - self.dampening], np.float32).tolist())
        inits.extend([keep, later])
        _op(nodes, "Add", _op(nodes, "Mul", scalars, keep.name, "sgd.scalars_kept"), later.name, out)

    def _update(self, nodes, name, p, g, state, const):
        op, constant = self._emitters(nodes, name, const)
        new_p, buf = sgd_update(op, constant, self._scalar_inputs.__getitem__, p, g, state.get("momentum_buffer"),
                                momentum=self.momentum, weight_decay=self.weight_decay, nesterov=self.nesterov)
        return new_p, ({} if buf is None else {"momentum_buffer": buf})


@dataclass
class Adam(Optimizer):
    """``torch.optim.Adam`` (lr=1e-3, betas=(0.9, 0.999), eps=1e-8, no weight decay; no amsgrad)."""

    lr: float = 1e-3
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    weight_decay: float = 0.0

    kind = "adam"
    slots = ("exp_avg", "exp_avg_sq")
    scalar_names = ("adam.neg_step_size", "adam.bc2_sqrt")
    fused_op = "AdamUpdate"
    _value_tags = {"decay": "wd_p", "decayed_grad": "g_wd", "g_minus_m": "g_m", "lerp": "lerp", "new_m": "m_new",
                   "kept_v": "v_b2", "scaled_grad": "g_s", "grad_sq": "gg", "new_v": "v_new", "sqrt_v": "sqrt_v",
                   "v_hat": "v_hat", "denom": "denom", "ratio": "ratio", "update": "step", "new_param": "p_new"}
    _const_tags = {"weight_decay": "wd", "one_minus_beta1": "one_m_b1", "beta2": "b2", "one_minus_beta2": "one_m_b2",
                   "eps": "eps"}
    _scalar_inputs = {"neg_step_size": "adam.neg_step_size", "bc2_sqrt": "adam.bc2_sqrt"}

    def __post_init__(self):
        # torch.optim.Adam's ranges (lr, eps, weight_decay >= 0; betas in [0, 1)), finite
        self.lr = self.check_lr(self.lr)
        betas = self.betas
        if isinstance(betas, (str, bytes)) or not hasattr(betas, "__len__") or len(betas) != 2:
            raise ValueError(f"Adam betas must be two numbers in [0, 1) (beta1, beta2), got {betas!r}")
        self.betas = tuple(_number("Adam", f"betas[{i}]", b, "a number in [0, 1)", lambda v: 0.0 <= v < 1.0)
                           for i, b in enumerate(betas))
        for field_name in ("eps", "weight_decay"):
            setattr(self, field_name, _number("Adam", field_name, getattr(self, field_name), "a finite number >= 0",
                                              lambda v: v >= 0))

    def _graph_values(self, dtype):
        # the first step's size lr / (1 - beta1) is the largest (1 - beta1**t grows with t)
        first = self.lr / (1.0 - self.betas[0])
        values = [("lr", self.lr, ""), ("lr", first, f" (as the first step's size lr / (1 - beta1) = {first!r})"),
                  ("eps", self.eps, ""), ("weight_decay", self.weight_decay, "")]
        if dtype == np.float32:  # the fused graph's cann_scalars: lr * k1 * sqrt(k2 * bc2) <= lr * k1 * sqrt(k2)
            k1, k2 = compensations(*self.betas)
            cann = self.lr * k1 * math.sqrt(k2)
            values.append(("lr", cann, f" (as lr * k1 * sqrt(k2) = {cann!r}, in the CANN kernel's scalars)"))
        return values

    def check_dtype(self, dtype) -> None:
        for i, beta in enumerate(self.betas):  # first: the compensations divide by 1 - beta
            if float(np.asarray(beta).astype(dtype)) >= 1.0:
                dt = np.dtype(dtype)
                raise ValueError(f"Adam betas[{i}] = {beta!r} rounds to 1 in {dt}, must be in [0, 1) there: the "
                                 f"parameters are {dt}, and so is the update graph's arithmetic")
        super().check_dtype(dtype)

    def step_scalars(self, step: int) -> dict[str, float]:
        step = self._check_step(step)
        beta1, beta2 = self.betas
        bias_correction1 = 1 - beta1**step
        bias_correction2 = 1 - beta2**step
        return {"adam.neg_step_size": -(self.lr / bias_correction1),
                "adam.bc2_sqrt": math.sqrt(bias_correction2)}

    def _betas(self) -> tuple[float, float]:
        # the doubles the AdamUpdate kernels read from the (float32) beta attributes
        return attribute_double(self.betas[0]), attribute_double(self.betas[1])

    def scalar_state(self, steps: int) -> np.ndarray:
        """``[lr, beta1**steps, beta2**steps]`` (float64), the powers as the graph's float64 ``Mul``
        forms them: ``steps`` multiplications by beta, starting from 1 (not ``pow``)."""
        steps = self._check_steps(steps)
        (b1, b2), p1, p2 = self._betas(), 1.0, 1.0
        for _ in range(int(steps)):
            p1, p2 = p1 * b1, p2 * b2
        return np.array([self.lr, p1, p2], np.float64)

    @property
    def bias_name(self) -> str:
        """The fused graph's second scalar state: ``[k1²·k2·beta2^t, 0, eps²·k2·beta2^t]`` after t updates."""
        return f"{self.kind}.bias"

    def bias_state(self, steps: int) -> np.ndarray:
        """:attr:`bias_name`'s value after ``steps`` updates, formed as the graph's float64 ``Mul``
        forms it (``steps`` multiplications by beta2); it does not depend on ``lr``."""
        start, factors, _ = self._bias_constants()
        state = np.array(start, np.float64)
        for _ in range(self._check_steps(steps)):
            state = state * factors
        return state

    def _bias_constants(self) -> tuple[list[float], np.ndarray, list[float]]:
        """The bias state before the first update, its per-step factors, and what the graph
        subtracts the next bias state from: ``[k1²k2, 0, eps²k2]``, ``[beta2, 1, beta2]``,
        ``[k1²k2, 1, eps²k2]`` (:func:`ort_ops.ops.adam_update.compensations`; eps as float32)."""
        k1, k2 = compensations(*self.betas)
        b2, e = self._betas()[1], float(np.float32(self.eps))
        return [k1 * k1 * k2, 0.0, e * e * k2], np.array([b2, 1.0, b2]), [k1 * k1 * k2, 1.0, e * e * k2]

    def scalar_states(self, steps: int) -> dict[str, np.ndarray]:
        return {self.scalars_name: self.scalar_state(steps), self.bias_name: self.bias_state(steps)}

    def closed_form_scalar_states(self, steps: int) -> dict[str, np.ndarray]:
        steps = self._check_steps(steps)
        (b1, b2), (start, _, _) = self._betas(), self._bias_constants()
        p1, p2 = math.pow(b1, steps), math.pow(b2, steps)
        return {self.scalars_name: np.array([self.lr, p1, p2], np.float64),
                self.bias_name: np.array([start[0] * p2, 0.0, start[2] * p2], np.float64)}

    def _scalar_bounds(self, name, steps):
        # t float64 multiplications of s by b land within (e^(t u') - 1) s b^t + 2^-1075 / (1 - b) of
        # s b^t (u' = 2^-52 covers the relative rounding 2^-53 and pow's own error; each rounding in
        # the subnormal range is at most 2^-1075, and earlier ones decay by b per step): bounded
        # generously by 2 (e^(t 2^-52) - 1 + 2^-50) s b^t + 2^-1070 / (1 - b)
        want, _ = super()._scalar_bounds(name, steps)
        (b1, b2), (start, _, _) = self._betas(), self._bias_constants()
        growth = 2.0 * (math.expm1(steps * 2.0**-52) + 2.0**-50)

        def floor(b: float) -> float:
            return 2.0**-1070 / (1.0 - b)

        if name == self.scalars_name:
            return want, [0.0, growth * want[1] + floor(b1), growth * want[2] + floor(b2)]
        return want, [growth * want[0] + (floor(b2) if start[0] else 0.0), 0.0,
                      growth * want[2] + (floor(b2) if start[2] else 0.0)]

    def _shared_inputs(self, nodes, inits, inputs, outputs):
        # cann_scalars = [lr, b1p, 1] * sqrt(float32([k1²k2, 1, eps²k2] - bias·[b2, 1, b2])), bias·[b2, 1, b2]
        # being the next bias state: [lr·k1·sqrt(k2·bc2), beta1^(t-1), eps·sqrt(k2·bc2)] (float32)
        f64, f32 = TensorProto.DOUBLE, TensorProto.FLOAT
        _, factors, total = self._bias_constants()
        bias, scalars = self.bias_name, self.scalars_name
        consts = {"adam.bias_factors": factors.tolist(), "adam.bias_total": total,
                  "adam.scalars_mask": [1.0, 1.0, 0.0], "adam.scalars_one": [0.0, 0.0, 1.0]}
        inits.extend(helper.make_tensor(n, f64, [3], v) for n, v in consts.items())
        inputs.append(helper.make_tensor_value_info(bias, f64, [3]))
        outputs.append(helper.make_tensor_value_info("new." + bias, f64, [3]))
        out = "adam.cann_scalars"
        nodes += [
            helper.make_node("Mul", [bias, "adam.bias_factors"], ["new." + bias], name="Mul/adam.bias"),
            helper.make_node("Sub", ["adam.bias_total", "new." + bias], ["adam.bc2"], name="Sub/adam.bc2"),
            helper.make_node("Cast", ["adam.bc2"], ["adam.bc2.f32"], name="Cast/adam.bc2", to=f32),
            helper.make_node("Sqrt", ["adam.bc2.f32"], ["adam.root"], name="Sqrt/adam.root"),
            helper.make_node("Mul", [scalars, "adam.scalars_mask"], ["adam.lr_b1p"], name="Mul/adam.lr_b1p"),
            helper.make_node("Add", ["adam.lr_b1p", "adam.scalars_one"], ["adam.lr_b1p_1"], name="Add/adam.lr_b1p_1"),
            helper.make_node("Cast", ["adam.lr_b1p_1"], ["adam.lr_b1p_1.f32"], name="Cast/adam.lr_b1p_1", to=f32),
            helper.make_node("Mul", ["adam.lr_b1p_1.f32", "adam.root"], [out], name="Mul/adam.cann_scalars"),
        ]
        return [out]

    def _fused_attributes(self) -> dict:
        return {"beta1": float(self.betas[0]), "beta2": float(self.betas[1]), "eps": float(self.eps),
                "weight_decay": float(self.weight_decay)}

    def _scalar_update(self, nodes, inits, scalars, out):
        # [lr, beta1^(t-1), beta2^(t-1)] * [1, beta1, beta2] in float64: the kernel's own beta^t
        b1, b2 = self._betas()
        factors = helper.make_tensor("adam.scalars_factors", TensorProto.DOUBLE, [3], [1.0, b1, b2])
        inits.append(factors)
        _op(nodes, "Mul", scalars, factors.name, out)

    def _update(self, nodes, name, p, g, state, const):
        op, constant = self._emitters(nodes, name, const)
        new_p, m, v = adam_update(op, constant, self._scalar_inputs.__getitem__, p, g, state["exp_avg"],
                                  state["exp_avg_sq"], beta1=self.betas[0], beta2=self.betas[1], eps=self.eps,
                                  weight_decay=self.weight_decay)
        return new_p, {"exp_avg": m, "exp_avg_sq": v}

