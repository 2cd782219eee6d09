"""EluGrad throughput in GB/s against named baselines, in one run.

Bytes moved per element: 12 for float32 (read grads and activations, write y), 6 for
float16/bfloat16. For each n, dtype and thread count it times:
  ortops      this library's kernel in an ORT session, IOBinding to a preallocated output
  ort-std     ORT running the same math as standard ops (Less/Add/Mul/Where; fp16/bf16 through
              Cast to float32 and back, which is the op's exact definition)
  torch-elu   torch.ops.aten.elu_backward(..., is_result=True, grad_input=out)
  torch-add   torch.add(a, b, out=c): the bandwidth reference (same bytes per element)
  numpy       the NumPy expression (ort_ops.reference.elu_grad; single-threaded)
and prints GB/s with the ratio to torch-add, then checks the targets of the foundation issue.

    python benchmarks/bench_elugrad.py [--sizes 16,20,24] [--threads 1,2] [--budget 0.4]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import onnxruntime as ort
import torch
from onnx import TensorProto, helper

import ort_ops
from ort_ops import dtypes, ort_io
from ort_ops.model_builder import make_elu_grad_model, make_model
from ort_ops.reference import elu_grad

BYTES_PER_ELEMENT = {"float32": 12, "float16": 6, "bfloat16": 6}
TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def best_time(fn, budget: float) -> float:
    """Minimum wall time of fn() over repeated calls filling about `budget` seconds."""
    fn()  # warm-up
    best, spent, calls = float("inf"), 0.0, 0
    while spent < budget or calls < 3:
        start = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - start
        best, spent, calls = min(best, elapsed), spent + elapsed, calls + 1
    return best


def standard_op_model(dtype: str, n: int):
    """where(a < 0, g * (a + 1), g) in standard ONNX ops (float32 math, one cast back)."""
    elem = dtypes.onnx_type(dtype)
    nodes, g, a = [], "grads", "activations"
    if dtype != "float32":
        nodes += [helper.make_node("Cast", ["grads"], ["g32"], to=TensorProto.FLOAT),
                  helper.make_node("Cast", ["activations"], ["a32"], to=TensorProto.FLOAT)]
        g, a = "g32", "a32"
    out = "y" if dtype == "float32" else "y32"
    nodes += [helper.make_node("Less", [a, "zero"], ["negative"]),
              helper.make_node("Add", [a, "alpha"], ["t"]),
              helper.make_node("Mul", [g, "t"], ["p"]),
              helper.make_node("Where", ["negative", "p", g], [out])]
    if dtype != "float32":
        nodes.append(helper.make_node("Cast", ["y32"], ["y"], to=elem))
    graph = helper.make_graph(
        nodes, "elu_grad_standard_ops",
        [helper.make_tensor_value_info(x, elem, [n]) for x in ("grads", "activations")],
        [helper.make_tensor_value_info("y", elem, [n])],
        initializer=[helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0]),
                     helper.make_tensor("alpha", TensorProto.FLOAT, [], [1.0])],
    )
    return make_model(graph)


def ort_runner(model, threads: int, grads, activations, out, register: bool):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    if register:
        ort_ops.register(so)
    session = ort.InferenceSession(model.SerializeToString(), so,
                                   providers=["CPUExecutionProvider"])
    binding = session.io_binding()
    inputs = [ort_io.to_ort_value(grads), ort_io.to_ort_value(activations)]
    binding.bind_ortvalue_input("grads", inputs[0])
    binding.bind_ortvalue_input("activations", inputs[1])
    output = ort_io.to_ort_value(out)  # wraps `out`'s memory: results land there
    binding.bind_ortvalue_output("y", output)

    def run():
        session.run_with_iobinding(binding)

    run.keep_alive = (session, binding, inputs, output)
    return run


def measure(n: int, dtype: str, threads: int, budget: float) -> dict[str, float]:
    rng = np.random.default_rng(n)
    np_dtype = dtypes.numpy_dtype(dtype)
    grads = rng.uniform(-2, 2, n).astype(np.float32).astype(np_dtype)
    activations = rng.uniform(-2, 2, n).astype(np.float32).astype(np_dtype)
    out = np.empty_like(grads)
    expected = elu_grad(grads, activations)
    seconds = {}

    run = ort_runner(make_elu_grad_model(dtype, (n,)), threads, grads, activations, out, True)
    seconds["ortops"] = best_time(run, budget)
    assert np.array_equal(out.view(np.uint8), expected.view(np.uint8)), "ortops result wrong"
    run = ort_runner(standard_op_model(dtype, n), threads, grads, activations, out, False)
    seconds["ort-std"] = best_time(run, budget)

    torch.set_num_threads(threads)
    tg = torch.from_numpy(grads.view(np.uint16)).view(torch.bfloat16) if dtype == "bfloat16" \
        else torch.from_numpy(grads)
    ta = torch.from_numpy(activations.view(np.uint16)).view(torch.bfloat16) \
        if dtype == "bfloat16" else torch.from_numpy(activations)
    tout = torch.empty_like(tg)
    elu_backward = torch.ops.aten.elu_backward.grad_input
    seconds["torch-elu"] = best_time(
        lambda: elu_backward(tg, 1.0, 1.0, 1.0, True, ta, grad_input=tout), budget)
    seconds["torch-add"] = best_time(lambda: torch.add(tg, ta, out=tout), budget)
    if threads == 1:
        seconds["numpy"] = best_time(lambda: elu_grad(grads, activations), budget)
    return {name: BYTES_PER_ELEMENT[dtype] * n / s / 1e9 for name, s in seconds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="16,20,24", help="log2 of element counts")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--dtypes", default="float32,float16,bfloat16")
    parser.add_argument("--budget", type=float, default=0.4, help="seconds per measurement")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    thread_counts = [int(t) for t in args.threads.split(",")]
    names = ["ortops", "ort-std", "torch-elu", "torch-add", "numpy"]
    print(f"EluGrad GB/s (ratio to torch-add in parentheses); CPU loops: "
          f"{ort_ops.library.elu_grad_cpu_loops()}; onnxruntime {ort.__version__}, torch {torch.__version__}")
    header = f"{'n':>6} {'dtype':>8} {'thr':>3} " + " ".join(f"{n:>15}" for n in names)
    print(header)
    print("-" * len(header))
    results = {}
    for log2 in sizes:
        for dtype in args.dtypes.split(","):
            for threads in thread_counts:
                r = measure(1 << log2, dtype, threads, args.budget)
                results[(log2, dtype, threads)] = r
                ref = r["torch-add"]
                cells = [f"{r[n]:7.2f} ({r[n] / ref:4.2f})" if n in r else f"{'-':>15}"
                         for n in names]
                print(f"  2^{log2:<3} {dtype:>8} {threads:>3} " + " ".join(cells), flush=True)
    if 24 in sizes:
        print("\ntargets at n = 2^24:")
        for threads in thread_counts:
            f32 = results.get((24, "float32", threads))
            if f32 is None:
                continue
            checks = [
                ("fp32 >= 0.85x torch-add", f32["ortops"] / f32["torch-add"], 0.85),
                ("fp32 >= 1.0x torch-elu", f32["ortops"] / f32["torch-elu"], 1.0),
                ("fp32 >= 5x ort-std", f32["ortops"] / f32["ort-std"], 5.0),
            ]
            for half in ("float16", "bfloat16"):
                if (24, half, threads) in results:
                    checks.append((f"{half} GB/s >= 0.8x fp32 kernel",
                                   results[(24, half, threads)]["ortops"] / f32["ortops"], 0.8))
            for label, value, target in checks:
                verdict = "met" if value >= target else "MISSED"
                print(f"  {threads} thread(s): {label}: {value:.2f}  {verdict}")


if __name__ == "__main__":
    main()
