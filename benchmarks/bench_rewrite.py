"""Benchmark fuse_elu_grad on synthetic ELU training graphs (1k/10k/100k nodes by default).

All contenders run in one process on the same graph; every figure is the median of
``--repeats`` runs. Each run starts after an untimed ``gc.collect()``; fuse, the gs round
trip and the onnxscript rule end with a timed collection of their own garbage, so each pays
for freeing its object graph (graphsurgeon's and onnx_ir's are reference cycles: collecting
the gs graph of a 100k-node model takes about 0.5-1 s) and none pays for another's.
fuse_elu_grad's phases are timed inside the pass
(``RewriteReport.timings``), not derived as a difference of totals:

  load        protobuf parse of the serialized model
  scan        protobuf-only test for candidate sites (no graphsurgeon graph)
  import      a single graph: one pass over its NodeProtos indexing producers, consumers, op
              types, names and domains (surgery.ProtoGraph; a node or tensor object is made
              only when a rule reaches it); with subgraphs or functions: private copy +
              gs.import_onnx
  match+edit  rules on that graph + building / splicing the EluGrad nodes
  cleanup     removing what the edit left unused: a single graph, a walk up from the edited
              nodes that finds the dead ones and the new order (nothing is unlinked: the
              export reads live nodes only); with subgraphs or functions gs cleanup() (+
              toposort() only when the edit broke the order: then through graphsurgeon)
  export      the original NodeProtos + the new ones, the initializers and value infos still
              read found through the index (gs.export_onnx with subgraphs/functions)
  fuse        the whole fuse_elu_grad call; it frees its graph itself (a single graph's objects
              by reference counting once their cycles are cut, a gs graph in the collection when
              the collector resumes), inside the call and in no phase above;
              save: SerializeToString of the result
  gs rt       graphsurgeon's own import -> cleanup().toposort() -> export of the same graph
              -> freeing it (``gs free``), with the garbage collector paused as fuse_elu_grad
              does (``gs rt gc`` = with the collector running, for reference)
  onnxscript  the same fusion as an onnxscript rewriter rule (deserialize, apply, serialize),
              also with the collector paused (``os gc`` = with the collector running)
  no-ELU      fuse_elu_grad on a graph without ELU backward (same size)
  1/10 ELU    fuse_elu_grad on a graph of the same size with an ELU layer every 10 layers and ReLU
  1/100 ELU   layers (with their backward, which the ELU rules try and reject) between: a real
              model's density of sites rather than the all-sites chain above
  m+e/gs      match+edit / gs rt;  fuse/gs, fuse/os: total-time ratios
Usage: python benchmarks/bench_rewrite.py [--sizes 1000 10000 100000] [--repeats 3] [--against DIR [--elu-every K]]

It measures the ``ort_ops`` Python finds: the installed one, or this checkout's when run as
``python -m benchmarks.bench_rewrite`` from the checkout root (or with ``PYTHONPATH=.``).

``--against DIR`` (a checkout of another revision, e.g. ``git worktree add /tmp/old 68f6d57``)
compares fuse_elu_grad here with DIR's instead: for each size the same serialized graph is fused
``--repeats`` times by each revision, alternately, each run in a fresh interpreter (so a machine
whose speed drifts during the run slows both alike), and the table gives both medians, their ratio
and the ratio's spread over the pairs.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import statistics
import sys
import time

import numpy as np
import onnx
import onnx_graphsurgeon as gs
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from ort_ops.rewrite import RewriteReport, fuse_elu_grad
from ort_ops.rewrite.surgery import gc_paused


def chain(n_nodes: int, with_backward: bool = True, elu_every: int = 1) -> onnx.ModelProto:
    """Layers of Elu forward + PyTorch-style backward (6 nodes/layer) chained through Add.

    ``elu_every`` k > 1: only every k-th layer is an ELU layer, the others are ReLU layers with
    PyTorch's backward (``Where(Y <= 0, 0, dY)``, 4 nodes with the Add) that the ELU rules try and
    reject: a graph of the same size with fewer sites, as a real model has."""
    nodes = []
    inits = [numpy_helper.from_array(np.array(0.0, np.float32), "zero")]
    x, dy, i = "x", "dy", 0
    while len(nodes) + (6 if with_backward else 2) <= max(n_nodes, 6) or not nodes:
        y = f"y{i}"
        if not with_backward:
            nodes += [helper.make_node("Elu", [x], [y], name=f"elu{i}"),
                      helper.make_node("Add", [y, y], [f"d{i}"], name=f"add{i}")]
            x = f"d{i}"
        elif i % elu_every == 0:
            nodes += [
                helper.make_node("Elu", [x], [y], name=f"elu{i}"),
                helper.make_node("LessOrEqual", [x, "zero"], [f"le{i}"], name=f"le{i}"),
                helper.make_node("Exp", [x], [f"e{i}"], name=f"exp{i}"),
                helper.make_node("Mul", [dy, f"e{i}"], [f"m{i}"], name=f"mul{i}"),
                helper.make_node("Where", [f"le{i}", f"m{i}", dy], [f"dx{i}"], name=f"where{i}"),
                helper.make_node("Add", [f"dx{i}", y], [f"d{i}"], name=f"add{i}"),
            ]
            dy, x = f"d{i}", y
        else:
            nodes += [
                helper.make_node("Relu", [x], [y], name=f"relu{i}"),
                helper.make_node("LessOrEqual", [y, "zero"], [f"le{i}"], name=f"le{i}"),
                helper.make_node("Where", [f"le{i}", "zero", dy], [f"dx{i}"], name=f"where{i}"),
                helper.make_node("Add", [f"dx{i}", y], [f"d{i}"], name=f"add{i}"),
            ]
            dy, x = f"d{i}", y
        i += 1
    vi = lambda n: helper.make_tensor_value_info(n, TP.FLOAT, [8])
    graph = helper.make_graph(nodes, "chain", [vi("x"), vi("dy")], [vi(dy if with_backward else x)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def timed(fn, *args, paused=False, collect=None):
    """``(fn(*args), seconds)``; with ``collect`` (a generation) the seconds include
    collecting fn's garbage. With the collector paused nothing gets promoted, so generation 0
    holds all of it and the rest of the heap is not traversed."""
    gc.collect()
    t = time.perf_counter()
    with gc_paused() if paused else contextlib.nullcontext():
        out = fn(*args)
    if collect is not None:
        gc.collect(collect)
    return out, time.perf_counter() - t


def gs_round_trip(model, paused=True):
    """graphsurgeon import -> cleanup().toposort() -> export -> free; seconds per step."""
    gc.collect()
    with gc_paused() if paused else contextlib.nullcontext():
        t0 = time.perf_counter()
        graph = gs.import_onnx(model)
        t1 = time.perf_counter()
        graph.cleanup().toposort()
        t2 = time.perf_counter()
        gs.export_onnx(graph)
        t3 = time.perf_counter()
        del graph
    gc.collect(0 if paused else 2)
    t4 = time.perf_counter()
    return t1 - t0, t2 - t1, t3 - t2, t4 - t3


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


COLUMNS = [
    ("nodes", 7, "d"), ("load", 6, ".3f"), ("scan", 6, ".3f"), ("import", 6, ".3f"),
    ("match+edit", 10, ".3f"), ("cleanup", 7, ".3f"), ("export", 6, ".3f"), ("fuse", 6, ".3f"),
    ("save", 6, ".3f"),
    ("gs imp", 6, ".3f"), ("gs c+t", 6, ".3f"), ("gs exp", 6, ".3f"), ("gs free", 7, ".3f"),
    ("gs rt", 6, ".3f"), ("gs rt gc", 8, ".3f"), ("m+e/gs", 6, ".1%"), ("fuse/gs", 7, ".2f"),
    ("onnxscript", 10, ".3f"), ("os gc", 6, ".3f"), ("fuse/os", 7, ".2f"), ("no-ELU", 6, ".3f"),
    ("1/10 ELU", 8, ".3f"), ("1/100 ELU", 9, ".3f"), ("us/node", 7, ".1f"),
]


def measure(n: int, repeats: int, with_onnxscript: bool) -> dict:
    data = chain(n).SerializeToString()
    plain = chain(n, with_backward=False)
    sparse = {k: chain(n, elu_every=k).SerializeToString() for k in (10, 100)}
    runs: dict[str, list[float]] = {}
    add = lambda key, value: runs.setdefault(key, []).append(value)
    for _ in range(repeats):
        model, t = timed(onnx.ModelProto.FromString, data)
        add("load", t)
        report = RewriteReport()
        fused, t = timed(lambda m=model, r=report: fuse_elu_grad(m, report=r), collect=0)
        add("fuse", t)
        ph = report.timings
        for key in ("scan", "import", "cleanup", "export"):
            add(key, ph[key])
        add("match+edit", ph["match"] + ph["edit"])
        _, t = timed(fused.SerializeToString)
        add("save", t)
        imp, ct, exp, free = gs_round_trip(model)
        add("gs imp", imp), add("gs c+t", ct), add("gs exp", exp), add("gs free", free)
        add("gs rt", imp + ct + exp + free)
        add("gs rt gc", sum(gs_round_trip(model, paused=False)))
        if with_onnxscript:
            out, t = timed(onnxscript_fuse, model, paused=True, collect=0)
            add("onnxscript", t)
            _, t = timed(onnxscript_fuse, model, collect=2)
            add("os gc", t)
            n_os = sum(node.op_type == "EluGrad" for node in out.graph.node)
            n_ours = sum(node.op_type == "EluGrad" for node in fused.graph.node)
            assert n_os == n_ours, (n_os, n_ours)
        _, t = timed(fuse_elu_grad, plain)
        add("no-ELU", t)
        for k, serialized in sparse.items():
            _, t = timed(fuse_elu_grad, onnx.ModelProto.FromString(serialized), collect=0)
            add(f"1/{k} ELU", t)
    row = {key: statistics.median(values) for key, values in runs.items()}
    row["nodes"] = len(model.graph.node)
    row["m+e/gs"] = row["match+edit"] / row["gs rt"]
    row["fuse/gs"] = row["fuse"] / row["gs rt"]
    row["onnxscript"] = row.get("onnxscript", float("nan"))
    row["os gc"] = row.get("os gc", float("nan"))
    row["fuse/os"] = row["fuse"] / row["onnxscript"]
    row["us/node"] = row["fuse"] / row["nodes"] * 1e6
    return row


# One timed fuse in a fresh interpreter started in the repository (``-c`` puts its folder first on
# the path): argv = repository, model file. The model is loaded and
# the collector run before the clock starts; the time includes collecting fuse's garbage, as above.
_ONE_FUSE = """
import gc, sys, time
import onnx
from ort_ops.rewrite import fuse_elu_grad
model = onnx.load(sys.argv[2])
fuse_elu_grad(onnx.load(sys.argv[3]))  # warm-up: first-call imports are not timed
gc.collect()
t = time.perf_counter()
out = fuse_elu_grad(model)
gc.collect(0)
print(time.perf_counter() - t, sum(n.op_type == "EluGrad" for n in out.graph.node))
"""


def fuse_seconds(repo: str, path: str, warm: str) -> tuple[float, int]:
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", _ONE_FUSE, repo, path, warm], capture_output=True, text=True,
                         check=True, env=env, cwd=repo).stdout.split()
    return float(out[0]), int(out[1])


def against(sizes: list[int], repeats: int, other: str, elu_every: int = 1) -> None:
    """fuse_elu_grad of this checkout vs ``other``'s, alternating runs on the same graphs
    (``chain(n, elu_every=elu_every)``)."""
    import tempfile

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    other = os.path.abspath(other)
    print(f"this checkout: {here}\nbaseline:      {other}")
    header = ("nodes", 7), ("here (s)", 9), ("baseline (s)", 12), ("here/base", 9), ("min-max of pairs", 17), \
        ("EluGrads", 8)
    print(" ".join(f"{name:>{width}}" for name, width in header))
    with tempfile.TemporaryDirectory() as tmp:
        warm = os.path.join(tmp, "warm.onnx")
        onnx.save(chain(60), warm)
        for n in sizes:
            path = os.path.join(tmp, f"chain{n}.onnx")
            onnx.save(chain(n, elu_every=elu_every), path)
            mine, base, ratios = [], [], []
            for i in range(repeats):
                order = [(here, mine), (other, base)] if i % 2 == 0 else [(other, base), (here, mine)]
                counts = set()
                for repo, into in order:
                    seconds, count = fuse_seconds(repo, path, warm)
                    into.append(seconds)
                    counts.add(count)
                if len(counts) != 1:
                    raise SystemExit(f"the revisions fused different numbers of sites: {sorted(counts)}")
                ratios.append(mine[-1] / base[-1])
            m, b = statistics.median(mine), statistics.median(base)
            print(f"{len(onnx.load(path).graph.node):7d} {m:9.3f} {b:12.3f} {m / b:9.3f} "
                  f"{min(ratios):8.3f}-{max(ratios):.3f} {counts.pop():8d}", flush=True)
    print(f"(fuse_elu_grad seconds, median of {repeats} runs each, alternating, fresh interpreter per run)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip-onnxscript", action="store_true")
    ap.add_argument("--against", metavar="DIR", help="compare fuse_elu_grad with the checkout in DIR")
    ap.add_argument("--elu-every", type=int, default=1, metavar="K",
                    help="with --against: graphs with an ELU layer every K layers (ReLU layers between)")
    args = ap.parse_args()
    if args.elu_every < 1:
        ap.error(f"--elu-every must be >= 1, not {args.elu_every}")
    if args.against:
        return against(args.sizes, args.repeats, args.against, args.elu_every)
    measure(60, 1, not args.skip_onnxscript)  # warm-up: first-call imports are not timed
    print(" ".join(f"{name:>{width}}" for name, width, _ in COLUMNS))
    for n in args.sizes:
        row = measure(n, args.repeats, not args.skip_onnxscript)
        print(" ".join(f"{row[name]:{width}{fmt}}" for name, width, fmt in COLUMNS), flush=True)
    print(f"(seconds, median of {args.repeats} runs)")


if __name__ == "__main__":
    main()
