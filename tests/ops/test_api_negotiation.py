"""The library asks a runtime only for C API versions it has.

ONNX Runtime's GetApi(N) prints "The requested API version [N] is not available ..." to stderr for
every N the runtime lacks, so ``RegisterCustomOps`` picks N from ``GetVersionString()`` (1.x
offers API 1..x) before requesting it. Checked against a fake OrtApiBase that records the
versions asked for: no old runtime is needed here (scripts/check_old_runtime.py runs real ones).
"""

from __future__ import annotations

import ctypes
import re
import subprocess
import sys

import pytest

from ort_ops.library import get_library_path

HEADERS_API = 21  # ORT_API_VERSION of the headers the library is built with (fetch_ort_headers.sh)
MIN_API = 17  # ortops::kMinApiVersion

_GET_API = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint32)
_VERSION_STRING = ctypes.CFUNCTYPE(ctypes.c_void_p)  # const char* (c_char_p would leak per call)
_CREATE_STATUS = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p)


class _OrtApiBase(ctypes.Structure):
    _fields_ = [("GetApi", _GET_API), ("GetVersionString", _VERSION_STRING)]


def _requested_versions(version_string: str) -> tuple[list[int], str]:
    """Calls RegisterCustomOps with a fake runtime of `version_string` that offers no API at all
    except 1 (a fake OrtApi whose only entry, CreateStatus, records the error message)."""
    requested: list[int] = []
    messages: list[str] = []

    def create_status(code, message):
        messages.append(message.decode())
        return 0x1  # a non-null "status" the library passes back unread

    create_status_fn = _CREATE_STATUS(create_status)
    fake_api = (ctypes.c_void_p * 1)(ctypes.cast(create_status_fn, ctypes.c_void_p))

    def get_api(version):
        requested.append(version)
        return ctypes.addressof(fake_api) if version == 1 else None

    text = ctypes.create_string_buffer(version_string.encode())
    base = _OrtApiBase(_GET_API(get_api), _VERSION_STRING(lambda: ctypes.addressof(text)))
    lib = ctypes.CDLL(get_library_path())
    lib.RegisterCustomOps.restype = ctypes.c_void_p
    lib.RegisterCustomOps.argtypes = [ctypes.c_void_p, ctypes.POINTER(_OrtApiBase)]
    status = lib.RegisterCustomOps(None, ctypes.byref(base))
    assert status == 0x1, f"RegisterCustomOps returned {status!r}, expected the fake error status"
    return requested, messages[0] if messages else ""


@pytest.mark.parametrize(
    "version, expected",
    [
        # the runtime's own API first (1.19 -> 19), then down to the minimum, then 1 for the error
        ("1.19.2", [19, 18, 17, 1]),
        ("1.17.3", [17, 1]),
        # newer than the headers: the headers' version first
        ("1.31.1", list(range(HEADERS_API, MIN_API - 1, -1)) + [1]),
        # too old for the kernels: nothing but API 1 (for the error status) is requested
        ("1.16.3", [1]),
        # not 1.x or not parsable: start at the headers' version
        ("2.0.0", list(range(HEADERS_API, MIN_API - 1, -1)) + [1]),
        ("garbage", list(range(HEADERS_API, MIN_API - 1, -1)) + [1]),
    ],
)
def test_register_requests_only_offered_api_versions(version, expected):
    requested, message = _requested_versions(version)
    assert requested == expected, f"runtime {version}: requested API versions {requested}, expected {expected}"
    assert version in message and "17" in message, f"runtime {version}: error message {message!r}"


def test_session_creation_prints_no_api_version_line():
    """A real session through ort_ops.register: stderr holds no 'requested API version' line."""
    code = (
        "import onnxruntime as ort, ort_ops\n"
        "from ort_ops.model_builder import make_op_model\n"
        "so = ort_ops.register(ort.SessionOptions())\n"
        "ort.InferenceSession(make_op_model('EluGrad').SerializeToString(), so, providers=['CPUExecutionProvider'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stderr.splitlines() if re.search(r"requested API version", line)]
    assert not lines, f"stderr has API version lines: {lines}"
