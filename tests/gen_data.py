"""Test data for EluGrad, after the CANN kernel test's gen_data.py: random inputs for a shape
and dtype, edge values, and a golden computed from the article's formula (independent of
``ort_ops.reference``): golden = grads * where(activations < 0, activations + alpha, 1).

    python tests/gen_data.py "(128, 64)" float32 OUT_DIR   # writes grads/activations/golden .bin
"""

from __future__ import annotations

import ast
import os
import sys

import ml_dtypes
import numpy as np

DTYPES = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}


def gen_inputs(shape, dtype, low=-2.0, high=2.0, seed=0):
    """grads and activations uniform in [low, high], rounded to ``dtype``."""
    rng = np.random.default_rng(seed)
    cast = DTYPES[dtype] if isinstance(dtype, str) else dtype
    grads = rng.uniform(low, high, size=shape).astype(np.float32).astype(cast)
    activations = rng.uniform(low, high, size=shape).astype(np.float32).astype(cast)
    return grads, activations


def golden(grads, activations, alpha=1.0):
    """The article's golden in float32 (grads * 1 is exact), cast once to the input dtype."""
    g = grads.astype(np.float32)
    a = activations.astype(np.float32)
    with np.errstate(all="ignore"):
        factor = np.where(a < 0, a + np.float32(alpha), np.float32(1))
        return (g * factor).astype(grads.dtype)


def edge_values(dtype) -> np.ndarray:
    """Values that stress the select and the rounding: NaNs with payloads, +-Inf, +-0,
    subnormals, the extremes, and values whose products hit rounding ties."""
    cast = DTYPES[dtype] if isinstance(dtype, str) else dtype
    info_dtype = np.float32 if cast is ml_dtypes.bfloat16 else cast
    finfo = ml_dtypes.finfo(cast) if cast is ml_dtypes.bfloat16 else np.finfo(info_dtype)
    values = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, -2.0, 2.0, 3.0, -3.0, np.inf, -np.inf,
              float(finfo.max), -float(finfo.max), float(finfo.tiny), -float(finfo.tiny),
              float(finfo.smallest_subnormal), -float(finfo.smallest_subnormal),
              float(finfo.eps), -float(finfo.eps), -1.0 + float(finfo.eps), 1e-3, -1e-3,
              -0.9990234375, -1.001953125, 65504.0, -65504.0, 1.5, -1.5, -0.75]
    array = np.array(values, dtype=np.float32).astype(cast)
    # NaNs: quiet and signalling, both signs, with payloads (built from bits).
    bits = {
        np.float32: [0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF812345, 0x7FC0BEEF],
        np.float16: [0x7E00, 0xFE00, 0x7C01, 0xFD55, 0x7E3F],
        ml_dtypes.bfloat16: [0x7FC0, 0xFFC0, 0x7F81, 0xFFA5, 0x7FC3],
    }[cast]
    uint = np.uint32 if cast is np.float32 else np.uint16
    nans = np.array(bits, dtype=uint).view(cast)
    return np.concatenate([array, nans])


def edge_pairs(dtype):
    """Every (grads, activations) pair of edge values."""
    values = edge_values(dtype)
    grads, activations = np.meshgrid(values, values, indexing="ij")
    return grads.ravel().copy(), activations.ravel().copy()


def main(argv: list[str]) -> int:
    shape, dtype, out = ast.literal_eval(argv[1]), argv[2], argv[3]
    grads, activations = gen_inputs(shape, dtype)
    os.makedirs(out, exist_ok=True)
    for name, array in (("grads", grads), ("activations", activations),
                        ("golden", golden(grads, activations))):
        array.tofile(os.path.join(out, f"{name}.bin"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
