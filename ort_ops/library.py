"""Where the compiled op library is, and how to register it on ONNX Runtime session options."""

from __future__ import annotations

import importlib.metadata
import os
import sys
from dataclasses import dataclass

from ort_ops.domain import LIBRARY_NAME

_FILE_NAME = {"win32": f"{LIBRARY_NAME}.dll", "darwin": f"lib{LIBRARY_NAME}.dylib"}.get(
    sys.platform, f"lib{LIBRARY_NAME}.so"
)
DISTRIBUTION = "ort-ops"
# The distribution names the package is installed under (the CPU-only build is its own).
DISTRIBUTIONS = (DISTRIBUTION, "ort-ops-cpu")


def _candidates() -> list[str]:
    # 0. $ORTOPS_LIBRARY (e.g. a sanitizer build); 1. next to this package (an installed
    # wheel); 2. the installed distribution, for a source checkout that was also installed.
    override = os.environ.get("ORTOPS_LIBRARY")
    if override:
        return [override]
    paths = [os.path.join(os.path.dirname(os.path.abspath(__file__)), _FILE_NAME)]
    for name in DISTRIBUTIONS:
        try:
            dist = importlib.metadata.distribution(name)
            paths.append(str(dist.locate_file(f"ort_ops/{_FILE_NAME}")))
        except importlib.metadata.PackageNotFoundError:
            pass
    return paths


def get_library_path() -> str:
    """Absolute path of the shared library holding every ``ai.ortops`` kernel."""
    candidates = _candidates()
    for path in candidates:
        if os.path.isfile(path):
            return os.path.abspath(path)
    raise FileNotFoundError(
        f"the ort_ops native library {_FILE_NAME} is not built; looked in: "
        + ", ".join(candidates)
        + ". Run `bash scripts/setup.sh` (or `pip install .`) to build it."
    )


def register(session_options):
    """Register the op library on an ``onnxruntime.SessionOptions``; returns the same object.

    Idempotent: options registered before (here or with ``register_custom_ops_library``) are
    left as they are, so they can be reused for several sessions or passed on to
    ``cann_ep.session``."""
    from ort_ops.runtime_check import check_onnxruntime

    check_onnxruntime()
    session_options.register_custom_ops_library(get_library_path())
    return session_options


@dataclass(frozen=True)
class KernelSignature:
    """One kernel the library registers: domain, op type, EP, input and output element types
    (ONNX ``TensorProto`` codes)."""

    domain: str
    op: str
    provider: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    variadic_inputs: bool = False  # the last input repeats (at least once), like Concat's
    variadic_outputs: bool = False  # the last output repeats, like Split's


# kernel_signatures' answers by library file (path, modification time, size): every CANN session
# and placement asked the library again and parsed its ~1000 lines (about 25 ms each time)
_SIGNATURES: dict[tuple[str, int, int], tuple[KernelSignature, ...]] = {}


def kernel_signatures() -> tuple[KernelSignature, ...]:
    """Every kernel the built library registers, in registration order (read once per library file)."""
    import ctypes

    path = get_library_path()
    stat = os.stat(path)
    key = (path, stat.st_mtime_ns, stat.st_size)
    if key in _SIGNATURES:
        return _SIGNATURES[key]
    lib = ctypes.CDLL(path)
    lib.OrtOpsRegisteredKernels.restype = ctypes.c_char_p
    out = []
    for line in lib.OrtOpsRegisteredKernels().decode().splitlines():
        domain, name, ep, ins, outs = line.split()
        codes = lambda text: () if text == "-" else tuple(int(t.rstrip("*")) for t in text.split(","))
        out.append(KernelSignature(domain, name, ep, codes(ins), codes(outs), ins.endswith("*"), outs.endswith("*")))
    _SIGNATURES[key] = tuple(out)
    return _SIGNATURES[key]


def has_cann_kernels() -> bool:
    """Whether the library was built with its CANN EP kernels (``ORTOPS_WITH_CANN``, default on)."""
    return any(k.provider == "CANNExecutionProvider" for k in kernel_signatures())


def cann_op_unavailable(soc_name: str, op_type: str) -> str | None:
    """Why CANN op ``op_type`` is not available on SoC ``soc_name`` (the source that says so), or
    None: the table compiled into the library (``ort_ops/csrc/cann/soc.cc``, from
    ``ort_ops/cann_soc_table.json``; placement reads the file itself, :mod:`ort_ops.cann_soc`)."""
    import ctypes

    fn = ctypes.CDLL(get_library_path()).OrtOpsCannOpUnavailable
    fn.restype = ctypes.c_char_p
    fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    reason = fn(soc_name.encode(), op_type.encode())
    return reason.decode() if reason else None


def elu_grad_cpu_loops() -> str:
    """The CPU loops EluGrad runs now: ``"avx2"`` or ``"portable"`` (see ORTOPS_FORCE_PORTABLE)."""
    import ctypes

    fn = ctypes.CDLL(get_library_path()).OrtOpsEluGradCpuLoops
    fn.restype = ctypes.c_char_p
    return fn().decode()
