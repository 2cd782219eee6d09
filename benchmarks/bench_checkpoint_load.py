"""Checkpoint load time at large step counts (issue 19 item 12): a one-parameter graph and Adam, its
checkpoint rewritten to each step count given (default 2*10^6 and 10^12) without the stored scalar
states (formed in closed form), and at step 10^12 with the states the graph reaches there (stored,
checked in O(1)).

    .venv/bin/python benchmarks/bench_checkpoint_load.py [STEPS ...]

It measures the ``ort_ops`` Python finds: the installed one, or this checkout's when run as
``python -m benchmarks.bench_checkpoint_load`` from the checkout root (or with ``PYTHONPATH=.``).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper

from ort_ops.domain import IR_VERSION, ONNX_OPSET
from ort_ops.training.trainer import Adam, Trainer


def tiny_graph():
    f = TensorProto.FLOAT
    nodes = [helper.make_node("Mul", ["x", "w"], ["xw"]),
             helper.make_node("ReduceSum", ["xw"], ["loss"], keepdims=0),
             helper.make_node("ReduceSum", ["x", "axes0"], ["grad.w"], keepdims=0)]
    g = helper.make_graph(
        nodes, "tiny", [helper.make_tensor_value_info("x", f, [2, 3]), helper.make_tensor_value_info("w", f, [3])],
        [helper.make_tensor_value_info("loss", f, []), helper.make_tensor_value_info("grad.w", f, [3])],
        [helper.make_tensor("axes0", TensorProto.INT64, [1], [0])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", ONNX_OPSET)])
    m.ir_version = IR_VERSION
    return m


def rewritten(src: Path, dst: Path, change) -> Path:
    with np.load(src) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays.pop("meta")))
    change(meta)
    np.savez(dst, meta=np.array(json.dumps(meta)), **arrays)
    return dst


def fixed_point(x: float, beta: float) -> float:
    while x * beta != x:
        x *= beta
    return x


def timed_load(trainer: Trainer, path: Path) -> float:
    t0 = time.perf_counter()
    trainer.load_checkpoint(path)
    return time.perf_counter() - t0


def main(argv: list[str]) -> None:
    steps_list = [int(a) for a in argv] or [2 * 10**6, 10**12]
    trainer = Trainer(tiny_graph(), {"w": np.ones(3, np.float32)}, Adam(), progress=False)
    opt = trainer.optimizer
    with tempfile.TemporaryDirectory() as tmp:
        good = Path(tmp) / "ckpt.npz"
        trainer.save_checkpoint(good)
        for steps in steps_list:
            path = rewritten(good, Path(tmp) / "n.npz", lambda m, n=steps: (m.pop("scalars"), m.update(step=n)))
            print(f"step {steps}, no stored scalar states: load {timed_load(trainer, path):.4f} s")
        b1, b2 = opt._betas()
        start = opt.scalar_states(0)[opt.bias_name].tolist()
        far = {opt.scalars_name: [opt.lr, fixed_point(1.0, b1), fixed_point(1.0, b2)],
               opt.bias_name: [fixed_point(start[0], b2), 0.0, fixed_point(start[2], b2)]}
        path = rewritten(good, Path(tmp) / "far.npz", lambda m: m.update(step=10**12, scalars=far))
        print(f"step {10**12}, stored scalar states: load {timed_load(trainer, path):.4f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
