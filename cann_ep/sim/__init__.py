"""CPU simulator of the Ascend ACL runtime, for running ONNX Runtime's CANN EP without an NPU.

The simulator is three shared libraries with the sonames the CANN EP needs
(``libascendcl.so``, ``libacl_op_compiler.so``, ``libfmk_onnx_parser.so``). Loading them with
``RTLD_GLOBAL`` before ``onnxruntime`` loads ``libonnxruntime_providers_cann.so`` makes the real,
unmodified provider run on them. Environment variables (see README.md): ``ACLSIM_TRACE``,
``ACLSIM_STREAM_DELAY_US``, ``ACLSIM_FAIL_NEXT_OP``, ``ACLSIM_DEVICE_COUNT``, ``ACLSIM_SOC_NAME``,
``ACLSIM_LEAK_REPORT`` (its baseline: :func:`mark_leak_baseline`).
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

LIBRARIES = ("libascendcl.so", "libacl_op_compiler.so", "libfmk_onnx_parser.so")

_HERE = Path(__file__).resolve().parent
_REPO = _HERE.parent.parent
_handles: list[ctypes.CDLL] = []


def _candidates() -> list[Path]:
    dirs = []
    env = os.environ.get("ACLSIM_LIBRARY_DIR")
    if env:  # an explicit choice: never fall back to another build
        return [Path(env)]
    dirs.append(_HERE / "lib")  # installed: cmake --install puts them in cann_ep/sim/lib
    try:  # this package imported from a source checkout that was also installed
        import importlib.metadata

        dist = importlib.metadata.distribution("ort-ops")
        dirs.append(Path(str(dist.locate_file("cann_ep/sim/lib"))))
    except importlib.metadata.PackageNotFoundError:
        pass
    dirs.append(_REPO / "build" / "sim")  # dev build: cmake -S cann_ep/sim -B build/sim
    dirs.append(_REPO / "build" / "cann_ep" / "sim")  # dev build of the top-level project
    return dirs


def library_dir() -> str:
    """Return the folder holding the three simulator libraries.

    ``$ACLSIM_LIBRARY_DIR`` when set (and then only there); otherwise, in order:
    ``cann_ep/sim/lib`` next to this module (the installed location), the same folder of the
    installed ``ort-ops`` distribution (for a source checkout that was also installed),
    ``<repo>/build/sim`` (standalone dev build) and ``<repo>/build/cann_ep/sim`` (dev build of
    the top-level CMake project).
    """
    for d in _candidates():
        if all((d / name).is_file() for name in LIBRARIES):
            return str(d)
    searched = ", ".join(str(d) for d in _candidates())
    raise FileNotFoundError(
        f"ACL simulator libraries {', '.join(LIBRARIES)} not found (searched: {searched}). Build them: "
        "cmake -S cann_ep/sim -B build/sim -DACL_INCLUDE_DIR=$(scripts/fetch_acl_headers.sh) && "
        "cmake --build build/sim")


def load() -> ctypes.CDLL:
    """Load the three libraries with RTLD_GLOBAL (once) and return the libascendcl handle.

    Call it before ``import onnxruntime`` creates a CANN session, so the provider's NEEDED
    entries resolve to the simulator.
    """
    if not _handles:
        d = Path(library_dir())
        handles = [ctypes.CDLL(str(d / name), mode=ctypes.RTLD_GLOBAL) for name in LIBRARIES]
        acl = handles[0]
        acl.aclsimGetStat.restype = ctypes.c_int64
        acl.aclsimGetStat.argtypes = [ctypes.c_char_p]
        acl.aclGetRecentErrMsg.restype = ctypes.c_char_p
        acl.aclrtGetSocName.restype = ctypes.c_char_p
        acl.aclsimFailNextOp.argtypes = [ctypes.c_char_p, ctypes.c_int32]
        acl.aclsimOpCounts.restype = ctypes.c_char_p
        acl.aclsimOpCounts.argtypes = []
        acl.aclsimMarkLeakBaseline.restype = ctypes.c_int64
        acl.aclsimMarkLeakBaseline.argtypes = []
        _handles.extend(handles)
    return _handles[0]


def stat(name: str) -> int:
    """Return one simulator counter (e.g. ``live_allocations``, ``leaks_detected``, ``errors``;
    ``op:<op type>`` counts the executed ``aclopCompileAndExecute`` calls of that type)."""
    value = load().aclsimGetStat(name.encode())
    if value < 0:
        raise KeyError(f"unknown simulator stat {name!r}")
    return value


def op_counts() -> dict[str, int]:
    """Executed ``aclopCompileAndExecute`` calls per op type since load (or the last
    ``aclsimResetStats``), e.g. ``{"BatchMatMul": 5, "EluGrad": 2}``. Diff two snapshots to see
    which ACL op types one session run sent."""
    raw = load().aclsimOpCounts().decode()
    return {k: int(v) for k, v in (item.split("=") for item in raw.split(",") if item)}


def fail_next_op(op_type: str | None, error_code: int = 0) -> None:
    """Make the next aclopCompileAndExecute of ``op_type`` ("*" = any) fail once; None disarms."""
    load().aclsimFailNextOp(op_type.encode() if op_type is not None else None, error_code)


def mark_leak_baseline(warm_ortvalue: bool = True) -> int:
    """Mark the device memory live now as the leak baseline of ``ACLSIM_LEAK_REPORT``; returns how
    many blocks were marked.

    onnxruntime's Python binding keeps one arena per NPU for ``OrtValue``s on ``"cann"`` for the life
    of the process (a 1 MiB block from the first such OrtValue on), which the exit report would call
    a leak. With ``warm_ortvalue`` (default) a one-element OrtValue on ``"cann"`` is created and
    dropped first, so that arena exists and is part of the baseline. Blocks allocated afterwards
    and still live at exit are reported (and fail with ``ACLSIM_LEAK_REPORT=fail``) as before.
    """
    lib = load()
    if warm_ortvalue:
        import numpy as np
        import onnxruntime as ort

        ort.OrtValue.ortvalue_from_numpy(np.zeros(1, np.float32), "cann", 0)
    return int(lib.aclsimMarkLeakBaseline())
