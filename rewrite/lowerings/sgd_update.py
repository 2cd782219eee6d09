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
"""

from __future__ import annotations

import numpy as np
import onnx_graphsurgeon as gs

from ort_ops.ops.sgd_update import OP as _DEF

OP = "SGDUpdate"


def nodes(base: str, inputs: list, outputs: list, attrs: dict, dtype: str) -> list[gs.Node]:
    """The standard-op nodes computing an SGDUpdate node (``base`` prefixes their names)."""
    values = {**_DEF.defaults(), **attrs}
    momentum, weight_decay = float(values["momentum"]), float(values["weight_decay"])
    nesterov = int(values["nesterov"])
    param, grad, buf, scalars = inputs
    f32 = np.float32
    var = lambda suffix: gs.Variable(f"{base}/{suffix}", dtype=f32)
    const = lambda suffix, value, dt=f32: gs.Constant(f"{base}/{suffix}", np.array(value, dtype=dt))
    out: list[gs.Node] = []
    count = iter(range(1000))

    def op(kind: str, args: list, result):
        out.append(gs.Node(kind, f"{base}/{kind.lower()}_{next(count)}", inputs=args, outputs=[result]))
        return result

    def scalar(index: int, name: str):
        return op("Gather", [scalars, const(f"index_{name}", index, np.int64)], var(name))

    g = grad
    if weight_decay != 0:
        g = op("Add", [g, op("Mul", [param, const("weight_decay", weight_decay)], var("decay"))], var("decayed_grad"))
    if momentum != 0:
        new_buf = outputs[1]
        op("Add", [op("Mul", [buf, scalar(1, "step_momentum")], var("kept")),
                   op("Mul", [g, scalar(2, "grad_scale")], var("scaled_grad"))], new_buf)
        if nesterov:
            g = op("Add", [g, op("Mul", [new_buf, const("momentum", momentum)], var("lookahead"))], var("nesterov"))
        else:
            g = new_buf
    neg_lr = op("Neg", [scalar(0, "lr")], var("neg_lr"))
    op("Add", [param, op("Mul", [g, neg_lr], var("step"))], outputs[0])
    return out
