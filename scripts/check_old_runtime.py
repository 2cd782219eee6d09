"""Checks the op library on the onnxruntime of the interpreter running it (meant for old ones,
in a throwaway venv, never the project's): a session of a model from ort_ops.model_builder loads
(its IR version is one the runtime reads) and stderr holds no "requested API version" line.

    python -m venv /tmp/ort119 && /tmp/ort119/bin/pip install onnxruntime==1.19.2 onnx ml-dtypes \
        onnx-graphsurgeon
    PYTHONPATH=. ORTOPS_LIBRARY=build/dev/libortops.so /tmp/ort119/bin/python scripts/check_old_runtime.py

Prints one JSON line; exits 1 when a check fails.
"""

from __future__ import annotations

import json
import subprocess
import sys

CHILD = """
import ctypes, numpy as np, onnxruntime as ort, ort_ops
from ort_ops import domain
from ort_ops.model_builder import make_op_model
model = make_op_model("EluGrad")
so = ort_ops.register(ort.SessionOptions())
sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
g = np.array([[1, 2], [3, 4], [5, 6], [7, 8]], np.float32)
a = np.array([[-1, 0], [-0.5, 2], [3, -2], [0.25, -4]], np.float32)
(dx,) = sess.run(None, {"grads": g, "activations": a})
expected = np.where(a < 0, g * (a + 1.0), g).astype(np.float32)
api = ctypes.CDLL(ort_ops.get_library_path()).OrtOpsApiVersion
api.restype = ctypes.c_uint32
print(ort.__version__, model.ir_version, api(), bool((dx == expected).all()))
"""


def main() -> int:
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300)
    result = {"returncode": out.returncode}
    if out.returncode == 0:
        version, ir, api, exact = out.stdout.split()[-4:]
        result.update(onnxruntime=version, ir=int(ir), api=int(api), bit_exact=exact == "True")
    noise = [line for line in out.stderr.splitlines() if "requested API version" in line]
    result["api_version_lines"] = noise
    result["stderr_tail"] = out.stderr.strip().splitlines()[-3:]
    ok = out.returncode == 0 and result.get("bit_exact") and not noise
    result["ok"] = bool(ok)
    print(json.dumps(result))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
