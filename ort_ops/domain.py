"""The op library's identity: every other file (Python and, through CMake, C++) reads these.

CMake parses the assignments below with a regular expression, so keep each on one line
in the form ``NAME = value``.
"""

DOMAIN = "ai.ortops"
# Standard ONNX ops placed on the CANN EP (rewrite.placement): same op types, inputs and
# attributes as ONNX's, kernels only for the CANN EP. A second domain of the same library.
CANN_DOMAIN = "ai.ortops.cann"
OPSET_VERSION = 1
LIBRARY_NAME = "ortops"
# The NaN every kernel returns for an invalid operation (inf - inf, 0 * inf) when no input NaN
# propagates: the x86 default NaN (negative, quiet, no payload), as NumPy on x86 computes it.
DEFAULT_NAN_BITS = 0xFFC00000

# Standard ops in the models the project writes use this ai.onnx opset (IR >= 8).
ONNX_OPSET = 18
# The models' IR version: the highest the running onnxruntime reads, at most MAX_IR_VERSION.
# A runtime refuses a model of a higher IR than that of the onnx release it was built with
# ("Unsupported model IR version: 10, max supported IR version: 9" from onnxruntime 1.17, which
# bundles onnx 1.15; 1.18 bundles onnx 1.16, IR 10). onnx 1.23 would otherwise write IR 14.
MAX_IR_VERSION = 10  # the highest proven on every runtime of docs/compatibility.md
OLDEST_RUNTIME_IR_VERSION = 9  # onnxruntime 1.17, the oldest the library supports (API 17)
# (major, minor) of the first onnxruntime reading each IR version above the oldest's.
_FIRST_RUNTIME_READING_IR = {10: (1, 18)}


def max_ir_version(ort_version: str | None) -> int:
    """The IR version the project writes for onnxruntime ``ort_version`` ("1.17.3"); None or an
    unreadable version gives OLDEST_RUNTIME_IR_VERSION, which every supported runtime reads."""
    import re

    match = re.match(r"(\d+)\.(\d+)", ort_version or "")
    if match is None:
        return OLDEST_RUNTIME_IR_VERSION
    runtime = (int(match[1]), int(match[2]))
    readable = [ir for ir, first in _FIRST_RUNTIME_READING_IR.items() if runtime >= first and ir <= MAX_IR_VERSION]
    return max(readable, default=OLDEST_RUNTIME_IR_VERSION)


def installed_onnxruntime_version() -> str | None:
    """The version of the ``onnxruntime`` module this interpreter would import (any flavour:
    onnxruntime, onnxruntime-cann, ...), read without importing it; None when there is none."""
    import importlib.util
    import re
    import sys

    module = sys.modules.get("onnxruntime")
    if module is not None and isinstance(getattr(module, "__version__", None), str):
        return module.__version__
    try:
        spec = importlib.util.find_spec("onnxruntime")
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    try:
        with open(spec.origin, encoding="utf-8") as f:
            match = re.search(r'^__version__ = "([^"]+)"', f.read(), re.MULTILINE)
    except OSError:
        return None
    return match[1] if match else None


IR_VERSION = max_ir_version(installed_onnxruntime_version())
