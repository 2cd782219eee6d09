"""SoftmaxCrossEntropyLossAndGrad in standard ONNX ops, in float32 (within the op's tolerance; not
bit-exact, like the op's own kernels: exp and log round differently in every implementation).

    x = Cast(logits, FLOAT); d = Cast(dloss, FLOAT)                  (float16 / bfloat16 only)
    valid = Not(Equal(target, ignore_index)); safe = Where(valid, target, 0)
    lsm = LogSoftmax(x, axis=1); picked = Squeeze(GatherElements(lsm, Unsqueeze(safe, 1), axis=1), 1)
    total = ReduceSum(Where(valid, Neg(picked), 0)); count = ReduceSum(Cast(valid, FLOAT))
    loss = total / count, w = d / count   ("mean")     loss = total, w = d   ("sum")
    q = Cast(Equal(Unsqueeze(target, 1), Range(0, C)), FLOAT)
    dlogits = (Softmax(x, axis=1) - q) * Unsqueeze(Where(valid, w, 0), 1)   [then Cast both to T]

With label_smoothing eps != 0: q = q * (1 - eps) + eps / Cast(C, FLOAT), and each row's loss is
``Neg(ReduceSum(Mul(q, lsm), axes=[1]))`` instead of the picked log-probability.

With class weights w (input 3; w = Cast(weight, FLOAT) for float16 / bfloat16)::

    w_t   = ReduceSum(Mul(one_hot, w), axes=[1])       (w[target[n]]; one_hot: q before smoothing)
    eps = 0:  rows = Where(valid, Mul(Neg(picked), w_t), 0)
    eps > 0:  q = Mul(q, w); rows = Where(valid, Neg(ReduceSum(Mul(q, lsm), axes=[1])), 0)
    count = ReduceSum(Where(valid, w_t, 0))              (W, the weight sum, divides for "mean")
    dlogits = (Softmax(x, axis=1) * ReduceSum(q, axes=[1], keepdims=1) - q) * Unsqueeze(Where(valid, w, 0), 1)

(q = Mul(one_hot, w) for eps = 0). "mean" with W = 0 divides by 0 as PyTorch's graph does: NaN
where the op's reference gives NaN, but +-inf where eps > 0 makes the total non-zero (the op: NaN).

A target outside [0, C) that is not ignore_index fails in GatherElements, as in the op's CPU kernel.
"""

from __future__ import annotations

import numpy as np
import onnx_graphsurgeon as gs
from onnx import TensorProto

from ort_ops.dtypes import onnx_type
from ort_ops.ops.softmax_cross_entropy_loss_and_grad import DEFAULT_IGNORE_INDEX, DEFAULT_LABEL_SMOOTHING
from ort_ops.rewrite.lowerings._nodes import variables

OP = "SoftmaxCrossEntropyLossAndGrad"


