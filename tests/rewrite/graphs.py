"""Builders of ELU training-graph fragments in every form the exporters write (for tests)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from ort_ops.domain import IR_VERSION, ONNX_OPSET

ELEM = {"float32": TP.FLOAT, "float16": TP.FLOAT16, "bfloat16": TP.BFLOAT16}
SHAPE = [4, 6]


class Builder:
    """Tiny graph builder: ``b.op("Mul", a, c)`` returns the output name; constants in 3 kinds."""

    def __init__(self, const_kind: str = "initializer"):
        self.nodes, self.inits, self.const_kind, self.n = [], [], const_kind, 0

    def name(self, prefix):
        self.n += 1
        return f"{prefix}_{self.n}"

    def op(self, op_type, *inputs, domain="", **attrs):
        out = self.name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], name=self.name(op_type),
                                           domain=domain, **attrs))
        return out

    def const(self, value, dtype=np.float32):
        """A scalar constant, as an initializer, a Constant node or Cast(Constant int64)."""
        kind = self.const_kind
        if kind == "cast" and float(value).is_integer():
            c = self.op("Constant", value=numpy_helper.from_array(np.array(int(value), np.int64)))
            return self.op("Cast", c, to=helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))
        arr = np.array(value, dtype=dtype)
        if kind == "initializer":
            name = self.name("const")
            self.inits.append(numpy_helper.from_array(arr, name))
            return name
        return self.op("Constant", value=numpy_helper.from_array(arr))

    def model(self, inputs, outputs, opsets=None) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, "elu_training", inputs, outputs, self.inits)
        model = helper.make_model(graph, opset_imports=opsets or [helper.make_opsetid("", ONNX_OPSET)])
        model.ir_version = IR_VERSION
        return model


def elu_backward(form="torch", dtype="float32", alpha=1.0, *, const_kind="initializer",
                 swap=False, layers=1) -> onnx.ModelProto:
    """Inputs X, dY; outputs Y (forward) and dX (backward) for ``layers`` independent ELUs.

    forms: torch, torch_noopt, inplace, less, min, tf. dtype float16/bfloat16 wraps the
    float32 backward math in Cast(.., FLOAT) / Cast(.., dtype) as the exporters do.
    """
    b = Builder(const_kind)
    elem = ELEM[dtype]
    wrap = dtype != "float32"
    inputs, outputs = [], []
    for i in range(layers):
        x, dy, y_out, dx_out = f"X{i}", f"dY{i}", f"Y{i}", f"dX{i}"
        inputs += [helper.make_tensor_value_info(x, elem, SHAPE),
                   helper.make_tensor_value_info(dy, elem, SHAPE)]
        outputs += [helper.make_tensor_value_info(y_out, elem, SHAPE),
                    helper.make_tensor_value_info(dx_out, elem, SHAPE)]
        mul = (lambda p, q: b.op("Mul", q, p)) if swap else (lambda p, q: b.op("Mul", p, q))
        up = (lambda t: b.op("Cast", t, to=TP.FLOAT)) if wrap else (lambda t: t)
        # forward
        if form == "torch_noopt":
            one_x = b.op("CastLike", b.const(1.0), x)
            elu_in = b.op("Mul", x, one_x)
            elu = b.op("Elu", elu_in, alpha=alpha)
            y = b.op("Mul", elu, b.op("CastLike", b.const(1.0), x))
        else:
            elu_in = x
            y = b.op("Elu", x, alpha=alpha)
        b.nodes.append(helper.make_node("Identity", [y], [y_out], name=b.name("fwd_out")))
        # backward
        if form in ("torch", "torch_noopt"):
            xb = elu_in if form == "torch_noopt" else x
            g = mul(up(dy), b.const(1.0)) if form == "torch_noopt" else up(dy)
            le = b.op("LessOrEqual", up(xb), b.const(0.0))
            scaled = g if alpha == 1.0 else mul(g, b.const(alpha))
            m = mul(scaled, b.op("Exp", up(xb)))
            res = b.op("Where", le, m, up(dy))
        elif form in ("inplace", "less"):
            cmp = "LessOrEqual" if form == "inplace" else "Less"
            c = b.op(cmp, up(y), b.const(0.0))
            shifted = b.op("Add", up(y), b.const(alpha)) if not swap else b.op("Add", b.const(alpha), up(y))
            m = mul(up(dy), shifted)
            res = b.op("Where", c, m, up(dy))
        elif form == "min":
            mn = b.op("Min", up(y), b.const(0.0))
            res = mul(b.op("Add", mn, b.const(1.0)), up(dy))
        elif form == "tf":
            res = b.op("EluGrad", dy, y, domain="ai.onnx.converters.tensorflow")
        else:
            raise ValueError(form)
        if wrap and form != "tf":
            res = b.op("Cast", res, to=elem)
        b.nodes.append(helper.make_node("Identity", [res], [dx_out], name=b.name("bwd_out")))
    # Elu accepts bfloat16 from opset 22 on
    opsets = [helper.make_opsetid("", 22 if dtype == "bfloat16" else ONNX_OPSET)]
    if form == "tf":
        opsets.append(helper.make_opsetid("ai.onnx.converters.tensorflow", 1))
    return b.model(inputs, outputs, opsets)


def mlp(dtype="float32", alpha=1.0, form="torch") -> onnx.ModelProto:
    """A 2-layer ELU MLP training step: inputs x, target; outputs loss and weight gradients."""
    rng = np.random.default_rng(0)
    b = Builder("initializer")
    elem = ELEM[dtype]
    w1 = numpy_helper.from_array(rng.normal(0, 0.5, (6, 8)).astype(np.float32), "fc1.weight")
    w2 = numpy_helper.from_array(rng.normal(0, 0.5, (8, 3)).astype(np.float32), "fc2.weight")
    b.inits += [w1, w2]
    h = b.op("MatMul", "x", "fc1.weight")
    y = b.op("Elu", h, alpha=alpha)
    out = b.op("MatMul", y, "fc2.weight")
    diff = b.op("Sub", out, "target")
    loss = b.op("ReduceSum", b.op("Mul", diff, diff), keepdims=0)
    b.nodes.append(helper.make_node("Identity", [loss], ["loss"], name="loss_out"))
    d_out = b.op("Mul", diff, b.const(2.0))
    gw2 = b.op("MatMul", b.op("Transpose", y, perm=[1, 0]), d_out)
    dy = b.op("MatMul", d_out, b.op("Transpose", "fc2.weight", perm=[1, 0]))
    if form == "torch":
        le = b.op("LessOrEqual", h, b.const(0.0))
        g = dy if alpha == 1.0 else b.op("Mul", dy, b.const(alpha))
        dh = b.op("Where", le, b.op("Mul", g, b.op("Exp", h)), dy)
    else:
        le = b.op("LessOrEqual", y, b.const(0.0))
        dh = b.op("Where", le, b.op("Mul", dy, b.op("Add", y, b.const(alpha))), dy)
    gw1 = b.op("MatMul", b.op("Transpose", "x", perm=[1, 0]), dh)
    b.nodes += [helper.make_node("Identity", [gw1], ["grad.fc1.weight"], name="g1"),
                helper.make_node("Identity", [gw2], ["grad.fc2.weight"], name="g2")]
    assert dtype == "float32"
    return b.model(
        [helper.make_tensor_value_info("x", elem, [5, 6]),
         helper.make_tensor_value_info("target", elem, [5, 3])],
        [helper.make_tensor_value_info("loss", elem, []),
         helper.make_tensor_value_info("grad.fc1.weight", elem, [6, 8]),
         helper.make_tensor_value_info("grad.fc2.weight", elem, [8, 3])],
    )
