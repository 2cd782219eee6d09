"""Which ONNX Runtime wheel this environment has, and a clear error when it has two.

``onnxruntime`` (CPU) and ``onnxruntime-cann`` both install the ``onnxruntime`` package: in one
environment the second overwrites the first's files and the result is neither (the CANN EP
missing, or a NumPy ABI error); so do ``onnxruntime-training(-cpu)``. Use one environment per wheel
(``scripts/setup.sh`` makes ``.venv``, ``.venv-cann`` and ``.venv-ort-training``).
"""

from __future__ import annotations

import importlib.metadata

WHEELS = ("onnxruntime", "onnxruntime-cann", "onnxruntime-gpu", "onnxruntime-openvino", "onnxruntime-directml",
          "onnxruntime-training", "onnxruntime-training-cpu")


def installed_wheels() -> dict[str, str]:
    """``distribution name -> version`` of the ONNX Runtime wheels installed here."""
    found = {}
    for name in WHEELS:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return found


_checked = False  # the environment passed once: every session asked again (~13 ms of metadata scans each)


def check_onnxruntime() -> None:
    """``ImportError`` when more than one ONNX Runtime wheel shares this environment (a pass is
    remembered for the process: the ``onnxruntime`` it imported does not change)."""
    global _checked
    if _checked:
        return
    found = installed_wheels()
    if len(found) > 1:
        listed = ", ".join(f"{name} {version}" for name, version in sorted(found.items()))
        raise ImportError(
            f"this environment has several ONNX Runtime wheels ({listed}); they install the same "
            "`onnxruntime` package over each other. Keep one: `pip uninstall "
            f"{' '.join(n for n in sorted(found) if n != 'onnxruntime-cann')}` for the CANN EP, or use one "
            "environment per wheel (pip install 'ort-ops[cpu]' / 'ort-ops[cann]')")
    _checked = True
