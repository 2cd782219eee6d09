"""AdamUpdate in standard ONNX ops, bit-exact in ONNX Runtime (NaN payloads aside): the update graph
``ort_ops.training.optim.Adam`` builds for float64 parameters, with its two step scalars computed
from the ``scalars`` input in float64 the way the op computes them.

    lr, b1p, b2p = Gather(scalars, 0 / 1 / 2)                                      (float64)
    step = Cast(Neg(Div(lr, Sub(1, Mul(b1p, beta1)))), FLOAT)
    bc2_sqrt = Cast(Sqrt(Sub(1, Mul(b2p, beta2))), FLOAT)
    g = Add(grad, Mul(param, weight_decay))                                        (weight_decay != 0)
    m = Add(exp_avg, Mul(Sub(g, exp_avg), 1 - beta1))
    v = Add(Mul(exp_avg_sq, beta2), Mul(Mul(g, 1 - beta2), g))
    new_param = Add(param, Mul(Div(m, Add(Div(Sqrt(v), bc2_sqrt), eps)), step))

The betas are the doubles :func:`ort_ops.ops.adam_update.attribute_double` gives, as in the op.
Which NaN comes out of an operation with two NaN operands is ORT's choice (the op does not
specify it either).

:func:`update` is the per-parameter part written once: this lowering and the unfused optimizer
graph (:mod:`ort_ops.training.optim`) both build their nodes with it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx_graphsurgeon as gs
from onnx import TensorProto

from ort_ops.ops.adam_update import OP as _DEF
from ort_ops.ops.adam_update import attribute_double
from ort_ops.rewrite.lowerings._nodes import variables

OP = "AdamUpdate"


def update(op: Callable, const: Callable, scalar: Callable, param, grad, exp_avg, exp_avg_sq, *,
           beta1: float, beta2: float, eps: float, weight_decay: float):
    """``(new_param, new_exp_avg, new_exp_avg_sq)`` of PyTorch's Adam step, emitted in order through
    ``op(kind, args, role)`` (a node computing value ``role``), ``const(role, value)`` and
    ``scalar(role)`` (the step scalars ``bc2_sqrt`` and ``neg_step_size``, asked for where used)."""
    g = grad
    if weight_decay != 0:
        g = op("Add", [g, op("Mul", [param, const("weight_decay", weight_decay)], "decay")], "decayed_grad")
    # exp_avg.lerp_(g, 1 - beta1)
    new_m = op("Add", [exp_avg, op("Mul", [op("Sub", [g, exp_avg], "g_minus_m"),
                                           const("one_minus_beta1", 1.0 - beta1)], "lerp")], "new_m")
    # exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
    new_v = op("Add", [op("Mul", [exp_avg_sq, const("beta2", beta2)], "kept_v"),
                       op("Mul", [op("Mul", [g, const("one_minus_beta2", 1.0 - beta2)], "scaled_grad"), g],
                          "grad_sq")], "new_v")
    # denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
    denom = op("Add", [op("Div", [op("Sqrt", [new_v], "sqrt_v"), scalar("bc2_sqrt")], "v_hat"),
                       const("eps", eps)], "denom")
    # param.addcdiv_(exp_avg, denom, value=-step_size)
    new_param = op("Add", [param, op("Mul", [op("Div", [new_m, denom], "ratio"), scalar("neg_step_size")],
                                     "update")], "new_param")
    return new_param, new_m, new_v


def nodes(base: str, inputs: list, outputs: list, attrs: dict, dtype: str) -> list[gs.Node]:
    """The standard-op nodes computing an AdamUpdate node (``base`` prefixes their names)."""
    values = {**_DEF.defaults(), **attrs}
    beta1, beta2 = attribute_double(values["beta1"]), attribute_double(values["beta2"])
    eps, weight_decay = float(values["eps"]), float(values["weight_decay"])
    # cann_scalars (optional) only serves the CANN kernel: the standard ops compute from the float64
    # scalars, as the CPU kernel
    param, grad, m0, v0, scalars = inputs[:5]
    results = dict(zip(("new_param", "new_m", "new_v"), outputs))
    f32, f64 = np.float32, np.float64
    var = variables(base, f32)
    const = lambda suffix, value, dt=f32: gs.Constant(f"{base}/{suffix}", np.array(value, dtype=dt))
    out: list[gs.Node] = []
    count = iter(range(1000))

    def emit(kind: str, args: list, result, **attributes):
        out.append(gs.Node(kind, f"{base}/{kind.lower()}_{next(count)}", attributes, inputs=args, outputs=[result]))
        return result

    def op(kind: str, args: list, role: str):
        result = results.get(role)
        return emit(kind, args, var(role) if result is None else result)

    def constant(role: str, value: float):  # "beta2" is the float64 one below; float32 here
        return const("beta2_f32" if role == "beta2" else role, value)

    def scalar(index: int, name: str):
        return emit("Gather", [scalars, const(f"index_{name}", index, np.int64)], var(name, f64))

    one = const("one", 1.0, f64)
    bc1 = emit("Sub", [one, emit("Mul", [scalar(1, "beta1_power"), const("beta1", beta1, f64)], var("beta1_t", f64))],
               var("bias_correction1", f64))
    bc2 = emit("Sub", [one, emit("Mul", [scalar(2, "beta2_power"), const("beta2", beta2, f64)], var("beta2_t", f64))],
               var("bias_correction2", f64))
    step64 = emit("Neg", [emit("Div", [scalar(0, "lr"), bc1], var("step_size", f64))], var("neg_step_size", f64))
    steps = {"neg_step_size": emit("Cast", [step64], var("step"), to=TensorProto.FLOAT),
             "bc2_sqrt": emit("Cast", [emit("Sqrt", [bc2], var("bc2_sqrt_f64", f64))], var("bc2_sqrt"),
                              to=TensorProto.FLOAT)}
    update(op, constant, steps.__getitem__, param, grad, m0, v0, beta1=beta1, beta2=beta2, eps=eps,
           weight_decay=weight_decay)
    return out
