"""``ai.ortops::SGDUpdate``: one parameter's ``torch.optim.SGD`` step, fused.

    g = grad + weight_decay * param                      (weight_decay != 0)
    buf = momentum_buffer * scalars[1] + g * scalars[2]  (momentum != 0)
    g = nesterov ? g + buf * momentum : buf              (momentum != 0)
    new_param = param + g * -scalars[0]

``scalars`` = [lr, momentum for this step, gradient scale for this step]: [lr, 0, 1] on the first
step (``buf = g``, as PyTorch), [lr, momentum, 1 - dampening] afterwards. Exact semantics and the
CANN kernel's rounding: ``docs/ops/SGDUpdate.md``; :func:`sgd_update` is their definition.
"""

from __future__ import annotations

import numpy as np

from ort_ops.ops.definition import Attribute, OpDef, Tensor

SCALARS = 3  # lr, momentum for this step, gradient scale for this step


def check_attributes(momentum: float, dampening: float, weight_decay: float, nesterov: int) -> None:
    """``ValueError`` for attribute values ``torch.optim.SGD`` rejects (the kernels check the same)."""
    if not momentum >= 0:
        raise ValueError(f"SGDUpdate: momentum must be >= 0, got {momentum}")
    if not weight_decay >= 0:
        raise ValueError(f"SGDUpdate: weight_decay must be >= 0, got {weight_decay}")
    if not np.isfinite(dampening):
        raise ValueError(f"SGDUpdate: dampening must be finite, got {dampening}")
    if nesterov not in (0, 1):
        raise ValueError(f"SGDUpdate: nesterov must be 0 or 1, got {nesterov}")
    if nesterov and (momentum == 0 or dampening != 0):
        raise ValueError(f"SGDUpdate: nesterov=1 needs momentum > 0 and dampening = 0, got momentum {momentum}, "
                         f"dampening {dampening}")


def _check(param, grad, momentum_buffer, scalars, momentum) -> None:
    named = [("param", param), ("grad", grad), ("momentum_buffer", momentum_buffer), ("scalars", scalars)]
    for name, array in named:
        if array is not None and array.dtype != np.float32:
            raise TypeError(f"SGDUpdate: {name} has dtype {array.dtype}, expected float32")
    if (momentum != 0) != (momentum_buffer is not None):
        raise ValueError(f"SGDUpdate: momentum_buffer must be given exactly when momentum != 0 (momentum {momentum}, "
                         f"momentum_buffer {'given' if momentum_buffer is not None else 'absent'})")
    shape_rule([a.shape if a is not None else None for _, a in named], {"momentum": momentum})


def sgd_update(param, grad, momentum_buffer, scalars, momentum: float = 0.0, dampening: float = 0.0,
               weight_decay: float = 0.0, nesterov: int = 0):
    """``(new_param, new_momentum_buffer)`` (``None`` for the buffer when momentum is 0), in
    float32, one IEEE operation per step in the order of the module docstring (the order of
    PyTorch's single-tensor SGD; ``weight_decay`` and ``momentum`` rounded to float32 as ONNX
    float attributes are). NaN payloads are not specified: NaN in, NaN out at the same place."""
    param, grad, scalars = (np.asarray(a) for a in (param, grad, scalars))
    momentum_buffer = None if momentum_buffer is None else np.asarray(momentum_buffer)
    check_attributes(momentum, dampening, weight_decay, int(nesterov))
    _check(param, grad, momentum_buffer, scalars, momentum)
    f32 = np.float32
    lr, mom, gscale = (f32(s) for s in scalars)
    with np.errstate(all="ignore"):
        g = grad
        if weight_decay != 0:
            g = g + param * f32(weight_decay)
        new_buf = None
        if momentum != 0:
            new_buf = momentum_buffer * mom + g * gscale
            g = g + new_buf * f32(momentum) if nesterov else new_buf
        new_param = param + g * -lr
    return new_param.astype(np.float32), None if new_buf is None else new_buf.astype(np.float32)


