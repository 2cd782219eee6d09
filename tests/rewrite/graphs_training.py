"""Builders of the cross-entropy and max-pool backward subgraphs as torch 2.13's exporter writes
them (node for node, constants as initializers), with switches that change one piece at a time
for the negative tests. ``export(...)`` gets the real thing from PyTorch."""

from __future__ import annotations

import contextlib
import functools

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from ort_ops.domain import IR_VERSION

OPSET = 20  # the exporter's


class _Graph:
    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def op(self, op_type, *inputs, outputs=1, **attrs):
        self.n += 1
        outs = [f"{op_type.lower()}_{self.n}" + (f"_{i}" if i else "") for i in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, name=f"node_{op_type}_{self.n}", **attrs))
        return outs[0] if outputs == 1 else outs

    def const(self, value, dtype):
        self.n += 1
        name = f"const_{self.n}"
        self.inits.append(numpy_helper.from_array(np.array(value, dtype=dtype), name))
        return name

    def model(self, inputs, outputs) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, "training", inputs, outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = IR_VERSION
        return model


def cross_entropy(n=6, c=5, *, reduction="mean", ignore_index=-100, dloss=1.0, equal_form=False,
                  share=None, label_smoothing=False, row_weights=False, loss_squared=False,
                  logits_shape=None, keep_log_softmax=False) -> onnx.ModelProto:
    """``F.cross_entropy(logits, target)`` and its backward: inputs ``logits`` [n, c] float32 and
    ``target`` [n] int64; outputs ``loss`` and ``dlogits``.

    ``equal_form``: the masks as ``Where(Equal(t, k), 0, t)``; ``share``: make that intermediate
    ("mask", "neg", "count") a graph output too; ``label_smoothing``: add a uniform term to the
    gradient; ``row_weights``: per-row gradient [n, 1] (reduction none, rows weighted);
    ``loss_squared``: the graph's loss is ce ** 2 (dloss computed from ce);
    ``keep_log_softmax``: the log-probabilities are a graph output too."""
    g = _Graph()
    shape = list(logits_shape or [n, c])
    i64, f32 = np.int64, np.float32
    k, zero_i, one_axis, zero_f = g.const(ignore_index, i64), g.const(0, i64), g.const([1], i64), g.const(0.0, f32)
    all_axes = g.const(np.zeros(0, i64), i64)
    outputs = []

    def masked(t, when_valid, other):
        if equal_form:
            return g.op("Where", g.op("Equal", t, k), other, when_valid)
        return g.op("Where", g.op("Not", g.op("Equal", t, k)), when_valid, other)

    lsm = g.op("LogSoftmax", "logits", axis=1)
    mask = g.op("Not", g.op("Equal", "target", k))
    sel = g.op("Where", mask, "target", zero_i)
    gather = g.op("GatherElements", lsm, g.op("Unsqueeze", sel, one_axis), axis=1)
    neg = g.op("Neg", g.op("Squeeze", gather, one_axis))
    rows = g.op("Where", mask, neg, zero_f)
    total = g.op("ReduceSum", rows, all_axes, keepdims=0, noop_with_empty_axes=0)
    count = None
    if reduction == "mean":
        count = g.op("Cast", g.op("ReduceSum", g.op("Cast", mask, to=TP.INT64), all_axes, keepdims=0,
                                  noop_with_empty_axes=0), to=TP.FLOAT)
    ce = g.op("Div", total, count) if reduction == "mean" else total
    d = g.const(dloss, f32)
    if loss_squared:
        loss = g.op("Mul", ce, ce)
        d = g.op("Mul", g.op("Mul", ce, g.const(2.0, f32)), d)
    else:
        loss = ce
    t1 = g.op("Unsqueeze", "target", one_axis)
    idx = masked(t1, t1, zero_i)
    minus_one = g.op("ConstantOfShape", g.const([shape[0], 1], i64),
                     value=numpy_helper.from_array(np.array([-1.0], f32)))
    scatter = g.op("ScatterElements", g.const(np.zeros(shape, f32), f32), idx, minus_one, axis=1, reduction="none")
    if row_weights:
        weight = g.const(np.full((shape[0], 1), 0.5, f32), f32)
    else:
        weight = g.op("Div", d, count) if reduction == "mean" else d
    grad = g.op("Mul", scatter, masked(t1, weight, zero_f))
    if label_smoothing:
        grad = g.op("Add", grad, g.const(np.full(shape, -0.01, f32), f32))
    probs = g.op("Exp", lsm)
    dlogits = g.op("Sub", grad, g.op("Mul", probs, g.op("ReduceSum", grad, one_axis, keepdims=1,
                                                              noop_with_empty_axes=0)))
    g.nodes.append(helper.make_node("Identity", [loss], ["loss"], name="loss_out"))
    g.nodes.append(helper.make_node("Identity", [dlogits], ["dlogits"], name="dlogits_out"))
    outputs = [helper.make_tensor_value_info("loss", TP.FLOAT, []),
               helper.make_tensor_value_info("dlogits", TP.FLOAT, shape)]
    if share is not None:
        shared, elem, dims = {"mask": (mask, TP.BOOL, shape[:1]), "neg": (neg, TP.FLOAT, shape[:1]),
                              "count": (count, TP.FLOAT, [])}[share]
        g.nodes.append(helper.make_node("Identity", [shared], [f"shared_{share}"], name="shared_out"))
        outputs.append(helper.make_tensor_value_info(f"shared_{share}", elem, dims))
    if keep_log_softmax:
        g.nodes.append(helper.make_node("Identity", [lsm], ["log_probs"], name="lsm_out"))
        outputs.append(helper.make_tensor_value_info("log_probs", TP.FLOAT, shape))
    inputs = [helper.make_tensor_value_info("logits", TP.FLOAT, shape),
              helper.make_tensor_value_info("target", TP.INT64, shape[:1])]
    return g.model(inputs, outputs)


