"""Benchmark fuse_elu_grad on synthetic ELU training graphs (1k/10k/100k nodes by default).

Columns: load (protobuf parse), match+edit (fuse minus graphsurgeon import/cleanup/export),
save (serialize), fuse total; (a) graphsurgeon import -> cleanup/toposort -> export round trip;
(b) the same fusion as an onnxscript rewriter rule; a no-ELU graph's fuse (protobuf scan only).
Usage: python benchmarks/bench_rewrite.py [--sizes 1000 10000 100000]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import onnx
import onnx_graphsurgeon as gs
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from rewrite import fuse_elu_grad  # noqa: E402  (the checkout, not an installed copy)


def chain(n_nodes: int, with_backward: bool = True) -> onnx.ModelProto:
    """Layers of Elu forward + PyTorch-style backward (6 nodes/layer) chained through Add."""
    nodes, per = [], 6 if with_backward else 2
    inits = [numpy_helper.from_array(np.array(0.0, np.float32), "zero")]
    x, dy = "x", "dy"
    for i in range(max(1, n_nodes // per)):
        y = f"y{i}"
        nodes.append(helper.make_node("Elu", [x], [y], name=f"elu{i}"))
        if with_backward:
            nodes += [
                helper.make_node("LessOrEqual", [x, "zero"], [f"le{i}"], name=f"le{i}"),
                helper.make_node("Exp", [x], [f"e{i}"], name=f"exp{i}"),
                helper.make_node("Mul", [dy, f"e{i}"], [f"m{i}"], name=f"mul{i}"),
                helper.make_node("Where", [f"le{i}", f"m{i}", dy], [f"dx{i}"], name=f"where{i}"),
                helper.make_node("Add", [f"dx{i}", y], [f"d{i}"], name=f"add{i}"),
            ]
            dy = f"d{i}"
        else:
            nodes.append(helper.make_node("Add", [y, y], [f"d{i}"], name=f"add{i}"))
        x = f"d{i}" if not with_backward else y
    vi = lambda n: helper.make_tensor_value_info(n, TP.FLOAT, [8])  # noqa: E731
    graph = helper.make_graph(nodes, "chain", [vi("x"), vi("dy")], [vi(dy if with_backward else x)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def timed(fn, *args):
    t = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t


def onnxscript_fuse(model):
    from onnxscript import ir
    from onnxscript.rewriter import pattern

    def target(op, x, dy, zero):
        return op.Where(op.LessOrEqual(x, zero), op.Mul(dy, op.Exp(x)), dy)

    def replace(op, x, dy, zero):
        elu = next(u.node for u in x.uses() if u.node.op_type == "Elu")
        return op.EluGrad(dy, elu.outputs[0], alpha=1.0, _domain="ai.ortops")

    rule = pattern.RewriteRule(target, replace)
    m = ir.serde.deserialize_model(model)
    rule.apply_to_model(m)
    return ir.serde.serialize_model(m)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--skip-onnxscript", action="store_true")
    args = ap.parse_args()
    print(f"{'nodes':>7} {'load':>7} {'match+edit':>10} {'save':>7} {'fuse':>7} {'gs rt':>7} "
          f"{'m+e/gs':>7} {'onnxscript':>10} {'fuse/os':>7} {'no-ELU':>7}")
    for n in args.sizes:
        data = chain(n).SerializeToString()
        model, t_load = timed(onnx.ModelProto.FromString, data)
        fused, t_fuse = timed(fuse_elu_grad, model)
        _, t_save = timed(fused.SerializeToString)
        g, t_imp = timed(gs.import_onnx, model)
        _, t_clean = timed(lambda: g.cleanup().toposort())
        _, t_exp = timed(gs.export_onnx, g)
        gs_rt = t_imp + t_clean + t_exp
        match_edit = max(0.0, t_fuse - gs_rt)
        t_os = float("nan")
        if not args.skip_onnxscript:
            _, t_os = timed(onnxscript_fuse, model)
        plain = chain(n, with_backward=False)
        _, t_noelu = timed(fuse_elu_grad, plain)
        print(f"{len(model.graph.node):7d} {t_load:7.3f} {match_edit:10.3f} {t_save:7.3f} {t_fuse:7.3f} "
              f"{gs_rt:7.3f} {match_edit / gs_rt:7.1%} {t_os:10.3f} {t_fuse / t_os:7.2f} {t_noelu:7.3f}")


if __name__ == "__main__":
    main()
