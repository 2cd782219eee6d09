"""SGDUpdate in standard ONNX ops, bit-exact in ONNX Runtime (NaN payloads aside): the update graph
``ort_ops.training.optim.SGD`` builds for float64 parameters, with the scalars read from the
``scalars`` input.

    lr, mom, gscale = Gather(scalars, 0 / 1 / 2)
    g = Add(grad, Mul(param, weight_decay))                          (weight_decay != 0)
    buf = Add(Mul(momentum_buffer, mom), Mul(g, gscale))             (momentum != 0)
    g = Add(g, Mul(buf, momentum)) if nesterov else buf              (momentum != 0)
    new_param = Add(param, Mul(g, Neg(lr)))

Each ONNX op is one float32 IEEE operation in ORT, in the op's order; which NaN comes out of an
operation with two NaN operands is ORT's choice (the op does not specify it either).

:func:`update` is that formula written once: this lowering and the unfused optimizer graph
(:mod:`ort_ops.training.optim`) both build their nodes with it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx_graphsurgeon as gs

from ort_ops.ops.sgd_update import OP as _DEF
from ort_ops.rewrite.lowerings._nodes import variables

OP = "SGDUpdate"


def update(op: Callable, const: Callable, scalar: Callable, param, grad, buf, *, momentum: float,
           weight_decay: float, nesterov: bool):
    """``(new_param, new_buf)`` (``new_buf`` None without momentum) of PyTorch's SGD step, emitted in
    order through ``op(kind, args, role)`` (a node computing value ``role``), ``const(role, value)``
    and ``scalar(role)`` (the step scalars ``step_momentum``, ``grad_scale``, ``neg_lr``, asked for
    where they are used)."""
    g = grad
    if weight_decay != 0:
        g = op("Add", [g, op("Mul", [param, const("weight_decay", weight_decay)], "decay")], "decayed_grad")
    new_buf = None
    if momentum != 0:
        new_buf = op("Add", [op("Mul", [buf, scalar("step_momentum")], "kept"),
                             op("Mul", [g, scalar("grad_scale")], "scaled_grad")], "new_buf")
        if nesterov:
            g = op("Add", [g, op("Mul", [new_buf, const("momentum", momentum)], "lookahead")], "nesterov")
        else:
            g = new_buf
    return op("Add", [param, op("Mul", [g, scalar("neg_lr")], "step")], "new_param"), new_buf


def nodes(base: str, inputs: list, outputs: list, attrs: dict, dtype: str) -> list[gs.Node]:
    """The standard-op nodes computing an SGDUpdate node (``base`` prefixes their names)."""
    values = {**_DEF.defaults(), **attrs}
    param, grad, buf, scalars = inputs
    f32 = np.float32
    var = variables(base, f32)
    const = lambda suffix, value, dt=f32: gs.Constant(f"{base}/{suffix}", np.array(value, dtype=dt))
    results = dict(zip(("new_param", "new_buf"), outputs))
    out: list[gs.Node] = []
    count = iter(range(1000))

    def emit(kind: str, args: list, result):
        out.append(gs.Node(kind, f"{base}/{kind.lower()}_{next(count)}", inputs=args, outputs=[result]))
        return result

    def op(kind: str, args: list, role: str):
        result = results.get(role)
        return emit(kind, args, var(role) if result is None else result)

    def gather(index: int, name: str):
        return emit("Gather", [scalars, const(f"index_{name}", index, np.int64)], var(name))

    def scalar(role: str):
        if role == "neg_lr":
            return emit("Neg", [gather(0, "lr")], var("neg_lr"))
        return gather({"step_momentum": 1, "grad_scale": 2}[role], role)

    update(op, const, scalar, param, grad, buf, momentum=float(values["momentum"]),
           weight_decay=float(values["weight_decay"]), nesterov=bool(int(values["nesterov"])))
    return out