def nodes(base: str, inputs: list, outputs: list, attrs: dict, dtype: str) -> list[gs.Node]:
    """The standard-op nodes computing a SoftmaxCrossEntropyLossAndGrad node."""
    (logits, target, dloss), (loss, dlogits) = inputs[:3], outputs
    class_weight = inputs[3] if len(inputs) > 3 and inputs[3].name else None
    ignore = int(attrs.get("ignore_index", DEFAULT_IGNORE_INDEX))
    reduction = attrs.get("reduction", "mean")
    reduction = reduction.decode() if isinstance(reduction, bytes) else reduction
    eps = attrs.get("label_smoothing")
    eps = DEFAULT_LABEL_SMOOTHING if eps is None else float(eps)
    f32 = np.float32
    var = variables(base, f32)
    const = lambda suffix, values, dt: gs.Constant(f"{base}/{suffix}", np.array(values, dtype=dt))
    axis1 = const("axis_1", [1], np.int64)
    zero = const("zero", 0.0, f32)
    out = []
    x, d, loss32, dl32 = logits, dloss, loss, dlogits
    if dtype != "float32":
        x, d, loss32, dl32 = var("logits_f32"), var("dloss_f32"), var("loss_f32"), var("dlogits_f32")
        out += [gs.Node("Cast", f"{base}/cast_logits", {"to": TensorProto.FLOAT}, [logits], [x]),
                gs.Node("Cast", f"{base}/cast_dloss", {"to": TensorProto.FLOAT}, [dloss], [d])]
    w32 = class_weight
    if class_weight is not None and dtype != "float32":
        w32 = var("weight_f32")
        out.append(gs.Node("Cast", f"{base}/cast_weight", {"to": TensorProto.FLOAT}, [class_weight], [w32]))
    ignored, valid, safe = var("ignored", np.bool_), var("valid", np.bool_), var("safe_target", np.int64)
    safe1, lsm, gathered, picked = var("safe_target_1", np.int64), var("log_softmax"), var("gathered"), var("picked")
    neg, rows, total = var("neg"), var("rows"), var("total")
    valid_f, count = var("valid_f32"), var("count")
    shape, classes, iota = var("shape", np.int64), var("classes", np.int64), var("iota", np.int64)
    target1, hot, q = var("target_1", np.int64), var("hot", np.bool_), var("one_hot")
    out += [
        gs.Node("Equal", f"{base}/is_ignored", inputs=[target, const("ignore_index", ignore, np.int64)],
                outputs=[ignored]),
        gs.Node("Not", f"{base}/valid", inputs=[ignored], outputs=[valid]),
        gs.Node("LogSoftmax", f"{base}/log_softmax", {"axis": 1}, [x], [lsm]),
        gs.Node("Shape", f"{base}/shape", inputs=[x], outputs=[shape]),
        gs.Node("Gather", f"{base}/classes", {"axis": 0}, [shape, const("index_1", 1, np.int64)], [classes]),
        gs.Node("Range", f"{base}/iota", inputs=[const("start", 0, np.int64), classes, const("delta", 1, np.int64)],
                outputs=[iota]),
        gs.Node("Unsqueeze", f"{base}/target_1", inputs=[target, axis1], outputs=[target1]),
        gs.Node("Equal", f"{base}/hot", inputs=[target1, iota], outputs=[hot]),
        gs.Node("Cast", f"{base}/one_hot", {"to": TensorProto.FLOAT}, [hot], [q]),
    ]
    if class_weight is not None:  # w_t = w[target] (w[ignore_index] or 0 in ignored rows: masked below)
        hot_w, w_t = var("one_hot_weighted"), var("target_weight")
        out += [gs.Node("Mul", f"{base}/one_hot_weighted", inputs=[q, w32], outputs=[hot_w]),
                gs.Node("ReduceSum", f"{base}/target_weight", {"keepdims": 0}, [hot_w, axis1], [w_t])]
    if eps == 0.0:  # the target's log-probability (a -inf logit of another class adds nothing)
        out += [
            gs.Node("Where", f"{base}/safe_target", inputs=[valid, target, const("class_0", 0, np.int64)],
                    outputs=[safe]),
            gs.Node("Unsqueeze", f"{base}/safe_target_1", inputs=[safe, axis1], outputs=[safe1]),
            gs.Node("GatherElements", f"{base}/gather", {"axis": 1}, [lsm, safe1], [gathered]),
            gs.Node("Squeeze", f"{base}/picked", inputs=[gathered, axis1], outputs=[picked]),
        ]
        if class_weight is not None:  # -w_t * lsm[target]: Neg below
            picked_unweighted, picked = picked, var("picked_weighted")
            out.append(gs.Node("Mul", f"{base}/picked_weighted", inputs=[picked_unweighted, w_t], outputs=[picked]))
            q = hot_w
    else:  # q = (1 - eps) * one_hot + eps / C; the row's sum of q * lsm
        classes_f, uniform, kept, smooth, weighted = (var("classes_f32"), var("uniform"), var("kept"),
                                                      var("smoothed"), var("q_times_lsm"))
        out += [
            gs.Node("Cast", f"{base}/classes_f32", {"to": TensorProto.FLOAT}, [classes], [classes_f]),
            gs.Node("Div", f"{base}/uniform", inputs=[const("eps", eps, f32), classes_f], outputs=[uniform]),
            gs.Node("Mul", f"{base}/kept", inputs=[q, const("one_minus_eps", 1.0 - eps, f32)], outputs=[kept]),
            gs.Node("Add", f"{base}/smoothed", inputs=[kept, uniform], outputs=[smooth]),
        ]
        if class_weight is not None:  # q = ((1 - eps) * one_hot + eps / C) * w
            unweighted, smooth = smooth, var("smoothed_weighted")
            out.append(gs.Node("Mul", f"{base}/smoothed_weighted", inputs=[unweighted, w32], outputs=[smooth]))
        out += [
            gs.Node("Mul", f"{base}/q_times_lsm", inputs=[smooth, lsm], outputs=[weighted]),
            gs.Node("ReduceSum", f"{base}/picked", {"keepdims": 0}, [weighted, axis1], [picked]),
        ]
        q = smooth
    out += [
        gs.Node("Neg", f"{base}/neg", inputs=[picked], outputs=[neg]),
        gs.Node("Where", f"{base}/rows", inputs=[valid, neg, zero], outputs=[rows]),
        gs.Node("ReduceSum", f"{base}/total", {"keepdims": 0}, [rows], [total if reduction == "mean" else loss32]),
    ]
    weight = d
    if reduction == "mean":
        weight = var("weight")
        if class_weight is None:
            out.append(gs.Node("Cast", f"{base}/valid_f32", {"to": TensorProto.FLOAT}, [valid], [valid_f]))
        else:  # W: the weights of the rows that count
            out.append(gs.Node("Where", f"{base}/valid_weight", inputs=[valid, w_t, zero], outputs=[valid_f]))
        out += [
            gs.Node("ReduceSum", f"{base}/count", {"keepdims": 0}, [valid_f], [count]),
            gs.Node("Div", f"{base}/mean", inputs=[total, count], outputs=[loss32]),
            gs.Node("Div", f"{base}/weight", inputs=[d, count], outputs=[weight]),
        ]
    probs, diff, w, w1 = var("softmax"), var("softmax_minus_one_hot"), var("row_weight"), var("row_weight_1")
    out.append(gs.Node("Softmax", f"{base}/softmax", {"axis": 1}, [x], [probs]))
    if class_weight is not None:  # softmax * sum_c q[c]: q's mass is no longer 1
        mass, scaled = var("q_mass"), var("softmax_times_mass")
        out += [gs.Node("ReduceSum", f"{base}/q_mass", {"keepdims": 1}, [q, axis1], [mass]),
                gs.Node("Mul", f"{base}/softmax_times_mass", inputs=[probs, mass], outputs=[scaled])]
        probs = scaled
    out += [
        gs.Node("Sub", f"{base}/diff", inputs=[probs, q], outputs=[diff]),
        gs.Node("Where", f"{base}/row_weight", inputs=[valid, weight, zero], outputs=[w]),
        gs.Node("Unsqueeze", f"{base}/row_weight_1", inputs=[w, axis1], outputs=[w1]),
        gs.Node("Mul", f"{base}/dlogits", inputs=[diff, w1], outputs=[dl32]),
    ]
    if dtype != "float32":
        out += [gs.Node("Cast", f"{base}/cast_loss", {"to": onnx_type(dtype)}, [loss32], [loss]),
                gs.Node("Cast", f"{base}/cast_dlogits", {"to": onnx_type(dtype)}, [dl32], [dlogits])]
    return out
