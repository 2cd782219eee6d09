"""CPU simulator of the Ascend ACL runtime, for running ONNX Runtime's CANN EP without an NPU.

The simulator is three shared libraries with the sonames the CANN EP needs
(``libascendcl.so``, ``libacl_op_compiler.so``, ``libfmk_onnx_parser.so``). Loading them with
``RTLD_GLOBAL`` before ``onnxruntime`` loads ``libonnxruntime_providers_cann.so`` makes the real,
unmodified provider run on them. Environment variables (see README.md): ``ACLSIM_TRACE``,
``ACLSIM_STREAM_DELAY_US``, ``ACLSIM_FAIL_NEXT_OP``, ``ACLSIM_DEVICE_COUNT``, ``ACLSIM_SOC_NAME``,
``ACLSIM_LEAK_REPORT`` (its baseline: :func:`leak_baseline`, :func:`wrap_ortvalue_factories`).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
from pathlib import Path

LIBRARIES = ("libascendcl.so", "libacl_op_compiler.so", "libfmk_onnx_parser.so")
# Where the wheel holds them, relative to site-packages (the install DESTINATION in CMakeLists.txt).
INSTALLED_LIBRARY_DIR = "ort_ops/cann_ep/sim/lib"

_HERE = Path(__file__).resolve().parent
_REPO = _HERE.parent.parent  # a source checkout's root (installed: site-packages/ort_ops, no build/ there)
_handles: list[ctypes.CDLL] = []


def _candidates() -> list[Path]:
    dirs = []
    env = os.environ.get("ACLSIM_LIBRARY_DIR")
    if env:  # an explicit choice: never fall back to another build
        return [Path(env)]
    dirs.append(_HERE / "lib")  # installed: cmake --install puts them in ort_ops/cann_ep/sim/lib
    try:  # this package imported from a source checkout that was also installed
        import importlib.metadata

        dist = importlib.metadata.distribution("ort-ops")
        dirs.append(Path(str(dist.locate_file(INSTALLED_LIBRARY_DIR))))
    except importlib.metadata.PackageNotFoundError:
        pass
    dirs.append(_REPO / "build" / "sim")  # dev build: cmake -S cann_ep/sim -B build/sim
    dirs.append(_REPO / "build" / "cann_ep" / "sim")  # dev build of the top-level project
    return dirs


def library_dir() -> str:
    """Return the folder holding the three simulator libraries.

    ``$ACLSIM_LIBRARY_DIR`` when set (and then only there); otherwise, in order:
    ``lib`` next to this module (installed: ``ort_ops/cann_ep/sim/lib``), the same folder of the
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
        acl.aclsimLeakBaselineScope.restype = ctypes.c_int
        acl.aclsimLeakBaselineScope.argtypes = [ctypes.c_int]
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


def mark_leak_baseline() -> int:
    """Mark the device memory live now as the leak baseline of ``ACLSIM_LEAK_REPORT`` (held on
    purpose until the process ends: named in a note, not counted, never a failure); returns how
    many blocks were marked. Memory allocated later and still live at exit is reported as before."""
    return int(load().aclsimMarkLeakBaseline())


@contextlib.contextmanager
def leak_baseline():
    """A scope (this thread) whose device allocations are leak baseline (see :func:`mark_leak_baseline`)."""
    lib = load()
    lib.aclsimLeakBaselineScope(1)
    try:
        yield
    finally:
        lib.aclsimLeakBaselineScope(0)


#: onnxruntime.OrtValue factories whose device memory comes from the Python binding's own arena
ORTVALUE_FACTORIES = ("ortvalue_from_numpy", "ortvalue_from_numpy_with_onnx_type", "ortvalue_from_shape_and_type")


def wrap_ortvalue_factories() -> None:
    """Run onnxruntime's ``OrtValue`` factories inside :func:`leak_baseline` (idempotent).

    onnxruntime's Python binding allocates an OrtValue on ``"cann"`` from one arena per NPU that it
    keeps until the process ends (1 MiB from the first OrtValue on, growing with larger ones);
    without this the exit leak report would call it a leak. Called by ``cann_ep.use_simulator()``.
    """
    try:
        import onnxruntime as ort
    except ImportError:  # nothing to wrap
        return
    for name in ORTVALUE_FACTORIES:
        attr = ort.OrtValue.__dict__.get(name)
        if not isinstance(attr, classmethod) or getattr(attr.__func__, "_aclsim_baseline", False):
            continue
        factory = attr.__func__

        def wrapper(cls, *args, _factory=factory, **kwargs):
            with leak_baseline():
                return _factory(cls, *args, **kwargs)

        functools.update_wrapper(wrapper, factory)
        wrapper._aclsim_baseline = True
        setattr(ort.OrtValue, name, classmethod(wrapper))
