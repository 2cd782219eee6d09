"""``ai.ortops::AdamUpdate``: one parameter's ``torch.optim.Adam`` step (no amsgrad), fused.

    lr, b1p, b2p = scalars                                   (float64: lr, beta1^(t-1), beta2^(t-1))
    cann_scalars (optional, float32) = [lr·k1·sqrt(k2·bc2), beta1^(t-1), eps·sqrt(k2·bc2)]: what the
        CANN kernel hands CANN's ApplyAdamW (see cann_scalars()); the CPU kernel only checks it
    step = float32(-(lr / (1 - b1p * beta1)));  bc2_sqrt = float32(sqrt(1 - b2p * beta2))   (float64)
    g = grad + param * weight_decay                          (weight_decay != 0; the rest float32)
    m = exp_avg + (g - exp_avg) * (1 - beta1)
    v = exp_avg_sq * beta2 + (g * (1 - beta2)) * g
    new_param = param + (m / (sqrt(v) / bc2_sqrt + eps)) * step

Exact semantics, how the betas are read, and the CANN kernel's rounding: ``docs/ops/AdamUpdate.md``;
:func:`adam_update` is their definition.
"""

from __future__ import annotations

import math

import numpy as np

from ort_ops.ops.definition import Attribute, OpDef, Tensor

SCALARS = 3  # lr, beta1^(t-1), beta2^(t-1)


def attribute_double(value: float) -> float:
    """The float64 a float attribute stands for: the double nearest to the shortest decimal that
    rounds to its float32 value (0.9f -> 0.9, 0.999f -> 0.999). ONNX float attributes are float32;
    PyTorch computes ``1 - beta`` and ``beta ** t`` from the Python float the user wrote, and so do
    the kernels whenever that float has at most 7 significant digits."""
    return float(str(np.float32(value)))


def check_attributes(beta1: float, beta2: float, eps: float, weight_decay: float) -> None:
    """``ValueError`` for values ``torch.optim.Adam`` rejects (the kernels check the same)."""
    for name, beta in (("beta1", beta1), ("beta2", beta2)):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"AdamUpdate: {name} must be in [0, 1), got {beta}")
    if not eps >= 0.0:
        raise ValueError(f"AdamUpdate: eps must be >= 0, got {eps}")
    if not weight_decay >= 0.0:
        raise ValueError(f"AdamUpdate: weight_decay must be >= 0, got {weight_decay}")


def step_scalars(lr: float, beta1_power: float, beta2_power: float, beta1: float, beta2: float):
    """``(step, bc2_sqrt)``: the two float32 scalars of the element loop, from the float64 state
    (what PyTorch computes in Python: ``-lr / (1 - beta1**t)``, ``sqrt(1 - beta2**t)``)."""
    b1, b2 = np.float64(attribute_double(beta1)), np.float64(attribute_double(beta2))
    with np.errstate(all="ignore"):
        bc1 = np.float64(1.0) - np.float64(beta1_power) * b1
        bc2 = np.float64(1.0) - np.float64(beta2_power) * b2
        step = np.float32(-(np.float64(lr) / bc1))
        bc2_sqrt = np.float32(np.sqrt(bc2))
    return step, bc2_sqrt


def compensations(beta1: float, beta2: float) -> tuple[float, float]:
    """``(k1, k2)``: ``float32(1 - beta1) / (1 - float32(beta1))`` and ``(1 - float32(beta2)) /
    float32(1 - beta2)``, in float64. CANN's ApplyAdamW forms ``beta - 1`` from the float32 beta,
    the CPU kernel (PyTorch) rounds ``1 - beta`` to float32: CANN's second moment is ``1/k2`` times
    PyTorch's (exactly, for the same gradients: both decay by float32(beta2)), its first moment
    about ``1/k1`` times; :func:`cann_scalars` folds both factors back in."""
    f32 = np.float32
    b1, b2 = attribute_double(beta1), attribute_double(beta2)
    k1 = float(f32(1.0 - b1)) / (1.0 - float(f32(beta1)))
    k2 = (1.0 - float(f32(beta2))) / float(f32(1.0 - b2))
    return k1, k2


def cann_scalars(scalars, beta1: float, beta2: float, eps: float) -> np.ndarray:
    """The float64 values of the optional input ``cann_scalars``: ``[lr·k1·sqrt(k2·bc2), beta1^(t-1),
    eps·sqrt(k2·bc2)]`` with ``bc2 = 1 - beta2^(t-1)·beta2`` and :func:`compensations`.

    CANN's ApplyAdamW, given them as ``lr``, ``beta1_power`` and ``epsilon`` and ``beta2_power = 0``,
    computes ``var - (lr_c / bc1) · m_c / (sqrt(v_c) + eps_c)``, which is PyTorch's ``var - step ·
    m / (sqrt(v) / sqrt(bc2) + eps)`` for its own moments ``m_c ≈ m / k1``, ``v_c = v / k2``, with the
    bias correction of the second moment formed in float64 instead of from float32 powers
    (docs/ops/AdamUpdate.md)."""
    lr, b1p, b2p = (float(x) for x in np.asarray(scalars, np.float64))
    k1, k2 = compensations(beta1, beta2)
    with np.errstate(all="ignore"):
        root = np.sqrt(np.float64(k2) * (1.0 - b2p * attribute_double(beta2)))
        return np.array([lr * k1 * root, b1p, float(np.float32(eps)) * root], np.float64)