def shape_rule(shapes, attributes):
    """param, grad and momentum_buffer of one shape, scalars [3]; outputs: param's shape (the
    buffer's only when momentum != 0)."""
    param, grad, buf, scalars = shapes
    for name, shape in (("grad", grad), ("momentum_buffer", buf)):
        if shape is not None and tuple(shape) != tuple(param):
            raise ValueError(f"SGDUpdate: param shape {list(param)} differs from {name} shape {list(shape)}")
    if tuple(scalars) != (SCALARS,):
        raise ValueError(f"SGDUpdate: scalars must have shape [{SCALARS}] (lr, momentum, gradient scale), "
                         f"got {list(scalars)}")
    momentum = attributes.get("momentum", 0.0)
    if momentum != 0 and buf is None:
        raise ValueError(f"SGDUpdate: momentum {momentum} needs the momentum_buffer input")
    return [tuple(param), tuple(param) if momentum != 0 else None]


def sample_inputs(dtype, attributes, rng):
    """A [5, 37] parameter (a NaN, +inf and -inf among the gradients), a momentum buffer when
    momentum != 0, and the scalars of a step after the first."""
    shape = (5, 37)
    param = rng.uniform(-2, 2, shape).astype(np.float32)
    grad = rng.uniform(-1, 1, shape).astype(np.float32)
    grad.reshape(-1)[[3, 50, 101]] = [np.nan, np.inf, -np.inf]
    momentum = attributes["momentum"]
    buf = rng.uniform(-1, 1, shape).astype(np.float32) if momentum != 0 else None
    scalars = np.array([0.05, momentum, 1.0 - attributes["dampening"]], np.float32)
    return [param, grad, buf, scalars]


OP = OpDef(
    name="SGDUpdate",
    inputs=(Tensor("param", "the parameter"),
            Tensor("grad", "its gradient"),
            Tensor("momentum_buffer", "the momentum buffer (momentum != 0 only; zeros before the first step)",
                   optional=True),
            Tensor("scalars", "[lr, momentum for this step, gradient scale for this step]: [lr, 0, 1] on the "
                   "first step, [lr, momentum, 1 - dampening] afterwards", type="float32")),
    outputs=(Tensor("new_param", "the updated parameter"),
             Tensor("new_momentum_buffer", "the updated momentum buffer (momentum != 0 only)", optional=True)),
    attributes=(Attribute("momentum", 0.0, "momentum factor (0: no buffer)"),
                Attribute("dampening", 0.0, "dampening of the momentum (the scalars carry 1 - dampening)"),
                Attribute("weight_decay", 0.0, "L2 penalty added to the gradient"),
                Attribute("nesterov", 0, "1: Nesterov momentum (needs momentum > 0 and dampening 0)", kind="int")),
    reference=sgd_update,
    # torch.optim.SGD's arguments this op does not take (lr is scalars[0])
    foreign_attributes=("lr", "maximize", "foreach", "differentiable", "fused"),
    dtypes=("float32",),
    shape=shape_rule,
    sample_inputs=sample_inputs,
    # CANN's ApplyMomentum rounds Nesterov's step in another order (docs/ops/SGDUpdate.md); the CPU
    # kernel is bit-exact (tests/ops/sgd_update)
    exact=False,
    summary="torch.optim.SGD's update of one parameter, its momentum buffer and per-step scalars",
    examples=({"momentum": 0.9}, {"momentum": 0.9, "nesterov": 1}, {"momentum": 0.9, "dampening": 0.3},
              {"momentum": 0.8, "weight_decay": 0.01}, {"momentum": 0.9, "nesterov": 1, "weight_decay": 0.01},
              {"momentum": 0.9, "dampening": 0.3, "weight_decay": 0.01}, {"weight_decay": 0.01}),
    doc="""\
torch.optim.SGD's step for one float32 parameter: g = grad (+ weight_decay * param);
buf = momentum_buffer * scalars[1] + g * scalars[2]; g = nesterov ? g + momentum * buf : buf;
new_param = param - scalars[0] * g. scalars = [lr, momentum for this step, gradient scale for this
step]: [lr, 0, 1] on the first step, [lr, momentum, 1 - dampening] after it. momentum_buffer and
new_momentum_buffer are used exactly when momentum != 0.""",
)
