"""Time rewrite.placement.place on two graph shapes at 10k and 100k nodes (issue 19, item 13).

  fan-out  n/2 Transposes of one tensor, each read by a MatMul: every Transpose folds into its
           reader (a Gemm with transA), so the tensor's list of readers changes n/2 times
  chain    n Relu nodes, each reading the previous one's output

Each figure is the best of ``--repeats`` calls of ``place(model)`` (the model built beforehand,
the library's kernel table loaded by a warm-up call): the process's CPU time (``time.process_time``:
the pass is single-threaded, so on an idle machine it is the wall time, and on a loaded one it is
what the pass costs) and, in brackets, the wall time. One child process per tree and size, so that
``--tree`` can time another checkout's code (e.g. ``--tree /work/main`` for the code before a
change) with the same library; a child that runs past ``--timeout`` seconds is reported as such.

Usage: python benchmarks/bench_placement.py [--sizes 10000 100000] [--repeats 3]
       [--tree PATH ...] [--timeout 300]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _model(nodes, inputs, outputs, inits=()):
    from ort_ops.domain import IR_VERSION

    model = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, list(inits)),
                              opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = IR_VERSION
    return model


def fan_out(n: int):
    """n nodes: n/2 Transposes of x [4, 3], each read by a MatMul with w [4, 2]."""
    nodes, outputs = [], []
    for i in range(n // 2):
        nodes.append(helper.make_node("Transpose", ["x"], [f"t{i}"], perm=[1, 0], name=f"transpose{i}"))
        nodes.append(helper.make_node("MatMul", [f"t{i}", "w"], [f"y{i}"], name=f"matmul{i}"))
        outputs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [3, 2]))
    w = numpy_helper.from_array(np.ones((4, 2), np.float32), "w")
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3])], outputs, [w])


def chain(n: int):
    """n Relu nodes in a row."""
    nodes = [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"], name=f"relu{i}") for i in range(n)]
    return _model(nodes, [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [2, 3])],
                  [helper.make_tensor_value_info(f"t{n}", TensorProto.FLOAT, [2, 3])])


SHAPES = {"fan-out": fan_out, "chain": chain}


def _child(shape: str, n: int, repeats: int) -> None:
    from ort_ops.rewrite.placement import place

    model = SHAPES[shape](n)
    place(SHAPES[shape](10))  # warm-up: the kernel table, schema registration
    cpu = wall = float("inf")
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        place(model)
        cpu, wall = min(cpu, time.process_time() - start_cpu), min(wall, time.perf_counter() - start)
    print(f"@@{cpu} {wall}")


def _time(tree: str, shape: str, n: int, repeats: int, timeout: float) -> str:
    # started in ``tree`` (``-c`` puts it first on the path: its ort_ops), this file's folder after it
    code = f"import bench_placement; bench_placement._child({shape!r}, {n}, {repeats})"
    env = dict(os.environ, PYTHONPATH=os.path.join(HERE, "benchmarks"))
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                              cwd=tree, env=env)
    except subprocess.TimeoutExpired:
        return f"> {timeout:.0f} s"
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("@@")]
    if proc.returncode != 0 or not lines:
        return "failed: " + (proc.stderr.strip().splitlines() or ["?"])[-1]
    cpu, wall = (float(v) for v in lines[-1][2:].split())
    return f"{cpu:.2f} s, {cpu / n * 1e6:.0f} us/node [{wall:.2f} s]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tree", nargs="+", default=[HERE], help="source trees whose rewrite/ to time")
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args()
    print(f"{'shape':8s} {'nodes':>7s}  " + "  ".join(f"{t:>32s}" for t in args.tree))
    for shape in SHAPES:
        for n in args.sizes:
            cells = [_time(tree, shape, n, args.repeats, args.timeout) for tree in args.tree]
            print(f"{shape:8s} {n:7d}  " + "  ".join(f"{c:>32s}" for c in cells), flush=True)


if __name__ == "__main__":
    main()