CANN_SCALARS_RTOL = 2.0**-21  # 4 to 8 float32 ulps: what cann_scalars may be off its float64 values ...
CANN_SCALARS_FLOOR = 2.0**-126  # ... relative to at least float32's smallest normal (subnormal powers)


def check_cann_scalars(scalars, given, beta1: float, beta2: float, eps: float) -> None:
    """``ValueError`` unless ``given`` (if not None) is within ``CANN_SCALARS_RTOL · max(|want|,
    CANN_SCALARS_FLOOR)`` of ``want =`` :func:`cann_scalars`, element for element (NaN where it is
    NaN; beta1^(t-1) is subnormal in float32 after ~840 steps of beta1 = 0.9): the CPU kernel checks
    the same; the CANN kernel reads it unchecked."""
    if given is None:
        return
    given = np.asarray(given)
    if given.dtype != np.float32:
        raise TypeError(f"AdamUpdate: cann_scalars has dtype {given.dtype}, expected float32")
    want = cann_scalars(scalars, beta1, beta2, eps)
    got = given.astype(np.float64)
    with np.errstate(invalid="ignore"):
        allowed = CANN_SCALARS_RTOL * np.maximum(np.abs(want), CANN_SCALARS_FLOOR)
        close = (np.abs(got - want) <= allowed) | (np.isnan(got) & np.isnan(want))
    if given.shape != want.shape or not close.all():
        raise ValueError(f"AdamUpdate: cann_scalars {given.tolist()} is not [lr*k1*sqrt(k2*bc2), beta1^(t-1), "
                         f"eps*sqrt(k2*bc2)] = {want.tolist()} (within relative 2^-21)")


def adam_update(param, grad, exp_avg, exp_avg_sq, scalars, cann_scalars=None, beta1: float = 0.9,
                beta2: float = 0.999, eps: float = 1e-8, weight_decay: float = 0.0):
    """``(new_param, new_exp_avg, new_exp_avg_sq)``: one IEEE operation per step in the order of
    the module docstring (PyTorch's single-tensor Adam: ``lerp``, ``mul_().addcmul_()``,
    ``sqrt() / bc2_sqrt + eps``); ``1 - beta1``, ``beta2``, ``1 - beta2``, ``eps`` and
    ``weight_decay`` rounded once to float32 from :func:`attribute_double` of the attributes.
    NaN payloads are not specified: NaN in, NaN out at the same place."""
    param, grad, exp_avg, exp_avg_sq, scalars = (np.asarray(a) for a in (param, grad, exp_avg, exp_avg_sq, scalars))
    check_attributes(beta1, beta2, eps, weight_decay)
    for name, array in (("param", param), ("grad", grad), ("exp_avg", exp_avg), ("exp_avg_sq", exp_avg_sq)):
        if array.dtype != np.float32:
            raise TypeError(f"AdamUpdate: {name} has dtype {array.dtype}, expected float32")
    if scalars.dtype != np.float64:
        raise TypeError(f"AdamUpdate: scalars has dtype {scalars.dtype}, expected float64")
    shape_rule([param.shape, grad.shape, exp_avg.shape, exp_avg_sq.shape, scalars.shape,
                None if cann_scalars is None else np.shape(cann_scalars)], {})
    check_cann_scalars(scalars, cann_scalars, beta1, beta2, eps)
    f32 = np.float32
    b1, b2 = attribute_double(beta1), attribute_double(beta2)
    step, bc2_sqrt = step_scalars(*(float(s) for s in scalars), beta1, beta2)
    with np.errstate(all="ignore"):
        g = grad
        if weight_decay != 0:
            g = g + param * f32(weight_decay)
        m = exp_avg + (g - exp_avg) * f32(1.0 - b1)
        v = exp_avg_sq * f32(b2) + (g * f32(1.0 - b2)) * g
        denom = np.sqrt(v) / bc2_sqrt + f32(eps)
        new_param = param + (m / denom) * step
    return tuple(a.astype(np.float32) for a in (new_param, m, v))


def shape_rule(shapes, attributes):
    """param, grad, exp_avg, exp_avg_sq of one shape, scalars [3] (and cann_scalars [3] if given);
    outputs of param's shape."""
    param, *others, scalars = shapes[:5]
    given = shapes[5] if len(shapes) > 5 else None
    for name, shape in zip(("grad", "exp_avg", "exp_avg_sq"), others):
        if tuple(shape) != tuple(param):
            raise ValueError(f"AdamUpdate: param shape {list(param)} differs from {name} shape {list(shape)}")
    if tuple(scalars) != (SCALARS,):
        raise ValueError(f"AdamUpdate: scalars must have shape [{SCALARS}] (lr, beta1^(t-1), beta2^(t-1)), "
                         f"got {list(scalars)}")
    if given is not None and tuple(given) != (SCALARS,):
        raise ValueError(f"AdamUpdate: cann_scalars must have shape [{SCALARS}] (lr*k1*sqrt(k2*bc2), "
                         f"beta1^(t-1), eps*sqrt(k2*bc2)), got {list(given)}")
    return [tuple(param)] * 3