def max_pool(shape=(2, 3, 6, 6), kernel=(2, 2), strides=(2, 2), pads=(0, 0, 0, 0), *, dtype=TP.FLOAT,
             flat_dy=True, final_reshape=True, indices_out=None, ceil_mode=0, dilations=None,
             ones_kernel=(1, 1), zeros=True) -> onnx.ModelProto:
    """``nn.MaxPool2d`` forward and backward: inputs ``X`` [N, C, H, W] and ``dY`` ([N, C*Ho*Wo]
    like a Linear layer's input gradient, or [N, C, Ho, Wo]); outputs ``Y`` and ``dX``.

    ``indices_out``: "indices" / "plane" makes the MaxPool indices / per-plane indices a graph
    output too; ``final_reshape=False``: dX stays [N*C, H*W]; ``ceil_mode``, ``dilations``,
    ``ones_kernel`` (the offset MaxPool's kernel), ``zeros=False`` (scatter into ones) change
    one piece."""
    g = _Graph()
    n, c, h, w = shape
    ho = (h + pads[0] + pads[2] - kernel[0]) // strides[0] + 1
    wo = (w + pads[1] + pads[3] - kernel[1]) // strides[1] + 1
    if ceil_mode:
        ho = -(-(h + pads[0] + pads[2] - kernel[0]) // strides[0]) + 1
        wo = -(-(w + pads[1] + pads[3] - kernel[1]) // strides[1]) + 1
    np_type = helper.tensor_dtype_to_np_dtype(dtype)
    i64 = np.int64
    extra = {"dilations": list(dilations)} if dilations else {"dilations": [1, 1]}
    y, idx = g.op("MaxPool", "X", outputs=2, kernel_shape=list(kernel), strides=list(strides), pads=list(pads),
                  ceil_mode=ceil_mode, storage_order=0, auto_pad="NOTSET", **extra)
    _, every = g.op("MaxPool", "X", outputs=2, kernel_shape=list(ones_kernel), strides=[1, 1], ceil_mode=0,
                    storage_order=0, auto_pad="NOTSET", **extra)
    first = g.op("Slice", every, g.const([0, 0], i64), g.const([1, 1], i64), g.const([2, 3], i64))
    plane = g.op("Sub", idx, first)
    g.nodes.append(helper.make_node("Identity", [y], ["Y"], name="y_out"))
    flat = [n * c, ho * wo]
    dy_shape = [n, c * ho * wo] if flat_dy else [n, c, ho, wo]
    updates = g.op("Reshape", "dY", g.const(flat, i64))
    index = g.op("Reshape", plane, g.const(flat, i64), allowzero=1)
    data = np.zeros((n * c, h * w), np_type) if zeros else np.ones((n * c, h * w), np_type)
    scattered = g.op("ScatterElements", g.const(data, np_type), index, updates, axis=1, reduction="add")
    dx = g.op("Reshape", scattered, g.const([n, c, h, w], i64), allowzero=1) if final_reshape else scattered
    g.nodes.append(helper.make_node("Identity", [dx], ["dX"], name="dx_out"))
    outputs = [helper.make_tensor_value_info("Y", dtype, [n, c, ho, wo]),
               helper.make_tensor_value_info("dX", dtype, [n, c, h, w] if final_reshape else [n * c, h * w])]
    if indices_out is not None:
        src = {"indices": idx, "plane": plane}[indices_out]
        g.nodes.append(helper.make_node("Identity", [src], [f"out_{indices_out}"], name="indices_out"))
        outputs.append(helper.make_tensor_value_info(f"out_{indices_out}", TP.INT64, [n, c, ho, wo]))
    inputs = [helper.make_tensor_value_info("X", dtype, list(shape)),
              helper.make_tensor_value_info("dY", dtype, dy_shape)]
    return g.model(inputs, outputs)


@contextlib.contextmanager
def torchlib_listed_once():
    """Speed only (as in test_real_graphs.py): torch's exporter lists onnxscript's torchlib
    (about 0.7 s) on every export; the listing depends only on the installed onnxscript."""
    try:
        from torch.onnx._internal.exporter import _registration
        apis = _registration.onnxscript_apis
        original = apis.get_torchlib_ops
    except (ImportError, AttributeError):
        yield
        return
    apis.get_torchlib_ops = functools.cache(original)
    try:
        yield
    finally:
        apis.get_torchlib_ops = original


def export(module, x, loss_fn, y):
    """PyTorch's own training graph (``ort_ops.training.export_training_graph``)."""
    from ort_ops import training

    return training.export_training_graph(module, (x,), loss_fn, targets=(y,), params_as_inputs=True, verify=False)
