"""The CANN article's EluGrad example, rebuilt for ONNX Runtime.

Builds a graph with two inputs (grads, activations; shape {4, 2}) feeding one
``ai.ortops::EluGrad`` node, runs it with the op library on the chosen execution provider for
two cases — both inputs filled with 2.0 (the article's data) and random values in [-2, 2] so
the negative branch shows — prints every output element and the provider that ran EluGrad,
writes each input and output as raw ``<prefix>_input_<i>.bin`` / ``<prefix>_output_<i>.bin``
plus the ``.onnx`` model, compares with the NumPy reference and prints PASS/FAIL per case.
Exit status 1 if any case fails.

    python -m models.demo_elugrad [--dtype bfloat16|float16|float32] [--ep cpu|cann] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

import numpy as np
import onnx

from ort_ops import dtypes, ort_io, profiling
from ort_ops.model_builder import make_elu_grad_model
from ort_ops.reference import elu_grad

SHAPE = (4, 2)


def cases(dtype: str, seed: int) -> list[tuple[str, np.ndarray, np.ndarray]]:
    np_dtype = dtypes.numpy_dtype(dtype)
    rng = np.random.default_rng(seed)
    random = [rng.uniform(-2, 2, SHAPE).astype(np.float32).astype(np_dtype) for _ in range(2)]
    return [
        ("article", np.full(SHAPE, 2.0, np_dtype), np.full(SHAPE, 2.0, np_dtype)),
        ("random", random[0], random[1]),
    ]


def make_session(model: onnx.ModelProto, ep: str, profile_prefix: str):
    import onnxruntime as ort

    import ort_ops

    if ep == "cann":
        from ort_ops import cann_ep

        cann_ep.use_simulator()
        return cann_ep.session(model, profile_prefix=profile_prefix)
    so = profiling.enable(ort_ops.register(ort.SessionOptions()), profile_prefix)
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def run_case(name, grads, activations, dtype, ep, out_dir) -> bool:
    prefix = f"elugrad_{name}_{dtype}_{ep}"
    model = make_elu_grad_model(dtype, SHAPE)
    onnx.save(model, os.path.join(out_dir, f"{prefix}.onnx"))
    with tempfile.TemporaryDirectory() as tmp:
        session = make_session(model, ep, os.path.join(tmp, "profile"))
        (y,) = ort_io.run(session, {"grads": grads, "activations": activations})
        providers = {r.node: r.provider for r in profiling.node_runs(session)}
    for i, array in enumerate((grads, activations)):
        array.tofile(os.path.join(out_dir, f"{prefix}_input_{i}.bin"))
    y.tofile(os.path.join(out_dir, f"{prefix}_output_0.bin"))

    expected = elu_grad(grads, activations)
    ok = y.dtype == expected.dtype and np.array_equal(
        y.view(np.uint8), np.ascontiguousarray(expected).view(np.uint8)
    )
    print(f"== case {name}: dtype {dtype}, shape {list(SHAPE)}, "
          f"EluGrad ran on {providers.get('EluGrad', 'an unknown provider')}")
    for i, (g, a, v, e) in enumerate(zip(grads.ravel(), activations.ravel(), y.ravel(),
                                         expected.ravel())):
        print(f"  y[{i}] = {float(v): .8g}   (grads {float(g): .6g}, activations "
              f"{float(a): .6g}; numpy {float(e): .8g})")
    print(f"  files: {out_dir}/{prefix}_input_0.bin, _input_1.bin, _output_0.bin, .onnx")
    print(f"  {'PASS' if ok else 'FAIL'}: {name} ({dtype}, {ep}) "
          f"{'equals' if ok else 'differs from'} the NumPy reference bit for bit")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="bfloat16", choices=list(dtypes.SUPPORTED))
    parser.add_argument("--ep", default="cpu", choices=["cpu", "cann"],
                        help="execution provider (cann: ORT's CANN EP; simulated without an NPU)")
    parser.add_argument("--out", default=os.path.join("out", "demo"), help="output folder")
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    results = [run_case(name, g, a, args.dtype, args.ep, args.out)
               for name, g, a in cases(args.dtype, args.seed)]
    print(f"demo: {sum(results)} of {len(results)} cases PASS ({args.dtype} on {args.ep})")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