def sample_inputs(dtype, attributes, rng):
    """A [5, 37] parameter at step 7 (a NaN, +inf and -inf among the gradients), with moments
    such as a few steps leave (exp_avg_sq >= 0)."""
    shape = (5, 37)
    param = rng.uniform(-2, 2, shape).astype(np.float32)
    grad = rng.uniform(-1, 1, shape).astype(np.float32)
    grad.reshape(-1)[[3, 50, 101]] = [np.nan, np.inf, -np.inf]
    exp_avg = rng.uniform(-0.5, 0.5, shape).astype(np.float32)
    exp_avg_sq = rng.uniform(0, 0.25, shape).astype(np.float32)
    t = 7
    b1, b2 = attribute_double(attributes["beta1"]), attribute_double(attributes["beta2"])
    scalars = np.array([1e-2, math.prod([b1] * (t - 1)), math.prod([b2] * (t - 1))], np.float64)
    return [param, grad, exp_avg, exp_avg_sq, scalars, None]  # cann_scalars: tests/ops/adam_update


OP = OpDef(
    name="AdamUpdate",
    inputs=(Tensor("param", "the parameter"),
            Tensor("grad", "its gradient"),
            Tensor("exp_avg", "first moment (zeros before the first step)"),
            Tensor("exp_avg_sq", "second moment (zeros before the first step)"),
            Tensor("scalars", "[lr, beta1^(t-1), beta2^(t-1)] for step t (the state before it)", type="float64"),
            Tensor("cann_scalars", "[lr*k1*sqrt(k2*bc2), beta1^(t-1), eps*sqrt(k2*bc2)] (float32), optional: "
                   "what the CANN kernel hands ApplyAdamW, computed once for every parameter; the CPU "
                   "kernel checks it", type="float32", optional=True)),
    outputs=(Tensor("new_param", "the updated parameter"),
             Tensor("new_exp_avg", "the updated first moment"),
             Tensor("new_exp_avg_sq", "the updated second moment")),
    attributes=(Attribute("beta1", 0.9, "decay of the first moment"),
                Attribute("beta2", 0.999, "decay of the second moment"),
                Attribute("eps", 1e-8, "added to the bias-corrected root of the second moment"),
                Attribute("weight_decay", 0.0, "L2 penalty added to the gradient (Adam, not AdamW)")),
    reference=adam_update,
    # torch.optim.Adam's arguments this op does not take (lr is in the scalars)
    foreign_attributes=("lr", "betas", "amsgrad", "maximize", "foreach", "capturable", "differentiable", "fused",
                        "decoupled_weight_decay"),
    dtypes=("float32",),
    shape=shape_rule,
    sample_inputs=sample_inputs,
    # CANN's ApplyAdamW computes in its own order (docs/ops/AdamUpdate.md); the CPU kernel is
    # bit-exact (tests/ops/adam_update)
    exact=False,
    summary="torch.optim.Adam's update of one parameter, its moments, from per-step float64 scalars",
    examples=({"weight_decay": 0.01}, {"beta1": 0.8, "beta2": 0.99, "eps": 1e-6},
              {"beta1": 0.0, "beta2": 0.5, "eps": 0.0, "weight_decay": 0.1}),
    doc="""\
torch.optim.Adam's step t for one float32 parameter (no amsgrad). scalars = [lr, beta1^(t-1),
beta2^(t-1)] (float64, the state before the step). In float64: bc1 = 1 - beta1^(t-1) * beta1,
bc2 = 1 - beta2^(t-1) * beta2, step = -lr / bc1 and sqrt(bc2), both rounded to float32. In
float32: g = grad (+ weight_decay * param); m = exp_avg + (g - exp_avg) * (1 - beta1);
v = exp_avg_sq * beta2 + g * (1 - beta2) * g; new_param = param + m / (sqrt(v) / sqrt(bc2) + eps)
* step. The next state's scalars are [lr, beta1^t, beta2^t] (one float64 Mul by [1, beta1, beta2]).
cann_scalars, when given, must be [lr*k1*sqrt(k2*bc2), beta1^(t-1), eps*sqrt(k2*bc2)] within relative
2^-21, k1 = float32(1 - beta1) / (1 - float32(beta1)), k2 = (1 - float32(beta2)) /
float32(1 - beta2) (the CPU kernel checks it and fails otherwise; the CANN kernel hands it to
ApplyAdamW unchecked, and without it casts scalars and lets ApplyAdamW form the bias corrections in
float32).""",
)
