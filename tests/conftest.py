"""Fixtures shared by the tests (helpers live in op_helpers.py, gen_data.py, ...)."""

import os

# ONNX Runtime >= 1.29 starts a telemetry uploader thread at import that exit() can race with:
# its first upload (about 9 s after import) reads a static string the exit handlers have already
# freed (a heap-use-after-free inside onnxruntime_pybind11_state, seen 1 run in 13-40 of the
# sanitizer step). Telemetry off (ORT's own switch, read at import) never starts that thread.
# Before anything imports onnxruntime; inherited by the processes the tests start.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

import pytest


@pytest.fixture(params=["float32", "float16", "bfloat16"])
def dtype(request) -> str:
    return request.param
